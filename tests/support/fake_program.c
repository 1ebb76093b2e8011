/* SPDX-License-Identifier: MIT */
/*
 * fake_program.c: main() of the fake python programs. Prints
 * "ready <addr>\n", where <addr> is the address of the runtime the test should
 * find (the shared object's when linked to it, else the executable's own,
 * else 0), then waits to be killed.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "fake_runtime.h"

__attribute__((weak)) uintptr_t fake_runtime_address(void);

int main(void)
{
    /* The good runtime is the library's when linked to it, else our own. */
    uintptr_t addr = fake_runtime_address ? fake_runtime_address() : fake_own_runtime_address();
    printf("ready 0x%lx\n", (unsigned long)addr);
    fflush(stdout);
    for (;;)
        pause();
}
