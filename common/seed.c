#include "common/seed.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static int
parse_u64(const char *s, const char *end, uint64_t *v)
{
	uint64_t	x = 0;

	if (s == end)
		return -1;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 0;
}

int
seed_parse(const char *s, uint64_t *seed, char *err)
{
	const char	*p;

	if (s == NULL || *s == '\0')
		return errf(err, "an empty seed (want a decimal integer, e.g. 1477)");
	for (p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return errf(err, "\"%s\" is not a seed (want a decimal integer "
			    "from 0 to %llu)", s, (unsigned long long)UINT64_MAX);
	if (parse_u64(s, p, seed) == -1)
		return errf(err, "%s is larger than the largest seed, %llu (seeds "
		    "are 64-bit)", s, (unsigned long long)UINT64_MAX);
	return 0;
}

int
seed_range_parse(const char *s, struct seed_range *r, char *err)
{
	const char	*dots, *end;
	uint64_t	 a, b;

	if (s == NULL || *s == '\0')
		return errf(err, "empty seed range (want A..B or N)");
	end = s + strlen(s);
	if ((dots = strstr(s, "..")) != NULL) {
		if (parse_u64(s, dots, &a) == -1 || parse_u64(dots + 2, end, &b) == -1)
			return errf(err, "bad seed range \"%s\" (want A..B, e.g. 0..199)", s);
		if (b < a)
			return errf(err, "bad seed range \"%s\": %llu is after %llu", s,
			    (unsigned long long)a, (unsigned long long)b);
	} else {
		if (parse_u64(s, end, &b) == -1)
			return errf(err, "bad seed range \"%s\" (want A..B or a count N)", s);
		if (b == 0)
			return errf(err, "bad seed range \"%s\": a count must be at least 1", s);
		a = 0;
		b = b - 1;
	}
	r->first = a;
	r->last = b;
	return 0;
}

uint64_t
seed_range_count(const struct seed_range *r)
{
	return r->last - r->first + 1;	/* 0 only for the full 2^64 range */
}

uint64_t
seed_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t
seed_derive(uint64_t seed, uint64_t a, uint64_t b)
{
	return seed_mix(seed_mix(seed_mix(seed) ^ a) ^ b);
}

uint64_t
seed_turn(uint64_t seed, int round, int turn)
{
	return seed_derive(seed, 0x7475726e00000000ULL | (uint32_t)round, (uint64_t)turn);
}

uint64_t
fnv1a64(const void *buf, size_t len)
{
	const unsigned char	*p = buf;
	uint64_t		 h = 0xcbf29ce484222325ULL;
	size_t			 i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t
seed_str(const char *s)
{
	return seed_mix(fnv1a64(s, strlen(s)));
}

void
seed_rng_init(struct seed_rng *r, uint64_t seed)
{
	r->state = seed;
}

uint64_t
seed_rng_next(struct seed_rng *r)
{
	uint64_t	s = r->state;

	r->state += 0x9e3779b97f4a7c15ULL;
	return seed_mix(s);	/* seed_mix adds the increment: splitmix64 */
}

double
seed_rng_unit(struct seed_rng *r)
{
	return (double)(seed_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t
seed_rng_below(struct seed_rng *r, uint64_t n)
{
	uint64_t	x, lim;

	if (n == 0)
		return 0;
	lim = UINT64_MAX - UINT64_MAX % n;
	do
		x = seed_rng_next(r);
	while (x >= lim);
	return x % n;
}
