# mysteer top-level Makefile.
#
# Each module contributes its own fragment (module.mk) that appends to:
#   BINS          programs under $(BUILD)/ built by `make`
#   UNIT_TESTS    Check test programs, run by `make test` and `make asan`
#   FUZZ_TARGETS  libFuzzer programs, run for FUZZ_RUNS iterations by `make test`
#   INTEG_TESTS   integration test scripts (bash), run by `make test`
#   BPF_OBJS      eBPF objects and their skeletons
# so that parallel work on modules never touches this file.
#
# BUILD can be moved (make BUILD=build-foo) to keep separate trees; `make asan`
# uses $(BUILD)/asan with AddressSanitizer and UBSan.

BUILD      ?= build
CC         ?= gcc
CLANG      ?= clang
BPFTOOL    ?= bpftool
SAN_FLAGS  ?=
OPT        ?= -O2
FUZZ_RUNS  ?= 200000
# make fuzz: seconds per target, and where the corpus it grows is kept
FUZZ_TIME  ?= 600
FUZZ_CORPUS ?= .fuzz-corpus

PKGS       := libbpf inih json-c libpcre2-8 libcrypto libssl libsystemd libmicrohttpd libcurl

# On a fresh machine `make`, `make test` and `make run` install what is missing
# first, before anything below asks pkg-config for flags.
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(shell pkg-config --exists $(PKGS) check mariadb && command -v bpftool >/dev/null && command -v mariadbd >/dev/null && command -v etcd >/dev/null && echo ok),)
$(info mysteer: dependencies missing, running scripts/install-deps.sh)
$(shell scripts/install-deps.sh >&2)
endif
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(shell mysql_config --cflags 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(shell mysql_config --libs 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

CFLAGS     ?= $(OPT) -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -pthread \
		   -fno-strict-aliasing -Iuserspace -Ibpf -I$(BUILD)/gen $(PKG_CFLAGS) $(SAN_FLAGS) \
		   -MMD -MP
LDFLAGS    += -pthread $(SAN_FLAGS)
LDLIBS     += $(PKG_LIBS) -lelf -lz -lm

BINS         :=
UNIT_TESTS   :=
FUZZ_TARGETS :=
INTEG_TESTS  :=
BPF_OBJS     :=

.PHONY: install uninstall all test unit fuzz integration asan asan-bins valgrind run bench clean deps format
all:

include $(sort $(wildcard bpf/module.mk userspace/*/module.mk tests/*/module.mk))

# Link prerequisites that several fragments add to (DAEMON_OBJS: every part
# linked into mysteerd) are attached here, after all fragments were read.
DAEMON_OBJS ?=
$(BUILD)/mysteerd: $(DAEMON_OBJS)

all: $(BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

deps:
	@scripts/install-deps.sh

# make test: unit tests, fuzz targets (fixed iterations), integration tests
# (asan_daemon.sh among them runs the ASan/UBSan mysteerd of asan-bins), then
# the ASan/UBSan build of the unit tests. The runner prints one
# "N passed, N failed" line and fails if anything failed.
# A fragment may set FUZZ_RUNS_<target> for a target slower per input.
FUZZ_EACH = $(foreach t,$(FUZZ_TARGETS),$(if $(FUZZ_RUNS_$(notdir $t)),$(notdir $t)=$(FUZZ_RUNS_$(notdir $t))))
test: deps all asan-bins $(UNIT_TESTS) $(FUZZ_TARGETS)
	@tests/run.sh --unit "$(UNIT_TESTS)" --fuzz "$(FUZZ_TARGETS)" --fuzz-runs $(FUZZ_RUNS) \
		--fuzz-runs-each "$(FUZZ_EACH)" \
		--integ "$(INTEG_TESTS)" --valgrind "$(VALGRIND_TESTS)" --asan

# Unit tests under valgrind. test_handoff is left out: valgrind 3.19 does not
# know pidfd_getfd(2) (syscall 434), which is what that test exercises;
# test_engine is built with ASan/UBSan, which valgrind cannot run.
VALGRIND_TESTS = $(filter-out %/test_handoff %/test_engine,$(UNIT_TESTS))
valgrind: all $(UNIT_TESTS)
	@tests/run.sh --valgrind "$(VALGRIND_TESTS)"

unit: all $(UNIT_TESTS)
	@tests/run.sh --unit "$(UNIT_TESTS)"

# make fuzz: a long run, FUZZ_TIME seconds per target (FUZZ=fuzz_engine: that
# one only), growing a corpus kept in $(FUZZ_CORPUS)/<target> across runs;
# crashes go to $(FUZZ_CORPUS)/<target>-crashes.
FUZZ ?=
fuzz: $(FUZZ_TARGETS)
	@tests/run.sh --fuzz "$(if $(FUZZ),$(filter %/$(FUZZ),$(FUZZ_TARGETS)),$(FUZZ_TARGETS))" \
		--fuzz-time $(FUZZ_TIME) --corpus $(FUZZ_CORPUS)

integration: all asan-bins
	@tests/run.sh --integ "$(INTEG_TESTS)"

ASAN_MAKE = $(MAKE) --no-print-directory BUILD=$(BUILD)/asan OPT=-O1 \
	SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

# asan: every program (mysteerd and mysteerctl included) and the unit tests
# built with ASan/UBSan into $(BUILD)/asan, then the unit tests run.
# asan-bins: the same programs without running anything; the integration
# test asan_daemon.sh runs that mysteerd (eBPF objects are built as usual).
asan:
	@$(ASAN_MAKE) unit

asan-bins:
	@$(ASAN_MAKE) all

run: deps all
	@scripts/run.sh

bench: deps all
	@scripts/bench.sh

# install / uninstall: the programs, the systemd unit (paths filled in),
# the example config and the docs. DESTDIR for packaging; PREFIX and
# SYSCONFDIR as usual. An operator's own $(SYSCONFDIR)/mysteer/mysteer.conf
# is never written nor removed.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
DOCDIR     ?= $(PREFIX)/share/doc/mysteer
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
INSTALLED  := $(SBINDIR)/mysteerd $(BINDIR)/mysteerctl $(BINDIR)/mysteer-classify \
	      $(UNITDIR)/mysteerd.service $(SYSCONFDIR)/mysteer/mysteer.conf.example \
	      $(DOCDIR)/README.md $(addprefix $(DOCDIR)/,$(wildcard docs/*.md))

install: all
	install -D -m 0755 $(BUILD)/mysteerd $(DESTDIR)$(SBINDIR)/mysteerd
	install -D -m 0755 $(BUILD)/mysteerctl $(DESTDIR)$(BINDIR)/mysteerctl
	install -D -m 0755 $(BUILD)/mysteer-classify $(DESTDIR)$(BINDIR)/mysteer-classify
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/docs
	sed -e 's#@SBINDIR@#$(SBINDIR)#g' -e 's#@SYSCONFDIR@#$(SYSCONFDIR)#g' \
	    -e 's#@DOCDIR@#$(DOCDIR)#g' etc/mysteerd.service >$(DESTDIR)$(UNITDIR)/mysteerd.service
	install -D -m 0644 etc/mysteer.conf $(DESTDIR)$(SYSCONFDIR)/mysteer/mysteer.conf.example
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/mysteer 2>/dev/null

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
