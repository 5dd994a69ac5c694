/*
 * Private to the ticket filer (tickets.c, tickets_http.c, tickets_sinks.c,
 * tickets_cmd.c) and its unit tests.  The public face is tickets.h.
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

/* One ticket: a fingerprint group of the run, rendered. */
struct tk_ticket {
	char		 *fingerprint;	/* text, e.g. "cfg|invariant|a|b" */
	char		  hash[FP_HASH_LEN];	/* fp_hash_hex(fingerprint) */
	bool		  infra;	/* the run's infra ticket */
	uint64_t	 *seeds;	/* ascending */
	size_t		  nseeds;
	const json_t	 *first;	/* record of seeds[0], borrowed from the report */
	char		 *title;
	char		 *body;		/* markdown, with the fingerprint marker */
	char		 *comment;	/* what goes on an open ticket instead */
	char		**labels;	/* config labels + "soak:<hash>" */
};

/* tickets.c */
/* The fingerprint recomputed from a result record (fingerprint.h). */
char	*tk_fingerprint(const char *config_name, const json_t *rec);
int	 tk_run_load(const char *run_dir, struct tk_run *run, char *err);
void	 tk_run_free(struct tk_run *run);
/* Groups the run's failures into rendered tickets, ordered by smallest seed. */
int	 tk_build(const struct tk_run *run, struct tk_ticket **tv, size_t *nt,
	    char *err);
void	 tk_tickets_free(struct tk_ticket *tv, size_t nt);

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
