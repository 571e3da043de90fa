#!/usr/bin/env bash
# Installs every Debian package mysteer needs to build, test and benchmark.
# Idempotent: when everything is present it only runs dpkg-query (well under
# 2 s). Must run as root. Stops and disables the packaged MariaDB service, since
# the sandbox runs its own instances and must own ports 3306-3308.
set -euo pipefail

PACKAGES=(
	build-essential pkg-config make
	clang llvm libclang-rt-14-dev
	libbpf-dev bpftool libelf-dev zlib1g-dev
	libinih-dev libjson-c-dev libpcre2-dev libssl-dev
	libmariadb-dev-compat libmariadb-dev mariadb-server mariadb-client
	check
	iproute2 util-linux procps
	sysbench haproxy gnuplot-nox gawk
	valgrind
	python3-pymysql
)

missing=()
for p in "${PACKAGES[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages (${missing[*]}) and not root" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Keep the packaged mariadb/haproxy services from starting at install time.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The sandbox runs its own servers: make sure the packaged ones are not running.
for svc in mariadb haproxy; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
		systemctl stop "$svc" || true
		systemctl disable "$svc" >/dev/null 2>&1 || true
	fi
done
exit 0
