/* SPDX-License-Identifier: MIT */
/*
 * sources.c: the target's source files as the target could read them, for
 * `record --format heatmap` (cli.h, struct cli_sources). The file names come
 * from the target's memory (co_filename), so they are untrusted: each is
 * resolved and read by base/tfile.c, below the target's root (a name or
 * symbolic link cannot leave it: a container's files, not the host's), with
 * the target's own credentials checked at every directory on the way and at
 * the file, a FIFO, device or socket refused by its type before anything
 * opens it, anything on procfs or sysfs refused (their "self" is pyprofd),
 * at most HEATMAP_MAX_TEXT bytes, in bounded time. So a process cannot make
 * a heatmap show a file it could not read itself. The root, working
 * directory and credentials are taken when the recording starts and kept: a
 * target that exits before the heatmap is written (record -- COMMAND) still
 * has its files read, as it could have read them then.
 */
#include "base/compat.h"

#include "base/buf.h"
#include "base/tfile.h"
#include "cli/cli.h"
#include "pprof/heatmap.h"

int cli_sources_open(pid_t pid, struct cli_sources *s, char *why, size_t whylen)
{
    int err = tfile_who_open(NULL, pid, &s->who);
    if (err)
        snprintf(why, whylen, "%s", s->who.why);
    return err;
}

void cli_sources_close(struct cli_sources *s)
{
    tfile_who_close(&s->who);
}

int cli_source_read(void *arg, const char *path, struct buf *text, struct heatmap_source_id *id,
                    char *why, size_t why_size)
{
    const struct cli_sources *s = arg;
    if (path[0] == '<' || path[0] == '\0') {
        snprintf(why, why_size, "not a file: the code was not loaded from one");
        return -ENOENT;
    }
    struct stat st;
    int err = tfile_read(&s->who, path, HEATMAP_MAX_TEXT, text, &st, why, why_size);
    if (!err)
        *id = (struct heatmap_source_id){.dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino};
    return err;
}
