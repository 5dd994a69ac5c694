/*
 * main() for a fuzz target without libFuzzer: each argument is a file or a
 * folder of files (in name order), each file one input, run once.  Fails
 * when an argument cannot be read or when no input was run at all; a
 * broken invariant aborts in the target itself (FUZZ_CHECK).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "tests/fuzz/fuzz.h"

/* A target need not define it. */
#pragma weak LLVMFuzzerInitialize

/* The largest input replayed; a corpus file past it is a mistake. */
#define REPLAY_MAX	(16u << 20)

static int
replay_file(const char *path, size_t *count)
{
	char	 err[ERR_LEN];
	char	*data;
	size_t	 len;

	if ((data = read_file(path, REPLAY_MAX, &len, err)) == NULL) {
		fprintf(stderr, "replay: %s\n", err);
		return -1;
	}
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	free(data);
	(*count)++;
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
replay_dir(const char *dir, size_t *count)
{
	DIR		*d;
	struct dirent	*e;
	char		**names = NULL, *path;
	size_t		 n = 0, cap = 0, i;
	struct stat	 st;
	int		 rc = 0;

	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = xreallocarray(names, cap, sizeof(*names));
		}
		names[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		path = path_join(dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    replay_file(path, count) == -1)
			rc = -1;
		free(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	struct stat	st;
	size_t		count = 0;
	int		i, rc = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == -1) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) == -1 :
		    replay_file(argv[i], &count) == -1)
			rc = 1;
	}
	if (count == 0) {
		fprintf(stderr, "replay: no input run (usage: %s FILE|DIR...)\n",
		    argv[0]);
		rc = 1;
	} else
		fprintf(stderr, "replay: %zu inputs, every one passed\n", count);
	return rc;
}
