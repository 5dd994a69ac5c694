/*
 * The config folder's bundle (common/bundle.h): a tree packs, hashes the
 * same every time and extracts as it was, without .git and the output
 * directory; every hostile buffer is refused before anything is written;
 * the worker's cache is private and installed whole.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/bundle.h"
#include "common/util.h"

static char *
tmpdir(void)
{
	char	*d = xstrdup("/tmp/soak-test-bundle.XXXXXX");

	assert_non_null(mkdtemp(d));
	return d;
}

static void
put(const char *dir, const char *rel, const char *text, mode_t mode)
{
	char	*p = path_join(dir, rel), err[ERR_LEN];

	assert_int_equal(write_file(p, text, strlen(text), err), 0);
	assert_int_equal(chmod(p, mode), 0);
	free(p);
}

static void
mkd(const char *dir, const char *rel)
{
	char	*p = path_join(dir, rel);

	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
}

static void
lnk(const char *dir, const char *rel, const char *target)
{
	char	*p = path_join(dir, rel);

	assert_int_equal(symlink(target, p), 0);
	free(p);
}

static char *
slurp(const char *dir, const char *rel)
{
	char	*p = path_join(dir, rel), err[ERR_LEN], *s;

	s = read_file(p, 1 << 20, NULL, err);
	free(p);
	return s;
}

static mode_t
mode_of(const char *dir, const char *rel)
{
	char		*p = path_join(dir, rel);
	struct stat	 st;

	assert_int_equal(lstat(p, &st), 0);
	free(p);
	return st.st_mode;
}

static bool
exists(const char *dir, const char *rel)
{
	char		*p = path_join(dir, rel);
	struct stat	 st;
	bool		 yes = lstat(p, &st) == 0;

	free(p);
	return yes;
}

static int
entries(const char *dir)
{
	DIR		*d = opendir(dir);
	struct dirent	*de;
	int		 n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A config folder: a turn that must stay executable, a subfolder, a
 * symlink to a file and one to a folder, .git and an output directory. */
static char *
sample_tree(void)
{
	char	*d = tmpdir();

	put(d, "soak.yaml", "name: t\n", 0644);
	put(d, "turn.sh", "#!/bin/sh\nexit 0\n", 0755);
	mkd(d, "lib");
	mkd(d, "lib/empty");
	put(d, "lib/rule.sh", "exit 1\n", 0640);
	lnk(d, "rule.sh", "lib/rule.sh");
	lnk(d, "l2", "lib");
	mkd(d, ".git");
	put(d, ".git/config", "[core]\n", 0644);
	mkd(d, "lib/.git");
	put(d, "lib/.git/HEAD", "ref\n", 0644);
	mkd(d, "out");
	put(d, "out/report.json", "{}\n", 0644);
	return d;
}

static void
pack_ok(const char *dir, struct bundle *b)
{
	char			 real[PATH_MAX], out[PATH_MAX + 8], err[ERR_LEN];
	const char		*exclude[2] = { out, NULL };
	struct bundle_rules	 r = { .exclude = exclude };

	assert_non_null(realpath(dir, real));
	snprintf(out, sizeof(out), "%s/out", real);
	if (bundle_pack(real, &r, b, err) == -1)
		fail_msg("bundle_pack: %s", err);
}

static void
test_roundtrip(void **state)
{
	struct bundle	 b, again, copy;
	char		*src = sample_tree(), *dst = tmpdir(), err[ERR_LEN], *s;
	char		 target[64], *l2;
	ssize_t		 n;

	(void)state;
	pack_ok(src, &b);
	/* lib, lib/empty, lib/rule.sh, l2, rule.sh, soak.yaml, turn.sh */
	assert_int_equal(b.nentries, 7);
	assert_true(bundle_hash_valid(b.hash));
	pack_ok(src, &again);
	assert_int_equal(again.len, b.len);
	assert_memory_equal(again.data, b.data, b.len);
	assert_string_equal(again.hash, b.hash);
	if (bundle_unpack(b.data, b.len, dst, err) == -1)
		fail_msg("bundle_unpack: %s", err);
	assert_string_equal((s = slurp(dst, "turn.sh")), "#!/bin/sh\nexit 0\n");
	free(s);
	assert_string_equal((s = slurp(dst, "rule.sh")), "exit 1\n");	/* through the link */
	free(s);
	assert_int_equal(mode_of(dst, "turn.sh") & 07777, 0755);
	assert_int_equal(mode_of(dst, "soak.yaml") & 07777, 0644);
	assert_int_equal(mode_of(dst, "lib/rule.sh") & 07777, 0640);
	assert_true(S_ISDIR(mode_of(dst, "lib")));
	assert_true(S_ISDIR(mode_of(dst, "lib/empty")));
	assert_true(S_ISLNK(mode_of(dst, "rule.sh")));
	l2 = path_join(dst, "l2");
	n = readlink(l2, target, sizeof(target) - 1);
	free(l2);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "lib");
	assert_false(exists(dst, ".git"));
	assert_false(exists(dst, "lib/.git"));
	assert_false(exists(dst, "out"));
	/* The copy packs to the same bytes: the hash is the tree's, not its place's. */
	{
		if (bundle_pack(dst, NULL, &copy, err) == -1)
			fail_msg("bundle_pack of the copy: %s", err);
		assert_string_equal(copy.hash, b.hash);
		bundle_free(&copy);
	}
	bundle_free(&b);
	bundle_free(&again);
	rm_rf(src);
	rm_rf(dst);
	free(src);
	free(dst);
}

static void
test_change_changes_hash(void **state)
{
	struct bundle	 a, b, c;
	char		*src = sample_tree();
	char		 first[BUNDLE_HASH_LEN + 1];

	(void)state;
	pack_ok(src, &a);
	snprintf(first, sizeof(first), "%s", a.hash);
	put(src, "lib/rule.sh", "exit 2\n", 0640);	/* one byte */
	pack_ok(src, &b);
	assert_string_not_equal(b.hash, first);
	put(src, "lib/rule.sh", "exit 1\n", 0750);	/* the mode alone */
	pack_ok(src, &c);
	assert_string_not_equal(c.hash, first);
	assert_string_not_equal(c.hash, b.hash);
	/* What is left out changes nothing. */
	bundle_free(&c);
	put(src, "lib/rule.sh", "exit 1\n", 0640);
	put(src, "out/report.json", "{\"more\": 1}\n", 0644);
	put(src, ".git/config", "[changed]\n", 0644);
	pack_ok(src, &c);
	assert_string_equal(c.hash, first);
	bundle_free(&a);
	bundle_free(&b);
	bundle_free(&c);
	rm_rf(src);
	free(src);
}

/* ---- hand-made buffers ---- */

struct tb {
	uint8_t	*p;
	size_t	 len;
	uint32_t count;
};

static void
tb_raw(struct tb *t, const void *p, size_t n)
{
	t->p = xreallocarray(t->p, t->len + n + 1, 1);
	memcpy(t->p + t->len, p, n);
	t->len += n;
}

static void
tb_u16(struct tb *t, uint16_t v)
{
	uint8_t	b[2] = { v >> 8, v & 0xff };

	tb_raw(t, b, 2);
}

static void
tb_u32(struct tb *t, uint32_t v)
{
	uint8_t	b[4] = { v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff };

	tb_raw(t, b, 4);
}

static void
tb_start(struct tb *t)
{
	memset(t, 0, sizeof(*t));
	tb_raw(t, "SOAKBNDL", 8);
	tb_u32(t, 1);
	tb_u32(t, 0);		/* count, patched by tb_add */
}

static void
tb_add(struct tb *t, char type, uint16_t mode, const char *path, size_t plen,
    const void *data, uint32_t size)
{
	uint8_t	ty = (uint8_t)type;

	tb_raw(t, &ty, 1);
	tb_u16(t, mode);
	tb_u16(t, (uint16_t)plen);
	tb_raw(t, path, plen);
	tb_u32(t, size);
	tb_raw(t, data, size);
	t->count++;
	t->p[12] = t->count >> 24; t->p[13] = (t->count >> 16) & 0xff;
	t->p[14] = (t->count >> 8) & 0xff; t->p[15] = t->count & 0xff;
}

#define ADD(t, type, path, data) \
	tb_add((t), (type), 0644, (path), strlen(path), (data), (uint32_t)strlen(data))

/* Refused with a message containing want, and nothing written. */
static void
refused(struct tb *t, const char *want)
{
	char	*dst = tmpdir(), err[ERR_LEN] = "";

	if (bundle_unpack(t->p, t->len, dst, err) == 0)
		fail_msg("accepted a bundle that should say \"%s\"", want);
	if (strstr(err, want) == NULL)
		fail_msg("error \"%s\" does not say \"%s\"", err, want);
	assert_int_equal(entries(dst), 0);
	rm_rf(dst);
	free(dst);
	free(t->p);
}

static void
test_hostile_paths(void **state)
{
	struct tb	t;

	(void)state;
	tb_start(&t);
	ADD(&t, 'd', "a", "");
	ADD(&t, 'f', "a/../../escaped", "x");
	refused(&t, "\"..\" component");

	tb_start(&t);
	ADD(&t, 'f', "..", "x");
	refused(&t, "\"..\" component");

	tb_start(&t);
	ADD(&t, 'f', "/tmp/soak-test-bundle-abs", "x");
	refused(&t, "an absolute path");

	tb_start(&t);
	tb_add(&t, 'f', 0644, "a\0b", 3, "x", 1);
	refused(&t, "NUL");

	tb_start(&t);
	ADD(&t, 'f', "a//b", "x");
	refused(&t, "empty path component");

	tb_start(&t);
	ADD(&t, 'f', "./a", "x");
	refused(&t, "\".\" component");

	tb_start(&t);
	ADD(&t, 'f', "b", "x");
	ADD(&t, 'f', "a", "x");
	refused(&t, "out of order");

	tb_start(&t);
	ADD(&t, 'f', "a", "x");
	ADD(&t, 'f', "a", "y");
	refused(&t, "repeated");

	tb_start(&t);
	ADD(&t, 'f', "nodir/x", "x");
	refused(&t, "its folder is not in the bundle");

	tb_start(&t);
	ADD(&t, 'x', "a", "");
	refused(&t, "unknown type");
}

/* Names that only start or end with dots are plain names, not "." or "..". */
static void
test_dotted_names(void **state)
{
	static const char *const	 names[] = { "...", "..x", ".x", "d", "d/.e", "x." };
	struct tb			 t;
	char				*dst = tmpdir(), err[ERR_LEN];
	size_t				 i;

	(void)state;
	tb_start(&t);
	for (i = 0; i < nitems(names); i++)
		ADD(&t, strcmp(names[i], "d") == 0 ? 'd' : 'f', names[i], "");
	if (bundle_unpack(t.p, t.len, dst, err) == -1)
		fail_msg("bundle_unpack: %s", err);
	for (i = 0; i < nitems(names); i++)
		assert_true(exists(dst, names[i]));
	free(t.p);
	rm_rf(dst);
	free(dst);
}

static void
test_hostile_symlinks(void **state)
{
	struct tb	t;

	(void)state;
	tb_start(&t);
	ADD(&t, 'l', "passwd", "../../../../etc/passwd");
	refused(&t, "points outside the bundle");

	tb_start(&t);
	ADD(&t, 'l', "etc", "/etc");
	refused(&t, "an absolute target");

	/* Lexically inside, really outside: "u" is the root, "u/.." above it. */
	tb_start(&t);
	ADD(&t, 'l', "u", ".");
	ADD(&t, 'l', "v", "u/..");
	refused(&t, "points outside the bundle");

	/* Through a chain that ends outside. */
	tb_start(&t);
	ADD(&t, 'd', "d", "");
	ADD(&t, 'l', "d/up", "..");
	ADD(&t, 'l', "out", "d/up/d/up/..");
	refused(&t, "points outside the bundle");

	tb_start(&t);
	ADD(&t, 'l', "loop", "loop");
	refused(&t, "too many levels");

	tb_start(&t);
	ADD(&t, 'l', "dangling", "nothing-here");
	refused(&t, "not in the bundle");

	/* An entry under a symlink (to a folder inside, even) is refused:
	 * the file would be written wherever the link points. */
	tb_start(&t);
	ADD(&t, 'l', "d", "sub");
	ADD(&t, 'f', "d/x", "x");
	ADD(&t, 'd', "sub", "");
	refused(&t, "its folder is a symlink");

	tb_start(&t);
	ADD(&t, 'l', "d", "/tmp");
	ADD(&t, 'f', "d/soak-test-bundle-through", "x");
	refused(&t, "its folder is a symlink");

	tb_start(&t);
	ADD(&t, 'f', "file", "x");
	ADD(&t, 'f', "file/x", "x");
	refused(&t, "its folder is a symlink or a file");
}

/* A target of len bytes resolving to d/f (or d): "./" repeated first. */
static void
target_of(char *buf, size_t len)
{
	size_t	k;

	buf[0] = '\0';
	for (k = 0; len > 2 && k < (len - 3) / 2; k++)
		strcat(buf, "./");
	strcat(buf, len == 1 ? "d" : len == 2 ? "d/" : len % 2 ? "d/f" : "d//f");
}

/* The lengths tried: every one to 160, and the last few to the cap. */
static size_t
next_len(size_t len)
{
	return len == 160 ? BUNDLE_PATH_MAX - 4 : len + 1;
}

/* A symlink's target comes out as it went in, whatever its length. */
static void
test_symlink_target_lengths(void **state)
{
	struct tb	 t;
	char		*dst = tmpdir(), err[ERR_LEN], name[16], *p;
	char		 want[BUNDLE_PATH_MAX + 1], got[BUNDLE_PATH_MAX + 2];
	size_t		 len;
	ssize_t		 n;

	(void)state;
	tb_start(&t);
	ADD(&t, 'd', "d", "");
	ADD(&t, 'f', "d/f", "x");
	for (len = 1; len <= BUNDLE_PATH_MAX; len = next_len(len)) {
		target_of(want, len);
		assert_int_equal(strlen(want), len);
		snprintf(name, sizeof(name), "l%04zu", len);
		ADD(&t, 'l', name, want);
	}
	if (bundle_unpack(t.p, t.len, dst, err) == -1)
		fail_msg("bundle_unpack: %s", err);
	for (len = 1; len <= BUNDLE_PATH_MAX; len = next_len(len)) {
		target_of(want, len);
		snprintf(name, sizeof(name), "l%04zu", len);
		p = path_join(dst, name);
		n = readlink(p, got, sizeof(got));
		free(p);
		if (n != (ssize_t)len || memcmp(got, want, len) != 0)
			fail_msg("%s: a target of %zd bytes, not the %zu sent", name, n, len);
	}
	free(t.p);
	rm_rf(dst);
	free(dst);
}

static void
test_lengths(void **state)
{
	struct tb	 t;
	char		*dst = tmpdir(), err[ERR_LEN];
	size_t		 cut;
	uint8_t		*big;

	(void)state;
	/* A good one, cut anywhere: never accepted, nothing written. */
	tb_start(&t);
	ADD(&t, 'd', "d", "");
	ADD(&t, 'f', "d/f", "hello");
	ADD(&t, 'l', "l", "d/f");
	assert_int_equal(bundle_unpack(t.p, t.len, dst, err), 0);
	rm_rf(dst);
	for (cut = 0; cut < t.len; cut++) {
		assert_int_equal(mkdir(dst, 0700), 0);
		if (bundle_unpack(t.p, cut, dst, err) == 0)
			fail_msg("accepted the bundle cut at %zu of %zu", cut, t.len);
		assert_int_equal(entries(dst), 0);
		rm_rf(dst);
	}
	/* A size that runs past the end. */
	t.p[t.len - 3 - 1] = 200;	/* l's size: 3 -> 200 */
	assert_int_equal(mkdir(dst, 0700), 0);
	assert_int_equal(bundle_unpack(t.p, t.len, dst, err), -1);
	assert_non_null(strstr(err, "runs past the end"));
	free(t.p);
	/* A path length that does. */
	tb_start(&t);
	ADD(&t, 'f', "f", "x");
	t.p[16 + 3] = 0x0f;	/* path_len 0x0f01 */
	refused(&t, "runs past the end");
	/* Bytes after the last entry. */
	tb_start(&t);
	ADD(&t, 'f', "f", "x");
	tb_raw(&t, "zz", 2);
	refused(&t, "after its last entry");
	/* A count past the cap, and a buffer past the size cap. */
	tb_start(&t);
	t.p[12] = 0x7f;
	refused(&t, "entries is over the cap");
	big = xcalloc(1, BUNDLE_MAX + 1);
	memcpy(big, "SOAKBNDL", 8);
	big[11] = 1;
	assert_int_equal(bundle_unpack(big, BUNDLE_MAX + 1, dst, err), -1);
	assert_non_null(strstr(err, "over the"));
	free(big);
	/* Bad magic, another format. */
	tb_start(&t);
	t.p[0] = 'X';
	refused(&t, "bad magic");
	tb_start(&t);
	t.p[11] = 2;
	refused(&t, "format 2");
	rm_rf(dst);
	free(dst);
}

/* Setuid, setgid, sticky and group/other write never come out. */
static void
test_modes_masked(void **state)
{
	struct tb	 t;
	char		*dst = tmpdir(), err[ERR_LEN];

	(void)state;
	tb_start(&t);
	tb_add(&t, 'd', 01777, "d", 1, "", 0);
	tb_add(&t, 'f', 0000, "d/none", 6, "x", 1);
	tb_add(&t, 'f', 06777, "d/suid", 6, "x", 1);
	assert_int_equal(bundle_unpack(t.p, t.len, dst, err), 0);
	assert_int_equal(mode_of(dst, "d") & 07777, 0755);
	assert_int_equal(mode_of(dst, "d/suid") & 07777, 0755);
	assert_int_equal(mode_of(dst, "d/none") & 07777, 0600);
	free(t.p);
	rm_rf(dst);
	free(dst);
}

/*
 * Out of descriptors on the worker (EMFILE): the error says which open
 * failed, not a later one's "bad file descriptor", and nothing is written.
 * The limit leaves exactly one descriptor: the folder's own open.
 */
static void
test_unpack_emfile(void **state)
{
	struct tb	 t;
	struct rlimit	 old, low;
	char		*dst = tmpdir(), err[ERR_LEN] = "";
	int		 fds[64], nfds = 0, fd, rc;

	(void)state;
	tb_start(&t);
	ADD(&t, 'f', "f", "x");
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = nitems(fds);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (nfds < (int)nitems(fds) && (fd = open("/dev/null", O_RDONLY)) != -1)
		fds[nfds++] = fd;
	assert_int_equal(errno, EMFILE);
	assert_true(nfds > 0);
	close(fds[--nfds]);
	rc = bundle_unpack(t.p, t.len, dst, err);
	while (nfds > 0)
		close(fds[--nfds]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(rc, -1);
	if (strstr(err, "cannot open the bundle's folder: Too many open files") == NULL)
		fail_msg("the error does not say what ran out: \"%s\"", err);
	assert_int_equal(entries(dst), 0);
	free(t.p);
	rm_rf(dst);
	free(dst);
}

/* A file the worker cannot write whole (EFBIG here): refused, saying why. */
static void
test_unpack_write_fails(void **state)
{
	struct tb	 t;
	struct rlimit	 old, low;
	char		*dst = tmpdir(), err[ERR_LEN] = "", *big = xcalloc(1, 10000);
	void		(*was)(int);
	int		 rc;

	(void)state;
	memset(big, 'x', 10000);
	tb_start(&t);
	tb_add(&t, 'f', 0644, "big", 3, big, 10000);
	was = signal(SIGXFSZ, SIG_IGN);	/* write() fails instead */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = 4096;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	rc = bundle_unpack(t.p, t.len, dst, err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	assert_int_equal(rc, -1);
	if (strstr(err, "cannot extract big: File too large") == NULL)
		fail_msg("the error does not say why: \"%s\"", err);
	free(t.p);
	free(big);
	rm_rf(dst);
	free(dst);
}

/* The cap on a path at its boundary: BUNDLE_PATH_MAX bytes pack, one more not. */
static void
test_pack_path_max(void **state)
{
	struct bundle	 b;
	char		*src = tmpdir(), *dst = tmpdir(), err[ERR_LEN], *s;
	char		 rel[BUNDLE_PATH_MAX + 2] = "";
	int		 i;

	(void)state;
	put(src, "soak.yaml", "name: t\n", 0644);
	for (i = 0; i < 4; i++) {	/* 4 x 200 bytes and their slashes */
		memset(rel + strlen(rel), 'a' + i, 200);
		rel[i * 201 + 200] = '\0';
		mkd(src, rel);
		strcat(rel, "/");
	}
	memset(rel + strlen(rel), 'f', BUNDLE_PATH_MAX - strlen(rel));
	rel[BUNDLE_PATH_MAX] = '\0';
	put(src, rel, "at the cap\n", 0644);
	if (bundle_pack(src, NULL, &b, err) == -1)
		fail_msg("bundle_pack of a %d-byte path: %s", BUNDLE_PATH_MAX, err);
	assert_int_equal(b.nentries, 6);
	if (bundle_unpack(b.data, b.len, dst, err) == -1)
		fail_msg("bundle_unpack of a %d-byte path: %s", BUNDLE_PATH_MAX, err);
	assert_string_equal((s = slurp(dst, rel)), "at the cap\n");
	free(s);
	bundle_free(&b);
	strcat(rel, "g");
	put(src, rel, "over\n", 0644);
	/* (the path itself fills err: the sentence's end is cut) */
	assert_int_equal(bundle_pack(src, NULL, &b, err), -1);
	assert_true(strncmp(err, "cannot bundle ", 14) == 0);
	rm_rf(src);
	rm_rf(dst);
	free(src);
	free(dst);
}

/* A file of size bytes that reads as zeros and takes no disk. */
static void
sparse(const char *dir, const char *rel, off_t size)
{
	char	*p = path_join(dir, rel);
	int	 fd;

	assert_true((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)) != -1);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
	free(p);
}

/* The cap's error gives sizes in the unit they reach: 1 MiB is "1.0 MiB". */
static void
test_pack_cap_units(void **state)
{
	struct bundle	 b;
	char		*src = tmpdir(), err[ERR_LEN];

	(void)state;
	put(src, "soak.yaml", "name: t\n", 0644);
	sparse(src, "big", (7 << 20) + 1);
	sparse(src, "mib", 1 << 20);
	sparse(src, "kib", 1024);
	sparse(src, "b", 1023);
	assert_int_equal(bundle_pack(src, NULL, &b, err), -1);
	if (strstr(err, "biggest: big (7.0 MiB), mib (1.0 MiB), kib (1.0 KiB). ") == NULL)
		fail_msg("not the sizes wanted: %s", err);
	rm_rf(src);
	free(src);
}

/* Over the cap, coordinator side: refused, naming the biggest file. */
static void
test_pack_cap(void **state)
{
	struct bundle	 b;
	char		*src = tmpdir(), *p, err[ERR_LEN];
	char		*blob = xcalloc(1, BUNDLE_MAX);

	(void)state;
	put(src, "soak.yaml", "name: t\n", 0644);
	p = path_join(src, "fixtures.bin");
	memset(blob, 'x', BUNDLE_MAX - 100);
	assert_int_equal(write_file(p, blob, BUNDLE_MAX - 100, err), 0);
	put(src, "small", "yy", 0644);
	put(src, "second", "yyyyyyyyyy", 0644);
	assert_int_equal(bundle_pack(src, NULL, &b, err), -1);
	assert_non_null(strstr(err, "makes a bundle of 8388612 bytes, over the cap of 8388608"));
	assert_non_null(strstr(err, "biggest: fixtures.bin (8.0 MiB), second (10 B)"));
	/* Just under it: fine. */
	assert_int_equal(write_file(p, blob, BUNDLE_MAX - 200, err), 0);
	if (bundle_pack(src, NULL, &b, err) == -1)
		fail_msg("bundle_pack: %s", err);
	assert_true(b.len <= BUNDLE_MAX);
	bundle_free(&b);
	free(p);
	free(blob);
	rm_rf(src);
	free(src);
}

/* Symlinks that would not resolve on the worker are left out, not shipped. */
static void
test_pack_leaves_out(void **state)
{
	struct bundle	 b;
	char		*src = tmpdir(), *dst = tmpdir(), err[ERR_LEN];

	(void)state;
	put(src, "soak.yaml", "name: t\n", 0644);
	lnk(src, "abs", "/etc/passwd");
	lnk(src, "up", "../x");
	lnk(src, "via", "up");		/* pointed through one left out */
	lnk(src, "fine", "soak.yaml");
	if (bundle_pack(src, NULL, &b, err) == -1)
		fail_msg("bundle_pack: %s", err);
	assert_int_equal(b.nentries, 2);
	assert_int_equal(b.nskipped, 3);
	assert_int_equal(bundle_unpack(b.data, b.len, dst, err), 0);
	assert_true(exists(dst, "fine"));
	assert_false(exists(dst, "abs"));
	assert_false(exists(dst, "via"));
	bundle_free(&b);
	rm_rf(src);
	rm_rf(dst);
	free(src);
	free(dst);
}

/* The coordinator's shared secret never travels, wherever it was copied. */
static void
test_pack_leaves_secret(void **state)
{
	static const char	 key[] = "0123456789abcdef-not-for-workers";
	struct bundle		 b;
	struct bundle_rules	 r = { .secret = (const uint8_t *)key,
				    .secret_len = sizeof(key) - 1 };
	char			*src = tmpdir(), *dst = tmpdir(), err[ERR_LEN];

	(void)state;
	put(src, "soak.yaml", "name: t\n", 0644);
	put(src, "soak.secret", "0123456789abcdef-not-for-workers\n", 0600);
	mkd(src, "deep");
	put(src, "deep/.env", "A=1\nSOAK_SECRET=0123456789abcdef-not-for-workers\n", 0644);
	lnk(src, "key", "soak.secret");	/* a link to it goes too */
	if (bundle_pack(src, &r, &b, err) == -1)
		fail_msg("bundle_pack: %s", err);
	assert_null(memmem(b.data, b.len, key, sizeof(key) - 1));
	assert_int_equal(b.nentries, 2);	/* soak.yaml, deep */
	assert_int_equal(b.nskipped, 3);
	assert_int_equal(bundle_unpack(b.data, b.len, dst, err), 0);
	assert_false(exists(dst, "soak.secret"));
	assert_false(exists(dst, "deep/.env"));
	assert_false(exists(dst, "key"));
	bundle_free(&b);
	rm_rf(src);
	rm_rf(dst);
	free(src);
	free(dst);
}

/* Nor does a copy of the coordinator's TLS key (rules->key, a line of it). */
static void
test_pack_leaves_key(void **state)
{
	static const char	 line[] = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgZ3Jx1c9ke2Pq0Lw";
	struct bundle		 b;
	struct bundle_rules	 r = { .key = (const uint8_t *)line,
				    .key_len = sizeof(line) - 1 };
	char			*src = tmpdir(), *dst = tmpdir(), err[ERR_LEN];

	(void)state;
	put(src, "soak.yaml", "name: t\n", 0644);
	mkd(src, "pki");
	put(src, "pki/coordinator.key", "-----BEGIN PRIVATE KEY-----\n"
	    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgZ3Jx1c9ke2Pq0Lw\n"
	    "-----END PRIVATE KEY-----\n", 0600);
	put(src, "pki/ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n"
	    "-----END CERTIFICATE-----\n", 0644);
	if (bundle_pack(src, &r, &b, err) == -1)
		fail_msg("bundle_pack: %s", err);
	assert_null(memmem(b.data, b.len, line, sizeof(line) - 1));
	assert_int_equal(b.nentries, 3);	/* soak.yaml, pki, pki/ca.pem */
	assert_int_equal(b.nskipped, 1);
	assert_int_equal(bundle_unpack(b.data, b.len, dst, err), 0);
	assert_false(exists(dst, "pki/coordinator.key"));
	assert_true(exists(dst, "pki/ca.pem"));
	bundle_free(&b);
	rm_rf(src);
	rm_rf(dst);
	free(src);
	free(dst);
}

/* The cap on entries at its boundary: BUNDLE_MAX_ENTRIES pack, one more not. */
static void
test_pack_entries_cap(void **state)
{
	struct bundle	 b;
	char		*src = xstrdup("/dev/shm/soak-test-bundle.XXXXXX"), err[ERR_LEN];
	char		 name[32];
	int		 i, fd, dfd;

	(void)state;
	/* In memory, with bare creats: 20,000 write_file()s take a minute on disk. */
	assert_non_null(mkdtemp(src));
	assert_true((dfd = open(src, O_RDONLY | O_DIRECTORY)) != -1);
	put(src, "soak.yaml", "name: t\n", 0644);
	for (i = 1; i < BUNDLE_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		assert_true((fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644)) != -1);
		close(fd);
	}
	close(dfd);
	if (bundle_pack(src, NULL, &b, err) == -1)
		fail_msg("bundle_pack of %d entries: %s", BUNDLE_MAX_ENTRIES, err);
	assert_int_equal(b.nentries, BUNDLE_MAX_ENTRIES);
	bundle_free(&b);
	put(src, "one-more", "", 0644);
	assert_int_equal(bundle_pack(src, NULL, &b, err), -1);
	if (strstr(err, "holds more than 20000 entries to bundle (use --bundle off)") == NULL)
		fail_msg("the refusal does not say the cap: %s", err);
	bundle_free(&b);
	rm_rf(src);
	free(src);
}

static void
test_cache(void **state)
{
	struct bundle	 b;
	char		*src = sample_tree(), *root = tmpdir(), *cache, *dir, *dir2;
	char		 err[ERR_LEN], bad[BUNDLE_HASH_LEN + 1], *p;
	struct stat	 st;

	(void)state;
	pack_ok(src, &b);
	umask(0);
	cache = bundle_cache_dir(root, err);
	umask(022);
	assert_non_null(cache);
	assert_int_equal(lstat(cache, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(bundle_cached(cache, b.hash, &dir, err), 0);
	/* Bytes that do not hash to the announced hash are refused. */
	snprintf(bad, sizeof(bad), "%s", b.hash);
	bad[0] = bad[0] == '0' ? '1' : '0';
	assert_int_equal(bundle_install(cache, bad, b.data, b.len, &dir, err), -1);
	assert_non_null(strstr(err, "not to the announced"));
	assert_int_equal(bundle_install(cache, "../../etc", b.data, b.len, &dir, err), -1);
	assert_int_equal(bundle_install(cache, b.hash, b.data, b.len, &dir, err), 0);
	assert_int_equal(bundle_cached(cache, b.hash, &dir2, err), 1);
	assert_string_equal(dir, dir2);
	free(dir2);
	assert_int_equal(mode_of(dir, "turn.sh") & 07777, 0755);
	/* A second install of the same hash (another process lost the race)
	 * takes the first one's, and leaves no temporary folder. */
	assert_int_equal(bundle_install(cache, b.hash, b.data, b.len, &dir2, err), 0);
	assert_string_equal(dir, dir2);
	assert_int_equal(entries(cache), 1);
	free(dir2);
	free(dir);
	/* A symlink where a cached bundle should be, or as the cache: refused. */
	rm_rf(cache);
	free(cache);
	p = xasprintf("%s/" BUNDLE_CACHE_PREFIX "%u", root, (unsigned)geteuid());
	assert_int_equal(symlink("/tmp", p), 0);
	assert_null(bundle_cache_dir(root, err));
	assert_non_null(strstr(err, "symlink"));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0777), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_null(bundle_cache_dir(root, err));
	assert_non_null(strstr(err, "writable by group or others"));
	assert_int_equal(chmod(p, 0700), 0);
	cache = bundle_cache_dir(root, err);
	assert_non_null(cache);
	dir = xasprintf("%s/bundle-%s", cache, b.hash);
	assert_int_equal(symlink(src, dir), 0);
	assert_int_equal(bundle_cached(cache, b.hash, &dir2, err), -1);
	assert_non_null(strstr(err, "symlink"));
	free(dir);
	free(cache);
	free(p);
	bundle_free(&b);
	rm_rf(root);
	rm_rf(src);
	free(root);
	free(src);
}

/* A cached bundle-<hash> used `ago` seconds ago. */
static char *
cached_dir(const char *cache, int i, time_t ago)
{
	char		*d = xasprintf("%s/bundle-%064x", cache, i);
	struct timespec	 t[2] = { { time(NULL) - ago, 0 }, { time(NULL) - ago, 0 } };

	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(utimensat(AT_FDCWD, d, t, AT_SYMLINK_NOFOLLOW), 0);
	return d;
}

/* The cache keeps the BUNDLE_KEEP used last, and any that is held. */
static void
test_prune(void **state)
{
	char		*root = tmpdir(), *cache, *dirs[12], err[ERR_LEN], *p;
	struct timespec	 old[2] = { { time(NULL) - 5000, 0 }, { time(NULL) - 5000, 0 } };
	struct stat	 st;
	int		 i;

	(void)state;
	assert_non_null(cache = bundle_cache_dir(root, err));
	for (i = 0; i < 12; i++)
		dirs[i] = cached_dir(cache, i, 100 * (i + 1));	/* 0 the newest */
	/* The oldest is held by a worker that still runs on it. */
	assert_int_equal(bundle_hold(dirs[11], err), 0);
	assert_int_equal(utimensat(AT_FDCWD, dirs[11], old, 0), 0);
	p = xasprintf("%s/.tmp-000000000000-old", cache);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
	free(p);
	p = xasprintf("%s/.tmp-000000000000-new", cache);	/* being installed */
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(bundle_prune(cache, 3), 8);
	for (i = 0; i < 12; i++)
		assert_int_equal(lstat(dirs[i], &st) == 0, i < 3 || i == 11);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(entries(cache), 5);	/* 3, the held one, the new tmp */
	/* Taken again, a bundle is the one used last: it stays; the process
	 * holds one bundle at a time, so the old one is let go and goes. */
	assert_int_equal(bundle_hold(dirs[2], err), 0);
	assert_int_equal(bundle_prune(cache, 1), 3);
	assert_int_equal(lstat(dirs[2], &st), 0);
	assert_int_equal(lstat(dirs[11], &st), -1);
	/* Taken again by the process that holds it (the next WELCOME): the
	 * same hold, nothing done to the folder; its "last used" stays. */
	assert_int_equal(utimensat(AT_FDCWD, dirs[2], old, 0), 0);
	assert_int_equal(bundle_hold(dirs[2], err), 0);
	assert_int_equal(lstat(dirs[2], &st), 0);
	assert_true(st.st_mtime == old[1].tv_sec);
	/* A bundle that is gone cannot be held: the worker fetches it again. */
	assert_int_equal(bundle_hold(dirs[5], err), -1);
	free(p);
	for (i = 0; i < 12; i++)
		free(dirs[i]);
	free(cache);
	rm_rf(root);
	free(root);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_change_changes_hash),
		cmocka_unit_test(test_hostile_paths),
		cmocka_unit_test(test_dotted_names),
		cmocka_unit_test(test_hostile_symlinks),
		cmocka_unit_test(test_symlink_target_lengths),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_modes_masked),
		cmocka_unit_test(test_unpack_emfile),
		cmocka_unit_test(test_unpack_write_fails),
		cmocka_unit_test(test_pack_path_max),
		cmocka_unit_test(test_pack_cap_units),
		cmocka_unit_test(test_pack_cap),
		cmocka_unit_test(test_pack_leaves_out),
		cmocka_unit_test(test_pack_leaves_secret),
		cmocka_unit_test(test_pack_leaves_key),
		cmocka_unit_test(test_pack_entries_cap),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_prune),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
