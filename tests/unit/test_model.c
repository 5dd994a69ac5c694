/*
 * The model stand-in (fault-proxy/model.c): scripts and their mistakes at
 * FILE:LINE:COL; the OpenAI and Anthropic requests the SDKs send; the
 * pattern and the alternative a request gets, a pure function of the
 * seed, the turn and the exchange; and the replies, checked field by field
 * against what the SDKs read: openai-node's ChatCompletion and its stream
 * accumulator (ChatCompletionStream: deltas by choice index, tool calls by
 * their index, arguments concatenated), @anthropic-ai/sdk's Message and
 * MessageStream (the event name equal to the data's type, content blocks
 * by index, input_json_delta's partial_json concatenated and parsed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/util.h"
#include "fault-proxy/cassette.h"
#include "fault-proxy/model.h"
#include "fault-proxy/sse.h"

static const char script_text[] =
    "# the refund agent's model\n"
    "pace: 2ms\n"
    "patterns:\n"
    "  - name: asks for a refund\n"
    "    user: 'refund (dsp_[0-9]+) of ([0-9]+)'\n"
    "    step: 0\n"
    "    replies:\n"
    "      - tool_calls:\n"
    "          - name: issue_refund\n"
    "            arguments: {dispute_id: \"$1\", amount_eur: 40, note: 'of $2 $$'}\n"
    "  - name: the refund failed\n"
    "    user: 'refund (dsp_[0-9]+)'\n"
    "    tool_result: 'timed out|error'\n"
    "    tool: issue_refund\n"
    "    replies:\n"
    "      - text: The refund of $1 did not go through; a person will look.\n"
    "      - tool_calls: [{name: issue_refund, arguments: '{\"dispute_id\": \"$1\"}'}]\n"
    "        weight: 3\n"
    "  - name: turn two only\n"
    "    turn: 2\n"
    "    replies:\n"
    "      - text: two\n"
    "  - name: anything else\n"
    "    replies:\n"
    "      - text: \"Refunded: all done, \\u00e9t\\u00e9 \xe2\x82\xac.\"\n";

static void
load(struct model_script *s)
{
	char	err[ERR_LEN];

	if (model_script_parse("agent.model.yaml", script_text,
	    strlen(script_text), s, err) == -1)
		fail_msg("%s", err);
}

static void
test_script(void **state)
{
	struct model_script	s;

	(void)state;
	load(&s);
	assert_int_equal(s.npats, 4);
	assert_int_equal(s.nalts, 5);
	assert_int_equal(s.pace_ms, 2);
	assert_string_equal(s.pats[0].name, "asks for a refund");
	assert_int_equal(s.pats[0].step, 0);
	assert_int_equal(s.pats[0].turn, -1);
	assert_int_equal(s.pats[1].weights, 4);
	assert_int_equal(s.pats[2].turn, 2);
	assert_string_equal(s.pats[1].tool, "issue_refund");
	assert_true(json_is_integer(json_object_get(s.pats[0].alts[0].calls[0].args,
	    "amount_eur")));
	assert_int_equal(s.pats[1].alts[1].line, 17);
	model_script_free(&s);
	model_script_free(NULL);
}

static int	bads;

/* The script fails, and its message starts with want. */
static void
bad(const char *text, const char *want)
{
	struct model_script	s;
	char			err[ERR_LEN];

	if (model_script_parse("m.yaml", text, strlen(text), &s, err) == 0)
		fail_msg("accepted:\n%s", text);
	if (strncmp(err, want, strlen(want)) != 0) {
		print_error("message \"%s\", want it to start \"%s\"\n", err, want);
		bads++;
	}
}

static void
test_script_errors(void **state)
{
	(void)state;
	bad("patterns:\n  - replies:\n      - txt: hi\n",
	    "m.yaml:3:9: patterns[0].replies[0].txt: unknown key (expected text, tool_calls, weight)");
	bad("patterns:\n  - user: x\n", "m.yaml:2:5: patterns[0].replies: required key is missing");
	bad("patterns:\n  - user: '(x'\n    replies: [{text: a}]\n",
	    "m.yaml:2:11: patterns[0].user: not a POSIX extended regex");
	bad("patterns:\n  - user: 'a(b)'\n    replies: [{text: $2}]\n",
	    "m.yaml:3:22: patterns[0].replies[0].text: $2, but user: has 1 group");
	bad("patterns:\n  - replies: [{text: $1}]\n",
	    "m.yaml:2:22: patterns[0].replies[0].text: $1 stands for a group of user:");
	bad("patterns:\n  - replies:\n      - tool_calls: [{name: 'a b'}]\n",
	    "m.yaml:3:29: patterns[0].replies[0].tool_calls[0].name: a tool's name");
	bad("patterns:\n  - replies:\n      - tool_calls: [{name: a, arguments: [1]}]\n",
	    "m.yaml:3:43: patterns[0].replies[0].tool_calls[0].arguments: the arguments must be a mapping");
	bad("patterns:\n  - replies:\n      - tool_calls: [{name: a, arguments: '{'}]\n",
	    "m.yaml:3:43: patterns[0].replies[0].tool_calls[0].arguments: neither a mapping nor a JSON object");
	bad("patterns:\n  - replies:\n      - weight: 2\n",
	    "m.yaml:3:9: patterns[0].replies[0]: a reply needs text, tool_calls or both");
	bad("patterns:\n  - replies: []\n", "m.yaml:2:14: patterns[0].replies: 0 replies");
	bad("pace: 5\npatterns:\n  - replies: [{text: a}]\n", "m.yaml:1:7: pace: \"5\" has no unit");
	bad("patterns:\n\t- replies: [{text: a}]\n", "m.yaml:2:1: YAML: a tab in the indentation");
	bad("patterns:\n  - &a {replies: [{text: a}]}\n  - *a\n", "m.yaml:3:5: YAML: an alias (*a)");
	bad("", "m.yaml:1:1: script: the file is empty");
	bad("patterns:\n  - replies: [{text: a}]\n    turn: -1\n",
	    "m.yaml:3:11: patterns[0].turn: expected an integer 0..1023");
	bad("patterns:\n  - replies: [{text: a}]\n    step: 1\n    step: 2\n",
	    "m.yaml:4:5: patterns[0].step: duplicate key");
	assert_int_equal(bads, 0);
}

static void
req(enum model_api api, const char *body, struct model_req *r)
{
	char	err[ERR_LEN];

	if (model_req_parse(api, body, strlen(body), r, err) == -1)
		fail_msg("%s: %s", body, err);
}

static const char openai_first[] =
    "{\"model\":\"gpt-4o-mini\",\"messages\":["
    "{\"role\":\"system\",\"content\":\"You refund.\"},"
    "{\"role\":\"user\",\"content\":\"Please refund dsp_2 of 40 EUR\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"issue_refund\"}}]}";

static const char openai_after[] =
    "{\"model\":\"gpt-4o-mini\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
    "\"messages\":["
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Please refund dsp_2\"}]},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
    "\"function\":{\"name\":\"issue_refund\",\"arguments\":\"{}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"error: timed out\"}]}";

static const char anthropic_after[] =
    "{\"model\":\"claude-x\",\"max_tokens\":100,\"messages\":["
    "{\"role\":\"user\",\"content\":\"Please refund dsp_3\"},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"},"
    "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"issue_refund\",\"input\":{}}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\","
    "\"content\":[{\"type\":\"text\",\"text\":\"error: timed out\"}]}]}]}";

static void
test_requests(void **state)
{
	struct model_req	r;
	enum model_api		api;
	char			err[ERR_LEN], what[MODEL_WHAT_LEN];

	(void)state;
	assert_int_equal(model_api_of("/v1/chat/completions", &api), 0);
	assert_int_equal(api, MODEL_API_OPENAI);
	assert_int_equal(model_api_of("/openai/v1/chat/completions/", &api), 0);
	assert_int_equal(model_api_of("/v1/messages", &api), 0);
	assert_int_equal(api, MODEL_API_ANTHROPIC);
	assert_int_equal(model_api_of("/v1/embeddings", &api), -1);

	req(MODEL_API_OPENAI, openai_first, &r);
	assert_string_equal(r.user, "Please refund dsp_2 of 40 EUR");
	assert_null(r.results);
	assert_int_equal(r.step, 0);
	assert_false(r.stream);
	assert_string_equal(r.model, "gpt-4o-mini");
	model_req_what(&r, what, sizeof(what));
	assert_string_equal(what, "step 0, user: \"Please refund dsp_2 of 40 EUR\"");
	model_req_free(&r);

	req(MODEL_API_OPENAI, openai_after, &r);
	assert_string_equal(r.user, "Please refund dsp_2");
	assert_string_equal(r.results, "error: timed out");
	assert_int_equal(r.ntools, 1);
	assert_string_equal(r.tools[0], "issue_refund");
	assert_int_equal(r.step, 1);
	assert_true(r.stream);
	assert_true(r.usage_chunk);
	model_req_what(&r, what, sizeof(what));
	assert_string_equal(what, "step 1, after 1 tool result (issue_refund)");
	model_req_free(&r);

	req(MODEL_API_ANTHROPIC, anthropic_after, &r);
	assert_string_equal(r.user, "Please refund dsp_3");
	assert_string_equal(r.results, "error: timed out");
	assert_string_equal(r.tools[0], "issue_refund");
	assert_int_equal(r.step, 1);
	model_req_free(&r);

	assert_int_equal(model_req_parse(MODEL_API_OPENAI, "{", 1, &r, err), -1);
	assert_non_null(strstr(err, "not JSON"));
	assert_int_equal(model_req_parse(MODEL_API_OPENAI, "{}", 2, &r, err), -1);
	assert_string_equal(err, "the request has no messages");
	assert_int_equal(model_req_parse(MODEL_API_OPENAI,
	    "{\"messages\":[{\"content\":1}]}", 28, &r, err), -1);
	assert_string_equal(err, "messages[0] has no role");
}

static void
test_match_and_pick(void **state)
{
	struct model_script	 s;
	struct model_req	 r;
	char			*cap[MODEL_CAPTURES];
	struct model_id		 id = { 7, "llm", 0, 1, 0x1234, 0 };
	uint64_t		 d;
	size_t			 count[2] = { 0, 0 }, i;
	bool			 differs = false;

	(void)state;
	load(&s);
	req(MODEL_API_OPENAI, openai_first, &r);
	assert_int_equal(model_match(&s, &r, 0, cap), 0);
	assert_string_equal(cap[1], "dsp_2");
	assert_string_equal(cap[2], "40");
	model_captures_free(cap);
	model_req_free(&r);

	req(MODEL_API_OPENAI, openai_after, &r);
	assert_int_equal(model_match(&s, &r, 0, cap), 1);
	assert_string_equal(cap[1], "dsp_2");
	model_captures_free(cap);
	model_req_free(&r);

	req(MODEL_API_OPENAI, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &r);
	assert_int_equal(model_match(&s, &r, 2, cap), 2);	/* turn 2's own */
	assert_int_equal(model_match(&s, &r, 1, cap), 3);	/* the default */
	model_req_free(&r);

	/* a pure function of the exchange: the same id, the same draw */
	d = model_draw(&id);
	assert_true(d == model_draw(&id));
	for (i = 0; i < 4000; i++) {
		id.occ = (uint32_t)i;
		count[model_pick(&s.pats[1], model_draw(&id))]++;
	}
	/* weights 1 and 3 */
	assert_in_range(count[1], 2800, 3200);
	id.occ = 0;
	for (i = 0; i < 64 && !differs; i++) {
		struct model_id	o = id;

		o.seed = i;
		differs = model_draw(&o) != d;
	}
	assert_true(differs);
	id.turn = 2;
	assert_true(model_draw(&id) != d);
	id.turn = 1;
	id.key = 0x1235;
	assert_true(model_draw(&id) != d);
	id.key = 0x1234;
	id.proxy = "other";
	assert_true(model_draw(&id) != d);
	id.proxy = "llm";
	id.round = 1;
	assert_true(model_draw(&id) != d);
	assert_int_equal(model_pick(&s.pats[0], d), 0);	/* one alternative */
	model_script_free(&s);
}

/* The pieces as one response: the head and the body, de-chunked. */
static void
response(const struct model_out *o, char **head, char **body)
{
	size_t		 i, n = 0;
	char		*all, *h, *p, *b;
	unsigned long	 sz;

	for (i = 0; i < o->n; i++)
		n += o->len[i];
	all = xcalloc(1, n + 1);
	for (n = 0, i = 0; i < o->n; i++) {
		memcpy(all + n, o->piece[i], o->len[i]);
		n += o->len[i];
	}
	h = strstr(all, "\r\n\r\n");
	assert_non_null(h);
	*head = strndup(all, (size_t)(h - all) + 2);
	p = h + 4;
	if (strstr(*head, "Transfer-Encoding: chunked") == NULL) {
		*body = xstrdup(p);
		free(all);
		return;
	}
	b = xcalloc(1, n + 1);
	for (n = 0;;) {
		sz = strtoul(p, &p, 16);
		assert_memory_equal(p, "\r\n", 2);
		p += 2;
		if (sz == 0)
			break;
		memcpy(b + n, p, sz);
		n += sz;
		p += sz;
		assert_memory_equal(p, "\r\n", 2);
		p += 2;
	}
	assert_string_equal(p, "\r\n");
	*body = b;
	free(all);
}

/* The "data:" of each server-sent event, and its "event:" name or NULL. */
static size_t
sse(char *body, char **names, char **datas, size_t max)
{
	size_t	 n = 0;
	char	*ev, *save = NULL, *line, *lsave;

	for (ev = body; (line = strstr(ev, "\n\n")) != NULL && n < max;
	    ev = line + 2) {
		*line = '\0';
		names[n] = datas[n] = NULL;
		for (char *l = strtok_r(ev, "\n", &lsave); l != NULL;
		    l = strtok_r(NULL, "\n", &lsave)) {
			if (strncmp(l, "event: ", 7) == 0)
				names[n] = l + 7;
			else if (strncmp(l, "data: ", 6) == 0)
				datas[n] = l + 6;
			else
				fail_msg("a line that is neither event: nor data: %s", l);
		}
		assert_non_null(datas[n]);
		n++;
	}
	(void)save;
	assert_string_equal(ev, "");
	return n;
}

static json_t *
parse(const char *s)
{
	json_error_t	 je;
	json_t		*j = json_loads(s, 0, &je);

	if (j == NULL)
		fail_msg("not JSON (%s): %s", je.text, s);
	return j;
}

static void
render(const char *body, enum model_api api, int turn, struct model_out *o,
    int want_pattern, size_t alt)
{
	struct model_script	 s;
	struct model_req	 r;
	char			*cap[MODEL_CAPTURES];
	int			 p;

	load(&s);
	req(api, body, &r);
	p = model_match(&s, &r, turn, cap);
	assert_int_equal(p, want_pattern);
	model_render(&s.pats[p], alt, &r, cap, 99, o);
	model_captures_free(cap);
	model_req_free(&r);
	model_script_free(&s);
}

static void
test_openai_whole(void **state)
{
	struct model_out	 o;
	char			*head, *body;
	json_t			*j, *m, *tc, *args;

	(void)state;
	render(openai_first, MODEL_API_OPENAI, 0, &o, 0, 0);
	assert_int_equal(o.status, 200);
	response(&o, &head, &body);
	assert_non_null(strstr(head, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(head, "Content-Type: application/json\r\n"));
	j = parse(body);
	/* what openai-node's ChatCompletion reads */
	assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion");
	assert_true(json_is_string(json_object_get(j, "id")));
	assert_true(json_is_integer(json_object_get(j, "created")));
	assert_string_equal(json_string_value(json_object_get(j, "model")), "gpt-4o-mini");
	m = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
	assert_string_equal(json_string_value(json_object_get(m, "role")), "assistant");
	assert_true(json_is_null(json_object_get(m, "content")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "choices"), 0), "finish_reason")), "tool_calls");
	tc = json_array_get(json_object_get(m, "tool_calls"), 0);
	assert_string_equal(json_string_value(json_object_get(tc, "type")), "function");
	assert_true(strncmp(json_string_value(json_object_get(tc, "id")), "call_", 5) == 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(tc,
	    "function"), "name")), "issue_refund");
	/* arguments: a JSON text, $1 and $2 in, $$ a dollar */
	args = parse(json_string_value(json_object_get(json_object_get(tc,
	    "function"), "arguments")));
	assert_string_equal(json_string_value(json_object_get(args, "dispute_id")), "dsp_2");
	assert_int_equal(json_integer_value(json_object_get(args, "amount_eur")), 40);
	assert_string_equal(json_string_value(json_object_get(args, "note")), "of 40 $");
	assert_true(json_is_integer(json_object_get(json_object_get(j, "usage"),
	    "total_tokens")));
	json_decref(args);
	json_decref(j);
	free(head);
	free(body);
	model_out_free(&o);
}

static void
test_openai_stream(void **state)
{
	struct model_out	 o;
	char			*head, *body, *names[64], *datas[64], *id = NULL;
	char			 text[512] = "", args[512] = "";
	const char		*finish = NULL;
	size_t			 n, i;
	bool			 usage = false;
	json_t			*j, *args_j;

	(void)state;
	/* the text alternative of pattern 1 */
	render(openai_after, MODEL_API_OPENAI, 0, &o, 1, 0);
	assert_true(o.events >= 4);
	response(&o, &head, &body);
	assert_non_null(strstr(head, "Content-Type: text/event-stream"));
	n = sse(body, names, datas, 64);
	assert_int_equal(n, o.events);
	assert_string_equal(datas[n - 1], "[DONE]");
	for (i = 0; i + 1 < n; i++) {
		json_t		*c = parse(datas[i]), *ch, *d;
		const char	*cid = json_string_value(json_object_get(c, "id"));

		assert_null(names[i]);
		assert_string_equal(json_string_value(json_object_get(c, "object")),
		    "chat.completion.chunk");
		if (id == NULL)
			id = xstrdup(cid);
		assert_string_equal(cid, id);	/* one id for the stream */
		if (json_array_size(json_object_get(c, "choices")) == 0) {
			/* include_usage: the last chunk, no choices, the usage */
			assert_true(json_is_object(json_object_get(c, "usage")));
			usage = true;
			json_decref(c);
			continue;
		}
		assert_false(usage);
		ch = json_array_get(json_object_get(c, "choices"), 0);
		d = json_object_get(ch, "delta");
		if (json_is_string(json_object_get(d, "content")))
			strcat(text, json_string_value(json_object_get(d, "content")));
		if (json_is_string(json_object_get(ch, "finish_reason")))
			finish = json_string_value(json_object_get(ch,
			    "finish_reason")) [0] == 's' ? "stop" : "other";
		json_decref(c);
	}
	assert_true(usage);
	assert_string_equal(finish, "stop");
	assert_string_equal(text, "The refund of dsp_2 did not go through; a person will look.");
	free(head);
	free(body);
	free(id);
	model_out_free(&o);

	/* the tool call alternative: arguments in fragments, by index */
	render(openai_after, MODEL_API_OPENAI, 0, &o, 1, 1);
	response(&o, &head, &body);
	n = sse(body, names, datas, 64);
	finish = NULL;
	for (i = 0; i + 1 < n; i++) {
		json_t	*c = parse(datas[i]), *ch, *t;

		ch = json_array_get(json_object_get(c, "choices"), 0);
		t = json_array_get(json_object_get(json_object_get(ch, "delta"),
		    "tool_calls"), 0);
		if (t != NULL) {
			assert_int_equal(json_integer_value(json_object_get(t, "index")), 0);
			if (json_object_get(t, "id") != NULL) {
				assert_string_equal(json_string_value(json_object_get(t,
				    "type")), "function");
				assert_string_equal(json_string_value(json_object_get(
				    json_object_get(t, "function"), "name")), "issue_refund");
			}
			strcat(args, json_string_value(json_object_get(
			    json_object_get(t, "function"), "arguments")));
		}
		if (json_is_string(json_object_get(ch, "finish_reason")))
			finish = strcmp(json_string_value(json_object_get(ch,
			    "finish_reason")), "tool_calls") == 0 ? "tool_calls" : "x";
		json_decref(c);
	}
	assert_string_equal(finish, "tool_calls");
	args_j = parse(args);
	assert_string_equal(json_string_value(json_object_get(args_j, "dispute_id")), "dsp_2");
	json_decref(args_j);
	(void)j;
	free(head);
	free(body);
	model_out_free(&o);
}

static void
test_anthropic(void **state)
{
	struct model_out	 o;
	char			*head, *body, *names[64], *datas[64];
	char			 text[512] = "", partial[512] = "";
	size_t			 n, i;
	json_t			*j, *c, *input;
	char			*stream_body;

	(void)state;
	/* whole: the tool_use alternative */
	render(anthropic_after, MODEL_API_ANTHROPIC, 0, &o, 1, 1);
	response(&o, &head, &body);
	assert_non_null(strstr(head, "request-id: "));
	j = parse(body);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "message");
	assert_string_equal(json_string_value(json_object_get(j, "role")), "assistant");
	assert_string_equal(json_string_value(json_object_get(j, "stop_reason")), "tool_use");
	assert_true(json_is_null(json_object_get(j, "stop_sequence")));
	c = json_array_get(json_object_get(j, "content"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "type")), "tool_use");
	assert_true(strncmp(json_string_value(json_object_get(c, "id")), "toolu_", 6) == 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(c,
	    "input"), "dispute_id")), "dsp_3");
	assert_true(json_is_integer(json_object_get(json_object_get(j, "usage"),
	    "output_tokens")));
	json_decref(j);
	free(head);
	free(body);
	model_out_free(&o);

	/* streamed: the same request with "stream": true */
	stream_body = xasprintf("{\"stream\":true,%s", anthropic_after + 1);
	render(stream_body, MODEL_API_ANTHROPIC, 0, &o, 1, 1);
	response(&o, &head, &body);
	n = sse(body, names, datas, 64);
	assert_int_equal(n, o.events);
	assert_string_equal(names[0], "message_start");
	assert_string_equal(names[n - 1], "message_stop");
	for (i = 0; i < n; i++) {
		json_t	*e = parse(datas[i]), *d;

		/* MessageStream goes by the data's type; the API sends both */
		assert_non_null(names[i]);
		assert_string_equal(json_string_value(json_object_get(e, "type")), names[i]);
		if (strcmp(names[i], "content_block_start") == 0)
			assert_string_equal(json_string_value(json_object_get(
			    json_object_get(e, "content_block"), "type")), "tool_use");
		if (strcmp(names[i], "content_block_delta") == 0) {
			d = json_object_get(e, "delta");
			assert_string_equal(json_string_value(json_object_get(d, "type")),
			    "input_json_delta");
			strcat(partial, json_string_value(json_object_get(d,
			    "partial_json")));
		}
		if (strcmp(names[i], "message_delta") == 0)
			assert_string_equal(json_string_value(json_object_get(
			    json_object_get(e, "delta"), "stop_reason")), "tool_use");
		json_decref(e);
	}
	input = parse(partial);
	assert_string_equal(json_string_value(json_object_get(input, "dispute_id")), "dsp_3");
	json_decref(input);
	free(head);
	free(body);
	model_out_free(&o);
	free(stream_body);

	/* streamed text, non-ASCII cut only between characters */
	stream_body = xasprintf("{\"stream\":true,\"messages\":[{\"role\":\"user\","
	    "\"content\":\"thanks\"}]}");
	render(stream_body, MODEL_API_ANTHROPIC, 0, &o, 3, 0);
	response(&o, &head, &body);
	n = sse(body, names, datas, 64);
	for (i = 0; i < n; i++) {
		json_t	*e = parse(datas[i]);

		if (strcmp(names[i], "content_block_delta") == 0)
			strcat(text, json_string_value(json_object_get(json_object_get(e,
			    "delta"), "text")));
		json_decref(e);
	}
	assert_string_equal(text, "Refunded: all done, été €.");
	free(head);
	free(body);
	model_out_free(&o);
	free(stream_body);
}

static void
test_errors(void **state)
{
	struct model_out	 o;
	char			*head, *body;
	json_t			*j;

	(void)state;
	model_render_error(MODEL_API_OPENAI, 429, "rate_limit_error",
	    "slow down", 2, &o);
	response(&o, &head, &body);
	assert_non_null(strstr(head, "HTTP/1.1 429 Too Many Requests\r\n"));
	assert_non_null(strstr(head, "Retry-After: 2\r\n"));
	j = parse(body);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "error"), "message")), "slow down");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "error"), "type")), "rate_limit_error");
	json_decref(j);
	free(head);
	free(body);
	model_out_free(&o);

	model_render_error(MODEL_API_ANTHROPIC, 529, "overloaded_error",
	    "Overloaded", 0, &o);
	response(&o, &head, &body);
	assert_non_null(strstr(head, "HTTP/1.1 529 Overloaded\r\n"));
	assert_null(strstr(head, "Retry-After"));
	j = parse(body);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "error"), "type")), "overloaded_error");
	json_decref(j);
	free(head);
	free(body);
	model_out_free(&o);
}

static void
test_http(void **state)
{
	struct model_http	h;
	char			err[ERR_LEN];
	static const char	cl[] = "POST /v1/chat/completions?x=1 HTTP/1.1\r\n"
	    "Host: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
	static const char	ch[] = "POST /v1/messages HTTP/1.1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2;ext=1\r\nlo\r\n0\r\n\r\n";

	(void)state;
	assert_int_equal(model_http_parse(cl, strlen(cl), &h, err), 0);
	assert_string_equal(h.method, "POST");
	assert_string_equal(h.path, "/v1/chat/completions");
	assert_true(h.close);
	assert_int_equal(h.body_len, 5);
	assert_string_equal(h.body, "hello");
	model_http_free(&h);
	assert_int_equal(model_http_parse(ch, strlen(ch), &h, err), 0);
	assert_string_equal(h.body, "hello");
	assert_false(h.close);
	model_http_free(&h);
	assert_int_equal(model_http_parse("GET / HTTP/1.1\r\n", 16, &h, err), -1);
	assert_int_equal(model_http_parse("POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab",
	    39, &h, err), -1);
	assert_string_equal(err, "a body shorter than its Content-Length");
	assert_int_equal(model_http_parse("POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
	    49, &h, err), -1);
	assert_int_equal(model_http_parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	    51, &h, err), -1);
	assert_string_equal(err, "a chunk size that is not hex");
}

/*
 * Cassettes (fault-proxy/cassette.h): a request's key is what it asks, in
 * canonical JSON, whatever the spacing and key order; parts merge into a
 * file that keeps every distinct reply to a key, once; a streamed reply
 * is written back one event a chunk.
 */
static void
test_cassette(void **state)
{
	static const char	a[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
	static const char	b[] = "{ \"messages\": [ {\"content\": \"hi\", \"role\": \"user\"} ],\n  \"model\": \"m\" }";
	static const char	sse[] = "data: {\"x\":1}\n\ndata: [DONE]\n\n";
	char			 dir[] = "/tmp/soak-cassette-XXXXXX", err[ERR_LEN];
	char			*path, *part, *l1, *l2, *l3, *head, *body;
	struct cassette		 c;
	const struct cassette_entry *e;
	struct model_out	 o;
	size_t			 keys, replies;
	uint64_t		 k = cassette_key("POST", "/v1/chat/completions", a, strlen(a));

	(void)state;
	assert_true(k == cassette_key("POST", "/v1/chat/completions", b, strlen(b)));
	assert_true(k != cassette_key("POST", "/v1/messages", a, strlen(a)));
	assert_true(k != cassette_key("POST", "/v1/chat/completions", a, strlen(a) - 3));
	/* a tool call's id is its place: another model's ids, one request */
	{
		static const char	t1[] = "{\"messages\":[{\"role\":\"assistant\","
		    "\"tool_calls\":[{\"id\":\"call_a\",\"function\":{\"name\":\"f\"}}]},"
		    "{\"role\":\"tool\",\"tool_call_id\":\"call_a\",\"content\":\"ok\"}]}";
		static const char	t2[] = "{\"messages\":[{\"role\":\"assistant\","
		    "\"tool_calls\":[{\"id\":\"call_zz\",\"function\":{\"name\":\"f\"}}]},"
		    "{\"role\":\"tool\",\"tool_call_id\":\"call_zz\",\"content\":\"ok\"}]}";
		static const char	t3[] = "{\"messages\":[{\"role\":\"assistant\","
		    "\"tool_calls\":[{\"id\":\"call_zz\",\"function\":{\"name\":\"f\"}}]},"
		    "{\"role\":\"tool\",\"tool_call_id\":\"call_zz\",\"content\":\"error\"}]}";
		static const char	a1[] = "{\"messages\":[{\"role\":\"assistant\",\"content\":"
		    "[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}]},"
		    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
		    "\"tool_use_id\":\"toolu_1\",\"content\":\"ok\"}]}]}";
		static const char	a2[] = "{\"messages\":[{\"role\":\"assistant\",\"content\":"
		    "[{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"f\",\"input\":{}}]},"
		    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
		    "\"tool_use_id\":\"toolu_9\",\"content\":\"ok\"}]}]}";

		assert_true(cassette_key("POST", "/p", t1, strlen(t1)) ==
		    cassette_key("POST", "/p", t2, strlen(t2)));
		assert_true(cassette_key("POST", "/p", t2, strlen(t2)) !=
		    cassette_key("POST", "/p", t3, strlen(t3)));
		assert_true(cassette_key("POST", "/p", a1, strlen(a1)) ==
		    cassette_key("POST", "/p", a2, strlen(a2)));
	}
	assert_non_null(mkdtemp(dir));
	path = xasprintf("%s/c.json", dir);
	part = xasprintf("%s/c.json.part-1", dir);
	l1 = cassette_line(k, "POST", "/v1/chat/completions", "w", a, strlen(a), 200,
	    "application/json", "{\"r\":1}", 7);
	l2 = cassette_line(k, "POST", "/v1/chat/completions", "w", b, strlen(b), 200,
	    "text/event-stream", sse, strlen(sse));
	l3 = xstrdup(l1);	/* the same reply twice: kept once */
	head = xasprintf("%s%s%s", l1, l2, l3);
	assert_int_equal(write_file(part, head, strlen(head), err), 0);
	free(head);
	assert_int_equal(cassette_merge(path, &keys, &replies, err), 0);
	assert_int_equal(keys, 1);
	assert_int_equal(replies, 2);
	assert_int_equal(access(part, F_OK), -1);	/* merged away */
	assert_int_equal(cassette_load(path, &c, err), 0);
	assert_non_null(e = cassette_find(&c, k));
	assert_int_equal(e->n, 2);
	assert_null(cassette_find(&c, k + 1));
	cassette_render(&e->r[1], &o);
	assert_int_equal(o.events, 2);
	assert_int_equal(o.n, 4);	/* head, two events, the last chunk */
	response(&o, &head, &body);
	assert_string_equal(body, sse);
	free(head);
	free(body);
	model_out_free(&o);
	cassette_render(&e->r[0], &o);
	response(&o, &head, &body);
	assert_string_equal(body, "{\"r\":1}");
	free(head);
	free(body);
	model_out_free(&o);
	cassette_free(&c);
	/* a second merge with a new part adds to the file */
	assert_int_equal(write_file(part, l2, strlen(l2), err), 0);
	assert_int_equal(cassette_merge(path, &keys, &replies, err), 0);
	assert_int_equal(replies, 2);
	assert_int_equal(write_file(path, "{}", 2, err), 0);
	assert_int_equal(cassette_load(path, &c, err), -1);
	assert_non_null(strstr(err, "not a cassette of version 1"));
	cassette_free(&c);
	free(l1);
	free(l2);
	free(l3);
	free(path);
	free(part);
	rm_rf(dir);
}

/* How many times needle occurs in hay[0..n). */
static size_t
count_of(const char *hay, size_t n, const char *needle)
{
	size_t		 c = 0, k = strlen(needle);
	const char	*p = hay, *end = hay + n;

	while ((p = memmem(p, (size_t)(end - p), needle, k)) != NULL) {
		c++;
		p += k;
	}
	return c;
}

/*
 * Events counted on the wire (fault-proxy/sse.h): a stand-in's stream,
 * chunked, in one piece, in pieces and a byte at a time, counts its
 * events; a stop takes exactly the bytes through the stop-th event's
 * blank line; a body that is not an event stream, or chunk framing that
 * is not, is passed uncounted.
 */
static void
test_sse(void **state)
{
	struct model_out	 o;
	struct sse		 s;
	char			*all, *body;
	size_t			 i, n = 0, hlen, took, k;
	static const char	 plain[] = "HTTP/1.1 200 OK\r\nContent-Type: "
	    "text/event-stream\r\n\r\n";

	(void)state;
	render(openai_after, MODEL_API_OPENAI, 0, &o, 1, 0);
	for (i = 0; i < o.n; i++)
		n += o.len[i];
	all = xcalloc(1, n + 1);
	for (n = 0, i = 0; i < o.n; i++) {
		memcpy(all + n, o.piece[i], o.len[i]);
		n += o.len[i];
	}
	hlen = o.len[0];
	body = all + hlen;
	/* whole */
	sse_begin(&s, all, hlen);
	assert_true(s.stream && s.chunked);
	assert_int_equal(sse_feed(&s, body, n - hlen, 0), n - hlen);
	assert_int_equal(s.events, o.events);
	/* a byte at a time */
	sse_begin(&s, all, hlen);
	for (i = 0; i < n - hlen; i++)
		assert_int_equal(sse_feed(&s, body + i, 1, 0), 1);
	assert_int_equal(s.events, o.events);
	/* a stop after each k: the bytes through that event's end */
	for (k = 1; k <= o.events; k++) {
		sse_begin(&s, all, hlen);
		took = 0;
		for (i = 0; i < n - hlen; i += 7) {
			size_t	piece = n - hlen - i < 7 ? n - hlen - i : 7;
			size_t	t = sse_feed(&s, body + i, piece, (uint32_t)k);

			took += t;
			if (t < piece || s.events >= k)
				break;
		}
		assert_int_equal(s.events, k);
		assert_memory_equal(body + took - 2, "\n\n", 2);
		assert_int_equal(count_of(body, took, "data: "), k);
	}
	model_out_free(&o);
	free(all);
	/* not chunked: CRLF line ends and a CR alone end lines too */
	sse_begin(&s, plain, strlen(plain));
	assert_false(s.chunked);
	{
		static const char	three[] = "data: a\r\n\r\ndata: b\r\rdata: c\n\n";

		assert_int_equal(sse_feed(&s, three, strlen(three), 0), strlen(three));
	}
	assert_int_equal(s.events, 3);
	/* not an event stream: nothing counted */
	sse_begin(&s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",
	    strlen("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"));
	assert_int_equal(sse_feed(&s, "data: a\n\n", 10, 1), 10);
	assert_int_equal(s.events, 0);
	/* a chunk size that is not hex: the rest passes uncounted */
	{
		static const char	head[] = "HTTP/1.1 200 OK\r\nContent-Type: "
		    "text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
		static const char	bad[] = "zz\r\ndata: a\n\n";

		sse_begin(&s, head, strlen(head));
		assert_true(s.chunked);
		assert_int_equal(sse_feed(&s, bad, strlen(bad), 1), strlen(bad));
	}
	assert_int_equal(s.events, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script),
		cmocka_unit_test(test_script_errors),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_match_and_pick),
		cmocka_unit_test(test_openai_whole),
		cmocka_unit_test(test_openai_stream),
		cmocka_unit_test(test_anthropic),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_cassette),
		cmocka_unit_test(test_sse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
