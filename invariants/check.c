/*
 * `soak check CONFIG [--db URL]`: validate the config; with --db, run the
 * invariants once against a live database — the production monitor of
 * seeds/000, from the same queries the soak runs.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "common/config.h"
#include "common/conninfo.h"
#include "common/log.h"
#include "common/soak.h"
#include "common/util.h"
#include "invariants/inv.h"
#include "isolation/iso.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak check CONFIG [--db URL] [--schema NAME] [--json]\n"
	    "\n"
	    "Validates CONFIG (every error names file:line:column and the key).\n"
	    "With --db, runs every invariant once, read-only, against that database\n"
	    "and prints the rows that break each one.\n"
	    "\n"
	    "  --db URL        a libpq connection string or postgresql:// URL\n"
	    "  --schema NAME   set search_path to NAME first\n"
	    "  --json          print the broken invariants as JSON\n"
	    "\n"
	    "Exit status: 0 valid (and, with --db, every invariant holds); 1 an\n"
	    "invariant is broken; 2 the database could not be checked; 64 usage;\n"
	    "78 config error.\n");
}

int
cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db",		required_argument, NULL, 'd' },
		{ "schema",	required_argument, NULL, 's' },
		{ "json",	no_argument,	   NULL, 'j' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cfg		 cfg = { 0 };
	struct inv_result	 ir = { 0 };
	const char		*db = NULL, *schema = NULL;
	PGconn			*conn = NULL;
	char			 err[ERR_LEN];
	int64_t			 deadline;
	bool			 expired;
	int			 ch, json = 0, rc = SOAK_EXIT_INCOMPLETE;
	size_t			 i;

	while ((ch = getopt_long(argc, argv, "d:s:jh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': db = optarg; break;
		case 's': schema = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SOAK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	if (cfg_load_file(argv[optind], &cfg, err) == -1) {
		fprintf(stderr, "soak: %s\n", err);
		return SOAK_EXIT_CONFIG;
	}
	if (db == NULL) {
		printf("%s: ok (%s: %d turns x %d rounds, %zu invariant(s), seeds %llu..%llu)\n",
		    argv[optind], cfg.name, cfg.turns, cfg.rounds, cfg.ninvariants,
		    (unsigned long long)cfg.seeds.first, (unsigned long long)cfg.seeds.last);
		cfg_free(&cfg);
		return 0;
	}
	/* A monitor that hangs is no monitor: a connection within
	 * ISO_CONNECT_MS, every invariant within its own timeout. */
	if ((conn = iso_pq_connect(db, now_ms() + ISO_CONNECT_MS, err)) == NULL) {
		/* libpq quotes a token it cannot parse: it may be the password. */
		conninfo_scrub(err, sizeof(err), db);
		fprintf(stderr, "soak check: cannot connect: %s\n", err);
		goto out;
	}
	deadline = now_ms() + ISO_CONNECT_MS +
	    (int64_t)cfg.ninvariants * cfg.invariant_timeout_ms;
	if (schema) {
		char		*id = PQescapeIdentifier(conn, schema, strlen(schema));
		char		*q = xasprintf("SET search_path = %s", id);
		PGresult	*res = iso_pq_exec(conn, q, deadline, &expired);

		PQfreemem(id);
		free(q);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			fprintf(stderr, "soak check: %s\n", expired ? "no answer from "
			    "the database" : iso_pq_msg(conn, res, err, sizeof(err)));
			PQclear(res);
			goto out;
		}
		PQclear(res);
	}
	if (inv_check(conn, &cfg, deadline, &ir, err) == -1) {
		fprintf(stderr, "soak check: %s\n", err);
		goto out;
	}
	if (json) {
		json_t	*j = inv_result_json(&ir);

		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
	} else
		for (i = 0; i < ir.n; i++) {
			const struct inv_outcome	*o = &ir.out[i];

			printf("%-6s %s", o->nrows ? "BROKEN" : "holds", o->inv->name);
			if (o->nrows)
				printf(" (%lld rows)", (long long)o->nrows);
			putchar('\n');
			for (int r = 0; r < o->nkept; r++) {
				printf("        ");
				for (int k = 0; k < o->ncols; k++) {
					const char	*v = o->cells[r * o->ncols + k];

					printf("%s%s=%s", k ? ", " : "", o->cols[k], v ? v : "NULL");
				}
				putchar('\n');
			}
		}
	rc = ir.nviolated > 0 ? 1 : 0;
out:
	inv_result_free(&ir);
	iso_pq_abandon(conn);
	cfg_free(&cfg);
	return rc;
}
