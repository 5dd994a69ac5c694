/*
 * A service that calls another service, for tests/integration/services.sh.
 *
 *   svc_pair NAME PEER
 *
 * Started by a worker as service NAME.  With LISTEN_FDS set it takes its
 * listening socket from fd 3 as systemd's sd_listen_fds(3) does, and
 * refuses to run unless LISTEN_PID is its own pid, LISTEN_FDS is 1,
 * LISTEN_FDNAMES is NAME and fd 3 is a listening socket; without, it binds
 * 127.0.0.1:SOAK_PORT itself, with SO_REUSEADDR as a server that restarts
 * on its port must (its last life's connections may be in TIME_WAIT).
 * Plain HTTP/1.0, one forked child per connection (so A asking B while B
 * asks A cannot deadlock):
 *
 *   GET /whoami   "NAME MODE PORT PID SOCKETS"
 *   GET /ask      "<its whoami> <- <PEER's whoami>", asked of
 *                 SOAK_SERVICE_<PEER>; 502 with the reason if that fails
 *
 * MODE is "socket" or "port", PORT the port it listens on as
 * getsockname(2) says, SOCKETS how many sockets it was started with (fd 3
 * when activated; any other would be a descriptor soak leaked).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char	 whoami[256];
static char	 peer_addr[128];

static void
die(const char *what)
{
	fprintf(stderr, "svc_pair: %s\n", what);
	exit(2);
}

static int
sockets_open(void)
{
	DIR		*d = opendir("/proc/self/fd");
	struct dirent	*e;
	struct stat	 st;
	int		 n = 0, dfd = d ? dirfd(d) : -1;

	if (d == NULL)
		die("cannot open /proc/self/fd");
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dfd &&
		    fstat(atoi(e->d_name), &st) == 0 && S_ISSOCK(st.st_mode))
			n++;
	closedir(d);
	return n;
}

static int
activated_fd(const char *name)
{
	const char	*fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
	const char	*names = getenv("LISTEN_FDNAMES");
	char		 buf[32];
	int		 on = 0;
	socklen_t	 len = sizeof(on);

	if (fds == NULL)
		return -1;
	snprintf(buf, sizeof(buf), "%ld", (long)getpid());
	if (pid == NULL || strcmp(pid, buf) != 0) {
		fprintf(stderr, "svc_pair: LISTEN_PID=%s, but my pid is %s\n",
		    pid ? pid : "(unset)", buf);
		exit(2);
	}
	if (strcmp(fds, "1") != 0)
		die("LISTEN_FDS is not 1");
	if (names == NULL || strcmp(names, name) != 0)
		die("LISTEN_FDNAMES is not my name");
	if (getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == -1 || !on)
		die("fd 3 is not a listening socket");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

static int
bound_fd(void)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	const char		*port = getenv("SOAK_PORT");
	int			 fd, one = 1;

	if (port == NULL)
		die("no SOAK_PORT");
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(atoi(port));
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 64) == -1) {
		fprintf(stderr, "svc_pair: bind 127.0.0.1:%s: %s\n", port,
		    strerror(errno));
		exit(2);
	}
	return fd;
}

static void
reply(int fd, int code, const char *body)
{
	char	head[128];
	int	n;

	n = snprintf(head, sizeof(head), "HTTP/1.0 %d %s\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n", code, code == 200 ? "OK" : "Bad Gateway",
	    strlen(body) + 1);
	(void)!write(fd, head, n);
	(void)!write(fd, body, strlen(body));
	(void)!write(fd, "\n", 1);
}

/* Reads until the end of the head (or of the stream); 0 or -1. */
static int
read_head(int fd, char *buf, size_t size)
{
	size_t	have = 0;
	ssize_t	n;

	while (have + 1 < size) {
		if ((n = read(fd, buf + have, size - 1 - have)) <= 0)
			break;
		have += n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			return 0;
	}
	buf[have] = '\0';
	return -1;
}

/* GET /whoami of the peer; its body, or why not, in out. */
static int
ask_peer(char *out, size_t size)
{
	struct sockaddr_in	 sin = { .sin_family = AF_INET };
	static const char	 req[] = "GET /whoami HTTP/1.0\r\n\r\n";
	char			 buf[1024], *colon, *body, *nl;
	size_t			 have = 0;
	ssize_t			 n;
	int			 fd;

	if ((colon = strrchr(peer_addr, ':')) == NULL)
		return snprintf(out, size, "no peer address"), -1;
	*colon = '\0';
	inet_pton(AF_INET, peer_addr, &sin.sin_addr);
	*colon = ':';
	sin.sin_port = htons(atoi(colon + 1));
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return snprintf(out, size, "socket: %s", strerror(errno)), -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		snprintf(out, size, "connect %s: %s", peer_addr, strerror(errno));
		close(fd);
		return -1;
	}
	(void)!write(fd, req, sizeof(req) - 1);
	while (have + 1 < sizeof(buf) &&
	    (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += n;
	buf[have] = '\0';
	close(fd);
	if (strncmp(buf, "HTTP/1.0 200", 12) != 0 ||
	    (body = strstr(buf, "\r\n\r\n")) == NULL)
		return snprintf(out, size, "%s answered: %.60s", peer_addr, buf), -1;
	body += 4;
	if ((nl = strchr(body, '\n')) != NULL)
		*nl = '\0';
	snprintf(out, size, "%s", body);
	return 0;
}

static void
serve(int fd)
{
	char	req[2048], peer[512], body[1024];

	if (read_head(fd, req, sizeof(req)) == -1)
		return;
	if (strncmp(req, "GET /whoami ", 12) == 0)
		reply(fd, 200, whoami);
	else if (strncmp(req, "GET /ask ", 9) == 0) {
		if (ask_peer(peer, sizeof(peer)) == -1)
			reply(fd, 502, peer);
		else {
			snprintf(body, sizeof(body), "%s <- %s", whoami, peer);
			reply(fd, 200, body);
		}
	} else
		reply(fd, 502, "unknown request");
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	char			 var[128];
	const char		*addr;
	int			 sockets, lfd, fd, activated;
	size_t			 i;

	if (argc != 3)
		die("usage: svc_pair NAME PEER");
	sockets = sockets_open();
	snprintf(var, sizeof(var), "SOAK_SERVICE_%.100s", argv[2]);
	for (i = strlen("SOAK_SERVICE_"); var[i]; i++)
		var[i] = toupper((unsigned char)var[i]);
	if ((addr = getenv(var)) == NULL) {
		fprintf(stderr, "svc_pair: no %s\n", var);
		exit(2);
	}
	snprintf(peer_addr, sizeof(peer_addr), "%s", addr);
	if ((activated = (lfd = activated_fd(argv[1])) != -1) == 0)
		lfd = bound_fd();
	if (getsockname(lfd, (struct sockaddr *)&sin, &len) == -1)
		die("getsockname");
	snprintf(whoami, sizeof(whoami), "%s %s %d %ld %d", argv[1],
	    activated ? "socket" : "port", ntohs(sin.sin_port), (long)getpid(),
	    sockets);
	fprintf(stderr, "svc_pair: %s, peer at %s\n", whoami, peer_addr);
	signal(SIGCHLD, SIG_IGN);	/* children reap themselves */
	for (;;) {
		if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		switch (fork()) {
		case 0:
			close(lfd);
			serve(fd);
			_exit(0);
		case -1:
			reply(fd, 502, "fork failed");
			break;
		}
		close(fd);
	}
}
