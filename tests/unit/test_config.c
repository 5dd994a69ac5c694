/*
 * Config loader: a full file parses to the right values, absent keys take
 * their defaults, and every class of mistake yields the exact
 * "file:line:col: key: problem" message.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/util.h"

/* cmocka 1.1.5 (Debian 12) has no assert_double_equal. */
#define assert_near(a, b, eps) \
	assert_true((a) - (b) <= (eps) && (b) - (a) <= (eps))

static const char full_yaml[] =
"# every key\n"
"name: refunds\n"
"seeds: 100..299\n"
"turns: 12\n"
"rounds: 3\n"
"seed_timeout: 2m\n"
"retries: 0\n"
"confirm: off\n"
"database:\n"
"  url: postgres://db/soak\n"
"  schema: sql/../schema.sql\n"
"  reset: truncate\n"
"services:\n"
"  - name: provider\n"
"    command: [./bin/provider, --port, \"0\"]\n"
"    ready: none\n"
"    ready_timeout: 250ms\n"
"    listen: socket\n"
"  - name: api\n"
"    command: python3\n"
"proxies:\n"
"  - name: provider\n"
"    upstream: service:provider\n"
"    protocol: http\n"
"    faults:\n"
"      rate: 15%\n"
"      lost_reply: 0.4\n"
"      reset: 0.3\n"
"      duplicate: 0.3\n"
"      blackhole: 0.01\n"
"      latency: 5ms..40ms\n"
"      hold: 2s\n"
"      bandwidth: 1M\n"
"      bandwidth_down: 512K\n"
"      slice_up: 16\n"
"      slice: 64\n"
"      slice_delay: 3ms\n"
"      close_after_down: 2G\n"
"  - name: pg\n"
"    upstream: database\n"
"  - name: sock\n"
"    upstream: unix:run/api.sock\n"
"    protocol: tcp\n"
"  - name: ext\n"
"    upstream: api.example.com:443\n"
"    faults:\n"
"      latency: 7ms\n"
"      latency_real: true\n"
"      rate: 0.5\n"
"      status: 0.2\n"
"      statuses: [429, 529]\n"
"      retry_after: 1500ms\n"
"      stream_cut: 0.3\n"
"      cut_after: 2..6\n"
"      stream_stall: 0.1\n"
"      stall_after: 3\n"
"      stall: 200ms..2s\n"
"setup: [./fixtures, --small]\n"
"setup_timeout: 45s\n"
"turn:\n"
"  command: ./refund_turn\n"
"  timeout: 5s\n"
"invariants:\n"
"  - name: at most one provider refund per dispute\n"
"    sql: |\n"
"      SELECT dispute_id FROM provider_refunds\n"
"      GROUP BY dispute_id HAVING count(*) > 1\n"
"  - name: balances add up\n"
"    sql: SELECT 1 WHERE false\n"
"invariant_timeout: 1500ms\n"
"guard:\n"
"  min_ok_turns: 50%\n"
"tickets:\n"
"  sink: github\n"
"  url: https://api.github.com\n"
"  repo: acme/refunds\n"
"  project: ACME\n"
"  token_env: GH_TOKEN\n"
"  user_env: GH_USER\n"
"  issue_type: Defect\n"
"  labels: [soak, concurrency]\n"
"  infra: yes\n";

static const char minimal_yaml[] =
"name: tiny\n"
"turn:\n"
"  command: [turn]\n"
"invariants:\n"
"  - name: none\n"
"    sql: SELECT 1 WHERE false\n";

struct fixture {
	char	dir[64];	/* as created */
	char	real[PATH_MAX];	/* realpath of it */
	char	*yaml;		/* dir/soak.yaml */
};

static void
put(const char *dir, const char *name, const char *text)
{
	char	*p = path_join(dir, name), err[ERR_LEN];

	assert_int_equal(write_file(p, text, strlen(text), err), 0);
	free(p);
}

static int
setup_dir(void **state)
{
	struct fixture	*fx = xcalloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/soak-cfg-XXXXXX");
	if (mkdtemp(fx->dir) == NULL || realpath(fx->dir, fx->real) == NULL)
		return -1;
	fx->yaml = path_join(fx->dir, "soak.yaml");
	put(fx->dir, "soak.yaml", full_yaml);
	put(fx->dir, "schema.sql", "CREATE TABLE t (id int);\n");
	*state = fx;
	return 0;
}

static int
teardown_dir(void **state)
{
	struct fixture	*fx = *state;

	rm_rf(fx->dir);
	free(fx->yaml);
	free(fx);
	return 0;
}

static char *
in(const struct fixture *fx, const char *rel)
{
	return xasprintf("%s/%s", fx->real, rel);
}

static void
assert_path(const struct fixture *fx, const char *got, const char *rel)
{
	char	*want = in(fx, rel);

	assert_string_equal(got, want);
	free(want);
}

static void
test_full(void **state)
{
	struct fixture		*fx = *state;
	struct cfg		 cfg;
	const struct cfg_faults	*f;
	char			 err[ERR_LEN] = "";

	if (cfg_load_file(fx->yaml, &cfg, err) == -1)
		fail_msg("%s", err);
	assert_string_equal(cfg.path, fx->yaml);
	assert_string_equal(cfg.dir, fx->real);
	assert_int_equal(cfg.text_len, strlen(full_yaml));
	assert_string_equal(cfg.text, full_yaml);

	assert_string_equal(cfg.name, "refunds");
	assert_int_equal(cfg.seeds.first, 100);
	assert_int_equal(cfg.seeds.last, 299);
	assert_int_equal(cfg.turns, 12);
	assert_int_equal(cfg.rounds, 3);
	assert_int_equal(cfg.seed_timeout_ms, 120000);
	assert_int_equal(cfg.retries, 0);
	assert_false(cfg.confirm);

	assert_string_equal(cfg.db_url, "postgres://db/soak");
	assert_path(fx, cfg.db_schema, "schema.sql");
	assert_int_equal(cfg.db_reset, CFG_RESET_TRUNCATE);

	assert_int_equal(cfg.nservices, 2);
	assert_string_equal(cfg.services[0].name, "provider");
	assert_path(fx, cfg.services[0].command[0], "bin/provider");
	assert_string_equal(cfg.services[0].command[1], "--port");
	assert_string_equal(cfg.services[0].command[2], "0");
	assert_null(cfg.services[0].command[3]);
	assert_int_equal(cfg.services[0].ready, CFG_READY_NONE);
	assert_int_equal(cfg.services[0].ready_timeout_ms, 250);
	assert_int_equal(cfg.services[0].listen, CFG_LISTEN_SOCKET);
	assert_string_equal(cfg.services[1].name, "api");
	assert_string_equal(cfg.services[1].command[0], "python3");	/* PATH */
	assert_null(cfg.services[1].command[1]);
	assert_int_equal(cfg.services[1].ready, CFG_READY_TCP);
	assert_int_equal(cfg.services[1].ready_timeout_ms, 10000);
	assert_int_equal(cfg.services[1].listen, CFG_LISTEN_PORT);
	/* through the seam by default, there being proxies */
	assert_true(cfg.services[1].seam);
	assert_true(cfg_service_seam(&cfg, &cfg.services[1]));
	assert_int_equal(cfg_services_direct(&cfg), 0);

	assert_int_equal(cfg.nproxies, 4);
	assert_string_equal(cfg.proxies[0].name, "provider");
	assert_int_equal(cfg.proxies[0].upstream_kind, CFG_UP_SERVICE);
	assert_string_equal(cfg.proxies[0].upstream, "provider");
	assert_int_equal(cfg.proxies[0].protocol, CFG_PROTO_HTTP);
	f = &cfg.proxies[0].faults;
	assert_near(f->rate, 0.15, 1e-12);
	assert_near(f->lost_reply, 0.4, 1e-12);
	assert_near(f->reset, 0.3, 1e-12);
	assert_near(f->duplicate, 0.3, 1e-12);
	assert_near(f->blackhole, 0.01, 1e-12);
	assert_int_equal(f->latency_min_ms, 5);
	assert_int_equal(f->latency_max_ms, 40);
	assert_int_equal(f->hold_ms, 2000);
	assert_int_equal(f->bandwidth[CFG_UP], 1048576);
	assert_int_equal(f->bandwidth[CFG_DOWN], 524288);	/* _down wins */
	assert_int_equal(f->slice[CFG_UP], 16);		/* _up wins, whatever the order */
	assert_int_equal(f->slice[CFG_DOWN], 64);
	assert_int_equal(f->slice_delay_ms, 3);
	assert_int_equal(f->close_after[CFG_UP], 0);
	assert_int_equal(f->close_after[CFG_DOWN], 2147483648LL);

	assert_int_equal(cfg.proxies[1].upstream_kind, CFG_UP_DATABASE);
	assert_int_equal(cfg.proxies[1].protocol, CFG_PROTO_AUTO);
	assert_int_equal(cfg.proxies[1].faults.hold_ms, 100);
	assert_near(cfg.proxies[1].faults.rate, 0, 0);
	assert_int_equal(cfg.proxies[2].upstream_kind, CFG_UP_UNIX);
	assert_path(fx, cfg.proxies[2].upstream, "run/api.sock");
	assert_int_equal(cfg.proxies[2].protocol, CFG_PROTO_TCP);
	assert_int_equal(cfg.proxies[3].upstream_kind, CFG_UP_HOSTPORT);
	assert_string_equal(cfg.proxies[3].upstream, "api.example.com:443");
	assert_int_equal(cfg.proxies[3].faults.latency_min_ms, 7);
	assert_int_equal(cfg.proxies[3].faults.latency_max_ms, 7);
	assert_true(cfg.proxies[3].faults.latency_real);
	assert_false(cfg.proxies[0].faults.latency_real);	/* the default */
	/* the HTTP API faults, and their defaults */
	f = &cfg.proxies[3].faults;
	assert_near(f->status, 0.2, 1e-12);
	assert_near(f->stream_cut, 0.3, 1e-12);
	assert_near(f->stream_stall, 0.1, 1e-12);
	assert_int_equal(f->nstatuses, 2);
	assert_int_equal(f->statuses[0], 429);
	assert_int_equal(f->statuses[1], 529);
	assert_int_equal(f->retry_after_ms, 1500);
	assert_int_equal(f->cut_after_min, 2);
	assert_int_equal(f->cut_after_max, 6);
	assert_int_equal(f->stall_after_min, 3);
	assert_int_equal(f->stall_after_max, 3);
	assert_int_equal(f->stall_min_ms, 200);
	assert_int_equal(f->stall_max_ms, 2000);
	f = &cfg.proxies[1].faults;
	assert_int_equal(f->nstatuses, 0);	/* 429, 500, 529 */
	assert_int_equal(f->retry_after_ms, 1000);
	assert_int_equal(f->cut_after_min, 1);
	assert_int_equal(f->cut_after_max, 5);
	assert_int_equal(f->stall_after_min, 1);
	assert_int_equal(f->stall_after_max, 5);
	assert_int_equal(f->stall_min_ms, 1000);
	assert_int_equal(f->stall_max_ms, 3000);

	assert_path(fx, cfg.setup[0], "fixtures");
	assert_string_equal(cfg.setup[1], "--small");
	assert_null(cfg.setup[2]);
	assert_int_equal(cfg.setup_timeout_ms, 45000);
	assert_path(fx, cfg.turn_command[0], "refund_turn");
	assert_null(cfg.turn_command[1]);
	assert_int_equal(cfg.turn_timeout_ms, 5000);

	assert_int_equal(cfg.ninvariants, 2);
	assert_string_equal(cfg.invariants[0].name,
	    "at most one provider refund per dispute");
	assert_string_equal(cfg.invariants[0].sql,
	    "SELECT dispute_id FROM provider_refunds\n"
	    "GROUP BY dispute_id HAVING count(*) > 1\n");
	assert_int_equal(cfg.invariants[0].line, 64);
	assert_string_equal(cfg.invariants[1].name, "balances add up");
	assert_string_equal(cfg.invariants[1].sql, "SELECT 1 WHERE false");
	assert_int_equal(cfg.invariants[1].line, 68);
	assert_int_equal(cfg.invariant_timeout_ms, 1500);

	assert_true(cfg.guard_percent);
	assert_int_equal(cfg.guard_min_ok, 50);
	assert_int_equal(cfg_guard_floor(&cfg), 18);	/* 50% of 12 x 3 */

	assert_true(cfg.tickets.enabled);
	assert_string_equal(cfg.tickets.sink, "github");
	assert_string_equal(cfg.tickets.url, "https://api.github.com");
	assert_string_equal(cfg.tickets.repo, "acme/refunds");
	assert_string_equal(cfg.tickets.project, "ACME");
	assert_string_equal(cfg.tickets.token_env, "GH_TOKEN");
	assert_string_equal(cfg.tickets.user_env, "GH_USER");
	assert_string_equal(cfg.tickets.issue_type, "Defect");
	assert_string_equal(cfg.tickets.labels[0], "soak");
	assert_string_equal(cfg.tickets.labels[1], "concurrency");
	assert_null(cfg.tickets.labels[2]);
	assert_true(cfg.tickets.infra);
	assert_false(cfg.tickets.insecure_http);
	cfg_free(&cfg);
	assert_null(cfg.name);		/* cfg_free leaves a zeroed struct */
	cfg_free(&cfg);
	cfg_free(NULL);
}

static void
test_defaults(void **state)
{
	struct cfg	cfg;
	char		err[ERR_LEN] = "";

	(void)state;
	if (cfg_load_text("soak.yaml", minimal_yaml, strlen(minimal_yaml),
	    &cfg, err) == -1)
		fail_msg("%s", err);
	assert_string_equal(cfg.name, "tiny");
	assert_int_equal(cfg.seeds.first, 0);
	assert_int_equal(cfg.seeds.last, 199);
	assert_int_equal(cfg.turns, 8);
	assert_int_equal(cfg.rounds, 1);
	assert_int_equal(cfg.seed_timeout_ms, 60000);
	assert_int_equal(cfg.retries, 2);
	assert_true(cfg.confirm);
	assert_null(cfg.db_url);
	assert_null(cfg.db_schema);
	assert_int_equal(cfg.db_reset, CFG_RESET_RECREATE);
	assert_int_equal(cfg.nservices, 0);
	assert_null(cfg.services);
	assert_int_equal(cfg.nproxies, 0);
	assert_null(cfg.setup);
	assert_int_equal(cfg.setup_timeout_ms, 30000);
	assert_string_equal(cfg.turn_command[0], "turn");	/* bare: PATH */
	assert_int_equal(cfg.turn_timeout_ms, 30000);
	assert_int_equal(cfg.invariant_timeout_ms, 10000);
	assert_int_equal(cfg.guard_min_ok, 0);
	assert_false(cfg.guard_percent);
	assert_int_equal(cfg_guard_floor(&cfg), 0);
	assert_false(cfg.guard_set);
	assert_false(cfg_guard_allows_idle_round(&cfg));
	assert_int_equal(cfg.db_proxy, -1);
	assert_false(cfg.db_proxy_named);
	assert_false(cfg.tickets.enabled);
	assert_string_equal(cfg.tickets.sink, "file");
	assert_false(cfg.tickets.minimize);
	assert_int_equal(cfg.tickets.minimize_budget_ms, CFG_MINIMIZE_BUDGET_MS);
	assert_string_equal(cfg.tickets.issue_type, "Bug");
	assert_null(cfg.tickets.labels);
	assert_false(cfg.tickets.infra);
	assert_false(cfg.tickets.insecure_http);
	cfg_free(&cfg);
}

/* Sections written as "key:" with nothing take their defaults. */
static void
test_null_sections(void **state)
{
	static const char yaml[] =
	    "name: tiny\nseeds: 5\ndatabase:\nservices:\nproxies: ~\nsetup:\n"
	    "guard:\ntickets:\n"
	    "turn:\n  command: [\"./a b\", \"\"]\n"
	    "invariants:\n  - {name: x, sql: 'SELECT 1'}\n";
	struct cfg	cfg;
	char		err[ERR_LEN] = "", cwd[PATH_MAX], *want;

	(void)state;
	if (cfg_load_text("soak.yaml", yaml, strlen(yaml), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_non_null(realpath(".", cwd));
	assert_string_equal(cfg.dir, cwd);
	assert_int_equal(cfg.seeds.first, 0);
	assert_int_equal(cfg.seeds.last, 4);
	assert_int_equal(cfg.nservices, 0);
	assert_int_equal(cfg.nproxies, 0);
	assert_null(cfg.setup);
	want = xasprintf("%s/a b", cwd);
	assert_string_equal(cfg.turn_command[0], want);
	free(want);
	assert_string_equal(cfg.turn_command[1], "");
	assert_true(cfg.tickets.enabled);
	assert_string_equal(cfg.tickets.sink, "file");
	cfg_free(&cfg);
}

static void
cfg_equal(const struct cfg *a, const struct cfg *b)
{
	size_t	i, j;

	assert_string_equal(a->path, b->path);
	assert_string_equal(a->dir, b->dir);
	assert_int_equal(a->text_len, b->text_len);
	assert_memory_equal(a->text, b->text, a->text_len);
	assert_string_equal(a->name, b->name);
	assert_memory_equal(&a->seeds, &b->seeds, sizeof(a->seeds));
	assert_int_equal(a->turns, b->turns);
	assert_int_equal(a->rounds, b->rounds);
	assert_int_equal(a->seed_timeout_ms, b->seed_timeout_ms);
	assert_int_equal(a->retries, b->retries);
	assert_string_equal(a->db_url, b->db_url);
	assert_string_equal(a->db_schema, b->db_schema);
	assert_int_equal(a->db_reset, b->db_reset);
	assert_int_equal(a->nservices, b->nservices);
	for (i = 0; i < a->nservices; i++) {
		assert_string_equal(a->services[i].name, b->services[i].name);
		for (j = 0; a->services[i].command[j]; j++)
			assert_string_equal(a->services[i].command[j],
			    b->services[i].command[j]);
		assert_null(b->services[i].command[j]);
		assert_int_equal(a->services[i].ready, b->services[i].ready);
		assert_int_equal(a->services[i].ready_timeout_ms,
		    b->services[i].ready_timeout_ms);
		assert_int_equal(a->services[i].listen, b->services[i].listen);
		assert_int_equal(a->services[i].seam, b->services[i].seam);
	}
	assert_int_equal(a->nproxies, b->nproxies);
	for (i = 0; i < a->nproxies; i++) {
		assert_string_equal(a->proxies[i].name, b->proxies[i].name);
		assert_string_equal(a->proxies[i].upstream, b->proxies[i].upstream);
		assert_int_equal(a->proxies[i].upstream_kind,
		    b->proxies[i].upstream_kind);
		assert_int_equal(a->proxies[i].protocol, b->proxies[i].protocol);
		assert_memory_equal(&a->proxies[i].faults, &b->proxies[i].faults,
		    sizeof(a->proxies[i].faults));
	}
	for (j = 0; a->setup[j]; j++)
		assert_string_equal(a->setup[j], b->setup[j]);
	for (j = 0; a->turn_command[j]; j++)
		assert_string_equal(a->turn_command[j], b->turn_command[j]);
	assert_int_equal(a->setup_timeout_ms, b->setup_timeout_ms);
	assert_int_equal(a->turn_timeout_ms, b->turn_timeout_ms);
	assert_int_equal(a->ninvariants, b->ninvariants);
	for (i = 0; i < a->ninvariants; i++) {
		assert_string_equal(a->invariants[i].name, b->invariants[i].name);
		assert_string_equal(a->invariants[i].sql, b->invariants[i].sql);
		assert_int_equal(a->invariants[i].line, b->invariants[i].line);
	}
	assert_int_equal(a->invariant_timeout_ms, b->invariant_timeout_ms);
	assert_int_equal(a->guard_min_ok, b->guard_min_ok);
	assert_int_equal(a->guard_percent, b->guard_percent);
	assert_int_equal(a->guard_set, b->guard_set);
	assert_int_equal(a->db_proxy, b->db_proxy);
	assert_int_equal(a->db_proxy_named, b->db_proxy_named);
	assert_string_equal(a->tickets.sink, b->tickets.sink);
	assert_string_equal(a->tickets.repo, b->tickets.repo);
	assert_string_equal(a->tickets.token_env, b->tickets.token_env);
	for (j = 0; a->tickets.labels[j]; j++)
		assert_string_equal(a->tickets.labels[j], b->tickets.labels[j]);
	assert_int_equal(a->tickets.infra, b->tickets.infra);
	assert_int_equal(a->tickets.enabled, b->tickets.enabled);
}

/* What a worker does with the shipped text must equal the coordinator's load. */
static void
test_text_equals_file(void **state)
{
	struct fixture	*fx = *state;
	struct cfg	 a, b;
	char		 err[ERR_LEN] = "";

	if (cfg_load_file(fx->yaml, &a, err) == -1)
		fail_msg("%s", err);
	if (cfg_load_text(a.path, a.text, a.text_len, &b, err) == -1)
		fail_msg("%s", err);
	cfg_equal(&a, &b);
	cfg_free(&b);
	cfg_free(&a);
}

/* A relative path through "..": the folder still comes out absolute and real. */
static void
test_relative_path(void **state)
{
	struct fixture	*fx = *state;
	struct cfg	 cfg;
	char		 err[ERR_LEN] = "", cwd[PATH_MAX], *sub, *rel;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	sub = path_join(fx->dir, "sub");
	assert_int_equal(mkdir_p(sub, 0755, err), 0);
	assert_int_equal(chdir(sub), 0);
	rel = xstrdup("../sub/../soak.yaml");
	if (cfg_load_file(rel, &cfg, err) == -1)
		fail_msg("%s", err);
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(cfg.path, rel);
	assert_string_equal(cfg.dir, fx->real);
	assert_path(fx, cfg.db_schema, "schema.sql");
	cfg_free(&cfg);
	free(rel);
	free(sub);
}

static void
test_missing_file(void **state)
{
	struct cfg	cfg;
	char		err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(cfg_load_file("/nonexistent/soak.yaml", &cfg, err), -1);
	assert_string_equal(err,
	    "cannot open \"/nonexistent/soak.yaml\": No such file or directory");
	assert_null(cfg.name);
}

/* Bad inputs and their exact messages. */
struct bad {
	const char	*yaml;
	const char	*want;
};

#define INV	"invariants:\n  - name: i\n    sql: SELECT 1\n"
#define TURN	"turn:\n  command: t\n"
#define BASE	"name: n\n" TURN INV		/* lines 1..6 */

static const struct bad bads[] = {
	/* unknown keys, top level and nested */
	/* ... a typo near one key is told which; else every key is listed */
	{ BASE "tunrs: 8\n",
	  "soak.yaml:7:1: tunrs: unknown key, did you mean turns?" },
	{ BASE "colour: 8\n",
	  "soak.yaml:7:1: colour: unknown key (expected name, seeds, turns, "
	  "rounds, seed_timeout, retries, confirm, database, services, proxies, setup, "
	  "setup_timeout, turn, invariants, invariant_timeout, guard, tickets, regressions, "
	  "regressions_explore_budget)" },
	{ "name: n\n" INV "turn:\n  command: t\n  timout: 5s\n",
	  "soak.yaml:7:3: turn.timout: unknown key, did you mean timeout?" },
	{ "name: n\n" INV "turn:\n  command: t\n  env: {}\n",
	  "soak.yaml:7:3: turn.env: unknown key (expected command, timeout)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      rates: 0.1\n",
	  "soak.yaml:11:7: proxies[0].faults.rates: unknown key, did you mean "
	  "rate?" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      jitter: 0.1\n",
	  "soak.yaml:11:7: proxies[0].faults.jitter: unknown key (expected rate, "
	  "lost_reply, reset, duplicate, blackhole, status, stream_cut, "
	  "stream_stall, latency, hold, bandwidth, bandwidth_up, bandwidth_down, "
	  "slice, slice_up, slice_down, slice_delay, close_after," },
	/* (the list runs past ERR_LEN since match joined it: cut there) */
	/* match: a POSIX extended regex, compiled at load */
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      match: '^(COMMIT'\n",
	  "soak.yaml:11:14: proxies[0].faults.match: not a POSIX extended "
	  "regex: Unmatched ( or \\(" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    protocol: pg\n",
	  "soak.yaml:10:15: proxies[0].protocol: expected auto, http, tcp or "
	  "postgres, got \"pg\"" },
	/* duplicate keys */
	{ BASE "turns: 2\nturns: 3\n",
	  "soak.yaml:8:1: turns: duplicate key (first at line 7)" },
	/* wrong types */
	{ BASE "turns: eight\n",
	  "soak.yaml:7:8: turns: expected an integer, got \"eight\"" },
	{ BASE "turns: [1]\n",
	  "soak.yaml:7:8: turns: expected an integer, got a list" },
	{ BASE "turns: 0\n",
	  "soak.yaml:7:8: turns: 0 is out of range (1..1024)" },
	{ BASE "rounds: 10001\n",
	  "soak.yaml:7:9: rounds: 10001 is out of range (1..10000)" },
	{ BASE "retries: -1\n",
	  "soak.yaml:7:10: retries: -1 is out of range (0..10)" },
	{ "name: [a, b]\n" TURN INV,
	  "soak.yaml:1:7: name: expected a string, got a list" },
	{ BASE "database: postgres://x\n",
	  "soak.yaml:7:11: database: expected a mapping, got \"postgres://x\"" },
	{ BASE "database:\n  reset: drop\n",
	  "soak.yaml:8:10: database.reset: expected recreate or truncate, "
	  "got \"drop\"" },
	{ BASE "confirm: twice\n",
	  "soak.yaml:7:10: confirm: expected true or false, got \"twice\"" },
	{ BASE "tickets:\n  infra: maybe\n",
	  "soak.yaml:8:10: tickets.infra: expected true or false, got \"maybe\"" },
	{ BASE "tickets:\n  sink: email\n",
	  "soak.yaml:8:9: tickets.sink: expected file, github, gitlab, jira or "
	  "webhook, got \"email\"" },
	{ BASE "tickets:\n  sink: github\n",
	  "soak.yaml:8:3: tickets.repo: required key is missing (sink github "
	  "needs it)" },
	{ BASE "tickets:\n  insecure_http: maybe\n",
	  "soak.yaml:8:18: tickets.insecure_http: expected true or false, got "
	  "\"maybe\"" },
	{ BASE "tickets:\n  insecure: true\n",
	  "soak.yaml:8:3: tickets.insecure: unknown key (expected sink, url, "
	  "repo, project, token_env, user_env, issue_type, labels, infra, "
	  "insecure_http, minimize, minimize_budget)" },
	{ BASE "tickets:\n  minimize: yes please\n",
	  "soak.yaml:8:13: tickets.minimize: expected true or false, got "
	  "\"yes please\"" },
	{ BASE "tickets:\n  minimize: true\n  minimize_budget: 500ms\n",
	  "soak.yaml:9:20: tickets.minimize_budget: must be at least 1000ms" },
	/* a token to a url that is not https:// */
	{ BASE "tickets:\n  sink: webhook\n  url: http://hooks.local/x\n"
	  "  token_env: HOOK_TOKEN\n",
	  "soak.yaml:9:8: tickets.url: not https://: the webhook token "
	  "(HOOK_TOKEN) would travel in clear text; use https://, or set "
	  "tickets.insecure_http: true" },
	{ BASE "tickets:\n  sink: github\n  repo: a/b\n  token_env: GH\n"
	  "  url: HTTP://ghe.local/api/v3\n  insecure_http: false\n",
	  "soak.yaml:11:8: tickets.url: not https://: the github token (GH) "
	  "would travel in clear text; use https://, or set "
	  "tickets.insecure_http: true" },
	{ BASE "tickets:\n  sink: jira\n  project: P\n  token_env: J\n"
	  "  url: jira.local\n",
	  "soak.yaml:11:8: tickets.url: not https://: the jira token (J) "
	  "would travel in clear text; use https://, or set "
	  "tickets.insecure_http: true" },
	/* database.proxy: a proxy in front of the database, or none */
#define DBPX	"proxies:\n  - name: api\n    upstream: h:1\n" \
		"  - name: db\n    upstream: database\n" \
		"  - name: db2\n    upstream: database\n"	/* lines 7..13 */
	{ BASE DBPX "database:\n  proxy: dbx\n",
	  "soak.yaml:15:10: database.proxy: \"dbx\" names no proxy in front of "
	  "the database: use db or db2, or none for the database itself" },
	{ BASE DBPX "database:\n  proxy: DB\n",
	  "soak.yaml:15:10: database.proxy: \"DB\" names no proxy in front of "
	  "the database: use db or db2, or none for the database itself" },
	{ BASE DBPX "database:\n  proxy: api\n",
	  "soak.yaml:15:10: database.proxy: \"api\" is proxies[0], in front of "
	  "h:1, not of the database: use db or db2, or none for the database "
	  "itself" },
	{ BASE "services:\n  - {name: s, command: s}\nproxies:\n  - name: p\n"
	  "    upstream: service:s\ndatabase:\n  proxy: p\n",
	  "soak.yaml:13:10: database.proxy: \"p\" is proxies[0], in front of "
	  "service:s, not of the database: use none for the database itself" },
	{ BASE "database:\n  proxy: db\n",
	  "soak.yaml:8:10: database.proxy: \"db\" names no proxy, and no proxy "
	  "has upstream: database: add one, or leave the key out" },
	{ BASE "database:\n  proxy: [db]\n",
	  "soak.yaml:8:10: database.proxy: expected a proxy's name, or none, got "
	  "a list" },
	{ BASE "database:\n  proxy: ''\n",
	  "soak.yaml:8:10: database.proxy: must not be empty (a proxy's name, or "
	  "none)" },
	{ BASE "proxies:\n  - name: None\n    upstream: database\n"
	  "database:\n  proxy: none\n",
	  "soak.yaml:11:10: database.proxy: \"none\" means the database itself, "
	  "but proxies[0] is named None too: rename that proxy" },
	/* a connection string where a section belongs: its password hidden */
	{ BASE "database: postgres://u:s3cret@x/db\n",
	  "soak.yaml:7:11: database: expected a mapping, got "
	  "\"postgres://u:***@x/db\"" },
	/* durations */
	{ BASE "seed_timeout: 5\n",
	  "soak.yaml:7:15: seed_timeout: \"5\" has no unit (use ms, s or m)" },
	{ BASE "seed_timeout: 5h\n",
	  "soak.yaml:7:15: seed_timeout: \"5h\" has an unknown unit (use ms, s "
	  "or m)" },
	{ BASE "seed_timeout: 5 s\n",
	  "soak.yaml:7:15: seed_timeout: \"5 s\" has an unknown unit (use ms, s "
	  "or m)" },
	{ BASE "seed_timeout: -5s\n",
	  "soak.yaml:7:15: seed_timeout: \"-5s\" is negative (a duration is at "
	  "least 0ms)" },
	{ BASE "seed_timeout: 99999999999999999999ms\n",
	  "soak.yaml:7:15: seed_timeout: \"99999999999999999999ms\" is too large" },
	{ "name: n\n" INV "turn:\n  command: t\n  timeout: 0s\n",
	  "soak.yaml:7:12: turn.timeout: must be at least 1ms" },
	/* shares and bands */
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      rate: 0.1.5\n",
	  "soak.yaml:11:13: proxies[0].faults.rate: \"0.1.5\" is not a share "
	  "(use e.g. 0.15 or 15%)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      rate: 150%\n",
	  "soak.yaml:11:13: proxies[0].faults.rate: \"150%\" is more than 100%" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      blackhole: 1.5\n",
	  "soak.yaml:11:18: proxies[0].faults.blackhole: \"1.5\" is more than 1 "
	  "(a share is 0..1 or 0%..100%)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      lost_reply: 0.5\n      reset: 40%\n      duplicate: 0.2\n",
	  "soak.yaml:11:7: proxies[0].faults: the bands lost_reply + reset + "
	  "duplicate + status + stream_cut + stream_stall add up to 1.1; they "
	  "are shares of rate and must add up to at most 1" },
	/* the HTTP API faults (docs/faults.md "Faults of an HTTP API") */
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      status: 0.5\n      stream_cut: 40%\n      stream_stall: 0.2\n",
	  "soak.yaml:11:7: proxies[0].faults: the bands lost_reply + reset + "
	  "duplicate + status + stream_cut + stream_stall add up to 1.1; they "
	  "are shares of rate and must add up to at most 1" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    protocol: tcp\n"
	  "    faults:\n      stream_cut: 0.5\n",
	  "soak.yaml:12:7: proxies[0].faults: status, stream_cut and stream_stall "
	  "fault HTTP exchanges, and this proxy's protocol is tcp" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      statuses: [429, 200]\n",
	  "soak.yaml:11:23: proxies[0].faults.statuses[1]: 200 is out of range "
	  "(400..599)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      statuses: []\n",
	  "soak.yaml:11:17: proxies[0].faults.statuses: a list of 1 to 16 HTTP "
	  "error statuses (e.g. [429, 500, 529])" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      statuses: 429\n",
	  "soak.yaml:11:17: proxies[0].faults.statuses: expected a list, got "
	  "\"429\"" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      retry_after: 2\n",
	  "soak.yaml:11:20: proxies[0].faults.retry_after: \"2\" has no unit "
	  "(use ms, s or m)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      cut_after: 0\n",
	  "soak.yaml:11:18: proxies[0].faults.cut_after: \"0\" is not a whole "
	  "number of 1..100000" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      stall_after: 6..2\n",
	  "soak.yaml:11:20: proxies[0].faults.stall_after: \"6..2\": the minimum "
	  "is above the maximum" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      cut_after: [1, 2]\n",
	  "soak.yaml:11:18: proxies[0].faults.cut_after: expected a count of "
	  "events or a range of them (e.g. 2..6), got a list" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      stall: 5s..1s\n",
	  "soak.yaml:11:14: proxies[0].faults.stall: \"5s..1s\": the minimum is "
	  "above the maximum" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      latency: 40ms..5ms\n",
	  "soak.yaml:11:16: proxies[0].faults.latency: \"40ms..5ms\": the "
	  "minimum is above the maximum" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      latency: 1s..90m\n",
	  "soak.yaml:11:16: proxies[0].faults.latency: \"1s..90m\": the "
	  "maximum is more than 60m" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      latency: 8s\n      latency_real: sometimes\n",
	  "soak.yaml:12:21: proxies[0].faults.latency_real: expected true or "
	  "false, got \"sometimes\"" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    faults:\n"
	  "      bandwidth: 1.5M\n",
	  "soak.yaml:11:18: proxies[0].faults.bandwidth: \"1.5M\" is not a byte "
	  "count (use e.g. 65536, 512K, 1M)" },
	/* schedules */
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    schedule:\n"
	  "      mode: fifo\n",
	  "soak.yaml:11:13: proxies[0].schedule.mode: expected pct or random, "
	  "got \"fifo\"" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    schedule:\n"
	  "      depth: 17\n",
	  "soak.yaml:11:14: proxies[0].schedule.depth: 17 is out of range "
	  "(1..16)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    schedule:\n"
	  "      blocked: 0ms\n",
	  "soak.yaml:11:16: proxies[0].schedule.blocked: must be at least 1ms" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    schedule:\n"
	  "      arival: 1s\n",
	  "soak.yaml:11:7: proxies[0].schedule.arival: unknown key, did you mean "
	  "arrival?" },
	/* proxies and services */
	{ BASE "proxies:\n  - name: p\n    upstream: service:api\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"service:api\" names no service "
	  "declared under services" },
	{ BASE "proxies:\n  - name: p\n    upstream: localhost\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"localhost\" is not an upstream "
	  "(use host:port, https://HOST, unix:PATH, service:NAME, database or "
	  "model:FILE)" },
	{ BASE "proxies:\n  - name: p\n    upstream: 'model:'\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"model:\" names no model script" },
	{ BASE "proxies:\n  - name: p\n    upstream: model:no-such.yaml\n",
	  "@soak.yaml:9:15: proxies[0].upstream: \"model:no-such.yaml\": No such "
	  "file or directory (looked at %s/no-such.yaml)" },
	{ BASE "proxies:\n  - name: p\n    upstream: model:/\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"model:/\" is not a regular file" },
	{ BASE "proxies:\n  - name: p\n    upstream: https://api.x/v1\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"https://api.x/v1\": an https "
	  "upstream is https://HOST or https://HOST:PORT, with no path (the "
	  "turns' SDKs send theirs)" },
	{ BASE "proxies:\n  - name: p\n    upstream: https://api.x:0\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"https://api.x:0\" has no valid "
	  "port (1..65535)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    api_key_env: K\n",
	  "soak.yaml:10:18: proxies[0].api_key_env: a key goes to an https "
	  "upstream only (upstream: https://HOST)" },
	{ BASE "proxies:\n  - name: p\n    upstream: https://h\n"
	  "    api_key_env: sk-123\n",
	  "soak.yaml:10:18: proxies[0].api_key_env: the name of an environment "
	  "variable ([A-Za-z_][A-Za-z0-9_]*), not its value" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:1\n    tls_ca: /etc/hostname\n",
	  "soak.yaml:10:13: proxies[0].tls_ca: a CA for an upstream without TLS "
	  "(use upstream: https://HOST)" },
	{ BASE "proxies:\n  - name: p\n    upstream: https://h\n"
	  "    record: a.json\n    replay: /etc/hostname\n",
	  "soak.yaml:11:13: proxies[0].replay: a proxy records or replays, not "
	  "both" },
	{ BASE "proxies:\n  - name: p\n    upstream: https://h\n"
	  "    replay: no-such.json\n",
	  "@soak.yaml:10:13: proxies[0].replay: \"no-such.json\": No such file or "
	  "directory (looked at %s/no-such.json)" },
	{ BASE "proxies:\n  - name: p\n    upstream: h:99999\n",
	  "soak.yaml:9:15: proxies[0].upstream: \"h:99999\" has no valid port "
	  "(1..65535)" },
	{ BASE "proxies:\n  - name: my-api\n    upstream: h:1\n",
	  "soak.yaml:8:11: proxies[0].name: \"my-api\" may only hold letters, "
	  "digits and _ (it becomes part of an environment variable)" },
	{ BASE "proxies:\n  - {name: a, upstream: database}\n"
	  "  - {name: A, upstream: database}\n",
	  "soak.yaml:9:12: proxies[1].name: \"A\" is already used by proxies[0]" },
	{ BASE "services:\n  - {name: s, command: a}\n"
	  "  - {name: s, command: b}\n",
	  "soak.yaml:9:12: services[1].name: \"s\" is already used by "
	  "services[0]" },
	{ BASE "services:\n  - name: s\n",
	  "soak.yaml:8:5: services[0].command: required key is missing" },
	{ BASE "services:\n  - name: s\n    command: []\n",
	  "soak.yaml:9:14: services[0].command: the command is empty" },
	{ BASE "services:\n  - name: s\n    command: [a, {b: c}]\n",
	  "soak.yaml:9:18: services[0].command[1]: expected a string, got a "
	  "mapping" },
	{ BASE "services:\n  - name: s\n    command: a\n    listen: fd\n",
	  "soak.yaml:10:13: services[0].listen: expected port or socket, got \"fd\"" },
	{ BASE "services:\n  - name: s\n    command: a\n    seam: direct\n",
	  "soak.yaml:10:11: services[0].seam: expected true or false, got \"direct\"" },
	{ BASE "services: provider\n",
	  "soak.yaml:7:11: services: expected a list, got \"provider\"" },
	/* required keys */
	{ TURN INV,
	  "soak.yaml:1:1: name: required key is missing" },
	{ "\n# c\nname: n\n" INV,
	  "soak.yaml:3:1: turn: required key is missing" },
	{ "name: n\n" INV "turn:\n  timeout: 5s\n",
	  "soak.yaml:6:3: turn.command: required key is missing" },
	{ "name: n\n" TURN,
	  "soak.yaml:1:1: invariants: required key is missing" },
	{ "name: n\n" TURN "invariants: []\n",
	  "soak.yaml:4:13: invariants: at least one invariant is required (a "
	  "check that checks nothing always passes)" },
	{ "name: ''\n" TURN INV,
	  "soak.yaml:1:7: name: must not be empty" },
	/* invariants */
	{ BASE "  - name: i\n    sql: SELECT 2\n",
	  "soak.yaml:7:11: invariants[1].name: \"i\" is already used by "
	  "invariants[0]" },
	{ "name: n\n" TURN "invariants:\n  - name: i\n    sql: \"  \"\n",
	  "soak.yaml:6:10: invariants[0].sql: must not be empty" },
	{ "name: n\n" TURN "invariants:\n  - sql: x\n",
	  "soak.yaml:5:5: invariants[0].name: required key is missing" },
	/* seeds and guard */
	{ BASE "seeds: 5..3\n",
	  "soak.yaml:7:8: seeds: bad seed range \"5..3\": 5 is after 3" },
	{ BASE "seeds: abc\n",
	  "soak.yaml:7:8: seeds: bad seed range \"abc\" (want A..B or a count N)" },
	{ BASE "guard:\n  min_ok_turns: 101%\n",
	  "soak.yaml:8:17: guard.min_ok_turns: \"101%\" is out of range "
	  "(0%..100%)" },
	{ BASE "guard:\n  min_ok_turns: 9\n",
	  "soak.yaml:8:17: guard.min_ok_turns: 9 is more than the 8 turns of a "
	  "seed (turns x rounds)" },
	{ BASE "guard:\n  min_ok_turns: half\n",
	  "soak.yaml:8:17: guard.min_ok_turns: expected an integer, got \"half\"" },
	/* schema */
	{ BASE "database:\n  schema: no/such.sql\n",
	  "@soak.yaml:8:11: database.schema: \"no/such.sql\": No such file or "
	  "directory (looked at %s/no/such.sql)" },
	/* YAML itself: what the user did, where it shows (not libyaml's words) */
	{ "name: n\nturns: [1, 2\n",
	  "soak.yaml:2:8: YAML: this \"[\" is never closed with \"]\" (or an "
	  "item in it lacks its \",\")" },
	{ "name: n\nturn: {command: x\n",
	  "soak.yaml:2:7: YAML: this \"{\" is never closed with \"}\" (or an "
	  "item in it lacks its \",\")" },
	{ "name: n\n  bad: indent\n",
	  "soak.yaml:2:3: YAML: this key is indented deeper than the key above it" },
	{ "name: a: b\n",
	  "soak.yaml:1:8: YAML: a second \": \" on this line: quote a value that "
	  "holds \": \" (key: \"a: b\")" },
	{ "name: n\nturn:\n\tcommand: [x]\n",
	  "soak.yaml:3:1: YAML: a tab in the indentation: YAML indents with "
	  "spaces only" },
	{ "name: n\nturn:\n  command: [x]\n \ttimeout: 5s\n",
	  "soak.yaml:4:2: YAML: a tab in the indentation: YAML indents with "
	  "spaces only" },
	{ "name: n\ninvariants:\n  - name: a\n    sql: |\n\tSELECT 1\n",
	  "soak.yaml:5:1: YAML: a tab in the indentation: YAML indents with "
	  "spaces only" },
	{ "name: n\nturn:\n  command: [x]\n   timeout: 5s\n",
	  "soak.yaml:4:4: YAML: this line is indented differently from the keys "
	  "above it" },
	{ "name: n\n- a\n",
	  "soak.yaml:2:1: YAML: a list item (\"- \") where a key was expected: a "
	  "list goes under its key, indented" },
	{ "name: n\nsetup: - a\n",
	  "soak.yaml:2:8: YAML: a list item (\"- \") cannot follow a key on its "
	  "line: start the list on the next line, indented" },
	{ "name: n\ninvariants:\n  - name: a\n   sql: b\n",
	  "soak.yaml:4:4: YAML: this line is indented differently from the list "
	  "items above it" },
	{ "name: \"abc\nturns: 1\n",
	  "soak.yaml:1:7: YAML: this quoted value is never closed" },
	{ "name: n\nturns\nrounds: 1\n",
	  "soak.yaml:2:1: YAML: this line has no \":\" after its key (a value "
	  "that goes on over lines needs quotes)" },
	{ "name: @n\n",
	  "soak.yaml:1:7: YAML: \"@\" cannot start an unquoted value (YAML "
	  "reserves it): put the value in quotes" },
	{ "name: \"a\\qb\"\n",
	  "soak.yaml:1:9: YAML: an unknown escape in a double-quoted value: write "
	  "\\\\ for a backslash, or use single quotes" },
	{ "",
	  "soak.yaml:1:1: config: the file is empty (it needs at least name, "
	  "turn and invariants)" },
	{ "- a\n- b\n",
	  "soak.yaml:1:1: config: expected a mapping of keys (name, turn, "
	  "invariants, ...), got a list" },
	{ BASE "---\nname: m\n",
	  "soak.yaml:7:1: YAML: only one document is allowed" },
	{ "name: n\nturns: \"ab\xff\"\n",
	  "soak.yaml:2:11: YAML: bytes that are not UTF-8 text: save the file as "
	  "UTF-8" },
	{ "name: n\x01\n",
	  "soak.yaml:1:8: YAML: a control character: only tabs and line breaks "
	  "may stand in the text" },
	{ "name: *nope\n",
	  "soak.yaml:1:7: YAML: \"*\" starts a YAML alias: put a value that "
	  "starts with \"*\" in quotes" },
	/* aliases: refused where they stand, before anything walks them */
	{ "name: &n x\n" TURN INV "rounds: *n\n",
	  "soak.yaml:7:9: YAML: an alias (*n): soak does not expand aliases (a "
	  "few nested ones make a small file gigabytes); write the value out, or "
	  "quote a value that starts with \"*\"" },
};

static void
test_errors(void **state)
{
	struct cfg	 cfg;
	char		 err[ERR_LEN], cwd[PATH_MAX], *want;
	size_t		 i, failures = 0;

	(void)state;
	assert_non_null(realpath(".", cwd));
	for (i = 0; i < nitems(bads); i++) {
		/* A leading '@' marks a message that embeds the folder. */
		if (bads[i].want[0] == '@')
			want = xasprintf(bads[i].want + 1, cwd);
		else
			want = xstrdup(bads[i].want);
		memset(err, 0, sizeof(err));
		if (cfg_load_text("soak.yaml", bads[i].yaml, strlen(bads[i].yaml),
		    &cfg, err) != -1) {
			print_error("case %zu: loaded, wanted: %s\n", i, want);
			cfg_free(&cfg);
			failures++;
		} else if (strcmp(err, want) != 0) {
			print_error("case %zu:\n  got:  %s\n  want: %s\n", i, err,
			    want);
			failures++;
		} else
			assert_null(cfg.name);	/* nothing half-loaded */
		free(want);
	}
	assert_int_equal(failures, 0);
}

/* What the https rule lets through: a token over https, or over http when
 * insecure_http says so; no token; the file sink. */
static void
test_tickets_http(void **state)
{
	static const char *const ok[] = {
		BASE "tickets:\n  sink: webhook\n  url: https://h/x\n"
		"  token_env: T\n",
		BASE "tickets:\n  sink: webhook\n  url: http://127.0.0.1:9/x\n"
		"  token_env: T\n  insecure_http: true\n",
		BASE "tickets:\n  sink: webhook\n  url: http://127.0.0.1:9/x\n",
		BASE "tickets:\n  sink: github\n  repo: a/b\n  token_env: T\n",
		BASE "tickets:\n  sink: file\n  url: shared/tickets\n"
		"  token_env: T\n",
	};
	struct cfg	cfg;
	char		err[ERR_LEN];
	size_t		i;

	(void)state;
	for (i = 0; i < nitems(ok); i++) {
		if (cfg_load_text("soak.yaml", ok[i], strlen(ok[i]), &cfg,
		    err) == -1)
			fail_msg("case %zu: %s", i, err);
		assert_int_equal(cfg.tickets.insecure_http, i == 1);
		cfg_free(&cfg);
	}
}

/*
 * Marks and commands for the messages after the load: every key's value,
 * every list item; each command with whether it was one string; a place
 * in an invariant's SQL back to the file's line and column.
 */
static void
test_marks(void **state)
{
	static const char y[] =
	    "name: m\n"				/* 1 */
	    "setup: ./make fixtures\n"			/* 2 */
	    "services:\n"				/* 3 */
	    "  - name: api\n"				/* 4 */
	    "    command: [api, --port]\n"		/* 5 */
	    "turn:\n"					/* 6 */
	    "  command:\n"				/* 7 */
	    "    - ./t\n"				/* 8 */
	    "invariants:\n"				/* 9 */
	    "  - name: a\n"				/* 10 */
	    "    sql: SELECT x FROM t\n"		/* 11 */
	    "  - name: b\n"				/* 12 */
	    "    sql: |\n"				/* 13 */
	    "      SELECT r.id\n"			/* 14 */
	    "\n"					/* 15 */
	    "        FROM r\n"				/* 16 */
	    "  - name: c\n"				/* 17 */
	    "    sql: \"SELECT 1\"\n";			/* 18 */
	const struct cfg_mark	*m;
	struct cfg		 cfg;
	char			 err[ERR_LEN];
	int			 line, col;

	(void)state;
	if (cfg_load_text("soak.yaml", y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_non_null(m = cfg_mark_find(&cfg, "turn.command"));
	assert_int_equal(m->line, 8);		/* the value: the list */
	assert_int_equal(m->col, 5);
	assert_non_null(m = cfg_mark_find(&cfg, "services[0].command"));
	assert_int_equal(m->line, 5);
	assert_int_equal(m->col, 14);
	assert_non_null(m = cfg_mark_find(&cfg, "invariants[1]"));
	assert_int_equal(m->line, 12);
	assert_int_equal(m->col, 5);
	assert_null(cfg_mark_find(&cfg, "database"));
	/* Commands in the order services, setup, turn. */
	assert_int_equal(cfg.ncommands, 3);
	assert_string_equal(cfg.commands[0].key, "services[0].command");
	assert_false(cfg.commands[0].one_string);
	assert_string_equal(cfg.commands[1].key, "setup");
	assert_true(cfg.commands[1].one_string);
	assert_ptr_equal(cfg.commands[1].argv, cfg.setup);
	assert_string_equal(cfg.commands[2].key, "turn.command");
	assert_ptr_equal(cfg.commands[2].argv, cfg.turn_command);
	/* A plain one-line value: the column of the character. */
	cfg_sql_where(&cfg, 0, 8, &line, &col);		/* the x */
	assert_int_equal(line, 11);
	assert_int_equal(col, 17);
	/* A literal block: line for line, past its indentation. */
	cfg_sql_where(&cfg, 1, 8, &line, &col);		/* r.id */
	assert_int_equal(line, 14);
	assert_int_equal(col, 14);
	cfg_sql_where(&cfg, 1, 21, &line, &col);	/* r, two lines on */
	assert_int_equal(line, 16);
	assert_int_equal(col, 14);
	/* A quoted value: the value's own mark. */
	cfg_sql_where(&cfg, 2, 8, &line, &col);
	assert_int_equal(line, 18);
	assert_int_equal(col, 10);
	cfg_sql_where(&cfg, 3, 1, &line, &col);
	assert_int_equal(line, 0);
	cfg_free(&cfg);
}

/*
 * services[].seam (docs/turns.md "What a service gets"): through the seam
 * by default when there is a proxy; seam: false keeps one direct; without
 * a proxy there is no seam.
 */
static void
test_seam(void **state)
{
	struct cfg	 cfg;
	char		 err[ERR_LEN], *y;

	(void)state;
	y = xasprintf("%sservices:\n  - name: a\n    command: a\n"
	    "  - name: b\n    command: b\n    seam: false\n%s", BASE, DBPX);
	if (cfg_load_text("soak.yaml", y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_true(cfg.services[0].seam);
	assert_true(cfg_service_seam(&cfg, &cfg.services[0]));
	assert_false(cfg.services[1].seam);
	assert_false(cfg_service_seam(&cfg, &cfg.services[1]));
	assert_int_equal(cfg_services_direct(&cfg), 1);
	cfg_free(&cfg);
	free(y);
	y = xasprintf("%sservices:\n  - name: a\n    command: a\n", BASE);
	if (cfg_load_text("soak.yaml", y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_true(cfg.services[0].seam);
	assert_false(cfg_service_seam(&cfg, &cfg.services[0]));	/* no proxy */
	assert_int_equal(cfg_services_direct(&cfg), 1);
	cfg_free(&cfg);
	free(y);
}

/*
 * Which proxy a turn's database defaults go through: the first in front of
 * the database, the one database.proxy names, or none.
 */
static void
test_db_proxy(void **state)
{
	static const struct { const char *key; int want; bool named; } cases[] = {
		{ "", 1, false },		/* proxies[0] is not the database's */
		{ "  proxy: db2\n", 2, true },
		{ "  proxy: db\n", 1, true },
		{ "  proxy: none\n", -1, true },
		{ "  proxy:\n", 1, false },	/* nothing: the default */
	};
	struct cfg	 cfg;
	char		 err[ERR_LEN], *y;
	size_t		 i;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		y = xasprintf("%s%sdatabase:\n%s", BASE, DBPX, cases[i].key);
		if (cfg_load_text("soak.yaml", y, strlen(y), &cfg, err) == -1)
			fail_msg("case %zu: %s", i, err);
		assert_int_equal(cfg.db_proxy, cases[i].want);
		assert_int_equal(cfg.db_proxy_named, cases[i].named);
		cfg_free(&cfg);
		free(y);
	}
	/* Proxies, none in front of the database: the database itself. */
	y = xasprintf("%sproxies:\n  - name: api\n    upstream: h:1\n", BASE);
	if (cfg_load_text("soak.yaml", y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_int_equal(cfg.db_proxy, -1);
	cfg_free(&cfg);
	free(y);
}

/*
 * upstream: model:FILE, the stand-in: its script resolved against the
 * config's folder, framed as HTTP, and the first such proxy the one the
 * turns' OPENAI_BASE_URL and ANTHROPIC_BASE_URL name; another protocol is
 * refused.
 */
static void
test_model_upstream(void **state)
{
	struct fixture	*fx = *state;
	struct cfg	 cfg;
	char		 err[ERR_LEN], *y, *path;

	put(fx->dir, "agent.model.yaml", "patterns:\n  - replies: [{text: hi}]\n");
	y = xasprintf("%sproxies:\n  - name: api\n    upstream: h:1\n"
	    "  - name: llm\n    upstream: model:agent.model.yaml\n"
	    "  - name: llm2\n    upstream: model:agent.model.yaml\n"
	    "    protocol: http\n", BASE);
	path = in(fx, "soak.yaml");
	if (cfg_load_text(path, y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_int_equal(cfg.proxies[1].upstream_kind, CFG_UP_MODEL);
	assert_path(fx, cfg.proxies[1].upstream, "agent.model.yaml");
	assert_int_equal(cfg.proxies[1].protocol, CFG_PROTO_HTTP);
	assert_int_equal(cfg.model_proxy, 1);
	cfg_free(&cfg);
	free(y);
	y = xasprintf("%sproxies:\n  - name: llm\n    upstream: "
	    "model:agent.model.yaml\n    protocol: tcp\n", BASE);
	assert_int_equal(cfg_load_text(path, y, strlen(y), &cfg, err), -1);
	assert_non_null(strstr(err, ":10:15: proxies[0].protocol: a model "
	    "upstream speaks http, not tcp"));
	free(y);
	y = xasprintf("%sproxies:\n  - name: api\n    upstream: h:1\n", BASE);
	if (cfg_load_text(path, y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_int_equal(cfg.model_proxy, -1);
	cfg_free(&cfg);
	free(y);
	/* a real model API: https, its CA, the key's variable, a cassette */
	put(fx->dir, "ca.pem", "x\n");
	y = xasprintf("%sproxies:\n  - name: api\n    upstream: h:1\n"
	    "  - name: llm\n    upstream: https://api.example.com/\n"
	    "    tls_ca: ca.pem\n    api_key_env: OPENAI_KEY\n"
	    "    record: llm.json\n"
	    "  - name: six\n    upstream: https://[::1]:8443\n", BASE);
	if (cfg_load_text(path, y, strlen(y), &cfg, err) == -1)
		fail_msg("%s", err);
	assert_true(cfg.proxies[1].tls);
	assert_string_equal(cfg.proxies[1].upstream, "api.example.com:443");
	assert_string_equal(cfg.proxies[1].tls_name, "api.example.com");
	assert_path(fx, cfg.proxies[1].tls_ca, "ca.pem");
	assert_string_equal(cfg.proxies[1].api_key_env, "OPENAI_KEY");
	assert_path(fx, cfg.proxies[1].record, "llm.json");
	assert_int_equal(cfg.proxies[1].protocol, CFG_PROTO_HTTP);
	assert_int_equal(cfg.model_proxy, 1);
	assert_string_equal(cfg.proxies[2].upstream, "[::1]:8443");
	assert_string_equal(cfg.proxies[2].tls_name, "::1");
	cfg_free(&cfg);
	free(y);
	free(path);
}

/* guard absent, guard 0 and guard 0% are three things, two of them alike. */
static void
test_guard_set(void **state)
{
	static const struct { const char *guard; bool set, idle_ok; } cases[] = {
		{ "", false, false },
		{ "guard:\n", false, false },
		{ "guard:\n  min_ok_turns: 0\n", true, true },
		{ "guard:\n  min_ok_turns: 0%\n", true, true },
		{ "guard:\n  min_ok_turns: 1\n", true, false },
		{ "guard:\n  min_ok_turns: 50%\n", true, false },
	};
	struct cfg	 cfg;
	char		 err[ERR_LEN], *y;
	size_t		 i;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		y = xasprintf("%s%s", BASE, cases[i].guard);
		if (cfg_load_text("soak.yaml", y, strlen(y), &cfg, err) == -1)
			fail_msg("case %zu: %s", i, err);
		assert_int_equal(cfg.guard_set, cases[i].set);
		assert_int_equal(cfg_guard_allows_idle_round(&cfg), cases[i].idle_ok);
		cfg_free(&cfg);
		free(y);
	}
}

static void
test_guard_floor(void **state)
{
	struct cfg	cfg;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.turns = 8;
	cfg.rounds = 3;
	cfg.guard_min_ok = 5;
	assert_int_equal(cfg_guard_floor(&cfg), 5);
	cfg.guard_percent = true;
	cfg.guard_min_ok = 50;
	assert_int_equal(cfg_guard_floor(&cfg), 12);
	cfg.guard_min_ok = 51;		/* 12.24 rounds up */
	assert_int_equal(cfg_guard_floor(&cfg), 13);
	cfg.guard_min_ok = 100;
	assert_int_equal(cfg_guard_floor(&cfg), 24);
	cfg.guard_min_ok = 1;		/* 0.24 rounds up: any guard demands one */
	assert_int_equal(cfg_guard_floor(&cfg), 1);
	cfg.guard_min_ok = 0;
	assert_int_equal(cfg_guard_floor(&cfg), 0);
}

/* schedule: on with its defaults when named at all; off when not. */
static void
test_schedule(void **state)
{
	static const char yaml[] = "name: n\nturn: {command: t}\n"
	    "invariants: [{name: i, sql: x}]\nproxies:\n"
	    "  - {name: a, upstream: database, schedule: }\n"
	    "  - {name: b, upstream: database, schedule: {mode: random, depth: 1, "
	    "steps: 9, arrival: 1s, blocked: 2s}}\n"
	    "  - {name: c, upstream: database}\n";
	struct cfg	cfg;
	char		err[ERR_LEN];

	(void)state;
	assert_int_equal(cfg_load_text("soak.yaml", yaml, sizeof(yaml) - 1, &cfg,
	    err), 0);
	assert_true(cfg.proxies[0].schedule.enabled);
	assert_int_equal(cfg.proxies[0].schedule.mode, CFG_SCHED_PCT);
	assert_int_equal(cfg.proxies[0].schedule.depth, 3);
	assert_int_equal(cfg.proxies[0].schedule.steps, 200);
	assert_int_equal(cfg.proxies[0].schedule.arrival_ms, 2000);
	assert_int_equal(cfg.proxies[0].schedule.blocked_ms, 500);
	assert_true(cfg.proxies[1].schedule.enabled);
	assert_int_equal(cfg.proxies[1].schedule.mode, CFG_SCHED_RANDOM);
	assert_int_equal(cfg.proxies[1].schedule.depth, 1);
	assert_int_equal(cfg.proxies[1].schedule.steps, 9);
	assert_int_equal(cfg.proxies[1].schedule.arrival_ms, 1000);
	assert_int_equal(cfg.proxies[1].schedule.blocked_ms, 2000);
	assert_false(cfg.proxies[2].schedule.enabled);
	cfg_free(&cfg);
}

/* invariants[].when: rounds (the default) or steps, and nothing else. */
static void
test_invariant_when(void **state)
{
	static const char yaml[] = "name: n\nturn: {command: t}\n"
	    "invariants:\n  - {name: a, sql: x}\n  - {name: b, sql: x, when: rounds}\n"
	    "  - {name: c, sql: x, when: steps}\n";
	static const char bad[] = "name: n\nturn: {command: t}\n"
	    "invariants:\n  - {name: a, sql: x, when: often}\n";
	struct cfg	cfg;
	char		err[ERR_LEN];

	(void)state;
	assert_int_equal(cfg_load_text("soak.yaml", yaml, sizeof(yaml) - 1, &cfg,
	    err), 0);
	assert_false(cfg.invariants[0].steps);
	assert_false(cfg.invariants[1].steps);
	assert_true(cfg.invariants[2].steps);
	cfg_free(&cfg);
	assert_int_equal(cfg_load_text("soak.yaml", bad, sizeof(bad) - 1, &cfg,
	    err), -1);
	assert_non_null(strstr(err, "soak.yaml:4:"));
	assert_non_null(strstr(err, "invariants[0].when"));
}

/*
 * One load tells every mistake of a file, in file order, with the first
 * in err too; what rests on a section that failed is not blamed twice.
 */
static void
test_all_errors(void **state)
{
	static const char yaml[] =
	    "name: n\n"				/* 1 */
	    "turns: many\n"				/* 2 */
	    "sedes: 4\n"				/* 3 */
	    "database:\n"				/* 4 */
	    "  reset: sometimes\n"			/* 5 */
	    "  shcema: s.sql\n"			/* 6 */
	    "services:\n"				/* 7 */
	    "  - name: api\n"				/* 8: no command */
	    "proxies:\n"				/* 9 */
	    "  - {name: p, upstream: \"service:api\"}\n"	/* 10: not blamed */
	    "  - {name: q, upstream: nowhere}\n"	/* 11 */
	    "turn:\n"					/* 12 */
	    "  command: [./t]\n"			/* 13 */
	    "invariants:\n"				/* 14 */
	    "  - name: a\n"				/* 15 */
	    "    sql: select 1\n"			/* 16 */
	    "  - name: a\n"				/* 17 */
	    "    sql: ''\n"				/* 18 */
	    "guard:\n"					/* 19: turns failed: */
	    "  min_ok_turns: 999\n"			/* 20: not checked */
	    "tickets:\n"				/* 21 */
	    "  infra: maybe\n";			/* 22 */
	static const char *const want[] = {
		"soak.yaml:2:8: turns: expected an integer, got \"many\"",
		"soak.yaml:3:1: sedes: unknown key, did you mean seeds?",
		"soak.yaml:5:10: database.reset: expected recreate or truncate, "
		    "got \"sometimes\"",
		"soak.yaml:6:3: database.shcema: unknown key, did you mean schema?",
		"soak.yaml:8:5: services[0].command: required key is missing",
		"soak.yaml:11:25: proxies[1].upstream: \"nowhere\" is not an "
		    "upstream (use host:port, https://HOST, unix:PATH, service:NAME, "
		    "database or model:FILE)",
		"soak.yaml:17:11: invariants[1].name: \"a\" is already used by "
		    "invariants[0]",
		"soak.yaml:18:10: invariants[1].sql: must not be empty",
		"soak.yaml:22:10: tickets.infra: expected true or false, got "
		    "\"maybe\"",
	};
	struct cfg		cfg;
	struct cfg_errors	errs = { 0 };
	char			err[ERR_LEN], *path, *text;
	FILE			*f;
	size_t			i, len;

	(void)state;
	path = xasprintf("/tmp/test_config_all.%d", (int)getpid());
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chdir(path), 0);
	assert_non_null(f = fopen("soak.yaml", "w"));
	assert_int_equal(fwrite(yaml, 1, sizeof(yaml) - 1, f), sizeof(yaml) - 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cfg_load_file_all("soak.yaml", &cfg, err, &errs), -1);
	assert_null(cfg.name);
	for (i = 0; i < errs.n && i < nitems(want); i++)
		if (strcmp(errs.msg[i], want[i]) != 0)
			print_error("%zu:\n  got:  %s\n  want: %s\n", i,
			    errs.msg[i], want[i]);
	assert_int_equal(errs.n, nitems(want));
	assert_int_equal(errs.total, nitems(want));
	for (i = 0; i < nitems(want); i++)
		assert_string_equal(errs.msg[i], want[i]);
	assert_string_equal(err, want[0]);
	cfg_errors_free(&errs);

	/*
	 * Kept (soak check): the same messages, and what loaded stays for
	 * the checks after the loader's -- the turn command, the invariant
	 * that loaded -- with the sections that failed named.
	 */
	assert_int_equal(cfg_load_file_keep("soak.yaml", &cfg, err, &errs, true), -1);
	assert_int_equal(errs.total, nitems(want));
	assert_string_equal(cfg.name, "n");
	assert_int_equal(cfg.ncommands, 1);
	assert_string_equal(cfg.commands[0].key, "turn.command");
	assert_int_equal(cfg.ninvariants, 2);
	assert_string_equal(cfg.invariants[0].sql, "select 1");
	assert_int_equal(cfg.broken, CFG_BROKEN_SOME | CFG_BROKEN_DATABASE |
	    CFG_BROKEN_SERVICES | CFG_BROKEN_PROXIES | CFG_BROKEN_INVARIANTS);
	cfg_free(&cfg);
	cfg_errors_free(&errs);
	/* Not YAML: nothing to keep. */
	assert_non_null(f = fopen("tab.yaml", "w"));
	assert_int_equal(fputs("name: t\nturn:\n\tcommand: [x]\n", f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cfg_load_file_keep("tab.yaml", &cfg, err, &errs, true), -1);
	assert_int_equal(cfg.broken, 0);
	assert_null(cfg.name);
	cfg_free(&cfg);
	cfg_errors_free(&errs);
	unlink("tab.yaml");

	/* Past CFG_MAX_ERRS messages, the rest are counted, not kept. */
	text = xstrdup("name: n\nturn: {command: t}\ninvariants: [{name: i, sql: x}]\n"
	    "database:\n");
	for (i = 0; i < 25; i++) {
		char	*t = xasprintf("%s  k%zu: 1\n", text, i);

		free(text);
		text = t;
	}
	len = strlen(text);
	assert_non_null(f = fopen("many.yaml", "w"));
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cfg_load_file_all("many.yaml", &cfg, err, &errs), -1);
	assert_int_equal(errs.n, 20);
	assert_int_equal(errs.total, 25);
	assert_non_null(strstr(errs.msg[0], "many.yaml:5:3: database.k0: "
	    "unknown key"));
	assert_non_null(f = tmpfile());
	assert_int_equal(cfg_errors_print(&errs, f, "soak"), 25);
	rewind(f);
	{
		char	line[512];
		int	lines = 0, more = 0;

		while (fgets(line, sizeof(line), f) != NULL) {
			lines++;
			if (strstr(line, "soak: ... and 5 more error(s) not shown"))
				more = 1;
		}
		assert_int_equal(lines, 21);
		assert_true(more);
	}
	fclose(f);
	cfg_errors_free(&errs);
	free(text);
	unlink("many.yaml");
	unlink("soak.yaml");
	assert_int_equal(chdir("/"), 0);
	assert_int_equal(rmdir(path), 0);
	free(path);
}

/*
 * A billion laughs: ten levels of ten aliases each would be 10^10 values
 * to walk.  It is refused at the first alias, without walking anything.
 */
static void
test_alias_bomb(void **state)
{
	struct cfg	 cfg;
	char		 err[ERR_LEN], *text, *t;
	int		 i;

	(void)state;
	text = xstrdup("name: n\nturn: {command: t}\n"
	    "invariants: [{name: i, sql: x}]\nl0: &l0 [lol]\n");
	for (i = 1; i < 10; i++) {
		t = xasprintf("%sl%d: &l%d [*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,"
		    "*l%d,*l%d]\n", text, i, i, i - 1, i - 1, i - 1, i - 1, i - 1,
		    i - 1, i - 1, i - 1, i - 1, i - 1);
		free(text);
		text = t;
	}
	assert_int_equal(cfg_load_text("bomb.yaml", text, strlen(text), &cfg,
	    err), -1);
	assert_non_null(strstr(err, "bomb.yaml:5:10: YAML: an alias (*l0)"));
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_full, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_text_equals_file, setup_dir,
		    teardown_dir),
		cmocka_unit_test_setup_teardown(test_relative_path, setup_dir,
		    teardown_dir),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_null_sections),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_invariant_when),
		cmocka_unit_test(test_all_errors),
		cmocka_unit_test(test_alias_bomb),
		cmocka_unit_test(test_tickets_http),
		cmocka_unit_test(test_guard_floor),
		cmocka_unit_test(test_guard_set),
		cmocka_unit_test(test_db_proxy),
		cmocka_unit_test(test_seam),
		cmocka_unit_test_setup_teardown(test_model_upstream, setup_dir,
		    teardown_dir),
		cmocka_unit_test(test_marks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
