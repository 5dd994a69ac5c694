/*
 * Private to the proxy engine: engine.c (the set, its listeners and its
 * loop), conn.c (a connection's exchanges), dup.c (duplicate delivery),
 * local.c (an upstream answered inside: the model stand-in) and trace.c
 * (the fault trace).  The public face is proxy.h; gate.h is the
 * scheduler's, io.h the ground floor's, model.h the stand-in's pure half.
 * Calls go one way: engine.c -> conn.c -> dup.c, gate.c, trace.c, local.c
 * -> model.c, io.c (and engine.c -> gate.c, gate_side.c, local.c; dup.c ->
 * local.c; gate.c -> gate_side.c).
 */
#ifndef SOAK_PROXY_ENGINE_INT_H
#define SOAK_PROXY_ENGINE_INT_H

#include <sys/socket.h>

#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/plan.h"
#include "fault-proxy/gate.h"
#include "fault-proxy/http.h"
#include "fault-proxy/io.h"
#include "fault-proxy/model.h"
#include "fault-proxy/pgframe.h"
#include "fault-proxy/proxy.h"
#include "fault-proxy/quiet.h"
#include "fault-proxy/sse.h"

struct local;
struct bridge;
struct cassette;

/*
 * How a listener reaches a real model API through a bridge (bridge.c):
 * the base URL ("https://HOST:PORT", or http:// for an upstream without
 * TLS), the CA file (NULL: the system's), the API key to put in each
 * request (NULL: the turn's header goes as it is; a secret: never logged,
 * wiped when freed), and whether its exchanges are recorded.
 */
struct bridge_conf {
	char	*base;
	char	*ca;
	char	*key;
	bool	 record;
};

/* What a bridged request came to, once its thread is joined. */
struct bridge_out {
	bool	 ok;		/* the whole reply came, and went out */
	bool	 head_sent;	/* the client has a head: an error cuts it */
	bool	 client_gone;
	long	 status;
	char	 ctype[128];
	char	*body;		/* the body whole, for the cassette (heap);
				   NULL when not ok or over the cap */
	size_t	 len;
	char	 err[256];	/* libcurl's words when it failed */
};

#define DIR_UP		CFG_UP
#define DIR_DOWN	CFG_DOWN
#define REQLINE_LEN	512		/* an HTTP request line, for match */

struct listener {
	struct ep		 ep;
	struct proxy_set	*ps;
	struct gate		*gate;		/* NULL: not scheduled */
	const struct cfg_schedule *schedule;	/* proxy_set_open only */
	char			*name;
	size_t			 proxy;
	int			 turn;		/* the actor's index (proxy.h) */
	/* a service's listener (proxy.h proxy_listen.service): its name, and
	 * bypass when its proxy is scheduled (the gate does not hold it) */
	char			*service;
	bool			 bypass;
	/* services through the seam (docs/faults.md "Services under a
	 * schedule"): svc, the set's index of the service this listener is
	 * (-1: a turn's); front, the index of the service this proxy's
	 * upstream is (-1: none), whose requests its gate lets go one at a
	 * time, each until the service is quiet */
	int			 svc;
	int			 front;
	/* a front with no schedule of its own: its requests wait in arrival
	 * order and go one at a time (engine.c, turnstile), no step taken */
	bool			 turnstile;
	int64_t			 arrival_ms;	/* its schedule's (a front's) */
	enum cfg_protocol	 protocol;
	struct cfg_faults	 faults;	/* faults.match: NULL, see re */
	regex_t			 re;		/* the faults' match */
	bool			 has_re;
	bool			 tls_warned;	/* said once: the database wants TLS */
	struct sockaddr_storage	 up_addr;
	socklen_t		 up_len;
	char			*upstream;
	char			 addr[64];
	uint32_t		 next_conn;
	int64_t			 backoff_until;	/* accept paused (EMFILE) */
	/*
	 * What its exchanges hit (docs/plan.md): per key, the exchanges of
	 * this turn seen so far in round occ_round (their next occurrence),
	 * and the round's connections so far.
	 */
	uint64_t		*occ_keys;
	uint32_t		*occ_next;
	size_t			 nocc, capocc;
	int			 occ_round;
	uint32_t		 rconns;
	/* under a plan: its decisions on this proxy (NULL: none planned) */
	const struct plan_proxy	*plan;
	bool			 planned;	/* the set follows a plan */
	/*
	 * The model stand-in's script (model.h; NULL: a real upstream): the
	 * proxy's listeners share one, freed by the one that loaded it.
	 */
	struct model_script	*model;
	bool			 model_owner;
	bool			 model_warned;	/* said once: no pattern matched */
	/* replay: the cassette it answers from (shared like model) */
	struct cassette		*cassette;
	bool			 cassette_owner;
	/* a real model API behind it (NULL: none): record, or TLS */
	struct bridge_conf	*bridge;
	char			*record;	/* the cassette its parts go to */
	char			**tape;		/* recorded exchanges' lines */
	size_t			 ntape;
};

enum conn_state {
	CS_IDLE,		/* between exchanges */
	CS_PENDING,		/* exchange begun, its statement not yet known,
				   or known and held by the gate */
	CS_DELAY,		/* exchange rolled, latency running */
	CS_CONNECTING,		/* dialling the upstream */
	CS_REQUEST,		/* forwarding the request */
	CS_REPLY,		/* relaying the reply */
	CS_HOLD,		/* lost_reply: reply dropped, client waits for its reset */
	CS_BLACKHOLE,		/* everything swallowed */
	CS_STATUS,		/* status: the request read and dropped, the
				   proxy's own answer written */
	/*
	 * stream_stall: the reply's first events relayed, the rest held
	 * until the state timer; then relaying resumes.  The proxy's own
	 * wait, which ends by itself (a schedule's actors, gate.h, count a
	 * turn waiting on it as they count CS_HOLD and CS_BLACKHOLE).
	 */
	CS_STALL,
	CS_CLOSED,
	CS_MAX
};

/*
 * Why a connection closed (haproxy's termination codes, in words): every
 * px_conn_close names one, the -v log says it, and the trace's record of
 * an exchange the close cut short carries it ("closed").  A fault's own
 * close is named by its fault (common/fault.h: "reset", "lost_reply",
 * "blackhole", "close_after"), and never cuts an exchange short.
 */
enum px_close {
	PXC_CLIENT_DONE,	/* the client hung up between exchanges */
	PXC_UPSTREAM_DONE,	/* the upstream hung up, everything relayed */
	PXC_CLIENT_GONE,	/* a write to the client failed */
	PXC_UPSTREAM_GONE,	/* a write or read upstream failed */
	PXC_UPSTREAM_RESET,	/* the upstream reset the connection */
	PXC_DIAL_FAILED,	/* the upstream could not be dialled */
	PXC_DIAL_TIMEOUT,	/* ... within PROXY_CONNECT_MS */
	PXC_FAULT_RESET,	/* fault reset: the client reset, nothing forwarded */
	PXC_FAULT_LOST_REPLY,	/* fault lost_reply: its hold is over */
	PXC_FAULT_BLACKHOLE,	/* fault blackhole: the client hung up */
	PXC_CLOSE_AFTER,	/* fault close_after: its byte count reached */
	PXC_STREAM_CUT,		/* fault stream_cut: its events relayed */
	PXC_REFUSED,		/* not the protocol it claimed: refused */
	PXC_NO_MEMORY,
	PXC_SET_CLOSED,		/* proxy_set_close: the seed is over */
	PXC_MAX
};
const char	*px_close_name(enum px_close why);

struct conn {
	struct ep		 cep;		/* client socket */
	struct ep		 uep;		/* upstream socket, fd -1 until dialled */
	struct listener		*l;
	struct conn		*next, *prev;
	uint32_t		 no;		/* conn_number's; until then the next */
	bool			 numbered;
	int			 round;		/* of the turn process that opened it */
	uint32_t		 rconn;		/* its number among the round's */
	enum conn_state		 state;
	bool			 http;		/* framing of the current exchange */
	bool			 pg;		/* PostgreSQL v3 framing: pgf */
	bool			 mode_known;
	bool			 tls_asked;	/* the client sent SSLRequest/GSSENCRequest */
	struct pgframe		*pgf;
	int32_t			 pid_told;	/* backend pid told to the gate */
	uint64_t		 notifies0;	/* pgf->notifies as the exchange began */
	char			*hello;		/* pg: exchange 0's bytes, for duplicate */
	size_t			 hello_len;
	struct http_frame	 req, resp;
	struct buf		 up, down;
	size_t			 up_scan;	/* head of `up` forwardable now */
	bool			 client_eof, up_eof, up_shut;
	bool			 wblocked[2];
	int64_t			 deadline;	/* state timer, ms; 0 = none */
	int64_t			 next_write[2];	/* throttle, ms */
	uint64_t		 sent[2];	/* for close_after */

	bool			 in_exchange;
	bool			 req_done;	/* request of this exchange complete */
	bool			 got_reply;	/* first reply byte seen */
	uint32_t		 exch_no;	/* next exchange number */
	struct proxy_roll	 roll;
	struct proxy_trace_rec	 rec;
	/*
	 * The HTTP API faults (docs/faults.md): a status fault's error shape
	 * (its request's API, or MODEL_API_MAX: plain JSON); a stream fault's
	 * count of the reply's events (sse.h).  sse_on: a stream fault waits
	 * for its event, and only sse_free bytes at the head of `down` may
	 * go; sse_hit: the event has been read, and what follows it waits (a
	 * stall: CS_STALL, once the events before have gone) or was dropped
	 * (a cut: the connection closes once they have gone).  reply_read:
	 * the reply was read whole during a stall, which ends the exchange.
	 */
	enum model_api		 status_api;
	struct sse		 sse;
	bool			 sse_on, sse_hit, reply_read;
	size_t			 sse_free;
	char			*dupreq;	/* request copy for a duplicate */
	size_t			 duplen;
	bool			 dup_overflow;

	/* the client's port: how /proc's view of a turn's sockets finds it
	 * (quiet.h) */
	uint16_t		 peer_port;
	uint16_t		 up_lport;	/* its upstream socket's local port */
	/* a service's connection: the turn its last held exchange served
	 * (-1: none yet); a front's: its request counted in svc.active, not
	 * settled yet */
	int			 served;
	bool			 svc_counted;
	int64_t			 svc_since;	/* a front's: its request let go */
	/* scheduled proxies: the exchange as the gate sees it */
	struct gate_ent		 gent;
	bool			 gated;		/* gent is (or was) in the gate */
	bool			 overlap;	/* another connection of its turn was
						   open with it (its exchanges' rec) */
	bool			 hold_down;	/* a victim's reply held for rewriting */
	bool			 has_line;
	char			 line[REQLINE_LEN];	/* http: for match */
	struct local		*local;		/* its upstream, answered inside */
};

/*
 * An upstream answered inside the proxy (local.c): the far end of a
 * socketpair whose near end is a connection's upstream socket (or a
 * duplicate's), so conn.c and dup.c frame, fault and count its bytes as
 * any upstream's.  It reads whole requests and writes the model
 * stand-in's replies, a stream's events paced by the script's pace.
 */
struct local {
	struct ep		 ep;		/* EP_LOCAL: our end */
	struct listener		*l;
	struct conn		*c;		/* whose exchanges; NULL: gone, or
						   a duplicate's delivery */
	struct local		*next, *prev;
	/* a duplicate's: the exchange it delivers again */
	int			 round;
	uint64_t		 key;
	uint32_t		 occ;
	bool			 keyed;
	struct http_frame	 req;		/* the request being read */
	char			*in;		/* its bytes, up to its cap */
	size_t			 in_len, in_cap, framed;
	struct model_out	 out;		/* the reply being written */
	size_t			 piece, off;
	int64_t			 next_at;	/* its next event's time (pace) */
	bool			 wblocked;
	bool			 closing;	/* Connection: close, or refused */
	/* a request carried to the real upstream (bridge.c), in flight */
	struct bridge		*bridge;
	struct ep		 bep;		/* EP_BRIDGE: its end's fd */
	uint64_t		 bkey;		/* its cassette key */
	char			*bmethod, *bpath, *bwhat, *breq;
	size_t			 breq_len;
	bool			 bstream;	/* it asked for a stream */
};

/* The second delivery of a duplicated request, on its own connection. */
struct dup {
	struct ep		 ep;
	struct proxy_set	*ps;
	struct dup		*next, *prev;
	bool			 connected;
	bool			 http;
	struct http_frame	 resp;
	struct pgframe		*pgf;		/* pg: counts ReadyForQuery */
	int			 ready_left;
	char			*req;
	size_t			 len, off;
	int64_t			 deadline;
};

struct proxy_set {
	pthread_t		 thr;
	bool			 running;
	int			 epfd;
	struct ep		 wake;		/* shutdown */
	struct ep		 turnev;	/* proxy_set_turn: liveness changed */
	struct listener		*ls;
	size_t			 nls;
	size_t			 nproxies;	/* proxy_set_open_cfg layout */
	int			 turns;		/* the most turns of any proxy */
	int			 actors;	/* turns + services, per proxy */
	struct conn		*conns;
	struct conn		*dead;		/* freed after each loop pass */
	struct dup		*dups;
	struct local		*locals;
	uint64_t		 seed;
	char			*trace_path;
	FILE			*trace;
	char			 scratch[PROXY_BUF_CAP];

	atomic_size_t		 live;		/* conns + duplicates not yet freed */
	pthread_cond_t		 idle;		/* signalled when live drops to 0 */
	pthread_mutex_t		 mu;		/* guards the records */
	struct proxy_trace_rec	*recs;
	size_t			 nrecs, caprecs, dropped;

	struct gate		**gates;	/* one per scheduled proxy */
	size_t			 ngates;
	uint32_t		*held;		/* per turn, gate_conf.held */
	/*
	 * The worker's word on its turn processes (proxy_set_round,
	 * proxy_set_turn_exited): per turn 0 not running in this round, 1
	 * running.  Any thread writes them and bumps turn_gen; the loop
	 * applies them before its gates decide (loop_turns).
	 */
	_Atomic uint8_t		*turn_live;
	int			 nturn_live;
	atomic_int		 round_no;	/* proxy_set_round's round */
	int			 round_seen;	/* the loop's: applied to the gates */
	const struct plan	*plan;		/* the caller's, or NULL */
	struct proxy_waits	 waits;		/* under mu: proxy_set_waits */
	bool			 diverged_told;	/* the loop's: diverged is set */
	char			 diverged[2048];	/* a plan's divergence; mu */
	char			 missed[1024];	/* a cassette's miss, of the
						   lowest turn that had one; mu */
	int			 missed_turn;
	atomic_uint		 turn_gen;	/* bumped at every change */
	unsigned		 turn_seen;	/* the loop's: gen applied */
	/* turn_seen once the gates have acted on it and a divergence it made
	 * is told (proxy_set_diverged): proxy_set_settle waits for it */
	atomic_uint		 turn_done;
	/*
	 * Actors (gate.h): each turn's process group (proxy_set_turn_started;
	 * 0: none known), how /proc last saw it, and a count of what could
	 * have woken it since (a byte written to it, a connection of its
	 * closed): a quiet look stays true until that moves.
	 */
	_Atomic pid_t		*turn_pid;
	atomic_bool		 actors_on;	/* proxy_set_actors */
	struct quiet		*quiet;
	struct actor_view {
		pid_t		 pid;
		uint64_t	 gen;
		bool		 valid;
		struct quiet_res res;
	}			*views;
	uint64_t		*poke;		/* per turn: the loop's */
	uint16_t		*lports;	/* the listeners' ports, sorted */
	size_t			 nlports;
	bool			 denied_told;
	/*
	 * Services through the seam under a schedule (docs/faults.md
	 * "Services under a schedule"), per service: its process group
	 * (proxy_set_service_started; 0: not told), the turn its last
	 * answered statement served, per turn the requests its front let go
	 * that are not settled yet (neither answered nor followed by the
	 * service quiet), and how /proc saw it in loop pass `pass` (the
	 * set's pass moves at each pass and each admission).
	 */
	struct svc_state {
		_Atomic pid_t	 pgid;
		int		 last;
		uint32_t	*active;
		uint64_t	 pass;
		struct quiet_res res;
	}			*svcs;
	size_t			 nsvcs;
	/* a request in a service's hands, the service not quiet at the last
	 * look: the next look (svc_serve), backing off ACTOR_LOOK_MS to
	 * ACTOR_LOOK_MAX_MS (0: none due) */
	int64_t			 svc_next;
	int			 svc_look_ms;
	uint64_t		 tseq;		/* the turnstiles' arrival order */
	uint64_t		 pass;
};

/* Whether l's upstream is answered inside (local.c): no socket dialled. */
static inline bool
px_answered_inside(const struct listener *l)
{
	return l->model != NULL || l->cassette != NULL || l->bridge != NULL;
}

/* Something reached turn t's processes that may wake them (engine thread). */
static inline void
px_poke(struct proxy_set *ps, int turn)
{
	if (ps->poke != NULL && turn >= 0 && turn < ps->nturn_live)
		ps->poke[turn]++;
}

/*
 * What holds `live` (proxy_set_settle): a turn's connection from accept to
 * free, a service's only while an exchange of it is open, since a
 * service's pool keeps its connections across rounds.  Engine thread.
 */
static inline bool
px_conn_holds_live(const struct listener *l)
{
	return l->service == NULL;
}

/* A front's request let go to its service has settled (answered, or the
 * service was quiet after it): no longer counted (engine thread). */
static inline void
px_front_settled(struct conn *c)
{
	if (!c->svc_counted)
		return;
	c->l->ps->svcs[c->l->front].active[c->gent.turn]--;
	c->svc_counted = false;
}

/* One connection or duplicate gone (engine thread). */
static inline void
px_live_release(struct proxy_set *ps)
{
	if (atomic_fetch_sub(&ps->live, 1) == 1) {
		pthread_mutex_lock(&ps->mu);
		pthread_cond_broadcast(&ps->idle);
		pthread_mutex_unlock(&ps->mu);
	}
}

/* conn.c */
struct conn	*px_conn_new(struct listener *l, int fd, uint16_t peer_port);
void	px_conn_event(struct conn *c, struct ep *e, uint32_t ev);
void	px_conn_timer(struct conn *c);
/* The gate admitted c's held exchange: start it. */
void	px_conn_admit(struct conn *c);
void	px_conn_close(struct conn *c, enum px_close why);
void	px_conn_free(struct conn *c);

/* dup.c */
void	px_dup_start(struct conn *c);
void	px_dup_event(struct dup *d, uint32_t ev);
void	px_dup_free(struct dup *d);

/* local.c */
/*
 * A socketpair for a connection to the stand-in (c, whose current
 * exchange each request is) or for a duplicate's delivery (dup_of: the
 * exchange it repeats): the near end's fd, to be the caller's upstream
 * socket, or -1 (said in the log).
 */
int	px_local_pair(struct listener *l, struct conn *c,
	    const struct proxy_trace_rec *dup_of);
void	px_local_event(struct local *lo, uint32_t ev);
void	px_local_timer(struct local *lo);
void	px_local_free(struct local *lo);
/* c goes: its local answers no more of its exchanges. */
void	px_local_detach(struct conn *c);
/* lo's bridge is over (EP_BRIDGE readable): its reply recorded, or said. */
void	px_local_bridged(struct local *lo);

/* bridge.c: one request to the real upstream, on its own thread */
struct bridge	*px_bridge_start(const struct bridge_conf *bc, const char *head,
		    size_t hlen, const char *method, const char *target,
		    const char *body, size_t blen, int out, char *err);
/* Readable once the request is over. */
int		 px_bridge_fd(const struct bridge *b);
/* Joins the thread (it is over) and says what came of it; o->body heap. */
void		 px_bridge_finish(struct bridge *b, struct bridge_out *o);
/* Stops it soon (a seed that ends), joins it and frees it. */
void		 px_bridge_free(struct bridge *b);
void		 px_bridge_abort(struct bridge *b);

/* trace.c */
void	px_trace_add(struct proxy_set *ps, const struct proxy_trace_rec *r);
/* Writes every record, sorted, and closes the trace file. */
void	px_trace_write(struct proxy_set *ps);

#endif
