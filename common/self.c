#include "common/self.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static char	*s_argv0;	/* as given */
static char	*s_cwd;		/* getcwd at start: a physical path */
static char	*s_exe;		/* realpath of /proc/self/exe */

void
self_init(const char *argv0)
{
	char	buf[PATH_MAX];

	free(s_argv0);
	free(s_cwd);
	free(s_exe);
	s_argv0 = argv0 && *argv0 ? xstrdup(argv0) : NULL;
	s_cwd = getcwd(buf, sizeof(buf)) ? xstrdup(buf) : NULL;
	s_exe = realpath("/proc/self/exe", buf) ? xstrdup(buf) : NULL;
}

const char *
self_cwd(void)
{
	return s_cwd;
}

/* Whether path is this executable (the same inode, through any symlink). */
static bool
is_self(const char *path)
{
	struct stat	a, b;

	return s_exe != NULL && stat(path, &a) == 0 && stat(s_exe, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether the shell, looking argv[0] up on PATH, runs this executable. */
static bool
found_on_path(const char *name)
{
	const char	*path = getenv("PATH"), *p, *end;
	bool		 found = false;

	if (path == NULL)
		return false;
	for (p = path; !found; p = end + 1) {
		char	*cand;

		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		/* An empty entry is the working directory. */
		cand = end == p ? xasprintf("./%s", name) :
		    xasprintf("%.*s/%s", (int)(end - p), p, name);
		if (access(cand, X_OK) == 0) {
			/* The first executable match is what the shell runs. */
			found = is_self(cand);
			free(cand);
			return found;
		}
		free(cand);
		if (*end == '\0')
			break;
	}
	return found;
}

/* dir + "/" + rel with "." and ".." segments taken out by their text. */
static char *
lexical_join(const char *dir, const char *rel)
{
	char	*all = path_join(dir, rel), *out = xcalloc(strlen(all) + 2, 1);
	char	*seg, *save = NULL;
	size_t	 n = 0;

	for (seg = strtok_r(all, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		n += (size_t)sprintf(out + n, "/%s", seg);
	}
	if (n == 0)
		strcpy(out, "/");
	free(all);
	return out;
}

char *
path_under(const char *path, const char *base)
{
	size_t	n = strlen(base);

	while (n > 1 && base[n - 1] == '/')
		n--;
	if (strcmp(path, base) == 0 || (strncmp(path, base, n) == 0 &&
	    path[n] == '\0'))
		return xstrdup(".");
	if (n == 1 && base[0] == '/')
		return path[0] == '/' ? xstrdup(path + 1) : NULL;
	if (strncmp(path, base, n) == 0 && path[n] == '/')
		return xstrdup(path + n + 1);
	return NULL;
}

char *
self_command(const char *base)
{
	const char	*fallback = s_exe ? s_exe : "soak";
	char		*abs, *rel, *r;

	if (s_argv0 == NULL)
		return xstrdup(fallback);
	if (strchr(s_argv0, '/') == NULL)
		return xstrdup(found_on_path(s_argv0) ? s_argv0 : fallback);
	if (s_argv0[0] != '/' && s_cwd == NULL)
		return xstrdup(fallback);
	abs = lexical_join(s_cwd, s_argv0);
	if (!is_self(abs)) {
		free(abs);
		return xstrdup(fallback);
	}
	if (base == NULL) {
		free(abs);
		return xstrdup(s_argv0);
	}
	if (strcmp(base, "/") == 0 || (rel = path_under(abs, base)) == NULL)
		return abs;
	r = xasprintf("./%s", rel);
	free(rel);
	free(abs);
	return r;
}

char *
git_toplevel(const char *dir)
{
	char		 buf[PATH_MAX], *p, *git;
	struct stat	 st;

	if (realpath(dir, buf) == NULL)
		return NULL;
	for (;;) {
		git = xasprintf("%s/.git", strcmp(buf, "/") == 0 ? "" : buf);
		if (lstat(git, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
			free(git);
			return xstrdup(buf);
		}
		free(git);
		if (strcmp(buf, "/") == 0)
			return NULL;
		p = strrchr(buf, '/');
		if (p == buf)
			p[1] = '\0';
		else
			*p = '\0';
	}
}
