/* SPDX-License-Identifier: MIT */
/*
 * status.c: tables generated from status.def (see status.h).
 */
#include "base/compat.h"

#include "base/status.h"

static const struct {
    const char *name, *desc;
} status_table[SAMPLE_STATUS_COUNT] = {
#define STATUS(id, name, torn, desc) [SAMPLE_##id] = {name, desc},
#include "base/status.def"
#undef STATUS
};

const char *status_name(enum sample_status s)
{
    return (unsigned)s < SAMPLE_STATUS_COUNT ? status_table[s].name : "unknown";
}

const char *status_describe(enum sample_status s)
{
    return (unsigned)s < SAMPLE_STATUS_COUNT ? status_table[s].desc : "unknown status";
}

enum sample_status status_from_errno(int err)
{
    switch (err) {
    case 0:
        return SAMPLE_OK;
    case -ESRCH:
        return SAMPLE_PROCESS_GONE;
    case -EPERM:
    case -EACCES:
        return SAMPLE_PERMISSION;
    case -ENOMEM:
        return SAMPLE_NO_MEMORY;
    default:
        return SAMPLE_READ_FAULT;
    }
}
