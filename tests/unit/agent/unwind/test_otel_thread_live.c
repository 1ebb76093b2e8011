/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/otel_thread.c against the real dynamic linker: a
 * child process loads a publisher of the thread context (tests/support/
 * otel_tls.c) built with one TLS access model (TLSDESC, legacy general
 * dynamic, initial exec), points the variable of its threads at records,
 * then finds the variable in itself the way the agent finds it in a target
 * (its maps, the library's ELF, the GOT words the dynamic linker filled) and
 * samples its own threads. Each model runs in a child of its own, so the
 * one library it loads is the only one that defines the variable.
 */
#include "base/compat.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "test_util.h"
#include "unwind/otel_thread.h"

#define LIVE_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                             \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

static void **(*live_slot)(void);

struct live_thread {
    pthread_t self;
    uint64_t tid;
    bool publish; /* sets its context (and so has its TLS block) */
    uint8_t rec[OTEL_THREAD_RECORD_SIZE];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ready, stop;
};

static void live_record(uint8_t *r, uint8_t seed)
{
    for (unsigned i = 0; i < 24; i++)
        r[i] = (uint8_t)(seed + i);
    r[24] = 1;
    r[25] = 1;
    r[26] = r[27] = 0;
}

static void *live_thread_main(void *arg)
{
    struct live_thread *t = arg;
    t->tid = (uint64_t)syscall(SYS_gettid);
    if (t->publish)
        *live_slot() = t->rec;
    pthread_mutex_lock(&t->mu);
    t->ready = true;
    pthread_cond_broadcast(&t->cv);
    while (!t->stop)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void live_start(struct live_thread *t, bool publish, uint8_t seed)
{
    live_record(t->rec, seed);
    t->publish = publish;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    LIVE_CHECK(pthread_create(&t->self, NULL, live_thread_main, t) == 0);
    pthread_mutex_lock(&t->mu);
    while (!t->ready)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

static void live_stop(struct live_thread *t)
{
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->self, NULL);
}

static bool live_ids(const struct sample_span *s, const uint8_t *rec)
{
    return s->set && memcmp(s->trace_id, rec, 16) == 0 && memcmp(s->span_id, rec + 16, 8) == 0;
}

/* The child: loads @lib, publishes, finds and samples itself. Exits 0, or 1
 * with the failed check on stderr (2: the variable was not found). */
static PYPROFD_NORETURN void live_child(const char *lib, const enum otel_thread_model *models,
                                        size_t nmodels)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        _exit(1);
    }
    *(void **)&live_slot = dlsym(h, "otel_tls_slot");
    LIVE_CHECK(live_slot != NULL);
    static uint8_t rec_main[OTEL_THREAD_RECORD_SIZE];
    live_record(rec_main, 0x11);
    *live_slot() = rec_main;
    static struct live_thread b, c;
    live_start(&b, true, 0x22);
    live_start(&c, false, 0x33); /* never touches the variable */

    struct memread *mr = NULL;
    LIVE_CHECK(memread_open(getpid(), MEMREAD_AUTO, &mr) == 0);
    static struct otel_thread_memo memo;
    struct otel_thread_locator loc;
    char why[512] = "";
    int err = otel_thread_find("/proc", getpid(), mr, &memo, &loc, why, sizeof(why));
    if (err) {
        fprintf(stderr, "otel_thread_find: %s (%s)\n", strerror(-err), why);
        _exit(2);
    }
    bool known = false;
    for (size_t i = 0; i < nmodels; i++)
        known |= loc.model == models[i];
    if (!known) {
        fprintf(stderr, "model %s\n", otel_thread_model_name(loc.model));
        _exit(1);
    }
    LIVE_CHECK(strstr(loc.file, "libotel-tls-") != NULL);

    struct unwind_thread th[3] = {
        {.status = SAMPLE_OK,
         .thread_id = (uint64_t)pthread_self(),
         .native_thread_id = (uint64_t)getpid()},
        {.status = SAMPLE_OK, .thread_id = (uint64_t)b.self, .native_thread_id = b.tid},
        {.status = SAMPLE_OK, .thread_id = (uint64_t)c.self, .native_thread_id = c.tid},
    };
    struct unwind_result r = {.nthreads = 3, .threads = th};
    struct otel_thread *t = NULL;
    LIVE_CHECK(otel_thread_new(mr, &loc, &t) == 0);
    const struct sample_span *s = otel_thread_sample(t, &r);
    LIVE_CHECK(live_ids(&s[0], rec_main));
    LIVE_CHECK(live_ids(&s[1], b.rec));
    LIVE_CHECK(!s[2].set);
    struct otel_thread_stats st = otel_thread_stats(t);
    fprintf(stderr, "%s: %s, the thread without a context: %s\n", strrchr(lib, '/') + 1,
            otel_thread_model_name(loc.model), st.unallocated ? "no TLS block" : "NULL");
    LIVE_CHECK(st.threads == 3 && st.spans == 2 && st.faults == 0 && st.torn == 0);
    /* a thread that never set its context: no block of its own (dynamic TLS),
     * or a NULL pointer in it */
    if (loc.model == OTEL_TLS_GD || loc.model == OTEL_TLS_DESC_DYNAMIC)
        LIVE_CHECK(st.unallocated == 1 || st.none == 1);
    else
        LIVE_CHECK(st.none == 1 && st.unallocated == 0);

    /* the main thread leaves its span, then its record is being rewritten */
    *live_slot() = NULL;
    s = otel_thread_sample(t, &r);
    LIVE_CHECK(!s[0].set && live_ids(&s[1], b.rec));
    rec_main[24] = 0;
    *live_slot() = rec_main;
    s = otel_thread_sample(t, &r);
    LIVE_CHECK(!s[0].set && live_ids(&s[1], b.rec));
    LIVE_CHECK(otel_thread_stats(t).torn == 1);
    rec_main[24] = 1;
    s = otel_thread_sample(t, &r);
    LIVE_CHECK(live_ids(&s[0], rec_main));

    otel_thread_free(t);
    memread_free(mr);
    live_stop(&b);
    live_stop(&c);
    _exit(0);
}

static void live_run(const char *name, const enum otel_thread_model *models, size_t nmodels)
{
#if !defined(__x86_64__)
    (void)name, (void)models, (void)nmodels;
    skip();
#else
    char lib[4096];
    test_fake_path(name, lib, sizeof(lib));
    if (access(lib, R_OK) != 0 && strstr(name, "tlsdesc")) {
        fprintf(stderr, "'%s' was not built: the compiler has no -mtls-dialect=gnu2\n", name);
        skip();
    }
    if (access(lib, R_OK) != 0)
        fail_msg("'%s' was not built (target otel_tls_*)", lib);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        live_child(lib, models, nmodels);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("%s: the child failed (status 0x%x)", name, status);
#endif
}

static void test_otel_thread_live__tlsdesc(void **state)
{
    (void)state;
    static const enum otel_thread_model m[] = {OTEL_TLS_DESC_STATIC, OTEL_TLS_DESC_DYNAMIC};
    live_run("libotel-tls-tlsdesc.so", m, PYPROFD_ARRAY_SIZE(m));
}

static void test_otel_thread_live__general_dynamic(void **state)
{
    (void)state;
    static const enum otel_thread_model m[] = {OTEL_TLS_GD};
    live_run("libotel-tls-gd.so", m, PYPROFD_ARRAY_SIZE(m));
}

static void test_otel_thread_live__initial_exec(void **state)
{
    (void)state;
    static const enum otel_thread_model m[] = {OTEL_TLS_IE};
    live_run("libotel-tls-ie.so", m, PYPROFD_ARRAY_SIZE(m));
}

/*
 * A program publishing in its main thread and a second one
 * (tests/support/otel_tls.c as a program: @prog, with the module @module when
 * it loads one), read from outside as the agent reads a target: the model
 * found is @model, and both threads are in their spans.
 */
static void spawn_and_sample(const char *prog, const char *module, enum otel_thread_model model)
{
    char path[4096], mod[4096], line[256];
    char *argv[] = {(char *)test_fake_path(prog, path, sizeof(path)),
                    module ? (char *)test_fake_path(module, mod, sizeof(mod)) : NULL, NULL};
    pid_t pid = test_spawn(argv, line, sizeof(line));
    assert_true(pid > 0);
    test_track_target(pid);
    unsigned long tp_main = 0, tp_b = 0;
    long tid_b = 0;
    assert_int_equal(sscanf(line, "ready 0x%lx 0x%lx %ld", &tp_main, &tp_b, &tid_b), 3);
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    static struct otel_thread_memo memo;
    memset(&memo, 0, sizeof(memo));
    struct otel_thread_locator loc;
    char why[512] = "";
    int err = otel_thread_find("/proc", pid, mr, &memo, &loc, why, sizeof(why));
    if (err)
        fail_msg("otel_thread_find: %s (%s)", strerror(-err), why);
    if (loc.model != model)
        fail_msg("%s: model %s, expected %s", module ? module : prog,
                 otel_thread_model_name(loc.model), otel_thread_model_name(model));
    assert_non_null(strstr(loc.file, module ? module : prog));
    struct unwind_thread th[2] = {
        {.status = SAMPLE_OK, .thread_id = tp_main, .native_thread_id = (uint64_t)pid},
        {.status = SAMPLE_OK, .thread_id = tp_b, .native_thread_id = (uint64_t)tid_b},
    };
    struct unwind_result r = {.nthreads = 2, .threads = th};
    struct otel_thread *t = NULL;
    assert_int_equal(otel_thread_new(mr, &loc, &t), 0);
    uint8_t want[2][OTEL_THREAD_RECORD_SIZE];
    live_record(want[0], 0x11);
    live_record(want[1], 0x22);
    for (int pass = 0; pass < 2; pass++) { /* the second from the places kept */
        const struct sample_span *s = otel_thread_sample(t, &r);
        assert_true(live_ids(&s[0], want[0]));
        assert_true(live_ids(&s[1], want[1]));
    }
    assert_int_equal(otel_thread_stats(t).spans, 4);
    assert_int_equal(otel_thread_stats(t).threads, 4);
    otel_thread_free(t);
    memread_free(mr);
    test_kill_child(pid);
    test_untrack_target(pid);
}

/* Local exec: an executable's own variable, placed from its PT_TLS alone. */
static void test_otel_thread_live__local_exec(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#else
    spawn_and_sample("otel-tls-program", NULL, OTEL_TLS_LE);
#endif
}

/*
 * TLSDESC resolved to dynamic TLS: a module loaded where no static TLS is
 * left for it (glibc's tunable that reserves some for modules loaded later
 * set to 0): the descriptor's argument points to (module, offset), and each
 * thread's block is found through its dtv.
 */
static void test_otel_thread_live__tlsdesc_dynamic(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#else
    char lib[4096];
    if (access(test_fake_path("libotel-tls-tlsdesc.so", lib, sizeof(lib)), R_OK) != 0)
        skip(); /* the compiler has no -mtls-dialect=gnu2 */
    unsigned major = 0, minor = 0;
    if (sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) != 2 || major * 100 + minor < 232)
        skip(); /* the tunable is glibc 2.32's */
    assert_int_equal(setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=0", 1), 0);
    spawn_and_sample("otel-tls-loader", "libotel-tls-tlsdesc.so", OTEL_TLS_DESC_DYNAMIC);
    assert_int_equal(unsetenv("GLIBC_TUNABLES"), 0);
    /* and without it, in static TLS */
    spawn_and_sample("otel-tls-loader", "libotel-tls-tlsdesc.so", OTEL_TLS_DESC_STATIC);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_otel_thread_live__tlsdesc),
        cmocka_unit_test(test_otel_thread_live__general_dynamic),
        cmocka_unit_test(test_otel_thread_live__initial_exec),
        cmocka_unit_test_teardown(test_otel_thread_live__local_exec, test_kill_targets),
        cmocka_unit_test_teardown(test_otel_thread_live__tlsdesc_dynamic, test_kill_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
