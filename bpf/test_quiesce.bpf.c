// SPDX-License-Identifier: GPL-2.0
/*
 * test_quiesce.bpf.c - for tests/unit/test_quiesce.c only: a program that
 * runs for a while (bpf_loop) and counts when it started and when it ended,
 * so the test can check that quiesce_wait() (userspace/maps/quiesce.h)
 * returns only after a program that was running has ended. Never attached.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

__u64 started, ended;
__u32 rounds = 1; /* of 2^23 empty iterations each */

static long spin(__u32 i, void *ctx)
{
	return 0;
}

SEC("tc")
int ms_test_spin(struct __sk_buff *skb)
{
	__sync_fetch_and_add(&started, 1);
	for (__u32 i = 0; i < 64 && i < rounds; i++)
		bpf_loop(1 << 23, spin, NULL, 0);
	__sync_fetch_and_add(&ended, 1);
	return 0;
}
