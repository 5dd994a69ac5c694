/*
 * A streaming framer for the PostgreSQL frontend/backend protocol v3,
 * private to fault-proxy.  Like http.h it never copies a message whole: it
 * walks the two byte streams of one connection, keeps the first bytes of
 * the few messages it reads (Query, Parse, Bind, ReadyForQuery,
 * ErrorResponse and BackendKeyData during startup), and tells the engine
 * where one exchange ends and the next begins.
 *
 * Exchanges (what the proxy rolls faults for):
 *  - startup: the StartupMessage and every authentication message up to
 *    the first ReadyForQuery.  Password messages are never read, only
 *    skipped.
 *  - simple: one Query, and its CopyData/CopyDone/CopyFail when the query
 *    is a COPY FROM STDIN, up to ReadyForQuery.
 *  - extended: Parse/Bind/Describe/Execute/Close/Flush... up to and
 *    including Sync, then up to ReadyForQuery.
 *  - function: a FunctionCall, up to ReadyForQuery.
 *  - cancel, terminate, copy (a CopyData/CopyDone/CopyFail outside COPY,
 *    which the server discards): no reply is expected; the exchange ends
 *    once its bytes are forwarded.
 *
 * Contract: pg_scan_client() consumes client bytes of the current exchange
 * only: it stops at the first byte of a message that begins the next one
 * (a message other than CopyData/CopyDone/CopyFail after the exchange's
 * request is complete), so the boundary is known from that message's first
 * byte.  An exchange is known (ident) once its key is final: a Query's
 * whole text (or its first STMTKEY_MAX bytes) has been read, a Parse's
 * query string, or the statement a Bind names has been looked up.
 * pg_exchange_next() resets the exchange fields; the message
 * tokenizers carry on.  pg_scan_server() consumes server bytes and stops
 * right after a ReadyForQuery (ready is then set), and with stop_at_error
 * right after an ErrorResponse too (err_now is then set, err_len and
 * err_sqlstate say what it was: the engine may replace it whole).  Lengths come off the
 * network and are never trusted: a length under 4 or over PG_MSG_MAX, an
 * unknown message type or a bad startup packet sets `error` with a
 * sentence (bytes escaped) and the framer consumes nothing more.
 */
#ifndef SOAK_PROXY_PGFRAME_H
#define SOAK_PROXY_PGFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault-proxy/stmtkey.h"

#define PG_MSG_MAX	(1024u * 1024 * 1024)	/* the server's own limit */
#define PG_STARTUP_MAX	10000			/* as MAX_STARTUP_PACKET_LENGTH */
#define PG_CAP		512			/* body bytes kept per message */
#define PG_SQL_LEN	96			/* statement summary, with "…" */
#define PG_SQL_WORDS	8			/* at most this many words */
#define PG_STMTS	1024			/* named statements remembered */

#define PG_CODE_PROTO3	196608u			/* 3.0 */
#define PG_CODE_CANCEL	80877102u
#define PG_CODE_SSL	80877103u
#define PG_CODE_GSSENC	80877104u

enum pg_kind {
	PGK_NONE, PGK_STARTUP, PGK_CANCEL, PGK_SIMPLE, PGK_EXTENDED,
	PGK_FUNCTION, PGK_COPY, PGK_TERMINATE, PGK_MAX
};
const char	*pg_kind_name(enum pg_kind k);

/* One direction's message tokenizer. */
struct pg_tok {
	bool		 startup;	/* the next message has no type byte */
	unsigned char	 hdr[8];	/* type + length (+ startup code) so far */
	size_t		 hlen, hwant;
	char		 type;		/* '\0': a startup-phase packet */
	uint32_t	 code;		/* startup packet: the protocol code */
	bool		 in_body;
	uint32_t	 left;		/* body bytes still to come */
	bool		 keep;		/* copying the body's head into cap */
	char		 cap[PG_CAP];
	size_t		 caplen;
};

/* The class of what the current exchange ran (stmtkey.h's sk_class). */
struct pgframe;
int		 pg_exchange_class(const struct pgframe *f);

struct pg_stmt {
	char		 name[64];
	char		 sql[PG_SQL_LEN];
	uint64_t	 key;		/* stmtkey.h */
	uint8_t		 cls;		/* enum sk_class */
};

struct pgframe {
	struct pg_tok	 fe, be;	/* frontend (client), backend (server) */
	bool		 error;
	char		 why[192];

	/* the current exchange, client side */
	enum pg_kind	 kind;
	bool		 req_done;	/* its request is complete */
	bool		 noreply;	/* nothing will answer it */
	bool		 ident;		/* kind and sql known: it can be admitted */
	bool		 has_sql;	/* a statement (match applies) */
	bool		 copy_ended;	/* the client sent CopyDone or CopyFail */
	char		 sql[PG_SQL_LEN];
	/* its key (stmtkey.h): the Query's, the first Parse's, or the one a
	 * first Bind names; has_key once it is final */
	bool		 has_key;
	uint64_t	 key;
	struct stmtkey	 sk;		/* the Query or Parse being keyed */
	int		 sk_phase;	/* Parse: 0 its name, 1 its query, 2 after */
	uint64_t	 pkey;		/* the last Parse's key, for its name */
	uint8_t		 pcls;		/* ... and its class (enum sk_class) */
	/* what the exchange runs, for soak explore's reduction: the class of
	 * its one statement (a Query's, or the one its Bind names); several
	 * statements, or none, are SK_OTHER (pg_exchange_class) */
	uint8_t		 cls;
	int		 nruns;

	/* the current exchange, server side */
	bool		 ready;		/* ReadyForQuery seen */
	char		 tx;		/* its status: I, T or E */
	bool		 copy;		/* CopyIn/CopyOut/CopyBoth seen */
	bool		 auth_error;	/* ErrorResponse before the first ReadyForQuery */
	char		 sqlstate[6];	/* that error's code */
	bool		 tls_required;	/* ... saying the server wants TLS */
	bool		 stop_at_error;	/* pg_scan_server stops after an ErrorResponse */
	bool		 err_seen;	/* an ErrorResponse in this exchange, ... */
	bool		 err_now;	/* ... the one that ended the last scan */
	uint32_t	 err_len;	/* its whole length, type byte included */
	char		 err_sqlstate[6];	/* its code ("" if it had none) */

	bool		 started;	/* the first ReadyForQuery has been seen */
	int32_t		 backend_pid;	/* from BackendKeyData, 0 until then */
	uint64_t	 notifies;	/* NotificationResponses passed through */
	struct pg_stmt	*stmts;		/* grown to PG_STMTS, then recycled */
	size_t		 nstmts, capstmts, evict;
};

/* What the first bytes of a connection are. */
enum pg_first {
	PGF_MORE,		/* not enough bytes yet */
	PGF_STARTUP,		/* StartupMessage, protocol 3 */
	PGF_CANCEL,
	PGF_SSL,		/* SSLRequest: answer 'N' */
	PGF_GSSENC,		/* GSSENCRequest: answer 'N' */
	PGF_NOT_PG
};
enum pg_first	 pg_first(const char *p, size_t n);

void	pg_init(struct pgframe *f);
/* What pg_init's framer holds besides itself; f itself is the caller's. */
void	pg_free(struct pgframe *f);
size_t	pg_scan_client(struct pgframe *f, const char *p, size_t n);
size_t	pg_scan_server(struct pgframe *f, const char *p, size_t n);
void	pg_exchange_next(struct pgframe *f);
/*
 * The first words of a statement into out (PG_SQL_LEN): whitespace and
 * comments collapsed, printable ASCII and whole UTF-8 characters (any
 * other byte, a control or a character utf8_hidden names as '?': valid
 * UTF-8 whatever the client sent, never cut inside a character), cut
 * before the first literal
 * (a quoted string, a dollar-quoted string, a number) and after
 * PG_SQL_WORDS words, "…" where something was cut.
 */
void	pg_sql_summary(const char *sql, size_t n, char *out);
/* n bytes as printable ASCII with \xNN escapes, for log lines. */
void	pg_escape(const char *p, size_t n, char *out, size_t outlen);
/* A ready-made ErrorResponse (severity FATAL) for the proxy to send. */
size_t	pg_error_response(const char *sqlstate, const char *msg, char *out,
	    size_t outlen);
/* The same with a severity (ERROR, FATAL) and a detail (NULL: none);
 * 0 when it does not fit outlen. */
size_t	pg_error_message(const char *severity, const char *sqlstate,
	    const char *msg, const char *detail, char *out, size_t outlen);

#endif
