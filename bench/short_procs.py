# SPDX-License-Identifier: MIT
"""Short processes: what noticing every new process costs the agent, and what it sees.

The optimised agent (build-release/pyprofd; built if missing) runs with the
shipped discovery defaults under each watch (issue 38, items 3 and 4):

    netlink   discovery.watch: netlink (the proc connector: exec and fork events)
    poll      discovery.watch: poll (the last PID of /proc/loadavg every 20 ms)
    off       discovery.watch: off, refresh_interval: 1s, min_process_age: 0s
              (before the watch: the fastest full scans one could configure)

and, for each, under these loads (each for --seconds, one after the other,
the agent running throughout):

    idle      no new process
    true      --rate /bin/true a second (nothing to sample: discovery alone)
    dropped   --rate python3.11 a second, each living 0.3 s, mostly asleep
              (1 ms of work every 20 ms), kept by no job: discovery of Python
              processes (their runtime found, relabeled, dropped), no sampling
    python    --rate python3.11 a second, lives alternating 0.3 s and 1 s,
              mostly asleep as above, kept by two wall-mode jobs at the default
              100 Hz (bench300, bench1000) with storage: discovery, attach and
              sampling; and what was seen: the share of each life that became
              a target (its job's count in the start delay histogram; a stored
              profile of any samples when the histogram has no job label), that
              has a stored profile with samples in short_sleep_work, and the
              start delays (pyprofd_target_start_delay_seconds: from the
              process's start to its first sample attempt)

The agent's CPU is utime + stime of /proc/PID/stat over the load's span (from
the first process started to the last; clock ticks, so 1/(100 x --seconds)
of a core is the resolution) as a % of one core, and also the sum of its
threads' schedstat run time (ns). The watches' counters (events, looks,
missed, exited before their look) are the difference of two scrapes.

Modes are interleaved within each cycle (netlink, poll, off, netlink, ...;
a fresh agent per mode and cycle); the table reports medians over --cycles.
Root (the agent reads other processes; netlink needs the initial
namespaces). About 11 minutes with the defaults.

    /usr/bin/python3 bench/short_procs.py [--binary PATH] [--seconds 15] [--cycles 3]
        [--rate 20] [--modes netlink,poll,off] [--loads idle,true,dropped,python] [--out DIR]

Prints one line per run as it goes and a Markdown table at the end (for
docs/performance.md); rows also as TSV in DIR/short_procs.tsv.
"""

import argparse
import glob
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import livelib  # noqa: E402

PYTHON = "/usr/bin/python3.11"
TICKS = os.sysconf("SC_CLK_TCK")
DELAY = "pyprofd_target_start_delay_seconds"

SCRIPT = '''\
import os
import sys
import time


def started():
    """When this process started (CLOCK_BOOTTIME seconds, the kernel's 10 ms start time)."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return ticks / os.sysconf("SC_CLK_TCK")


def short_sleep_work(end):
    """The recognisable work: 1 ms of Python every 20 ms until @end."""
    clock = time.CLOCK_BOOTTIME
    n = 0
    while time.clock_gettime(clock) < end:
        busy = time.clock_gettime(clock) + 0.001
        while time.clock_gettime(clock) < busy:
            n += 1
        time.sleep(0.019)
    return n


short_sleep_work(started() + float(sys.argv[1]))
'''

MODES = {
    "netlink": "discovery:\n  watch: netlink\n",
    "poll": "discovery:\n  watch: poll\n",
    "off": "discovery:\n  watch: 'off'\n  refresh_interval: 1s\n  min_process_age: 0s\n",
}
LIVES = (0.3, 1.0)


def job_of(life):
    return f"bench{int(round(life * 1000))}"


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime, stime: fields 14 and 15


def sched_ns(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


class Launcher:
    """Starts @cmd_of(i) at @rate a second for @seconds, reaping them as they exit."""

    def __init__(self, rate, seconds, cmd_of):
        self.rate, self.seconds, self.cmd_of = rate, seconds, cmd_of
        self.procs = []  # (Popen, life)
        self.failed = 0

    def run(self):
        n = int(round(self.rate * self.seconds))
        t0 = time.monotonic()
        running = []
        for i in range(n):
            # reaped within 10 ms, as a shell or a supervisor would: no zombies
            # for the agent to look at instead of exited processes
            while True:
                running = [p for p in running if p.poll() is None]
                wait = t0 + i / self.rate - time.monotonic()
                if wait <= 0:
                    break
                time.sleep(min(wait, 0.01))
            cmd, life = self.cmd_of(i)
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=livelib.TARGET_ENV)
            self.procs.append((p, life))
            running.append(p)
        return time.monotonic() - t0

    def wait(self):
        for p, _ in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            self.failed += p.returncode != 0


def busy_samples(files):
    total = busy = 0
    for path in files:
        prof = livelib.pprof_read(path)
        names = {lid: {prof["functions"][fid][0] for fid, _ in lines}
                 for lid, lines in prof["locations"].items()}
        for values, locs, _ in prof["samples"]:
            total += values[0]
            if any("short_sleep_work" in names.get(lid, ()) for lid in locs):
                busy += values[0]
    return total, busy


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = args.out or tempfile.mkdtemp(prefix="pyprofd-short-procs.")
        os.makedirs(self.tmp, exist_ok=True)
        self.token = f"spb{os.getpid()}"
        self.scripts = {}
        for name in ("drop", "k300", "k1000"):
            path = os.path.join(self.tmp, f"{self.token}_{name}.py")
            with open(path, "w") as f:
                f.write(SCRIPT)
            self.scripts[name] = path
        self.rows = []
        self.tsv = open(os.path.join(self.tmp, "short_procs.tsv"), "w")
        self.tsv.write("cycle\tmode\tload\tstarted\tsecs\tcpu_pct\tsched_pct\tevents\tlooks\t"
                       "missed\texited_before_look\ttarget_300\ttarget_1000\tsampled_300\t"
                       "sampled_1000\tle50\tle100\tle250\tmean_delay_ms\tload_avg\n")

    def agent(self, mode, store):
        jobs = "".join(f"""\
  - job_name: {job_of(life)}
    mode: wall
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{self.token}_k{int(round(life * 1000))}[.]py.*'
        action: keep
""" for life in LIVES)
        config = f"""\
{MODES[mode]}profile_configs:
{jobs}storage:
  directory: {store}
server:
  listen_address: 127.0.0.1:{{port}}
"""
        return livelib.Agent(self.tmp, f"agent-{mode}", config).wait_http()

    def cmd_of(self, load):
        if load == "true":
            return lambda i: (["/bin/true"], None)
        if load == "dropped":
            return lambda i: ([PYTHON, self.scripts["drop"], "0.3"], None)

        def python(i):
            life = LIVES[i % len(LIVES)]
            return [PYTHON, self.scripts[f"k{int(round(life * 1000))}"], str(life)], life
        return python

    def measure(self, cycle, mode, agent, store, load):
        a = self.args
        before = agent.metrics()
        ticks0, ns0, t0 = cpu_ticks(agent.proc.pid), sched_ns(agent.proc.pid), time.monotonic()
        launcher = None
        if load == "idle":
            time.sleep(a.seconds)
        else:
            launcher = Launcher(a.rate, a.seconds, self.cmd_of(load))
            launcher.run()
        ticks1, ns1, t1 = cpu_ticks(agent.proc.pid), sched_ns(agent.proc.pid), time.monotonic()
        if launcher:
            launcher.wait()
        time.sleep(1.5)  # the last ones' windows flushed
        after = agent.metrics()
        secs = t1 - t0
        row = {"cycle": cycle, "mode": mode, "load": load,
               "started": len(launcher.procs) if launcher else 0, "secs": secs,
               "cpu_pct": 100.0 * (ticks1 - ticks0) / TICKS / secs,
               "sched_pct": 100.0 * (ns1 - ns0) / 1e9 / secs,
               "failed": launcher.failed if launcher else 0,
               "load_avg": os.getloadavg()[0]}

        def delta(name):
            return (agent.metric(name, after) or 0.0) - (agent.metric(name, before) or 0.0)

        row["events"] = sum(delta(f'pyprofd_discovery_watch_events_total{{event="{e}"}}')
                            for e in ("exec", "fork", "new_pid"))
        row["looks"] = delta("pyprofd_discovery_watch_looks_total")
        row["missed"] = delta("pyprofd_discovery_watch_missed_total")
        row["exited_before_look"] = delta("pyprofd_discovery_exited_before_look_total")
        if load == "python":
            delays = livelib.start_delays(after, before, [job_of(life) for life in LIVES])
            both = livelib.histogram_merge(delays.values())
            for life in LIVES:
                pids = [p.pid for p, lf in launcher.procs if lf == life]
                ms = int(round(life * 1000))
                # targets per life: the job's histogram, or (no job label) the stored
                # profiles of any kind of sample
                h = delays.get(job_of(life))
                seen = targets = 0
                for pid in pids:
                    files = glob.glob(os.path.join(store, f"{job_of(life)}-{pid}-*.pb.gz"))
                    total, busy = busy_samples(files)
                    seen += busy > 0
                    targets += bool(files)
                row[f"target_{ms}"] = (h["count"] if h else targets) / len(pids)
                row[f"sampled_{ms}"] = seen / len(pids)
            for le in (0.05, 0.1, 0.25):
                row[f"le{int(le * 1000)}"] = livelib.histogram_share(both, le)
            row["mean_delay_ms"] = 1000 * both["sum"] / both["count"] if both["count"] else 0.0
        self.rows.append(row)
        cols = ["cycle", "mode", "load", "started", "secs", "cpu_pct", "sched_pct", "events",
                "looks", "missed", "exited_before_look", "target_300", "target_1000",
                "sampled_300", "sampled_1000", "le50", "le100", "le250", "mean_delay_ms",
                "load_avg"]
        self.tsv.write("\t".join(f"{row[c]:.4g}" if isinstance(row.get(c), float)
                                 else str(row.get(c, "")) for c in cols) + "\n")
        self.tsv.flush()
        extra = ""
        if load == "python":
            extra = (f"; targets 0.3 s {row['target_300']:.2f} 1 s {row['target_1000']:.2f}, "
                     f"with samples 0.3 s {row['sampled_300']:.2f} 1 s {row['sampled_1000']:.2f}"
                     f", first attempt <= 100 ms {row['le100']:.2f}, mean "
                     f"{row['mean_delay_ms']:.0f} ms")
        print(f"cycle {cycle} {mode:<7} {load:<7}: {row['started']} started, agent "
              f"{row['cpu_pct']:.2f} % (schedstat {row['sched_pct']:.2f} %), events "
              f"{row['events']:.0f}, looks {row['looks']:.0f}, missed {row['missed']:.0f}, "
              f"exited before look {row['exited_before_look']:.0f}{extra}; load "
              f"{row['load_avg']:.1f}", flush=True)

    def run(self):
        a = self.args
        print(f"{livelib.BINARY}; {a.cycles} cycles of {', '.join(a.modes)} x "
              f"{', '.join(a.loads)}, {a.seconds:g} s each, {a.rate:g} processes/s; "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; output in {self.tmp}",
              flush=True)
        for cycle in range(1, a.cycles + 1):
            for mode in a.modes:
                store = os.path.join(self.tmp, f"store-{mode}-{cycle}")
                os.makedirs(store, exist_ok=True)
                agent = self.agent(mode, store)
                try:
                    time.sleep(2)  # past its first scan
                    for load in a.loads:
                        self.measure(cycle, mode, agent, store, load)
                finally:
                    rc = agent.stop()
                    if rc != 0:
                        print(f"warning: the agent ({mode}) exited {rc}:\n"
                              f"{agent.log()[-2000:]}", file=sys.stderr)
                shutil.rmtree(store, ignore_errors=True)
        self.tsv.close()
        self.table()

    def table(self):
        a = self.args

        def med(mode, load, key):
            vals = [r[key] for r in self.rows if r["mode"] == mode and r["load"] == load
                    and key in r]
            return statistics.median(vals) if vals else float("nan")

        print()
        print(f"Medians of {a.cycles} interleaved runs of {a.seconds:g} s; {a.rate:g} processes "
              f"a second; {os.cpu_count()} CPUs. Agent CPU in % of one core (utime + stime; "
              f"schedstat in brackets); per process: the agent's CPU above idle per process "
              f"started.")
        print()
        print("| watch | load | agent CPU % | per process (µs) | events | looks | missed | "
              "exited before look |")
        print("|---|---|---|---|---|---|---|---|")
        for mode in a.modes:
            idle = med(mode, "idle", "sched_pct")
            for load in a.loads:
                started = med(mode, load, "started")
                per = ((med(mode, load, "sched_pct") - idle) / 100 * med(mode, load, "secs")
                       / started * 1e6) if load != "idle" and started else float("nan")
                print(f"| {mode} | {load} | {med(mode, load, 'cpu_pct'):.2f} "
                      f"({med(mode, load, 'sched_pct'):.2f}) | "
                      f"{'' if per != per else f'{per:.0f}'} | {med(mode, load, 'events'):.0f} | "
                      f"{med(mode, load, 'looks'):.0f} | {med(mode, load, 'missed'):.0f} | "
                      f"{med(mode, load, 'exited_before_look'):.0f} |")
        if "python" in a.loads:
            print()
            print("| watch | 0.3 s: targets | 0.3 s: with samples | 1 s: targets | "
                  "1 s: with samples | first attempt <= 50 ms | <= 100 ms | <= 250 ms | "
                  "mean delay (ms) |")
            print("|---|---|---|---|---|---|---|---|---|")
            for mode in a.modes:
                print(f"| {mode} | {med(mode, 'python', 'target_300'):.2f} | "
                      f"{med(mode, 'python', 'sampled_300'):.2f} | "
                      f"{med(mode, 'python', 'target_1000'):.2f} | "
                      f"{med(mode, 'python', 'sampled_1000'):.2f} | "
                      f"{med(mode, 'python', 'le50'):.2f} | {med(mode, 'python', 'le100'):.2f} | "
                      f"{med(mode, 'python', 'le250'):.2f} | "
                      f"{med(mode, 'python', 'mean_delay_ms'):.0f} |")
        loads = [r["load_avg"] for r in self.rows]
        print()
        print(f"load average during the runs: {min(loads):.1f}-{max(loads):.1f}; "
              f"rows in {os.path.join(self.tmp, 'short_procs.tsv')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(livelib.SOURCE_DIR, "build-release",
                                                      "pyprofd"))
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--modes", default="netlink,poll,off")
    ap.add_argument("--loads", default="idle,true,dropped,python")
    ap.add_argument("--out")
    args = ap.parse_args()
    args.modes = args.modes.split(",")
    args.loads = args.loads.split(",")
    for m in args.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m}: one of {', '.join(MODES)}")
    for load in args.loads:
        if load not in ("idle", "true", "dropped", "python"):
            ap.error(f"unknown load {load}")
    if os.geteuid() != 0:
        sys.exit("short_procs: must run as root")
    if not os.access(PYTHON, os.X_OK):
        sys.exit(f"short_procs: no {PYTHON}")
    livelib.BINARY = os.path.abspath(args.binary)
    if not os.access(livelib.BINARY, os.X_OK):
        if args.binary != ap.get_default("binary"):
            sys.exit(f"short_procs: no {livelib.BINARY}")
        print("building build-release/pyprofd", file=sys.stderr)
        subprocess.run(["cmake", "--preset", "release"], cwd=livelib.SOURCE_DIR, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", "--preset", "release", "-j2", "--target", "pyprofd"],
                       cwd=livelib.SOURCE_DIR, check=True, stdout=subprocess.DEVNULL)
    # SIGTERM (Ctrl-C too) unwinds: the running agent is stopped on the way out
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"short_procs: signal {signum}"))
    bench = Bench(args)
    try:
        bench.run()
    finally:
        livelib.stop_all()
        if not args.out:
            print(f"(kept {bench.tmp})", file=sys.stderr)


if __name__ == "__main__":
    main()
