# bench: tools behind `make bench` (scripts/bench.sh). Shared with the
# classifier's bench programs: append with +=, never reassign.
BINS += $(BUILD)/connrate
$(BUILD)/connrate: $(BUILD)/obj/tests/bench/connrate.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
