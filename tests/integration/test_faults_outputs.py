# SPDX-License-Identifier: MIT
"""The fault suite, outputs (issue 37): what pyprofd writes goes where it was
told, and nothing another user planted redirects it.

Every scenario runs the real binary (the ASan+UBSan build under `make test`)
as root against a real CPython 3.14 process, in a directory owned by another
user (nobody), where the kernel's fs.protected_symlinks does not apply, and
checks the outcome docs/usage.md and docs/agent.md ("How outputs are
written") state: a root-owned 0600 victim stays byte for byte as it was, the
output is a new regular file or the device it names, and every run ends by a
deadline (a hang fails the test).

    RecordOutputs   `record -o` with symbolic and hard links (and a FIFO)
                    planted at every name the previous version used
                    (FILE.tmp), several -o at once; links at the final name
                    (someone else's: refused; a hard link: the name is
                    replaced); -o /dev/null stays a device; -o /dev/stdout
                    writes to stdout (a pipe, a file opened for append); a
                    FIFO with and without a reader; a symbolic link as the
                    parent directory; a full disk says "No space left on
                    device"
    StorageOutputs  the agent's storage.directory: a symbolic link as the
                    directory is refused at start; symbolic links sprayed
                    at the temporary names the previous version used
                    (.tmp-JOB-PID-STAMP.pb.gz) leave the victim alone while
                    profiles are still stored; a full disk says "No space
                    left on device"

Run by ctest as test_faults_outputs_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_faults_outputs.py [-v] [Class[.test]]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import glob
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
from test_faults import FaultCase, copy_target, sanitizer_report  # noqa: E402

NOBODY = 65534
# A /dev of its own for the runs that write to /dev/null and /dev/stdout: a
# pyprofd that regressed would replace the machine's (a previous version
# renamed a regular file over both). Runs "$@", then says what the two are.
PRIVATE_DEV = """
mount -t tmpfs -o mode=755 pyprofd-test-dev /dev || exit 99
for n in null:3 zero:5 full:7 random:8 urandom:9; do mknod -m 666 /dev/${n%:*} c 1 ${n#*:}; done
ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
"$@"; rc=$?
null=$(stat -c '%F %t,%T' /dev/null); stdout=$(stat -c %F /dev/stdout)
echo "private /dev: null is $null, stdout is $stdout" >&2
exit $rc
"""
DEADLINE = 30  # seconds any one record may take (0.3 s of sampling)
VICTIM = bytes(range(256)) * 8


class OutputCase(FaultCase):
    """One sleepy target; a victim file; directories owned by nobody; mounts undone."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # in this run's scratch directory: removed when every test passed
        os.rmdir(cls.tmp)
        cls.tmp = tempfile.mkdtemp(prefix=f"{cls.__name__}.", dir=livelib.scratch())
        os.chmod(cls.tmp, 0o755)
        cls.mounts = []
        try:
            cls.target = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "sleepy", f"{cls.token}_out"), "3.14")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            for m in reversed(cls.mounts):
                subprocess.run(["umount", "-l", m], capture_output=True)

    def victim(self, name="victim"):
        """A root-owned 0600 file outside the attacker's directory."""
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(VICTIM)
        os.chmod(path, 0o600)
        return path

    def check_victim(self, path):
        st = os.stat(path)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o600))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), VICTIM, f"{path} was written through")

    def their_dir(self, name):
        """A directory another user owns (and so can plant anything in)."""
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        os.chown(d, NOBODY, NOBODY)
        return d

    def plant_symlink(self, to, at):
        os.symlink(to, at)
        os.lchown(at, NOBODY, NOBODY)

    def mount_full(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,nr_inodes=64", "tmpfs", d],
                       check=True, capture_output=True)
        self.mounts.append(d)
        with open(os.path.join(d, "ballast"), "wb") as f:
            try:
                f.write(b"\0" * 16384)
            except OSError:
                pass
        return d

    def leftovers(self, d):
        return [n for n in os.listdir(d) if n.startswith(".pyprofd-tmp-")]

    def record(self, *outputs, stdout=subprocess.PIPE, ok=True, private_dev=False):
        args = [livelib.BINARY, "record", "-d", "0.3"]
        for o in outputs:
            args += ["-o", o]
        args.append(str(self.target.pid))
        if private_dev:
            args = ["unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_DEV,
                    "sh", *args]
        try:
            p = subprocess.run(args, stdout=stdout,
                               stderr=subprocess.PIPE, timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail(f"record {outputs} did not end within {DEADLINE} s")
        err = p.stderr.decode(errors="replace")
        self.assertFalse(sanitizer_report(err), err)
        if ok is not None:
            self.assertEqual(p.returncode == 0, ok, err)
        return p, err


class RecordOutputs(OutputCase):
    """`pyprofd record -o` against planted links, devices, FIFOs and a full disk."""

    FORMATS = ("out.pb.gz", "out.txt", "out.html", "out.pstats", "out.speedscope.json",
               "out.gecko.json", "out.heatmap.html")

    def test_links_planted_at_the_old_temporary_names(self):
        """Every format at once (7 -o), a symlink, hard link or FIFO at each FILE.tmp."""
        victim = self.victim()
        d = self.their_dir("planted")
        for i, name in enumerate(self.FORMATS):
            at = os.path.join(d, name + ".tmp")
            if i % 3 == 0:
                self.plant_symlink(victim, at)
            elif i % 3 == 1:
                os.link(victim, at)  # as a system without fs.protected_hardlinks allows
            else:
                os.mkfifo(at)  # blocked the previous version's open
        self.record(*(os.path.join(d, n) for n in self.FORMATS))
        self.check_victim(victim)
        for name in self.FORMATS:
            st = os.lstat(os.path.join(d, name))
            self.assertTrue(stat.S_ISREG(st.st_mode), name)
            self.assertGreater(st.st_size, 0, name)
            self.assertEqual(st.st_nlink, 1, name)
        self.assertTrue(os.path.islink(os.path.join(d, "out.pb.gz.tmp")))
        self.assertEqual(self.leftovers(d), [])
        self.assertTrue(livelib.pprof_read(os.path.join(d, "out.pb.gz"))["samples"])

    def test_links_at_the_final_name(self):
        """Someone else's symlink: refused; a hard link: the name replaced, not the file."""
        victim = self.victim()
        d = self.their_dir("final")
        theirs, hard, mine = (os.path.join(d, n) for n in ("theirs.txt", "hard.txt", "mine.txt"))
        self.plant_symlink(victim, theirs)
        os.link(victim, hard)
        os.symlink(victim, mine)  # root's own, to a regular file: refused too (docs)
        _, err = self.record(theirs, hard, mine, ok=False)
        self.assertIn(f"cannot write '{theirs}': a symbolic link owned by uid {NOBODY} "
                      "(not yours or root's): refused", err)
        self.assertIn(f"cannot write '{mine}': a symbolic link to a regular file: refused", err)
        self.assertIn(f"wrote {hard}", err)
        self.check_victim(victim)
        self.assertEqual(os.stat(victim).st_nlink, 1)
        with open(hard, "rb") as f:
            self.assertIn(b"leaf_sleep", f.read())
        self.assertTrue(os.path.islink(theirs) and os.path.islink(mine))
        self.assertEqual(self.leftovers(d), [])

    def test_dev_null_stays_a_device(self):
        _, err = self.record("/dev/null", private_dev=True)
        self.assertIn("wrote /dev/null", err)
        self.assertIn("null is character special file 1,3", err)

    def test_dev_stdout_is_stdout(self):
        p, err = self.record("/dev/stdout", private_dev=True)
        self.assertIn(b"leaf_sleep", p.stdout)
        self.assertIn("stdout is symbolic link", err)
        # a file opened for append: written at its end, the old content kept
        path = os.path.join(self.tmp, "appended.txt")
        with open(path, "wb") as f:
            f.write(b"first line\n")
        with open(path, "ab") as f:
            self.record("/dev/stdout", stdout=f, private_dev=True)
        with open(path, "rb") as f:
            text = f.read()
        self.assertTrue(text.startswith(b"first line\n"), text[:100])
        self.assertIn(b"leaf_sleep", text)

    def test_fifo_at_the_final_name(self):
        d = self.their_dir("fifo")
        fifo = os.path.join(d, "out.txt")
        os.mkfifo(fifo)
        os.chown(fifo, NOBODY, NOBODY)
        started = time.monotonic()
        _, err = self.record(fifo, ok=False)  # nobody reads: fails at once
        self.assertIn(f"cannot write '{fifo}': a FIFO that no process reads", err)
        got = []

        def reader():
            with open(fifo, "rb") as f:  # waits for the writer
                got.append(f.read())

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        time.sleep(0.2)  # the reader waits in open()
        self.record(fifo)
        t.join(DEADLINE)
        self.assertFalse(t.is_alive(), "the reader never saw the end of the data")
        self.assertIn(b"leaf_sleep", got[0])
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertLess(time.monotonic() - started, 2 * DEADLINE)

    def test_symlinked_parent_directory(self):
        """The user's own path resolves (links included); names in it are never followed."""
        victim = self.victim()
        real = self.their_dir("real")
        link = os.path.join(self.tmp, "linked")
        os.symlink(real, link)
        self.plant_symlink(victim, os.path.join(real, "out.txt.tmp"))
        self.record(os.path.join(link, "out.txt"))
        self.check_victim(victim)
        with open(os.path.join(real, "out.txt"), "rb") as f:
            self.assertIn(b"leaf_sleep", f.read())

    def test_full_disk(self):
        d = self.mount_full("full")
        out = os.path.join(d, "out.html")
        _, err = self.record(out, ok=False)
        self.assertIn(f"cannot write '{out}': No space left on device", err)
        self.assertNotIn("Input/output error", err)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(self.leftovers(d), [])


class StorageOutputs(OutputCase):
    """The agent's storage.directory against planted links and a full disk."""

    def config(self, directory):
        return f"""\
global:
  sample_rate: 100
  mode: wall
  profile_interval: 1s
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: out
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{self.token}_out[.]py.*'
        action: keep
storage:
  directory: {directory}
server:
  listen_address: 127.0.0.1:{{port}}
"""

    def wait_metric(self, a, name, least, timeout=15):
        deadline = time.monotonic() + timeout
        while (a.metric(name) or 0) < least and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertGreaterEqual(a.metric(name) or 0, least, a.log())

    def test_symlinked_directory_is_refused(self):
        real = self.their_dir("store-real")
        link = os.path.join(self.tmp, "store-link")
        self.plant_symlink(real, link)
        a = livelib.Agent(self.tmp, "symlinked", self.config(link))
        self.agents.append(a)
        try:
            rc = a.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail(f"the agent started with a symlinked storage directory:\n{a.log()}")
        self.assertEqual(rc, 1, a.log())
        self.assertIn(f"storage: cannot use directory '{link}': a symbolic link: refused",
                      a.log())
        self.assertFalse(sanitizer_report(a.log()), a.log())
        self.assertEqual(os.listdir(real), [])

    def test_sprayed_temporary_names(self):
        """Links at every .tmp-JOB-PID-STAMP.pb.gz of the next seconds: the victim is safe."""
        victim = self.victim()
        store = self.their_dir("store")
        pid = self.target.pid
        now_ms = int(time.time() * 1000)
        for ms in range(now_ms - 1000, now_ms + 8000):
            secs, frac = divmod(ms, 1000)
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(secs)) + f".{frac:03d}Z"
            self.plant_symlink(victim, os.path.join(store, f".tmp-out-{pid}-{stamp}.pb.gz"))
        a = self.start_agent("sprayed", self.config(store))
        self.wait_metric(a, "pyprofd_storage_files_written_total", 2)
        self.check_victim(victim)
        files = glob.glob(os.path.join(store, f"out-{pid}-*.pb.gz"))
        self.assertGreaterEqual(len(files), 2, a.log())
        for path in files:
            st = os.lstat(path)
            self.assertTrue(stat.S_ISREG(st.st_mode), path)
            self.assertEqual(st.st_uid, 0, path)
            self.assertTrue(livelib.pprof_read(path)["samples"], path)
        self.assertEqual(a.metric("pyprofd_storage_write_errors_total"), 0, a.log())
        self.check_alive(a)
        self.stop_agent(a)
        self.check_victim(victim)

    def test_full_disk(self):
        d = self.mount_full("store-full")
        a = self.start_agent("full", self.config(d))
        self.wait_metric(a, "pyprofd_storage_write_errors_total", 1)
        self.assertIn(f"cannot write profile '{d}/out-{self.target.pid}-", a.log())
        self.assertIn("No space left on device", a.log())
        self.assertNotIn("Input/output error", a.log())
        self.check_alive(a)
        self.stop_agent(a)
        self.assertEqual(self.leftovers(d), [])


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs"))
