# proxy: the 6450 MySQL protocol proxy. PROTO_OBJS is the pure codec (unit
# tests and the fuzzer link it alone).
PROTO_OBJS := $(BUILD)/obj/userspace/proxy/proto.o

UNIT_TESTS += $(BUILD)/tests/test_proto
$(BUILD)/tests/test_proto: $(BUILD)/obj/tests/unit/test_proto.o $(PROTO_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(CHECK_LIBS)

UNIT_TESTS += $(BUILD)/tests/test_tls
$(BUILD)/tests/test_tls: $(BUILD)/obj/tests/unit/test_tls.o $(BUILD)/obj/userspace/proxy/tls.o \
			 $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(CHECK_LIBS)

UNIT_TESTS += $(BUILD)/tests/test_users
$(BUILD)/tests/test_users: $(BUILD)/obj/tests/unit/test_users.o \
			   $(BUILD)/obj/userspace/proxy/users.o $(PROTO_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(CHECK_LIBS)

# libFuzzer needs clang; built apart from the generic rule with its own flags.
FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_proto
$(BUILD)/fuzz/fuzz_proto: tests/fuzz/fuzz_proto.c userspace/proxy/proto.c userspace/proxy/proto.h
	@mkdir -p $(dir $@)
	$(CLANG) -g -O1 -std=gnu11 -Iuserspace -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined tests/fuzz/fuzz_proto.c userspace/proxy/proto.c \
		-o $@ -lcrypto

# The engine (engine.c and the files it is split into, which share
# engine_int.h) and the service go into mysteerd; they need the classifier.
ENGINE_OBJS := $(addprefix $(BUILD)/obj/userspace/proxy/, \
	       engine.o client.o route.o backend.o answer.o pool.o wait.o mux.o stmt.o users.o \
	       metrics.o tls.o ops.o switchover.o ryw.o history.o replay.o)
PROXY_OBJS := $(PROTO_OBJS) $(ENGINE_OBJS) \
	      $(BUILD)/obj/userspace/proxy/service.o $(BUILD)/obj/userspace/proxy/routines.o

# proxy_run: the engine without mysteerd, for tests/integration/proxy.sh.
BINS += $(BUILD)/tests/proxy_run
$(BUILD)/tests/proxy_run: $(BUILD)/obj/tests/integration/proxy_run.o $(PROXY_OBJS) \
			  $(CLASSIFY_OBJS) $(CONFIG_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# proxy_pscap: the prepared statement caps through 6450 (proxy_pscap.sh).
BINS += $(BUILD)/tests/proxy_pscap
$(BUILD)/tests/proxy_pscap: $(BUILD)/obj/tests/integration/proxy_pscap.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

DAEMON_OBJS += $(PROXY_OBJS) $(CLASSIFY_OBJS)
INTEG_TESTS += tests/integration/proxy.sh tests/integration/proxy_routines.sh \
	       tests/integration/proxy_pool.sh tests/integration/proxy_mux.sh \
	       tests/integration/proxy_pscap.sh tests/integration/proxy_pwait.sh \
	       tests/integration/proxy_psmux.sh tests/integration/proxy_fair.sh \
	       tests/integration/proxy_bounds.sh tests/integration/proxy_correct.sh \
	       tests/integration/proxy_tls.sh tests/integration/proxy_kill.sh \
	       tests/integration/proxy_infile.sh tests/integration/node_clients.sh \
	       tests/integration/proxy_auth.sh \
	       tests/integration/proxy_switchover.sh tests/integration/proxy_replay.sh \
	       tests/integration/proxy_backend_tls.sh tests/integration/proxy_chuser.sh \
	       tests/integration/proxy_protocol.sh tests/integration/proxy_mysql8.sh

# proxy_chuser: COM_CHANGE_USER with libmysqlclient (proxy_chuser.sh).
BINS += $(BUILD)/tests/proxy_chuser
$(BUILD)/tests/proxy_chuser: $(BUILD)/obj/tests/integration/proxy_chuser.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# proxy_psmux: prepared statements and multiplexing (proxy_psmux.sh).
BINS += $(BUILD)/tests/proxy_psmux
$(BUILD)/tests/proxy_psmux: $(BUILD)/obj/tests/integration/proxy_psmux.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# proxy_ps: a libmysqlclient test client for prepared statements through 6450.
BINS += $(BUILD)/tests/proxy_ps
$(BUILD)/tests/proxy_ps: $(BUILD)/obj/tests/integration/proxy_ps.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# proxy_track: a libmysqlclient test client for session-state tracking
# (last_gtid hidden unless asked for) through 6450.
BINS += $(BUILD)/tests/proxy_track
$(BUILD)/tests/proxy_track: $(BUILD)/obj/tests/integration/proxy_track.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# proxy_fair: many sessions queueing at the cap over 2 workers (proxy_fair.sh).
BINS += $(BUILD)/tests/proxy_fair
$(BUILD)/tests/proxy_fair: $(BUILD)/obj/tests/integration/proxy_fair.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# fuzz_engine: libFuzzer target over the whole engine (tests/fuzz/
# fuzz_engine.c) with scripted backends (tests/lib/scripted_server.c) on
# socketpairs, built from the engine's sources with -DMYSTEER_ENGINE_TEST,
# which compiles in its test seam (proxy/engine_test.h); left out of the
# ASan build (already instrumented here). make test runs it for
# FUZZ_RUNS_fuzz_engine inputs (each one a whole session), not FUZZ_RUNS.
ifeq ($(SAN_FLAGS),)
FUZZ_ENGINE_SRCS := $(patsubst $(BUILD)/obj/%.o,%.c,$(PROXY_OBJS) $(CLASSIFY_OBJS) \
		      $(CONFIG_OBJS) $(COMMON_OBJS)) tests/lib/scripted_server.c
FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_engine
FUZZ_RUNS_fuzz_engine ?= 4000
$(BUILD)/fuzz/fuzz_engine: tests/fuzz/fuzz_engine.c $(FUZZ_ENGINE_SRCS) \
		$(wildcard userspace/*/*.h userspace/classify/*.def tests/lib/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O1 -std=gnu11 -DMYSTEER_ENGINE_TEST -Iuserspace -I$(BUILD)/gen $(PKG_CFLAGS) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		tests/fuzz/fuzz_engine.c $(FUZZ_ENGINE_SRCS) -o $@ -pthread $(PKG_LIBS) -lelf -lz -lm

# test_engine: sessions fuzz_engine found breaking the engine, as unit tests
# on the same seam, built with clang's ASan/UBSan (so not run under valgrind).
UNIT_TESTS += $(BUILD)/tests/test_engine
$(BUILD)/tests/test_engine: tests/unit/test_engine.c $(FUZZ_ENGINE_SRCS) \
		$(wildcard userspace/*/*.h userspace/classify/*.def tests/lib/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O1 -std=gnu11 -Wall -Wextra -Wno-unused-parameter -DMYSTEER_ENGINE_TEST \
		-Iuserspace -I$(BUILD)/gen $(PKG_CFLAGS) -fsanitize=address,undefined \
		-fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		tests/unit/test_engine.c $(FUZZ_ENGINE_SRCS) -o $@ -pthread $(PKG_LIBS) \
		$(CHECK_LIBS) -lelf -lz -lm
endif
