/* SPDX-License-Identifier: MIT */
/*
 * Live test of native stacks (agent/perf/perfsample.c, agent/unwind/native.c): a real
 * CPython (3.13, 3.14, 3.15 from the test rootfs; chroot'ed, so its
 * libraries are the rootfs's, not the host's) runs tests/targets/native_work.py,
 * whose main thread spends its time in OpenSSL's SHA-256 and zlib's deflate
 * under two Python functions. The kernel's samples of that thread, unwound
 * with the binaries' CFI, must show those libraries' exported functions with
 * the interpreter below them down to Py_RunMain (Debian's binaries are
 * stripped: the evaluation loop itself is an address), in most samples. Skipped,
 * saying why, where perf_event_open is refused.
 */
#include "base/compat.h"

#include <unistd.h>

#include "cmocka_wrap.h"

#include "test_util.h"
#include "unwind/native.h"

static pid_t start(const char *python)
{
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof(cmd), "%s/scripts/run-target.sh start --python %s native_work 2>&1",
             PYPROFD_SOURCE_DIR, python);
    if (test_run(cmd, out, sizeof(out)) != 0)
        fail_msg("cannot start target: %s", out);
    pid_t pid = (pid_t)strtol(out, NULL, 10); /* NOLINT(cert-err34-c): checked by the open */
    test_track_target(pid);
    return pid;
}

static void stop(pid_t pid)
{
    char cmd[512], out[512];
    snprintf(cmd, sizeof(cmd), "%s/scripts/run-target.sh stop %d", PYPROFD_SOURCE_DIR, (int)pid);
    (void)test_run(cmd, out, sizeof(out));
    test_untrack_target(pid);
}

static bool has(const struct native_frame *f, int n, const char *needle)
{
    for (int i = 0; i < n; i++) {
        if (f[i].function && strstr(f[i].function, needle))
            return true;
    }
    return false;
}

static void check(const char *python)
{
    char why[256];
    if (perfsample_probe(why, sizeof(why))) {
        print_message("skipped: %s\n", why);
        skip();
    }
    pid_t pid = start(python);
    struct native *n;
    if (native_new("/proc", pid, &n, why, sizeof(why)))
        fail_msg("native_new: %s", why);
    struct perfsample *p;
    if (perfsample_open(pid, pid, 2000000 /* 2 ms of its CPU */, 16384, 7, &p, why, sizeof(why)))
        fail_msg("perfsample_open: %s", why);
    static struct native_frame frames[NATIVE_MAX_FRAMES];
    unsigned samples = 0, unwound = 0, sha = 0, deflate = 0, eval = 0, below = 0, unknown = 0;
    for (int waited = 0; samples < 300 && waited < 1000; waited++) {
        usleep(10000);
        struct perfsample_record s;
        int rc;
        while ((rc = perfsample_next(p, &s)) == 1) {
            samples++;
            int k = native_unwind(n, &s, frames, NATIVE_MAX_FRAMES);
            if (k == -ENOENT) {
                unknown++;
                assert_int_equal(native_refresh(n), 0);
                continue;
            }
            assert_true(k >= 0);
            unwound += k > 1;
            bool in_sha = has(frames, k, "SHA256") || has(frames, k, "sha256");
            bool in_deflate = has(frames, k, "deflate");
            /* Debian's interpreters are stripped: the evaluation loop is an
             * address, but the exported functions below it are named */
            bool in_eval = has(frames, k, "Py_RunMain") || has(frames, k, "Py_BytesMain");
            if (getenv("NATIVE_DEBUG") && samples % 100 == 1) {
                for (int i = 0; i < k; i++)
                    print_message("  #%d %#" PRIx64 " %s+%#" PRIx64 " (%s+%#" PRIx64 ")\n", i,
                                  frames[i].pc, frames[i].function ? frames[i].function : "?",
                                  frames[i].offset, frames[i].file ? frames[i].file : "?",
                                  frames[i].file_offset);
            }
            sha += in_sha;
            deflate += in_deflate;
            eval += in_eval;
            below += (in_sha || in_deflate) && in_eval;
        }
        assert_int_equal(rc, 0);
    }
    print_message("python%s: %u samples, %u unwound past the leaf, %u in SHA-256, %u in deflate, "
                  "%u down to Py_RunMain, %u of the library ones so, %u unknown IP\n",
                  python, samples, unwound, sha, deflate, eval, below, unknown);
    perfsample_free(p);
    native_free(n);
    stop(pid);
    assert_true(samples >= 50);
    /* the libraries' time: most of the samples, each library a good share */
    assert_true((sha + deflate) * 2 >= samples);
    assert_true(sha * 10 >= samples && deflate * 20 >= samples); /* deflate: ~13 % */
    /* and the whole stack in most of them: unwound through the libraries and
     * the interpreter down to Py_RunMain */
    assert_true(below * 10 >= (sha + deflate) * 8);
}

static void test_native__python_3_13(void **state)
{
    (void)state;
    check("3.13");
}

static void test_native__python_3_14(void **state)
{
    (void)state;
    check("3.14");
}

static void test_native__python_3_15(void **state)
{
    (void)state;
    check("3.15");
}

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "test_native_live: needs root\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_native__python_3_13, test_kill_targets),
        cmocka_unit_test_teardown(test_native__python_3_14, test_kill_targets),
        cmocka_unit_test_teardown(test_native__python_3_15, test_kill_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
