/*
 * Value grammars: the one definition of the durations, ranges, shares and
 * byte sizes that the config file (common/config.c) and the command line
 * (`soak proxy`, `soak run --heartbeat`) accept — docs/config.md "Value types".
 *
 * Contract
 *  - Every parser is a pure function of its string: 0 with the result
 *    stored, or -1 with the result untouched and err (ERR_LEN bytes) holding
 *    a sentence that quotes the value and says what is expected, e.g.
 *    "\"5\" has no unit (use ms, s or m)".  The caller says where the value
 *    came from ("FILE:LINE:COL: KEY: ", "--hold: ").  NULL is an empty
 *    string.
 *  - No whitespace, no sign, nothing before or after: strtol/strtod are
 *    never used, so "+5s", " 5s", "1e-1" and "0x1p-3" cannot sneak in.
 *
 * Grammars
 *  duration   DIGITS UNIT, UNIT one of ms, s, m: 250ms, 5s, 2m.  A bare
 *             number (0 too) is an error: the unit is never guessed.  At
 *             most INT64_MAX milliseconds.
 *  range      DURATION..DURATION with MIN <= MAX (0ms..40ms), or one
 *             DURATION meaning MIN = MAX; MAX at most the caller's limit
 *             (a latency's: FAULT_LATENCY_MAX_MS, what a plan can hold).
 *  share      DIGITS[.DIGITS] or .DIGITS, at most 1 (0.15, .5, 1), or the
 *             same followed by % and at most 100 (15%, 2.5%).
 *  bytes      DIGITS with an optional K, M or G in either case, powers of
 *             1024 (65536, 512K, 1M, 2G); at most INT64_MAX.  No B suffix.
 *  count      DIGITS, a whole number of MIN..MAX the caller gives (0 <=
 *             MIN): every number option of the commands (cmd/), "--slots
 *             8", "--tries 3".  Seeds are common/seed.h's seed_parse.
 *  counts     COUNT..COUNT with MIN <= MAX (2..6), or one COUNT meaning
 *             MIN = MAX, each of the caller's MIN..MAX: how many events
 *             before a stream fault (faults.cut_after).
 */
#ifndef SOAK_UNITS_H
#define SOAK_UNITS_H

#include <stddef.h>
#include <stdint.h>

int	parse_duration_ms(const char *s, int64_t *ms, char *err);
int	parse_duration_range(const char *s, int64_t limit_ms, int64_t *min_ms,
	    int64_t *max_ms, char *err);
int	parse_share(const char *s, double *v, char *err);
int	parse_bytes(const char *s, int64_t *v, char *err);
/* err: "\"-1\" is not a whole number of 1..256". */
int	parse_count(const char *s, int64_t min, int64_t max, int64_t *v, char *err);
/* err: "\"6..2\": the minimum is above the maximum". */
int	parse_count_range(const char *s, int64_t min, int64_t max, int64_t *lo,
	    int64_t *hi, char *err);

/*
 * A value quoted for a message: in double quotes, control characters as
 * '?', cut after 48 bytes with "...".  buf holds QUOTE_LEN bytes.
 */
#define QUOTE_LEN	56
const char	*quote_value(const char *s, char *buf, size_t size);

#endif
