#include "common/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

const char *
exec_path(void)
{
	const char	*path = getenv("PATH");

	return path != NULL ? path : "/usr/local/bin:/usr/bin:/bin";
}

/*
 * The #! line of an executable file, as the kernel reads it: an
 * interpreter that is not there is execve's ENOENT, which says nothing of
 * the interpreter, nor of a CRLF line ("/bin/sh\r").
 */
static int
check_shebang(const char *file, int *errnum, char *err)
{
	char	buf[256], *p, *q;
	ssize_t	n;
	int	fd;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;	/* exec will say; reading is not its business */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 2 || buf[0] != '#' || buf[1] != '!')
		return 0;
	buf[n] = '\0';
	for (p = buf + 2; *p == ' ' || *p == '\t'; p++)
		;
	for (q = p; *q && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\r'; q++)
		;
	if (*q == '\r' || (strchr(q, '\n') && strchr(q, '\n')[-1] == '\r')) {
		*errnum = ENOENT;
		return errf(err, "%s: its #! line ends in a carriage return (the "
		    "file has Windows line endings)", file);
	}
	*q = '\0';
	if (*p != '/')
		return 0;
	if (access(p, X_OK) == -1) {
		*errnum = errno == ENOENT || errno == ENOTDIR ? ENOENT : errno;
		return errf(err, "%s: its #! interpreter %s %s", file, p,
		    *errnum == ENOENT ? "is not there" : strerror(*errnum));
	}
	return 0;
}

/* One file that exec would try: 0, or -1 with *errnum and err. */
static int
check_file(const char *file, int *errnum, char *err)
{
	struct stat	st;

	if (stat(file, &st) == -1) {
		*errnum = errno;
		return errf(err, "%s: %s", file, strerror(errno));
	}
	if (S_ISDIR(st.st_mode)) {
		*errnum = EACCES;
		return errf(err, "%s: is a directory, not a program", file);
	}
	if (!S_ISREG(st.st_mode) || access(file, X_OK) == -1) {
		*errnum = EACCES;
		return errf(err, "%s: not executable (chmod +x)", file);
	}
	return check_shebang(file, errnum, err);
}

int
exec_check(const char *argv0, int *errnum, char *err)
{
	const char	*path = exec_path(), *p, *end;
	char		 file[PATH_MAX], why[ERR_LEN] = "";
	int		 e, denied = 0;

	*errnum = 0;
	if (strchr(argv0, '/') != NULL)
		return check_file(argv0, errnum, err);
	/* execvpe's search: each PATH entry in turn ("" is the current
	 * folder); one that is there but may not run is remembered, and
	 * the search goes on. */
	for (p = path;; p = end + 1) {
		end = strchrnul(p, ':');
		if ((size_t)snprintf(file, sizeof(file), "%.*s%s%s", (int)(end - p), p,
		    end > p ? "/" : "", argv0) < sizeof(file)) {
			if (check_file(file, &e, why) == 0)
				return 0;
			if (e != ENOENT && e != ENOTDIR && !denied) {
				denied = e;
				errf(err, "%s", why);
			}
		}
		if (*end == '\0')
			break;
	}
	if (denied) {
		*errnum = denied;
		return -1;
	}
	*errnum = ENOENT;
	return errf(err, "%s: not found on PATH (%s)", argv0, path);
}
