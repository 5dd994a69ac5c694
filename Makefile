# soak — one Makefile.  make | make test | make test-long | make test-deploy [test-image] | make proofs | make chaos | make SANITIZE=1 test | make bench | make mutants | make mutants-sweep | make deps
#          make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="msg http"] | make fuzz-smoke | make fuzz-corpus
#          make install [PREFIX=/usr/local] [DESTDIR=] | make uninstall
CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
STD      = -std=gnu11
WARN     = $(STD) -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wmissing-declarations -Wcast-qual -Wpointer-arith -Wno-unused-parameter \
	   $(if $(filter 1,$(WERROR)),-Werror)
# Libraries with a pkg-config file come from pkg-config, and a missing one
# stops the build with the fix; nng has none on Debian 12.
PKGS     = libpq yaml-0.1 jansson libcurl libssl libcrypto
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
# make fuzz's own build: clang, libFuzzer's coverage hooks, ASan and UBSan
# in every object, the library compiled again (gcc's sanitizer objects
# cannot go into a clang fuzz target).  Only the fuzz targets link here.
FUZZ_CC ?= clang
ifeq ($(FUZZ),1)
BUILD    = build-fuzz
CC       = $(FUZZ_CC)
CFLAGS   = -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined -DSOAK_LIBFUZZER
LDFLAGS += -fsanitize=fuzzer,address,undefined
endif
DEPFLAGS = -MMD -MP

# The version `soak --version` and report.json say: `git describe --always
# --dirty` of this tree when it is a git checkout (its own .git, not one of a
# folder above), else VERSION_BASE (a tarball).  `make VERSION=...` overrides
# (the environment's VERSION does not: CI systems set it for their own ends).
VERSION_BASE = 0.1.0
ifneq ($(origin VERSION),command line)
VERSION := $(if $(filter-out deps clean,$(or $(MAKECMDGOALS),all)),$(shell test -e .git && \
	    git describe --always --dirty 2>/dev/null || echo $(VERSION_BASE)))
endif
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
DOCDIR  ?= $(PREFIX)/share/doc/soak
MANDIR  ?= $(PREFIX)/share/man
# The documents make install puts in DOCDIR, and the manual pages: made by
# make man from their scdoc sources and committed, so that neither a build
# nor an install needs scdoc (tests/lint/man.sh checks they are current).
DOCS     = README.md $(wildcard docs/*.md)
MAN_SRC  = docs/man/soak.1.scd docs/man/soak.yaml.5.scd
MAN_PAGES = $(MAN_SRC:.scd=)
# The pages' date: when they last changed (scdoc's own would be today's).
MAN_DATE = 2026-12-01

# One archive per layer folder (docs/design.md, "The layers"), listed from
# the top down, the order a link takes them in: each binary holds only the
# objects it calls.  cmd/'s objects, one per command, go into soak alone.
LAYERS   = coordinator worker invariants fault-proxy isolation common
LIBS     = $(foreach m,$(LAYERS),$(BUILD)/lib$(m).a)
CMD_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(wildcard cmd/*.c))
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPERS_SRC = $(wildcard tests/helpers/*.c)
TEST_HELPERS = $(TEST_HELPERS_SRC:tests/helpers/%.c=$(BUILD)/tests/helpers/%)
EXAMPLE_SRC = $(wildcard examples/*/*.c)
EXAMPLE_BIN = $(EXAMPLE_SRC:%.c=%)
BENCH_SRC = $(wildcard bench/*.c)
BENCH_BIN = $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# Every tests/fuzz/fuzz_NAME.c is a target: a libFuzzer binary in
# build-fuzz/fuzz/ (make fuzz), and in the plain and sanitizer builds a
# replay driver of its regress and corpus inputs that make test runs.
FUZZ_SRC = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN = $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_REPLAY = $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/fuzz/%)
FUZZ_SECONDS ?= 60

# ./soak is always the plain build; the sanitizer build is build-san/soak.
all: $(BUILD)/soak $(if $(filter 1,$(SANITIZE)),,soak) $(EXAMPLE_BIN)

.PHONY: soak
soak: build/soak
	@ln -sf build/soak soak

$(BUILD)/soak: $(CMD_OBJ) $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(LIBS) $(LDLIBS)

# lib<layer>.a from the layer's objects (common's with the version).  q,
# not r, after rm: a fresh archive of exactly the folder's objects.
define layer_lib
$(BUILD)/lib$(1).a: $$(patsubst %.c,$$(BUILD)/%.o,$$(wildcard $(1)/*.c)) $(if $(filter common,$(1)),$$(BUILD)/version.o)
	@rm -f $$@
	$$(AR) qcs $$@ $$^
endef
$(foreach m,$(LAYERS),$(eval $(call layer_lib,$(m))))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -c -o $@ $<

# Written at every make, replaced only when the version changed, so a
# commit relinks soak and an unchanged tree rebuilds nothing.
$(BUILD)/version.c: FORCE
	@mkdir -p $(dir $@)
	@printf '/* Written by make: common/soak.h, SOAK_VERSION. */\nconst char soak_version[] = "%s";\n' \
	    '$(subst ",,$(subst \,,$(subst ',,$(VERSION))))' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/version.o: $(BUILD)/version.c
	$(CC) $(CFLAGS) -c -o $@ $<

# Tests, helpers, benches and fuzz targets link the layers' archives, so
# each holds the objects it calls and no command.  TEST_LDFLAGS_<test>:
# one test's own link flags (test_auth looks at what free() is handed).
TEST_LDFLAGS_test_auth = -Wl,--wrap=free
$(BUILD)/tests/%: tests/unit/%.c $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIBS) $(LDFLAGS) $(TEST_LDFLAGS_$*) $(LDLIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/helpers/%: tests/helpers/%.c $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIBS) $(LDFLAGS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIBS) $(LDFLAGS) $(LDLIBS)

# A fuzz target with tests/fuzz/replay.c's main(): runs the files it is
# given once each, no libFuzzer.
$(BUILD)/tests/fuzz/%: tests/fuzz/%.c $(BUILD)/tests/fuzz/replay.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(BUILD)/tests/fuzz/replay.o $(LIBS) $(LDFLAGS) $(LDLIBS)

# The fuzz build's targets hold (and libFuzzer counts the coverage of)
# only the objects they call, as every binary linked from the archives.
$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIBS) $(LDFLAGS) $(LDLIBS)

# Example systems under test are built with the same flags.  --as-needed
# keeps each binary to the libraries it calls: a turn is exec'd thousands
# of times, and every needless shared library is paid at every exec.
examples/%: examples/%.c
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(LDFLAGS) -Wl,--as-needed $(LDLIBS)

# The ledger's seeded choices, shared with tests/helpers/ledger_mix.
examples/ledger/ledger_turn examples/ledger/ledger_setup: examples/ledger/ledger_plan.h

test: all $(UNIT_BIN) $(TEST_HELPERS) $(FUZZ_REPLAY) $(BUILD)/bench/fleet_sim
	@BUILD=$(BUILD) tests/run test

# The integration tests of tier long (a "# tier: long" line: each takes
# over about half a minute here), kept out of make test's ten minutes; .ci/run
# calls it after make test (plain build).
test-long: all $(TEST_HELPERS)
	@BUILD=$(BUILD) tests/run long

# The examples' long proofs: each fixed variant over PROOF_SEEDS seeds
# (200; the second variants of budget and reservations a quarter as many),
# each mutant caught.  Plain build; .ci/run calls it with PROOF_SEEDS=50
# after make test-long.
PROOF_SEEDS ?= 200
proofs: all $(TEST_HELPERS)
	@BUILD=$(BUILD) PROOF_SEEDS=$(PROOF_SEEDS) tests/run proofs

# The deploy/ recipes against real engines (tests/deploy/): a local Slurm,
# systemd-analyze on the units, the CI files' soak command lines; and
# deploy/k8s/test/test.sh, the Kubernetes manifests checked offline.  Needs
# root and make deps (and node, npm, kubectl for k8s).
test-deploy: all $(TEST_HELPERS)
	@BUILD=$(BUILD) tests/run deploy

# The container image of deploy/k8s/ built here (debootstrap + podman, no
# registry) and the reservations example and merge-queue pods run in it;
# about 2-3 minutes.  Needs root and podman, runc, debootstrap (not in make
# deps: CI does not run it).
test-image: all
	@bash deploy/k8s/test/image.sh

# soak's own failures under chaos (tests/chaos/): workers killed, the
# database paused and restarted, the output directory full.  Needs root.
chaos: all $(TEST_HELPERS)
	@BUILD=$(BUILD) tests/run chaos

# Each deliberate bug of tests/mutants/ in a scratch copy, against the tests
# it names (tests/mutants/run).  Not part of make test.
mutants:
	@tests/mutants/run

# Mechanical mutants (operators flipped, bounds off by one, conditions
# negated, calls dropped, constants changed) sampled over the files that
# matter, each against the fast tests of its file (tests/mutants/sweep);
# a score per file.  Not part of make test or CI: about an hour.
mutants-sweep:
	@tests/mutants/sweep $(if $(SEED),--seed $(SEED)) $(if $(COUNT),--count $(COUNT)) \
	    $(if $(FILES),--files "$(FILES)") $(if $(ONLY),--only "$(ONLY)")

# The test binaries and helpers, for tests/mutants/run.
print-test-bins:
	@echo $(UNIT_BIN) $(TEST_HELPERS) $(FUZZ_REPLAY) $(BUILD)/bench/fleet_sim

bench: all $(BENCH_BIN) $(TEST_HELPERS)
	@BUILD=$(BUILD) bench/run

deps:
	@sh deploy/deps.sh

# Each fuzz target's regress inputs, then FUZZ_SECONDS of fuzzing from its
# committed corpus (new inputs go to build-fuzz/corpus/, never the tree);
# exits non-zero and names the saved input when one crashes (tests/fuzz/run).
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz: no $(FUZZ_CC) here" \
	    "(make deps installs clang and libclang-rt-dev, its libFuzzer)"; exit 1; }
	@$(MAKE) --no-print-directory FUZZ=1 fuzz-bins
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run $(FUZZ_TARGETS)

# What CI runs: the same, 5 s a target (14 targets: 70 s; make test replays
# every regress input and corpus already).
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5

fuzz-bins: $(FUZZ_BIN)

# Writes the seed inputs that come from code (tests/fuzz/mkcorpus.c: msg's
# messages, http's exchanges) into tests/fuzz/corpus/; after a change to
# the wire format, run it and commit what changed.
fuzz-corpus: $(BUILD)/tests/fuzz-mkcorpus
	@mkdir -p tests/fuzz/corpus/msg tests/fuzz/corpus/http tests/fuzz/corpus/bundle \
	    tests/fuzz/corpus/preauth
	$(BUILD)/tests/fuzz-mkcorpus tests/fuzz/corpus examples/refunds/soak.yaml

$(BUILD)/tests/fuzz-mkcorpus: tests/fuzz/mkcorpus.c $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $< $(LIBS) $(LDFLAGS) $(LDLIBS)

# The manual pages from their sources (needs scdoc: make deps); commit
# what changed.  docs/man/tidy.awk drops the empty paragraphs mandoc warns of.
man: $(MAN_PAGES)

docs/man/%: docs/man/%.scd docs/man/tidy.awk
	scdoc <$< | awk -v source="soak $(VERSION_BASE)" -v date=$(MAN_DATE) \
	    -f docs/man/tidy.awk >$@.tmp && mv $@.tmp $@

# One binary is all soak needs at run time (workers are itself, the
# embedded PostgreSQL is the system's); the documents and the manual pages
# go beside it.
install: $(BUILD)/soak
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(DOCDIR)" "$(DESTDIR)$(MANDIR)/man1" \
	    "$(DESTDIR)$(MANDIR)/man5"
	install -m 0755 $(BUILD)/soak "$(DESTDIR)$(BINDIR)/soak"
	install -m 0644 $(DOCS) "$(DESTDIR)$(DOCDIR)/"
	install -m 0644 docs/man/soak.1 "$(DESTDIR)$(MANDIR)/man1/soak.1"
	install -m 0644 docs/man/soak.yaml.5 "$(DESTDIR)$(MANDIR)/man5/soak.yaml.5"

# soak's own doc folder goes; under a DESTDIR (a staging tree, a package's
# root) so do the folders install made that are left empty, up to DESTDIR.
# Without one, the system's (/usr/local/bin, /usr/share/doc) stay: they are
# not soak's, even when empty.
uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/soak" $(foreach d,$(notdir $(DOCS)),"$(DESTDIR)$(DOCDIR)/$(d)") \
	    "$(DESTDIR)$(MANDIR)/man1/soak.1" "$(DESTDIR)$(MANDIR)/man5/soak.yaml.5"
	-rmdir "$(DESTDIR)$(DOCDIR)" 2>/dev/null
	$(if $(DESTDIR),-for d in "$(BINDIR)" "$(dir $(DOCDIR))" "$(MANDIR)/man1" "$(MANDIR)/man5"; do \
		while [ -n "$$d" ] && [ "$$d" != / ] && [ "$$d" != . ]; do \
			rmdir "$(DESTDIR)$$d" 2>/dev/null || break; d=$$(dirname "$$d"); \
		done; \
	done; rmdir "$(DESTDIR)" 2>/dev/null; true)

clean:
	rm -rf build build-san build-fuzz soak $(EXAMPLE_BIN)

.PHONY: all test test-long test-deploy test-image proofs chaos bench deps clean mutants mutants-sweep print-test-bins install uninstall man FORCE \
	fuzz fuzz-smoke fuzz-bins fuzz-corpus
FORCE:
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
