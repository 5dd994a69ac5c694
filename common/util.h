/*
 * Small helpers every role uses.  Error convention (STYLE.md): return 0 or
 * -1 (or a pointer / NULL) and fill the caller's char err[ERR_LEN] with a
 * sentence a user can act on.
 */
#ifndef SOAK_UTIL_H
#define SOAK_UTIL_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#define ERR_LEN	256

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
/*
 * A const pointer handed to a field that is only read but typed mutable
 * (the message structs own their strings after a decode).  NetBSD's
 * __UNCONST: through uintptr_t, so -Wcast-qual stays on everywhere else.
 */
#define UNCONST(p)	((void *)(uintptr_t)(const void *)(p))

/* Big-endian 64-bit store and load: the byte order on the wire. */
static inline void
put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

/* Big-endian 32-bit store and load: the length fields of soak's messages,
 * of a bundle and of PostgreSQL's protocol. */
static inline void
put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint32_t
get_be32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

/* errf: printf into err (size ERR_LEN); always returns -1 for `return errf(...)`. */
int	errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int64_t	now_ms(void);		/* CLOCK_MONOTONIC, for durations and deadlines only */
int64_t	now_us(void);
int64_t	wall_ms(void);		/* CLOCK_REALTIME, for report timestamps only */

/*
 * Deadlines are instants of now_ms()'s clock.  ms_until: what is left of
 * one as a poll(2) timeout, 0 once it has passed, at most INT_MAX.
 * deadline_within: the earlier of deadline and ms from now, a phase's own
 * limit inside a larger one (ms < 0: no limit of its own); never overflows.
 */
int	ms_until(int64_t deadline);
int64_t	deadline_within(int64_t deadline, int64_t ms);

/*
 * Timed waits on condition variables run on CLOCK_MONOTONIC, so a clock
 * step (NTP, an administrator) neither fires nor stalls them:
 * cond_init_monotonic initialises cv for that clock (pthread_condattr_
 * setclock), and abstime_mono_in gives the instant ms from now on it, for
 * pthread_cond_timedwait on such a cv.
 */
struct timespec;
int	cond_init_monotonic(pthread_cond_t *cv);
void	abstime_mono_in(struct timespec *ts, int64_t ms);

int	mkdir_p(const char *path, mode_t mode, char *err);
/*
 * A root soak creates and deletes under (a workspace, a keep folder),
 * made safe to use at a predictable name: path is created 0700 (missing
 * parents too, 0700), or, if something is there already, accepted only if
 * lstat(2) shows a directory (not a symbolic link) owned by the effective
 * uid that neither group nor others can write.  Anything else is refused
 * with err naming the path and what is wrong with it.
 */
int	private_dir(const char *path, char *err);
int	rm_rf(const char *path);	/* best effort; 0 if gone afterwards */
/*
 * Moves a directory tree: rename(2), or across filesystems a copy of its
 * directories, regular files and symlinks followed by removal of the source.
 */
int	move_tree(const char *from, const char *to, char *err);
/*
 * Copies a directory tree (its directories, regular files and symbolic
 * links; fifos and sockets stay behind) with their modes, and as root their
 * owners.  One thread at a time.
 */
int	copy_tree(const char *from, const char *to, char *err);
/* A folder for scratch work: /dev/shm when it is a writable tmpfs, else TMPDIR or /tmp. */
const char *scratch_root(void);
/* Reads fd to its end (cap bytes at most; path names it in err) into a
 * NUL-terminated heap buffer, and closes it; fd -1 is an error. */
char	*read_fd(int fd, const char *path, size_t cap, size_t *lenp, char *err);
/* Reads a whole file (cap bytes at most) into a NUL-terminated heap buffer. */
char	*read_file(const char *path, size_t cap, size_t *lenp, char *err);
/* One read of a small file (a /proc entry) into buf, NUL-terminated: its
 * length, or -1; no allocation, for a caller that reads many. */
ssize_t	 read_small(const char *path, char *buf, size_t len);
/*
 * path opened for reading only if it is a regular file (st: its stat),
 * checked before a byte is read and without blocking on a FIFO; -1 with
 * err.  read_regular_file: the same, read whole (at most cap bytes).
 */
struct stat;
int	 open_regular(const char *path, struct stat *st, char *err);
char	*read_regular_file(const char *path, size_t cap, size_t *lenp, char *err);
int	write_file(const char *path, const void *buf, size_t len, char *err);
/*
 * Replaces path with buf in one rename(2), so a reader sees the old file or
 * the new one, never half: written to "path.tmp.PID" created with mode
 * (less the umask), which the rename carries over, whatever mode an old
 * file at path had.
 */
int	write_file_atomic(const char *path, const void *buf, size_t len,
	    mode_t mode, char *err);
/*
 * Files in an output folder that someone else may have been able to write
 * to before soak ran (`--out` of a run or an exploration), made without
 * following a symlink planted there: the name is unlinked first (a file,
 * or a symlink itself, never what it points to), then created with
 * O_EXCL | O_NOFOLLOW.  fopen_new: path's, as a stream for writing;
 * file_create_at: name in the folder dfd, its descriptor.  NULL / -1 with
 * err.
 */
FILE	*fopen_new(const char *path, mode_t mode, char *err);
int	 file_create_at(int dfd, const char *name, mode_t mode, char *err);
/*
 * Replaces name in the folder dfd with buf in one renameat(2): written to
 * "name.tmp" made by file_create_at and fsync'ed, so neither the file nor
 * its temporary follows a symlink.  -1 with err.
 */
int	 file_put_at(int dfd, const char *name, const void *buf, size_t len,
	    mode_t mode, char *err);
/* All of buf to fd, EINTR retried; -1 with errno. */
int	 write_all(int fd, const void *buf, size_t len);
/* Exactly len bytes from fd; -1 at an error (errno) or an early end
 * (errno 0). */
int	 read_all(int fd, void *buf, size_t len);
/*
 * Both write_file and write_file_atomic fsync the file, and
 * write_file_atomic the directory after its rename, so what they wrote
 * survives a crash of the machine, not only of the process.
 */
void	fsync_dir(const char *dir);		/* best effort */
void	fsync_dir_of(const char *path);		/* the directory path is in */
/* Returns a heap string: dir + "/" + rel, or rel if it is absolute. */
char	*path_join(const char *dir, const char *rel);
char	*xstrdup(const char *s);	/* NULL in, NULL out; aborts on ENOMEM */
void	*xcalloc(size_t n, size_t size);
/* RFC 3986 percent-encoding: unreserved characters pass, the rest %XX. */
char	*pct_encode(const char *s);
/* realloc to n * size bytes; aborts on overflow or ENOMEM (OpenBSD's). */
void	*xreallocarray(void *p, size_t n, size_t size);
char	*xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * UTF-8's one decoder: the length (1 to 4) of the well-formed character at
 * s, which has n bytes left, and its code point in *cp (when cp is not
 * NULL); 0 when there is none: n is 0, a NUL, a stray or missing
 * continuation byte, an overlong form, a surrogate or a code point past
 * U+10FFFF.  The rule is RFC 3629's, jansson's too, so what passes here
 * json_string() accepts.
 */
size_t	utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Replaces bytes that are not valid UTF-8 (and NULs before len) with '?'. */
void	utf8_scrub(char *s, size_t len);
/* The longest prefix of s[0..len) of at most max bytes that does not end
 * inside a UTF-8 character: where to cut. */
size_t	utf8_prefix(const char *s, size_t len, size_t max);
/*
 * UTF-8's one cutter, for bytes a system under test sent that go into a
 * field of fixed size (a trace's "req", an explore record's "what"): the
 * characters of s[0..n) that fit in size - 1 bytes, copied to dst and
 * NUL-terminated; a character that does not fit whole is left out, never
 * cut, and each byte that is not part of a well-formed character (a stray
 * byte, a character cut before s was, a NUL) becomes '?', so what comes out
 * is valid UTF-8 whatever went in, and never longer than it.  dst may be s
 * (in place).  Returns the bytes written before the NUL; size 0 writes
 * nothing.
 */
size_t	utf8_cut(char *dst, size_t size, const char *s, size_t n);
/*
 * Valid, but a terminal or a reader would take it for layout: C1
 * controls, line and paragraph separators, bidirectional marks and
 * overrides (log_escape writes them as \xNN, a statement's summary as ?).
 */
bool	utf8_hidden(uint32_t cp);
/*
 * JSON strings' one hand-written writer, for the fault trace, which the
 * proxy's thread formats without jansson: s as the inside of a JSON string
 * appended at buf + *o (len bytes in all, a NUL kept after it): '"' and
 * '\\' escaped, control bytes (C0, DEL) as \u00XX, well-formed UTF-8 as it
 * is, and each byte that is not part of a well-formed character as U+FFFD
 * (the replacement character: the byte is gone, the line still reads).  So
 * whatever bytes s holds, the string reads back and json_string() takes
 * it.  -1, with *o unmoved, when it does not fit.
 */
int	jsonstr_put(char *buf, size_t len, size_t *o, const char *s);
/*
 * Decimal numbers' one reader.  dec_digits: the digits at *p (up to end)
 * into *v, *p moved past them (none read: *v is 0 and *p unmoved); -1 when
 * the number passes limit.  dec_u64: the whole of [s, end) is the number,
 * at most limit; -1 when it is empty, holds anything but digits (no sign,
 * no space) or passes limit.
 */
int	dec_digits(const char **p, const char *end, uint64_t limit, uint64_t *v);
int	dec_u64(const char *s, const char *end, uint64_t limit, uint64_t *v);
/*
 * Hex numbers' one reader: the whole of [s, end) is 1 to 16 hex digits,
 * either case, into *v; -1 when it is empty, longer, or holds anything
 * else (no sign, no "0x", no space).  strtoull(…, 16) takes all of those.
 */
int	hex_u64(const char *s, const char *end, uint64_t *v);
/* qsort's comparison of two uint64_t. */
int	cmp_u64(const void *a, const void *b);
/* The value of a hex digit (either case), or -1. */
int	hex_digit(int c);
void	strv_free(char **v);		/* frees a NULL-terminated vector */
char	**strv_dup(char *const *v);
size_t	strv_len(char *const *v);

#endif
