/*
 * Logging for every role.  Messages go to stderr, one line each, prefixed
 * with the role ("coord", "worker 3", "proxy") so interleaved output from
 * many processes stays readable.  Never log a secret: callers redact.
 * Every message goes out through log_escape's rule, its backslashes and
 * line breaks as they are: whatever it quotes, no terminal escape sequence
 * reaches stderr.  What could fake a log line (a line break a peer sent)
 * is the caller's to escape, with log_escape.
 */
#ifndef SOAK_LOG_H
#define SOAK_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

void	log_init(const char *role, int verbose);
void	log_set_role(const char *role);
int	log_verbose(void);
/* Off: log_warn and log_warnx say nothing (soak minimize's candidates,
 * whose divergences and failures it counts and tells itself); on again. */
void	log_set_warnings(int on);

void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* log_warn appends ": strerror(errno)"; log_warnx does not. */
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * A string a peer sent, made fit for one log line: printable ASCII and
 * valid UTF-8 as they are; a backslash as \\, \n \r \t as such, every
 * other control byte (C0, DEL), every byte that is not valid UTF-8 and
 * every UTF-8 C1 control, line or paragraph separator or bidirectional
 * override as \xNN.  So no terminal escape, no line break and no fake log
 * line gets through, and the bytes can still be told apart.  Cut, with
 * "...", to fit size (LOG_ESC_LEN is enough for anything worth reading);
 * NULL logs as "(null)".  Returns buf.
 *
 * Every string from the other side of a connection goes through it before
 * a log: HELLO's name and host, NACK and ACK texts, result reasons, and
 * errors that quote what the peer sent.
 */
#define LOG_ESC_LEN	256
char	*log_escape(char *buf, size_t size, const char *s);
/*
 * log_escape's rule for a command's own output of text it did not write —
 * a database's rows (soak check --db), a plan's statements and a seed's
 * messages (soak replay), a tracker's reply, a worker's record (soak
 * explore): the len bytes of s (a NUL among them a byte like another,
 * \x00) written to f whole, never cut, so a terminal gets no escape
 * sequence (a window title, a cleared screen) from them.  NULL writes
 * "(null)".  flags:
 *	LOG_ESC_LINES		a line break stays one (a body of several
 *				lines, each still escaped)
 *	LOG_ESC_BACKSLASH	a backslash as itself (JSON text, whose
 *				escapes are its own)
 * 0, or -1 when f would not take it (errno).
 */
#define LOG_ESC_LINES		0x01
#define LOG_ESC_BACKSLASH	0x02
int	log_escape_put(FILE *f, const char *s, size_t len, int flags);

#endif
