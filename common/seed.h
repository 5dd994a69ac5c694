/*
 * Seeds: ranges from the command line and config, and the derivation of
 * every sub-seed.  Derivation is pure 64-bit integer arithmetic (splitmix64
 * finalizer chained over the inputs), so it is identical on every platform
 * and in every process — the basis of replay.
 */
#ifndef SOAK_SEED_H
#define SOAK_SEED_H

#include <stddef.h>
#include <stdint.h>

struct seed_range {
	uint64_t	first;		/* inclusive */
	uint64_t	last;		/* inclusive */
};

/* One seed, in decimal, 0..2^64-1 (one that overflows is refused).  0 or
 * -1 with err set. */
int		seed_parse(const char *s, uint64_t *seed, char *err);
/* "A..B" inclusive, or "N" meaning 0..N-1.  0 or -1 with err set. */
int		seed_range_parse(const char *s, struct seed_range *r, char *err);
uint64_t	seed_range_count(const struct seed_range *r);

uint64_t	seed_mix(uint64_t x);			/* splitmix64 finalizer */
uint64_t	seed_derive(uint64_t seed, uint64_t a, uint64_t b);
/* SOAK_TURN_SEED for (seed, round, turn). */
uint64_t	seed_turn(uint64_t seed, int round, int turn);
/* 64-bit FNV-1a: the config hash in report.json and the tickets' marker. */
uint64_t	fnv1a64(const void *buf, size_t len);
/* A 64-bit key for a string (FNV-1a then mixed), e.g. a proxy name. */
uint64_t	seed_str(const char *s);

/* A tiny deterministic generator (splitmix64 stream). */
struct seed_rng { uint64_t state; };
void		seed_rng_init(struct seed_rng *r, uint64_t seed);
uint64_t	seed_rng_next(struct seed_rng *r);
double		seed_rng_unit(struct seed_rng *r);	/* [0, 1) with 53 bits */
uint64_t	seed_rng_below(struct seed_rng *r, uint64_t n);	/* [0, n), unbiased */

#endif
