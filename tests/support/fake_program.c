/* SPDX-License-Identifier: MIT */
/*
 * fake_program.c: main() of the fake python programs. Prints
 * "ready <addr> <asyncio>\n", where <addr> is the address of the runtime the
 * test should find (the shared object's when linked to it, else the
 * executable's own, else 0) and <asyncio> that of the executable's own
 * asyncio debug table (fake_asyncio.c; 0 when it has none), then waits to be
 * killed. Built with FAKE_LATE_IMPORT, it loads the shared object named by
 * its first argument (the fake _asyncio module) when it gets SIGUSR1, as a
 * program importing asyncio late does.
 */
#define _GNU_SOURCE 1 /* sigset_t and friends under -std=c11 */

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#ifdef FAKE_LATE_IMPORT
#include <dlfcn.h>
#endif

#include "fake_runtime.h"

__attribute__((weak)) uintptr_t fake_runtime_address(void);
__attribute__((weak)) uintptr_t fake_asyncio_address(void);

#ifdef FAKE_LATE_IMPORT
static volatile sig_atomic_t fake_import;

static void fake_on_usr1(int sig)
{
    (void)sig;
    fake_import = 1;
}
#endif

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#ifdef FAKE_LATE_IMPORT
    /* blocked until sigsuspend(): a signal sent right after "ready" is not lost */
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, &old);
    signal(SIGUSR1, fake_on_usr1);
#endif
    /* The good runtime is the library's when linked to it, else our own. */
    uintptr_t addr = fake_runtime_address ? fake_runtime_address() : fake_own_runtime_address();
    uintptr_t aio = fake_asyncio_address ? fake_asyncio_address() : 0;
    printf("ready 0x%lx 0x%lx\n", (unsigned long)addr, (unsigned long)aio);
    fflush(stdout);
#ifdef FAKE_LATE_IMPORT
    while (!fake_import)
        sigsuspend(&old);
    if (argc < 2 || !dlopen(argv[1], RTLD_NOW))
        fprintf(stderr, "fake program: cannot load '%s'\n", argc < 2 ? "" : argv[1]);
#endif
    for (;;)
        pause();
}
