/*
 * The model stand-in (docs/models.md), private to fault-proxy: a script of
 * replies, the requests of the OpenAI and Anthropic client libraries read,
 * the alternative a request gets chosen, and the reply written in each
 * API's own shape.  Pure: no sockets, no clock, no global state; the engine
 * (local.c) feeds it whole requests and writes what it returns.
 *
 * A script is YAML (docs/models.md "Scripts"):
 *
 *	pace: 5ms			# between a streamed reply's events
 *	patterns:
 *	  - name: asks for a refund
 *	    user: 'refund (dsp_[0-9]+)'	# POSIX ERE on the last user text
 *	    replies:
 *	      - tool_calls:
 *	          - name: issue_refund
 *	            arguments: {dispute_id: "$1"}
 *	  - name: the refund failed
 *	    tool_result: 'timed out'	# on the latest tool results
 *	    replies:			# alternatives, chosen by seed
 *	      - text: The refund did not go through.
 *	      - tool_calls: [{name: issue_refund, arguments: {dispute_id: "$1"}}]
 *
 * Contract
 *  - model_script_parse / model_script_load: 0, or -1 with err
 *    "FILE:LINE:COL: KEY: problem" (config.c's shape; every YAML mistake
 *    told as config.c tells it, aliases refused).  Unknown keys are errors.
 *  - A request's pattern is the first, in file order, whose conditions all
 *    hold (model_match); none: the request is answered with an error
 *    naming the script (never a made-up reply).
 *  - The alternative is a pure function of (seed, proxy name, round, turn,
 *    the exchange's key and occurrence) (model_pick, docs/faults.md's
 *    determinism contract), weighted by `weight`.  So are the reply's ids.
 *  - Rendering (model_render) makes an HTTP/1.1 response as pieces: the
 *    head (and a whole body), then for a streamed reply one chunk of the
 *    chunked body per server-sent event and the last chunk, so the writer
 *    can pace them.  No clock: "created" is a constant.
 *  - Everything read off the network is capped (MODEL_BODY_CAP, the JSON
 *    depth jansson allows); nothing of a request is trusted for a length.
 */
#ifndef SOAK_PROXY_MODEL_H
#define SOAK_PROXY_MODEL_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define MODEL_SCRIPT_CAP	(1024 * 1024)	/* a script file */
#define MODEL_BODY_CAP		(8 * 1024 * 1024)	/* a request's body */
#define MODEL_PATTERNS_MAX	1000
#define MODEL_ALTS_MAX		100		/* alternatives of a pattern */
#define MODEL_CALLS_MAX		16		/* tool calls of a reply */
#define MODEL_TEXT_CAP		(64 * 1024)	/* a reply's text */
#define MODEL_NAME_LEN		128		/* the request's model, echoed */
#define MODEL_WHAT_LEN		160		/* a request for people */

enum model_api { MODEL_API_OPENAI, MODEL_API_ANTHROPIC, MODEL_API_MAX };

/* One tool call of a reply: arguments a JSON object, "$1" in its strings. */
struct model_call {
	char		*name;
	json_t		*args;
};

/* One alternative reply: text, tool calls, or both. */
struct model_alt {
	char			*text;		/* NULL: none */
	struct model_call	*calls;
	size_t			 ncalls;
	uint32_t		 weight;	/* 1..1000, default 1 */
	int			 line;
};

struct model_pattern {
	char			*name;		/* name:, else "patterns[N]" */
	bool			 has_user, has_result;
	regex_t			 user;		/* on the last user text */
	regex_t			 result;	/* on the latest tool results */
	char			*tool;		/* a latest result is this tool's */
	int			 turn;		/* -1: any */
	int			 step;		/* -1: any */
	struct model_alt	*alts;
	size_t			 nalts;
	uint64_t		 weights;	/* sum of the alternatives' */
	int			 line;
};

struct model_script {
	char			*path;
	int64_t			 pace_ms;	/* between streamed events */
	struct model_pattern	*pats;
	size_t			 npats;
	size_t			 nalts;		/* over every pattern */
};

int	model_script_parse(const char *path, const char *text, size_t len,
	    struct model_script *s, char *err);
int	model_script_load(const char *path, struct model_script *s, char *err);
void	model_script_free(struct model_script *s);

/*
 * A request as the stand-in reads it.  user: the text of the last user
 * message (NULL: none); results: the tool results after the last
 * assistant message, joined by "\n" (NULL: the conversation does not end
 * with tool results), tools: the names of the tools they answer (as the
 * assistant's calls named them; "" where no call had that id); step: the
 * assistant messages before (0: the conversation's first call).
 */
struct model_req {
	enum model_api	 api;
	bool		 stream;
	bool		 usage_chunk;	/* openai: stream_options.include_usage */
	char		 model[MODEL_NAME_LEN];
	char		*user;
	char		*results;
	char		**tools;
	size_t		 ntools;
	int		 step;
	size_t		 body_len;
};

/* Which API a request path is: 0 with *api, -1 when neither. */
int	model_api_of(const char *path, enum model_api *api);
/* The request body (JSON) of api: 0, or -1 with err saying what is wrong. */
int	model_req_parse(enum model_api api, const char *body, size_t len,
	    struct model_req *r, char *err);
void	model_req_free(struct model_req *r);
/* "POST /v1/chat/completions: step 2, after a tool result (issue_refund)" */
void	model_req_what(const struct model_req *r, char *buf, size_t len);

/*
 * A whole HTTP/1.1 request (head and body, as http_feed framed it): its
 * method, its path (no query), whether it asked to close, and its body
 * (Content-Length or chunked, de-chunked into *body, heap, NUL-ended);
 * headers named in `want` (lower case, NULL-ended) copied into vals[]
 * (heap or NULL).  -1 with err on anything malformed or over the caps.
 */
struct model_http {
	char		 method[16];
	char		 path[512];
	bool		 close;
	char		*body;
	size_t		 body_len;
};
int	model_http_parse(const char *msg, size_t len, struct model_http *h,
	    char *err);
void	model_http_free(struct model_http *h);

/* Which pattern answers r (index), or -1: none. captures: $1..$9 (heap). */
#define MODEL_CAPTURES	10
int	model_match(const struct model_script *s, const struct model_req *r,
	    int turn, char *captures[MODEL_CAPTURES]);
void	model_captures_free(char *captures[MODEL_CAPTURES]);

/* What decides a reply: the exchange it answers, as the trace keys it. */
struct model_id {
	uint64_t	 seed;
	const char	*proxy;
	int		 round, turn;
	uint64_t	 key;
	uint32_t	 occ;
};
/* The draw every choice of one exchange comes from. */
uint64_t	model_draw(const struct model_id *id);
/* The alternative of pattern p an exchange gets by seed. */
size_t		model_pick(const struct model_pattern *p, uint64_t draw);
/* One of n alike (a cassette's replies to one key) by seed. */
size_t		model_pick_among(uint64_t draw, size_t n);

/* A response in pieces (model_render): written in order, paced. */
struct model_out {
	char		**piece;
	size_t		 *len;
	size_t		  n;
	int		  status;
	size_t		  events;	/* streamed: server-sent events */
};
void	model_out_free(struct model_out *o);
/* Appends a piece (copied). */
void	model_out_add(struct model_out *o, const char *p, size_t len);

/* The reply alternative a of pattern p to r, in r's API's shape. */
void	model_render(const struct model_pattern *p, size_t a,
	    const struct model_req *r, char *const captures[MODEL_CAPTURES],
	    uint64_t draw, struct model_out *o);
/*
 * An error in api's shape: status (400, 404, 429, 500, 529...), the
 * API's error type ("invalid_request_error", "overloaded_error"...) and
 * a message; retry_after_s > 0 adds Retry-After.
 */
void	model_render_error(enum model_api api, int status, const char *type,
	    const char *message, int retry_after_s, struct model_out *o);

/*
 * A status fault's answer (docs/faults.md "Faults of an HTTP API"): the
 * proxy's own response to a request it never forwarded, whole, as one
 * string (heap; its length in *len).  The status with its reason phrase;
 * on a 429, 503 or 529 with retry_ms >= 0, Retry-After (whole seconds,
 * rounded up) and retry-after-ms (the SDKs read it first); a body in
 * api's error shape (OpenAI {"error": {...}}, Anthropic {"type": "error",
 * "error": {...}}, the type the API gives that status), or for
 * MODEL_API_MAX a plain JSON error {"status", "error", "message"}.  The
 * message names the proxy.  Keep-alive: the connection goes on.
 */
char	*model_status_reply(enum model_api api, int status, int64_t retry_ms,
	    const char *proxy, size_t *len);

#endif
