/* SPDX-License-Identifier: MIT */
/*
 * fake_asyncio.c: an .AsyncioDebug section shaped like CPython's
 * _Py_AsyncioModuleDebugOffsets (13 uint64 entries), for discovery tests of
 * pyruntime_find_asyncio(). Built into the fake _asyncio extension module
 * (3.14 style: mapped once the program imports it) and into fake python
 * programs that have _asyncio built in (3.15 style: the table sits in the
 * file that holds the runtime). Entry 0 holds FAKE_ASYNCIO_MAGIC, so a test
 * can check the address found by reading it. Compile-time switch:
 *   FAKE_ASYNCIO_UNPLACED  the section is not allocated (not part of the
 *                          loaded image): a malformed table
 */
#include <stdint.h>

#include "fake_runtime.h"

#ifdef FAKE_ASYNCIO_UNPLACED
/* flags "": not SHF_ALLOC, so the section is in the file but not in memory */
__asm__(".pushsection .AsyncioDebug,\"\",@progbits\n"
        ".quad 0x6173796e63696f21\n"
        ".zero 96\n"
        ".popsection\n");

uintptr_t fake_asyncio_address(void)
{
    return 0;
}
#else
__attribute__((section(".AsyncioDebug"), used)) static uint64_t fake_asyncio_table[13] = {
    FAKE_ASYNCIO_MAGIC};

uintptr_t fake_asyncio_address(void)
{
    return (uintptr_t)&fake_asyncio_table;
}
#endif
