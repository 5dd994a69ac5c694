/*
 * The model stand-in's parsers (fault-proxy/model.h) on arbitrary bytes.
 * The first byte says what the rest is:
 *  - 'S': a script (model_script_parse).  A refused one says why,
 *    "f.yaml:..."; an accepted one has 1 to MODEL_PATTERNS_MAX patterns,
 *    each with alternatives whose weights add up, and every alternative
 *    renders, to both APIs, whole and streamed, as replies that read back
 *    (see check_reply).
 *  - anything else: an HTTP request as the proxy hands it to the stand-in
 *    (model_http_parse), then its body as the API its path names
 *    (model_req_parse), matched against a fixed script and answered: the
 *    reply reads back, and so does the error a refused request gets.
 * A reply reads back when its head ends in a blank line, a whole body is
 * one JSON object of exactly its Content-Length, and a streamed body is
 * well-formed chunks of server-sent events whose data is JSON (or
 * [DONE]), as many as the renderer counted.
 */
#include <string.h>

#include <jansson.h>

#include "common/util.h"
#include "fault-proxy/model.h"
#include "tests/fuzz/fuzz.h"

static const char fixed_script[] =
    "patterns:\n"
    "  - user: 'refund (dsp_[0-9]+)'\n"
    "    tool_result: 'timed out'\n"
    "    replies:\n"
    "      - text: \"again $1\"\n"
    "      - tool_calls: [{name: issue_refund, arguments: {id: \"$1\"}}]\n"
    "  - user: 'refund (dsp_[0-9]+)'\n"
    "    replies:\n"
    "      - tool_calls: [{name: issue_refund, arguments: {id: \"$1\", n: 1}}]\n"
    "  - replies:\n"
    "      - text: done\n";

static struct model_script	fixed;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	err[ERR_LEN];

	(void)argc;
	(void)argv;
	if (model_script_parse("fixed.yaml", fixed_script,
	    strlen(fixed_script), &fixed, err) == -1) {
		fprintf(stderr, "fuzz_model: %s\n", err);
		exit(1);
	}
	return 0;
}

static void
check_json(const char *p, size_t n)
{
	json_error_t	 je;
	json_t		*j = json_loadb(p, n, 0, &je);

	FUZZ_CHECK(j != NULL && json_is_object(j), "not a JSON object: %s: %.*s",
	    je.text, (int)n, p);
	json_decref(j);
}

/* One server-sent event: "event: X\n"? "data: Y\n\n". */
static void
check_event(const char *p, size_t n)
{
	const char	*d;

	FUZZ_CHECK(n >= 8 && memcmp(p + n - 2, "\n\n", 2) == 0, "an event "
	    "without its blank line");
	if (strncmp(p, "event: ", 7) == 0) {
		d = memchr(p, '\n', n);
		FUZZ_CHECK(d != NULL, "an event line without its end");
		n -= (size_t)(d + 1 - p);
		p = d + 1;
	}
	FUZZ_CHECK(strncmp(p, "data: ", 6) == 0, "an event without data");
	if (n - 8 == 6 && memcmp(p + 6, "[DONE]", 6) == 0)
		return;
	check_json(p + 6, n - 8);
}

static void
check_reply(const struct model_out *o)
{
	const char	*head, *end, *cl;
	size_t		 i, events = 0, hlen;
	unsigned long	 sz;
	char		*e;

	FUZZ_CHECK(o->n >= 1, "no pieces");
	head = o->piece[0];
	end = strstr(head, "\r\n\r\n");
	FUZZ_CHECK(end != NULL, "a head without its end");
	hlen = (size_t)(end + 4 - head);
	FUZZ_CHECK(strncmp(head, "HTTP/1.1 ", 9) == 0, "not a status line");
	if ((cl = strstr(head, "Content-Length: ")) != NULL && cl < end) {
		sz = strtoul(cl + 16, &e, 10);
		FUZZ_CHECK(sz == o->len[0] - hlen && o->n == 1, "a body of %zu "
		    "bytes under Content-Length %lu", o->len[0] - hlen, sz);
		check_json(head + hlen, o->len[0] - hlen);
		return;
	}
	FUZZ_CHECK(strstr(head, "Transfer-Encoding: chunked") != NULL,
	    "neither a length nor chunked");
	FUZZ_CHECK(o->len[0] == hlen, "a streamed head with bytes after it");
	for (i = 1; i < o->n; i++) {
		sz = strtoul(o->piece[i], &e, 16);
		FUZZ_CHECK(e != o->piece[i] && strncmp(e, "\r\n", 2) == 0,
		    "a chunk without its size line");
		e += 2;
		FUZZ_CHECK((size_t)(e - o->piece[i]) + sz + 2 == o->len[i],
		    "a chunk whose size is not its length");
		if (sz == 0) {
			FUZZ_CHECK(i == o->n - 1, "the last chunk is not last");
			break;
		}
		check_event(e, sz);
		events++;
	}
	FUZZ_CHECK(events == o->events, "%zu events, counted %zu", events,
	    o->events);
}

static const char *const bodies[] = {
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
	"{\"stream\":true,\"stream_options\":{\"include_usage\":true},"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
};

static void
script(const char *text, size_t len)
{
	struct model_script	 s;
	struct model_req	 r;
	struct model_out	 o;
	char			 err[ERR_LEN], *cap[MODEL_CAPTURES] = { 0 };
	size_t			 i, a, b, k;
	uint64_t		 w;
	int			 api;

	if (model_script_parse("f.yaml", text, len, &s, err) == -1) {
		FUZZ_CHECK(strncmp(err, "f.yaml", 6) == 0, "%s", err);
		FUZZ_CHECK(s.npats == 0 && s.pats == NULL, "not left empty");
		return;
	}
	FUZZ_CHECK(s.npats >= 1 && s.npats <= MODEL_PATTERNS_MAX, "%zu", s.npats);
	for (i = 0; i < s.npats; i++) {
		FUZZ_CHECK(s.pats[i].nalts >= 1, "a pattern without replies");
		for (w = 0, a = 0; a < s.pats[i].nalts; a++)
			w += s.pats[i].alts[a].weight;
		FUZZ_CHECK(w == s.pats[i].weights, "weights");
		for (a = 0; a < s.pats[i].nalts && a < 4; a++)
			for (api = 0; api < MODEL_API_MAX; api++)
				for (b = 0; b < 2; b++) {
					FUZZ_CHECK(model_req_parse(api, bodies[b],
					    strlen(bodies[b]), &r, err) == 0, "%s", err);
					for (k = 1; k < MODEL_CAPTURES; k++)
						cap[k] = k % 2 ? "\"x\\" : "";
					model_render(&s.pats[i], a, &r, cap, a, &o);
					check_reply(&o);
					model_out_free(&o);
					model_req_free(&r);
				}
	}
	model_script_free(&s);
}

static void
request(const char *msg, size_t len)
{
	struct model_http	 h;
	struct model_req	 r;
	struct model_out	 o;
	enum model_api		 api;
	char			 err[ERR_LEN], what[MODEL_WHAT_LEN];
	char			*cap[MODEL_CAPTURES];
	int			 p;

	if (model_http_parse(msg, len, &h, err) == -1) {
		FUZZ_CHECK(err[0] != '\0' && h.body == NULL, "refused, silently");
		return;
	}
	FUZZ_CHECK(h.body != NULL && h.body_len <= len &&
	    h.body_len <= MODEL_BODY_CAP, "a body of %zu bytes", h.body_len);
	if (model_api_of(h.path, &api) == -1)
		api = MODEL_API_OPENAI;
	if (model_req_parse(api, h.body, h.body_len, &r, err) == -1) {
		model_render_error(api, 400, "invalid_request_error", err, 0, &o);
		check_reply(&o);
		model_out_free(&o);
		model_http_free(&h);
		return;
	}
	model_req_what(&r, what, sizeof(what));
	FUZZ_CHECK(strlen(what) < sizeof(what), "what");
	p = model_match(&fixed, &r, 0, cap);
	FUZZ_CHECK(p >= 0, "the last pattern matches everything");
	model_render(&fixed.pats[p], model_pick(&fixed.pats[p], (uint64_t)len),
	    &r, cap, (uint64_t)len, &o);
	check_reply(&o);
	model_out_free(&o);
	model_captures_free(cap);
	model_req_free(&r);
	model_http_free(&h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*text;

	if (size == 0)
		return 0;
	/* NUL-ended copies: the parsers read C strings out of them */
	text = xcalloc(1, size);
	memcpy(text, data + 1, size - 1);
	if (data[0] == 'S')
		script(text, size - 1);
	else
		request(text, size - 1);
	free(text);
	return 0;
}
