#!/usr/bin/env bash
# Installs every Debian package mysteer needs to build, test and benchmark.
# Idempotent: when everything is present it only runs dpkg-query (well under
# 2 s). Must run as root. A package it installs must not start its service
# (the sandbox runs its own MariaDB servers, the bench its own HAProxy, the metrics test its own
# Prometheus, the cluster test its own etcd), and a
# service the host already runs is left alone: tests and the bench run in
# network namespaces of their own, and `make run` checks its ports first.
set -euo pipefail

PACKAGES=(
	build-essential pkg-config make
	clang llvm libclang-rt-14-dev
	libbpf-dev bpftool libelf-dev zlib1g-dev
	libinih-dev libjson-c-dev libpcre2-dev libssl-dev libsystemd-dev systemd
	tmux
	libmariadb-dev-compat libmariadb-dev mariadb-server mariadb-client mariadb-test
	check
	iproute2 util-linux procps
	sysbench haproxy gnuplot-nox gawk
	valgrind
	python3-pymysql nodejs
	libmicrohttpd-dev prometheus
	libcurl4-openssl-dev etcd-server etcd-client socat
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
	# Keep newly installed services (mariadb, haproxy, prometheus, etcd) from starting: a
	# policy-rc.d of our own for the install, and the host's own one, if it
	# has one, put back as it was afterwards.
	policy=/usr/sbin/policy-rc.d saved=
	if [ -e "$policy" ] || [ -L "$policy" ]; then
		saved=$(mktemp -u /usr/sbin/.policy-rc.d.mysteer.XXXXXX)
		cp -a "$policy" "$saved"
	fi
	restore_policy() {
		if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
	}
	trap restore_policy EXIT
	printf '#!/bin/sh\nexit 101\n' >"$policy.new"
	chmod +x "$policy.new"
	mv -f "$policy.new" "$policy"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# Nor at the next boot: the services of packages installed just now are
	# left disabled (one the host had before is not touched).
	for pair in mariadb-server:mariadb haproxy:haproxy prometheus:prometheus etcd-server:etcd; do
		case " ${missing[*]} " in
		*" ${pair%%:*} "*)
			if command -v systemctl >/dev/null 2>&1; then
				systemctl disable "${pair#*:}" >/dev/null 2>&1 ||
					echo "install-deps: could not disable ${pair#*:} (it may start at boot)" >&2
			fi
			;;
		esac
	done
fi

# The Node.js clients of the tests (tests/clients/node): mysql2 from the npm
# registry as package-lock.json pins it, installed again only when the lock
# file is newer than what npm ci installed last.
node_dir=$(cd "$(dirname "$0")/.." && pwd)/tests/clients/node
if [ -f "$node_dir/package-lock.json" ] &&
	{ [ ! -f "$node_dir/node_modules/.package-lock.json" ] ||
		[ "$node_dir/package-lock.json" -nt "$node_dir/node_modules/.package-lock.json" ]; }; then
	if ! command -v npm >/dev/null; then
		apt-get install -y -qq --no-install-recommends npm >/dev/null ||
			{ echo "install-deps: cannot install npm" >&2; exit 1; }
	fi
	(cd "$node_dir" && npm ci --no-audit --no-fund --silent) ||
		{ echo "install-deps: npm ci in tests/clients/node failed" >&2; exit 1; }
fi

# The unprivileged user the sandbox's mysteerd and the tests run as
# ([mysteerd] user): a system user without home or shell.
if ! getent passwd mysteer >/dev/null; then
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
		mysteer || { echo "install-deps: cannot create the system user mysteer" >&2; exit 1; }
fi
exit 0
