# bpf: every bpf/<prog>.bpf.c becomes $(BUILD)/bpf/<prog>.bpf.o and a libbpf
# skeleton $(BUILD)/gen/<prog>.skel.h (struct <prog>), just by existing, so
# programs of several owners build without touching this file.
#
# Programs compile against a vmlinux.h dumped from the running kernel's BTF
# (CO-RE), which also gives the iterator and kfunc types.

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJ_FILES := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS  := $(patsubst bpf/%.bpf.c,$(BUILD)/gen/%.skel.h,$(BPF_SRCS))
BPF_OBJS   += $(BPF_OBJ_FILES) $(BPF_SKELS)
VMLINUX_H  := $(BUILD)/gen/vmlinux.h
BPF_ARCH   := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	      -Wno-unused-function -I$(BUILD)/gen -Ibpf

$(VMLINUX_H):
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) bpf/mysteer_abi.h bpf/maps.bpf.h
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@mkdir -p $(dir $@)
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# Userspace objects that include a skeleton: depend on them with
#   $(MY_OBJS): $(BPF_SKELS)
all: $(BPF_OBJS)
