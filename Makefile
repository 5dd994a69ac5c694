# soak — one Makefile.  make | make test | make proofs | make SANITIZE=1 test | make bench | make mutants | make deps
CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
STD      = -std=gnu11
WARN     = $(STD) -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wmissing-declarations -Wcast-qual -Wpointer-arith -Wno-unused-parameter \
	   $(if $(filter 1,$(WERROR)),-Werror)
# Libraries with a pkg-config file come from pkg-config, and a missing one
# stops the build with the fix; nng has none on Debian 12.
PKGS     = libpq yaml-0.1 jansson libcurl libcrypto
ifeq ($(filter deps clean,$(MAKECMDGOALS)),)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
ifneq ($(.SHELLSTATUS),0)
$(error pkg-config does not know one of: $(PKGS) (run make deps))
endif
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
CMOCKA_LIBS := $(shell pkg-config --libs cmocka)
endif
CPPFLAGS += -I. -D_GNU_SOURCE $(PKG_CFLAGS)
LDLIBS  += -lnng $(PKG_LIBS) -lpthread -lm
ifeq ($(SANITIZE),1)
BUILD    = build-san
CFLAGS   = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
DEPFLAGS = -MMD -MP

MODULES  = common coordinator worker fault-proxy isolation invariants
LIB_SRC  = $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPERS_SRC = $(wildcard tests/helpers/*.c)
TEST_HELPERS = $(TEST_HELPERS_SRC:tests/helpers/%.c=$(BUILD)/tests/helpers/%)
EXAMPLE_SRC = $(wildcard examples/*/*.c)
EXAMPLE_BIN = $(EXAMPLE_SRC:%.c=%)
BENCH_SRC = $(wildcard bench/*.c)
BENCH_BIN = $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

# ./soak is always the plain build; the sanitizer build is build-san/soak.
all: $(BUILD)/soak $(if $(filter 1,$(SANITIZE)),,soak) $(EXAMPLE_BIN)

.PHONY: soak
soak: build/soak
	@ln -sf build/soak soak

$(BUILD)/soak: $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/helpers/%: tests/helpers/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(LDLIBS)

# Example systems under test are built with the same flags.  --as-needed
# keeps each binary to the libraries it calls: a turn is exec'd thousands
# of times, and every needless shared library is paid at every exec.
examples/%: examples/%.c
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(LDFLAGS) -Wl,--as-needed $(LDLIBS)

test: all $(UNIT_BIN) $(TEST_HELPERS)
	@BUILD=$(BUILD) tests/run test

# The examples' long proofs: each fixed variant over 200 seeds, each mutant
# caught.  Plain build; .ci/run calls it after make test.
proofs: all $(TEST_HELPERS)
	@BUILD=$(BUILD) tests/run proofs

# Each deliberate bug of tests/mutants/ in a scratch copy, against the tests
# it names (tests/mutants/run).  Not part of make test.
mutants:
	@tests/mutants/run

# The test binaries and helpers, for tests/mutants/run.
print-test-bins:
	@echo $(UNIT_BIN) $(TEST_HELPERS)

bench: all $(BENCH_BIN) $(TEST_HELPERS)
	@BUILD=$(BUILD) bench/run

deps:
	@sh deploy/deps.sh

clean:
	rm -rf build build-san soak $(EXAMPLE_BIN)

.PHONY: all test proofs bench deps clean mutants print-test-bins
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
