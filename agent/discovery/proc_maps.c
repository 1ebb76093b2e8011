/* SPDX-License-Identifier: MIT */
/*
 * proc_maps.c: /proc/PID/maps parser (see proc_maps.h). The parser works on a
 * private copy of the text, so entries can point at their paths without one
 * allocation per line.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "base/strnum.h"
#include "discovery/proc_maps.h"

struct proc_maps {
    char *text; /* owned copy; paths point into it */
    size_t count;
    struct proc_map_entry *entries;
};

static const char proc_maps_deleted[] = " (deleted)";

/* Reads a run of hex digits ending at @stop; advances *p past @stop. */
static int proc_maps_hex(char **p, char stop, uint64_t *out)
{
    char *s = *p;
    char *e = s;
    while (*e && *e != stop)
        e++;
    if (*e != stop)
        return -EINVAL;
    int err = strnum_parse_hex_u64(s, (size_t)(e - s), out);
    if (err)
        return -EINVAL;
    *p = e + 1;
    return 0;
}

static int proc_maps_dec(char **p, uint64_t *out)
{
    char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int proc_maps_parse_line(char *line, struct proc_map_entry *out)
{
    struct proc_map_entry e = {0};
    char *p = line;
    uint64_t major, minor;

    if (proc_maps_hex(&p, '-', &e.start) || proc_maps_hex(&p, ' ', &e.end) || e.end < e.start)
        return -EINVAL;
    static const char perm_chars[4] = {'r', 'w', 'x', 's'};
    for (int i = 0; i < 4; i++) {
        if (p[i] == perm_chars[i])
            e.perms |= 1u << i;
        else if (p[i] != '-' && !(i == 3 && p[i] == 'p'))
            return -EINVAL;
    }
    if (p[4] != ' ')
        return -EINVAL;
    p += 5;
    if (proc_maps_hex(&p, ' ', &e.offset) || proc_maps_hex(&p, ':', &major) ||
        proc_maps_hex(&p, ' ', &minor) || major > UINT32_MAX || minor > UINT32_MAX)
        return -EINVAL;
    e.dev_major = (uint32_t)major;
    e.dev_minor = (uint32_t)minor;
    if (proc_maps_dec(&p, &e.inode))
        return -EINVAL;
    if (*p != '\0' && *p != ' ')
        return -EINVAL;
    while (*p == ' ')
        p++;
    size_t len = strlen(p);
    size_t suffix = sizeof(proc_maps_deleted) - 1;
    if (len > suffix && memcmp(p + len - suffix, proc_maps_deleted, suffix) == 0) {
        e.deleted = true;
        p[len - suffix] = '\0';
    }
    e.path = p;
    *out = e;
    return 0;
}

int proc_maps_parse(const char *text, size_t len, size_t max_entries, struct proc_maps **out)
{
    int err = -ENOMEM;
    struct proc_maps *m = alloc_calloc(1, sizeof(*m));
    if (!m)
        goto fail;
    m->text = alloc_strndup(text, len);
    if (!m->text)
        goto fail;

    /* Count lines first, so the entry array is allocated once. */
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\0') {
            err = -EINVAL; /* a NUL never appears in a real maps file */
            goto fail;
        }
        if (text[i] == '\n' || i + 1 == len)
            lines++;
    }
    if (lines > max_entries) {
        err = -E2BIG;
        goto fail;
    }
    if (lines) {
        m->entries = alloc_calloc(lines, sizeof(*m->entries));
        if (!m->entries)
            goto fail;
    }
    char *p = m->text;
    char *end = m->text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *line_end = nl ? nl : end;
        *line_end = '\0';
        if (line_end != p) { /* tolerate an empty line, e.g. a trailing one */
            if (proc_maps_parse_line(p, &m->entries[m->count])) {
                err = -EINVAL;
                goto fail;
            }
            m->count++;
        }
        p = line_end + 1;
    }
    *out = m;
    return 0;
fail:
    proc_maps_free(m);
    return err;
}

int proc_maps_read(const char *proc_root, pid_t pid, struct proc_maps **out)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%d/maps", proc_root, (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;

    int err = 0;
    size_t cap = 64 * 1024, len = 0;
    char *buf = alloc_malloc(cap);
    if (!buf) {
        err = -ENOMEM;
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= PROC_MAPS_MAX_BYTES) {
                err = -EFBIG;
                goto out;
            }
            char *nb = alloc_realloc(buf, cap * 2);
            if (!nb) {
                err = -ENOMEM;
                goto out;
            }
            buf = nb;
            cap *= 2;
        }
        /* the buffer grows: readfile_into() is for one that does not */
        size_t got = 0;
        err = readfile_fill(fd, buf + len, cap - len, &got);
        len += got;
        if (err)
            goto out; /* -ESRCH: the process exited mid-read */
        if (len < cap)
            break; /* the end */
    }
    err = proc_maps_parse(buf, len, PROC_MAPS_MAX_ENTRIES, out);
out:
    alloc_free(buf);
    close(fd);
    return err;
}

size_t proc_maps_count(const struct proc_maps *maps)
{
    return maps->count;
}

const struct proc_map_entry *proc_maps_get(const struct proc_maps *maps, size_t i)
{
    PYPROFD_ASSERT(i < maps->count);
    return &maps->entries[i];
}

void proc_maps_free(struct proc_maps *maps)
{
    if (!maps)
        return;
    alloc_free(maps->entries);
    alloc_free(maps->text);
    alloc_free(maps);
}

bool proc_map_is_file(const struct proc_map_entry *e)
{
    return e->path[0] != '\0' && e->path[0] != '[';
}
