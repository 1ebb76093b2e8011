/* SPDX-License-Identifier: MIT */
/*
 * proc_maps.h: parser for /proc/PID/maps (discovery, stage 1).
 *
 * The text is untrusted input (it comes from the kernel, but through a file
 * that may be truncated, replaced in a mocked /proc, or fuzzed): every field is
 * validated, the number of entries is capped, and a malformed line makes the
 * whole parse fail with -EINVAL rather than yield half-understood mappings.
 *
 * Line format: "start-end perms offset major:minor inode [path]". The path may
 * contain spaces; a file deleted after mapping gets a " (deleted)" suffix,
 * which the parser strips into @c deleted.
 *
 * Ownership: entries' @c path strings point into the struct proc_maps that
 * holds them and live as long as it does.
 *
 * Thread safety: a struct proc_maps is immutable after parsing and may be
 * read from several threads.
 */
#ifndef PYPROFD_DISCOVERY_PROC_MAPS_H
#define PYPROFD_DISCOVERY_PROC_MAPS_H

#include "base/compat.h"

#include <sys/types.h>

/** Default cap on entries; a real process rarely has more than a few thousand. */
#define PROC_MAPS_MAX_ENTRIES 65536
/** Cap on the size of a maps file read by proc_maps_read(). */
#define PROC_MAPS_MAX_BYTES (16u << 20)

enum proc_map_perms {
    PROC_MAP_READ = 1 << 0,
    PROC_MAP_WRITE = 1 << 1,
    PROC_MAP_EXEC = 1 << 2,
    PROC_MAP_SHARED = 1 << 3, /* 's' rather than 'p' */
};

/** One mapping. */
struct proc_map_entry {
    uint64_t start;  /* first address */
    uint64_t end;    /* one past the last address */
    uint64_t offset; /* file offset of @c start */
    uint64_t inode;  /* 0 for anonymous mappings */
    uint32_t dev_major;
    uint32_t dev_minor;
    unsigned perms;   /* enum proc_map_perms bits */
    bool deleted;     /* the path had a " (deleted)" suffix (removed from @c path) */
    const char *path; /* "" for anonymous mappings; "[heap]", "[stack]", ... kept as is */
};

struct proc_maps;

/**
 * Parses one line (without its newline) into @a out; @a out->path points into
 * @a line, which must be NUL-terminated after the path. Returns 0 or -EINVAL.
 * Modifies @a line to cut off a " (deleted)" suffix.
 */
PYPROFD_WARN_UNUSED int proc_maps_parse_line(char *line, struct proc_map_entry *out);

/**
 * Parses a whole maps text of @a len bytes (need not be NUL-terminated) with
 * at most @a max_entries lines. Returns 0 and the result in @a out (caller owns
 * it; proc_maps_free()), -EINVAL on a malformed line, -E2BIG when there are
 * more lines than @a max_entries, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int proc_maps_parse(const char *text, size_t len, size_t max_entries,
                                        struct proc_maps **out);

/**
 * Reads and parses @a proc_root/PID/maps (@a proc_root is usually "/proc").
 * Returns 0, -ESRCH if the process is gone, -EPERM/-EACCES, -EFBIG above
 * PROC_MAPS_MAX_BYTES, or a proc_maps_parse() error.
 */
PYPROFD_WARN_UNUSED int proc_maps_read(const char *proc_root, pid_t pid, struct proc_maps **out);

/** Number of entries. */
size_t proc_maps_count(const struct proc_maps *maps);
/** Entry @a i (i < proc_maps_count()), in the kernel's order (ascending addresses). */
const struct proc_map_entry *proc_maps_get(const struct proc_maps *maps, size_t i);
/** Frees; NULL is a no-op. */
void proc_maps_free(struct proc_maps *maps);

/** True when the path names a file (not anonymous and not a "[...]" pseudo path). */
bool proc_map_is_file(const struct proc_map_entry *e);

#endif /* PYPROFD_DISCOVERY_PROC_MAPS_H */
