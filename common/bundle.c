/*
 * The config folder as one buffer: pack (coordinator), check and extract
 * (worker), the worker's cache.  Format and rules: common/bundle.h.
 */
#include "common/bundle.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/log.h"
#include "common/msg.h"
#include "common/util.h"

/* A BUNDLE message (its hash, the length prefix, the bytes) fits MSG_MAX. */
_Static_assert(BUNDLE_MAX <= MSG_BYTES_MAX, "a bundle fits a BUNDLE message");

#define MAGIC		"SOAKBNDL"
#define MAGIC_LEN	8
#define FORMAT		1
#define HDR_LEN		(MAGIC_LEN + 4 + 4)
#define ENTRY_HDR	(1 + 2 + 2)		/* type, mode, path_len */
#define ENTRY_LEN(plen, size)	(ENTRY_HDR + (uint64_t)(plen) + 4 + (uint64_t)(size))
#define SYMLINK_HOPS	40			/* as the kernel's MAXSYMLINKS */
#define SHOW_LEN	96			/* a path quoted in an error */

struct bentry {
	char		*path;		/* relative, heap */
	char		 type;		/* 'd', 'f', 'l' */
	uint16_t	 mode;
	uint64_t	 size;
	const uint8_t	*data;		/* unpack: into the buffer; pack: read */
	char		*target;	/* 'l': heap */
	bool		 dropped;	/* pack: left out (a symlink out, a file
					   with the secret, one gone) */
};

static uint16_t
get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

/* A path from the buffer, fit for an error sentence. */
static const char *
show(char *buf, const char *s)
{
	return log_escape(buf, SHOW_LEN, s);
}

/* owned: the entries' data is theirs (pack), not the buffer's (unpack). */
static void
table_free(struct bentry *t, size_t n, bool owned)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(t[i].path);
		free(t[i].target);
		if (owned)
			free(UNCONST(t[i].data));
	}
	free(t);
}

static int
entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bentry *)a)->path, ((const struct bentry *)b)->path);
}

/* The entry at path among t[0..n) (sorted), or NULL; a dropped one is absent. */
static const struct bentry *
table_find(const struct bentry *t, size_t n, const char *path)
{
	struct bentry		 key = { .path = UNCONST(path) };
	const struct bentry	*e;

	e = bsearch(&key, t, n, sizeof(*t), entry_cmp);
	return e && !e->dropped ? e : NULL;
}

/*
 * Whether the symlink l resolves inside the bundle t[0..n): its target is
 * walked from l's folder one component at a time, following the bundle's
 * own symlinks (at most SYMLINK_HOPS), and must never climb above the
 * root, name a component the bundle does not hold, or pass through a
 * file.  A lexical check alone is not enough: with "u -> .", "u/.." is the
 * root's parent.  0, or -1 with err.
 */
static int
resolve_inside(const struct bentry *t, size_t n, const struct bentry *l, char *err)
{
	const struct bentry	*e;
	char			 cur[BUNDLE_PATH_MAX + 1], next[BUNDLE_PATH_MAX + 1];
	char			 s1[SHOW_LEN], s2[SHOW_LEN];
	char			*rest, *p, *slash, *more;
	int			 hops = 0, rc = -1;

	if (l->target[0] == '/')
		return errf(err, "symlink %s -> %s: an absolute target", show(s1, l->path),
		    show(s2, l->target));
	snprintf(cur, sizeof(cur), "%s", l->path);
	if ((slash = strrchr(cur, '/')) != NULL)
		*slash = '\0';
	else
		cur[0] = '\0';
	rest = xstrdup(l->target);
	p = rest;
	while (*p != '\0') {
		char	*comp = p;

		if ((slash = strchr(p, '/')) != NULL) {
			*slash = '\0';
			p = slash + 1;
		} else
			p += strlen(p);
		if (*comp == '\0' || strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			if (cur[0] == '\0') {
				errf(err, "symlink %s -> %s points outside the bundle",
				    show(s1, l->path), show(s2, l->target));
				goto out;
			}
			if ((slash = strrchr(cur, '/')) != NULL)
				*slash = '\0';
			else
				cur[0] = '\0';
			continue;
		}
		if ((size_t)snprintf(next, sizeof(next), "%s%s%s", cur, cur[0] ? "/" : "",
		    comp) >= sizeof(next)) {
			errf(err, "symlink %s -> %s: a path too long", show(s1, l->path),
			    show(s2, l->target));
			goto out;
		}
		if ((e = table_find(t, n, next)) == NULL) {
			errf(err, "symlink %s -> %s: %s is not in the bundle",
			    show(s1, l->path), show(s2, l->target), next);
			goto out;
		}
		switch (e->type) {
		case 'd':
			memcpy(cur, next, sizeof(cur));
			break;
		case 'f':
			if (*p != '\0') {
				errf(err, "symlink %s -> %s goes through the file %s",
				    show(s1, l->path), show(s2, l->target), next);
				goto out;
			}
			break;
		case 'l':
			/* Its target is read from its folder, cur: the rest follows. */
			if (++hops > SYMLINK_HOPS || e->target[0] == '/') {
				errf(err, "symlink %s -> %s: %s", show(s1, l->path),
				    show(s2, l->target), e->target[0] == '/' ?
				    "it goes through an absolute symlink" :
				    "too many levels of symlinks");
				goto out;
			}
			more = xasprintf("%s/%s", e->target, p);
			free(rest);
			rest = p = more;
			break;
		}
	}
	rc = 0;
out:
	free(rest);
	return rc;
}

/* NULL when path is a relative path of plain components, else why not. */
static const char *
path_problem(const char *path, size_t len)
{
	const char	*c, *end = path + len, *slash;

	if (len == 0)
		return "an empty path";
	if (memchr(path, '\0', len) != NULL)
		return "a NUL byte in a path";
	if (path[0] == '/')
		return "an absolute path";
	for (c = path; c <= end; c = slash + 1) {
		if ((slash = memchr(c, '/', (size_t)(end - c))) == NULL)
			slash = end;
		if (slash == c)
			return "an empty path component";
		if (slash - c == 1 && c[0] == '.')
			return "a \".\" component";
		if (slash - c == 2 && c[0] == '.' && c[1] == '.')
			return "a \"..\" component";
	}
	return NULL;
}

/* ---- reading a buffer ------------------------------------------------- */

/* Parses and checks every entry of buf (common/bundle.h), writing nothing. */
static int
parse(const uint8_t *buf, size_t len, struct bentry **tp, size_t *np, char *err)
{
	struct bentry	*t = NULL, *e;
	const char	*why;
	char		*slash, s1[SHOW_LEN];
	size_t		 off = HDR_LEN, n = 0, i;
	uint32_t	 count, format, plen, size;

	*tp = NULL;
	*np = 0;
	if (len > BUNDLE_MAX)
		return errf(err, "a bundle of %zu bytes is over the %u-byte cap", len,
		    BUNDLE_MAX);
	if (len < HDR_LEN)
		return errf(err, "bundle truncated in its header (%zu bytes)", len);
	if (memcmp(buf, MAGIC, MAGIC_LEN) != 0)
		return errf(err, "not a soak bundle (bad magic)");
	if ((format = get_be32(buf + MAGIC_LEN)) != FORMAT)
		return errf(err, "bundle format %u; this soak reads %d", format, FORMAT);
	if ((count = get_be32(buf + MAGIC_LEN + 4)) > BUNDLE_MAX_ENTRIES)
		return errf(err, "a bundle of %u entries is over the cap of %d", count,
		    BUNDLE_MAX_ENTRIES);
	t = xcalloc(count ? count : 1, sizeof(*t));
	while (n < count) {
		e = &t[n];
		if (len - off < ENTRY_HDR) {
			errf(err, "bundle truncated in entry %zu", n);
			goto fail;
		}
		e->type = (char)buf[off];
		e->mode = get_be16(buf + off + 1);
		plen = get_be16(buf + off + 3);
		off += ENTRY_HDR;
		if (plen == 0 || plen > BUNDLE_PATH_MAX || plen > len - off) {
			errf(err, "bundle entry %zu: a path length of %u %s", n, plen,
			    plen > len - off ? "runs past the end" : "is out of range");
			goto fail;
		}
		if ((why = path_problem((const char *)buf + off, plen)) != NULL) {
			e->path = xcalloc(1, plen + 1);
			memcpy(e->path, buf + off, plen);
			errf(err, "bundle entry %zu (%s): %s", n, show(s1, e->path), why);
			n++;
			goto fail;
		}
		e->path = xcalloc(1, plen + 1);
		memcpy(e->path, buf + off, plen);
		n++;
		off += plen;
		if (len - off < 4) {
			errf(err, "bundle truncated in entry %zu (%s)", n - 1, show(s1, e->path));
			goto fail;
		}
		size = get_be32(buf + off);
		off += 4;
		if (size > len - off) {
			errf(err, "bundle entry %s: a size of %u bytes runs past the end "
			    "(%zu left)", show(s1, e->path), size, len - off);
			goto fail;
		}
		e->size = size;
		e->data = buf + off;
		off += size;
		if (e->type == 'l' && (size == 0 || size > BUNDLE_PATH_MAX ||
		    memchr(e->data, '\0', size) != NULL)) {
			errf(err, "bundle entry %s: a symlink target of %u bytes, or with "
			    "a NUL", show(s1, e->path), size);
			goto fail;
		}
		if (e->type == 'l') {
			e->target = xcalloc(1, size + 1);
			memcpy(e->target, e->data, size);
		} else if (e->type == 'd' && size != 0) {
			errf(err, "bundle entry %s: a directory with %u bytes of data",
			    show(s1, e->path), size);
			goto fail;
		} else if (e->type != 'd' && e->type != 'f') {
			errf(err, "bundle entry %s: unknown type 0x%02x", show(s1, e->path),
			    (unsigned)(uint8_t)e->type);
			goto fail;
		}
		if (n > 1 && strcmp(t[n - 2].path, e->path) >= 0) {
			errf(err, "bundle entry %s: out of order or repeated", show(s1, e->path));
			goto fail;
		}
		/* Its folder is a directory entry before it: never a symlink. */
		if ((slash = strrchr(e->path, '/')) != NULL) {
			const struct bentry	*parent;

			*slash = '\0';
			parent = table_find(t, n - 1, e->path);
			*slash = '/';
			if (parent == NULL || parent->type != 'd') {
				errf(err, "bundle entry %s: its folder is %s", show(s1, e->path),
				    parent ? "a symlink or a file" : "not in the bundle");
				goto fail;
			}
		}
	}
	if (off != len) {
		errf(err, "bundle has %zu bytes after its last entry", len - off);
		goto fail;
	}
	for (i = 0; i < n; i++)
		if (t[i].type == 'l' && resolve_inside(t, n, &t[i], err) == -1)
			goto fail;
	*tp = t;
	*np = n;
	return 0;
fail:
	table_free(t, n, false);
	return -1;
}

/* The directory rel (relative, "" = root) under rootfd, one component at a
 * time, none of them a symlink. */
static int
open_beneath(int rootfd, const char *rel, char *err)
{
	char	*copy = xstrdup(rel), *comp, *save = NULL, s1[SHOW_LEN];
	int	 fd, nfd;

	if ((fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		errf(err, "cannot open the bundle's folder: %s", strerror(errno));
		goto out;
	}
	for (comp = strtok_r(copy, "/", &save); comp != NULL;
	    comp = strtok_r(NULL, "/", &save)) {
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if ((fd = nfd) == -1) {
			errf(err, "cannot open %s in the bundle: %s", show(s1, rel),
			    strerror(errno));
			break;
		}
	}
out:
	free(copy);
	return fd;
}

/* Creates e (its name) in the directory pfd. */
static int
extract_one(int pfd, const struct bentry *e, const char *name, char *err)
{
	char	s1[SHOW_LEN];
	int	fd = -1, rc = -1;

	switch (e->type) {
	case 'd':
		if (mkdirat(pfd, name, 0700) == -1 ||
		    (fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1 || fchmod(fd, (e->mode & 0755) | 0700) == -1)
			goto fail;
		break;
	case 'f':
		if ((fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600)) == -1 || write_all(fd, e->data, e->size) == -1 ||
		    fchmod(fd, (e->mode & 0755) | 0600) == -1)
			goto fail;
		break;
	case 'l':
		if (symlinkat(e->target, pfd, name) == -1)
			goto fail;
		break;
	}
	rc = 0;
	goto out;
fail:
	errf(err, "cannot extract %s: %s", show(s1, e->path), strerror(errno));
out:
	if (fd != -1)
		close(fd);
	return rc;
}

int
bundle_unpack(const void *data, size_t len, const char *dir, char *err)
{
	struct bentry	*t;
	size_t		 n, i;
	char		*pdir = NULL, *slash;
	int		 rootfd, pfd = -1, rc = -1;

	if (parse(data, len, &t, &n, err) == -1)
		return -1;
	if ((rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		errf(err, "cannot open %s: %s", dir, strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++) {
		const char	*name = t[i].path;
		char		*parent = xstrdup("");

		if ((slash = strrchr(t[i].path, '/')) != NULL) {
			free(parent);
			parent = xasprintf("%.*s", (int)(slash - t[i].path), t[i].path);
			name = slash + 1;
		}
		/* Sorted entries keep a folder's files together: one open each. */
		if (pdir == NULL || strcmp(pdir, parent) != 0) {
			if (pfd != -1)
				close(pfd);
			free(pdir);
			pdir = parent;
			if ((pfd = open_beneath(rootfd, pdir, err)) == -1)
				goto out;
		} else
			free(parent);
		if (extract_one(pfd, &t[i], name, err) == -1)
			goto out;
	}
	rc = 0;
out:
	if (pfd != -1)
		close(pfd);
	if (rootfd != -1)
		close(rootfd);
	free(pdir);
	table_free(t, n, false);
	return rc;
}

/* ---- packing a folder ------------------------------------------------- */

struct packer {
	const char		*root;
	const struct bundle_rules *r;
	struct bentry		*t;
	size_t			 n, cap;
	size_t			 nskipped;
};

static bool
excluded(const struct packer *p, const char *abs)
{
	const char *const	*x;

	for (x = p->r ? p->r->exclude : NULL; x && *x; x++)
		if (strcmp(*x, abs) == 0)
			return true;
	return false;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int	pack_walk(struct packer *, const char *, char *);

/* Adds one entry of the folder (rel, its absolute path abs). */
static int
pack_entry(struct packer *p, const char *rel, const char *abs, char *err)
{
	struct bentry	*e;
	struct stat	 st;
	char		 target[BUNDLE_PATH_MAX + 1];
	ssize_t		 tl;

	if (lstat(abs, &st) == -1)
		return errf(err, "cannot bundle %s: %s", abs, strerror(errno));
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		log_warnx("bundle: leaving out %s: not a file, folder or symlink", abs);
		p->nskipped++;
		return 0;
	}
	if (strlen(rel) > BUNDLE_PATH_MAX)
		return errf(err, "cannot bundle %s: a path longer than %d bytes", abs,
		    BUNDLE_PATH_MAX);
	if (p->n >= BUNDLE_MAX_ENTRIES)
		return errf(err, "the config folder %s holds more than %d entries to "
		    "bundle (use --bundle off)", p->root, BUNDLE_MAX_ENTRIES);
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->t = xreallocarray(p->t, p->cap, sizeof(*p->t));
	}
	e = &p->t[p->n];
	memset(e, 0, sizeof(*e));
	e->path = xstrdup(rel);
	e->mode = (uint16_t)(st.st_mode & 0777);
	p->n++;
	if (S_ISLNK(st.st_mode)) {
		e->type = 'l';
		if ((tl = readlink(abs, target, sizeof(target))) <= 0 ||
		    (size_t)tl > BUNDLE_PATH_MAX) {
			log_warnx("bundle: leaving out the symlink %s: %s", abs, tl == -1 ?
			    strerror(errno) : "its target is too long");
			e->dropped = true;
			e->target = xstrdup("");
			p->nskipped++;
			return 0;
		}
		target[tl] = '\0';
		e->target = xstrdup(target);
		e->size = (uint64_t)tl;
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		e->type = 'f';
		e->size = (uint64_t)st.st_size;
		return 0;
	}
	e->type = 'd';
	return pack_walk(p, rel, err);
}

/* Adds what folder rel ("" = the root) holds, depth first. */
static int
pack_walk(struct packer *p, const char *rel, char *err)
{
	char		*abs, **names = NULL, *crel, *cabs;
	size_t		 nnames = 0, cap = 0, i;
	struct dirent	*de;
	DIR		*d;
	int		 rc = -1;

	abs = rel[0] ? xasprintf("%s/%s", p->root, rel) : xstrdup(p->root);
	if ((d = opendir(abs)) == NULL) {
		errf(err, "cannot read the folder %s: %s", abs, strerror(errno));
		free(abs);
		return -1;
	}
	/* Names first, the folder closed before going down: one fd at a time. */
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (nnames == cap) {
			cap = cap ? cap * 2 : 32;
			names = xreallocarray(names, cap, sizeof(*names));
		}
		names[nnames++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (nnames > 0)
		qsort(names, nnames, sizeof(*names), name_cmp);
	for (i = 0; i < nnames; i++) {
		crel = rel[0] ? xasprintf("%s/%s", rel, names[i]) : xstrdup(names[i]);
		cabs = xasprintf("%s/%s", abs, names[i]);
		rc = excluded(p, cabs) ? 0 : pack_entry(p, crel, cabs, err);
		free(crel);
		free(cabs);
		if (rc == -1)
			goto out;
	}
	rc = 0;
out:
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	free(abs);
	return rc;
}

static void
human(char *buf, size_t n, uint64_t bytes)
{
	if (bytes >= (1u << 20))
		snprintf(buf, n, "%.1f MiB", (double)bytes / (1u << 20));
	else if (bytes >= 1024)
		snprintf(buf, n, "%.1f KiB", (double)bytes / 1024);
	else
		snprintf(buf, n, "%u B", (unsigned)bytes);
}

/* The cap's error: the total, and the three biggest files first. */
static int
too_big(const struct packer *p, uint64_t total, char *err)
{
	const struct bentry	*big[3] = { NULL, NULL, NULL };
	char			 list[ERR_LEN] = "", h[32];
	size_t			 i, k, used = 0;

	for (i = 0; i < p->n; i++) {
		const struct bentry	*e = &p->t[i];

		if (e->type != 'f')
			continue;
		for (k = 0; k < 3; k++) {
			if (big[k] == NULL || e->size > big[k]->size) {
				memmove(&big[k + 1], &big[k], (2 - k) * sizeof(big[0]));
				big[k] = e;
				break;
			}
		}
	}
	for (k = 0; k < 3 && big[k]; k++) {
		human(h, sizeof(h), big[k]->size);
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s (%s)",
		    k ? ", " : "", big[k]->path, h);
		if (used >= sizeof(list))
			break;
	}
	return errf(err, "the config folder makes a bundle of %llu bytes, over the "
	    "cap of %u (8 MiB); biggest: %s. Move them out of %s, or run workers "
	    "with the folder at the same path and --bundle off",
	    (unsigned long long)total, BUNDLE_MAX, list, p->root);
}

/*
 * Reads e's file into e->data as it is now: a file written meanwhile (a
 * log in the folder, this coordinator's own stderr) is taken at its size
 * when opened, one that shrank as it is.  1 when it is gone (left out), 0,
 * or -1 with err.
 */
static int
pack_file(const struct packer *p, struct bentry *e, char *err)
{
	char		*abs = xasprintf("%s/%s", p->root, e->path);
	struct stat	 st;
	uint64_t	 got = 0;
	uint8_t		*buf;
	ssize_t		 r;
	int		 fd, rc = -1;

	if ((fd = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			rc = 1;
		else
			errf(err, "cannot bundle %s: %s", abs, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > BUNDLE_MAX) {
		errf(err, "cannot bundle %s: it changed while the folder was read "
		    "(no longer a file, or over the cap)", abs);
		goto out;
	}
	e->size = (uint64_t)st.st_size;
	e->data = buf = xcalloc(1, e->size ? e->size : 1);
	while (got < e->size) {
		r = read(fd, buf + got, e->size - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			errf(err, "cannot read %s: %s", abs, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (uint64_t)r;
	}
	e->size = got;
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	free(abs);
	return rc;
}

/*
 * Reads every file (the total is within the cap) and leaves out those
 * that hold the shared secret: the coordinator's own credential, which
 * no worker needs from it and an eavesdropper must never read.
 */
static int
pack_read(struct packer *p, char *err)
{
	const struct bundle_rules	*r = p->r;
	size_t				 i;
	int				 rc;

	for (i = 0; i < p->n; i++) {
		struct bentry	*e = &p->t[i];

		if (e->type != 'f' || e->dropped)
			continue;
		if ((rc = pack_file(p, e, err)) == -1)
			return -1;
		if (rc == 1) {
			log_warnx("bundle: leaving out %s/%s: it went away while the "
			    "folder was read", p->root, e->path);
			e->dropped = true;
			p->nskipped++;
		} else if (r && r->secret_len > 0 && memmem(e->data, e->size, r->secret,
		    r->secret_len) != NULL) {
			log_warnx("bundle: leaving out %s/%s: it holds the shared secret",
			    p->root, e->path);
			e->dropped = true;
			p->nskipped++;
		} else if (r && r->key_len > 0 && memmem(e->data, e->size, r->key,
		    r->key_len) != NULL) {
			log_warnx("bundle: leaving out %s/%s: it holds the coordinator's "
			    "TLS private key (--tls-cert)", p->root, e->path);
			e->dropped = true;
			p->nskipped++;
		}
	}
	return 0;
}

/*
 * Leaves out the symlinks that do not resolve to an entry of the bundle,
 * until none is left: one left out may be what another pointed through.
 */
static void
pack_drop_links(struct packer *p)
{
	char	err[ERR_LEN];
	bool	again = true;
	size_t	i;

	while (again) {
		again = false;
		for (i = 0; i < p->n; i++) {
			struct bentry	*e = &p->t[i];

			if (e->type != 'l' || e->dropped ||
			    resolve_inside(p->t, p->n, e, err) == 0)
				continue;
			log_warnx("bundle: leaving out %s/%s: %s", p->root, e->path, err);
			e->dropped = true;
			p->nskipped++;
			again = true;
		}
	}
}

int
bundle_pack(const char *dir, const struct bundle_rules *rules, struct bundle *b,
    char *err)
{
	struct packer	 p = { .root = dir, .r = rules };
	uint64_t	 total = HDR_LEN;
	uint8_t		*o;
	size_t		 i, off, count = 0;

	memset(b, 0, sizeof(*b));
	if (pack_walk(&p, "", err) == -1)
		goto fail;
	if (p.n > 0)
		qsort(p.t, p.n, sizeof(*p.t), entry_cmp);
	pack_drop_links(&p);
	for (i = 0; i < p.n; i++) {
		if (p.t[i].dropped)
			continue;
		total += ENTRY_LEN(strlen(p.t[i].path), p.t[i].size);
		count++;
	}
	if (total > BUNDLE_MAX) {
		too_big(&p, total, err);
		goto fail;
	}
	if (pack_read(&p, err) == -1)
		goto fail;
	pack_drop_links(&p);		/* a link to a file left out */
	for (i = 0, total = HDR_LEN, count = 0; i < p.n; i++) {
		if (p.t[i].dropped)
			continue;
		total += ENTRY_LEN(strlen(p.t[i].path), p.t[i].size);
		count++;
	}
	if (total > BUNDLE_MAX) {	/* files grew while they were read */
		too_big(&p, total, err);
		goto fail;
	}
	b->data = o = xcalloc(1, (size_t)total);
	memcpy(o, MAGIC, MAGIC_LEN);
	put_be32(o + MAGIC_LEN, FORMAT);
	put_be32(o + MAGIC_LEN + 4, (uint32_t)count);
	off = HDR_LEN;
	for (i = 0; i < p.n; i++) {
		const struct bentry	*e = &p.t[i];
		size_t			 plen = strlen(e->path);

		if (e->dropped)
			continue;
		o[off] = (uint8_t)e->type;
		put_be16(o + off + 1, e->mode);
		put_be16(o + off + 3, (uint16_t)plen);
		memcpy(o + off + ENTRY_HDR, e->path, plen);
		off += ENTRY_HDR + plen;
		put_be32(o + off, (uint32_t)e->size);
		off += 4;
		if (e->type == 'l')
			memcpy(o + off, e->target, e->size);
		else if (e->type == 'f')
			memcpy(o + off, e->data, e->size);
		off += e->size;
	}
	b->len = off;
	b->nentries = count;
	b->nskipped = p.nskipped;
	if (bundle_hash(b->data, b->len, b->hash, err) == -1)
		goto fail;
	table_free(p.t, p.n, true);
	return 0;
fail:
	table_free(p.t, p.n, true);
	bundle_free(b);
	return -1;
}

void
bundle_free(struct bundle *b)
{
	if (b == NULL)
		return;
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int
bundle_hash(const void *data, size_t len, char hex[BUNDLE_HASH_LEN + 1], char *err)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen = 0, i;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen * 2 != BUNDLE_HASH_LEN)
		return errf(err, "cannot hash the bundle: OpenSSL's SHA-256 failed");
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

bool
bundle_hash_valid(const char *s)
{
	size_t	i;

	if (s == NULL || strlen(s) != BUNDLE_HASH_LEN)
		return false;
	for (i = 0; i < BUNDLE_HASH_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* ---- the worker's cache ----------------------------------------------- */

/* Whether path is a directory of ours, not a symlink; why not in err. */
static int
dir_is_ours(const char *path, bool private, char *err)
{
	struct stat	st;

	if (lstat(path, &st) == -1)
		return errf(err, "%s: %s", path, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return errf(err, "%s is a symlink: refusing it", path);
	if (!S_ISDIR(st.st_mode))
		return errf(err, "%s is not a directory: refusing it", path);
	if (st.st_uid != geteuid())
		return errf(err, "%s belongs to uid %u, not to this user (uid %u): "
		    "refusing it", path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (private && (st.st_mode & 022) != 0)
		return errf(err, "%s is writable by group or others (mode %04o): "
		    "refusing it", path, (unsigned)(st.st_mode & 07777));
	return 0;
}

char *
bundle_cache_dir(const char *root, char *err)
{
	char	*dir;

	if (mkdir_p(root, 0755, err) == -1)
		return NULL;
	dir = xasprintf("%s/%s%u", root, BUNDLE_CACHE_PREFIX, (unsigned)geteuid());
	if (mkdir(dir, 0700) == 0) {
		if (chmod(dir, 0700) == -1) {	/* whatever the umask */
			errf(err, "cannot set the mode of %s: %s", dir, strerror(errno));
			goto fail;
		}
	} else if (errno != EEXIST) {
		errf(err, "cannot create the bundle cache %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (dir_is_ours(dir, true, err) == -1)
		goto fail;
	return dir;
fail:
	free(dir);
	return NULL;
}

int
bundle_cached(const char *cache, const char *hash, char **dirp, char *err)
{
	struct stat	 st;
	char		*dir;

	*dirp = NULL;
	if (!bundle_hash_valid(hash))
		return errf(err, "not a bundle hash: 64 hex digits wanted");
	dir = xasprintf("%s/bundle-%s", cache, hash);
	if (lstat(dir, &st) == -1 && errno == ENOENT) {
		free(dir);
		return 0;
	}
	if (dir_is_ours(dir, false, err) == -1) {
		free(dir);
		return -1;
	}
	*dirp = dir;
	return 1;
}

int
bundle_install(const char *cache, const char *hash, const void *data, size_t len,
    char **dirp, char *err)
{
	char	 got[BUNDLE_HASH_LEN + 1], *tmp, *dir;
	int	 rc = -1;

	*dirp = NULL;
	if (!bundle_hash_valid(hash))
		return errf(err, "not a bundle hash: 64 hex digits wanted");
	if (bundle_hash(data, len, got, err) == -1)
		return -1;
	if (strcmp(got, hash) != 0)
		return errf(err, "the bundle received hashes to %.12s..., not to the "
		    "announced %.12s...: refusing it", got, hash);
	tmp = xasprintf("%s/.tmp-%.12s-XXXXXX", cache, hash);
	dir = xasprintf("%s/bundle-%s", cache, hash);
	if (mkdtemp(tmp) == NULL) {
		errf(err, "cannot create a folder in %s: %s", cache, strerror(errno));
		goto out;
	}
	if (bundle_unpack(data, len, tmp, err) == -1) {
		rm_rf(tmp);
		goto out;
	}
	/* Whole or not at all; another process may have won the race. */
	if (rename(tmp, dir) == -1) {
		int	saved = errno;

		rm_rf(tmp);
		if (saved != EEXIST && saved != ENOTEMPTY) {
			errf(err, "cannot install %s: %s", dir, strerror(saved));
			goto out;
		}
		if (dir_is_ours(dir, false, err) == -1)
			goto out;
	}
	*dirp = dir;
	dir = NULL;
	rc = 0;
out:
	free(tmp);
	free(dir);
	return rc;
}

/* --- pruning the cache --- */

/* The held bundle: its directory, locked shared until the process ends. */
static int	held_fd = -1;
static dev_t	held_dev;
static ino_t	held_ino;

int
bundle_hold(const char *dir, char *err)
{
	struct stat	st, now;
	int		fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errf(err, "cannot open %s: %s", dir, strerror(errno));
	if (fstat(fd, &st) == -1 || (held_fd != -1 && st.st_dev == held_dev &&
	    st.st_ino == held_ino)) {
		close(fd);
		return 0;	/* held already */
	}
	/* Not while a prune removes it; then, still the one at that path. */
	if (flock(fd, LOCK_SH | LOCK_NB) == -1 || lstat(dir, &now) == -1 ||
	    now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
		close(fd);
		return errf(err, "%s is being removed from the cache", dir);
	}
	futimens(fd, NULL);	/* last used: now */
	if (held_fd != -1)
		close(held_fd);	/* a process runs one bundle at a time */
	held_fd = fd;
	held_dev = st.st_dev;
	held_ino = st.st_ino;
	return 0;
}

struct cached {
	char	*name;
	time_t	 used;
};

static int
cmp_used(const void *a, const void *b)
{
	const struct cached	*x = a, *y = b;

	return x->used > y->used ? -1 : x->used < y->used;
}

/* Removes cache/name unless a process holds it; 1 when it went. */
static int
prune_one(const char *cache, const char *name)
{
	char	*path = xasprintf("%s/%s", cache, name), *gone;
	int	 fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		free(path);
		return 0;
	}
	gone = xasprintf("%s/.gone-%s-%ld", cache, name + strlen("bundle-"),
	    (long)getpid());
	/* Held by a worker that runs on it: it stays. */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && rename(path, gone) == 0) {
		rm_rf(gone);
		rc = 1;
	}
	close(fd);
	free(gone);
	free(path);
	return rc;
}

int
bundle_prune(const char *cache, int keep)
{
	struct cached	*v = NULL;
	struct dirent	*de;
	struct stat	 st;
	size_t		 n = 0, i;
	time_t		 now = time(NULL);
	char		*path;
	DIR		*d;
	int		 removed = 0;

	if ((d = opendir(cache)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		bool	tmp = strncmp(de->d_name, ".tmp-", 5) == 0 ||
			    strncmp(de->d_name, ".gone-", 6) == 0;

		if (!tmp && (strncmp(de->d_name, "bundle-", 7) != 0 ||
		    !bundle_hash_valid(de->d_name + 7)))
			continue;
		path = xasprintf("%s/%s", cache, de->d_name);
		if (lstat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
			free(path);
			continue;
		}
		/* An install or a removal that died half-way. */
		if (tmp) {
			if (now - st.st_mtime > BUNDLE_TMP_AGE_S)
				rm_rf(path);
			free(path);
			continue;
		}
		free(path);
		v = xreallocarray(v, n + 1, sizeof(*v));
		v[n].name = xstrdup(de->d_name);
		v[n++].used = st.st_mtime;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_used);
	for (i = 0; i < n; i++) {
		if ((int)i >= keep)
			removed += prune_one(cache, v[i].name);
		free(v[i].name);
	}
	free(v);
	return removed;
}
