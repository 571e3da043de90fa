# daemon: mysteerd's main and its service table. The parts linked into
# mysteerd add their objects to DAEMON_OBJS in their own fragments; the top
# Makefile attaches DAEMON_OBJS as prerequisites after every fragment.
BINS        += $(BUILD)/mysteerd
DAEMON_OBJS += $(BUILD)/obj/userspace/daemon/main.o $(BUILD)/obj/userspace/daemon/check.o \
	       $(BUILD)/obj/userspace/daemon/privdrop.o \
	       $(COMMON_OBJS)

$(BUILD)/mysteerd:
	$(CC) $(LDFLAGS) $(filter %.o,$^) $(LDLIBS) -o $@

# The whole daemon under ASan/UBSan with hostile clients: runs
# $(BUILD)/asan/mysteerd, which `make test` builds first (asan-bins).
INTEG_TESTS += tests/integration/asan_daemon.sh
INTEG_TESTS += tests/integration/exposure.sh tests/integration/privdrop.sh
INTEG_TESTS += tests/integration/daemon_service.sh
INTEG_TESTS += tests/integration/preflight.sh
