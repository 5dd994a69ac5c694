#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int
errf(char *err, const char *fmt, ...)
{
	va_list	ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

int64_t
now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
now_ms(void)
{
	return now_us() / 1000;
}

int64_t
wall_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
ms_until(int64_t deadline)
{
	int64_t	now = now_ms();

	if (deadline <= now)
		return 0;
	return deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
}

int64_t
deadline_within(int64_t deadline, int64_t ms)
{
	int64_t	now = now_ms();

	if (ms < 0 || ms >= INT64_MAX - now)
		return deadline;
	return now + ms < deadline ? now + ms : deadline;
}

static void
abstime_on(clockid_t clock, struct timespec *ts, int64_t ms)
{
	clock_gettime(clock, ts);
	if (ms < 0)
		ms = 0;
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

void
abstime_mono_in(struct timespec *ts, int64_t ms)
{
	abstime_on(CLOCK_MONOTONIC, ts, ms);
}

int
cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t	attr;
	int			rv;

	if ((rv = pthread_condattr_init(&attr)) != 0)
		return rv;
	if ((rv = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)) == 0)
		rv = pthread_cond_init(cv, &attr);
	pthread_condattr_destroy(&attr);
	return rv;
}

int
mkdir_p(const char *path, mode_t mode, char *err)
{
	char	buf[4096];
	size_t	i, len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return errf(err, "cannot create directory \"%s\": bad path", path);
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			return errf(err, "cannot create directory \"%s\": %s",
			    buf, strerror(errno));
		buf[i] = (i == len) ? '\0' : '/';
	}
	return 0;
}

int
private_dir(const char *path, char *err)
{
	struct stat	 st;
	char		*parent = NULL, *slash;
	int		 rc = -1;

	if (path == NULL || *path == '\0')
		return errf(err, "no directory given");
	parent = xstrdup(path);
	if ((slash = strrchr(parent, '/')) != NULL && slash != parent) {
		*slash = '\0';
		if (mkdir_p(parent, 0700, err) == -1)
			goto out;
	}
	if (mkdir(path, 0700) == 0) {
		rc = 0;
		goto out;
	}
	if (errno != EEXIST) {
		errf(err, "cannot create directory \"%s\": %s", path, strerror(errno));
		goto out;
	}
	/* Something is there: ours to use only if nobody else can have put
	 * it there or change what is in it. */
	if (lstat(path, &st) == -1)
		errf(err, "cannot inspect \"%s\": %s", path, strerror(errno));
	else if (S_ISLNK(st.st_mode))
		errf(err, "\"%s\" is a symbolic link, not a directory of soak's own: "
		    "refusing it (remove it, or choose another path)", path);
	else if (!S_ISDIR(st.st_mode))
		errf(err, "\"%s\" exists and is not a directory: refusing it", path);
	else if (st.st_uid != geteuid())
		errf(err, "\"%s\" is owned by uid %u, not by this user (uid %u): "
		    "refusing it (remove it, or choose another path)", path,
		    (unsigned)st.st_uid, (unsigned)geteuid());
	else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		errf(err, "\"%s\" is writable by %s (mode %04o): refusing it "
		    "(chmod go-w, or choose another path)", path,
		    (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ?
		    "its group and others" : (st.st_mode & S_IWGRP) ? "its group" :
		    "others", (unsigned)(st.st_mode & 07777));
	else
		rc = 0;
out:
	free(parent);
	return rc;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static char	copy_dst[4096];
static size_t	copy_src_len;
static int	copy_failed;

static int
copy_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char	dst[8192], buf[65536], link[4096];
	ssize_t	n;
	int	in, out;

	(void)ftw;
	snprintf(dst, sizeof(dst), "%s%s", copy_dst, path + copy_src_len);
	switch (flag) {
	case FTW_D:
		if (mkdir(dst, 0700) == -1 && errno != EEXIST)
			copy_failed = errno;
		/* its own mode (not the umask's), and as root its owner */
		else if (chmod(dst, st->st_mode & 07777) == -1 ||
		    (geteuid() == 0 && chown(dst, st->st_uid, st->st_gid) == -1))
			copy_failed = errno;
		return 0;
	case FTW_SL:
		if ((n = readlink(path, link, sizeof(link) - 1)) >= 0) {
			link[n] = '\0';
			if (symlink(link, dst) == -1 || (geteuid() == 0 &&
			    lchown(dst, st->st_uid, st->st_gid) == -1))
				copy_failed = errno;
		}
		return 0;
	case FTW_F:
		if (!S_ISREG(st->st_mode))
			return 0;	/* fifos and sockets stay behind */
		if ((in = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			copy_failed = errno;
			return 0;
		}
		if ((out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    st->st_mode & 07777)) == -1) {
			copy_failed = errno;
			close(in);
			return 0;
		}
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n) {
				copy_failed = errno ? errno : EIO;
				break;
			}
		if (n == -1 || fchmod(out, st->st_mode & 07777) == -1 ||
		    (geteuid() == 0 && fchown(out, st->st_uid, st->st_gid) == -1))
			copy_failed = errno;
		if (close(out) == -1)
			copy_failed = errno;
		close(in);
		return 0;
	default:
		return 0;
	}
}

int
copy_tree(const char *from, const char *to, char *err)
{
	/* nftw has no context argument; the copy runs on one thread at a time. */
	if (snprintf(copy_dst, sizeof(copy_dst), "%s", to) >= (int)sizeof(copy_dst))
		return errf(err, "cannot copy %s: the path %s is too long", from, to);
	copy_src_len = strlen(from);
	copy_failed = 0;
	if (nftw(from, copy_one, 32, FTW_PHYS) == -1 || copy_failed)
		return errf(err, "cannot copy %s to %s: %s", from, to,
		    strerror(copy_failed ? copy_failed : errno));
	return 0;
}

int
move_tree(const char *from, const char *to, char *err)
{
	if (rename(from, to) == 0)
		return 0;
	if (errno != EXDEV)
		return errf(err, "cannot move %s to %s: %s", from, to, strerror(errno));
	if (copy_tree(from, to, err) == -1)
		return -1;
	rm_rf(from);
	return 0;
}

const char *
scratch_root(void)
{
	struct stat	st;
	const char	*t;

	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

int
rm_rf(const char *path)
{
	struct stat	st;

	if (path == NULL || lstat(path, &st) == -1)
		return 0;
	nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	return lstat(path, &st) == -1 ? 0 : -1;
}

char *
read_fd(int fd, const char *path, size_t cap, size_t *lenp, char *err)
{
	char	*buf = NULL;
	size_t	 len = 0, size = 0;
	ssize_t	 n;

	for (;;) {
		if (len + 1 >= size) {
			char	*nb;

			size = size ? size * 2 : 4096;
			if ((nb = realloc(buf, size)) == NULL) {
				errf(err, "reading \"%s\": out of memory", path);
				goto fail;
			}
			buf = nb;
		}
		n = read(fd, buf + len, size - len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			errf(err, "cannot read \"%s\": %s", path, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		len += n;
		if (len > cap) {
			errf(err, "\"%s\" is larger than %zu bytes", path, cap);
			goto fail;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

ssize_t
read_small(const char *path, char *buf, size_t len)
{
	ssize_t	n;
	int	fd;

	if (len == 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while ((n = read(fd, buf, len - 1)) == -1 && errno == EINTR)
		;
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

char *
read_file(const char *path, size_t cap, size_t *lenp, char *err)
{
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		errf(err, "cannot open \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	return read_fd(fd, path, cap, lenp, err);
}

int
open_regular(const char *path, struct stat *st, char *err)
{
	struct stat	mine;
	int		fd;

	if (st == NULL)
		st = &mine;
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) == -1)
		return errf(err, "cannot open \"%s\": %s", path, strerror(errno));
	if (fstat(fd, st) == -1) {
		errf(err, "cannot open \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		errf(err, "\"%s\" is not a regular file (%s)", path,
		    S_ISFIFO(st->st_mode) ? "a FIFO" : S_ISDIR(st->st_mode) ? "a directory" :
		    S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device" :
		    S_ISSOCK(st->st_mode) ? "a socket" : "not a file");
		goto fail;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == -1) {
		errf(err, "cannot open \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

char *
read_regular_file(const char *path, size_t cap, size_t *lenp, char *err)
{
	int	fd;

	if ((fd = open_regular(path, NULL, err)) == -1)
		return NULL;
	return read_fd(fd, path, cap, lenp, err);
}

static int
write_mode(const char *path, const void *buf, size_t len, mode_t mode, bool excl,
    char *err)
{
	const char	*p = buf;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (excl ?
	    O_EXCL | O_NOFOLLOW : 0), mode)) == -1)
		return errf(err, "cannot create \"%s\": %s", path, strerror(errno));
	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			errf(err, "cannot write \"%s\": %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		p += n;
		len -= n;
	}
	if (fsync(fd) == -1 && errno != EINVAL) {
		errf(err, "cannot write \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (close(fd) == -1)
		return errf(err, "cannot write \"%s\": %s", path, strerror(errno));
	return 0;
}

void
fsync_dir_of(const char *path)
{
	const char	*slash = strrchr(path, '/');
	char		*dir = slash == NULL ? xstrdup(".") : slash == path ?
			    xstrdup("/") : xasprintf("%.*s", (int)(slash - path), path);

	fsync_dir(dir);
	free(dir);
}

void
fsync_dir(const char *dir)
{
	int	fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	(void)fsync(fd);
	close(fd);
}

int
write_file(const char *path, const void *buf, size_t len, char *err)
{
	return write_mode(path, buf, len, 0644, false, err);
}

int
write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode,
    char *err)
{
	char	*tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int	 rc = -1;

	/* A leftover of a crashed writer could carry a wider mode, and a
	 * symlink planted there would be followed: made anew (write_mode's
	 * O_EXCL | O_NOFOLLOW) */
	unlink(tmp);
	if (write_mode(tmp, buf, len, mode, true, err) == -1) {
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) == -1) {
		errf(err, "cannot rename \"%s\" to \"%s\": %s", tmp, path,
		    strerror(errno));
		unlink(tmp);
		goto out;
	}
	fsync_dir_of(path);
	rc = 0;
out:
	free(tmp);
	return rc;
}

int
write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
read_all(int fd, void *buf, size_t len)
{
	char	*p = buf;
	ssize_t	 n;

	while (len > 0) {
		if ((n = read(fd, p, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

FILE *
fopen_new(const char *path, mode_t mode, char *err)
{
	FILE	*f;
	int	 fd;

	if (unlink(path) == -1 && errno != ENOENT) {
		errf(err, "cannot replace \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    mode)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		errf(err, "cannot create \"%s\": %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	return f;
}

int
file_create_at(int dfd, const char *name, mode_t mode, char *err)
{
	int	fd;

	if (unlinkat(dfd, name, 0) == -1 && errno != ENOENT)
		return errf(err, "cannot replace \"%s\": %s", name, strerror(errno));
	if ((fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1)
		return errf(err, "cannot create \"%s\": %s", name, strerror(errno));
	return fd;
}

int
file_put_at(int dfd, const char *name, const void *buf, size_t len, mode_t mode,
    char *err)
{
	char	*tmp = xasprintf("%s.tmp", name);
	int	 fd, rc = -1;

	if ((fd = file_create_at(dfd, tmp, mode, err)) == -1)
		goto out;
	if (write_all(fd, buf, len) == -1 || (fsync(fd) == -1 && errno != EINVAL)) {
		errf(err, "cannot write \"%s\": %s", tmp, strerror(errno));
		close(fd);
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	if (close(fd) == -1 || renameat(dfd, tmp, dfd, name) == -1) {
		errf(err, "cannot write \"%s\": %s", name, strerror(errno));
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	(void)fsync(dfd);
	rc = 0;
out:
	free(tmp);
	return rc;
}

char *
path_join(const char *dir, const char *rel)
{
	if (rel[0] == '/' || dir == NULL || dir[0] == '\0')
		return xstrdup(rel);
	return xasprintf("%s/%s", dir, rel);
}

char *
xstrdup(const char *s)
{
	char	*d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		abort();
	return d;
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if ((p = calloc(n ? n : 1, size ? size : 1)) == NULL)
		abort();
	return p;
}

char *
pct_encode(const char *s)
{
	static const char	 hex[] = "0123456789ABCDEF";
	char			*d, *p;

	p = d = xcalloc(strlen(s) * 3 + 1, 1);
	for (; *s != '\0'; s++) {
		unsigned char	c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c) != NULL)
			*p++ = (char)c;
		else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		}
	}
	return d;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	void	*np;

	if (size != 0 && n > SIZE_MAX / size)
		abort();
	if ((np = realloc(p, n != 0 && size != 0 ? n * size : 1)) == NULL)
		abort();
	return np;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		abort();
	va_end(ap);
	return s;
}

size_t
strv_len(char *const *v)
{
	size_t	n = 0;

	while (v && v[n])
		n++;
	return n;
}

void
strv_free(char **v)
{
	size_t	i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

char **
strv_dup(char *const *v)
{
	size_t	  i, n = strv_len(v);
	char	**d;

	if (v == NULL)
		return NULL;
	d = xcalloc(n + 1, sizeof(*d));
	for (i = 0; i < n; i++)
		d[i] = xstrdup(v[i]);
	return d;
}

size_t
utf8_decode(const char *str, size_t n, uint32_t *cp)
{
	static const uint32_t	 min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 len, i;
	uint32_t		 c;

	if (n == 0 || s[0] == 0)
		return 0;
	if (s[0] < 0x80) {
		len = 1;
		c = s[0];
	} else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len > 1 && c < min[len]) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	if (cp != NULL)
		*cp = c;
	return len;
}

void
utf8_scrub(char *s, size_t len)
{
	size_t	i = 0, k;

	while (i < len) {
		if ((k = utf8_decode(s + i, len - i, NULL)) == 0)
			s[i++] = '?';
		else
			i += k;
	}
}

int
dec_digits(const char **p, const char *end, uint64_t limit, uint64_t *v)
{
	uint64_t	d;

	for (*v = 0; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
		d = (uint64_t)(**p - '0');
		if (*v > (limit - d) / 10 || (limit < d))
			return -1;
		*v = *v * 10 + d;
	}
	return 0;
}

int
dec_u64(const char *s, const char *end, uint64_t limit, uint64_t *v)
{
	const char	*p = s;
	uint64_t	 x;

	if (dec_digits(&p, end, limit, &x) == -1 || p == s || p != end)
		return -1;
	*v = x;
	return 0;
}

int
hex_u64(const char *s, const char *end, uint64_t *v)
{
	uint64_t	x = 0;
	const char	*p;
	int		 d;

	if (s == NULL || end <= s || end - s > 16)
		return -1;
	for (p = s; p < end; p++) {
		if ((d = hex_digit((unsigned char)*p)) < 0)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}

int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

size_t
utf8_prefix(const char *s, size_t len, size_t max)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n;

	if (len <= max)
		return len;
	/* p[max] is the first byte left out: back up to the start of the
	 * character it continues (three bytes at most; more is not UTF-8). */
	for (n = max; n > 0 && max - n < 3 && (p[n] & 0xc0) == 0x80; n--)
		;
	return n;
}

size_t
utf8_cut(char *dst, size_t size, const char *s, size_t n)
{
	size_t	i = 0, o = 0, k;

	if (size == 0)
		return 0;
	while (i < n) {
		if ((k = utf8_decode(s + i, n - i, NULL)) == 0) {
			if (o + 1 > size - 1)
				break;
			dst[o++] = '?';
			i++;
			continue;
		}
		if (o + k > size - 1)
			break;
		memmove(dst + o, s + i, k);	/* dst may be s: o <= i */
		o += k;
		i += k;
	}
	dst[o] = '\0';
	return o;
}

bool
utf8_hidden(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c ||
	    (cp >= 0x200e && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069);
}

int
jsonstr_put(char *buf, size_t len, size_t *o, const char *str)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 at = *o, k, plen;
	char			 piece[8];

	while (*s != '\0') {
		plen = 0;
		k = 1;
		if (*s == '"' || *s == '\\') {
			piece[plen++] = '\\';
			piece[plen++] = (char)*s;
		} else if (*s < 0x20 || *s == 0x7f) {
			memcpy(piece, "\\u00", 4);
			plen = 4;
			piece[plen++] = hex[*s >> 4];
			piece[plen++] = hex[*s & 0xf];
		} else if (*s < 0x80) {
			piece[plen++] = (char)*s;
		} else if ((k = utf8_decode((const char *)s, strnlen((const char *)s,
		    4), NULL)) > 0) {
			memcpy(piece, s, k);
			plen = k;
		} else {
			k = 1;		/* this byte alone: U+FFFD */
			memcpy(piece, "\xef\xbf\xbd", 3);
			plen = 3;
		}
		if (at + plen + 1 > len)
			goto full;
		memcpy(buf + at, piece, plen);
		at += plen;
		s += k;
	}
	if (at + 1 > len)
		goto full;
	buf[at] = '\0';
	*o = at;
	return 0;
full:
	if (*o < len)
		buf[*o] = '\0';	/* as it was: what was appended goes */
	return -1;
}

int
hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
