/* SPDX-License-Identifier: MIT */
/*
 * attach.c: the shared front half of every command that reads a process:
 * open its memory, find the runtime, decide support, build the unwinder; each
 * failure becomes one message a user can act on.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/log.h"
#include "base/strnum.h"
#include "cli/cli.h"
#include "discovery/privileges.h"
#include "python/pyopcode.h"
#include "python/pyversion.h"

int cli_parse_pid(const char *arg, pid_t *out)
{
    int64_t pid;
    if (strnum_parse_i64(arg, 1, INT32_MAX, &pid)) {
        log_error("'%s' is not a process id", arg);
        return -EINVAL;
    }
    *out = (pid_t)pid;
    return 0;
}

int cli_parse_backend(const char *arg, enum memread_backend *out)
{
    if (strcmp(arg, "auto") == 0)
        *out = MEMREAD_AUTO;
    else if (strcmp(arg, "vm") == 0)
        *out = MEMREAD_VM;
    else if (strcmp(arg, "procmem") == 0)
        *out = MEMREAD_PROCMEM;
    else {
        log_error("unknown backend '%s' (use auto, vm or procmem)", arg);
        return -EINVAL;
    }
    return 0;
}

/*
 * Reading process @a pid was refused with @a err: says what refused it, as
 * far as this process can tell (discovery/privileges.h): a missing
 * CAP_SYS_PTRACE only when it is missing.
 */
static void cli_permission_denied(pid_t pid, int err)
{
    struct privileges_facts f;
    char text[320];
    privileges_facts_read("/proc", &f);
    log_error("cannot read process %d: %s", (int)pid,
              privileges_refusal(&f, err, text, sizeof(text)));
}

static void cli_not_python(pid_t pid, const struct pyruntime *rt, const char *why)
{
    if (rt->name_minor && rt->name_minor < PYVERSION_MIN_MINOR &&
        (rt->miss == PYRUNTIME_MISS_NO_COOKIE || rt->miss == PYRUNTIME_MISS_NO_SECTION))
        log_error("process %d runs Python 3.%u, which pyprofd does not read: it reads "
                  "CPython " PYVERSION_SUPPORTED,
                  (int)pid, rt->name_minor);
    else if (rt->miss == PYRUNTIME_MISS_NO_COOKIE)
        log_error("process %d has a Python runtime pyprofd cannot place: CPython older than "
                  "3." PYVERSION_STR(PYVERSION_MIN_MINOR) ", a binary without its _PyRuntime "
                                                          "symbol, or not initialized yet (%s)",
                  (int)pid, why);
    else
        log_error("process %d is not a Python process (%s)", (int)pid, why);
}

int cli_attach(pid_t pid, enum memread_backend backend, bool unwind, struct cli_target *t)
{
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    char why[512];
    int err = memread_open(pid, backend, &t->mr);
    if (err == -ESRCH) {
        log_error("no such process: %d", (int)pid);
        return CLI_EXIT_FAIL;
    }
    if (err == -EPERM) {
        cli_permission_denied(pid, err);
        return CLI_EXIT_FAIL;
    }
    if (err) {
        log_error("cannot open process %d: %s", (int)pid, memread_strerror(err));
        return CLI_EXIT_FAIL;
    }
    err = pyruntime_locate("/proc", pid, t->mr, &t->rt, why, sizeof(why));
    switch (err) {
    case 0:
        break;
    case -ESRCH:
        log_error("no such process: %d (it exited)", (int)pid);
        return CLI_EXIT_FAIL;
    case -EPERM:
    case -EACCES:
        log_error("%s", why); /* "cannot read '/proc/PID/maps': " and what refused it */
        return CLI_EXIT_FAIL;
    case -ENOENT:
        cli_not_python(pid, &t->rt, why);
        return CLI_EXIT_FAIL;
    default:
        log_error("cannot find the Python runtime of process %d: %s", (int)pid, why);
        return CLI_EXIT_FAIL;
    }
    if (pyversion_check_supported(&t->rt.version, why, sizeof(why))) {
        log_error("process %d: %s", (int)pid, why);
        return CLI_EXIT_FAIL;
    }
    if (!unwind)
        return CLI_EXIT_OK;
    err = unwinder_new(t->mr, &t->rt, &t->unwinder, why, sizeof(why));
    if (err == -ESRCH) {
        log_error("no such process: %d (it exited)", (int)pid);
        return CLI_EXIT_FAIL;
    }
    if (err == -EPERM) {
        cli_permission_denied(pid, err);
        return CLI_EXIT_FAIL;
    }
    if (err) {
        log_error("cannot profile process %d: %s", (int)pid, why);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

void cli_warn_flags(const struct cli_target *t, unsigned flags)
{
    if ((flags & UNWIND_OPCODES) && !pyopcode_table(t->rt.version.minor))
        log_warn("--opcodes: pyprofd has no opcode names for CPython 3.%u (3.13 and newer): "
                 "stacks without them",
                 t->rt.version.minor);
    if ((flags & UNWIND_NATIVE) && unwinder_layout(t->unwinder)->frame_objects)
        log_warn("--native: CPython 3.%u's frames do not say where C code called into Python "
                 "(3.11 and newer do): stacks without <native> markers",
                 t->rt.version.minor);
}

void cli_detach(struct cli_target *t)
{
    unwinder_free(t->unwinder);
    memread_free(t->mr);
    memset(t, 0, sizeof(*t));
}
