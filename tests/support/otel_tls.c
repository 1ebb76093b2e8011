/* SPDX-License-Identifier: MIT */
/*
 * otel_tls.c: a publisher of the OpenTelemetry thread context (OTEP 4947) at
 * its smallest: the exported thread-local pointer otel_thread_ctx_v1 and a
 * function giving its address in the calling thread. Built as loadable
 * modules with each TLS access model otel_thread_find() reads (TLSDESC,
 * legacy general dynamic, initial exec) for test_otel_thread_live, and, with
 * OTEL_TLS_PROGRAM, as an executable whose own variable it is (local exec):
 * its main thread and a second one point theirs at records whose ids count
 * up from 0x11 and 0x22; it prints "ready <main's thread pointer> <the second's>
 * <the second's TID>" and waits to be killed. With OTEL_TLS_LOADER as well, the
 * executable has no variable of its own: it loads the module its first
 * argument names and publishes through that module's.
 */
#define _GNU_SOURCE 1

#define OTEL_TLS_EXPORT __attribute__((visibility("default")))

#ifndef OTEL_TLS_LOADER
OTEL_TLS_EXPORT __thread void *otel_thread_ctx_v1;

OTEL_TLS_EXPORT void **otel_tls_slot(void);

void **otel_tls_slot(void)
{
    return &otel_thread_ctx_v1;
}
#endif

#ifdef OTEL_TLS_PROGRAM
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char otel_tls_rec[2][28];
static _Atomic long otel_tls_tid; /* the thread's TID, once it set its context */
static void **(*otel_tls_get)(void);

static void otel_tls_record(unsigned char *r, unsigned char seed)
{
    for (unsigned i = 0; i < 24; i++)
        r[i] = (unsigned char)(seed + i);
    r[24] = 1; /* valid */
    r[25] = 1; /* sampled */
    r[26] = r[27] = 0;
}

static void *otel_tls_thread(void *arg)
{
    (void)arg;
    *otel_tls_get() = otel_tls_rec[1];
    otel_tls_tid = syscall(SYS_gettid);
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
#ifdef OTEL_TLS_LOADER
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
    *(void **)&otel_tls_get = h ? dlsym(h, "otel_tls_slot") : NULL;
    if (!otel_tls_get) {
        fprintf(stderr, "otel-tls-loader: cannot load '%s'\n", argc > 1 ? argv[1] : "");
        return 1;
    }
#else
    (void)argc, (void)argv;
    otel_tls_get = otel_tls_slot;
#endif
    otel_tls_record(otel_tls_rec[0], 0x11);
    otel_tls_record(otel_tls_rec[1], 0x22);
    *otel_tls_get() = otel_tls_rec[0];
    pthread_t t;
    if (pthread_create(&t, NULL, otel_tls_thread, NULL) != 0)
        return 1;
    while (otel_tls_tid == 0)
        usleep(1000);
    printf("ready 0x%lx 0x%lx %ld\n", (unsigned long)pthread_self(), (unsigned long)t,
           (long)otel_tls_tid);
    fflush(stdout);
    for (;;)
        pause();
}
#endif
