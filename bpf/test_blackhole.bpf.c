// SPDX-License-Identifier: GPL-2.0
/*
 * test_blackhole.bpf.c - for tests only (tests/integration/relay_connect.sh):
 * a tc egress filter (direct action) for the loopback of a test's own network
 * namespace that drops every TCP SYN to port 3306, so that a new connection
 * to that server hangs as to a black-holed host while connections already
 * established (the daemon's probes) go on.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

#define BLACKHOLE_PORT 3306
#define TC_OK          0
#define TC_SHOT        2

SEC("tc")
int ms_test_blackhole(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *tcp;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(0x0800) || ip->protocol != 6)
		return TC_OK;
	tcp = (void *)ip + ip->ihl * 4;
	if ((void *)(tcp + 1) > end)
		return TC_OK;
	if (tcp->syn && !tcp->ack && tcp->dest == bpf_htons(BLACKHOLE_PORT))
		return TC_SHOT;
	return TC_OK;
}
