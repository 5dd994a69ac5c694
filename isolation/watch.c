/*
 * The database watch (contract in iso.h): one thread per worker with a
 * connection of its own, asking the server when it started, so that an
 * outage the turns ran into is soak's own observation, not the turns'
 * word for it.
 */
#include "isolation/iso.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "common/conninfo.h"
#include "common/log.h"
#include "common/util.h"

struct iso_watch {
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;		/* CLOCK_MONOTONIC: stop, or the next question */
	bool		 stop;
	char		*conninfo;
	char		 desc[128];	/* host:port/db, for messages */
	int		 worker_id;
	/* under mu */
	char		 epoch[ISO_EPOCH_LEN];	/* the last answer; "" before one */
	int64_t		 begin, end;	/* the latest outage (now_ms()); begin 0: none */
	bool		 ongoing;	/* it has not ended yet */
	bool		 restarted;	/* it ended with another server start */
	char		 why[ERR_LEN];
};

/* One question within ISO_WATCH_ANSWER_MS: 0 with epoch, or -1 with why. */
static int
watch_ask(struct iso_watch *w, PGconn **conn, char *epoch, char *why)
{
	int64_t		 deadline = now_ms() + ISO_WATCH_ANSWER_MS;
	PGresult	*res;
	char		 m[200];
	bool		 expired = false;
	int		 rc = -1;

	if (*conn == NULL && (*conn = iso_pq_connect(w->conninfo, deadline, why)) == NULL)
		return -1;
	res = iso_pq_exec(*conn, "SELECT pg_postmaster_start_time()::text", deadline,
	    &expired);
	if (!expired && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		snprintf(epoch, ISO_EPOCH_LEN, "%s", PQgetvalue(res, 0, 0));
		rc = 0;
	} else if (expired)
		errf(why, "no answer within %d.%d s", ISO_WATCH_ANSWER_MS / 1000,
		    ISO_WATCH_ANSWER_MS % 1000 / 100);
	else
		errf(why, "%s", iso_pq_msg(*conn, res, m, sizeof(m)));
	PQclear(res);
	if (rc == -1) {
		/* Mid-query or broken: no use for the next question. */
		iso_pq_abandon(*conn);
		*conn = NULL;
	}
	return rc;
}

/* Under mu: what one question's outcome does to the record. */
static void
watch_note(struct iso_watch *w, int rc, int64_t asked, const char *epoch,
    const char *why)
{
	int64_t	now = now_ms();

	if (rc == -1) {
		if (w->ongoing)
			return;
		w->ongoing = true;
		w->restarted = false;
		w->begin = asked;
		snprintf(w->why, sizeof(w->why), "%s", why);
		conninfo_scrub(w->why, sizeof(w->why), w->conninfo);
		log_warnx("worker %d: the database at %s did not answer soak's watch: %s",
		    w->worker_id, w->desc, w->why);
		return;
	}
	if (w->epoch[0] != '\0' && strcmp(epoch, w->epoch) != 0) {
		if (!w->ongoing)
			w->begin = asked;
		w->restarted = true;
		snprintf(w->why, sizeof(w->why), "its server started at %s, before "
		    "at %s", epoch, w->epoch);
		log_warnx("worker %d: the database at %s restarted (soak's watch): its "
		    "server started at %s", w->worker_id, w->desc, epoch);
		w->ongoing = false;
		w->end = now;
	} else if (w->ongoing) {
		w->ongoing = false;
		w->end = now;
		log_warnx("worker %d: the database at %s answers soak's watch again, "
		    "after %.1f s", w->worker_id, w->desc, (double)(now - w->begin) / 1000);
	}
	snprintf(w->epoch, sizeof(w->epoch), "%s", epoch);
}

static void *
watch_main(void *arg)
{
	struct iso_watch	*w = arg;
	struct timespec		 ts;
	PGconn			*conn = NULL;
	char			 epoch[ISO_EPOCH_LEN], why[ERR_LEN];
	int64_t			 asked;
	int			 rc;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		pthread_mutex_unlock(&w->mu);
		asked = now_ms();
		rc = watch_ask(w, &conn, epoch, why);
		pthread_mutex_lock(&w->mu);
		watch_note(w, rc, asked, epoch, why);
		/* The watch's own pace, like a heartbeat; stop wakes it. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += ISO_WATCH_EVERY_MS / 1000;
		ts.tv_nsec += (long)(ISO_WATCH_EVERY_MS % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&w->mu);
	iso_pq_abandon(conn);
	return NULL;
}

struct iso_watch *
iso_watch_start(const char *conninfo, int worker_id, char *err)
{
	struct iso_watch	*w = xcalloc(1, sizeof(*w));
	pthread_condattr_t	 ca;
	int			 e;

	w->conninfo = xstrdup(conninfo);
	w->worker_id = worker_id;
	iso_conn_desc(conninfo, w->desc, sizeof(w->desc));
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((e = pthread_create(&w->thread, NULL, watch_main, w)) != 0) {
		errf(err, "cannot start the database watch: %s", strerror(e));
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w->conninfo);
		free(w);
		return NULL;
	}
	return w;
}

void
iso_watch_stop(struct iso_watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->conninfo);
	free(w);
}

int
iso_watch_outage(struct iso_watch *w, int64_t since, char *why, size_t len)
{
	int	rc = 0;

	if (w == NULL)
		return 0;
	pthread_mutex_lock(&w->mu);
	if (w->begin != 0 && (w->ongoing || w->end >= since)) {
		rc = 1;
		if (w->ongoing)
			snprintf(why, len, "soak's watch of the database at %s has had no "
			    "answer since %.1f s %s the seed began: %s", w->desc,
			    (double)llabs(w->begin - since) / 1000,
			    w->begin >= since ? "after" : "before", w->why);
		else if (w->restarted)
			snprintf(why, len, "soak's watch saw the database at %s restart "
			    "%.1f s after the seed began (%s)", w->desc,
			    (double)(w->end > since ? w->end - since : 0) / 1000, w->why);
		else
			snprintf(why, len, "soak's watch of the database at %s had no "
			    "answer for %.1f s, from %.1f s %s the seed began: %s", w->desc,
			    (double)(w->end - w->begin) / 1000,
			    (double)llabs(w->begin - since) / 1000,
			    w->begin >= since ? "after" : "before", w->why);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}
