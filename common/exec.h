/*
 * What exec(3) would do with a command, asked before anything runs: the
 * PATH it searches and whether a command's program would start.  Here, not
 * in worker/, because `soak check`, `soak run` and the worker all ask it.
 */
#ifndef SOAK_EXEC_H
#define SOAK_EXEC_H

/*
 * The PATH a bare program name is looked up in: the worker's own, which
 * execvpe(3) searches and every turn inherits (docs/turns.md "What a
 * turn sees"); /usr/local/bin:/usr/bin:/bin when it has none.
 */
const char	*exec_path(void);
/*
 * What exec would find for a command's argv0, without running anything
 * (`soak check`, and the words of a worker's exec error): argv0 with a
 * '/' is that file (the config loader made a relative one absolute
 * against the config's folder), a bare name is searched in exec_path() as
 * execvpe does.  0 when exec would start a program; -1 with *errnum the
 * errno exec would give and err saying why in the user's terms: not
 * there, not on PATH, not executable, a directory, a #! interpreter that
 * is not there or a #! line that ends in a carriage return.
 */
int		 exec_check(const char *argv0, int *errnum, char *err);

#endif
