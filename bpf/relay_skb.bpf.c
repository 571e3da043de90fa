/*
 * relay_skb.bpf.c - the SOCKMAP data path candidate for the relay: an
 * sk_skb stream verdict program that sends every segment received on one
 * socket of a pair straight out of the other (kernel only, no wakeup of the
 * relay thread). Used by tests/bench/relay_bench to compare it with splice(2)
 * and a plain copy (docs/BENCHMARKS.md, "Relay data path").
 *
 * Its maps are private to the loading process (not pinned): a pair only lives
 * as long as the relay that made it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* socket cookie -> socket */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} relay_socks SEC(".maps");

/* socket cookie -> the cookie of its peer in the pair */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} relay_peer SEC(".maps");

SEC("sk_skb/stream_verdict")
int relay_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	__u64 *peer = bpf_map_lookup_elem(&relay_peer, &cookie);

	if (!peer)
		return SK_PASS;
	return bpf_sk_redirect_hash(skb, &relay_socks, peer, 0);
}
