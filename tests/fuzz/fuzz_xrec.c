/*
 * soak explore's records and journal lines (worker/xexec.h xp_rec_parse,
 * worker/explore.h explore_journal_replay): a record comes from an
 * executor's pipe or a remote worker's RESULT, a journal line from
 * explore.jsonl in a folder someone may have edited; any bytes.  Input:
 * JSON lines; the first is also read as one record.  Checked:
 *  - a record refused says why;
 *  - an accepted record is what soak writes of it, read back the same:
 *    parse -> xp_rec_json -> parse -> xp_rec_json gives the same JSON (a
 *    message or a reason for no steps cut inside a character must not
 *    vanish or change on the way: json_string of a cut string is NULL);
 *  - its steps are within XP_MAX_STEPS, each of a turn explore takes;
 *  - the lines replayed as a journal of an exploration of 2 turns (its
 *    root the only branch before the first line): taken and refused add
 *    up to at most the lines, the executions are the lines taken, and the
 *    explorer's JSON still dumps.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/util.h"
#include "worker/explore.h"
#include "worker/xexec.h"
#include "tests/fuzz/fuzz.h"

static struct cfg_proxy	 db_proxy = { .name = "db", .upstream_kind = CFG_UP_DATABASE,
			    .protocol = CFG_PROTO_POSTGRES,
			    .schedule = { .enabled = true } };
static struct cfg	 cfg = { .name = "t", .turns = 2, .rounds = 1,
			    .proxies = &db_proxy, .nproxies = 1 };

static void
check_record(const char *line, size_t len)
{
	json_t		*j, *j1, *j2;
	struct xrec	 r, r2;
	char		 err[ERR_LEN], *t1, *t2;
	size_t		 i;

	if ((j = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	err[0] = '\0';
	if (xp_rec_parse(j, &r, err) == -1) {
		FUZZ_CHECK(err[0] != '\0', "a record refused without saying why");
		json_decref(j);
		return;
	}
	FUZZ_CHECK(r.n <= XP_MAX_STEPS, "%zu steps", r.n);
	for (i = 0; i < r.n; i++)
		FUZZ_CHECK(r.steps[i].turn >= 0 && r.steps[i].turn < XP_MAX_TURNS,
		    "step %zu of turn %d", i, r.steps[i].turn);
	j1 = xp_rec_json(&r);
	t1 = json_dumps(j1, JSON_COMPACT | JSON_SORT_KEYS);
	FUZZ_CHECK(t1 != NULL, "an accepted record does not dump");
	if (xp_rec_parse(j1, &r2, err) == -1)
		FUZZ_CHECK(0, "a record's own JSON is refused: %s\n%s", err, t1);
	j2 = xp_rec_json(&r2);
	t2 = json_dumps(j2, JSON_COMPACT | JSON_SORT_KEYS);
	FUZZ_CHECK(t2 != NULL && strcmp(t1, t2) == 0,
	    "parse -> json -> parse -> json differs:\n%s\n---\n%s", t1, t2);
	free(t1);
	free(t2);
	json_decref(j1);
	json_decref(j2);
	xp_rec_clear(&r);
	xp_rec_clear(&r2);
	json_decref(j);
}

/* Every event the replay says is one a user can read: a refusal or a
 * broken branch says why, and an event of an execution has its record. */
static void
on_event(void *arg, const struct xp_event_info *ev)
{
	(*(size_t *)arg)++;
	if (ev->kind == XE_REFUSED || ev->kind == XE_BROKEN)
		FUZZ_CHECK(ev->why != NULL && ev->why[0] != '\0',
		    "event %d without a why", ev->kind);
	else
		FUZZ_CHECK(ev->rec != NULL, "event %d without its record",
		    ev->kind);
	FUZZ_CHECK(ev->replaying, "an event of a journal's replay not said as one");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char		*p = (const char *)data, *end = p + size, *nl;
	size_t			 events = 0;
	struct explore_opts	 o = { .cfg = &cfg, .proxy = "db", .seed = 1,
				    .turns = 3, .bound = -1, .only_round = -1,
				    .reduce = true, .seed_steps = true,
				    .failing_dfd = -1, .event = on_event,
				    .arg = &events };
	struct explore		*x;
	const struct xstats	*st;
	json_t			*lines = json_array(), *j;
	size_t			 taken, nlines = 0;
	char			*text;

	nl = memchr(p, '\n', size);
	check_record(p, nl ? (size_t)(nl - p) : size);
	while (p < end) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		/* a line that is not JSON: the journal's reader drops it
		 * (cmd/explore.c); a line that is JSON goes in as it is */
		if ((j = json_loadb(p, (size_t)(nl - p), 0, NULL)) != NULL) {
			json_array_append_new(lines, j);
			nlines++;
		}
		p = nl + 1;
	}
	x = explore_new(&o, NULL, 0);
	taken = explore_journal_replay(x, lines);
	st = explore_stats(x);
	FUZZ_CHECK(taken <= nlines && taken + st->refused <= nlines,
	    "%zu lines: %zu taken, %llu refused", nlines, taken,
	    (unsigned long long)st->refused);
	FUZZ_CHECK(events >= taken + st->refused, "%zu taken, %llu refused, "
	    "%zu events said", taken, (unsigned long long)st->refused, events);
	FUZZ_CHECK(st->executions == taken, "%zu taken, %llu executions", taken,
	    (unsigned long long)st->executions);
	j = explore_json(x, NULL);
	text = json_dumps(j, JSON_COMPACT);
	FUZZ_CHECK(text != NULL, "the explorer's JSON does not dump");
	free(text);
	json_decref(j);
	explore_free(x);
	json_decref(lines);
	return 0;
}
