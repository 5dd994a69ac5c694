/*
 * Logging for every role.  Messages go to stderr, one line each, prefixed
 * with the role ("coord", "worker 3", "proxy") so interleaved output from
 * many processes stays readable.  Never log a secret: callers redact.
 */
#ifndef SOAK_LOG_H
#define SOAK_LOG_H

#include <stdarg.h>

void	log_init(const char *role, int verbose);
void	log_set_role(const char *role);
int	log_verbose(void);

void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* log_warn appends ": strerror(errno)"; log_warnx does not. */
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
