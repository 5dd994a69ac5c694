/*
 * libFuzzer target for bundle_unpack (common/bundle.c): the bytes a
 * coordinator sends a worker as its config folder, any bytes.  Each input
 * is extracted into an empty folder `x` inside a fresh folder of its own
 * (under /dev/shm when it is there: tmpfs is quick), then checked:
 *  - nothing is written outside `x` (its parent holds `x` and nothing else);
 *  - refused, `x` is empty (the whole bundle goes before a byte is written);
 *  - accepted, `x` holds only directories, regular files and symlinks, no
 *    more entries than the header's count and no more file bytes than the
 *    input; every mode is masked (no setuid, setgid, sticky, group or
 *    other write; files owner-readable and -writable, folders owner-
 *    searchable); every symlink's target is relative and resolves, inside
 *    `x`, to an entry of `x`; and the tree packs again (bundle_pack) to a
 *    bundle that extracts to the same tree: the same bytes, the same hash.
 * The mutator keeps the header ("SOAKBNDL", format 1) most of the time,
 * so the fuzzer spends its time on entries, not on the magic.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common/bundle.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

static char	root[PATH_MAX - 16];	/* the input's folder; x inside it */
static size_t	n_entries, n_bytes;
static bool	bad_mode, bad_kind, bad_link;
static const char *why_link;

static int
LLVMFuzzerInitialize_(void)
{
	const char	*base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(root, sizeof(root), "%s/soak-fuzz-bundle.%ld", base, (long)getpid());
	return 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return LLVMFuzzerInitialize_();
}

/* Whether the symlink at path (inside x) resolves to an entry of x. */
static bool
link_ok(const char *path, const char *x)
{
	char	target[PATH_MAX], real[PATH_MAX];
	ssize_t	n = readlink(path, target, sizeof(target) - 1);

	if (n <= 0) {
		why_link = "unreadable";
		return false;
	}
	target[n] = '\0';
	if (target[0] == '/') {
		why_link = "absolute";
		return false;
	}
	if (realpath(path, real) == NULL) {
		why_link = "dangling";
		return false;
	}
	if (strncmp(real, x, strlen(x)) != 0 || (real[strlen(x)] != '/' &&
	    real[strlen(x)] != '\0')) {
		why_link = "leaves the bundle";
		return false;
	}
	return true;
}

static const char	*walk_x;

static int
visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	if (ftw->level == 0)
		return 0;
	n_entries++;
	if (S_ISREG(st->st_mode)) {
		n_bytes += (size_t)st->st_size;
		if ((st->st_mode & 07022) != 0 || (st->st_mode & 0600) != 0600)
			bad_mode = true;
	} else if (S_ISDIR(st->st_mode)) {
		if ((st->st_mode & 07022) != 0 || (st->st_mode & 0700) != 0700)
			bad_mode = true;
	} else if (S_ISLNK(st->st_mode)) {
		if (!link_ok(path, walk_x))
			bad_link = true;
	} else
		bad_kind = true;
	return 0;
}

static size_t
entries_of(const char *dir)
{
	struct dirent	*de;
	DIR		*d = opendir(dir);
	size_t		 n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static uint32_t
header_count(const uint8_t *data, size_t size)
{
	return size >= 16 ? (uint32_t)data[12] << 24 | (uint32_t)data[13] << 16 |
	    (uint32_t)data[14] << 8 | data[15] : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		x[PATH_MAX], y[PATH_MAX], err[ERR_LEN], real[PATH_MAX];
	struct bundle	b = { 0 }, b2 = { 0 };
	int		rc;

	if (root[0] == '\0')
		LLVMFuzzerInitialize_();
	rm_rf(root);
	FUZZ_CHECK(mkdir(root, 0700) == 0, "cannot make %s", root);
	snprintf(x, sizeof(x), "%s/x", root);
	FUZZ_CHECK(mkdir(x, 0700) == 0, "cannot make %s", x);
	rc = bundle_unpack(data, size, x, err);
	FUZZ_CHECK(entries_of(root) == 1, "bundle_unpack (%s) wrote beside its folder",
	    rc == 0 ? "accepted" : err);
	if (rc == -1) {
		FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
		FUZZ_CHECK(entries_of(x) == 0, "refused (%s), yet it wrote", err);
		goto out;
	}
	/* Symlinks are checked against the real path of x. */
	FUZZ_CHECK(realpath(x, real) != NULL, "no real path for %s", x);
	walk_x = real;
	n_entries = n_bytes = 0;
	bad_mode = bad_kind = bad_link = false;
	nftw(x, visit, 32, FTW_PHYS);
	FUZZ_CHECK(!bad_kind, "an entry neither folder, file nor symlink");
	FUZZ_CHECK(!bad_mode, "a mode not masked");
	FUZZ_CHECK(!bad_link, "a symlink that is %s", why_link);
	FUZZ_CHECK(n_entries <= header_count(data, size), "%zu entries, the header "
	    "says %u", n_entries, header_count(data, size));
	FUZZ_CHECK(n_bytes <= size, "%zu bytes of files from %zu of input", n_bytes, size);
	/* What was extracted packs and extracts to itself. */
	FUZZ_CHECK(bundle_pack(real, NULL, &b, err) == 0, "an extracted tree does "
	    "not pack: %s", err);
	snprintf(y, sizeof(y), "%s/y", root);
	FUZZ_CHECK(mkdir(y, 0700) == 0, "cannot make %s", y);
	FUZZ_CHECK(bundle_unpack(b.data, b.len, y, err) == 0, "a packed tree does "
	    "not unpack: %s", err);
	FUZZ_CHECK(realpath(y, real) != NULL, "no real path for %s", y);
	FUZZ_CHECK(bundle_pack(real, NULL, &b2, err) == 0, "it does not pack again: %s",
	    err);
	FUZZ_CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0 &&
	    strcmp(b.hash, b2.hash) == 0, "pack -> unpack -> pack changed the bytes");
out:
	bundle_free(&b);
	bundle_free(&b2);
	rm_rf(root);
	return 0;
}

#ifdef SOAK_LIBFUZZER
/* Mostly the header kept: "SOAKBNDL", format 1, then what the fuzzer likes. */
size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static const uint8_t	head[12] = { 'S', 'O', 'A', 'K', 'B', 'N', 'D', 'L',
				    0, 0, 0, 1 };

	size = LLVMFuzzerMutate(data, size, max_size);
	if (seed % 8 != 0 && max_size >= sizeof(head) + 4) {
		if (size < sizeof(head) + 4)
			size = sizeof(head) + 4;
		memcpy(data, head, sizeof(head));
	}
	return size;
}
#endif
