# classify: the SQL classifier library (CLASSIFY_OBJS, linked by the proxy and
# the CLI), the mysteer-classify CLI, its unit tests and libFuzzer target.
CLASSIFY_OBJS := $(BUILD)/obj/userspace/classify/classify.o \
		 $(BUILD)/obj/userspace/classify/fastpath.o \
		 $(BUILD)/obj/userspace/classify/words.o \
		 $(BUILD)/obj/userspace/classify/routines.o

BINS += $(BUILD)/mysteer-classify
$(BUILD)/mysteer-classify: $(BUILD)/obj/userspace/classify/main.o $(CLASSIFY_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_classify
$(BUILD)/tests/test_classify: $(BUILD)/obj/tests/unit/test_classify.o $(CLASSIFY_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

# libFuzzer needs clang and instruments itself: built from the sources with
# its own flags, and left out of the ASan build (already instrumented there).
ifeq ($(SAN_FLAGS),)
CLASSIFY_SRCS := userspace/classify/classify.c userspace/classify/fastpath.c \
		 userspace/classify/words.c \
		 userspace/classify/routines.c
FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_classify
$(BUILD)/fuzz/fuzz_classify: tests/fuzz/fuzz_classify.c $(CLASSIFY_SRCS) \
		$(wildcard userspace/classify/*.h userspace/classify/*.def)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O1 -std=gnu11 -Iuserspace -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined tests/fuzz/fuzz_classify.c $(CLASSIFY_SRCS) \
		-o $@ -pthread
endif
