/*
 * The config folder as one byte buffer, for workers that do not have it
 * (docs/fleet.md "The config travels", docs/design.md, "Across machines").  The
 * coordinator packs its config file's folder once at start; a worker that
 * lacks it asks for the bytes, checks them against the hash the WELCOME
 * announced, and extracts them under its workspace root, cached by that
 * hash.
 *
 * The format (all integers big-endian, no padding):
 *
 *	"SOAKBNDL"  u32 format (1)  u32 count
 *	count entries, each:
 *	    u8  type		'd' directory, 'f' regular file, 'l' symlink
 *	    u16 mode		permission bits (st_mode & 0777)
 *	    u16 path_len	1..BUNDLE_PATH_MAX
 *	    path		relative, '/'-separated, no NUL
 *	    u32 size		'f': the file's bytes; 'l': the target's; 'd': 0
 *	    size bytes
 *
 * Entries are sorted by path (strcmp), every path once, so the same tree
 * always gives the same bytes and the same hash: SHA-256 of the whole
 * buffer, 64 lower-case hex digits.  Nothing else (owners, times) is kept.
 *
 * bundle_pack takes directories, regular files and symlinks; it leaves
 * out every entry named ".git", the paths of rules->exclude (the run's
 * output directory, the coordinator's secret file and TLS key), every
 * file holding rules->secret (the shared secret, wherever it was copied)
 * or rules->key (a line of the coordinator's TLS private key, wherever
 * the key was copied: a .key beside the .pem),
 * sockets, fifos and devices, and symlinks that do not resolve to an
 * entry of the bundle (each but .git and exclude said with log_warnx).
 * Past BUNDLE_MAX bytes or BUNDLE_MAX_ENTRIES entries it fails, naming
 * the biggest files.
 *
 * bundle_unpack trusts nothing in the buffer: every length is checked
 * against what is left; a path must be relative, without "", "." or ".."
 * components or NUL, in strictly increasing order, and its parent must be
 * a directory entry of the bundle (so no entry is reached through a
 * symlink); a symlink's target must be relative and resolve, following
 * the bundle's own symlinks, to an entry of the bundle; modes are masked
 * (files (m & 0755) | 0600, directories (m & 0755) | 0700: the x bits
 * stay, setuid, setgid, sticky and group/other write go).  Files are
 * created with O_EXCL and O_NOFOLLOW under directories opened one
 * component at a time with O_NOFOLLOW.
 */
#ifndef SOAK_BUNDLE_H
#define SOAK_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUNDLE_MAX		(8u << 20)	/* the whole buffer: under MSG_MAX */
#define BUNDLE_MAX_ENTRIES	20000
#define BUNDLE_PATH_MAX		1024		/* one entry's relative path */
#define BUNDLE_HASH_LEN		64		/* hex SHA-256 */
#define BUNDLE_CACHE_PREFIX	"soak-bundles-"	/* <root>/soak-bundles-<euid> */

struct bundle {
	uint8_t	*data;
	size_t	 len;
	size_t	 nentries;
	size_t	 nskipped;	/* left out: special files, symlinks out */
	char	 hash[BUNDLE_HASH_LEN + 1];
};

/* What bundle_pack leaves out besides .git and special files. */
struct bundle_rules {
	const char *const	*exclude;	/* absolute paths (as realpath gives
						   them), with all under them;
						   NULL-terminated, may be NULL */
	const uint8_t		*secret;	/* a file holding these bytes */
	size_t			 secret_len;	/* 0: none */
	const uint8_t		*key;		/* a file holding these bytes: a
						   line of the TLS key's PEM */
	size_t			 key_len;	/* 0: none */
};

/*
 * Packs the folder dir (absolute); rules may be NULL.  0, or -1 with err;
 * *b needs bundle_free() either way.
 */
int	bundle_pack(const char *dir, const struct bundle_rules *rules,
	    struct bundle *b, char *err);
void	bundle_free(struct bundle *b);

/* SHA-256 of data as 64 lower-case hex digits and a NUL.  0 or -1 with err. */
int	bundle_hash(const void *data, size_t len, char hex[BUNDLE_HASH_LEN + 1],
	    char *err);
/* Whether s is 64 lower-case hex digits: safe in a file name. */
bool	bundle_hash_valid(const char *s);

/* Extracts data into dir, an existing empty directory.  0 or -1 with err. */
int	bundle_unpack(const void *data, size_t len, const char *dir, char *err);

/*
 * The per-user cache under root: <root>/soak-bundles-<euid>, created mode
 * 0700 (root too, if missing).  Refused unless it is a directory (not a
 * symlink) owned by the effective user, without group or other write.
 * Heap path, or NULL with err.
 */
char	*bundle_cache_dir(const char *root, char *err);
/*
 * <cache>/bundle-<hash> when it is there: 1 with *dirp (heap), 0 when it
 * is not, -1 with err when something else is there (not a directory,
 * a symlink, another owner).
 */
int	bundle_cached(const char *cache, const char *hash, char **dirp, char *err);
/*
 * Checks that data hashes to hash, extracts it into a fresh temporary
 * directory of cache and renames that to <cache>/bundle-<hash>, so no
 * process ever sees half a tree.  One that lost the race to another
 * process installing the same hash takes the winner's.  0 with *dirp
 * (heap), or -1 with err.
 */
int	bundle_install(const char *cache, const char *hash, const void *data,
	    size_t len, char **dirp, char *err);

/*
 * The cache is pruned, or it would grow by a bundle with every change to
 * a config folder, for ever.  A process that uses <cache>/bundle-<hash>
 * holds it (bundle_hold: a shared flock on the directory, for as long as
 * the process lives, and its mtime set to now: "last used"); bundle_prune
 * then removes every bundle but the BUNDLE_KEEP used last, except those
 * some process holds (a worker of an older run, still running on it),
 * and leftovers of interrupted installs older than BUNDLE_TMP_AGE_S.  A
 * bundle goes by rename first, under an exclusive lock, so a process
 * about to take it either holds it first or finds it gone and fetches
 * it again.  Returns how many bundles it removed.
 */
#define BUNDLE_KEEP		8
#define BUNDLE_TMP_AGE_S	3600
/* 0, or -1 with err: dir is gone or being removed (fetch it again). */
int	bundle_hold(const char *dir, char *err);
int	bundle_prune(const char *cache, int keep);

#endif
