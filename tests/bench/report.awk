# report.awk - turns the raw CSV of scripts/bench.sh into the generated part of
# docs/BENCHMARKS.md (tables, PASS/MISS rows) and the .dat files plot.gp reads.
#
# Kept apart from bench.sh so that a report can be regenerated from any
# committed bench/results/*.csv:
#   gawk -v csvname=X -v datdir=DIR -f tests/bench/report.awk X > report.md
#
# Ratios are taken per round (each path against direct of the same round) and
# then their median is reported, so a slow round does not skew one path only.
BEGIN {
	FS = ","
	npaths = 0
	wl_title["ps8"] = "oltp_point_select, 8 threads"
	wl_title["ro8"] = "oltp_read_only (--skip_trx=on), 8 threads"
	wl_title["rw8"] = "oltp_read_write, 8 threads"
	wl_title["ps1"] = "oltp_point_select, 1 thread (latency)"
	wl_title["conn4"] = "connect, SELECT 1, close (connrate), 4 threads"
	nwl = split("ps8 ro8 rw8 ps1 conn4", wl_order, " ")
	npall = split("direct haproxy haproxy_veth steer lookup relay proxy proxy_tls", path_order, " ")
	path_desc["direct"] = "client -> server port"
	path_desc["haproxy"] = "HAProxy 2.6, TCP mode (16446), loopback, same namespace as client and servers"
	path_desc["haproxy_veth"] = "the same HAProxy where the relay's mysteerd is: relay namespace, servers across the veth pair"
	path_desc["steer"] = "cgroup connect4 steering (VIP:6446)"
	path_desc["lookup"] = "sk_lookup local handoff (6446)"
	path_desc["relay"] = "sk_lookup + mysteerd relay (6446, local_handoff = off), relay namespace, servers across the veth pair"
	path_desc["proxy"] = "mysteerd 6450 protocol proxy"
	path_desc["proxy_tls"] = "the same 6450 proxy, clients on TLS (sysbench --mysql-ssl=on; backends plain)"
}

/^# / {
	line = substr($0, 3)
	k = substr(line, 1, index(line, "=") - 1)
	meta[k] = substr(line, index(line, "=") + 1)
	next
}
NR == 1 || /^round,/ { next }
NF >= 6 {
	round = $1; path = $2; wl = $3; metric = $5; value = $6
	if (metric == "status") {
		status[path] = value
		next
	}
	if (path ~ /^classifier:/) {
		impl = substr(path, 12)
		if (impl == "ratio") next # classify-bench's own ratio line; recomputed below
		cls[wl, impl, metric] = value
		if (!((wl) in cls_mix_seen)) { cls_mix_seen[wl] = 1; cls_mixes[++ncm] = wl }
		if (!((impl) in cls_impl_seen)) { cls_impl_seen[impl] = 1; cls_impls[++nci] = impl }
		next
	}
	if (path == "proxy" && wl == "idle") {
		idle[metric] = value
		next
	}
	v[path, wl, metric, round] = value
	have[path, wl, metric] = 1
	measured[path] = 1
	if (round + 0 > maxround) maxround = round + 0
}

function median(arr, n,    tmp, i, m) {
	if (n == 0) return ""
	for (i = 1; i <= n; i++) tmp[i] = arr[i] + 0
	asort(tmp)
	m = int((n + 1) / 2)
	if (n % 2) return tmp[m]
	return (tmp[m] + tmp[m + 1]) / 2
}
function minof(arr, n,    i, m) { m = arr[1] + 0; for (i = 2; i <= n; i++) if (arr[i] + 0 < m) m = arr[i] + 0; return m }
function maxof(arr, n,    i, m) { m = arr[1] + 0; for (i = 2; i <= n; i++) if (arr[i] + 0 > m) m = arr[i] + 0; return m }

# Fills out[] with the per-round values of (path, wl, metric); returns the count.
function values(path, wl, metric, out,    r, n) {
	delete out
	n = 0
	for (r = 1; r <= maxround; r++)
		if ((path, wl, metric, r) in v) out[++n] = v[path, wl, metric, r]
	return n
}
# Per-round ratio a/b (op "div") or difference a-b (op "sub"), same round only.
function paired(a, b, wl, metric, op, out,    r, n, x, y) {
	delete out
	n = 0
	for (r = 1; r <= maxround; r++) {
		if (!((a, wl, metric, r) in v) || !((b, wl, metric, r) in v)) continue
		x = v[a, wl, metric, r] + 0; y = v[b, wl, metric, r] + 0
		if (op == "div") { if (y == 0) continue; out[++n] = x / y }
		else out[++n] = x - y
	}
	return n
}
function fmt(x) {
	if (x == "") return "–"
	if (x >= 1e6) return sprintf("%.2f M", x / 1e6)
	if (x >= 100) return sprintf("%.0f", x)
	if (x >= 10) return sprintf("%.1f", x)
	return sprintf("%.3g", x)
}
function stat_cell(path, wl, metric,    a, n) {
	n = values(path, wl, metric, a)
	if (!n) return "| – | – "
	return sprintf("| %s | %s–%s ", fmt(median(a, n)), fmt(minof(a, n)), fmt(maxof(a, n)))
}
function med_cell(path, wl, metric,    a, n) {
	n = values(path, wl, metric, a)
	return n ? sprintf("| %s ", fmt(median(a, n))) : "| – "
}
function ratio_cell(path, base, wl, metric,    a, n) {
	n = paired(path, base, wl, metric, "div", a)
	if (!n) return "| – "
	return sprintf("| %.2f× (%.2f–%.2f) ", median(a, n), minof(a, n), maxof(a, n))
}
function diff_cell(path, base, wl, metric, scale, unit,    a, n) {
	n = paired(path, base, wl, metric, "sub", a)
	if (!n) return "| – "
	return sprintf("| %+.0f %s ", median(a, n) * scale, unit)
}
function med_of(path, wl, metric,    a, n) {
	n = values(path, wl, metric, a)
	return n ? fmt(median(a, n)) : "–"
}
function path_state(p) {
	if (p in measured) return "measured"
	if (p in status) return status[p] == "not_built" ? "not built" : status[p]
	return "not built"
}

# A target row. kind: "ratio" (a/b >= thr), "maxdiff" (a-b <= thr, in the
# metric's unit times scale), "max" (a <= thr), "min".
function target(area, text, a, b, wl, metric, kind, thr, scale, unit,    arr, n, m, got, verdict) {
	if (!(a in measured)) {
		printf "| %s | %s | – | %s |\n", area, text, path_state(a)
		return
	}
	if (!(b in measured) || !have[a, wl, metric]) {
		printf "| %s | %s | – | not measured |\n", area, text
		return
	}
	if (kind == "ratio") {
		n = paired(a, b, wl, metric, "div", arr)
		if (!n) { printf "| %s | %s | – | not measured |\n", area, text; return }
		m = median(arr, n)
		got = sprintf("%.2f× %s (rounds %.2f–%.2f)", m, b, minof(arr, n), maxof(arr, n))
		verdict = m >= thr ? "PASS" : "MISS"
	} else if (kind == "ref") {
		# Shown for comparison, not the target's baseline: no verdict.
		n = paired(a, b, wl, metric, "div", arr)
		if (!n) { printf "| %s | %s | – | not measured |\n", area, text; return }
		m = median(arr, n)
		got = sprintf("%.2f× %s (rounds %.2f–%.2f)", m, b, minof(arr, n), maxof(arr, n))
		verdict = sprintf("reference (%s %g× %s)", m >= thr ? "above" : "below", thr, b)
	} else if (kind == "maxratio") {
		# a/b <= thr: a cost, lower is better
		n = paired(a, b, wl, metric, "div", arr)
		if (!n) { printf "| %s | %s | – | not measured |\n", area, text; return }
		m = median(arr, n)
		got = sprintf("%.2f× %s (rounds %.2f–%.2f; %s µs against %s)", m, b, minof(arr, n), maxof(arr, n), \
			med_of(a, wl, metric), med_of(b, wl, metric))
		verdict = m <= thr ? "PASS" : "MISS"
	} else if (kind == "max") {
		# a <= thr, in the metric's unit
		n = values(a, wl, metric, arr)
		if (!n) { printf "| %s | %s | – | not measured |\n", area, text; return }
		m = median(arr, n)
		got = sprintf("%s %s (rounds %s–%s)", fmt(m), unit, fmt(minof(arr, n)), fmt(maxof(arr, n)))
		verdict = m <= thr ? "PASS" : "MISS"
	} else if (kind == "maxdiff") {
		n = paired(a, b, wl, metric, "sub", arr)
		if (!n) { printf "| %s | %s | – | not measured |\n", area, text; return }
		m = median(arr, n) * scale
		got = sprintf("%+.0f %s over %s", m, unit, b)
		verdict = m <= thr ? "PASS" : "MISS"
	}
	printf "| %s | %s | %s | %s |\n", area, text, got, verdict
}

function write_dat(file, rows, nrows, metrics, scale,    i, j, p, a, n, line, wlm, any, printed) {
	printf "# row" > file
	for (j = 1; j <= nplot; j++) printf " %s_med %s_min %s_max", plot_paths[j], plot_paths[j], plot_paths[j] > file
	printf "\n" > file
	for (i = 1; i <= nrows; i++) {
		split(metrics[i], wlm, ":")
		line = "\"" rows[i] "\""
		any = 0
		for (j = 1; j <= nplot; j++) {
			n = values(plot_paths[j], wlm[1], wlm[2], a)
			if (n) line = line sprintf(" %g %g %g", median(a, n) * scale[i], minof(a, n) * scale[i], maxof(a, n) * scale[i])
			else line = line " ? ? ?"
			any += n
		}
		# A workload the run skipped (quick mode) leaves no empty group behind.
		if (any) { print line > file; printed++ }
	}
	# gnuplot cannot draw a file without rows: one empty group says why.
	if (!printed) {
		line = "\"not measured\""
		for (j = 1; j <= nplot; j++) line = line " 0 0 0"
		print line > file
	}
	close(file)
}

END {
	for (i = 1; i <= npall; i++) if (path_order[i] in measured) plot_paths[++nplot] = path_order[i]

	print "## Results"
	print ""
	printf "Latest %s run: %s, git `%s`, raw data `%s`.\n", meta["mode"], meta["date"], meta["git"], csvname
	printf "Machine: %s cores (%s), kernel %s; **%s**. ", meta["nproc"], meta["cpu"], meta["kernel"], meta["shared_cores"]
	printf "Load average %s at the start, %s at the end. ", meta["loadavg_start"], meta["loadavg_end"]
	printf "MariaDB %s, HAProxy %s, sysbench %s; %s; %s rounds of %s s a run, paths interleaved; the whole run took %s s.\n", \
		meta["mariadb"], meta["haproxy"], meta["sysbench"], meta["tables"], meta["rounds"], meta["seconds_per_run"], meta["elapsed_s"]
	print ""
	print "| path | what | state |"
	print "|---|---|---|"
	for (i = 1; i <= npall; i++) {
		p = path_order[i]
		reason = meta["not_built_" p]
		gsub(/\|/, "/", reason) # keep the table a table
		printf "| %s | %s | %s%s |\n", p, path_desc[p], path_state(p), reason != "" ? " (" reason ")" : ""
	}
	print ""
	print "Each cell: median over the rounds, then min–max; ratios are per round against `direct` of the same round (median, min–max)."

	for (w = 1; w <= nwl; w++) {
		wl = wl_order[w]
		anyw = 0
		for (i = 1; i <= nplot; i++)
			if (have[plot_paths[i], wl, "qps"] || have[plot_paths[i], wl, "conns_per_s"] ||
			    have[plot_paths[i], wl, "lat_p99_ms"])
				anyw = 1
		if (!anyw) continue
		print ""
		print "### " wl_title[wl]
		print ""
		if (wl == "ps1") {
			print "| path | avg ms | min–max | p99 ms | min–max | p99 vs direct | QPS | × direct |"
			print "|---|---|---|---|---|---|---|---|"
		} else if (wl == "conn4") {
			print "| path | conns/s | min–max | × direct | connect p50 µs | min–max | connect p99 µs | min–max |"
			print "|---|---|---|---|---|---|---|---|"
		} else {
			print "| path | QPS | min–max | × direct | p99 ms | min–max |"
			print "|---|---|---|---|---|---|"
		}
		for (i = 1; i <= nplot; i++) {
			p = plot_paths[i]
			if (wl == "ps1")
				row = stat_cell(p, wl, "lat_avg_ms") stat_cell(p, wl, "lat_p99_ms") diff_cell(p, "direct", wl, "lat_p99_ms", 1000, "µs") med_cell(p, wl, "qps") ratio_cell(p, "direct", wl, "qps")
			else if (wl == "conn4")
				row = stat_cell(p, wl, "conns_per_s") ratio_cell(p, "direct", wl, "conns_per_s") stat_cell(p, wl, "conn_p50_us") stat_cell(p, wl, "conn_p99_us")
			else
				row = stat_cell(p, wl, "qps") ratio_cell(p, "direct", wl, "qps") stat_cell(p, wl, "lat_p99_ms")
			printf "| %s %s|\n", p, row
		}
	}

	cost_tables()

	if (ncm) {
		print ""
		print "### Classifier (one core, in-process, `build/classify-bench`)"
		print ""
		print "| mix | implementation | statements/s | MB/s |"
		print "|---|---|---|---|"
		for (i = 1; i <= ncm; i++) for (j = 1; j <= nci; j++) {
			if (!((cls_mixes[i], cls_impls[j], "stmts_per_s") in cls) &&
			    !((cls_mixes[i], cls_impls[j], "mb_per_s") in cls))
				continue
			printf "| %s | %s | %s | %s |\n", cls_mixes[i], cls_impls[j], \
				fmt(cls[cls_mixes[i], cls_impls[j], "stmts_per_s"]), fmt(cls[cls_mixes[i], cls_impls[j], "mb_per_s"])
		}
	}

	print ""
	print "### Performance targets (same run)"
	print ""
	print "| area | target | measured | verdict |"
	print "|---|---|---|---|"
	target("6450", "6450 proxy: router CPU per point select (8 thr) ≤ 0.7× HAProxy's", "proxy", "haproxy", "ps8", "router_us_per_q", "maxratio", 0.7)
	target("relay", "relay: router CPU per point select (8 thr) ≤ 0.6× HAProxy's at the same place (haproxy_veth)", "relay", "haproxy_veth", "ps8", "router_us_per_q", "maxratio", 0.6)
	target("steer", "connect steering: no router CPU per query (≤ 2 % of HAProxy's: nothing in userspace)", "steer", "haproxy", "ps8", "router_us_per_q", "maxratio", 0.02)
	target("steer", "connect steering: machine CPU per query within 5 % of direct", "steer", "direct", "ps8", "machine_us_per_q", "maxratio", 1.05)
	target("lookup", "sk_lookup handoff: no router CPU per query (≤ 2 % of HAProxy's: nothing in userspace)", "lookup", "haproxy", "ps8", "router_us_per_q", "maxratio", 0.02)
	target("lookup", "sk_lookup handoff: machine CPU per query within 5 % of direct", "lookup", "direct", "ps8", "machine_us_per_q", "maxratio", 1.05)
	target("6450", "6450 connection storm (4 thr): connections/s ≥ 1.0× direct", "proxy", "direct", "conn4", "conns_per_s", "ratio", 1.0)
	target("6450", "6450 connection storm (4 thr): router CPU per connection ≤ HAProxy's", "proxy", "haproxy", "conn4", "router_us_per_conn", "maxratio", 1.0)
	target("6450", "6450 proxy, 1-thread p99 latency ≤ direct + 100 µs", "proxy", "direct", "ps1", "lat_p99_ms", "maxdiff", 100, 1000, "µs")
	cls_target("classifier", "classifier ≥ 3× the PCRE2 baseline's statements/s, OLTP mix", "oltp", "stmts_per_s", 3)
	cls_target("classifier", "classifier ≥ 1.5× the PCRE2 baseline's MB/s, long mix", "long", "mb_per_s", 1.5)
	if (meta["scrape_us_per_scrape"] != "")
		printf "| metrics | a /metrics scrape each 1 s under load (6450 ps8) ≤ 1 %% of a core | %s µs of CPU a scrape = %s %% of a core (%s scrapes; mysteerd %s without, %s with) | %s |\n", \
			meta["scrape_us_per_scrape"], meta["scrape_pct_core_at_1s"], meta["scrape_count"], \
			meta["scrape_cpu_without"], meta["scrape_cpu_with"], \
			(meta["scrape_pct_core_at_1s"] + 0 <= 1) ? "PASS" : "MISS"
	else
		print "| metrics | a /metrics scrape each 1 s under load ≤ 1 % of a core | not measured (no 6450 path) | not measured |"
	limit = meta["mode"] == "quick" ? 90 : 600
	if (meta["mode"] == "partial")
		printf "| bench | run time | %s s (partial run: some paths or workloads only) | not measured |\n", meta["elapsed_s"]
	else
		printf "| bench | %s run ≤ %d s | %s s | %s |\n", meta["mode"], limit, meta["elapsed_s"], \
			(meta["elapsed_s"] + 0 <= limit) ? "PASS" : "MISS"
	print ""
	print "QPS ratios, for reference (the former targets: on 2 cores shared by client, servers and router they follow the machine's noise more than the code):"
	print ""
	print "| area | ratio | measured | verdict |"
	print "|---|---|---|---|"
	target("steer", "connect steering, oltp_point_select 8 thr vs direct", "steer", "direct", "ps8", "qps", "ref", 0.97)
	target("lookup", "sk_lookup handoff, oltp_point_select 8 thr vs direct", "lookup", "direct", "ps8", "qps", "ref", 0.97)
	target("relay", "relay, oltp_point_select 8 thr vs HAProxy at the same place (haproxy_veth)", "relay", "haproxy_veth", "ps8", "qps", "ref", 1.2)
	target("relay", "relay vs HAProxy on loopback (different network path: no veth hop)", "relay", "haproxy", "ps8", "qps", "ref", 1.2)
	target("steer", "connect steering, new connections/s vs direct", "steer", "direct", "conn4", "conns_per_s", "ref", 0.95)
	target("6450", "6450 proxy, oltp_point_select 8 thr vs HAProxy", "proxy", "haproxy", "ps8", "qps", "ref", 1.3)
	target("6450", "6450 proxy, oltp_read_only 8 thr vs HAProxy", "proxy", "haproxy", "ro8", "qps", "ref", 1.3)
	target("6450", "6450 proxy, connection storm (4 thr) vs direct", "proxy", "direct", "conn4", "conns_per_s", "ref", 1.5)
	target("6450", "6450 proxy with client TLS, oltp_point_select 8 thr vs plain 6450 (the cost of TLS)", "proxy_tls", "proxy", "ps8", "qps", "ref", 0.9)
	target("6450", "6450 proxy with client TLS: router CPU per point select (8 thr) vs plain 6450", "proxy_tls", "proxy", "ps8", "router_us_per_q", "ref", 1.2)
	if ("rss_mb" in idle)
		printf "| 6450 | 6450 proxy, 10,000 idle clients: daemon RSS ≤ 400 MB | %s MB with %s clients open | %s |\n", \
			idle["rss_mb"], idle["idle_conns"], \
			(idle["idle_conns"] + 0 >= 10000 && idle["rss_mb"] + 0 <= 400) ? "PASS" : (idle["rss_mb"] + 0 > 400 ? "MISS" : "not measured (fewer clients)")
	else
		printf "| 6450 | 6450 proxy, 10,000 idle clients: daemon RSS ≤ 400 MB | – | %s |\n", ("proxy" in measured) ? "not measured" : path_state("proxy")

	# Data for plot.gp: rows are groups on the x axis, columns triples per path.
	rows[1] = "point-select 8 thr"; met[1] = "ps8:qps"; sc[1] = 1
	rows[2] = "read-only 8 thr"; met[2] = "ro8:qps"; sc[2] = 1
	rows[3] = "read-write 8 thr"; met[3] = "rw8:qps"; sc[3] = 1
	write_dat(datdir "/qps.dat", rows, 3, met, sc)
	delete rows; delete met; delete sc
	rows[1] = "connect, SELECT 1, close (4 thr)"; met[1] = "conn4:conns_per_s"; sc[1] = 1
	write_dat(datdir "/conn.dat", rows, 1, met, sc)
	delete rows; delete met; delete sc
	rows[1] = "avg"; met[1] = "ps1:lat_avg_ms"; sc[1] = 1
	rows[2] = "p99"; met[2] = "ps1:lat_p99_ms"; sc[2] = 1
	write_dat(datdir "/lat.dat", rows, 2, met, sc)
	delete rows; delete met; delete sc
	rows[1] = "point-select 8 thr"; met[1] = "ps8:router_us_per_q"; sc[1] = 1
	rows[2] = "read-only 8 thr"; met[2] = "ro8:router_us_per_q"; sc[2] = 1
	rows[3] = "read-write 8 thr"; met[3] = "rw8:router_us_per_q"; sc[3] = 1
	rows[4] = "point-select 1 thr"; met[4] = "ps1:router_us_per_q"; sc[4] = 1
	write_dat(datdir "/cost_router.dat", rows, 4, met, sc)
	delete rows; delete met; delete sc
	rows[1] = "point-select 8 thr"; met[1] = "ps8:machine_us_per_q"; sc[1] = 1
	rows[2] = "read-only 8 thr"; met[2] = "ro8:machine_us_per_q"; sc[2] = 1
	rows[3] = "read-write 8 thr"; met[3] = "rw8:machine_us_per_q"; sc[3] = 1
	rows[4] = "point-select 1 thr"; met[4] = "ps1:machine_us_per_q"; sc[4] = 1
	write_dat(datdir "/cost_machine.dat", rows, 4, met, sc)
	delete rows; delete met; delete sc
	rows[1] = "p50"; met[1] = "conn4:conn_p50_us"; sc[1] = 0.001
	rows[2] = "p99"; met[2] = "conn4:conn_p99_us"; sc[2] = 0.001
	write_dat(datdir "/connlat.dat", rows, 2, met, sc)
	pl = ""
	for (j = 1; j <= nplot; j++) pl = pl (j > 1 ? " " : "") plot_paths[j]
	printf "paths = \"%s\"\nnpaths = %d\n", pl, nplot > (datdir "/paths.gp")
	close(datdir "/paths.gp")

	print ""
	print "## How to reproduce"
	print ""
	print "```sh"
	print "make && make bench            # full run, about 10 minutes; rewrites this section and the plots"
	print "BENCH_QUICK=1 make bench      # 90-second smoke run (CI); writes only under build/bench/"
	print "BENCH_ROUNDS=8 BENCH_PATHS=\"haproxy haproxy_veth relay\" BENCH_WORKLOADS=ps8 make bench   # focused run, under build/bench/"
	print "gawk -v csvname=F -v datdir=/tmp -f tests/bench/report.awk bench/results/F.csv   # tables from a raw CSV"
	print "```"
	print ""
	print "`scripts/bench.sh` runs as root in a network and mount namespace of its own: it starts the sandbox"
	print "(`scripts/sandbox.sh`, primary 3306, replicas 3307/3308), prepares the sysbench tables on the"
	print "primary and waits for the replicas, starts HAProxy (config generated in the scratch dir,"
	print "frontends 16446 → primary and 16447 → replicas, `option mysql-check user haproxy`), and mysteerd"
	print "with a child cgroup made for the run; the relay path uses a second mysteerd with"
	print "`local_handoff = off` in a second namespace linked by a veth pair, and `haproxy_veth` is a second"
	print "HAProxy (same config, servers at the veth address) in that same namespace, its clients there too."
	print "Before measuring a path it checks that the path works as claimed (the answer comes from the writer;"
	print "for connect steering no socket sits on 6446, for the handoff the server's socket does, for the relay"
	print "mysteerd's, for haproxy_veth HAProxy's, with its server side across the veth); otherwise the path is"
	print "\"not built\"."
	print "Everything it started is stopped by PID at the end, also on failure or Ctrl-C."
	print ""
	print "sysbench 1.0 runs as `sysbench TEST --mysql-host=127.0.0.1 --mysql-port=PORT --mysql-user=app"
	print "--tables=N --table-size=M --threads=T --time=S --percentile=99 --rand-type=uniform run`"
	print "(prepared statements, `--db-ps-mode=auto`); `connrate` (tests/bench/connrate.c) loops"
	print "connect, `SELECT 1`, close with libmysqlclient on 4 threads and reports the connect time."
	print "`BENCH_ROUNDS`, `BENCH_TIME`, `BENCH_PATHS`, `BENCH_WORKLOADS`, `BENCH_KEEP=1`, `BENCH_PAUSE=1` and"
	print "`BENCH_LOG_LEVEL` tune or debug a run (see the header of scripts/bench.sh)."
	print ""
	print "## Caveats"
	print ""
	print "- Client, servers and routers share the same " meta["nproc"] " cores: a router's CPU is taken from the"
	print "  client and the server, so a userspace hop shows up as lost QPS, not only as added latency."
	print "  Other work on the machine (compilers, tests) adds noise: a load average above ~0.5 at the start"
	print "  means the run shared the cores with something else, and single rounds can then differ by 2×;"
	print "  trust the median ratios more than absolute figures, and rerun on a quiet machine to confirm."
	print "- The L4 paths (direct, haproxy, steer, lookup, relay) all read from and write to the primary"
	print "  (the read-write route), so they differ only by the path. The 6450 proxy sends reads to the"
	print "  replicas, as it is meant to; its ratios compare a different server set."
	print "- `oltp_read_only` runs with `--skip_trx=on` on every path, so all paths send the same queries"
	print "  and the 6450 proxy may spread them over the replicas."
	print "- The relay path crosses a veth pair (its mysteerd runs in a second namespace, so that sk_lookup"
	print "  relays to servers that are remote to it); the other mysteer paths and `haproxy` use loopback"
	print "  only. `haproxy_veth` puts HAProxy at exactly the relay's place (same namespace, same two veth"
	print "  crossings per round trip, same servers, clients started in that namespace connecting to"
	print "  127.0.0.1), so **relay / haproxy_veth compares the two relays** and is the relay's verdict;"
	print "  relay / haproxy also contains the cost of the veth hop and is shown for reference only."
	print "- Short runs (" meta["seconds_per_run"] " s): the ranges show how much one round can differ."
}

function cls_target(area, text, mixpat, metric, thr,    i, j, ours, base, mix, m, o, b) {
	mix = ""
	for (i = 1; i <= ncm; i++) if (cls_mixes[i] ~ mixpat) { mix = cls_mixes[i]; break }
	if (mix == "") { printf "| %s | %s | – | %s |\n", area, text, ("classifier" in status) ? status["classifier"] == "not_built" ? "not built" : status["classifier"] : "not built"; return }
	ours = ""; base = ""
	# Only implementations measured on this mix: the whole-process rows
	# (mysteer-classify, regex-classify) have a mix of their own.
	for (j = 1; j <= nci; j++) {
		if (!((mix, cls_impls[j], metric) in cls)) continue
		if (cls_impls[j] ~ /regex|pcre/) { if (base == "") base = cls_impls[j] }
		else if (ours == "") ours = cls_impls[j]
	}
	if (ours == "" || base == "") { printf "| %s | %s | – | not measured |\n", area, text; return }
	o = cls[mix, ours, metric] + 0; b = cls[mix, base, metric] + 0
	if (b == 0) { printf "| %s | %s | – | not measured |\n", area, text; return }
	m = o / b
	printf "| %s | %s | %.2f× (%s %s vs %s %s) | %s |\n", area, text, m, ours, fmt(o), base, fmt(b), m >= thr ? "PASS" : "MISS"
}

# Cost per query (or per connection, conn4): the CPU time the router spent
# over a run (all its threads; none for direct), and the whole machine's busy
# time (client, servers, router, kernel), divided by the queries the run
# carried. Unlike QPS, a path's cost per query hardly depends on who else
# uses the cores.
function cost_tables(    w, wl, unit, i, p, any, perfcols, ev, k, row) {
	nperf = split("syscalls context_switches cpu_migrations instructions cycles", perfev, " ")
	print ""
	print "### Cost per query: CPU time (µs), router and whole machine"
	print ""
	print "Router: the CPU time of the process that carries the path in userspace (HAProxy, or mysteerd for the relay and the 6450 proxy; mysteerd for connect steering and the handoff too, where only its probes run), all threads, from `/proc/PID/task/*/schedstat`, over the run, less what the same process spends with no traffic over as long (probes, health checks: measured before the rounds, in the raw CSV as `idle_cpu_*`), divided by the queries (connections for the storm) the run carried. Machine: all cores' busy time from `/proc/stat` over the run, divided the same way (client and servers included, so it compares paths, not routers). Median over the rounds, min–max; × is per round against the baseline of the same round."
	for (w = 1; w <= nwl; w++) {
		wl = wl_order[w]
		unit = wl == "conn4" ? "conn" : "q"
		any = 0
		for (i = 1; i <= nplot; i++) if (have[plot_paths[i], wl, "machine_us_per_" unit]) any = 1
		if (!any) continue
		perfcols = ""
		for (k = 1; k <= nperf; k++) {
			ev = perfev[k]
			for (i = 1; i <= nplot; i++) if (have[plot_paths[i], wl, "router_" ev "_per_" unit]) { perfcols = perfcols " " ev; break }
		}
		print ""
		printf "%s, per %s:\n\n", wl_title[wl], unit == "q" ? "query" : "connection"
		printf "| path | router µs | min–max | × HAProxy | machine µs | min–max | × direct |"
		nper = split(perfcols, pc, " ")
		for (k = 1; k <= nper; k++) printf " router %s |", pc[k]
		printf "\n|---|---|---|---|---|---|---|"
		for (k = 1; k <= nper; k++) printf "---|"
		printf "\n"
		for (i = 1; i <= nplot; i++) {
			p = plot_paths[i]
			row = stat_cell(p, wl, "router_us_per_" unit)
			row = row ((p == "direct") ? "| – " : ratio_cell(p, p == "relay" ? "haproxy_veth" : "haproxy", wl, "router_us_per_" unit))
			row = row stat_cell(p, wl, "machine_us_per_" unit) ratio_cell(p, "direct", wl, "machine_us_per_" unit)
			for (k = 1; k <= nper; k++) row = row med_cell(p, wl, "router_" pc[k] "_per_" unit)
			printf "| %s %s|\n", p, row
		}
	}
	print ""
	print "The relay's ratio is against `haproxy_veth` (the same place), every other path's against `haproxy`. Router syscalls and context switches per query come from `perf stat` (full run); instructions from perf where the machine has hardware counters, else from callgrind (one thread, point selects, HAProxy and the 6450 engine alone: user-space instructions only, the kernel's work for their system calls not included)."
}
