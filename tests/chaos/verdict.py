#!/usr/bin/env python3
"""verdict.py - the chaos harness's verdict (tests/chaos/run.sh).

Reads, from the results directory (--out):
  ledger*.csv  every statement of the load clients (chaos_client.c):
               kind,path,mode,writer_id,seq,t_send_us,t_done_us,outcome,code,server_id
  rows.tsv     every row of chaos.w on the final primary:
               writer_id seq executed_on t_client_send t_server_us
  events.csv   the faults: t_us,phase,fault,rep,what (start, promoted:dbN, end)
  mysteerd-*.log  the daemons' logs: the writer timeline ("writer X -> Y"),
               health ("dbN up -> down") and roles ("dbN reader -> none")

Invariants (the exit status is 1 when one fails, unless it is listed in
--known, a comma-separated list of invariant names, as a known failure):
  lost       an acknowledged write (OK read by the client) missing from the
             final primary
  misplaced  a row executed on a server that was not mysteerd's writer when it
             ran and was not when the client sent it either (in flight), with
             the writer timeline taken from the logs
  phantom    a write refused (server error, or a transaction that failed
             before its COMMIT was sent) or never sent (no connection) that
             is present
Figures (never asserted): per phase, path and fault, the write
unavailability (largest gap between two acknowledged writes of the path from
the last ack before the fault to the fault's end), the time from the
promotion to the first write acknowledged on the new writer, write errors,
unknown outcomes, reads failed, and reads answered by a server mysteerd had
marked down (beyond CLOCK_SLACK_US of in-flight time).

--markdown FILE writes the figures as docs/RELIABILITY.md's tables.
"""
import argparse
import bisect
import csv
import glob
import json
import os
import re
import statistics
import sys
import time

CLOCK_SLACK_US = 2000  # the log's millisecond timestamps are truncated
LOG_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) \w+: (.*)$")
HEALTH = {"unknown", "up", "down"}
ADMIN = {"enabled", "drained", "disabled"}


def log_time_us(date, ms):
    return int(time.mktime(time.strptime(date, "%Y-%m-%d %H:%M:%S"))) * 1000000 + int(ms) * 1000


def read_logs(out):
    """Timelines from the daemons' logs: writer changes, health, admin."""
    writer, health, admin = [], {}, {}
    for f in sorted(glob.glob(os.path.join(out, "mysteerd-*.log"))):
        with open(f, errors="replace") as fh:
            for line in fh:
                m = LOG_RE.match(line.rstrip("\n"))
                if not m:
                    continue
                t = log_time_us(m.group(1), m.group(2))
                msg = m.group(3)
                w = re.match(r"writer (\S+) -> (\S+)$", msg)
                if w:
                    writer.append((t, w.group(1), w.group(2)))
                    continue
                h = re.match(r"(\S+) (\w+) -> (\w+)(:.*)?$", msg)
                if h and h.group(3) in HEALTH and h.group(2) in HEALTH:
                    health.setdefault(h.group(1), []).append((t, h.group(3)))
                elif h and h.group(3) in ADMIN and h.group(2) in ADMIN:
                    admin.setdefault(h.group(1), []).append((t, h.group(3)))
    writer.sort()
    return writer, health, admin


def writer_at(timeline, t):
    """mysteerd's writer at t, or None (none published). A restarted daemon
    logs "writer none -> X" without a "-> none" before it: the pinned maps
    kept steering to the writer meanwhile, so the timeline has no gap."""
    i = bisect.bisect_right(timeline, (t, "\uffff", "\uffff"))
    if i == 0:
        return None
    to = timeline[i - 1][2]
    return None if to == "none" else to


def was_writer(timeline, s, t):
    """s was the writer at t, within the log's clock resolution."""
    return s in (writer_at(timeline, t - CLOCK_SLACK_US), writer_at(timeline, t + CLOCK_SLACK_US))


def state_at(timeline, t, default):
    cur = default
    for (tt, st) in timeline:
        if tt > t:
            break
        cur = st
    return cur


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--base-port", type=int, default=3306)
    ap.add_argument("--known", default="")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    known = {k for k in a.known.split(",") if k}

    def name(server_id):
        return "db%d" % (int(server_id) - a.base_port + 1)

    ledger = []
    bad_lines = 0
    for lf in sorted(glob.glob(os.path.join(a.out, "ledger*.csv"))):
        with open(lf) as fh:
            rs = list(csv.reader(fh))
        for r in rs:
            try:
                ledger.append({"kind": r[0], "path": r[1], "mode": r[2], "wid": int(r[3]),
                               "seq": int(r[4]), "ts": int(r[5]), "td": int(r[6]),
                               "out": r[7], "code": int(r[8]), "sid": int(r[9])})
            except (IndexError, ValueError):
                bad_lines += 1
    rows = {}
    with open(os.path.join(a.out, "rows.tsv")) as fh:
        for line in fh:
            f = line.split()
            if len(f) == 5:
                rows[(int(f[0]), int(f[1]))] = (int(f[2]), int(f[3]), int(f[4]))
    # Rows of servers dumped before they rejoined (a partitioned old
    # primary): checked for writes on a non-writer too.
    extra_rows = []
    for rf in sorted(glob.glob(os.path.join(a.out, "rows-*.tsv"))):
        with open(rf) as fh:
            for line in fh:
                f = line.split()
                if len(f) == 5:
                    extra_rows.append(((int(f[0]), int(f[1])), (int(f[2]), int(f[3]), int(f[4]))))
    events = []
    with open(os.path.join(a.out, "events.csv")) as fh:
        for r in csv.reader(fh):
            events.append((int(r[0]), r[1], r[2], r[3], r[4]))
    writer_tl, health_tl, admin_tl = read_logs(a.out)

    phases = {}
    for (t, ph, fault, rep, what) in events:
        if fault == "phase":
            phases.setdefault(ph, {})[what] = t

    def phase_of(t):
        for ph, w in phases.items():
            if w.get("start", 0) - 5000000 <= t <= w.get("end", 1 << 62) + 5000000:
                return ph
        return "?"

    writes = [e for e in ledger if e["kind"] in ("w", "t")]
    reads = [e for e in ledger if e["kind"] == "r"]

    # --- invariants
    lost = [e for e in writes if e["out"] == "ok" and (e["wid"], e["seq"]) not in rows]
    phantom = [e for e in writes if e["out"] in ("err", "connfail") and (e["wid"], e["seq"]) in rows]
    sent = {(e["wid"], e["seq"]): e for e in writes}
    misplaced = []
    in_flight = []
    seen = set()
    for key, (sid, t_send, t_srv) in list(rows.items()) + extra_rows:
        if (key, sid) in seen:
            continue
        seen.add((key, sid))
        s = name(sid)
        if was_writer(writer_tl, s, t_srv):
            continue
        if was_writer(writer_tl, s, t_send):
            in_flight.append((key, s, t_srv))  # sent before the writer changed
            continue
        misplaced.append((key, s, t_srv, writer_at(writer_tl, t_srv)))
    stale_reads = []
    for e in reads:
        if e["out"] != "ok" or not e["sid"]:
            continue
        s = name(e["sid"])
        if state_at(health_tl.get(s, []), e["ts"] - CLOCK_SLACK_US, "up") == "down" and \
                state_at(health_tl.get(s, []), e["td"], "up") == "down":
            stale_reads.append(e)

    # --- figures per phase, path and fault repetition
    figs = {}
    starts = {}
    for (t, ph, fault, rep, what) in events:
        if fault == "phase":
            continue
        k = (ph, fault, rep)
        if what == "start":
            starts[k] = {"start": t}
        elif what.startswith("promoted:"):
            starts.setdefault(k, {})["promoted"] = t
            starts[k]["new"] = what.split(":", 1)[1]
        elif what == "end":
            starts.setdefault(k, {})["end"] = t
    paths = sorted({e["path"] for e in ledger})
    by_path = {}
    for e in ledger:
        by_path.setdefault((phase_of(e["ts"]), e["path"]), []).append(e)
    for (ph, fault, rep), w in sorted(starts.items()):
        if "start" not in w or "end" not in w:
            continue
        t0, t1 = w["start"], w["end"]
        for path in paths:
            es = by_path.get((ph, path), [])
            if not es:
                continue
            pw = [e for e in es if e["kind"] in ("w", "t")]
            pr = [e for e in es if e["kind"] == "r"]
            f = figs.setdefault((ph, path, fault), {"reps": 0, "unavail_ms": [], "first_ms": [],
                                                   "errors": 0, "unknown": 0, "reads_failed": 0,
                                                   "reads": 0, "writes": 0, "lost": 0,
                                                   "misplaced": 0, "stale_reads": 0})
            f["reps"] += 1
            acks = sorted(e["td"] for e in pw if e["out"] == "ok")
            if pw:
                before = [x for x in acks if x < t0]
                inside = [x for x in acks if t0 <= x <= t1]
                seq = ([before[-1]] if before else []) + inside
                if seq:
                    gaps = [b - a for a, b in zip(seq, seq[1:])]
                    # no ack after the last one up to the fault's end counts too
                    gaps.append(t1 - seq[-1])
                    f["unavail_ms"].append(max(gaps) / 1000.0)
                if "promoted" in w:
                    tp = w["promoted"]
                    firsts = [e["td"] for e in pw if e["out"] == "ok" and e["td"] >= tp and
                              (e["wid"], e["seq"]) in rows and
                              name(rows[(e["wid"], e["seq"])][0]) == w["new"]]
                    if firsts:
                        f["first_ms"].append((min(firsts) - tp) / 1000.0)
            win = [e for e in pw if t0 <= e["ts"] <= t1]
            f["writes"] += len(win)
            f["errors"] += sum(1 for e in win if e["out"] in ("err", "connfail"))
            f["unknown"] += sum(1 for e in win if e["out"] == "unknown")
            rwin = [e for e in pr if t0 <= e["ts"] <= t1]
            f["reads"] += len(rwin)
            f["reads_failed"] += sum(1 for e in rwin if e["out"] != "ok")
            f["lost"] += sum(1 for e in lost if e["path"] == path and t0 <= e["ts"] <= t1 and
                             phase_of(e["ts"]) == ph)
            f["misplaced"] += sum(1 for m in misplaced if t0 <= m[2] <= t1 and
                                  sent.get(m[0], {}).get("path") == path)
            f["stale_reads"] += sum(1 for e in stale_reads if e["path"] == path and
                                    t0 <= e["ts"] <= t1)

    inv = {"lost": len(lost), "misplaced": len(misplaced), "phantom": len(phantom),
           "ledger_lines_unreadable": bad_lines}
    res = {"invariants": inv, "writes": len(writes), "acked": sum(1 for e in writes if e["out"] == "ok"),
           "reads": len(reads), "rows": len(rows), "stale_reads": len(stale_reads),
           "in_flight_on_old_writer": len(in_flight),
           "lost_rows": [(e["path"], e["wid"], e["seq"], e["ts"]) for e in lost[:50]],
           "misplaced_rows": [(k, s, t, wr) for (k, s, t, wr) in misplaced[:50]],
           "phantom_rows": [(e["path"], e["wid"], e["seq"], e["out"], e["code"]) for e in phantom[:50]],
           "figures": [dict(phase=k[0], path=k[1], fault=k[2], **v) for k, v in sorted(figs.items())]}
    with open(os.path.join(a.out, "results.json"), "w") as fh:
        json.dump(res, fh, indent=1)

    def fmt(xs, p):
        v = pct(xs, p) if p != "max" else (max(xs) if xs else None)
        return "-" if v is None else "%.0f" % v

    print("# %d writes (%d acknowledged), %d rows on the primary, %d reads" %
          (res["writes"], res["acked"], res["rows"], res["reads"]))
    print("# %-8s %-8s %-16s %4s %13s %13s %6s %7s %6s %5s %5s" %
          ("phase", "path", "fault", "reps", "unavail p50/max", "first p50/max", "errors",
           "unknown", "rfail", "lost", "misp"))
    for k, v in sorted(figs.items()):
        print("# %-8s %-8s %-16s %4d %6s/%-6s ms %6s/%-6s ms %6d %7d %6d %5d %5d" %
              (k[0], k[1], k[2], v["reps"], fmt(v["unavail_ms"], 0.5), fmt(v["unavail_ms"], "max"),
               fmt(v["first_ms"], 0.5), fmt(v["first_ms"], "max"), v["errors"], v["unknown"],
               v["reads_failed"], v["lost"], v["misplaced"]))
    print("measured: reads answered by a server marked down: %d" % len(stale_reads))
    print("measured: writes sent to a writer and executed there after it was no longer "
          "the writer (in flight): %d" % len(in_flight))
    fail = False
    for k, n in inv.items():
        rows_of = {"lost": res["lost_rows"], "misplaced": res["misplaced_rows"],
                   "phantom": res["phantom_rows"]}.get(k, [])
        if n == 0:
            print("ok - invariant %s: 0" % k)
        elif k in known:
            print("ok - invariant %s: %d # KNOWN FAILURE %s" % (k, n, rows_of[:5]))
        else:
            print("not ok - invariant %s: %d, first: %s" % (k, n, rows_of[:5]))
            fail = True
    if a.markdown:
        write_markdown(a.markdown, res, figs)
    return 1 if fail else 0


def write_markdown(path, res, figs):
    lines = ["| phase | path | fault | reps | write unavailability p50 / max (ms) | "
             "first write on the new writer after promotion p50 / max (ms) | write errors | "
             "unknown outcome | reads failed | lost | misplaced |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, v in sorted(figs.items()):
        u = v["unavail_ms"]
        fm = v["first_ms"]
        lines.append("| %s | %s | %s | %d | %s / %s | %s | %d | %d | %d of %d | %d | %d |" % (
            k[0], k[1], k[2], v["reps"],
            "%.0f" % pct(u, 0.5) if u else "-", "%.0f" % max(u) if u else "-",
            ("%.0f / %.0f" % (pct(fm, 0.5), max(fm))) if fm else "-",
            v["errors"], v["unknown"], v["reads_failed"], v["reads"], v["lost"], v["misplaced"]))
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
