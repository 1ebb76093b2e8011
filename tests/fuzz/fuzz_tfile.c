/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: agent/base/tfile.c's reading of a target's /proc/PID/status
 * (its filesystem ids, groups and capabilities, which decide what files
 * pyprofd opens for it), and the mode-bit judgement over what it gave.
 */
#include "base/compat.h"

#include <sys/stat.h>

#include "base/tfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tfile_creds c;
    if (tfile_parse_status((const char *)data, size, &c) != 0)
        return 0;
    PYPROFD_ASSERT(c.ngroups <= TFILE_GROUPS);
    struct stat st = {.st_uid = c.fsuid, .st_gid = c.fsgid, .st_mode = S_IFREG | 0400};
    PYPROFD_ASSERT(tfile_may(&c, &st, 4)); /* its own file, readable by its owner */
    st.st_mode = S_IFREG;
    PYPROFD_ASSERT(tfile_may(&c, &st, 4) == c.dac_override || c.dac_read_search);
    return 0;
}
