/* SPDX-License-Identifier: MIT */
/*
 * pyruntime.c: locate .PyRuntime, and .AsyncioDebug, in a live process (see
 * pyruntime.h).
 */
#include "base/compat.h"

#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "base/tfile.h"
#include "discovery/elf_sections.h"
#include "discovery/execid.h"
#include "discovery/proc_maps.h"
#include "discovery/privileges.h"
#include "discovery/proc_scan_parse.h"
#include "discovery/pyruntime.h"
#include "python/pyabi.h"

/* Outcome of looking at one candidate file. */
enum pyruntime_candidate {
    PYRUNTIME_FOUND,
    PYRUNTIME_SKIP, /* not this one; the reason is in why */
    PYRUNTIME_FATAL,
};

static bool pyruntime_name_matches(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* extension modules (_bz2.cpython-314-x86_64-linux-gnu.so) hold no runtime */
    return strstr(base, "python") != NULL && strstr(base, ".cpython-") == NULL;
}

/*
 * memread_strerror(), except that a refusal (-EPERM, -EACCES) says what
 * refused it as far as this process can tell (privileges_refusal(): its
 * own capabilities, Yama, user namespace, security label), into @a buf.
 */
static const char *pyruntime_strerror(int err, char *buf, size_t len)
{
    if (err != -EPERM && err != -EACCES)
        return memread_strerror(err);
    struct privileges_facts f;
    privileges_facts_read("/proc", &f); /* this process's own, whatever proc_root is */
    return privileges_refusal(&f, err, buf, len);
}

/* The minor version in a name like "python3.11" or "libpython3.12.so.1.0", or 0. */
static unsigned pyruntime_name_minor(const char *path)
{
    const char *base = strrchr(path, '/');
    const char *p = strstr(base ? base + 1 : path, "python3.");
    if (!p)
        return 0;
    p += strlen("python3.");
    unsigned minor = 0;
    for (int i = 0; i < 3 && *p >= '0' && *p <= '9'; i++, p++)
        minor = minor * 10 + (unsigned)(*p - '0');
    return minor;
}

/*
 * Whether the runtime at @raddr has an interpreter: python/ says where its
 * first interpreter's pointer sits (for a version with a table, from the
 * table's first entries, read here). A version pyprofd has no layout of, or
 * a table that does not add up, is left to the unwinder (assume yes).
 */
static bool pyruntime_initialized(struct memread *mr, uint64_t raddr, const struct py_version *v)
{
    unsigned char start[PYABI_RUNTIME_HEAD_MAX];
    size_t need = pyabi_runtime_head_len(v);
    uint64_t off = 0, head = 0;
    if (need > sizeof(start) || (need && memread_read(mr, raddr, start, need)))
        return true;
    if (pyabi_runtime_head(v, start, need, &off))
        return true; /* no layout, or a bad table: the unwinder's validation will say so */
    return memread_read(mr, raddr + off, &head, sizeof(head)) != 0 || head != 0;
}

const char *pyruntime_inside_root(const char *proc_root, pid_t pid, const char *path)
{
    char link[PATH_MAX + 32], root[PATH_MAX];
    snprintf(link, sizeof(link), "%s/%d/root", proc_root, (int)pid);
    ssize_t n = readlink(link, root, sizeof(root) - 1);
    if (n <= 1)
        return NULL; /* unreadable, or "/" */
    root[n] = '\0';
    size_t len = (size_t)n;
    if (strncmp(path, root, len) != 0 || path[len] != '/')
        return NULL;
    return path + len;
}

int pyruntime_open_mapped(const char *proc_root, pid_t pid, const struct proc_map_entry *e,
                          const char **via)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64, proc_root, (int)pid,
             e->start, e->end);
    int fd = tfile_open_regular(path, 0, NULL);
    if (fd >= 0) {
        *via = "map_files";
        return fd;
    }
    if (e->deleted)
        return -ENOENT; /* only map_files can still reach a deleted file */

    /*
     * Through the target's root first: /proc/PID/root is a jump that needs
     * only ptrace access (CAP_SYS_PTRACE), not the right to walk the
     * directories above that root (a container's rootfs under a 0700
     * directory), which map_files' directory, owned by the target's user,
     * and the plain path would need (CAP_DAC_READ_SEARCH). A file of the
     * same name that is not the mapped one (the chroot pitfall) is passed
     * over: its inode must be the mapping's.
     */
    const char *inside = pyruntime_inside_root(proc_root, pid, e->path);
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt == 0)
            snprintf(path, sizeof(path), "%s/%d/root%s", proc_root, (int)pid, e->path);
        else if (attempt == 1 && inside)
            snprintf(path, sizeof(path), "%s/%d/root%s", proc_root, (int)pid, inside);
        else if (attempt == 2)
            snprintf(path, sizeof(path), "%s", e->path);
        else
            continue;
        /* as the reader sees it, the same inode number on another device is
         * another file: the device must match too when it is comparable */
        dev_t dev = makedev(e->dev_major, e->dev_minor);
        fd = tfile_open_regular(path, e->inode, attempt == 2 ? &dev : NULL);
        if (fd >= 0) {
            *via = attempt < 2 ? "root" : "path";
            return fd;
        }
    }
    return -ENOENT;
}

/* What looking for a section in a mapped file found. */
enum pyruntime_place {
    PYRUNTIME_PLACED,
    PYRUNTIME_NO_FILE,    /* the file could not be opened as mapped */
    PYRUNTIME_NOT_ELF,    /* its ELF headers could not be read (*err says why) */
    PYRUNTIME_NO_SECTION, /* it has no such section */
    PYRUNTIME_UNPLACED,   /* the section is not inside the file's loaded image */
    PYRUNTIME_NO_MEMORY,
};

/*
 * What a file's ELF headers say, by the file's identity (device, inode, size,
 * modification time): where its .PyRuntime section is, its symbols, its
 * version string. A node that starts the same interpreter twenty times a
 * second parses it once; what is read live (the cookie, Py_Version, whether
 * the runtime is set up) is read for each process. Entries are replaced in
 * turn; the lock is held only to copy one in or out.
 */
#define PYRUNTIME_MEMO_N    32
#define PYRUNTIME_MEMO_SYMS 6

struct pyruntime_memo {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t sec_off;    /* the section's address less the load base */
    uint64_t sec_size;   /* (placed, place PYRUNTIME_PLACED) */
    uint64_t entry;      /* e_entry (have_entry) */
    uint64_t image_base; /* the load base: the first mapping's address less the bias */
    uint64_t load_base;  /* (symbols) */
    struct elf_symbol sym[PYRUNTIME_MEMO_SYMS];
    struct py_version named;    /* (symbols, have_named) */
    const char *via;            /* how the file was opened when it was read (static) */
    enum pyruntime_place place; /* (placed) */
    int place_err;              /* for PYRUNTIME_NOT_ELF */
    uint16_t etype;             /* ET_EXEC or ET_DYN (have_entry) */
    bool used;
    bool placed;     /* the section's answer is known */
    bool have_entry; /* entry, etype, image_base are known (the file has a PT_LOAD) */
    bool symbols;    /* the symbols are known */
    bool have_named;
};

static pthread_mutex_t pyruntime_memo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pyruntime_memo pyruntime_memo_v[PYRUNTIME_MEMO_N];
static unsigned pyruntime_memo_next;

static bool pyruntime_memo_same(const struct pyruntime_memo *m, const struct stat *st)
{
    return m->used && m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
           m->mtime.tv_sec == st->st_mtim.tv_sec && m->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* A copy of the memo of the file @fd is (false: none, or @fd cannot be stat'ed: *@st zeroed). */
static bool pyruntime_memo_get(int fd, struct stat *st, struct pyruntime_memo *out)
{
    if (fstat(fd, st) != 0) {
        memset(st, 0, sizeof(*st));
        return false;
    }
    bool found = false;
    pthread_mutex_lock(&pyruntime_memo_mu);
    for (unsigned i = 0; i < PYRUNTIME_MEMO_N && !found; i++) {
        if (pyruntime_memo_same(&pyruntime_memo_v[i], st)) {
            *out = pyruntime_memo_v[i];
            found = true;
        }
    }
    pthread_mutex_unlock(&pyruntime_memo_mu);
    return found;
}

/* Keeps what @m knows of the file @st names, beside what is there already. */
static void pyruntime_memo_put(const struct stat *st, const struct pyruntime_memo *m)
{
    if (!st->st_ino)
        return;
    pthread_mutex_lock(&pyruntime_memo_mu);
    struct pyruntime_memo *slot = NULL;
    for (unsigned i = 0; i < PYRUNTIME_MEMO_N && !slot; i++)
        if (pyruntime_memo_same(&pyruntime_memo_v[i], st))
            slot = &pyruntime_memo_v[i];
    if (!slot) {
        slot = &pyruntime_memo_v[pyruntime_memo_next++ % PYRUNTIME_MEMO_N];
        *slot = (struct pyruntime_memo){.dev = st->st_dev,
                                        .ino = st->st_ino,
                                        .size = st->st_size,
                                        .mtime = st->st_mtim,
                                        .used = true};
    }
    if (m->placed) {
        slot->placed = true;
        slot->place = m->place;
        slot->place_err = m->place_err;
        slot->sec_off = m->sec_off;
        slot->sec_size = m->sec_size;
        slot->via = m->via;
        slot->have_entry = m->have_entry;
        slot->etype = m->etype;
        slot->entry = m->entry;
        slot->image_base = m->image_base;
    }
    if (m->symbols) {
        slot->symbols = true;
        slot->load_base = m->load_base;
        memcpy(slot->sym, m->sym, sizeof(slot->sym));
        slot->have_named = m->have_named;
        slot->named = m->named;
    }
    pthread_mutex_unlock(&pyruntime_memo_mu);
}

/*
 * Opens the file behind mapping @e of @pid and finds its section @name, with
 * where the process has it (@e must map the start of the file, which places
 * it): *@sec, and how the file was opened: *@via.
 */
static enum pyruntime_place pyruntime_place(const char *proc_root, pid_t pid,
                                            const struct proc_map_entry *e, const char *name,
                                            struct pyruntime_section *sec, const char **via,
                                            int *err)
{
    int fd = pyruntime_open_mapped(proc_root, pid, e, via);
    if (fd < 0)
        return PYRUNTIME_NO_FILE;
    bool runtime = strcmp(name, ".PyRuntime") == 0; /* the one the memo keeps */
    struct stat st;
    struct pyruntime_memo m = {0};
    if (runtime && pyruntime_memo_get(fd, &st, &m) && m.placed) {
        close(fd);
    } else {
        struct elf_file *ef = NULL;
        int rc = elf_file_open_fd(fd, &ef);
        if (runtime && !st.st_ino && fstat(fd, &st) != 0)
            memset(&st, 0, sizeof(st));
        close(fd);
        if (rc == -ENOMEM) {
            *err = rc;
            return PYRUNTIME_NO_MEMORY;
        }
        m = (struct pyruntime_memo){.placed = true, .place = PYRUNTIME_PLACED, .via = *via};
        struct elf_section s;
        uint64_t load_base = 0;
        if (rc == 0 && elf_file_load_base(ef, &load_base) == 0) {
            m.have_entry = true;
            m.etype = elf_file_type(ef);
            m.entry = elf_file_entry(ef);
            m.image_base = load_base;
        }
        if (rc) {
            m.place = PYRUNTIME_NOT_ELF;
            m.place_err = rc;
        } else if (elf_file_find_section(ef, name, &s)) {
            m.place = PYRUNTIME_NO_SECTION;
        } else if (!(s.flags & SHF_ALLOC) || !m.have_entry || s.addr < load_base) {
            m.place = PYRUNTIME_UNPLACED;
        } else {
            m.sec_off = s.addr - load_base;
            m.sec_size = s.size;
        }
        elf_file_free(ef);
        if (runtime)
            pyruntime_memo_put(&st, &m);
    }
    *err = m.place_err;
    if (m.place != PYRUNTIME_PLACED)
        return m.place;
    if (e->offset != 0) /* only the mapping of the file's start places it */
        return PYRUNTIME_UNPLACED;
    *sec = (struct pyruntime_section){e->start + m.sec_off, m.sec_size};
    return PYRUNTIME_PLACED;
}

/* The process's PID in its own PID namespace (its status file's last NSpid),
 * or @pid when that cannot be read. */
static pid_t pyruntime_ns_pid(const char *proc_root, pid_t pid)
{
    char path[PATH_MAX], buf[4096];
    size_t n = 0;
    snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
    struct proc_status st;
    if (readfile_into(path, buf, sizeof(buf), &n, READFILE_INTO_KERNEL | READFILE_INTO_ONCE) ||
        n == 0 || proc_scan_parse_status(buf, n, &st) != 0 || st.nspid <= 0)
        return pid;
    return st.nspid;
}

#define PYRUNTIME_RODATA_MAX   (32u << 20) /* bytes of .rodata searched for PY_VERSION */
#define PYRUNTIME_RODATA_CHUNK (64u * 1024u)

/*
 * CPython 3.9 and 3.10 have no Py_Version symbol. Their version is the
 * PY_VERSION string in the file's .rodata ("3.9.2", a string of its own:
 * Py_GetVersion() formats it), searched a chunk at a time (consecutive chunks
 * overlap by a few bytes, so a string across their border is found); failing
 * that, the minor version in the file's name ("python3.9",
 * "libpython3.10.so.1.0"), with the micro version unknown. Only the
 * versions python/ says are known this way are taken
 * (pyversion_minor_by_string(): those with _PyRuntime and without
 * Py_Version). Returns whether @out was set; *@err is -ENOMEM when memory
 * ran out.
 */
static bool pyruntime_version_string(const struct elf_file *ef, int fd, unsigned name_minor,
                                     struct py_version *out, int *err)
{
    struct elf_section ro;
    bool found = false;
    if (elf_file_find_section(ef, ".rodata", &ro) == 0 && ro.size > 0) {
        char *buf = alloc_malloc(PYRUNTIME_RODATA_CHUNK);
        if (!buf) {
            *err = -ENOMEM;
            return false;
        }
        uint64_t size = ro.size < PYRUNTIME_RODATA_MAX ? ro.size : PYRUNTIME_RODATA_MAX;
        for (uint64_t at = 0; at < size && !found;) {
            size_t want =
                size - at < PYRUNTIME_RODATA_CHUNK ? (size_t)(size - at) : PYRUNTIME_RODATA_CHUNK;
            ssize_t n = pread(fd, buf, want, (off_t)(ro.offset + at));
            if (n <= 0)
                break;
            /* the version of the file's name when it has one; else 3.9 or 3.10 */
            for (unsigned minor = PYVERSION_MIN_MINOR; minor < PYVERSION_SYMBOL_MINOR && !found;
                 minor++) {
                if ((name_minor && minor != name_minor) ||
                    pyversion_scan(buf, (size_t)n, minor, out) < 0)
                    continue;
                found = true;
            }
            if ((size_t)n < want || at + (uint64_t)n >= size)
                break;
            at += (uint64_t)n > 16 ? (uint64_t)n - 16 : (uint64_t)n; /* overlap */
        }
        alloc_free(buf);
    }
    if (!found && pyversion_minor_by_string(name_minor)) {
        *out = (struct py_version){.hex = (3u << 24) | (name_minor << 16) | (PY_RELEASE_FINAL << 4),
                                   .major = 3,
                                   .minor = name_minor,
                                   .level = PY_RELEASE_FINAL,
                                   .micro_unknown = true};
        found = true;
    }
    return found;
}

/*
 * A file without the debug table (CPython 3.11, 3.12; @sec: its .PyRuntime
 * section, when it has one without the cookie; NULL otherwise): the runtime
 * by the _PyRuntime symbol (else the section's start) and the version by
 * Py_Version, read live. 3.9 and 3.10 have no Py_Version: they are missed
 * as before (PYRUNTIME_MISS_NO_COOKIE), and the caller names them by the
 * minor version of their file name.
 */
static enum pyruntime_candidate
pyruntime_try_symbols(const char *proc_root, pid_t pid, struct memread *mr,
                      const struct proc_map_entry *e, const struct pyruntime_memo *known,
                      const struct pyruntime_section *sec, struct pyruntime *out, int *err,
                      char *why, size_t why_len)
{
    static const char *const names[] = {"_PyRuntime",     "Py_Version",     "PyCode_Type",
                                        "PyUnicode_Type", "_Py_NoneStruct", "PyFrame_Type"};
    struct elf_symbol sym[PYPROFD_ARRAY_SIZE(names)];
    memset(sym, 0, sizeof(sym));
    const char *via = NULL;
    int fd = -ENOENT;
    if (known && !known->symbols) {
        snprintf(why, why_len, "'%s': its symbols are not known yet", e->path);
        return PYRUNTIME_SKIP; /* the way by the maps reads them */
    }
    if (known)
        via = known->via;
    else if (e->offset == 0)
        fd = pyruntime_open_mapped(proc_root, pid, e, &via);
    if (fd < 0 && !known) {
        snprintf(why, why_len, "cannot open '%s' as mapped by pid %d", e->path, (int)pid);
        out->miss = PYRUNTIME_MISS_UNREADABLE;
        return PYRUNTIME_SKIP;
    }
    struct stat st;
    struct pyruntime_memo m = {0};
    uint64_t load_base = 0;
    struct py_version named = {0};
    bool have_named = false;
    int rc = 0;
    _Static_assert(PYPROFD_ARRAY_SIZE(names) == PYRUNTIME_MEMO_SYMS, "the memo's symbols");
    if (known || (pyruntime_memo_get(fd, &st, &m) && m.symbols)) {
        if (known)
            m = *known;
        load_base = m.load_base;
        memcpy(sym, m.sym, sizeof(sym));
        have_named = m.have_named;
        named = m.named;
        if (fd >= 0)
            close(fd);
    } else {
        struct elf_file *ef = NULL;
        rc = elf_file_open_fd(fd, &ef);
        if (rc == 0)
            rc = elf_file_load_base(ef, &load_base);
        if (rc == 0)
            rc = elf_file_find_symbols_fd(ef, fd, names, PYPROFD_ARRAY_SIZE(names), sym);
        /* 3.9, 3.10 have no Py_Version: their PY_VERSION string, else the name */
        if (rc == 0 && !sym[1].found && sym[0].found)
            have_named =
                pyruntime_version_string(ef, fd, pyruntime_name_minor(e->path), &named, &rc);
        close(fd);
        elf_file_free(ef);
        if (rc == 0) {
            m = (struct pyruntime_memo){
                .symbols = true, .load_base = load_base, .have_named = have_named, .named = named};
            memcpy(m.sym, sym, sizeof(m.sym));
            pyruntime_memo_put(&st, &m);
        }
    }
    if (rc == -ENOMEM) {
        *err = rc;
        return PYRUNTIME_FATAL;
    }
    /* a symbol's address in the process; 0 when it is not in the image */
#define PYRUNTIME_SYM(i)                                                                           \
    (sym[i].found && sym[i].value >= load_base ? e->start + (sym[i].value - load_base) : 0)
    uint64_t runtime = PYRUNTIME_SYM(0);
    const char *found_by = "_PyRuntime symbol";
    if (!runtime && sec) {
        runtime = sec->raddr;
        found_by = ".PyRuntime section";
    }
    if (!runtime) {
        snprintf(why, why_len, "'%s' has no .PyRuntime section or _PyRuntime symbol (not CPython?)",
                 e->path);
        if (out->miss < PYRUNTIME_MISS_NO_SECTION)
            out->miss = PYRUNTIME_MISS_NO_SECTION;
        return PYRUNTIME_SKIP;
    }
    struct py_version v = {0};
    const char *version_from = "Py_Version";
    uint64_t hex = 0;
    uint64_t version_at = PYRUNTIME_SYM(1);
    if (version_at) {
        rc = memread_read(mr, version_at, &hex, sizeof(hex));
        if (rc == -ESRCH || rc == -EPERM) {
            char text[320];
            snprintf(why, why_len, "cannot read memory of pid %d: %s", (int)pid,
                     pyruntime_strerror(rc, text, sizeof(text)));
            *err = rc;
            return PYRUNTIME_FATAL;
        }
        if (rc || pyversion_from_hex(hex, 0, &v)) {
            snprintf(why, why_len, "'%s' has an unreadable or implausible Py_Version", e->path);
            out->miss = PYRUNTIME_MISS_UNREADABLE;
            return PYRUNTIME_SKIP;
        }
    } else if (have_named) {
        v = named; /* 3.9, 3.10 */
        version_from = named.micro_unknown ? "the file's name (no PY_VERSION string found)"
                                           : "its PY_VERSION string";
    } else {
        snprintf(why, why_len,
                 "'%s' has no debug table, no Py_Version and no version string or name "
                 "(CPython 3.8 or older?)",
                 e->path);
        out->miss = PYRUNTIME_MISS_NO_COOKIE;
        return PYRUNTIME_SKIP;
    }
    out->raddr = runtime;
    out->section_size = sym[0].found && sym[0].size ? sym[0].size : sec ? sec->size : 0;
    out->map_start = e->start;
    snprintf(out->path, sizeof(out->path), "%s", e->path);
    out->deleted = e->deleted;
    out->opened_via = via;
    out->version = v;
    out->no_table = true;
    out->found_by = found_by;
    out->version_from = version_from;
    if (have_named)
        out->ns_pid = pyruntime_ns_pid(proc_root, pid);
    out->code_type = PYRUNTIME_SYM(2);
    out->unicode_type = PYRUNTIME_SYM(3);
    out->none_object = PYRUNTIME_SYM(4);
    out->frame_type = PYRUNTIME_SYM(5);
#undef PYRUNTIME_SYM
    out->initialized = pyruntime_initialized(mr, runtime, &v);
    return PYRUNTIME_FOUND;
}

static enum pyruntime_candidate pyruntime_try(const char *proc_root, pid_t pid, struct memread *mr,
                                              const struct proc_map_entry *e,
                                              const struct pyruntime_memo *known,
                                              struct pyruntime *out, int *err, char *why,
                                              size_t why_len)
{
    const char *via = NULL;
    struct pyruntime_section sec = {0};
    int rc = 0;
    enum pyruntime_place place;
    if (known) { /* the executable, placed by AT_ENTRY (pyruntime_exe_known()) */
        via = known->via;
        place = known->place == PYRUNTIME_NOT_ELF ? PYRUNTIME_UNPLACED : known->place;
        if (place == PYRUNTIME_PLACED)
            sec = (struct pyruntime_section){e->start + known->sec_off, known->sec_size};
    } else {
        place = pyruntime_place(proc_root, pid, e, ".PyRuntime", &sec, &via, &rc);
    }
    switch (place) {
    case PYRUNTIME_PLACED:
        break;
    case PYRUNTIME_NO_FILE:
        snprintf(why, why_len, "cannot open '%s' as mapped by pid %d", e->path, (int)pid);
        out->miss = PYRUNTIME_MISS_UNREADABLE;
        return PYRUNTIME_SKIP;
    case PYRUNTIME_NO_MEMORY:
        *err = rc;
        return PYRUNTIME_FATAL;
    case PYRUNTIME_NOT_ELF:
        snprintf(why, why_len, "cannot read ELF headers of '%s': %s", e->path, strerror(-rc));
        out->miss = PYRUNTIME_MISS_UNREADABLE;
        return PYRUNTIME_SKIP;
    case PYRUNTIME_NO_SECTION:
        return pyruntime_try_symbols(proc_root, pid, mr, e, known, NULL, out, err, why, why_len);
    case PYRUNTIME_UNPLACED:
        snprintf(why, why_len, "cannot place .PyRuntime of '%s' in memory", e->path);
        return PYRUNTIME_SKIP;
    }
    if (sec.size < PYVERSION_HEADER_SIZE) {
        snprintf(why, why_len, "cannot place .PyRuntime of '%s' in memory", e->path);
        return PYRUNTIME_SKIP;
    }

    unsigned char header[PYVERSION_HEADER_SIZE];
    rc = memread_read(mr, sec.raddr, header, sizeof(header));
    if (rc == -ESRCH || rc == -EPERM) {
        char text[320];
        snprintf(why, why_len, "cannot read memory of pid %d: %s", (int)pid,
                 pyruntime_strerror(rc, text, sizeof(text)));
        *err = rc;
        return PYRUNTIME_FATAL;
    }
    if (rc) {
        snprintf(why, why_len, "cannot read .PyRuntime of '%s' at 0x%" PRIx64 ": %s", e->path,
                 sec.raddr, memread_strerror(rc));
        out->miss = PYRUNTIME_MISS_UNREADABLE;
        return PYRUNTIME_SKIP;
    }
    rc = pyversion_decode(header, sizeof(header), &out->version);
    if (rc == -ENOENT) /* 3.11 and 3.12 have the section, without a table */
        return pyruntime_try_symbols(proc_root, pid, mr, e, known, &sec, out, err, why, why_len);
    if (rc) {
        snprintf(why, why_len, "'%s' has a debug table with an implausible version word", e->path);
        *err = rc;
        return PYRUNTIME_FATAL;
    }
    out->raddr = sec.raddr;
    out->section_size = sec.size;
    out->map_start = e->start;
    snprintf(out->path, sizeof(out->path), "%s", e->path);
    out->deleted = e->deleted;
    out->opened_via = via;
    out->initialized = pyruntime_initialized(mr, sec.raddr, &out->version);
    return PYRUNTIME_FOUND;
}

/* A zombie's maps read as empty; so do a kernel thread's. Tell them apart. */
static bool pyruntime_is_dead(const char *proc_root, pid_t pid)
{
    char path[PATH_MAX], buf[512];
    size_t n = 0;
    snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
    if (readfile_into(path, buf, sizeof(buf), &n, READFILE_INTO_KERNEL | READFILE_INTO_ONCE) ||
        n == 0)
        return true;
    const char *paren = strrchr(buf, ')'); /* the command name may contain ") " */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* AT_ENTRY of @pid's auxv: its executable's entry point as loaded. */
static int pyruntime_auxv_entry(const char *proc_root, pid_t pid, uint64_t *out)
{
    char path[PATH_MAX];
    char buf[EXECID_AUXV_MAX + 1]; /* (and readfile_into()'s NUL) */
    size_t n = 0;
    snprintf(path, sizeof(path), "%s/%d/auxv", proc_root, (int)pid);
    if (readfile_into(path, buf, sizeof(buf), &n, READFILE_INTO_KERNEL | READFILE_INTO_GONE))
        return -ENOENT;
    return execid_auxv_value((const uint8_t *)buf, n, AT_ENTRY, out);
}

/*
 * The way without the maps, for the second and later processes of an
 * interpreter whose executable holds the runtime: when the memo knows the
 * file /proc/PID/exe is (by fstat: nothing is read from it), the executable's
 * first mapping is where AT_ENTRY less e_entry puts its load base, and @e is
 * made to describe it (its path from the exe link, in @path). Reading the maps
 * formats every mapping of the process: 40 % of a new process's look.
 * Returns whether @e and @m are set.
 */
static bool pyruntime_exe_known(const char *proc_root, pid_t pid, struct proc_map_entry *e,
                                struct pyruntime_memo *m, char *path, size_t path_len)
{
    char exe[PATH_MAX + 32];
    snprintf(exe, sizeof(exe), "%s/%d/exe", proc_root, (int)pid);
    int fd = open(exe, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return false;
    struct stat st;
    bool known =
        pyruntime_memo_get(fd, &st, m) && m->placed && m->have_entry && S_ISREG(st.st_mode);
    close(fd);
    uint64_t entry = 0;
    if (!known || pyruntime_auxv_entry(proc_root, pid, &entry))
        return false;
    uint64_t bias;
    if (m->etype == ET_DYN && entry >= m->entry)
        bias = entry - m->entry;
    else if (m->etype == ET_EXEC && entry == m->entry)
        bias = 0;
    else
        return false;
    ssize_t n = readlink(exe, path, path_len - 1);
    if (n <= 0 || (size_t)n >= path_len - 1)
        return false;
    size_t len = (size_t)n;
    path[len] = '\0';
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof(deleted) - 1;
    bool gone = len > dl && strcmp(path + len - dl, deleted) == 0;
    if (gone)
        path[len - dl] = '\0';
    *e = (struct proc_map_entry){
        .start = bias + m->image_base, .inode = (uint64_t)st.st_ino, .deleted = gone, .path = path};
    return true;
}

int pyruntime_locate(const char *proc_root, pid_t pid, struct memread *mr, struct pyruntime *out,
                     char *why, size_t why_len)
{
    struct proc_map_entry xe;
    struct pyruntime_memo known;
    char xpath[PATH_MAX];
    if (pyruntime_exe_known(proc_root, pid, &xe, &known, xpath, sizeof(xpath))) {
        int xerr = 0;
        memset(out, 0, sizeof(*out));
        enum pyruntime_candidate c =
            pyruntime_try(proc_root, pid, mr, &xe, &known, out, &xerr, why, why_len);
        if (c == PYRUNTIME_FOUND && out->initialized) {
            out->by_entry = true;
            why[0] = '\0';
            return 0;
        }
        if (c == PYRUNTIME_FATAL && (xerr == -ESRCH || xerr == -EPERM))
            return xerr;
        /* not set up yet, or not this way: the maps say */
    }
    struct proc_maps *maps = NULL;
    int err = proc_maps_read(proc_root, pid, &maps);
    if (err) {
        char text[320];
        snprintf(why, why_len, "cannot read '%s/%d/maps': %s", proc_root, (int)pid,
                 pyruntime_strerror(err, text, sizeof(text)));
        return err == -EACCES ? -EPERM : err;
    }

    if (proc_maps_count(maps) == 0 && pyruntime_is_dead(proc_root, pid)) {
        snprintf(why, why_len, "pid %d has exited", (int)pid);
        proc_maps_free(maps);
        return -ESRCH;
    }

    uint64_t exe_ino = 0;
    char exe[PATH_MAX + 32];
    snprintf(exe, sizeof(exe), "%s/%d/exe", proc_root, (int)pid);
    struct stat st;
    if (stat(exe, &st) == 0)
        exe_ino = (uint64_t)st.st_ino;

    struct pyruntime cand, fallback;
    bool have_fallback = false;
    char worst_why[PATH_MAX + 128] = "";
    memset(out, 0, sizeof(*out));
    uint64_t seen[PYRUNTIME_MAX_CANDIDATES];
    size_t nseen = 0;
    err = -ENOENT;
    snprintf(why, why_len, "no python executable or libpython mapped by pid %d", (int)pid);
    for (size_t i = 0; i < proc_maps_count(maps) && nseen < PYRUNTIME_MAX_CANDIDATES; i++) {
        const struct proc_map_entry *e = proc_maps_get(maps, i);
        if (!proc_map_is_file(e) || e->inode == 0)
            continue;
        if (!pyruntime_name_matches(e->path) && e->inode != exe_ino)
            continue;
        bool dup = false;
        for (size_t j = 0; j < nseen; j++)
            dup |= seen[j] == e->inode;
        if (dup)
            continue; /* only the lowest mapping of a file places it */
        seen[nseen++] = e->inode;

        if (!out->name_minor)
            out->name_minor = pyruntime_name_minor(e->path);
        memset(&cand, 0, sizeof(cand));
        enum pyruntime_candidate c =
            pyruntime_try(proc_root, pid, mr, e, NULL, &cand, &err, why, why_len);
        if (c == PYRUNTIME_FOUND && cand.initialized) {
            *out = cand;
            have_fallback = false;
            err = 0;
            why[0] = '\0';
            break;
        }
        if (c == PYRUNTIME_FOUND && !have_fallback) {
            fallback = cand; /* set up but never started: keep looking */
            have_fallback = true;
        }
        if (c == PYRUNTIME_FATAL)
            break;
        /* the reason kept is that of the worst miss: an unreadable python
         * file says more than a library without the section after it */
        if (cand.miss >= out->miss)
            snprintf(worst_why, sizeof(worst_why), "%s", why);
        out->miss = cand.miss > out->miss ? cand.miss : out->miss;
        err = -ENOENT;
    }
    if (err == -ENOENT && !have_fallback && worst_why[0])
        snprintf(why, why_len, "%s", worst_why);
    if (have_fallback && err == -ENOENT) {
        *out = fallback;
        err = 0;
        why[0] = '\0';
    }
    proc_maps_free(maps);
    return err;
}

/* --- the asyncio debug table ------------------------------------------- */

static bool pyruntime_asyncio_name(const char *path)
{
    const char *base = strrchr(path, '/');
    return strstr(base ? base + 1 : path, "_asyncio") != NULL;
}

static bool pyruntime_memo_has(const struct pyruntime_asyncio_memo *memo, uint64_t inode)
{
    for (size_t i = 0; i < memo->nchecked; i++) {
        if (memo->checked[i] == inode)
            return true;
    }
    return false;
}

static void pyruntime_memo_add(struct pyruntime_asyncio_memo *memo, uint64_t inode)
{
    if (memo->nchecked < PYRUNTIME_ASYNCIO_CHECKED)
        memo->checked[memo->nchecked++] = inode;
}

int pyruntime_find_asyncio(const char *proc_root, pid_t pid, const struct pyruntime *rt,
                           struct pyruntime_asyncio_memo *memo, struct pyruntime_section *out,
                           char *why, size_t why_len)
{
    struct proc_maps *maps = NULL;
    memo->searches++;
    int err = proc_maps_read(proc_root, pid, &maps);
    if (err) {
        char text[320];
        snprintf(why, why_len, "cannot read '%s/%d/maps': %s", proc_root, (int)pid,
                 pyruntime_strerror(err, text, sizeof(text)));
        return err == -EACCES ? -EPERM : err;
    }
    err = -ENOENT;
    snprintf(why, why_len,
             "no file mapped by pid %d has an .AsyncioDebug section (asyncio not "
             "imported yet?)",
             (int)pid);
    for (size_t i = 0; i < proc_maps_count(maps); i++) {
        const struct proc_map_entry *e = proc_maps_get(maps, i);
        /* only the lowest mapping of a file places it */
        if (!proc_map_is_file(e) || e->inode == 0 || e->offset != 0 ||
            pyruntime_memo_has(memo, e->inode))
            continue;
        if (!pyruntime_asyncio_name(e->path) && e->start != rt->map_start)
            continue;
        const char *via = NULL;
        int rc = 0;
        enum pyruntime_place p =
            pyruntime_place(proc_root, pid, e, ".AsyncioDebug", out, &via, &rc);
        if (p == PYRUNTIME_PLACED) {
            why[0] = '\0';
            err = 0;
            break;
        }
        if (p == PYRUNTIME_NO_MEMORY) {
            snprintf(why, why_len, "out of memory reading the ELF headers of '%s'", e->path);
            err = -ENOMEM;
            break;
        }
        if (p == PYRUNTIME_UNPLACED) {
            snprintf(why, why_len, "cannot place .AsyncioDebug of '%s' in memory", e->path);
            err = -EPROTO;
        } else if (p == PYRUNTIME_NO_FILE && err == -ENOENT) {
            snprintf(why, why_len, "cannot open '%s' as mapped by pid %d", e->path, (int)pid);
        }
        pyruntime_memo_add(memo, e->inode);
    }
    proc_maps_free(maps);
    return err;
}
