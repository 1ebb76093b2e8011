/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the /proc file parsers of agent/discovery/proc_scan.c. The
 * first byte selects the parser (stat, status, cgroup, btime, container id
 * of one path, and discovery/execid.c's auxiliary vector); the rest is the
 * file's text (bytes, for the vector).
 */
#include "base/compat.h"

#include "discovery/execid.h"
#include "discovery/proc_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] % 6) {
    case 0: {
        struct proc_stat st;
        if (proc_scan_parse_stat(text, len, &st) == 0) {
            PYPROFD_ASSERT(st.comm >= text && st.comm + st.comm_len <= text + len);
            PYPROFD_ASSERT(st.pid >= 0 && st.ppid >= 0);
        }
        break;
    }
    case 1: {
        struct proc_status st;
        if (proc_scan_parse_status(text, len, &st) == 0)
            PYPROFD_ASSERT(st.nspid >= 0 && st.ppid >= 0);
        break;
    }
    case 2: {
        struct proc_cgroup cg;
        if (proc_scan_parse_cgroup(text, len, &cg) == 0) {
            PYPROFD_ASSERT(!cg.path || (cg.path >= text && cg.path + cg.path_len <= text + len));
            size_t idlen = strlen(cg.container_id);
            PYPROFD_ASSERT(idlen == 0 || idlen == PROC_SCAN_CONTAINER_ID_LEN);
            PYPROFD_ASSERT(idlen || !cg.runtime[0]);
        }
        break;
    }
    case 3: {
        int64_t bt;
        if (proc_scan_parse_btime(text, len, &bt) == 0)
            PYPROFD_ASSERT(bt >= 0);
        break;
    }
    case 5: {
        uint64_t raddr = 0;
        if (execid_parse_auxv(data + 1, len, &raddr) == 0)
            PYPROFD_ASSERT(raddr != 0);
        break;
    }
    default: {
        char id[PROC_SCAN_CONTAINER_ID_LEN + 1];
        const char *rt = NULL;
        if (proc_scan_container_id(text, len, id, &rt))
            PYPROFD_ASSERT(strlen(id) == PROC_SCAN_CONTAINER_ID_LEN && rt);
        break;
    }
    }
    return 0;
}
