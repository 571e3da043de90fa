# classify: the SQL classifier library (CLASSIFY_OBJS, linked by the proxy and
# the CLI), the mysteer-classify CLI, its unit tests and libFuzzer target.
CLASSIFY_OBJS := $(BUILD)/obj/userspace/classify/classify.o \
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
