#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char	log_role[64] = "soak";
static int	log_level_verbose;

void
log_init(const char *role, int verbose)
{
	log_set_role(role);
	log_level_verbose = verbose;
}

void
log_set_role(const char *role)
{
	snprintf(log_role, sizeof(log_role), "%s", role);
}

int
log_verbose(void)
{
	return log_level_verbose;
}

/* One write(2) per line, so lines from concurrent processes never interleave. */
static void
log_vemit(const char *level, const char *fmt, va_list ap, int with_errno)
{
	char	line[2048];
	int	saved = errno, n;

	n = snprintf(line, sizeof(line), "%s: %s", log_role, level);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if ((size_t)n >= sizeof(line) - 2)
		n = sizeof(line) - 2 - 64;
	if (with_errno)
		n += snprintf(line + n, sizeof(line) - n, ": %s", strerror(saved));
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
	errno = saved;
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (!log_level_verbose)
		return;
	va_start(ap, fmt);
	log_vemit("", fmt, ap, 0);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit("", fmt, ap, 0);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit("warning: ", fmt, ap, 1);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit("warning: ", fmt, ap, 0);
	va_end(ap);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit("fatal: ", fmt, ap, 0);
	va_end(ap);
	exit(70);
}
