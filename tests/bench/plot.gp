# plot.gp - the two pictures of docs/BENCHMARKS.md, from the .dat files that
# tests/bench/report.awk writes (median bars, min-max whiskers, one colour a
# path, the median written above each bar on an opaque box so that a long
# whisker does not strike it through). Called by scripts/bench.sh:
#   gnuplot -e "datdir='DIR'; qps_png='A.png'; lat_png='B.png'" tests/bench/plot.gp
load datdir."/paths.gp"

set terminal pngcairo noenhanced size 1200,520 font "sans,10"
set datafile missing "?"
set style data histograms
set style histogram errorbars gap 2 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key below
set grid ytics
set yrange [0:*]
set xtics nomirror
set ytics nomirror
set style textbox opaque noborder margins 0.5,0.5

# Centre of bar i (1-based) of n in cluster x, as the histogram style lays
# them out (gap 2), for the value labels.
barx(x, i, n) = x + (i - 1 - (n - 1) / 2.0) / (n + 2.0)
kfmt(v) = v >= 1000 ? sprintf("%.1fk", v / 1000.0) : sprintf("%.0f", v)
mfmt(v) = sprintf("%.2f", v)

# A fixed colour per path name, so the pictures of two runs compare.
colour(p) = p eq "direct" ? 0x4c72b0 : p eq "haproxy" ? 0xdd8452 : p eq "haproxy_veth" ? 0xf2c18f : \
	p eq "steer" ? 0x55a868 : \
	p eq "lookup" ? 0x8172b3 : p eq "relay" ? 0xc44e52 : p eq "proxy" ? 0x937860 : 0x888888

# bars FILE with labels made by FMT ("k" or "m")
bars(f, fmt) = sprintf("for [i=1:npaths] '%s' using (column(3*i-1)):(column(3*i)):(column(3*i+1)):xtic(1) title word(paths,i) lc rgb colour(word(paths,i)), for [i=1:npaths] '%s' using (barx($0, i, npaths)):(column(3*i-1)):(%s(column(3*i-1))) with labels boxed rotate by 90 left offset 0,0.4 font ',8' notitle", f, f, fmt)

set output qps_png
set multiplot layout 1,2 title "mysteer bench: throughput by path (median, whiskers min-max; higher is better)"
set size 0.68,0.95
set origin 0,0
set ylabel "queries/s"
set format y "%.0s%c"
eval "plot ".bars(datdir."/qps.dat", "kfmt")
set size 0.32,0.95
set origin 0.68,0
set ylabel "connections/s"
unset key
eval "plot ".bars(datdir."/conn.dat", "kfmt")
unset multiplot

set output lat_png
set multiplot layout 1,2 title "mysteer bench: latency by path (median, whiskers min-max; lower is better)"
set key below
set format y "%g"
set size 0.5,0.95
set origin 0,0
set ylabel "ms per query"
set title "oltp_point_select, 1 thread"
eval "plot ".bars(datdir."/lat.dat", "mfmt")
set origin 0.5,0
set ylabel "ms per connect"
set title "connect, SELECT 1, close, 4 threads"
eval "plot ".bars(datdir."/connlat.dat", "mfmt")
unset multiplot

# Cost per query by path: the router's CPU time and the whole machine's
# (third picture; cost_png is optional for older callers).
if (exists("cost_png")) {
	set output cost_png
	set multiplot layout 1,2 title "mysteer bench: CPU time per query by path (median, whiskers min-max; lower is better)"
	set key below
	set format y "%g"
	set size 0.5,0.95
	set origin 0,0
	set ylabel "router µs per query"
	set title "the router process (HAProxy, mysteerd)"
	eval "plot ".bars(datdir."/cost_router.dat", "mfmt")
	set origin 0.5,0
	set ylabel "machine µs per query"
	set title "the whole machine (client, servers, router)"
	eval "plot ".bars(datdir."/cost_machine.dat", "mfmt")
	unset multiplot
}
