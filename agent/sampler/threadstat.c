/* SPDX-License-Identifier: MIT */
/*
 * threadstat.c: /proc readers for thread state and PID-namespace TIDs (see
 * threadstat.h).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "base/strnum.h"
#include "base/readfile.h"
#include "sampler/tasks.h"
#include "sampler/threadstat.h"

int threadstat_parse_state(const char *text, size_t len, char *state)
{
    const char *close = len ? memrchr(text, ')', len) : NULL;
    if (!close || (size_t)(close - text) + 2 >= len || close[1] != ' ')
        return -EINVAL;
    char c = close[2];
    if (c < 'A' || c > 'z')
        return -EINVAL;
    *state = c;
    return 0;
}

int threadstat_parse_cputime(const char *text, size_t len, char *state, uint64_t *ticks)
{
    int err = threadstat_parse_state(text, len, state);
    if (err)
        return err;
    /* after ") S": fields 4 to 13 (numbers, some signed), then utime and stime */
    const char *p = (const char *)memrchr(text, ')', len) + 3, *end = text + len;
    uint64_t sum = 0;
    for (int field = 4; field <= 15; field++) {
        if (p >= end || *p != ' ')
            return -EINVAL;
        p++;
        if (field < 14 && p < end && *p == '-')
            p++;
        const char *start = p;
        uint64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9' && p - start < 20) {
            uint64_t d = (uint64_t)(*p - '0');
            if (v > (UINT64_MAX - d) / 10)
                return -EINVAL;
            v = v * 10 + d;
            p++;
        }
        if (p == start || (p < end && *p != ' ' && *p != '\n'))
            return -EINVAL;
        if (field >= 14) {
            if (sum > UINT64_MAX - v)
                return -EINVAL;
            sum += v;
        }
    }
    *ticks = sum;
    return 0;
}

uint64_t threadstat_tick_ns(void)
{
    long hz = sysconf(_SC_CLK_TCK); /* glibc: a constant, no system call */
    return hz > 0 && hz <= 1000000000 ? 1000000000ull / (uint64_t)hz : 10000000ull;
}

int threadstat_parse_schedstat(const char *text, size_t len, uint64_t out[3])
{
    size_t i = 0;
    for (int k = 0; k < 3; k++) {
        if (k > 0) {
            if (i >= len || text[i] != ' ')
                return -EINVAL;
            i++;
        }
        size_t start = i;
        uint64_t v = 0;
        while (i < len && text[i] >= '0' && text[i] <= '9' && i - start < 20) {
            uint64_t d = (uint64_t)(text[i] - '0');
            if (v > (UINT64_MAX - d) / 10)
                return -EINVAL;
            v = v * 10 + d;
            i++;
        }
        if (i == start || (i < len && text[i] >= '0' && text[i] <= '9'))
            return -EINVAL;
        out[k] = v;
    }
    return i + 1 == len && text[i] == '\n' ? 0 : -EINVAL; /* one line, all of it */
}

/* A /proc file of one record pyprofd named itself: one read, -ESRCH when gone (base/readfile.h). */
static ssize_t threadstat_slurp(const char *path, char *buf, size_t cap)
{
    size_t len = 0;
    int err = readfile_into(path, buf, cap, &len,
                            READFILE_INTO_KERNEL | READFILE_INTO_ONCE | READFILE_INTO_GONE);
    return err ? err : (ssize_t)len;
}

int threadstat_state(const char *proc_root, pid_t pid, pid_t host_tid, char *state)
{
    char path[256], buf[1024];
    snprintf(path, sizeof(path), "%s/%d/task/%d/stat", proc_root, (int)pid, (int)host_tid);
    ssize_t n = threadstat_slurp(path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return threadstat_parse_state(buf, (size_t)n, state);
}

/* The last number of the "NSpid:" line of a status file: the innermost id. */
static int threadstat_nspid(const char *status, uint64_t *inner, int *levels)
{
    const char *line = strstr(status, "\nNSpid:");
    if (!line)
        return -ENOENT;
    line += strlen("\nNSpid:");
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char field[32];
    *levels = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        size_t j = i;
        while (j < len && line[j] != ' ' && line[j] != '\t')
            j++;
        if (j > i && j - i < sizeof(field)) {
            memcpy(field, line + i, j - i);
            field[j - i] = '\0';
            int64_t v;
            if (strnum_parse_i64(field, 0, INT64_MAX, &v) == 0) {
                *inner = (uint64_t)v;
                (*levels)++;
            }
        }
        i = j;
    }
    return *levels ? 0 : -ENOENT;
}

int threadstat_host_tid(const char *proc_root, pid_t pid, uint64_t ns_tid, pid_t *host_tid)
{
    char path[256], buf[4096];
    uint64_t inner;
    int levels;
    snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
    ssize_t n = threadstat_slurp(path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    if (threadstat_nspid(buf, &inner, &levels) || levels == 1) {
        *host_tid = (pid_t)ns_tid; /* same namespace (or no NSpid: an old kernel) */
        return 0;
    }
    pid_t tids[TASKS_MAX];
    size_t ntids;
    int err = tasks_list(proc_root, pid, tids, TASKS_MAX, &ntids, NULL);
    if (err)
        return err;
    err = -ENOENT;
    for (size_t k = 0; k < ntids; k++) {
        snprintf(path, sizeof(path), "%s/%d/task/%d/status", proc_root, (int)pid, (int)tids[k]);
        if (threadstat_slurp(path, buf, sizeof(buf)) < 0)
            continue;
        if (threadstat_nspid(buf, &inner, &levels) == 0 && inner == ns_tid) {
            *host_tid = tids[k];
            err = 0;
            break;
        }
    }
    return err;
}

int threadstat_list_ns(const char *proc_root, pid_t pid, uint64_t *ns_tids, size_t max, size_t *n)
{
    char path[256], buf[4096];
    uint64_t inner;
    int levels;
    pid_t tids[TASKS_MAX];
    size_t ntids;
    bool more = false;
    *n = 0;
    snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
    ssize_t len = threadstat_slurp(path, buf, sizeof(buf));
    if (len < 0)
        return (int)len;
    bool nested = threadstat_nspid(buf, &inner, &levels) == 0 && levels > 1;
    size_t cap = max < TASKS_MAX ? max : TASKS_MAX;
    int err = tasks_list(proc_root, pid, tids, cap, &ntids, &more);
    if (err)
        return err;
    if (more)
        return -E2BIG;
    for (size_t k = 0; k < ntids; k++) {
        if (!nested) {
            ns_tids[(*n)++] = (uint64_t)tids[k];
            continue;
        }
        snprintf(path, sizeof(path), "%s/%d/task/%d/status", proc_root, (int)pid, (int)tids[k]);
        if (threadstat_slurp(path, buf, sizeof(buf)) >= 0 &&
            threadstat_nspid(buf, &inner, &levels) == 0)
            ns_tids[(*n)++] = inner;
    }
    return 0;
}

int threadstat_ns_tid(const char *proc_root, pid_t pid, pid_t host_tid, uint64_t *ns_tid)
{
    char path[256], buf[4096];
    uint64_t inner;
    int levels;
    snprintf(path, sizeof(path), "%s/%d/task/%d/status", proc_root, (int)pid, (int)host_tid);
    ssize_t n = threadstat_slurp(path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    *ns_tid = threadstat_nspid(buf, &inner, &levels) == 0 ? inner : (uint64_t)host_tid;
    return 0;
}

int threadstat_comm(const char *proc_root, pid_t pid, pid_t host_tid, char *buf, size_t len)
{
    char path[256], tmp[64];
    snprintf(path, sizeof(path), "%s/%d/task/%d/comm", proc_root, (int)pid, (int)host_tid);
    ssize_t n = threadstat_slurp(path, tmp, sizeof(tmp));
    if (n < 0)
        return (int)n;
    while (n > 0 && (tmp[n - 1] == '\n' || tmp[n - 1] == '\0'))
        n--;
    tmp[n] = '\0';
    snprintf(buf, len, "%s", tmp);
    return 0;
}
