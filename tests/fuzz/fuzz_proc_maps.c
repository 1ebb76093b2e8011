/* SPDX-License-Identifier: MIT */
/* Fuzz target: /proc/PID/maps text (agent/discovery/proc_maps.c). */
#include "base/compat.h"

#include "discovery/proc_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proc_maps *m = NULL;
    if (proc_maps_parse((const char *)data, size, 4096, &m) == 0) {
        for (size_t i = 0; i < proc_maps_count(m); i++) {
            const struct proc_map_entry *e = proc_maps_get(m, i);
            PYPROFD_ASSERT(e->start <= e->end);
            (void)proc_map_is_file(e);
            (void)strlen(e->path);
        }
        proc_maps_free(m);
    }
    return 0;
}
