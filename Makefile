# coldstart — one Makefile for the tool, its tracer, tests, fuzzers and benchmarks.
#
#   make            build ./coldstart and the tracer for /usr/bin/python3 (installs nothing)
#   make deps       install what building, the suite and the fuzzers need (Debian, as root)
#   make demo       profile the bundled Fn-style sample
#   make test       unit tests (cmocka) + end-to-end tests (pytest)
#   make format     lay out every C file of ours as .clang-format says
#   make check      the layout rule (tests/check_layout.py), then the same suite
#                   on an ASan + UBSan build
#   make layout     the layout rule alone, with its counts
#   make unit-asan  the unit tests alone on the ASan + UBSan build
#   make fuzz       libFuzzer runs of every tests/fuzz/fuzz_*.c (clang; FUZZ_SECONDS=20 each)
#   make bench      benchmarks that print side-by-side figures
#   make install    PREFIX=/usr/local DESTDIR= (PYDIR= for the Python packages): the binary,
#                   its Python tree, coldstart.1 and the bash completion; make uninstall
#                   removes them
#
# DEVELOPER=0 turns warnings back into warnings.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(PREFIX)/bin
DATADIR = $(PREFIX)/share/coldstart
MANDIR = $(PREFIX)/share/man
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
PYTHON ?= /usr/bin/python3
# Where `make install` puts the coldstart and fdk packages so PYTHON imports
# them: its purelib under PREFIX (Debian's /usr/local/lib/pythonX.Y/dist-packages).
PYDIR ?= $(shell $(PYTHON) -c 'import sysconfig; p = "$(PREFIX)"; s = "posix_local" if p.endswith("/local") and "posix_local" in sysconfig.get_scheme_names() else "posix_prefix"; b = p[:-6] if s == "posix_local" else p; print(sysconfig.get_path("purelib", s, vars={"base": b, "platbase": b}))' 2>/dev/null)
DEVELOPER ?= 1
VERSION := 0.1.0

CC ?= cc
BUILD ?= build
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(DEVELOPER),1)
WARN += -Werror
endif
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -DCOLDSTART_VERSION='"$(VERSION)"' $(WARN) $(CFLAGS) -MMD -MP -Isrc
LIBS = -ljansson -lelf -lz -lm -pthread

# Every C file under src/, in its stage folder (docs/design.md, "The map");
# the objects mirror the folders.
SRCS := $(sort $(shell find src -name '*.c'))
OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out %/main.o,$(OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

# The tracer extension, built for the default interpreter; coldstart builds
# it on demand for others (see src/trace_build.c).
TRACER_SRC := python/coldstart/_tracer.c
PY_EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INCLUDES := $(shell $(PYTHON) -c 'import sysconfig; print("-I" + sysconfig.get_paths()["include"])' 2>/dev/null)
TRACER_SO := python/coldstart/_tracer$(PY_EXT_SUFFIX)
SAMPLER_SRC := python/coldstart/_sampler.c
SAMPLER_SO := python/coldstart/_sampler$(PY_EXT_SUFFIX)

.PHONY: all deps demo test unit unit-asan e2e check layout fuzz bench install uninstall format clean tracer pyc

all: coldstart tracer pyc $(BUILD)/coldstart.1 $(BUILD)/coldstart.bash

# The Python package's bytecode, as `make install` and pip leave it: run
# from the checkout, coldstart-fdk, coldstart.lambda and the plan applier
# would otherwise compile themselves from source at every start
# (PYTHONDONTWRITEBYTECODE, read-only trees), and the plan's applier alone
# costs about 30 ms of CPU that way, more than a small function's plan saves.
PY_SOURCES := $(shell find python/coldstart python/fdk -name '*.py' 2>/dev/null)
pyc: $(BUILD)/pyc.stamp
$(BUILD)/pyc.stamp: $(PY_SOURCES)
	@mkdir -p $(dir $@)
	$(PYTHON) -m compileall -q python/coldstart python/fdk >/dev/null
	@touch $@

# The man page and the bash completion are written by coldstart itself, from
# the option tables behind every command's --help, so neither can drift.
$(BUILD)/coldstart.1: coldstart
	@mkdir -p $(dir $@)
	./coldstart help --man > $@.tmp && mv $@.tmp $@

$(BUILD)/coldstart.bash: coldstart
	@mkdir -p $(dir $@)
	./coldstart help --completion bash > $@.tmp && mv $@.tmp $@

# The only targets that install packages: deps, and the ones that run the
# suite or the demo on a machine that may be fresh (tests/install-deps.sh
# installs what is missing as root, and says what is missing otherwise).
deps:
	@sh tests/install-deps.sh all

coldstart: $(OBJS)
	$(CC) $(ALL_CFLAGS) -o $@ $(OBJS) $(LIBS)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

tracer: $(if $(wildcard $(TRACER_SRC)),$(if $(PY_EXT_SUFFIX),$(TRACER_SO) $(SAMPLER_SO)))

$(TRACER_SO) $(SAMPLER_SO): python/coldstart/%$(PY_EXT_SUFFIX): python/coldstart/%.c python/coldstart/_fill.h \
		python/coldstart/_module.h
	$(CC) -shared -fPIC -O2 -g -std=c11 -Wall -Wextra $(if $(filter 1,$(DEVELOPER)),-Werror) \
		-Wno-unused-parameter -Wno-missing-field-initializers $(PY_INCLUDES) -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS) -lcmocka

# The Fn investigation in two runs: the function as fdk-python serves it
# (everything imported before the socket is ready), then behind coldstart-fdk.
# The story in one screen (samples/demo.sh): the Fn function the fdk-python
# way and behind coldstart-fdk under --preset fn, side by side; the full
# reports, profiles and flamegraphs in $(BUILD)/demo.
demo:
	@sh tests/install-deps.sh build
	@$(MAKE) --no-print-directory all >/dev/null
	@sh samples/demo.sh $(CURDIR)/coldstart $(PYTHON) $(BUILD)/demo

test:
	@sh tests/install-deps.sh test
	$(MAKE) unit e2e

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

e2e: coldstart tracer pyc
	COLDSTART=$(CURDIR)/coldstart $(PYTHON) -m pytest -q -rs --durations=15 tests/e2e

# The one rule of direction in src/ (docs/design.md, "The map"): no include
# or call up the stage order, no module cycle.  Calls are read from the
# objects with nm, so it builds first.
layout: coldstart
	$(PYTHON) tests/check_layout.py --objects $(BUILD)/obj --counts

# The layout rule, then the whole suite again on a sanitised build in its own
# directory.
SAN_CFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

check: layout unit-asan
	@sh tests/install-deps.sh test
	$(MAKE) BUILD=build-asan CFLAGS="$(SAN_CFLAGS)" build-asan/coldstart
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 COLDSTART_DATADIR=$(CURDIR)/python \
		COLDSTART=$(CURDIR)/build-asan/coldstart $(PYTHON) -m pytest -q -rs tests/e2e

# The unit tests alone on the sanitised build (what .ci/run runs beside make test).
unit-asan:
	@sh tests/install-deps.sh test
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		$(MAKE) BUILD=build-asan CFLAGS="$(SAN_CFLAGS)" unit

build-asan/coldstart: $(OBJS)
	$(CC) $(ALL_CFLAGS) -o $@ $(OBJS) $(LIBS)

fuzz:
	@sh tests/fuzz/run.sh

bench: all
	@sh tests/install-deps.sh bench
	@sh bench/run.sh

install: all
	@test -n "$(PYDIR)" || { echo "cannot find where $(PYTHON) imports packages from; set PYDIR=" >&2; exit 1; }
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/python $(DESTDIR)$(PYDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(BASHCOMPDIR)
	install -m 755 coldstart $(DESTDIR)$(BINDIR)/coldstart
	install -m 644 $(BUILD)/coldstart.1 $(DESTDIR)$(MANDIR)/man1/coldstart.1
	install -m 644 $(BUILD)/coldstart.bash $(DESTDIR)$(BASHCOMPDIR)/coldstart
	rm -rf $(DESTDIR)$(DATADIR)/python/coldstart $(DESTDIR)$(PYDIR)/coldstart $(DESTDIR)$(PYDIR)/fdk
	cp -R python/coldstart $(DESTDIR)$(DATADIR)/python/coldstart
	cp -R python/coldstart python/fdk $(DESTDIR)$(PYDIR)/
	rm -f $(DESTDIR)$(PYDIR)/coldstart/_tracer.c $(DESTDIR)$(PYDIR)/coldstart/_sampler.c \
		$(DESTDIR)$(PYDIR)/coldstart/_plancode.c $(DESTDIR)$(PYDIR)/coldstart/_plan_arena.h \
		$(DESTDIR)$(PYDIR)/coldstart/_plan_import.h $(DESTDIR)$(PYDIR)/coldstart/_plan_marshal.h \
		$(DESTDIR)$(PYDIR)/coldstart/_plan_crc.h $(DESTDIR)$(PYDIR)/coldstart/_plan_check.h \
		$(DESTDIR)$(PYDIR)/coldstart/_fill.h \
		$(DESTDIR)$(PYDIR)/coldstart/_module.h
	sed '1s|.*|#!$(PYTHON)|' python/coldstart-fdk > $(DESTDIR)$(BINDIR)/coldstart-fdk
	chmod 755 $(DESTDIR)$(BINDIR)/coldstart-fdk
	sed '1s|.*|#!$(PYTHON)|' python/coldstart-lambda > $(DESTDIR)$(BINDIR)/coldstart-lambda
	chmod 755 $(DESTDIR)$(BINDIR)/coldstart-lambda
	find $(DESTDIR)$(DATADIR) $(DESTDIR)$(PYDIR)/coldstart $(DESTDIR)$(PYDIR)/fdk -name __pycache__ -prune -exec rm -rf {} +
	# Fresh bytecode where it is installed: a start-up tool must not compile at start-up.
	$(PYTHON) -m compileall -q -d $(PYDIR) $(DESTDIR)$(PYDIR)/coldstart $(DESTDIR)$(PYDIR)/fdk
	$(PYTHON) -m compileall -q -d $(DATADIR)/python $(DESTDIR)$(DATADIR)/python

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/coldstart $(DESTDIR)$(BINDIR)/coldstart-fdk $(DESTDIR)$(BINDIR)/coldstart-lambda
	rm -f $(DESTDIR)$(MANDIR)/man1/coldstart.1 $(DESTDIR)$(BASHCOMPDIR)/coldstart
	rm -rf $(DESTDIR)$(DATADIR) $(DESTDIR)$(PYDIR)/coldstart $(DESTDIR)$(PYDIR)/fdk

# Every C file of ours: the tool, its unit tests and fuzzers, the tracer and
# sampler extensions under python/, the benchmark drivers.
FORMAT_FILES = $(sort $(shell find src tests/unit tests/fuzz python bench -name '*.[ch]'))
format:
	clang-format -i $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) build-asan coldstart python/coldstart/_tracer*.so python/coldstart/_sampler*.so
	find . -name __pycache__ -prune -exec rm -rf {} +

-include $(OBJS:.o=.d) $(UNIT_BINS:=.d)
