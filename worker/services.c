/*
 * Services of the system under test (an HTTP API, a mock provider): started
 * once per worker beside the turns, on a port soak picks (SOAK_PORT),
 * restarted when they die, stopped with the worker.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/env.h"
#include "worker/wrk.h"

struct svc {
	const struct cfg_service	*c;
	pid_t				 pid;
	int				 pidfd;
	int				 port;
	int				 starts;
};

struct wrk_services {
	struct svc	*s;
	struct env_port	*ports;		/* what the environments say, by index */
	size_t		 n;
};

/*
 * The kernel picks a free port; we close it and hand the number to the
 * service.  Another process could take it in between; on loopback with
 * ephemeral ports that is rare, and a service that fails to bind shows up
 * as "not ready", which is an infra verdict, never a wrong pass.
 */
static int
free_port(char *err)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sin);
	int			fd, port;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return errf(err, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		close(fd);
		return errf(err, "cannot find a free port: %s", strerror(errno));
	}
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

static int
tcp_accepts(int port)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	int			fd, ok;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	ok = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(fd);
	return ok;
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
	if (wrk_command_check(s->c->command[0], &e, why) == 0 || e != errnum)
		snprintf(why, sizeof(why), "%s: %s", s->c->command[0], strerror(errnum));
	cfgerr_exec(&w->open_cfgerr, key, errnum, why);
}

static int
svc_start(struct wrk *w, struct svc *s, int64_t limit, char *err)
{
	struct spawn_req	 req = { 0 };
	struct env		 env;
	char			*dir = NULL, *out = NULL, *errp = NULL;
	int64_t			 started, deadline;
	int			 rc = -1, e;

	env_init(&env);
	if ((s->port = free_port(err)) == -1)
		goto out;
	dir = xasprintf("%s/services/%s", w->workspace, s->c->name);
	if (mkdir_p(dir, 0700, err) == -1)
		goto out;
	env_make_dirs(dir);
	out = xasprintf("%s/stdout.log", dir);
	errp = xasprintf("%s/stderr.log", dir);
	w->services->ports[s - w->services->s].port = s->port;
	env_base(&env, w, w->services->ports, w->services->n, dir);
	env_addf(&env, "SOAK_PORT", "%d", s->port);
	env_addf(&env, "SOAK_SERVICE", "%s", s->c->name);
	req = (struct spawn_req){ .argv = s->c->command, .envp = env.v, .dir = dir,
	    .stdout_path = out, .stderr_path = errp };
	if (wrk_spawn(&req, &s->pid, &s->pidfd, &e, err) == -1) {
		svc_exec_error(w, s, e);
		goto out;
	}
	s->starts++;
	if (s->c->ready == CFG_READY_NONE) {
		rc = 0;
		goto out;
	}
	/* Readiness: the port accepts.  Between attempts wait on the pidfd, so
	 * a service that dies is noticed at once rather than at the deadline. */
	/* Its ready_timeout, or what is left of the seed's. */
	started = now_ms();
	deadline = deadline_within(limit, s->c->ready_timeout_ms);
	for (int delay = 2;; delay = delay < 50 ? delay * 2 : 50) {
		struct pollfd	pfd = { .fd = s->pidfd, .events = POLLIN };

		if (tcp_accepts(s->port)) {
			rc = 0;
			break;
		}
		if (poll(&pfd, 1, delay) == 1) {
			errf(err, "service %s exited before it listened on port %d "
			    "(see %s)", s->c->name, s->port, errp);
			break;
		}
		if (now_ms() >= deadline) {
			errf(err, "service %s did not accept on port %d within %lld ms "
			    "(see %s)", s->c->name, s->port,
			    (long long)(deadline - started), errp);
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
	env_free(&env);
	free(dir);
	free(out);
	free(errp);
	return rc;
}

static void
svc_stop(struct svc *s)
{
	if (s->pid <= 0)
		return;
	kill(-s->pid, SIGTERM);
	{
		struct pollfd	pfd = { .fd = s->pidfd, .events = POLLIN };

		if (poll(&pfd, 1, 2000) != 1)
			kill(-s->pid, SIGKILL);
	}
	waitpid(s->pid, NULL, 0);
	kill(-s->pid, SIGKILL);
	close(s->pidfd);
	s->pid = 0;
	s->pidfd = -1;
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
	for (i = 0; i < cfg->nservices; i++) {
		w->services->ports[i].name = cfg->services[i].name;
		w->services->s[i].c = &cfg->services[i];
		w->services->s[i].pidfd = -1;
		if (svc_start(w, &w->services->s[i], INT64_MAX, err) == -1)
			return -1;
		log_debug("service %s ready on port %d", cfg->services[i].name,
		    w->services->s[i].port);
	}
	return 0;
}

int
wrk_services_check(struct wrk *w, int64_t deadline, bool *died, char *err)
{
	size_t	i;
	int	st;

	*died = false;
	for (i = 0; w->services && i < w->services->n; i++) {
		struct svc	*s = &w->services->s[i];

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
		}
		if (svc_start(w, s, deadline, err) == -1)
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
