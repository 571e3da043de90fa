# chaos: the failover harness (tests/chaos/run.sh, `make chaos`) and its load
# client on libmysqlclient.
BINS += $(BUILD)/chaos-client
$(BUILD)/chaos-client: $(BUILD)/obj/tests/chaos/chaos_client.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

INTEG_TESTS += tests/integration/chaos_quick.sh

# make chaos: every fault repeated on both phases, then a randomized run;
# the figures go to docs/RELIABILITY.md (tests/chaos/report.sh).
.PHONY: chaos
chaos: deps all
	@tests/chaos/report.sh

# The verdict itself on fixed inputs: it fails on a lost, misplaced or
# phantom write and allows one in flight.
INTEG_TESTS += tests/chaos/verdict_test.sh
