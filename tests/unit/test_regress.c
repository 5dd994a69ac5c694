/* Regressions (common/regress.h): a folder's plans loaded by name and hash,
 * and a worker's copy refused when its hash is not the lease's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/config.h"
#include "common/regress.h"
#include "common/util.h"

static const char	plan_text[] = "{\"soak_plan\": 1, \"seed\": 7, \"turns\": 2, "
			    "\"rounds\": 1}\n";
static const char	vacuous[] = "{\"soak_plan\": 1, \"seed\": 7, \"turns\": 2, "
			    "\"rounds\": 1, \"runs\": []}\n";

static void
test_load_and_open(void **state)
{
	struct cfg		 cfg;
	struct regress_set	 rs;
	struct plan		 p;
	char			 dir[] = "/tmp/soak-test-regress-XXXXXX", err[ERR_LEN];
	char			 hash[REGRESS_HASH_LEN + 1], *path;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	cfg.path = "/x/soak.yaml";
	cfg.turns = 4;
	cfg.rounds = 1;
	cfg.regressions = dir;
	path = xasprintf("%s/lost.json", dir);
	assert_int_equal(write_file(path, plan_text, strlen(plan_text), err), 0);
	assert_int_equal(regress_hash(plan_text, strlen(plan_text), hash, err), 0);
	assert_int_equal(regress_load(&cfg, &rs, NULL, err), 0);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.v[0].name, "lost");
	assert_string_equal(rs.v[0].hash, hash);
	assert_int_equal(rs.v[0].seed, 7);
	assert_non_null(regress_find(&rs, "lost", hash));
	regress_set_free(&rs);
	/* The worker's side: by name, and only with the lease's hash. */
	assert_int_equal(regress_open(&cfg, "lost", hash, &p, err), 0);
	assert_int_equal(p.seed, 7);
	plan_free(&p);
	assert_int_equal(regress_open(&cfg, "lost", "0000000000000000000000000000"
	    "000000000000000000000000000000000000", &p, err), -1);
	assert_non_null(strstr(err, "is not the coordinator's"));
	assert_int_equal(regress_open(&cfg, "../lost", hash, &p, err), -1);
	assert_int_equal(regress_open(&cfg, "gone", hash, &p, err), -1);
	assert_non_null(strstr(err, "cannot read it"));
	/* A plan the config cannot run is a load error naming the file. */
	cfg.turns = 1;
	assert_int_equal(regress_load(&cfg, &rs, NULL, err), -1);
	assert_non_null(strstr(err, "lost.json"));
	assert_non_null(strstr(err, "cannot run this regression"));
	regress_set_free(&rs);
	/* A plan that runs no turn tests nothing: never loaded, never a pass
	 * (it was once run, ran nothing and passed). */
	cfg.turns = 4;
	assert_int_equal(write_file(path, vacuous, strlen(vacuous), err), 0);
	assert_int_equal(regress_hash(vacuous, strlen(vacuous), hash, err), 0);
	assert_int_equal(regress_load(&cfg, &rs, NULL, err), -1);
	assert_non_null(strstr(err, "lost.json"));
	assert_non_null(strstr(err, "runs: an empty list runs no turn"));
	assert_int_equal(rs.n, 0);
	regress_set_free(&rs);
	assert_int_equal(regress_open(&cfg, "lost", hash, &p, err), -1);
	assert_non_null(strstr(err, "runs: an empty list runs no turn"));
	unlink(path);
	free(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
