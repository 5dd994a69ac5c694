/*
 * Cassettes (docs/models.md "Record once, replay by seed"), private to
 * fault-proxy: a model API's exchanges kept as request key -> replies.
 *
 * A recording proxy (record: FILE) writes each exchange whole -- a
 * streamed reply as the text of its events -- as one line of a part file,
 * FILE.part-PID (one a worker process, appended as each seed ends);
 * cassette_merge folds FILE and its parts into FILE after the run, every
 * distinct reply to one key kept, in the order first seen.  A replaying
 * proxy (replay: FILE) answers a request by its key, the reply among a
 * key's several chosen by seed (model.h's draw) or by a plan's reply.
 *
 * The key of a request is a pure function of what it asks: 64-bit FNV-1a
 * over its method, its path (no query) and its body, a JSON body in
 * canonical form (keys sorted, no blanks), so two SDKs' spacing or key
 * order make one key; headers never count (the API key is one).  The ids
 * of tool calls in its messages (OpenAI's tool_calls[].id and
 * tool_call_id, Anthropic's tool_use id and tool_use_id) count as their
 * places, tc1, tc2, ...: a model makes them up, so the same conversation
 * carries other ids in every recording, and after every other reply a
 * replay picks.
 *
 * Files: JSON, {"soak_cassette": 1, "entries": [{"key": "16 hex digits",
 * "method", "path", "what" (for people), "request" (the body, as JSON
 * when it is), "replies": [{"status", "content_type", "body"}]}]}, the
 * entries sorted by key.  A part's line: {"soak_cassette_part": 1, "key",
 * "method", "path", "what", "request", "reply": {...}}.  Nothing else of
 * a request or a reply is kept: no header, so never a key.
 */
#ifndef SOAK_PROXY_CASSETTE_H
#define SOAK_PROXY_CASSETTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fault-proxy/model.h"

#define CASSETTE_VERSION	1
#define CASSETTE_CAP		(256u * 1024 * 1024)	/* a file, read whole */
#define CASSETTE_REPLY_CAP	(16u * 1024 * 1024)	/* a reply's body kept */

struct cassette_reply {
	int		 status;
	char		*ctype;
	char		*body;
	size_t		 len;
};

struct cassette_entry {
	uint64_t		 key;
	char			*method, *path, *what;
	json_t			*request;
	struct cassette_reply	*r;
	size_t			 n;
};

struct cassette {
	char			*path;
	struct cassette_entry	*e;		/* sorted by key */
	size_t			 n;
	size_t			 replies;
};

uint64_t	cassette_key(const char *method, const char *path,
		    const char *body, size_t len);
/* FILE whole: 0, or -1 with err naming the file and what is wrong. */
int		cassette_load(const char *path, struct cassette *c, char *err);
void		cassette_free(struct cassette *c);
const struct cassette_entry *cassette_find(const struct cassette *c,
		    uint64_t key);
/* A reply as pieces: a stream one event a piece, as model_render's. */
void		cassette_render(const struct cassette_reply *r,
		    struct model_out *o);
/*
 * One exchange as a part's line ('\n'-ended, heap), or NULL when a body
 * is not UTF-8 text (it is not kept, and the caller says so).
 */
char		*cassette_line(uint64_t key, const char *method,
		    const char *path, const char *what, const char *req,
		    size_t reqlen, int status, const char *ctype,
		    const char *body, size_t len);
/*
 * FILE and every FILE.part-* beside it into FILE (written whole, then
 * the parts removed): how many keys and replies it holds.  No parts: FILE
 * as it is (0, the counts).  -1 with err: nothing removed.
 */
int		cassette_merge(const char *path, size_t *keys, size_t *replies,
		    char *err);

#endif
