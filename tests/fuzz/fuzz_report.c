/*
 * report.html's reading of a run folder (coordinator/report_html.h
 * report_html_write): report.json, journal.jsonl and each failing seed's
 * trace.jsonl, result.json and timing.jsonl, and an earlier run's
 * report.json for "since last time" — files a worker's detail, a turn or
 * anyone who can write the output folder shaped.  Input: the files'
 * contents separated by NUL bytes, in that order:
 *
 *	report.json \0 journal.jsonl \0 trace.jsonl \0 result.json \0
 *	timing.jsonl \0 previous report.json
 *
 * The seed files go into failures/<seed>/ of the first 4 results of
 * report.json whose verdict is not "pass" (the page draws each
 * fingerprint's smallest seed).  The folder is made afresh under /dev/shm
 * for each input.  Checked:
 *  - a refusal says why, and leaves no report.html;
 *  - a page written is valid UTF-8 with no control byte but \n and \t, and
 *    is one page: exactly one <script> (its own), one <style>, one
 *    </html> at its end — whatever the files held, nothing of them became
 *    markup.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "coordinator/report_html.h"
#include "tests/fuzz/fuzz.h"

enum { F_REPORT, F_JOURNAL, F_TRACE, F_RESULT, F_TIMING, F_PREVIOUS, F_N };

static char	root[256];

static void
cleanup(void)
{
	rm_rf(root);
}

static int
init_(void)
{
	const char	*base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(root, sizeof(root), "%s/soak-fuzz-report.%ld", base, (long)getpid());
	atexit(cleanup);
	return 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return init_();
}

static void
put(const char *dir, const char *name, const char *s, size_t n)
{
	char	path[PATH_MAX], err[ERR_LEN];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FUZZ_CHECK(write_file(path, s, n, err) == 0, "%s", err);
}

static size_t
count(const char *hay, size_t n, const char *needle)
{
	const char	*p = hay, *end = hay + n;
	size_t		 k = 0, l = strlen(needle);

	while (p < end && (p = memmem(p, (size_t)(end - p), needle, l)) != NULL) {
		k++;
		p += l;
	}
	return k;
}

static void
check_page(const char *path)
{
	char	 err[ERR_LEN], *page;
	size_t	 len, i, k;

	page = read_file(path, 64u << 20, &len, err);
	FUZZ_CHECK(page != NULL, "%s", err);
	for (i = 0; i < len; i += k) {
		unsigned char	c = (unsigned char)page[i];

		k = 1;
		if (c >= 0x80) {
			k = utf8_decode(page + i, len - i, NULL);
			FUZZ_CHECK(k > 0, "byte 0x%02x at %zu is not UTF-8", c, i);
		} else
			FUZZ_CHECK(c >= 0x20 || c == '\n' || c == '\t',
			    "control byte 0x%02x at %zu", c, i);
	}
	FUZZ_CHECK(count(page, len, "<script") == 1, "%zu <script", count(page,
	    len, "<script"));
	FUZZ_CHECK(count(page, len, "<style") == 1, "%zu <style", count(page,
	    len, "<style"));
	FUZZ_CHECK(count(page, len, "</html>") == 1 && len >= 8 &&
	    memcmp(page + len - 8, "</html>\n", 8) == 0, "the page does not end "
	    "as one");
	free(page);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char			*f[F_N] = { 0 }, *p = (const char *)data;
	const char			*end = p + size, *z;
	size_t				 fl[F_N] = { 0 }, k, i, nseeds = 0;
	char				 run[300], prev[300], dir[PATH_MAX];
	char				 err[ERR_LEN];
	struct report_html_opts		 o = { 0 };
	json_t				*rep, *res, *r;
	struct stat			 st;

	if (root[0] == '\0')
		init_();
	for (k = 0; k < F_N && p <= end; k++) {
		z = memchr(p, '\0', (size_t)(end - p));
		f[k] = p;
		fl[k] = z ? (size_t)(z - p) : (size_t)(end - p);
		p += fl[k] + 1;
	}
	rm_rf(root);
	snprintf(run, sizeof(run), "%s/run", root);
	snprintf(prev, sizeof(prev), "%s/prev", root);
	FUZZ_CHECK(mkdir(root, 0700) == 0 && mkdir(run, 0700) == 0,
	    "cannot make %s", run);
	put(run, "report.json", f[F_REPORT], fl[F_REPORT]);
	if (f[F_JOURNAL] != NULL)
		put(run, "journal.jsonl", f[F_JOURNAL], fl[F_JOURNAL]);
	if (f[F_PREVIOUS] != NULL) {
		FUZZ_CHECK(mkdir(prev, 0700) == 0, "cannot make %s", prev);
		put(prev, "report.json", f[F_PREVIOUS], fl[F_PREVIOUS]);
	}
	rep = json_loadb(f[F_REPORT], fl[F_REPORT], 0, NULL);
	res = json_object_get(rep, "results");
	snprintf(dir, sizeof(dir), "%s/failures", run);
	(void)mkdir(dir, 0700);
	json_array_foreach(res, i, r) {
		const char	*v = json_string_value(json_object_get(r, "verdict"));
		json_t		*s = json_object_get(r, "seed");

		if (nseeds == 4)
			break;
		if (!json_is_integer(s) || json_integer_value(s) < 0 ||
		    (v != NULL && strcmp(v, "pass") == 0))
			continue;
		snprintf(dir, sizeof(dir), "%s/failures/%" JSON_INTEGER_FORMAT, run,
		    json_integer_value(s));
		if (mkdir(dir, 0700) == -1)
			continue;	/* the same seed twice */
		nseeds++;
		if (f[F_TRACE] != NULL)
			put(dir, "trace.jsonl", f[F_TRACE], fl[F_TRACE]);
		if (f[F_RESULT] != NULL)
			put(dir, "result.json", f[F_RESULT], fl[F_RESULT]);
		if (f[F_TIMING] != NULL)
			put(dir, "timing.jsonl", f[F_TIMING], fl[F_TIMING]);
	}
	json_decref(rep);
	o.run_dir = run;
	o.previous = f[F_PREVIOUS] != NULL ? prev : "";
	o.now_text = "now";
	snprintf(dir, sizeof(dir), "%s/%s", run, RH_NAME);
	err[0] = '\0';
	if (report_html_write(&o, NULL, err) == -1) {
		FUZZ_CHECK(err[0] != '\0', "refused without saying why");
		FUZZ_CHECK(stat(dir, &st) == -1, "refused, but wrote %s", dir);
		return 0;
	}
	check_page(dir);
	return 0;
}
