/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of discovery/proc_events (the proc connector's datagrams) and
 * discovery/proc_watch (its queue, and the poll source over a fake proc
 * root whose loadavg the test moves). The netlink source needs the host's
 * namespaces and root: the integration tests (test_short_processes.py) run
 * it for real; here it is refused for a proc root that is not the agent's.
 */
#include "base/compat.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmocka_wrap.h"
#include "base/alloc.h"
#include "discovery/proc_events.h"
#include "discovery/proc_watch.h"

/* ---- datagrams -------------------------------------------------------------- */

struct seen {
    enum proc_events_kind kind[16];
    pid_t pid[16], ppid[16];
    int err[16];
    int n;
};

static int on_event(enum proc_events_kind kind, pid_t pid, pid_t ppid, int err, uint64_t when,
                    void *arg)
{
    (void)when;
    struct seen *s = arg;
    if (s->n >= 16)
        return 1;
    s->kind[s->n] = kind;
    s->pid[s->n] = pid;
    s->ppid[s->n] = ppid;
    s->err[s->n] = err;
    s->n++;
    return 0;
}

/* Appends one connector message holding a proc_event of @what with @data. */
static size_t put_event(unsigned char *buf, size_t off, uint32_t what, const uint32_t *data,
                        size_t nwords)
{
    unsigned char ev[64] = {0};
    memcpy(ev, &what, 4);
    uint64_t ts = 12345;
    memcpy(ev + 8, &ts, 8);
    memcpy(ev + 16, data, nwords * 4);
    size_t evlen = 16 + nwords * 4;
    struct cn_msg cn = {.id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC}, .len = (uint16_t)evlen};
    struct nlmsghdr nh = {.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(cn) + evlen),
                          .nlmsg_type = NLMSG_DONE};
    memcpy(buf + off, &nh, sizeof(nh));
    memcpy(buf + off + NLMSG_HDRLEN, &cn, sizeof(cn));
    memcpy(buf + off + NLMSG_HDRLEN + sizeof(cn), ev, evlen);
    return off + NLMSG_ALIGN(nh.nlmsg_len);
}

static void test_proc_events__kinds(void **state)
{
    (void)state;
    unsigned char buf[1024] = {0};
    size_t len = 0;
    const uint32_t fork[] = {100, 100, 200, 200};   /* process 200 forked by 100 */
    const uint32_t thread[] = {100, 100, 201, 200}; /* thread 201 of 200 */
    const uint32_t exec[] = {200, 200};
    const uint32_t exitd[] = {200, 200, 0, 17, 100, 100};
    const uint32_t ack[] = {0};
    len = put_event(buf, len, PROC_EVENT_NONE, ack, 1);
    len = put_event(buf, len, PROC_EVENT_FORK, fork, 4);
    len = put_event(buf, len, PROC_EVENT_FORK, thread, 4);
    len = put_event(buf, len, PROC_EVENT_EXEC, exec, 2);
    len = put_event(buf, len, PROC_EVENT_EXIT, exitd, 6);
    struct seen s = {0};
    struct proc_events_counts c = {0};
    /* misaligned on purpose: the parser copies, never casts */
    unsigned char *odd = alloc_malloc(len + 1);
    memcpy(odd + 1, buf, len);
    assert_int_equal(proc_events_parse(odd + 1, len, on_event, &s, &c), 3);
    alloc_free(odd);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.kind[0], PROC_EVENTS_ACK);
    assert_int_equal(s.err[0], 0);
    assert_int_equal(s.kind[1], PROC_EVENTS_FORK);
    assert_int_equal(s.pid[1], 200);
    assert_int_equal(s.ppid[1], 100);
    assert_int_equal(s.kind[2], PROC_EVENTS_EXEC);
    assert_int_equal(s.pid[2], 200);
    assert_int_equal(c.fork, 1);
    assert_int_equal(c.exec, 1);
    assert_int_equal(c.threads, 1);
    assert_int_equal(c.other, 1);
    assert_int_equal(c.malformed, 0);
}

static void test_proc_events__malformed(void **state)
{
    (void)state;
    unsigned char buf[512] = {0};
    const uint32_t exec[] = {300, 300};
    size_t len = put_event(buf, 0, PROC_EVENT_EXEC, exec, 2);
    struct seen s = {0};
    struct proc_events_counts c = {0};
    /* cut anywhere inside the message: nothing delivered past the cut */
    for (size_t cut = 1; cut < len; cut++) {
        memset(&s, 0, sizeof(s));
        int rc = proc_events_parse(buf, cut, on_event, &s, &c);
        assert_true(rc == 0 || rc == -EINVAL);
        assert_int_equal(s.n, 0);
    }
    /* an event shorter than its kind needs */
    struct cn_msg cn;
    memcpy(&cn, buf + NLMSG_HDRLEN, sizeof(cn));
    cn.len = 18;
    memcpy(buf + NLMSG_HDRLEN, &cn, sizeof(cn));
    c = (struct proc_events_counts){0};
    assert_int_equal(proc_events_parse(buf, len, on_event, &s, &c), -EINVAL);
    assert_int_equal(c.malformed, 1);
    /* another connector's message */
    cn.len = 24;
    cn.id.idx = CN_IDX_PROC + 1;
    memcpy(buf + NLMSG_HDRLEN, &cn, sizeof(cn));
    assert_int_equal(proc_events_parse(buf, len, on_event, &s, &c), -EINVAL);
    /* a netlink length past the datagram */
    struct nlmsghdr nh;
    memcpy(&nh, buf, sizeof(nh));
    nh.nlmsg_len = 4096;
    memcpy(buf, &nh, sizeof(nh));
    assert_int_equal(proc_events_parse(buf, len, on_event, &s, &c), -EINVAL);
    assert_int_equal(s.n, 0);
    /* a pid of 0 or less is not a process */
    const uint32_t zero[] = {0, 0};
    len = put_event(buf, 0, PROC_EVENT_EXEC, zero, 2);
    assert_int_equal(proc_events_parse(buf, len, on_event, &s, &c), -EINVAL);
}

static void test_proc_events__subscribe(void **state)
{
    (void)state;
    unsigned char msg[PROC_EVENTS_SUBSCRIBE_MAX];
    size_t len = proc_events_subscribe_msg(msg, true, false, 7, 0);
    assert_int_equal(len, NLMSG_LENGTH(sizeof(struct cn_msg) + 4));
    struct cn_msg cn;
    memcpy(&cn, msg + NLMSG_HDRLEN, sizeof(cn));
    assert_int_equal(cn.id.idx, CN_IDX_PROC);
    assert_int_equal(cn.len, 4);
    uint32_t op;
    memcpy(&op, msg + NLMSG_HDRLEN + sizeof(cn), 4);
    assert_int_equal(op, PROC_CN_MCAST_LISTEN);
    len = proc_events_subscribe_msg(msg, true, true, 7, 0);
    assert_int_equal(len, NLMSG_LENGTH(sizeof(struct cn_msg) + 8));
    uint32_t filter;
    memcpy(&filter, msg + NLMSG_HDRLEN + sizeof(cn) + 4, 4);
    assert_int_equal(filter, PROC_EVENT_FORK | PROC_EVENT_EXEC);
    len = proc_events_subscribe_msg(msg, false, false, 8, 0);
    memcpy(&op, msg + NLMSG_HDRLEN + sizeof(cn), 4);
    assert_int_equal(op, PROC_CN_MCAST_IGNORE);
}

/* ---- the watch's poll source over a fake proc root ------------------------------ */

struct root {
    char dir[256];
};

static void root_write(const struct root *r, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", r->dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void root_task(const struct root *r, int pid, int tgid)
{
    char rel[512], text[128];
    snprintf(rel, sizeof(rel), "%s/%d", r->dir, pid);
    assert_int_equal(mkdir(rel, 0755), 0);
    snprintf(rel, sizeof(rel), "%d/status", pid);
    snprintf(text, sizeof(text), "Name:\tx\nTgid:\t%d\nPid:\t%d\nUid:\t0\t0\t0\t0\n", tgid, pid);
    root_write(r, rel, text);
}

static void root_loadavg(const struct root *r, int last)
{
    char text[64];
    snprintf(text, sizeof(text), "0.00 0.01 0.05 1/123 %d\n", last);
    root_write(r, "loadavg", text);
}

static int root_setup(void **state)
{
    struct root *r = alloc_calloc(1, sizeof(*r));
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof(r->dir), "%s/test_proc_watch.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(r->dir));
    *state = r;
    return 0;
}

static int root_teardown(void **state)
{
    struct root *r = *state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
    assert_int_equal(system(cmd), 0);
    alloc_free(r);
    return 0;
}

struct notes {
    int calls;
    uint64_t due;
};

static void on_notify(void *arg, uint64_t due)
{
    struct notes *n = arg;
    __atomic_add_fetch(&n->calls, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&n->due, due, __ATOMIC_SEQ_CST);
}

/* Waits up to 2 s for the watch to queue @want entries; returns them taken. */
static size_t take_all(struct proc_watch *w, struct proc_watch_item *out, size_t cap, size_t want)
{
    size_t n = 0;
    for (int i = 0; i < 400 && n < want; i++) {
        uint64_t next;
        n += proc_watch_take(w, UINT64_MAX, out + n, cap - n, &next);
        if (n < want)
            usleep(5000);
    }
    return n;
}

static int by_pid(const void *a, const void *b)
{
    const struct proc_watch_item *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static void test_proc_watch__poll(void **state)
{
    struct root *r = *state;
    char self[32], path[512];
    snprintf(self, sizeof(self), "%d", (int)getpid());
    snprintf(path, sizeof(path), "%s/self", r->dir);
    assert_int_equal(symlink(self, path), 0);
    root_loadavg(r, 100);
    struct notes notes = {0};
    struct proc_watch_opts o = {.proc_root = r->dir,
                                .want = PROC_WATCH_POLL,
                                .poll_ns = 2000000,
                                .delay_ns = 1000,
                                .notify = on_notify,
                                .notify_arg = &notes};
    struct proc_watch *w = NULL;
    char msg[256];
    assert_int_equal(proc_watch_new(&o, &w, msg, sizeof(msg)), 0);
    assert_int_equal(proc_watch_source(w), PROC_WATCH_POLL);
    usleep(10000); /* the first look only learns where the PIDs are */
    /* 101, 103 processes; 102 a thread of 101; 104 gone already */
    root_task(r, 101, 101);
    root_task(r, 102, 101);
    root_task(r, 103, 103);
    root_loadavg(r, 104);
    struct proc_watch_item items[8];
    size_t n = take_all(w, items, 8, 2);
    assert_int_equal(n, 2);
    qsort(items, n, sizeof(*items), by_pid);
    assert_int_equal(items[0].pid, 101);
    assert_int_equal(items[1].pid, 103);
    assert_false(items[0].exec);
    assert_true(__atomic_load_n(&notes.calls, __ATOMIC_SEQ_CST) >= 1);
    /* a jump past PROC_WATCH_RANGE_MAX: the listing, processes only, in range */
    int far = 104 + (int)PROC_WATCH_RANGE_MAX + 50;
    root_task(r, far, far);
    root_task(r, far + 1, far); /* a thread: not listed by a real proc, but a dir here */
    root_loadavg(r, far + 1);
    n = take_all(w, items, 8, 2);
    qsort(items, n, sizeof(*items), by_pid);
    assert_true(n >= 1);
    assert_int_equal(items[0].pid, far);
    /* again: queued with its tries, due when asked */
    proc_watch_again(w, 555, 0, 1);
    uint64_t next = 0;
    assert_int_equal(proc_watch_take(w, 0, items, 8, &next), 1);
    assert_int_equal(items[0].pid, 555);
    assert_int_equal(items[0].tries, 1);
    assert_false(proc_watch_missed(w));
    struct proc_watch_stats st;
    proc_watch_stats(w, &st);
    assert_int_equal(st.source, PROC_WATCH_POLL);
    assert_true(st.new_pid >= 3);
    assert_true(st.threads >= 1);
    proc_watch_free(w);
}

/* A queue entry due later is not taken; a PID queued twice is one entry with the later time. */
static void test_proc_watch__queue(void **state)
{
    struct root *r = *state;
    char self[32], path[512];
    snprintf(self, sizeof(self), "%d", (int)getpid());
    snprintf(path, sizeof(path), "%s/self", r->dir);
    assert_int_equal(symlink(self, path), 0);
    root_loadavg(r, 1);
    struct proc_watch_opts o = {
        .proc_root = r->dir, .want = PROC_WATCH_POLL, .poll_ns = 1000000000};
    struct proc_watch *w = NULL;
    char msg[256];
    assert_int_equal(proc_watch_new(&o, &w, msg, sizeof(msg)), 0);
    proc_watch_again(w, 7, 100, 0);
    proc_watch_again(w, 7, 300, 1);
    proc_watch_again(w, 8, 200, 0);
    struct proc_watch_item items[4];
    uint64_t next;
    assert_int_equal(proc_watch_take(w, 150, items, 4, &next), 0);
    assert_int_equal(next, 200);
    assert_int_equal(proc_watch_take(w, 250, items, 4, &next), 1);
    assert_int_equal(items[0].pid, 8);
    assert_int_equal(next, 300);
    assert_int_equal(proc_watch_take(w, 300, items, 4, &next), 1);
    assert_int_equal(items[0].pid, 7);
    assert_int_equal(items[0].tries, 1);
    assert_int_equal(next, UINT64_MAX);
    /* a full queue sets the flag once */
    for (unsigned i = 0; i <= PROC_WATCH_QUEUE_MAX; i++)
        proc_watch_again(w, (pid_t)(1000 + i), 5, 0);
    assert_true(proc_watch_missed(w));
    assert_false(proc_watch_missed(w));
    proc_watch_free(w);
}

/* A proc root that is not the agent's namespace's: auto is off (said), a named source refused. */
static void test_proc_watch__foreign_root(void **state)
{
    struct root *r = *state;
    root_loadavg(r, 1); /* no self link */
    struct proc_watch *w = NULL;
    char msg[256];
    struct proc_watch_opts o = {.proc_root = r->dir, .want = PROC_WATCH_AUTO};
    assert_int_equal(proc_watch_new(&o, &w, msg, sizeof(msg)), 0);
    assert_int_equal(proc_watch_source(w), PROC_WATCH_OFF);
    assert_non_null(strstr(msg, "not the proc of the agent's PID namespace"));
    proc_watch_free(w);
    o.want = PROC_WATCH_POLL;
    assert_int_equal(proc_watch_new(&o, &w, msg, sizeof(msg)), -EOPNOTSUPP);
    o.want = PROC_WATCH_OFF;
    assert_int_equal(proc_watch_new(&o, &w, msg, sizeof(msg)), 0);
    assert_int_equal(proc_watch_source(w), PROC_WATCH_OFF);
    proc_watch_free(w);
}

static void test_proc_watch__names(void **state)
{
    (void)state;
    enum proc_watch_source s;
    for (int i = 0; i < PROC_WATCH_SOURCES; i++) {
        assert_int_equal(
            proc_watch_source_parse(proc_watch_source_name((enum proc_watch_source)i), &s), 0);
        assert_int_equal(s, i);
    }
    assert_int_equal(proc_watch_source_parse("inotify", &s), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_events__kinds),
        cmocka_unit_test(test_proc_events__malformed),
        cmocka_unit_test(test_proc_events__subscribe),
        cmocka_unit_test_setup_teardown(test_proc_watch__poll, root_setup, root_teardown),
        cmocka_unit_test_setup_teardown(test_proc_watch__queue, root_setup, root_teardown),
        cmocka_unit_test_setup_teardown(test_proc_watch__foreign_root, root_setup, root_teardown),
        cmocka_unit_test(test_proc_watch__names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
