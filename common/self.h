/*
 * How this soak was invoked, so that a command it prints (the replay
 * command of the summary, report.json, junit.xml and the tickets) runs as
 * printed: `./soak` when it was run as ./soak, `soak` when the shell found
 * it on PATH, an absolute path otherwise.
 */
#ifndef SOAK_SELF_H
#define SOAK_SELF_H

/*
 * Records argv[0], the working directory and the executable
 * (/proc/self/exe).  main() calls it first; before it (a unit test) every
 * word below is the executable's absolute path, or "soak".
 */
void	 self_init(const char *argv0);

/*
 * The word that runs this binary from base (heap, not shell-quoted):
 *  - argv[0] without a slash that PATH resolves to this executable: argv[0];
 *  - base NULL (the working directory at start): argv[0] as given when it
 *    names this executable from there (./soak, build/soak, /opt/soak);
 *  - base a folder: "./" and argv[0]'s path relative to base when it lies
 *    under base (`./soak` from a repository's top), else its absolute path
 *    (lexically: the name stays the one invoked, a symlink's); base "/"
 *    always gives the absolute path;
 *  - otherwise the executable's absolute path.
 */
char	*self_command(const char *base);

/* The working directory at self_init, or NULL (unset, or unknown then). */
const char *self_cwd(void);

/*
 * The top of the git work tree that holds dir (the nearest folder at or
 * above it with a .git entry, a folder or a worktree's file), as a heap
 * string, or NULL when there is none.  Reads the file system; runs no git.
 */
char	*git_toplevel(const char *dir);

/*
 * path relative to base when path lies under base (both absolute, no "."
 * or ".." segments): a heap string, "." when they are equal; else NULL.
 */
char	*path_under(const char *path, const char *base);

#endif
