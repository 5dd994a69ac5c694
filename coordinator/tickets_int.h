/*
 * Private to the ticket filer (tickets.c, tickets_http.c, tickets_sinks.c,
 * tickets_text.c) and its unit tests.  The public face is tickets.h.
 */
#ifndef SOAK_TICKETS_INT_H
#define SOAK_TICKETS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <curl/curl.h>
#include <jansson.h>

#include "coordinator/fingerprint.h"

#define TK_MAX_ROWS	20	/* violating rows shown per invariant */
#define TK_TRACE_LINES	40	/* fault trace lines shown for the smallest seed */

/* config.tickets of the report, defaults filled. */
struct tk_config {
	char	 *sink;		/* file | github | gitlab | jira | webhook */
	char	 *url;
	char	 *repo;
	char	 *project;
	char	 *token_env;
	char	 *user_env;
	char	 *issue_type;
	char	**labels;	/* NULL-terminated, never NULL */
	bool	  infra;
	bool	  insecure_http;	/* a token may go to an http:// url */
	bool	  enabled;
};

/* The run as report.json describes it; the strings point into report. */
struct tk_run {
	json_t			*report;
	char			*run_dir;
	const char		*run_id;
	const char		*config_name;
	const char		*config_hash;
	const char		*config_path;	/* absolute, NULL when unknown */
	const char		*soak_version;
	const char		*sut_revision;	/* NULL when unknown */
	const char		*host;
	struct tk_config	 cfg;
};

/*
 * The markup a ticket body is written in: markdown for github, gitlab,
 * webhook and file; Jira wiki markup (REST v2 description) for jira.
 */
enum tk_dialect {
	TK_MD,
	TK_JIRA
};

/* One ticket: a fingerprint group of the run, rendered. */
struct tk_ticket {
	char		 *fingerprint;	/* text, e.g. "cfg|invariant|a|b" */
	char		  hash[FP_HASH_LEN];	/* fp_hash_hex(fingerprint) */
	bool		  infra;	/* the run's infra ticket */
	uint64_t	 *seeds;	/* ascending */
	size_t		  nseeds;
	const json_t	 *first;	/* record of seeds[0], borrowed from the report */
	char		 *title;
	enum tk_dialect	  dialect;	/* of body and comment */
	char		 *body;		/* with the fingerprint marker */
	char		 *comment;	/* what goes on an open ticket instead */
	char		**labels;	/* config labels + "soak:<hash>" */
};

/* tickets.c */
/* The fingerprint recomputed from a result record (fingerprint.h). */
char	*tk_fingerprint(const char *config_name, const json_t *rec);
int	 tk_run_load(const char *run_dir, struct tk_run *run, char *err);
void	 tk_run_free(struct tk_run *run);
/*
 * tk_run_load without a file: takes a reference to report (the run's
 * report.json, parsed).  run_dir may be NULL: the smallest seed's
 * failures/ folder (turn outcomes, fault trace) is then not read.
 */
int	 tk_run_from_json(json_t *report, const char *run_dir,
	    struct tk_run *run, char *err);
/* Groups the run's failures into rendered tickets, ordered by smallest seed. */
int	 tk_build(const struct tk_run *run, struct tk_ticket **tv, size_t *nt,
	    char *err);
/*
 * Renders t's title, body and comment in dialect d from t->fingerprint,
 * t->seeds and t->first; result (the smallest seed's result.json, with
 * turns[]) and trace (its trace.jsonl) may be NULL.  Pure: no file is
 * read, so it can be driven from memory (tests/fuzz/fuzz_tickets.c).
 * Whatever bytes the run holds, title, body and comment come out valid
 * UTF-8 with every untrusted string inert in d (tickets_text.c).
 */
void	 tk_render(const struct tk_run *run, struct tk_ticket *t,
	    enum tk_dialect d, const json_t *result, const char *trace);
/*
 * Checks that t's title, body and comment are valid UTF-8 that JSON can
 * carry; 0, or -1 with err naming the ticket (hash and title).
 */
int	 tk_ticket_check(const struct tk_ticket *t, char *err);
void	 tk_tickets_free(struct tk_ticket *tv, size_t nt);

/* tickets_text.c — untrusted text made safe for UTF-8 JSON and markup. */
#define TK_CELL_MAX	160	/* bytes of one table cell or inline value */
#define TK_TITLE_MAX	240	/* bytes of a title */
#define TK_JIRA_SUMMARY_MAX 255	/* Jira refuses a longer summary */

/* Whether s[0..n) is well-formed UTF-8 (RFC 3629, as jansson checks it). */
bool	 tk_utf8_valid(const char *s, size_t n);
/*
 * s[0..n) with every byte that does not start a well-formed sequence, and
 * every C0 control but tab, newline and CR, replaced by U+FFFD; heap.
 */
char	*tk_utf8_clean(const char *s, size_t n);
/* Inline text, one line (newlines become spaces), cut to cap bytes on a
 * character boundary ("…" marks a cut), every markup character inert. */
void	 tk_put_text(FILE *f, enum tk_dialect d, const char *s, size_t cap);
/* Inline code: markdown `...` with a fence longer than any backtick run
 * inside ("|" escaped when in_table); in Jira, escaped text. */
void	 tk_put_code(FILE *f, enum tk_dialect d, const char *s, size_t cap,
	    bool in_table);
/* A block shown verbatim: markdown fence of tildes longer than any run of
 * tildes inside; Jira {noformat} that the text cannot close. */
void	 tk_put_block(FILE *f, enum tk_dialect d, const char *lang,
	    const char *text);
/* s with everything but [A-Za-z0-9._:-] (and "--") replaced by "_", for
 * an HTML comment marker; heap. */
char	*tk_marker_id(const char *s);
/* Plain text (a title, a Jira summary): cleaned, one line, cut to cap
 * bytes on a character boundary with "…" appended when cut; heap. */
char	*tk_plain(const char *s, size_t cap);

/* tickets_http.c — one JSON request with timeouts and retries. */
struct tk_http {
	const char	*sink;		/* for messages: "github" */
	const char	*method;	/* GET | POST */
	const char	*url;
	const char	*body;		/* JSON, or NULL */
	const char	*auth_header;	/* "Authorization: Bearer ..." or NULL; never logged */
	const char	*userpwd;	/* basic auth "user:token" or NULL; never logged */
	const char	*const *headers; /* extra headers, NULL-terminated, or NULL */
	bool		 insecure_http;	/* credentials may go to a non-https url */
};

#define TK_HTTP_ATTEMPTS	4
#define TK_HTTP_TIMEOUT_MS	30000L

/*
 * Performs the request, retrying transport errors, 429 and 5xx with
 * exponential backoff (200 ms doubling, capped at 5 s) or the server's
 * Retry-After (capped at 30 s).  Returns 0 with *status and a heap *resp
 * (NUL-terminated; free it) for a final 2xx; -1 with err naming the sink,
 * the request and the HTTP status otherwise.  A request with credentials
 * (auth_header, userpwd) to a url that is not https:// is refused before
 * anything is sent unless insecure_http (the config loader refuses such a
 * sink too; this catches a report.json written by hand or by an older
 * soak), and libcurl may then speak https only.
 */
int	 tk_http_do(const struct tk_http *req, long *status, char **resp,
	    char *err);
/* The wait before attempt `attempt` (1-based retry number). */
long	 tk_http_backoff_ms(int attempt, long retry_after_s);
/* Percent-encodes s for a URL path segment or query value; heap string. */

/* tickets_sinks.c */
struct tk_sink_ctx {
	const struct tk_run	*run;
	const struct tk_config	*cfg;
	const char		*base;	/* API base without trailing slash */
	char			*auth_header;
	char			*userpwd;
	char			*token;	/* to redact from a tracker's error text */
};

struct tk_sink {
	const char	*name;
	/* Sets *ref to the open ticket's id (heap) or NULL when there is none. */
	int		(*find)(struct tk_sink_ctx *, const struct tk_ticket *,
			    char **ref, char *err);
	int		(*create)(struct tk_sink_ctx *, const struct tk_ticket *,
			    char **ref, char *err);
	/*
	 * 0: commented; 1: nothing changed (the file sink, when the ticket
	 * already records this run); -1: failed, err says why.
	 */
	int		(*comment)(struct tk_sink_ctx *, const struct tk_ticket *,
			    const char *ref, char *err);
	/* Where a new ticket goes, for --dry-run; heap string. */
	char		*(*where)(struct tk_sink_ctx *, const struct tk_ticket *);
};

const struct tk_sink *tk_sink_lookup(const char *name);
/* Checks the config and reads the token; 0 or -1 with err (no secret in it). */
int	 tk_sink_ctx_init(struct tk_sink_ctx *ctx, const struct tk_run *run,
	    bool need_token, char *err);
void	 tk_sink_ctx_clear(struct tk_sink_ctx *ctx);

#endif
