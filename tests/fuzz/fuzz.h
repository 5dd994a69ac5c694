/*
 * What every fuzz target (tests/fuzz/fuzz_NAME.c) shares.
 *
 * A target defines LLVMFuzzerTestOneInput and, if it needs one-time set-up,
 * LLVMFuzzerInitialize; both are declared here so the plain build's
 * -Wmissing-prototypes is content.  The same file links two ways:
 *  - make fuzz (FUZZ=1): with libFuzzer, ASan and UBSan, built by clang in
 *    build-fuzz/; SOAK_LIBFUZZER is defined, so a target may also define
 *    LLVMFuzzerCustomMutator and call LLVMFuzzerMutate;
 *  - make / make SANITIZE=1: with replay.c's main(), which runs each file
 *    of tests/fuzz/regress/NAME/ and tests/fuzz/corpus/NAME/ once (make test).
 * A target reports a broken invariant with FUZZ_CHECK, which aborts: to
 * libFuzzer that is a crash, and it saves the input.
 */
#ifndef SOAK_FUZZ_H
#define SOAK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int	LLVMFuzzerInitialize(int *argc, char ***argv);
#ifdef SOAK_LIBFUZZER
size_t	LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t	LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
	    unsigned int seed);
#endif

/* Aborts, saying which check failed and why, unless cond holds. */
#define FUZZ_CHECK(cond, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: fuzz check failed: %s: ",	\
		    __FILE__, __LINE__, #cond);				\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		abort();						\
	}								\
} while (0)

#endif
