# SPDX-License-Identifier: MIT
"""Helpers of bench/agent_targets.sh and bench/slowdown.sh (host Python 3.9+, stdlib only).

Subcommands (each prints to stdout; errors go to stderr with exit status 1):

  rusage OUT LOG -- CMD...      run CMD (stdout and stderr to LOG), wait for it
                                with wait4() and write one JSON object to OUT:
                                rc, wall s, user s, sys s, maxrss KiB,
                                voluntary and involuntary context switches of
                                CMD and every descendant it waited for
  snap PID PORT OUT             snapshot of a running agent as JSON in OUT:
                                monotonic time, CPU ticks of the process, CPU
                                ticks and ns (schedstat) of each thread,
                                context switches summed over its
                                threads, VmRSS, VmHWM, and the counts of every
                                active target from http://127.0.0.1:PORT/targets
                                (PORT 0: no targets)
  agent-row BEFORE AFTER K=V... one TSV row (see COLUMNS) from two snapshots
  record-row RUSAGE LOG K=V...  one TSV row from a `pyprofd record` run
  fleet-summary TSV             medians per binary and ratio B/A, as tables
  slowdown-summary TSV          bench/slowdown.sh's windows: throughput ratio
                                to the median alone window, per condition
  cpu-pct RUSAGE                CPU of a `rusage` run, % of one core over its wall time
  cpus LIST                     a CPU list (0-1,3) expanded, one per line

K=V fill the columns that the measurement does not give (label, binary,
cycle, kind, n: targets asked for, rate: Hz asked per target, load_start,
load_end, cpus).
"""

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

COLUMNS = [
    "label", "binary", "cycle", "kind", "n", "targets", "rate", "want_per_s", "secs",
    "cpu_s", "cpu_pct", "samples", "got_per_s", "us_per_sample", "vcs", "ivcs",
    "cs_per_sample", "rss_mb", "hwm_mb", "min_t", "med_t", "max_t", "failed",
    "missed", "skipped", "busiest_thread_pct", "threads", "load_start", "load_end", "cpus",
]
TICKS = os.sysconf("SC_CLK_TCK")


def die(msg):
    print(f"benchlib: {msg}", file=sys.stderr)
    sys.exit(1)


def cmd_rusage(out, log, cmd):
    """Runs cmd; its rusage, and its memory as /proc shows it while it runs.

    ru_maxrss is no use for a program started from here: the child is a copy
    of this Python process until it execs, and the kernel keeps that peak
    (about 20 MB) across the exec. VmHWM restarts at every exec, so the last
    value polled (every 50 ms) is the program's own peak, that of the last
    image it exec'd (pyprofd record execs pyprofd-lite).
    """
    t0 = time.monotonic()
    hwm = rss = 0
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            try:
                st = status_fields(f"/proc/{proc.pid}/status", ("VmHWM", "VmRSS"))
                hwm = st.get("VmHWM", hwm)
                rss = max(rss, st.get("VmRSS", 0))
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
    t1 = time.monotonic()
    rc = os.waitstatus_to_exitcode(status)
    res = {"rc": rc, "wall": t1 - t0, "user": ru.ru_utime, "sys": ru.ru_stime,
           "maxrss_kib": ru.ru_maxrss, "hwm_kib": hwm, "rss_kib": rss,
           "vcs": ru.ru_nvcsw, "ivcs": ru.ru_nivcsw}
    with open(out, "w") as f:
        json.dump(res, f)
    return 0


def stat_ticks(path):
    with open(path) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    # fields 14 and 15 of stat (utime, stime) are rest[11] and rest[12]
    return int(rest[11]) + int(rest[12])


def schedstat_ns(path):
    """Nanoseconds the thread has run (first field of schedstat), None without schedstats."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def status_fields(path, names):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in names:
                out[k] = int(v.split()[0])
    return out


def cmd_snap(pid, port, out):
    snap = {"t": time.monotonic(), "ticks": stat_ticks(f"/proc/{pid}/stat"), "threads": {},
            "vcs": 0, "ivcs": 0}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            base = f"/proc/{pid}/task/{tid}"
            st = status_fields(f"{base}/status", ("voluntary_ctxt_switches",
                                                  "nonvoluntary_ctxt_switches"))
            with open(f"{base}/comm") as f:
                comm = f.read().strip()
            snap["threads"][tid] = {"comm": comm, "ticks": stat_ticks(f"{base}/stat"),
                                    "ns": schedstat_ns(f"{base}/schedstat")}
            snap["vcs"] += st.get("voluntary_ctxt_switches", 0)
            snap["ivcs"] += st.get("nonvoluntary_ctxt_switches", 0)
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended: its CPU time is still in the process's
    mem = status_fields(f"/proc/{pid}/status", ("VmRSS", "VmHWM"))
    snap["rss_kib"], snap["hwm_kib"] = mem.get("VmRSS", 0), mem.get("VmHWM", 0)
    snap["targets"] = {}
    if int(port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/targets", timeout=10) as r:
            doc = json.load(r)
        for t in doc["targets"]:
            if t.get("state") == "active":
                snap["targets"][str(t["pid"])] = t["counts"]
    with open(out, "w") as f:
        json.dump(snap, f)
    return 0


def kv(args):
    d = {}
    for a in args:
        k, sep, v = a.partition("=")
        if not sep:
            die(f"want K=V, got {a}")
        d[k] = v
    return d


def fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def emit(row):
    print("\t".join(fmt(row.get(c, "")) for c in COLUMNS))


def cmd_agent_row(before, after, extra):
    b, a = json.load(open(before)), json.load(open(after))
    row = dict(extra)
    secs = a["t"] - b["t"]
    # CPU: the nanoseconds of every thread there at both ends (a thread that
    # started or ended in between is missed: the agent's threads live as
    # long as it does), or the process's clock ticks without schedstats.
    both = [t for t in a["threads"] if t in b["threads"]]
    if all(a["threads"][t]["ns"] is not None and b["threads"][t]["ns"] is not None for t in both):
        per = [((a["threads"][t]["ns"] - b["threads"][t]["ns"]) / 1e9, a["threads"][t]["comm"])
               for t in both]
        cpu = sum(c for c, _ in per)
    else:
        per = [((a["threads"][t]["ticks"] - b["threads"][t]["ticks"]) / TICKS,
                a["threads"][t]["comm"]) for t in both]
        cpu = (a["ticks"] - b["ticks"]) / TICKS
    per.sort(reverse=True)
    common = [p for p in a["targets"] if p in b["targets"]]
    rates = sorted((a["targets"][p]["samples"] - b["targets"][p]["samples"]) / secs for p in common)
    samples = sum(a["targets"][p]["samples"] - b["targets"][p]["samples"] for p in common)

    def delta(k):
        return sum(a["targets"][p][k] - b["targets"][p][k] for p in common)

    cs = (a["vcs"] - b["vcs"]) + (a["ivcs"] - b["ivcs"])
    row.update({
        "want_per_s": float(extra["rate"]) * len(common), "secs": secs, "cpu_s": cpu,
        "cpu_pct": 100 * cpu / secs, "samples": samples, "got_per_s": samples / secs,
        "us_per_sample": 1e6 * cpu / samples if samples else float("nan"),
        "vcs": a["vcs"] - b["vcs"], "ivcs": a["ivcs"] - b["ivcs"],
        "cs_per_sample": cs / samples if samples else float("nan"),
        "rss_mb": a["rss_kib"] / 1024, "hwm_mb": a["hwm_kib"] / 1024,
        "min_t": rates[0] if rates else 0.0, "med_t": statistics.median(rates) if rates else 0.0,
        "max_t": rates[-1] if rates else 0.0,
        "failed": delta("failed"), "missed": delta("missed"), "skipped": delta("skipped"),
        "busiest_thread_pct": 100 * per[0][0] / secs if per else 0.0,
        "threads": ",".join(f"{100 * t / secs:.1f}" for t, _ in per),
        "targets": len(common),
    })
    emit(row)
    return 0


def cmd_record_row(rusage, log, extra):
    import re
    ru = json.load(open(rusage))
    text = open(log, errors="replace").read()
    m = re.search(r"pyprofd: (\d+) samples in ([0-9.]+) s \(([0-9.]+) Hz achieved\), (\d+) failed"
                  r" \([0-9.]+%\), (\d+) missed", text)
    if ru["rc"] != 0 or not m:
        die(f"record failed (status {ru['rc']}): {text.strip()[-400:]}")
    samples, secs = int(m.group(1)), float(m.group(2))
    cpu = ru["user"] + ru["sys"]
    row = dict(extra)
    row.update({
        "want_per_s": float(extra["rate"]), "secs": secs, "cpu_s": cpu,
        "cpu_pct": 100 * cpu / ru["wall"], "samples": samples, "got_per_s": samples / secs,
        "us_per_sample": 1e6 * cpu / samples if samples else float("nan"),
        "vcs": ru["vcs"], "ivcs": ru["ivcs"],
        "cs_per_sample": (ru["vcs"] + ru["ivcs"]) / samples if samples else float("nan"),
        "rss_mb": ru["rss_kib"] / 1024 if ru.get("rss_kib") else "",
        "hwm_mb": (ru["hwm_kib"] if ru.get("hwm_kib") else ru["maxrss_kib"]) / 1024,
        "min_t": samples / secs, "med_t": samples / secs, "max_t": samples / secs,
        "failed": int(m.group(4)), "missed": int(m.group(5)), "skipped": 0,
        "busiest_thread_pct": "", "threads": "", "targets": 1,
    })
    emit(row)
    return 0


def med(rows, col):
    vals = []
    for r in rows:
        try:
            vals.append(float(r[col]))
        except (ValueError, KeyError):
            pass
    return statistics.median(vals) if vals else None


def show(v, digits=1):
    return "-" if v is None else f"{v:,.{digits}f}"


def cmd_fleet_summary(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append(dict(zip(COLUMNS, line.rstrip("\n").split("\t"))))
    labels = sorted({r["label"] for r in rows})
    groups = []
    for r in rows:
        g = (r["kind"], r["n"], r["rate"])
        if g not in groups:
            groups.append(g)
    metrics = [("us_per_sample", "us/sample", 2), ("cpu_pct", "CPU %", 1),
               ("cs_per_sample", "cs/sample", 3), ("rss_mb", "RSS MB", 1), ("hwm_mb", "HWM MB", 1),
               ("got_per_s", "got/s", 0), ("min_t", "min/t", 1), ("med_t", "med/t", 1),
               ("max_t", "max/t", 1), ("failed", "failed", 0), ("missed", "missed", 0),
               ("busiest_thread_pct", "busiest thr %", 1)]
    print("medians per binary over its runs; B/A: the ratio of the medians")
    head = f"{'run':<30} {'bin':>3} {'runs':>4} " + " ".join(f"{h:>13}" for _, h, _ in metrics)
    print(head)
    for kind, n, rate in groups:
        sub = [r for r in rows if (r["kind"], r["n"], r["rate"]) == (kind, n, rate)]
        name = f"{kind} {n}x{rate} Hz"
        meds = {}
        for lab in labels:
            lr = [r for r in sub if r["label"] == lab]
            if not lr:
                continue
            meds[lab] = {c: med(lr, c) for c, _, _ in metrics}
            print(f"{name:<30} {lab:>3} {len(lr):>4} "
                  + " ".join(f"{show(meds[lab][c], d):>13}" for c, _, d in metrics))
        if "A" in meds and "B" in meds:
            ratio = []
            for c, _, _ in metrics:
                va, vb = meds["A"][c], meds["B"][c]
                ratio.append("-" if va in (None, 0) or vb is None else f"{vb / va:.2f}")
            print(f"{name:<30} {'B/A':>3} {'':>4} " + " ".join(f"{x:>13}" for x in ratio))
    # The decomposition: where the fleet's cost per sample goes.
    if not any(g[0] == "fleet" for g in groups) or not any(g[0] == "agent-1" for g in groups):
        return 0
    print("\ndecomposition, median us of CPU per sample (see bench/README.md):")
    print(f"{'bin':>3} {'fleet (largest)':>16} {'agent, 1 target':>16} {'record, same rate':>18}"
          f" {'record flat out':>16}")
    for lab in labels:
        def m(kind, rate=None):
            sub = [r for r in rows if r["kind"] == kind and r["label"] == lab
                   and (rate is None or r["rate"] == rate)]
            if kind == "fleet" and sub:
                big = max(int(r["n"]) for r in sub)
                sub = [r for r in sub if int(r["n"]) == big]
            return med(sub, "us_per_sample")
        print(f"{lab:>3} {show(m('fleet'), 2):>16} {show(m('agent-1'), 2):>16} "
              f"{show(m('record'), 2):>18} {show(m('record-max'), 2):>16}")
    return 0


def cmd_slowdown_summary(path):
    rows = []
    with open(path) as f:
        head = f.readline().lstrip("#").rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                rows.append(dict(zip(head, line.rstrip("\n").split("\t"))))
    alone = [float(r["calls_per_s"]) for r in rows if r["condition"] == "alone"]
    if not alone:
        die("no alone window")
    base = statistics.median(alone)
    # Calls per second of the target's own CPU time: what remains of the
    # slowdown once preemption and waiting for a CPU are taken out (cache and
    # TLB pollution, the sampler's reads).
    for r in rows:
        cpu = float(r["target_cpu_pct"]) / 100
        r["calls_per_cpu_s"] = float(r["calls_per_s"]) / cpu if cpu > 0 else float("nan")
    base_cpu = statistics.median(r["calls_per_cpu_s"] for r in rows if r["condition"] == "alone")
    # Paired: each window against the alone window just before it (same
    # cycle and rate), which follows a machine whose speed drifts.
    last_alone = None
    for r in rows:
        if r["condition"] == "alone":
            last_alone = float(r["calls_per_s"])
        r["paired"] = float(r["calls_per_s"]) / last_alone if last_alone else float("nan")
    print(f"throughput alone: median {base:,.0f} calls/s over {len(alone)} windows "
          f"(min {min(alone) / base:.3f}, max {max(alone) / base:.3f} of the median)")
    print(f"{'condition':<10} {'rate Hz':>8} {'windows':>7} {'ratio med':>9} {'min':>6} {'max':>6} "
          f"{'target CPU%':>11} {'invol cs/s':>10} {'vol cs/s':>9} {'sampler CPU%':>12} "
          f"{'achieved Hz':>11} {'per CPU s ratio':>15} {'paired ratio':>12}")
    keys = []
    for r in rows:
        k = (r["condition"], r["rate"])
        if k not in keys:
            keys.append(k)
    keys.sort(key=lambda k: (k[1] != "-", int(k[1]) if k[1] != "-" else 0, k[0]))
    for cond, rate in keys:
        sub = [r for r in rows if (r["condition"], r["rate"]) == (cond, rate)]
        ratios = [float(r["calls_per_s"]) / base for r in sub]
        print(f"{cond:<10} {rate:>8} {len(sub):>7} {statistics.median(ratios):>9.3f} "
              f"{min(ratios):>6.3f} {max(ratios):>6.3f} {show(med(sub, 'target_cpu_pct')):>11} "
              f"{show(med(sub, 'target_ivcs_per_s'), 0):>10} {show(med(sub, 'target_vcs_per_s'), 0):>9} "
              f"{show(med(sub, 'sampler_cpu_pct')):>12} {show(med(sub, 'sampler_hz'), 0):>11} "
              f"{statistics.median(r['calls_per_cpu_s'] for r in sub) / base_cpu:>15.3f} "
              f"{statistics.median(r['paired'] for r in sub):>12.3f}")
    return 0


def cmd_cpus(spec):
    out = set()
    for part in spec.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            die(f"bad CPU list {spec}")
        out.update(range(int(lo), int(hi if sep else lo) + 1))
    for c in sorted(out):
        print(c)
    return 0


def main(argv):
    if len(argv) < 2:
        die("no subcommand (see the docstring)")
    sub, args = argv[1], argv[2:]
    if sub == "rusage" and len(args) >= 4 and args[2] == "--":
        return cmd_rusage(args[0], args[1], args[3:])
    if sub == "snap" and len(args) == 3:
        return cmd_snap(*args)
    if sub == "agent-row" and len(args) >= 2:
        return cmd_agent_row(args[0], args[1], kv(args[2:]))
    if sub == "record-row" and len(args) >= 2:
        return cmd_record_row(args[0], args[1], kv(args[2:]))
    if sub == "fleet-summary" and len(args) == 1:
        return cmd_fleet_summary(args[0])
    if sub == "slowdown-summary" and len(args) == 1:
        return cmd_slowdown_summary(args[0])
    if sub == "cpu-pct" and len(args) == 1:
        ru = json.load(open(args[0]))
        print(f"{100 * (ru['user'] + ru['sys']) / ru['wall']:.2f}")
        return 0
    if sub == "cpus" and len(args) == 1:
        return cmd_cpus(args[0])
    die(f"bad arguments for {sub}: {' '.join(args)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
