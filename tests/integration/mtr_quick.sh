#!/usr/bin/env bash
# mtr_quick.sh - the quick subset of MariaDB's own test suite (tests/mtr/quick.txt:
# the cases that failed through 6450 and not directly before they were fixed,
# and a sample of the rest), each run directly against the sandbox's primary
# and through 6450; fails when a case passes directly and not through 6450
# and tests/mtr/known.txt does not list it. `make mtr` runs all 250 cases.
export MTR_CASES=${MTR_CASES:-$(dirname "$0")/../mtr/quick.txt}
export MTR_NAME=mtr_quick
# a hang shows within a minute (the slowest case here, sp-row, takes ~11 s on a busy VM)
export MTR_TIMEOUT=${MTR_TIMEOUT:-60}
exec bash "$(dirname "$0")/../mtr/run.sh"
