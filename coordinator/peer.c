#include "coordinator/peer.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

static const char *const peer_state_names[] = {
	[PEER_NEW] = "new", [PEER_CHALLENGED] = "challenged",
	[PEER_OPEN] = "open", [PEER_CLOSING] = "closing",
};

/* The rate of one kind of note (peers_note). */
struct note_rate {
	bool		 seen;
	int64_t		 last;		/* when one was last written in full */
	unsigned	 more;		/* since then, not written */
};

/* One host's failed authentications. */
struct limit {
	char	 host[48];
	int64_t	 first;		/* start of the counting window */
	int	 fails;
	int64_t	 banned_until;	/* 0: not banned */
};

struct peers {
	const struct auth_secret *secret;	/* NULL: no handshake */
	struct peer		**v;
	size_t			  n;
	pthread_mutex_t		  mu;		/* the limiter's, the count's and the
						   notes', for nng's thread */
	struct limit		 *lim;
	size_t			  nlim;
	unsigned		  unauth;	/* admitted, not OPEN, not gone */
	struct note_rate	  notes[PEER_NNOTES];
};

struct peers *
peers_new(const struct auth_secret *secret)
{
	struct peers	*ps = xcalloc(1, sizeof(*ps));

	ps->secret = secret && secret->len > 0 ? secret : NULL;
	pthread_mutex_init(&ps->mu, NULL);
	ps->lim = xcalloc(PEER_MAX_HOSTS, sizeof(*ps->lim));
	return ps;
}

static void
peer_free(struct peer *p)
{
	msg_clear(&p->hello);
	explicit_bzero(p, sizeof(*p));
	free(p);
}

void
peers_free(struct peers *ps)
{
	size_t	i;

	if (ps == NULL)
		return;
	for (i = 0; i < ps->n; i++)
		peer_free(ps->v[i]);
	free(ps->v);
	free(ps->lim);
	pthread_mutex_destroy(&ps->mu);
	free(ps);
}

struct peer *
peers_find(struct peers *ps, uint32_t pipe)
{
	size_t	i;

	for (i = 0; i < ps->n; i++)
		if (ps->v[i]->pipe == pipe)
			return ps->v[i];
	return NULL;
}

struct peer *
peers_get(struct peers *ps, uint32_t pipe, const char *addr, const char *host,
    int64_t now)
{
	struct peer	*p;

	if ((p = peers_find(ps, pipe)) != NULL)
		return p;
	p = xcalloc(1, sizeof(*p));
	p->pipe = pipe;
	p->since = now;
	p->deadline = now + PEER_AUTH_MS;
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	snprintf(p->host, sizeof(p->host), "%s", host);
	ps->v = xreallocarray(ps->v, ps->n + 1, sizeof(*ps->v));
	ps->v[ps->n++] = p;
	return p;
}

struct peer *
peers_add(struct peers *ps, uint32_t pipe, const char *addr, const char *host,
    int64_t now)
{
	struct peer	*p = peers_get(ps, pipe, addr, host, now);

	/* peers_admit counted exactly the connections with a host. */
	p->counted = *host != '\0';
	return p;
}

/* p no longer counts as unauthenticated: it opened, or it is gone. */
static void
peer_uncount(struct peers *ps, struct peer *p)
{
	if (!p->counted)
		return;
	pthread_mutex_lock(&ps->mu);
	ps->unauth--;
	pthread_mutex_unlock(&ps->mu);
	p->counted = false;
}

void
peers_gone(struct peers *ps, uint32_t pipe)
{
	size_t	i;

	for (i = 0; i < ps->n; i++) {
		if (ps->v[i]->pipe != pipe)
			continue;
		peer_uncount(ps, ps->v[i]);
		peer_free(ps->v[i]);
		ps->v[i] = ps->v[--ps->n];
		return;
	}
}

static void
set_peer_state(struct peers *ps, struct peer *p, enum peer_state st)
{
	log_debug("pipe %u (%s): %s -> %s", p->pipe, p->addr,
	    peer_state_names[p->state], peer_state_names[st]);
	p->state = st;
	if (st == PEER_OPEN)
		peer_uncount(ps, p);
}

/* --- notes: what a flood would repeat, one line per kind per PEER_LOG_MS --- */

static const struct {
	const char	*one;	/* "%s" the address, then the detail */
	const char	*more;	/* the count */
} note_fmt[PEER_NNOTES] = {
	[PEER_NOTE_FULL] = { "closed the connection from %s: %d connections are "
	    "not authenticated yet", "closed %u more connections: %d were not "
	    "authenticated yet" },
	[PEER_NOTE_SLOW] = { "closed the connection from %s: not authenticated "
	    "within %d s", "closed %u more connections not authenticated within %d s" },
	[PEER_NOTE_FLOOD] = { "closed the connection from %s: one request too "
	    "many in flight", "closed %u more connections with too many requests "
	    "in flight" },
	[PEER_NOTE_DEAF] = { "closed the connection from %s: it did not take a "
	    "reply within %d s", "closed %u more connections that did not take a "
	    "reply within %d s" },
	[PEER_NOTE_MALFORMED] = { "refused a malformed message from %s", "refused "
	    "%u more malformed messages" },
	[PEER_NOTE_EARLY] = { "refused a request from %s before hello",
	    "refused %u more requests before hello" },
};

/* The number each note's text quotes. */
static int
note_arg(enum peer_note what)
{
	switch (what) {
	case PEER_NOTE_FULL:	return PEER_MAX_UNAUTH;
	case PEER_NOTE_SLOW:	return PEER_AUTH_MS / 1000;
	case PEER_NOTE_DEAF:	return PEER_SEND_MS / 1000;
	default:		return 0;
	}
}

static void
note_locked(struct peers *ps, enum peer_note what, const char *addr,
    const char *detail, int64_t now)
{
	struct note_rate	*r = &ps->notes[what];
	char			 line[512];

	if (r->seen && now - r->last < PEER_LOG_MS) {
		r->more++;
		return;
	}
	if (r->more > 0) {
		snprintf(line, sizeof(line), note_fmt[what].more, r->more,
		    note_arg(what));
		log_warnx("%s (over the last %d s)", line, PEER_LOG_MS / 1000);
	}
	r->seen = true;
	r->last = now;
	r->more = 0;
	snprintf(line, sizeof(line), note_fmt[what].one, addr, note_arg(what));
	log_warnx("%s%s%s", line, detail ? ": " : "", detail ? detail : "");
}

void
peers_note(struct peers *ps, enum peer_note what, const char *addr,
    const char *detail, int64_t now)
{
	pthread_mutex_lock(&ps->mu);
	note_locked(ps, what, addr, detail, now);
	pthread_mutex_unlock(&ps->mu);
}

void
peers_note_flush(struct peers *ps, int64_t now, bool all)
{
	struct note_rate	*r;
	char			 line[512];
	int			 i;

	pthread_mutex_lock(&ps->mu);
	for (i = 0; i < PEER_NNOTES; i++) {
		r = &ps->notes[i];
		if (r->more == 0 || (!all && now - r->last < PEER_LOG_MS))
			continue;
		snprintf(line, sizeof(line), note_fmt[i].more, r->more,
		    note_arg((enum peer_note)i));
		log_warnx("%s (over the last %d s)", line, (int)((now - r->last + 999) / 1000));
		r->last = now;
		r->more = 0;
	}
	pthread_mutex_unlock(&ps->mu);
}

/* --- admission and the costs of a connection (peer.h) --- */

enum peer_admit
peers_admit(struct peers *ps, const char *addr, const char *host, int64_t now)
{
	enum peer_admit	a = PEER_ADMITTED;

	if (*host == '\0')
		return PEER_ADMITTED;
	if (peers_banned(ps, host, now))
		return PEER_BANNED;
	pthread_mutex_lock(&ps->mu);
	if (ps->unauth >= PEER_MAX_UNAUTH) {
		note_locked(ps, PEER_NOTE_FULL, addr, NULL, now);
		a = PEER_FULL;
	} else
		ps->unauth++;
	pthread_mutex_unlock(&ps->mu);
	return a;
}

/* Forgets what p was proving; it is closed and will be gone. */
static void
peer_close(struct peers *ps, struct peer *p)
{
	explicit_bzero(p->nw, sizeof(p->nw));
	explicit_bzero(p->nc, sizeof(p->nc));
	msg_clear(&p->hello);
	set_peer_state(ps, p, PEER_CLOSING);
}

void
peer_drop(struct peers *ps, struct peer *p, enum peer_note why, int64_t now)
{
	char	detail[64];

	if (p->state == PEER_CLOSING)
		return;
	if (why == PEER_NOTE_FLOOD)
		snprintf(detail, sizeof(detail), "%d unanswered, at most %d %s",
		    p->inflight, p->state == PEER_OPEN ? PEER_MAX_INFLIGHT :
		    PEER_MAX_INFLIGHT_NEW, p->state == PEER_OPEN ? "once authenticated" :
		    "before authenticating");
	peers_note(ps, why, p->addr, why == PEER_NOTE_FLOOD ? detail : NULL, now);
	peer_close(ps, p);
}

size_t
peers_overdue(struct peers *ps, int64_t now, uint32_t *out, size_t n, int64_t *next)
{
	size_t	i, k = 0;

	*next = -1;
	for (i = 0; i < ps->n; i++) {
		struct peer	*p = ps->v[i];

		if (p->state == PEER_OPEN || p->state == PEER_CLOSING ||
		    *p->host == '\0')
			continue;
		if (p->deadline > now || k == n) {
			if (*next == -1 || p->deadline < *next)
				*next = p->deadline;
			continue;
		}
		peer_drop(ps, p, PEER_NOTE_SLOW, now);
		out[k++] = p->pipe;
	}
	return k;
}

bool
peer_request(struct peers *ps, struct peer *p, int64_t now)
{
	int	max = p->state == PEER_OPEN ? PEER_MAX_INFLIGHT : PEER_MAX_INFLIGHT_NEW;

	if (p->inflight >= max) {
		peer_drop(ps, p, PEER_NOTE_FLOOD, now);
		return false;
	}
	p->inflight++;
	return true;
}

void
peer_replied(struct peer *p)
{
	if (p->inflight > 0)
		p->inflight--;
}

/* --- the limiter --- */

/*
 * The entry of host, or a fresh one; when all PEER_MAX_HOSTS are taken,
 * the oldest unbanned host's, else the one whose ban ends first.  O(hosts)
 * per failure, none per message.
 */
static struct limit *
limit_slot(struct peers *ps, const char *host, int64_t now)
{
	struct limit	*l, *victim = NULL;
	size_t		 i;

	for (i = 0; i < ps->nlim; i++)
		if (strcmp(ps->lim[i].host, host) == 0)
			return &ps->lim[i];
	if (ps->nlim < PEER_MAX_HOSTS)
		l = &ps->lim[ps->nlim++];
	else {
		for (i = 0; i < ps->nlim; i++)
			if (ps->lim[i].banned_until <= now && (victim == NULL ||
			    ps->lim[i].first < victim->first))
				victim = &ps->lim[i];
		/* Every host banned: the ban ending first makes room. */
		if (victim == NULL) {
			victim = &ps->lim[0];
			for (i = 1; i < ps->nlim; i++)
				if (ps->lim[i].banned_until < victim->banned_until)
					victim = &ps->lim[i];
		}
		l = victim;
	}
	memset(l, 0, sizeof(*l));
	snprintf(l->host, sizeof(l->host), "%s", host);
	l->first = now;
	return l;
}

static void
limit_fail(struct peers *ps, const char *host, int64_t now)
{
	struct limit	*l;

	if (*host == '\0')
		return;
	pthread_mutex_lock(&ps->mu);
	l = limit_slot(ps, host, now);
	if (l->banned_until && l->banned_until <= now)
		l->banned_until = 0;
	if (now - l->first > PEER_FAIL_WINDOW_MS) {
		l->first = now;
		l->fails = 0;
	}
	if (++l->fails >= PEER_MAX_FAILS && l->banned_until == 0) {
		l->banned_until = now + PEER_BAN_MS;
		log_warnx("refusing connections from %s for %d s: %d failed "
		    "authentications within %d s", host, PEER_BAN_MS / 1000, l->fails,
		    PEER_FAIL_WINDOW_MS / 1000);
		l->fails = 0;
		l->first = now;
	}
	pthread_mutex_unlock(&ps->mu);
}

bool
peers_banned(struct peers *ps, const char *host, int64_t now)
{
	bool	banned = false;
	size_t	i;

	if (*host == '\0')
		return false;
	pthread_mutex_lock(&ps->mu);
	for (i = 0; i < ps->nlim; i++)
		if (strcmp(ps->lim[i].host, host) == 0) {
			banned = ps->lim[i].banned_until > now;
			break;
		}
	pthread_mutex_unlock(&ps->mu);
	return banned;
}

/* --- the handshake --- */

static void
text_reply(struct msg *rep, enum msg_type type, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		abort();
	va_end(ap);
	memset(rep, 0, sizeof(*rep));
	rep->type = type;
	rep->u.ack.text = s;
}

/* A failed authentication: logged, counted, and the pipe closes. */
static void
peer_fail(struct peers *ps, struct peer *p, int64_t now, const char *why)
{
	log_warnx("pipe %u (%s): authentication failed: %s", p->pipe, p->addr, why);
	peer_close(ps, p);
	limit_fail(ps, p->host, now);
}

static enum peer_action
on_new(struct peers *ps, struct peer *p, int64_t now, struct msg *req,
    struct msg *rep)
{
	char	err[ERR_LEN];

	if (req->type == MSG_AUTH) {
		msg_clear(req);
		peer_fail(ps, p, now, "auth without a challenge");
		text_reply(rep, MSG_NACK, "authentication failed");
		return PEER_ANSWER;
	}
	if (req->type != MSG_HELLO) {
		peers_note(ps, PEER_NOTE_EARLY, p->addr, msg_type_name(req->type), now);
		text_reply(rep, MSG_NACK, "not authenticated: say hello first");
		msg_clear(req);
		return PEER_ANSWER;
	}
	if (ps->secret == NULL) {
		set_peer_state(ps, p, PEER_OPEN);
		return PEER_PASS;
	}
	if (auth_nonce(p->nc, err) == -1) {
		log_warnx("%s", err);
		text_reply(rep, MSG_NACK, "the coordinator cannot make a challenge");
		msg_clear(req);
		return PEER_ANSWER;
	}
	memcpy(p->nw, req->u.hello.nonce, AUTH_NONCE_LEN);
	p->hello = *req;		/* kept until the worker has proved itself */
	memset(req, 0, sizeof(*req));
	memset(rep, 0, sizeof(*rep));
	rep->type = MSG_CHALLENGE;
	memcpy(rep->u.challenge.nonce, p->nc, AUTH_NONCE_LEN);
	auth_proof(ps->secret, AUTH_COORDINATOR, p->nw, p->nc, rep->u.challenge.proof);
	set_peer_state(ps, p, PEER_CHALLENGED);
	return PEER_ANSWER;
}

static enum peer_action
on_challenged(struct peers *ps, struct peer *p, int64_t now, struct msg *req,
    struct msg *rep, uint64_t *seq)
{
	char	why[ERR_LEN], name[LOG_ESC_LEN];
	bool	ok;

	if (req->type != MSG_AUTH) {
		snprintf(why, sizeof(why), "%s where auth was due", msg_type_name(req->type));
		ok = false;
	} else if (!(ok = auth_proof_ok(ps->secret, AUTH_WORKER, p->nw, p->nc,
	    req->u.auth.proof)))
		snprintf(why, sizeof(why), "wrong proof from \"%s\" (another shared "
		    "secret, or a replay)", log_escape(name, sizeof(name) - 64,
		    p->hello.u.hello.name));
	msg_clear(req);
	if (!ok) {
		peer_fail(ps, p, now, why);
		text_reply(rep, MSG_NACK, "authentication failed");
		return PEER_ANSWER;
	}
	auth_session_init(&p->sess, ps->secret, p->nw, p->nc);
	explicit_bzero(p->nw, sizeof(p->nw));	/* the challenge is used up */
	explicit_bzero(p->nc, sizeof(p->nc));
	p->sealed = true;
	*req = p->hello;
	memset(&p->hello, 0, sizeof(p->hello));
	*seq = 0;			/* the WELCOME answers AUTH */
	set_peer_state(ps, p, PEER_OPEN);
	return PEER_PASS;
}

static enum peer_action
on_open(struct peers *ps, struct peer *p, int64_t now, struct msg *req,
    struct msg *rep)
{
	if (req->type == MSG_AUTH) {
		msg_clear(req);
		peer_fail(ps, p, now, "auth without a challenge");
		text_reply(rep, MSG_NACK, "authentication failed");
		return PEER_ANSWER;
	}
	if (req->type == MSG_HELLO) {
		msg_clear(req);
		text_reply(rep, MSG_NACK, "this connection already said hello");
		return PEER_ANSWER;
	}
	return PEER_PASS;
}

enum peer_action
peer_recv(struct peers *ps, struct peer *p, const uint8_t *buf, size_t len,
    int64_t now, struct msg *req, struct msg *rep, uint64_t *seq)
{
	char	err[ERR_LEN];
	size_t	mlen = len;

	memset(req, 0, sizeof(*req));
	memset(rep, 0, sizeof(*rep));
	*seq = 0;
	if (p->state == PEER_CLOSING)
		return PEER_DROP;
	/* A sealed message is trusted for nothing, its length included,
	 * before its MAC and sequence number check out. */
	if (p->sealed && (auth_open(&p->sess, AUTH_TO_COORDINATOR, buf, len, seq,
	    &mlen, err) == -1 || auth_seq_accept(&p->sess, *seq, err) == -1)) {
		peer_fail(ps, p, now, err);
		return PEER_DROP;
	}
	if (msg_decode(buf, mlen, req, err) == -1) {
		peers_note(ps, PEER_NOTE_MALFORMED, p->addr, err, now);
		if (p->state == PEER_CHALLENGED) {
			peer_fail(ps, p, now, "a malformed message where auth was due");
			text_reply(rep, MSG_NACK, "authentication failed");
		} else
			text_reply(rep, MSG_NACK, "rejected: %s", err);
		return PEER_ANSWER;
	}
	switch (p->state) {
	case PEER_NEW:
		return on_new(ps, p, now, req, rep);
	case PEER_CHALLENGED:
		return on_challenged(ps, p, now, req, rep, seq);
	case PEER_OPEN:
		return on_open(ps, p, now, req, rep);
	case PEER_CLOSING:
		break;
	}
	msg_clear(req);
	return PEER_DROP;
}

int
peer_encode(const struct peer *p, const struct msg *rep, uint64_t seq, uint8_t **buf,
    size_t *len, char *err)
{
	if (msg_encode(rep, buf, len, err) == -1)
		return -1;
	if (p->sealed)
		auth_seal(&p->sess, AUTH_TO_WORKER, seq, buf, len);
	return 0;
}
