# chaos: the failover harness (tests/chaos/run.sh, `make chaos`) and its load
# client on libmysqlclient.
BINS += $(BUILD)/chaos-client
$(BUILD)/chaos-client: $(BUILD)/obj/tests/chaos/chaos_client.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
