#!/usr/bin/env bash
# report.sh - `make chaos` (placeholder until the full run lands).
exec bash "$(dirname "$0")/run.sh"
