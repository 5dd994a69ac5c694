/*
 * Services of the system under test (an HTTP API, a mock provider, a tool
 * server between the agents and the database).  Two lives
 * (docs/turns.md "What a service gets"):
 *
 *  - through the seam (services[].seam, the default, when the config has a
 *    proxy): the service reaches the database and every proxy through its
 *    own listeners of the seed's proxy set, like a turn.  Listeners are
 *    per seed, so is the service: started once the seed's proxies are
 *    open (wrk_services_seed_start), stopped with its whole process group
 *    once the seed's rounds are over (wrk_services_seed_stop).  A pool's
 *    connections never cross a seed boundary, and a seed's service starts
 *    with no memory of the last seed.
 *  - direct (seam: false): started once per worker, restarted when it
 *    dies, stopped with the worker; its database is the database itself.
 *
 * Every service's port is chosen before the first one starts, and never
 * changes for the worker's life, so every service, setup command and turn
 * sees every SOAK_SERVICE_<NAME>, and a restarted service is where the
 * others last saw it.  Two ways to listen on it (services[].listen):
 *
 *  - socket: soak binds and listens, and hands the socket over as
 *    systemd's socket activation does (fd 3, LISTEN_FDS=1, LISTEN_PID,
 *    LISTEN_FDNAMES).  The socket is ours for the worker's life: no
 *    window in which another process could take the port, and a restart
 *    gets the same socket, with whatever connected meanwhile still queued.
 *  - port: the service binds SOAK_PORT itself.  Until it starts soak holds
 *    the port with a bound socket that does not listen (connects are
 *    refused, bind(0) and connect()'s ephemeral ports pass it by), and
 *    lets go just before the spawn: the window is from there to the
 *    service's own bind.  Were soak to hold it longer, a service that
 *    binds without SO_REUSEADDR would fail.  A restart first holds the
 *    port again (waiting, within its ready_timeout, for a dead life's
 *    processes to let go of it); after a restart that failed it stays
 *    held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/exec.h"
#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"
#include "worker/env.h"
#include "worker/wrk.h"

/*
 * A seam service's grace between SIGTERM and SIGKILL at the end of a
 * seed.  Short: the seed is over, and whatever the service would still do
 * lands outside it; long enough for a server to close its sessions.
 */
#define SVC_SEED_STOP_MS	500
/* The longest wait between two looks at a starting service's readiness. */
#define SVC_READY_POLL_MS	8

struct svc {
	const struct cfg_service	*c;
	int				 actor;	/* through the seam: its index
						   among the proxy set's services
						   (proxy.h), else -1 */
	pid_t				 pid;
	int				 pidfd;
	int				 port;
	int				 sock;	/* listen: socket, the listening
						   socket, always; listen: port,
						   the reservation while the
						   service is not running, or -1 */
	int				 starts;
};

struct wrk_services {
	struct svc	*s;
	struct env_port	*ports;		/* what the environments say, by index */
	size_t		 n;
	const char	**seam;		/* the seam services' names, by actor */
	size_t		 nseam;
};

/*
 * A socket on 127.0.0.1:port (0: the kernel picks, and s->port says
 * which), close-on-exec and at fd 3 or above, listening or not.
 * SO_REUSEADDR so that a port left in TIME_WAIT by a dead service can be
 * held again.
 */
static int
svc_bind(struct svc *s, bool listening, char *err)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sin);
	int			fd, low = -1, one = 1, e;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(s->port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return errf(err, "service %s: socket: %s", s->c->name, strerror(errno));
	/* fd 0..2 would be clobbered by the child's redirections (the worker
	 * may have started with one closed). */
	if (fd < 3) {
		low = fd;
		if ((fd = fcntl(low, F_DUPFD_CLOEXEC, 3)) == -1) {
			errf(err, "service %s: fcntl: %s", s->c->name, strerror(errno));
			goto fail;
		}
		close(low);
		low = -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1 ||
	    (listening && listen(fd, SOMAXCONN) == -1)) {
		if (s->port == 0)
			errf(err, "service %s: cannot find a free port on 127.0.0.1: %s",
			    s->c->name, strerror(errno));
		else
			errf(err, "service %s: cannot hold its port 127.0.0.1:%d: %s",
			    s->c->name, s->port, strerror(errno));
		goto fail;
	}
	s->port = ntohs(sin.sin_port);
	s->sock = fd;
	return 0;
fail:
	e = errno;
	if (low != -1)
		close(low);
	close(fd);
	errno = e;
	return -1;
}

/*
 * listen: port, before a start: the port held, waiting while it is in use
 * (a dead service's process group, SIGKILLed, lets go of its sockets when
 * the kernel gets to it; a prefork server's children are many), until
 * deadline.  Then the start can hand it over, rather than the service
 * failing its own bind.
 */
static int
svc_hold(struct svc *s, int64_t deadline, char *err)
{
	int	delay = 1, e;

	while (s->sock == -1) {
		if (svc_bind(s, false, err) == 0)
			break;
		e = errno;
		if (e != EADDRINUSE)
			return -1;
		if (now_ms() >= deadline)
			return errf(err, "service %s: its port 127.0.0.1:%d is still "
			    "in use (by its last life's processes, or another "
			    "program's)", s->c->name, s->port);
		poll(NULL, 0, delay);
		delay = delay < 50 ? delay * 2 : 50;
	}
	return 0;
}

/* listen: port, while the service is not running: hold its port again. */
static void
svc_reserve(struct svc *s)
{
	char	err[ERR_LEN];

	if (s->c->listen != CFG_LISTEN_PORT || s->sock != -1)
		return;
	if (svc_bind(s, false, err) == -1)
		log_warnx("%s (its restart may find the port taken)", err);
}

static void
svc_release(struct svc *s)
{
	if (s->c->listen != CFG_LISTEN_PORT || s->sock == -1)
		return;
	close(s->sock);
	s->sock = -1;
}

static int
tcp_connect(int port)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	int			fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
tcp_accepts(int port)
{
	int	fd;

	if ((fd = tcp_connect(port)) == -1)
		return 0;
	close(fd);
	return 1;
}

/*
 * Connections on a listening socket waiting for accept(2): TCP_INFO's
 * tcpi_unacked is the accept queue's length on a listener (tcp_get_info).
 */
static int
accept_queue(int fd)
{
	struct tcp_info	ti;
	socklen_t	len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1)
		return -1;
	return (int)ti.tcpi_unacked;
}

/*
 * listen: socket, ready: tcp.  The socket listens before the service runs,
 * so a connect proves nothing; what does is the service taking a
 * connection off it.  Before the spawn, a probe connects and we wait (on
 * poll, an event) until it is in the accept queue; nobody else holds the
 * socket, so nobody can take it.  The service is ready once the queue is
 * shorter than that: it has called accept(2).  -1 with err; else the
 * probe's descriptor, and *queued the queue's length.
 */
static int
svc_probe(struct svc *s, int64_t deadline, int *queued, char *err)
{
	struct pollfd	pfd = { .fd = s->sock, .events = POLLIN };
	int		fd;

	if ((fd = tcp_connect(s->port)) == -1)
		return errf(err, "service %s: cannot connect to its own socket "
		    "on port %d: %s", s->c->name, s->port, strerror(errno));
	while (poll(&pfd, 1, ms_until(deadline)) == -1 && errno == EINTR)
		;
	if ((pfd.revents & POLLIN) == 0 || (*queued = accept_queue(s->sock)) < 1) {
		close(fd);
		return errf(err, "service %s: the probe of its socket on port %d "
		    "never reached the accept queue", s->c->name, s->port);
	}
	return fd;
}

/* A service's program that exec cannot start: a config error (cfgerr.h). */
static void
svc_exec_error(struct wrk *w, const struct svc *s, int errnum)
{
	char	key[64], why[ERR_LEN];
	int	e;

	if (errnum == 0)
		return;
	snprintf(key, sizeof(key), "services[%zu].command",
	    (size_t)(s - w->services->s));
	if (exec_check(s->c->command[0], &e, why) == 0 || e != errnum)
		snprintf(why, sizeof(why), "%s: %s", s->c->command[0], strerror(errnum));
	cfgerr_exec(&w->open_cfgerr, key, errnum, why);
}

/* Is it ready?  1 yes, 0 not yet, -1 the socket says nothing. */
static int
svc_ready(const struct svc *s, int queued)
{
	int	q;

	if (s->c->listen == CFG_LISTEN_PORT)
		return tcp_accepts(s->port);
	if ((q = accept_queue(s->sock)) == -1)
		return -1;
	return q < queued;
}

/*
 * A seam service's environment: a turn's, its listeners in place of a
 * turn's (docs/turns.md "What a service gets"): the database's defaults
 * name its own listener of the proxy in front of the database
 * (cfg->db_proxy; the database itself when there is none), SOAK_PROXY_<NAME>
 * its own listener of each proxy, the model SDKs' variables its listener of
 * the model proxy, and SOAK_SEED the seed it lives for.
 */
static void
svc_env_seam(struct env *env, struct wrk *w, const struct svc *s,
    const struct wrk_seam *seam, const char *dir)
{
	const struct cfg	*cfg = w->cfg;
	int			 actor = seam->turns + s->actor;
	char			 name[128];
	size_t			 p;

	env_turn(env, w, w->services->ports, w->services->n, dir,
	    cfg->db_proxy >= 0 ? proxy_set_addr(seam->ps, (size_t)cfg->db_proxy,
	    actor) : NULL);
	env_addf(env, "SOAK_SEED", "%" PRIu64, seam->seed);
	for (p = 0; p < cfg->nproxies; p++) {
		env_name(name, sizeof(name), "SOAK_PROXY_", cfg->proxies[p].name);
		env_addf(env, name, "%s", proxy_set_addr(seam->ps, p, actor));
	}
	if (cfg->model_proxy >= 0)
		env_model(env, proxy_set_addr(seam->ps, (size_t)cfg->model_proxy,
		    actor));
}

/*
 * Starts s, ready within its ready_timeout and limit.  seam: the seed it
 * goes through the seam for (its folder under the seed's workspace, its
 * listeners); NULL: a direct service's life, in the worker's folder.
 */
static int
svc_start(struct wrk *w, struct svc *s, const struct wrk_seam *seam,
    int64_t limit, char *err)
{
	struct spawn_req	 req = { 0 };
	struct env		 env;
	char			*dir = NULL, *out = NULL, *errp = NULL;
	int64_t			 started, deadline;
	int			 rc = -1, e, probe = -1, queued = 0, ready;
	bool			 activated = s->c->listen == CFG_LISTEN_SOCKET;

	env_init(&env);
	started = now_ms();
	/* Its ready_timeout, or what is left of the seed's. */
	deadline = deadline_within(limit, s->c->ready_timeout_ms);
	/* a seam service's logs are its seed's: kept with a failing one */
	dir = seam != NULL ? xasprintf("%s/services/%s", seam->dir, s->c->name) :
	    xasprintf("%s/services/%s", w->workspace, s->c->name);
	if (mkdir_p(dir, 0700, err) == -1)
		goto out;
	env_make_dirs(dir);
	out = xasprintf("%s/stdout.log", dir);
	errp = xasprintf("%s/stderr.log", dir);
	if (seam != NULL)
		svc_env_seam(&env, w, s, seam, dir);
	else
		env_base(&env, w, w->services->ports, w->services->n, dir);
	env_addf(&env, "SOAK_PORT", "%d", s->port);
	env_addf(&env, "SOAK_SERVICE", "%s", s->c->name);
	req = (struct spawn_req){ .argv = s->c->command, .envp = env.v, .dir = dir,
	    .stdout_path = out, .stderr_path = errp, .listen_fd = -1 };
	if (activated) {
		env_addf(&env, "LISTEN_FDS", "1");
		env_addf(&env, "LISTEN_FDNAMES", "%s", s->c->name);
		/* Room for any pid; the child writes its own (spawn.c). */
		env_addf(&env, "LISTEN_PID", "%020d", 0);
		req.envp = env.v;
		req.listen_pid = env.v[env.n - 1];
		req.listen_fd = s->sock;
		if (s->c->ready == CFG_READY_TCP &&
		    (probe = svc_probe(s, deadline, &queued, err)) == -1)
			goto out;
	}
	if (!activated && svc_hold(s, deadline, err) == -1)
		goto out;
	svc_release(s);
	if (wrk_spawn(&req, &s->pid, &s->pidfd, &e, err) == -1) {
		s->pid = 0;
		svc_exec_error(w, s, e);
		goto out;
	}
	s->starts++;
	if (s->c->ready == CFG_READY_NONE) {
		rc = 0;
		goto out;
	}
	/* Readiness: the port accepts (listen: port), or the service took a
	 * connection off its socket (listen: socket).  Between attempts wait
	 * on the pidfd, so a service that dies is noticed at once rather than
	 * at the deadline.  The wait backs off to SVC_READY_POLL_MS only: a
	 * service through the seam starts with every seed, and each ms
	 * between its readiness and our noticing it is a seed's. */
	for (int delay = 2;; delay = delay < SVC_READY_POLL_MS ? delay * 2 :
	    SVC_READY_POLL_MS) {
		struct pollfd	pfd = { .fd = s->pidfd, .events = POLLIN };

		if ((ready = svc_ready(s, queued)) == 1) {
			rc = 0;
			break;
		}
		if (ready == -1) {
			errf(err, "service %s: TCP_INFO on its socket: %s",
			    s->c->name, strerror(errno));
			break;
		}
		if (poll(&pfd, 1, delay) == 1) {
			errf(err, "service %s exited before it %s port %d (see %s)",
			    s->c->name, activated ? "accepted on its socket on" :
			    "listened on", s->port, errp);
			break;
		}
		if (now_ms() >= deadline) {
			errf(err, "service %s did not accept on %s %d within %lld ms "
			    "(see %s)", s->c->name, activated ? "its socket on port" :
			    "port", s->port, (long long)(deadline - started), errp);
			break;
		}
	}
	if (rc == -1) {
		kill(-s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		close(s->pidfd);
		s->pid = 0;
		s->pidfd = -1;
	}
out:
	if (rc == -1)
		svc_reserve(s);
	if (probe != -1)
		close(probe);
	env_free(&env);
	free(dir);
	free(out);
	free(errp);
	return rc;
}

/*
 * A seam service at the end of its seed: its process group told to stop
 * (SIGTERM), killed after SVC_SEED_STOP_MS, reaped; its port held again
 * (listen: port) or its socket kept (listen: socket) for the next seed.
 * *died: it had exited before it was told, said in why.
 */
static void
svc_halt(struct svc *s, bool *died, char *why, size_t len)
{
	struct pollfd	pfd = { .fd = s->pidfd, .events = POLLIN };
	int		st;

	*died = false;
	if (s->pid <= 0)
		return;
	if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
		*died = true;
		snprintf(why, len, "service %s died during the seed (%s %d)",
		    s->c->name, WIFSIGNALED(st) ? "signal" : "exit status",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	} else {
		kill(-s->pid, SIGTERM);
		if (poll(&pfd, 1, SVC_SEED_STOP_MS) != 1)
			kill(-s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	/* what is left of its group (a server's workers) */
	kill(-s->pid, SIGKILL);
	close(s->pidfd);
	s->pid = 0;
	s->pidfd = -1;
	svc_reserve(s);
}

static void
svc_stop(struct svc *s)
{
	if (s->pid > 0) {
		struct pollfd	pfd = { .fd = s->pidfd, .events = POLLIN };

		kill(-s->pid, SIGTERM);
		if (poll(&pfd, 1, 2000) != 1)
			kill(-s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		kill(-s->pid, SIGKILL);
		close(s->pidfd);
		s->pid = 0;
		s->pidfd = -1;
	}
	if (s->sock != -1)
		close(s->sock);
	s->sock = -1;
}

int
wrk_services_start(struct wrk *w, char *err)
{
	const struct cfg	*cfg = w->cfg;
	size_t			 i;

	w->services = xcalloc(1, sizeof(*w->services));
	w->services->n = cfg->nservices;
	w->services->s = xcalloc(cfg->nservices, sizeof(struct svc));
	w->services->ports = xcalloc(cfg->nservices, sizeof(struct env_port));
	w->services->seam = xcalloc(cfg->nservices + 1, sizeof(char *));
	for (i = 0; i < cfg->nservices; i++) {
		w->services->s[i].c = &cfg->services[i];
		w->services->s[i].pidfd = -1;
		w->services->s[i].sock = -1;
		w->services->s[i].actor = -1;
		if (cfg_service_seam(cfg, &cfg->services[i])) {
			w->services->s[i].actor = (int)w->services->nseam;
			w->services->seam[w->services->nseam++] =
			    cfg->services[i].name;
		}
	}
	/* Every port first, so the first service's environment names the
	 * last one's. */
	for (i = 0; i < cfg->nservices; i++) {
		struct svc	*s = &w->services->s[i];

		if (svc_bind(s, s->c->listen == CFG_LISTEN_SOCKET, err) == -1)
			return -1;
		w->services->ports[i].name = cfg->services[i].name;
		w->services->ports[i].port = s->port;
	}
	/* a seam service starts with each seed, once its listeners exist */
	for (i = 0; i < cfg->nservices; i++) {
		if (w->services->s[i].actor >= 0)
			continue;
		if (svc_start(w, &w->services->s[i], NULL, INT64_MAX, err) == -1)
			return -1;
		log_debug("service %s ready on port %d", cfg->services[i].name,
		    w->services->s[i].port);
	}
	return 0;
}

const char *const *
wrk_seam_services(const struct wrk *w, size_t *n)
{
	*n = w->services ? w->services->nseam : 0;
	return w->services ? w->services->seam : NULL;
}

int
wrk_services_seed_start(struct wrk *w, const struct wrk_seam *seam,
    int64_t deadline, int64_t *took_ms, char *err)
{
	int64_t	t0 = now_ms();
	size_t	i;

	*took_ms = 0;
	for (i = 0; w->services && i < w->services->n; i++) {
		struct svc	*s = &w->services->s[i];

		if (s->actor < 0)
			continue;
		if (svc_start(w, s, seam, deadline, err) == -1)
			return -1;
		/* a schedule judges it by its group from now on */
		proxy_set_service_started(seam->ps, (size_t)s->actor, s->pid);
		log_debug("service %s ready on port %d for seed %" PRIu64,
		    s->c->name, s->port, seam->seed);
	}
	*took_ms = now_ms() - t0;
	return 0;
}

void
wrk_services_seed_stop(struct wrk *w, bool *died, char *why, size_t len,
    int64_t *took_ms)
{
	int64_t	t0 = now_ms();
	size_t	i;
	bool	d;

	*died = false;
	for (i = 0; w->services && i < w->services->n; i++) {
		if (w->services->s[i].actor < 0)
			continue;
		svc_halt(&w->services->s[i], &d, *died ? NULL : why,
		    *died ? 0 : len);
		*died = *died || d;
	}
	*took_ms = now_ms() - t0;
}

int
wrk_services_check(struct wrk *w, int64_t deadline, bool *died, char *err)
{
	size_t	i;
	int	st;

	*died = false;
	for (i = 0; w->services && i < w->services->n; i++) {
		struct svc	*s = &w->services->s[i];

		if (s->actor >= 0)
			continue;	/* a seed's: wrk_services_seed_stop */
		if (s->pid > 0 && waitpid(s->pid, &st, WNOHANG) != s->pid)
			continue;
		*died = true;
		if (s->pid > 0) {
			log_warnx("service %s died (%s %d); restarting", s->c->name,
			    WIFSIGNALED(st) ? "signal" : "exit status",
			    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			kill(-s->pid, SIGKILL);
			close(s->pidfd);
			s->pid = 0;
			s->pidfd = -1;
		}
		if (svc_start(w, s, NULL, deadline, err) == -1)
			return -1;
	}
	return 0;
}

void
wrk_services_stop(struct wrk *w)
{
	size_t	i;

	if (w->services == NULL)
		return;
	for (i = 0; i < w->services->n; i++)
		svc_stop(&w->services->s[i]);
	free(w->services->s);
	free(w->services->ports);
	free(w->services->seam);
	free(w->services);
	w->services = NULL;
}

const struct env_port *
wrk_service_ports(const struct wrk *w, size_t *n)
{
	*n = w->services ? w->services->n : 0;
	return w->services ? w->services->ports : NULL;
}

int
wrk_service_port(const struct wrk *w, const char *name)
{
	size_t	i;

	for (i = 0; w->services && i < w->services->n; i++)
		if (strcmp(w->services->s[i].c->name, name) == 0)
			return w->services->s[i].port;
	return -1;
}
