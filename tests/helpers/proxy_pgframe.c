/*
 * proxy_pgframe CONNINFO
 * One libpq session that walks every shape of the PostgreSQL protocol the
 * fault proxy frames, and prints what it got back, one line per result
 * (status, command tag, tx status after it, and an FNV-1a digest of every
 * value), a COPY aborted with CopyFail last.  Run once directly and once through the proxy: with no faults the
 * two outputs must be identical.  The table t(id int primary key, v text)
 * must exist and be empty.  Exit 0 when the script ran to its end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

static uint64_t
fnv(uint64_t h, const char *p, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static const char *
txname(PGconn *pg)
{
	switch (PQtransactionStatus(pg)) {
	case PQTRANS_IDLE:	return "I";
	case PQTRANS_INTRANS:	return "T";
	case PQTRANS_INERROR:	return "E";
	case PQTRANS_ACTIVE:	return "A";
	default:		return "?";
	}
}

/* One result: status, tag, rows, digest, SQLSTATE; then PQclear. */
static void
show(PGconn *pg, const char *what, PGresult *res)
{
	uint64_t	 h = 0xcbf29ce484222325ULL;
	const char	*st;
	int		 r, f;

	for (r = 0; r < PQntuples(res); r++)
		for (f = 0; f < PQnfields(res); f++)
			h = fnv(h, PQgetvalue(res, r, f),
			    (size_t)PQgetlength(res, r, f) + 1);
	st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	printf("%s: %s tag=%s rows=%d digest=%016llx sqlstate=%s tx=%s\n", what,
	    PQresStatus(PQresultStatus(res)), PQcmdStatus(res), PQntuples(res),
	    (unsigned long long)h, st ? st : "-", txname(pg));
	PQclear(res);
}

static int
fail(PGconn *pg, const char *what)
{
	printf("FAILED at %s: %s", what, PQerrorMessage(pg));
	PQfinish(pg);
	return 1;
}

int
main(int argc, char **argv)
{
	const char	*params[2];
	PGconn		*pg;
	PGresult	*res;
	PGnotify	*nt;
	char		*buf, row[64];
	uint64_t	 h = 0xcbf29ce484222325ULL;
	int		 i, n, syncs;

	if (argc != 2) {
		fprintf(stderr, "usage: proxy_pgframe CONNINFO\n");
		return 64;
	}
	pg = PQconnectdb(argv[1]);
	if (PQstatus(pg) != CONNECTION_OK)
		return fail(pg, "connect");
	printf("connected tx=%s\n", txname(pg));

	/* simple, and extended with a parameter */
	show(pg, "simple", PQexec(pg, "SELECT 1 AS one, 'lit' AS two"));
	params[0] = "41";
	show(pg, "extended", PQexecParams(pg, "SELECT $1::int + 1", 1, NULL,
	    params, NULL, NULL, 0));

	/* a failing statement inside a transaction */
	show(pg, "begin", PQexec(pg, "BEGIN"));
	show(pg, "insert", PQexec(pg, "INSERT INTO t VALUES (1, 'a')"));
	show(pg, "fail", PQexec(pg, "SELECT 1/0"));
	show(pg, "rollback", PQexec(pg, "ROLLBACK"));

	/* a named prepared statement, then a Bind-only batch */
	show(pg, "prepare", PQprepare(pg, "ins", "INSERT INTO t VALUES ($1, $2)",
	    2, NULL));
	params[0] = "2";
	params[1] = "b";
	show(pg, "exec_prepared", PQexecPrepared(pg, "ins", 2, params, NULL,
	    NULL, 0));

	/* COPY in and out: passed through */
	res = PQexec(pg, "COPY t FROM STDIN");
	if (PQresultStatus(res) != PGRES_COPY_IN)
		return fail(pg, "copy in");
	PQclear(res);
	for (i = 10; i < 1010; i++) {
		n = snprintf(row, sizeof(row), "%d\tcopied-%d\n", i, i);
		if (PQputCopyData(pg, row, n) != 1)
			return fail(pg, "copy data");
	}
	if (PQputCopyEnd(pg, NULL) != 1)
		return fail(pg, "copy end");
	show(pg, "copy_in", PQgetResult(pg));
	while ((res = PQgetResult(pg)) != NULL)
		PQclear(res);
	res = PQexec(pg, "COPY (SELECT * FROM t ORDER BY id) TO STDOUT");
	if (PQresultStatus(res) != PGRES_COPY_OUT)
		return fail(pg, "copy out");
	PQclear(res);
	n = 0;
	while ((i = PQgetCopyData(pg, &buf, 0)) > 0) {
		h = fnv(h, buf, (size_t)i);
		n++;
		PQfreemem(buf);
	}
	printf("copy_out: rows=%d digest=%016llx\n", n, (unsigned long long)h);
	show(pg, "copy_out_end", PQgetResult(pg));
	while ((res = PQgetResult(pg)) != NULL)
		PQclear(res);

	/* a large result: 2000 rows of 1000 bytes */
	show(pg, "large", PQexec(pg, "SELECT i, repeat(md5(i::text), 31) "
	    "FROM generate_series(1, 2000) i"));

	/* a notification, passed through */
	show(pg, "listen", PQexec(pg, "LISTEN soak_ch"));
	show(pg, "notify", PQexec(pg, "NOTIFY soak_ch, 'hello'"));
	PQconsumeInput(pg);
	n = 0;
	while ((nt = PQnotifies(pg)) != NULL) {
		printf("notification: %s %s\n", nt->relname, nt->extra);
		n++;
		PQfreemem(nt);
	}
	if (n != 1)
		return fail(pg, "notification");

	/* a pipeline: three batches, three Syncs in flight */
	if (PQenterPipelineMode(pg) != 1)
		return fail(pg, "pipeline mode");
	for (i = 0; i < 3; i++) {
		snprintf(row, sizeof(row), "%d", 100 + i);
		params[0] = row;
		if (PQsendQueryParams(pg, "SELECT $1::int * 2", 1, NULL,
		    params, NULL, NULL, 0) != 1 || PQpipelineSync(pg) != 1)
			return fail(pg, "pipeline send");
	}
	for (syncs = 0; syncs < 3; ) {
		if ((res = PQgetResult(pg)) == NULL)
			continue;	/* the end of one query's results */
		if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
			syncs++;
			PQclear(res);
			continue;
		}
		show(pg, "pipeline", res);
	}
	if (PQexitPipelineMode(pg) != 1)
		return fail(pg, "pipeline exit");

	show(pg, "count", PQexec(pg, "SELECT count(*) FROM t"));

	/*
	 * A COPY the client aborts (CopyFail, as PQputCopyEnd with a reason
	 * sends it): an error, none of its rows, and the session goes on.
	 */
	res = PQexec(pg, "COPY t FROM STDIN");
	if (PQresultStatus(res) != PGRES_COPY_IN)
		return fail(pg, "copy in (to fail)");
	PQclear(res);
	for (i = 2000; i < 2100; i++) {
		n = snprintf(row, sizeof(row), "%d\tcopied-%d\n", i, i);
		if (PQputCopyData(pg, row, n) != 1)
			return fail(pg, "copy data (to fail)");
	}
	if (PQputCopyEnd(pg, "the client gave up") != 1)
		return fail(pg, "copy fail");
	show(pg, "copy_fail", PQgetResult(pg));
	while ((res = PQgetResult(pg)) != NULL)
		PQclear(res);
	show(pg, "count_after_copy_fail", PQexec(pg, "SELECT count(*) FROM t"));
	printf("done\n");
	fflush(stdout);
	PQfinish(pg);
	return 0;
}
