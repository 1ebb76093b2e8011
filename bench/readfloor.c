/* SPDX-License-Identifier: MIT */
/*
 * readfloor.c: what the reads of a sample cost with nothing else around
 * them, the floor under the agent's CPU per sample (bench/agent_targets.sh
 * --read-floor; docs/performance.md, "Fleet scale").
 *
 * For every PID given it picks addresses shaped like a warm 3.14 sample's
 * four ranges (docs/unwinder.md): 728 bytes at the start of the interpreter
 * binary's writable data (the thread state inside _PyRuntime), 264 bytes
 * 200 KiB further (the interpreter's fields), 544 bytes in the heap (the
 * frame chunk) and 88 bytes near the top of the main stack (the C-stack
 * entry frame). All are pages the process has touched, so a read never
 * faults anything in. Then it reads them, one process_vm_readv() per
 * "sample", in one of three ways:
 *
 *   paced  each PID at -r HZ on a fixed schedule, every read due by a tick
 *          (-t, default 1 ms) made in one pass after one sleep, timer slack
 *          one tick: the agent's pattern without the agent
 *   flat   round robin over the PIDs as fast as it can: reads of processes
 *          whose page tables and pages the CPU saw N reads ago
 *   one    the first PID only, as fast as it can: warm reads
 *
 * -n 1 reads a single 1 KiB range instead of the four. It prints one line:
 * reads, reads per second, CPU per read (this thread's CPU time over the
 * run), failed reads. Not a test and not part of the agent: it needs root
 * (or CAP_SYS_PTRACE) and live processes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_PIDS   4096
#define MAX_RANGES 4

struct proc {
    pid_t pid;
    struct iovec remote[MAX_RANGES];
    uint64_t due;
};

static const size_t lens[MAX_RANGES] = {728, 264, 544, 88};

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The data, heap and stack mappings of @a p; 0 or -1 when one is missing. */
static int proc_pick(struct proc *p, int nranges)
{
    char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
    snprintf(path, sizeof(path), "/proc/%d/exe", p->pid);
    ssize_t n = readlink(path, exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    uint64_t data = 0, data_end = 0, heap = 0, stack_end = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perm[8], file[PATH_MAX] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &lo, &hi, perm, file) < 3)
            continue;
        if (!data && strcmp(perm, "rw-p") == 0 && strcmp(file, exe) == 0)
            data = lo, data_end = hi;
        else if (!heap && strcmp(file, "[heap]") == 0)
            heap = lo;
        else if (strcmp(file, "[stack]") == 0)
            stack_end = hi;
    }
    fclose(f);
    if (!data || !heap || !stack_end)
        return -1;
    uint64_t second = data + 200 * 1024 + 512 < data_end ? data + 200 * 1024 : data + 2048;
    uint64_t at[MAX_RANGES] = {data, second, heap + 4096, stack_end - 4096 + 256};
    if (nranges == 1) {
        p->remote[0] = (struct iovec){(void *)(uintptr_t)data, 1024};
        return 0;
    }
    for (int i = 0; i < MAX_RANGES; i++)
        p->remote[i] = (struct iovec){(void *)(uintptr_t)at[i], lens[i]};
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: readfloor [-m paced|flat|one] [-r HZ] [-d SECONDS] [-t TICK_US]"
                    " [-n 1|4] PID...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode = "paced";
    double hz = 100, seconds = 5;
    unsigned tick_us = 1000;
    int nranges = MAX_RANGES, opt;
    while ((opt = getopt(argc, argv, "m:r:d:t:n:")) != -1) {
        switch (opt) {
        case 'm':
            mode = optarg;
            break;
        case 'r':
            hz = atof(optarg);
            break;
        case 'd':
            seconds = atof(optarg);
            break;
        case 't':
            tick_us = (unsigned)atoi(optarg);
            break;
        case 'n':
            nranges = atoi(optarg);
            break;
        default:
            return usage();
        }
    }
    int npids = argc - optind;
    if (npids < 1 || npids > MAX_PIDS || hz <= 0 || seconds <= 0 || tick_us == 0 ||
        (nranges != 1 && nranges != MAX_RANGES) ||
        (strcmp(mode, "paced") && strcmp(mode, "flat") && strcmp(mode, "one")))
        return usage();
    static struct proc procs[MAX_PIDS];
    int np = 0;
    for (int i = 0; i < npids; i++) {
        procs[np].pid = atoi(argv[optind + i]);
        if (proc_pick(&procs[np], nranges) == 0)
            np++;
        else
            fprintf(stderr, "readfloor: pid %s: no data, heap or stack mapping; left out\n",
                    argv[optind + i]);
    }
    if (np == 0)
        return 1;
    if (strcmp(mode, "one") == 0)
        np = 1;

    static uint8_t buf[MAX_RANGES][1024];
    struct iovec local[MAX_RANGES];
    for (int i = 0; i < MAX_RANGES; i++)
        local[i] = (struct iovec){buf[i], sizeof(buf[i])};
    uint64_t tick = (uint64_t)tick_us * 1000, interval = (uint64_t)(1e9 / hz);
    (void)prctl(PR_SET_TIMERSLACK, (unsigned long)tick, 0, 0, 0);
    uint64_t t0 = now_ns(CLOCK_MONOTONIC), end = t0 + (uint64_t)(seconds * 1e9);
    uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), reads = 0, failed = 0;
    for (int i = 0; i < np; i++) /* spread over the first interval, as the agent's phases */
        procs[i].due = t0 + interval * (uint64_t)i / (uint64_t)np;
    bool paced = strcmp(mode, "paced") == 0;
    for (int i = 0;;) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (now >= end)
            break;
        if (!paced) {
            struct proc *p = &procs[i];
            i = i + 1 == np ? 0 : i + 1;
            reads++;
            failed += process_vm_readv(p->pid, local, (unsigned long)nranges, p->remote,
                                       (unsigned long)nranges, 0) < 0;
            continue;
        }
        uint64_t next = UINT64_MAX;
        for (int k = 0; k < np; k++) {
            struct proc *p = &procs[k];
            if (p->due <= now) {
                reads++;
                failed += process_vm_readv(p->pid, local, (unsigned long)nranges, p->remote,
                                           (unsigned long)nranges, 0) < 0;
                p->due += interval;
            }
            next = p->due < next ? p->due : next;
        }
        next = (next + tick - 1) / tick * tick; /* the tick boundary at or after it */
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    double cpu = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
    double wall = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
    char kind[64];
    if (paced)
        snprintf(kind, sizeof(kind), "paced %u us ticks", tick_us);
    else
        snprintf(kind, sizeof(kind), "%s", mode);
    printf("readfloor %s: %d processes, %d range(s), %" PRIu64 " reads, %.0f reads/s,"
           " %.2f us CPU per read, %.1f%% CPU, %" PRIu64 " failed\n",
           kind, np, nranges, reads, (double)reads / wall, reads ? cpu / (double)reads / 1e3 : 0,
           cpu / wall / 1e7, failed);
    return 0;
}
