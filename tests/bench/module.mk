# bench: tools behind `make bench` (scripts/bench.sh). Shared with the
# classifier's bench programs: append with +=, never reassign.
BINS += $(BUILD)/connrate
$(BUILD)/connrate: $(BUILD)/obj/tests/bench/connrate.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# classifier bench: classify-bench runs the classifier and the
# PCRE2 baseline in-process; regex-classify is the baseline as a program.
BINS += $(BUILD)/classify-bench $(BUILD)/regex-classify
# (fragments under tests/ are read before userspace/: CLASSIFY_OBJS is not
# set yet here, so the library objects are named)
$(BUILD)/classify-bench: $(BUILD)/obj/tests/bench/classify_bench.o \
		$(addprefix $(BUILD)/obj/userspace/classify/,classify.o fastpath.o words.o routines.o)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/regex-classify: $(BUILD)/obj/tests/bench/regex_classify.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The report's medians, per-round ratios and PASS/MISS rules, on a fixed CSV
# (the bench figures themselves are never asserted).
INTEG_TESTS += tests/bench/report_test.sh
