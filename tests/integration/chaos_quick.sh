#!/usr/bin/env bash
# chaos_quick.sh - the quick variant of the chaos harness (tests/chaos/run.sh)
# for `make test`: the ASan/UBSan daemon, load on every path (connect
# steering, sk_lookup handoff, relay, 6447, 6450), and one of each main fault
# across the two phases; the verdict asserts 0 acknowledged writes lost,
# 0 writes on a non-writer, 0 refused writes present, the daemon alive
# after every fault and nothing left behind. `make chaos` is the full run.
export CHAOS_ASAN=${CHAOS_ASAN:-1}
export CHAOS_FAULTS_handoff=${CHAOS_FAULTS_handoff:-kill_promote daemon_kill}
export CHAOS_FAULTS_relay=${CHAOS_FAULTS_relay:-switchover replica_restart}
export CHAOS_REPEAT=1 CHAOS_GAP_S=${CHAOS_GAP_S:-2}
exec bash "$(dirname "$0")/../chaos/run.sh"
