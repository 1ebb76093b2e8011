/* SPDX-License-Identifier: MIT */
/*
 * sources.c: the target's source files as the target sees them, for
 * `record --format heatmap` (cli.h, struct cli_sources). The file names come
 * from the target's memory (co_filename), so they are untrusted: a file is
 * opened with openat2(RESOLVE_IN_ROOT) below the target's root (an absolute
 * name or symbolic link cannot leave it: a container's files, not the
 * host's), only when it is a regular file of at most CLI_SOURCE_MAX bytes,
 * and only when the target's own credentials could read it (its owner,
 * group and mode bits against the target's effective uid, gid and groups),
 * so that a process cannot make a heatmap show a file it could not read
 * itself. The root and working directory are opened when the recording
 * starts and kept: a target that exits before the heatmap is written
 * (record -- COMMAND) still has its files read.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/strnum.h"
#include "cli/cli.h"
#include "pprof/heatmap.h"

#define CLI_SOURCE_MAX HEATMAP_MAX_TEXT /* bytes: a larger "source file" is not shown */

/* The effective uid and gid and the groups of @pid, from /proc/PID/status. */
static void cli_sources_creds(pid_t pid, struct cli_sources *s)
{
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        unsigned long r, e;
        if (sscanf(line, "Uid:\t%lu\t%lu", &r, &e) == 2) {
            s->uid = (uid_t)e;
            s->have_creds = true;
        } else if (sscanf(line, "Gid:\t%lu\t%lu", &r, &e) == 2) {
            s->gid = (gid_t)e;
        } else if (strncmp(line, "Groups:", 7) == 0) {
            char *p = line + 7, *end;
            while (s->ngroups < CLI_SOURCE_GROUPS) {
                unsigned long g = strtoul(p, &end, 10);
                if (end == p)
                    break;
                s->groups[s->ngroups++] = (gid_t)g;
                p = end;
            }
        }
    }
    fclose(f);
}

int cli_sources_open(pid_t pid, struct cli_sources *s)
{
    char path[64];
    *s = (struct cli_sources){.root_fd = -1, .cwd_fd = -1};
    snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
    s->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (s->root_fd < 0) {
        int err = -errno;
        snprintf(s->why, sizeof(s->why), "cannot open %s: %s", path, strerror(errno));
        return err;
    }
    snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
    s->cwd_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    cli_sources_creds(pid, s);
    return 0;
}

void cli_sources_close(struct cli_sources *s)
{
    if (s->root_fd >= 0)
        close(s->root_fd);
    if (s->cwd_fd >= 0)
        close(s->cwd_fd);
    s->root_fd = s->cwd_fd = -1;
}

/* Whether the target's credentials let it read a file with @st. */
static bool cli_sources_may_read(const struct cli_sources *s, const struct stat *st)
{
    if (!s->have_creds || s->uid == 0)
        return true; /* (creds unknown: the file is below its root and a regular file) */
    if (st->st_uid == s->uid)
        return st->st_mode & S_IRUSR;
    bool member = st->st_gid == s->gid;
    for (int i = 0; i < s->ngroups && !member; i++)
        member = st->st_gid == s->groups[i];
    return st->st_mode & (member ? S_IRGRP : S_IROTH);
}

int cli_source_read(void *arg, const char *path, struct buf *text, char *why, size_t why_size)
{
    const struct cli_sources *s = arg;
    if (path[0] == '<' || path[0] == '\0') {
        snprintf(why, why_size, "not a file: the code was not loaded from one");
        return -ENOENT;
    }
    if (s->root_fd < 0) {
        snprintf(why, why_size, "%s", s->why[0] ? s->why : "the target's root is not open");
        return -ENOENT;
    }
    int dir = path[0] == '/' ? s->root_fd : s->cwd_fd;
    if (dir < 0) {
        snprintf(why, why_size, "a relative name, and the target's working directory is unknown");
        return -ENOENT;
    }
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, dir, path[0] == '/' ? path + 1 : path, &how, sizeof(how));
    if (fd < 0) {
        int err = -errno;
        if (errno == ENOSYS)
            snprintf(why, why_size,
                     "this kernel has no openat2 (Linux 5.6), which reading the "
                     "target's files safely needs");
        else
            snprintf(why, why_size, "cannot open it in the target's root: %s", strerror(errno));
        return err;
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) < 0) {
        err = -errno;
        snprintf(why, why_size, "cannot stat it: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        err = -EINVAL;
        snprintf(why, why_size, "not a regular file");
    } else if (st.st_size > (off_t)CLI_SOURCE_MAX) {
        err = -EFBIG;
        snprintf(why, why_size, "larger than %u bytes", CLI_SOURCE_MAX);
    } else if (!cli_sources_may_read(s, &st)) {
        err = -EACCES;
        snprintf(why, why_size, "the target itself may not read it (uid %lu)",
                 (unsigned long)s->uid);
    }
    char chunk[65536];
    while (!err) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = -errno;
            snprintf(why, why_size, "cannot read it: %s", strerror(errno));
        } else if (n == 0) {
            break;
        } else if (buf_len(text) + (size_t)n > CLI_SOURCE_MAX) {
            err = -EFBIG;
            snprintf(why, why_size, "larger than %u bytes", CLI_SOURCE_MAX);
        } else if ((err = buf_add(text, chunk, (size_t)n))) {
            snprintf(why, why_size, "%s", err == -E2BIG ? "too large" : "out of memory");
        }
    }
    close(fd);
    return err;
}
