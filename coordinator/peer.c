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

/* A place of the pre-auth pool (peer.h). */
struct place {
	uint32_t	 pipe;
	uint64_t	 hkey;		/* its host's, hashed */
	int		 fd;
	char		 addr[64];
	int64_t		 since;		/* admitted */
	int64_t		 last;		/* its last message, or our last reply handed over */
	bool		 heard;		/* a whole message of it arrived */
	int		 pinned;	/* the loop works on it, or a reply is on its way */
};

struct peers {
	const struct auth_secret *secret;	/* NULL: no handshake */
	struct peer		**v;
	size_t			  n;
	struct peer		**bucket;	/* by pipe id; nbucket a power of two */
	size_t			  nbucket;
	pthread_mutex_t		  mu;		/* the pool's and the notes', for
						   nng's threads */
	struct place		  pool[PEER_MAX_UNAUTH];
	int			  npool;
	struct note_rate	  notes[PEER_NNOTES];
};

struct peers *
peers_new(const struct auth_secret *secret)
{
	struct peers	*ps = xcalloc(1, sizeof(*ps));

	ps->secret = secret && secret->len > 0 ? secret : NULL;
	pthread_mutex_init(&ps->mu, NULL);
	ps->nbucket = 256;
	ps->bucket = xcalloc(ps->nbucket, sizeof(*ps->bucket));
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
	free(ps->bucket);
	pthread_mutex_destroy(&ps->mu);
	free(ps);
}

static size_t
pipe_bucket(const struct peers *ps, uint32_t pipe)
{
	return (size_t)((pipe * 2654435761u) & (uint32_t)(ps->nbucket - 1));
}

struct peer *
peers_find(struct peers *ps, uint32_t pipe)
{
	struct peer	*p;

	for (p = ps->bucket[pipe_bucket(ps, pipe)]; p != NULL; p = p->hnext)
		if (p->pipe == pipe)
			return p;
	return NULL;
}

/* Twice the buckets once there are twice as many peers: O(1) amortized. */
static void
peers_rehash(struct peers *ps)
{
	struct peer	*p;
	size_t		 i, b;

	free(ps->bucket);
	ps->nbucket *= 2;
	ps->bucket = xcalloc(ps->nbucket, sizeof(*ps->bucket));
	for (i = 0; i < ps->n; i++) {
		p = ps->v[i];
		b = pipe_bucket(ps, p->pipe);
		p->hnext = ps->bucket[b];
		ps->bucket[b] = p;
	}
}

struct peer *
peers_get(struct peers *ps, uint32_t pipe, const char *addr, const char *host,
    int64_t now)
{
	struct peer	*p;
	size_t		 b;

	if ((p = peers_find(ps, pipe)) != NULL)
		return p;
	p = xcalloc(1, sizeof(*p));
	p->pipe = pipe;
	p->fd = -1;
	p->since = now;
	p->deadline = now + PEER_HELLO_MS;
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	snprintf(p->host, sizeof(p->host), "%s", host);
	ps->v = xreallocarray(ps->v, ps->n + 1, sizeof(*ps->v));
	p->vidx = ps->n;
	ps->v[ps->n++] = p;
	if (ps->n > 2 * ps->nbucket)
		peers_rehash(ps);
	else {
		b = pipe_bucket(ps, pipe);
		p->hnext = ps->bucket[b];
		ps->bucket[b] = p;
	}
	return p;
}

static void	note_locked(struct peers *, enum peer_note, const char *, const char *,
		    int64_t);

/* --- the pre-auth pool (peer.h): under ps->mu --- */

static uint64_t
host_key(const char *host)
{
	uint64_t	h = 1469598103934665603ull;

	while (*host)
		h = (h ^ (uint8_t)*host++) * 1099511628211ull;
	return h;
}

static struct place *
place_of(struct peers *ps, uint32_t pipe)
{
	int	i;

	for (i = 0; i < ps->npool; i++)
		if (ps->pool[i].pipe == pipe)
			return &ps->pool[i];
	return NULL;
}

static void
place_remove(struct peers *ps, struct place *pl)
{
	*pl = ps->pool[--ps->npool];
}

static int
host_places(const struct peers *ps, uint64_t hkey)
{
	int	i, n = 0;

	for (i = 0; i < ps->npool; i++)
		n += ps->pool[i].hkey == hkey;
	return n;
}

/* Whether a is to go before b: not heard before heard, then older. */
static bool
gives_less(const struct place *a, const struct place *b)
{
	if (a->heard != b->heard)
		return !a->heard;
	return a->since < b->since;
}

/*
 * The place a newcomer whose address holds have places takes, by the
 * pool's rules (peer.h), or NULL.  O(PEER_MAX_UNAUTH^2) compares of
 * integers at worst: a constant.
 */
static struct place *
pick_victim(struct peers *ps, int have, int64_t now)
{
	struct place	*best = NULL, *pl;
	int		 count[PEER_MAX_UNAUTH], most = 0, i;
	uint64_t	 crowded = 0;

	for (i = 0; i < ps->npool; i++) {
		count[i] = host_places(ps, ps->pool[i].hkey);
		if (count[i] > most) {
			most = count[i];
			crowded = ps->pool[i].hkey;
		}
	}
	/* 1. An address over its share gives way to a poorer one. */
	if (most > have + 1)
		for (i = 0; i < ps->npool; i++) {
			pl = &ps->pool[i];
			if (pl->hkey == crowded && pl->pinned == 0 &&
			    (best == NULL || gives_less(pl, best)))
				best = pl;
		}
	if (best != NULL)
		return best;
	/* 2. The oldest silent one; 3. the oldest quiet one.  Never from an
	 * address poorer than the newcomer's will be. */
	for (i = 0; i < ps->npool; i++) {
		pl = &ps->pool[i];
		if (pl->pinned > 0 || count[i] < have + 1)
			continue;
		if (pl->heard && now - pl->last < PEER_QUIET_MS)
			continue;
		if (best == NULL || gives_less(pl, best))
			best = pl;
	}
	return best;
}

enum peer_admit
peers_admit(struct peers *ps, uint32_t pipe, const char *addr, const char *host,
    int fd, int64_t now, struct peer_evicted *ev)
{
	struct place	*pl;
	uint64_t	 key;

	memset(ev, 0, sizeof(*ev));
	ev->fd = -1;
	if (*host == '\0')
		return PEER_ADMITTED;
	key = host_key(host);
	pthread_mutex_lock(&ps->mu);
	if (ps->npool == PEER_MAX_UNAUTH) {
		if ((pl = pick_victim(ps, host_places(ps, key), now)) == NULL) {
			note_locked(ps, PEER_NOTE_FULL, addr, NULL, now);
			pthread_mutex_unlock(&ps->mu);
			return PEER_FULL;
		}
		ev->pipe = pl->pipe;
		ev->fd = pl->fd;
		snprintf(ev->addr, sizeof(ev->addr), "%s", pl->addr);
		place_remove(ps, pl);
	}
	pl = &ps->pool[ps->npool++];
	memset(pl, 0, sizeof(*pl));
	pl->pipe = pipe;
	pl->hkey = key;
	pl->fd = fd;
	snprintf(pl->addr, sizeof(pl->addr), "%s", addr);
	pl->since = pl->last = now;
	pthread_mutex_unlock(&ps->mu);
	return PEER_ADMITTED;
}

void
peers_heard(struct peers *ps, uint32_t pipe, int64_t now)
{
	struct place	*pl;

	pthread_mutex_lock(&ps->mu);
	if ((pl = place_of(ps, pipe)) != NULL) {
		pl->heard = true;
		pl->last = now;
	}
	pthread_mutex_unlock(&ps->mu);
}

int
peers_pooled(struct peers *ps)
{
	int	n;

	pthread_mutex_lock(&ps->mu);
	n = ps->npool;
	pthread_mutex_unlock(&ps->mu);
	return n;
}

/* p leaves the pool: it opened, or it is gone. */
static void
peer_unpool(struct peers *ps, struct peer *p)
{
	struct place	*pl;

	if (!p->pooled)
		return;
	pthread_mutex_lock(&ps->mu);
	if ((pl = place_of(ps, p->pipe)) != NULL)
		place_remove(ps, pl);
	pthread_mutex_unlock(&ps->mu);
	p->pooled = false;
}

struct peer *
peers_add(struct peers *ps, uint32_t pipe, const char *addr, const char *host,
    int fd, int64_t now)
{
	struct peer	*p = peers_get(ps, pipe, addr, host, now);

	/* peers_admit gave a place to exactly the connections with a host. */
	p->pooled = *host != '\0';
	p->fd = fd;
	return p;
}

void
peers_gone(struct peers *ps, uint32_t pipe)
{
	struct peer	*p = peers_find(ps, pipe), **pp;

	if (p == NULL)
		return;
	peer_unpool(ps, p);
	for (pp = &ps->bucket[pipe_bucket(ps, pipe)]; *pp != p; pp = &(*pp)->hnext)
		;
	*pp = p->hnext;
	ps->v[p->vidx] = ps->v[--ps->n];
	ps->v[p->vidx]->vidx = p->vidx;
	peer_free(p);
}

static void
set_peer_state(struct peers *ps, struct peer *p, enum peer_state st)
{
	log_debug("pipe %u (%s): %s -> %s", p->pipe, p->addr,
	    peer_state_names[p->state], peer_state_names[st]);
	p->state = st;
	if (st == PEER_OPEN)
		peer_unpool(ps, p);
}

/* --- notes: what a flood would repeat, one line per kind per PEER_LOG_MS --- */

static const struct {
	const char	*one;	/* "%s" the address, then the detail */
	const char	*more;	/* the count */
} note_fmt[PEER_NNOTES] = {
	[PEER_NOTE_FULL] = { "closed the connection from %s: all %d places for "
	    "connections not authenticated yet are held by connections that are "
	    "authenticating", "closed %u more connections: all %d places for "
	    "connections not authenticated yet were held by connections "
	    "authenticating" },
	[PEER_NOTE_EVICTED] = { "closed the connection from %s: not authenticated, "
	    "its place (of %d) given to a newer connection", "closed %u more "
	    "connections not authenticated to give their places (of %d) to newer ones" },
	[PEER_NOTE_SILENT] = { "closed the connection from %s: no whole message "
	    "from it within %d ms", "closed %u more connections with no whole "
	    "message within %d ms" },
	[PEER_NOTE_SLOW] = { "closed the connection from %s: not authenticated "
	    "within %d s", "closed %u more connections not authenticated within %d s" },
	[PEER_NOTE_FLOOD] = { "closed the connection from %s: one request too "
	    "many in flight", "closed %u more connections with too many requests "
	    "in flight" },
	[PEER_NOTE_DEAF] = { "closed the connection from %s: it did not take a "
	    "reply within %d s", "closed %u more connections that did not take a "
	    "reply within %d s" },
	[PEER_NOTE_AUTH] = { "closed the connection from %s: authentication failed",
	    "closed %u more connections whose authentication failed" },
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
	case PEER_NOTE_FULL:
	case PEER_NOTE_EVICTED:	return PEER_MAX_UNAUTH;
	case PEER_NOTE_SILENT:	return PEER_HELLO_MS;
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

/* --- the costs of a connection (peer.h) --- */

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

void
peers_evicted(struct peers *ps, uint32_t pipe, int64_t now)
{
	struct peer	*p = peers_find(ps, pipe);

	if (p == NULL)
		return;
	p->pooled = false;	/* its place went with the eviction */
	peer_drop(ps, p, PEER_NOTE_EVICTED, now);
	p->shut = true;		/* by the pipe callback, already */
}

/* Whether a pooled p has sent a whole message (nng's thread saw it). */
static bool
peer_heard(struct peers *ps, const struct peer *p)
{
	struct place	*pl;
	bool		 heard;

	pthread_mutex_lock(&ps->mu);
	heard = (pl = place_of(ps, p->pipe)) != NULL && pl->heard;
	pthread_mutex_unlock(&ps->mu);
	return heard;
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
		/* Past its time to speak, but it did: its time to be OPEN. */
		if (p->deadline <= now && p->deadline < p->since + PEER_AUTH_MS &&
		    (p->state != PEER_NEW || !p->pooled || peer_heard(ps, p)))
			p->deadline = p->since + PEER_AUTH_MS;
		if (p->deadline > now || k == n) {
			if (*next == -1 || p->deadline < *next)
				*next = p->deadline;
			continue;
		}
		peer_drop(ps, p, p->deadline < p->since + PEER_AUTH_MS ?
		    PEER_NOTE_SILENT : PEER_NOTE_SLOW, now);
		out[k++] = p->pipe;
	}
	return k;
}

bool
peer_request(struct peers *ps, struct peer *p, int64_t now)
{
	int		 max = p->state == PEER_OPEN ? PEER_MAX_INFLIGHT :
			    PEER_MAX_INFLIGHT_NEW;
	struct place	*pl;

	if (p->inflight >= max) {
		peer_drop(ps, p, PEER_NOTE_FLOOD, now);
		return false;
	}
	if (p->pooled) {
		pthread_mutex_lock(&ps->mu);
		if ((pl = place_of(ps, p->pipe)) != NULL)
			pl->pinned++;
		pthread_mutex_unlock(&ps->mu);
		/* Displaced between its message and now: the pipe callback
		 * has shut it, and the loop will hear so (peers_evicted). */
		if (pl == NULL) {
			peers_evicted(ps, p->pipe, now);
			return false;
		}
	}
	p->inflight++;
	return true;
}

void
peer_replied(struct peers *ps, struct peer *p, int64_t now)
{
	struct place	*pl;

	if (p->inflight > 0)
		p->inflight--;
	if (!p->pooled)
		return;
	pthread_mutex_lock(&ps->mu);
	if ((pl = place_of(ps, p->pipe)) != NULL && pl->pinned > 0) {
		pl->pinned--;
		pl->last = now;
	}
	pthread_mutex_unlock(&ps->mu);
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

/*
 * A failed authentication costs the connection, nothing else: logged
 * (rate-limited: a flood of guesses makes a few lines), and the pipe
 * closes.  No address is counted or banned (peer.h).
 */
static void
peer_fail(struct peers *ps, struct peer *p, int64_t now, const char *why)
{
	peers_note(ps, PEER_NOTE_AUTH, p->addr, why, now);
	peer_close(ps, p);
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
