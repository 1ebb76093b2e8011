/* SPDX-License-Identifier: MIT */
/*
 * native.c: native stacks from the kernel's samples, unwound with libdwfl
 * (see native.h).
 */
#include "base/compat.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/tfile.h"
#include "discovery/proc_maps.h"
#include "discovery/pyruntime.h"
#include "unwind/native.h"

/* x86-64 DWARF register numbers 0-15, in the sample's registers */
static const enum perfsample_reg native_dwarf_regs[16] = {
    PERFSAMPLE_AX,  PERFSAMPLE_DX,  PERFSAMPLE_CX,  PERFSAMPLE_BX,  PERFSAMPLE_SI,  PERFSAMPLE_DI,
    PERFSAMPLE_BP,  PERFSAMPLE_SP,  PERFSAMPLE_R8,  PERFSAMPLE_R9,  PERFSAMPLE_R10, PERFSAMPLE_R11,
    PERFSAMPLE_R12, PERFSAMPLE_R13, PERFSAMPLE_R14, PERFSAMPLE_R15,
};

/* What a frame's address resolved to, remembered: looking up an address
 * with no symbol scans the module's whole symbol table (most of a sample's
 * cost before this cache). Keyed by the address looked up; cleared when the
 * session is (native_refresh()), since the names are libdwfl's. */
#define NATIVE_CACHE_SIZE 4096u /* a power of two */

struct native_sym {
    uint64_t at; /* 0: empty */
    const char *file, *function;
    uint64_t file_offset, offset, start_offset;
    const struct frame_mapping *mapping;
};

/* Functions recently resolved, by address range (the symbol's, or the CFI's
 * FDE for one without): a sampled leaf is at a new address almost every
 * time, but in one of a few functions. Searched in turn, replaced in turn. */
#define NATIVE_RANGES 64u

struct native_range {
    uint64_t lo, hi; /* [lo, hi); hi 0: empty */
    const char *file, *function;
    uint64_t module_start, start_offset;
    const struct frame_mapping *mapping;
};

/* A module's mapping as frames carry it, made the first time a frame is in
 * it (the module's userdata slot points to it); reset with the session. */
#define NATIVE_MAX_MODULES 512u

struct native_module {
    struct frame_mapping map;
    char build_id[2 * 64 + 1];
    bool filled;     /* map and build_id are set */
    bool no_symbols; /* its symbol tables are over NATIVE_MAX_SYMTAB: never searched */
};

/* What the search for a module's separate debug file found, kept across
 * sessions (native_refresh() starts a new one, which asks again): each
 * search costs a few lookups, each on a thread of its own (base/tfile.h). */
#define NATIVE_DEBUG_CACHE 256u

struct native_debug {
    uint64_t key; /* hash of the module's build id; 0: empty */
    int where;    /* the candidate that held it (native_debug_candidate()), or -1: none */
};

struct native {
    char *proc_root;
    pid_t pid;
    Dwfl *dwfl;
    struct tfile_who who; /* the process's root, working directory and credentials */
    struct native_debug debug[NATIVE_DEBUG_CACHE];
    struct native_files counts;
    /* the unwind in progress */
    const struct perfsample_record *cur;
    struct native_frame *frames;
    size_t max, n;
    bool complete; /* the last unwind reached the outermost frame */
    struct native_sym cache[NATIVE_CACHE_SIZE];
    struct native_module modules[NATIVE_MAX_MODULES];
    size_t nmodules;
    struct native_range ranges[NATIVE_RANGES];
    size_t next_range;
};

/* A module's entry (made once per session, kept in its userdata slot @ud), or NULL. */
static struct native_module *native_module_of(struct native *n, void **ud)
{
    if (!ud)
        return NULL;
    if (!*ud && n->nmodules < NATIVE_MAX_MODULES) {
        struct native_module *mod = &n->modules[n->nmodules++];
        memset(mod, 0, sizeof(*mod)); /* a slot of an earlier session's */
        *ud = mod;
    }
    return *ud;
}

/* ---- files: the module's own, and its separate debug file ------------------ */

/* The session whose libdwfl calls are in progress on this thread: libdwfl's
 * file callbacks have no argument of ours. */
static __thread struct native *native_current;

/* Every module is reported with its file opened (native_refresh()), so no
 * path is ever opened to find one. */
static int native_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
    *elfp = NULL;
    return -1;
}

/*
 * Candidate @i (0, 1, ...) for the separate debug file of a module whose
 * file the process names @file, with build id @bid (@len bytes, hex in @hex)
 * and .gnu_debuglink @link (NULL: none), in @out; false when there is no such
 * candidate. The places gdb and libdwfl look, below the process's root:
 *   0  /usr/lib/debug/.build-id/xx/rest.debug
 *   1  DIR/LINK   2  DIR/.debug/LINK   3  /usr/lib/debug/DIR/LINK
 * A debuglink is a file name: one with a '/' (a "../" climbing out of the
 * library's directory), or "." or "..", is not looked for.
 */
static bool native_debug_candidate(int i, const char *file, const char *hex, const char *link,
                                   char *out, size_t size)
{
    if (i == 0)
        return hex[0] && hex[1] && hex[2] &&
               snprintf(out, size, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2) <
                   (int)size;
    if (!link || !link[0] || strchr(link, '/') || strcmp(link, ".") == 0 ||
        strcmp(link, "..") == 0 || !file || file[0] != '/')
        return false;
    const char *slash = strrchr(file, '/');
    int dir = (int)(slash - file); /* "" for a file in "/" */
    int n = i == 1   ? snprintf(out, size, "%.*s/%s", dir, file, link)
            : i == 2 ? snprintf(out, size, "%.*s/.debug/%s", dir, file, link)
            : i == 3 ? snprintf(out, size, "/usr/lib/debug%.*s/%s", dir, file, link)
                     : -1;
    return n > 0 && n < (int)size;
}

/*
 * The bytes of @e's symbol tables (.symtab and .dynsym), at most the first
 * 4096 sections looked at. libdwfl searches a module's symbols linearly for
 * every address it names, touching all of them: a library can claim a
 * gigabyte of (sparse, zero) symbols, and each lookup would then take
 * seconds and make that gigabyte resident.
 */
static uint64_t native_symtab_bytes(Elf *e)
{
    uint64_t total = 0;
    Elf_Scn *scn = NULL;
    for (int i = 0; i < 4096 && (scn = elf_nextscn(e, scn)) != NULL; i++) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
            total += sh.sh_size < UINT64_MAX - total ? sh.sh_size : UINT64_MAX - total;
    }
    return total;
}

/* Whether the ELF file open as @fd has build id @bid (@len bytes). */
static bool native_debug_matches(int fd, const unsigned char *bid, int len)
{
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!e)
        return false;
    const void *got = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &got);
    bool ok = elf_kind(e) == ELF_K_ELF && n == len && memcmp(got, bid, (size_t)len) == 0 &&
              native_symtab_bytes(e) <= NATIVE_MAX_SYMTAB;
    elf_end(e);
    return ok;
}

/*
 * libdwfl's question for a module's separate debug file (its .symtab when
 * the library is stripped, its .debug_frame). Not libdwfl's own answer,
 * which opens paths the process controls with a plain open() (a FIFO there
 * stops the sampling thread for good), follows a debuglink's "../", and may
 * ask a debuginfod server over the network: here each candidate is opened
 * as the process itself could (base/tfile.h: below its root, its
 * credentials, a regular file only, bounded in time) and kept only when its
 * build id is the module's, so a module without one has no debug file.
 * Never the network. Returns a descriptor libdwfl takes, or -1.
 */
static int native_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                                 Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                                 GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    (void)userdata, (void)modname, (void)base, (void)debuglink_crc;
    *debuginfo_file_name = NULL; /* (libdwfl frees it: left NULL, never ours) */
    struct native *n = native_current;
    const unsigned char *bid = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bid, &vaddr);
    if (!n || len < 2 || len > 64)
        return -1;
    char hex[2 * 64 + 1];
    uint64_t key = 14695981039346656037ull; /* FNV-1a over the build id */
    for (int i = 0; i < len; i++) {
        static const char digits[] = "0123456789abcdef";
        hex[2 * i] = digits[bid[i] >> 4];
        hex[2 * i + 1] = digits[bid[i] & 15];
        key = (key ^ bid[i]) * 1099511628211ull;
    }
    hex[2 * len] = '\0';
    key |= 1; /* never 0, the empty slot */
    struct native_debug *c = &n->debug[key % NATIVE_DEBUG_CACHE];
    int first = 0, last = 3;
    if (c->key == key) {
        if (c->where < 0)
            return -1;
        first = last = c->where;
    }
    char path[PATH_MAX], why[256];
    for (int i = first; i <= last; i++) {
        if (!native_debug_candidate(i, file_name, hex, debuglink_file, path, sizeof(path)))
            continue;
        int fd = -1;
        n->counts.debug_lookups++;
        int err = tfile_open(&n->who, path, NATIVE_DEBUG_MAX, &fd, NULL, why, sizeof(why));
        if (err == -ETIMEDOUT || err == -EAGAIN)
            n->counts.debug_stalled++;
        if (err && err != -ENOENT && err != -ENOTDIR)
            n->counts.debug_refused++;
        if (err)
            continue;
        if (native_debug_matches(fd, bid, len)) {
            *c = (struct native_debug){.key = key, .where = i};
            n->counts.debug_found++;
            return fd;
        }
        close(fd);
        n->counts.debug_refused++;
    }
    *c = (struct native_debug){.key = key, .where = -1};
    return -1;
}

static const Dwfl_Callbacks native_callbacks = {
    .find_elf = native_find_elf,
    .find_debuginfo = native_find_debuginfo,
};

/* ---- the thread as libdwfl sees it: the sample --------------------------- */

static pid_t native_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    struct native *n = arg;
    if (*thread_argp || !n->cur)
        return 0;
    *thread_argp = n;
    return (pid_t)n->cur->tid;
}

static bool native_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    (void)dwfl;
    struct native *n = arg;
    if (!n->cur || (pid_t)n->cur->tid != tid)
        return false;
    *thread_argp = n;
    return true;
}

/* The sample's stack copy, and nothing else: the live stack has moved on. */
static bool native_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    const struct perfsample_record *s = ((struct native *)arg)->cur;
    uint64_t sp = s->regs[PERFSAMPLE_SP];
    if (!s->stack || s->stack_len < 8 || addr < sp || addr - sp > s->stack_len - 8)
        return false;
    memcpy(result, s->stack + (addr - sp), sizeof(*result));
    return true;
}

static bool native_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    const struct perfsample_record *s = ((struct native *)arg)->cur;
    Dwarf_Word regs[16];
    for (size_t i = 0; i < 16; i++)
        regs[i] = s->regs[native_dwarf_regs[i]];
    if (!dwfl_thread_state_registers(thread, 0, 16, regs))
        return false;
    dwfl_thread_state_register_pc(thread, s->regs[PERFSAMPLE_IP]);
    return true;
}

static const Dwfl_Thread_Callbacks native_thread_callbacks = {
    .next_thread = native_next_thread,
    .get_thread = native_get_thread,
    .memory_read = native_memory_read,
    .set_initial_registers = native_set_initial_registers,
};

/* ---- the session ---------------------------------------------------------- */

/*
 * The kernel's vDSO (clock_gettime and friends: time.monotonic() runs in
 * it), which has no file. Every process of one kernel maps the same image,
 * so ours, copied once into a memory file, stands for the target's, reported
 * at the target's address: its CFI lets a sample in it unwind to its caller.
 * Returns a new descriptor of that file, or -1.
 */
static int native_vdso_fd(size_t len)
{
    const uint8_t *self = (const uint8_t *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!self || len == 0 || len > (1u << 20) || memcmp(self, "\177ELF", 4) != 0)
        return -1;
    int fd = memfd_create("pyprofd-vdso", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    /* ours must be as long as the target's: the same kernel's image */
    if (write(fd, self, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Our own vDSO's length (from /proc/self/maps), 0 when unknown. */
static size_t native_own_vdso_len(void)
{
    size_t len = 0;
    struct proc_maps *maps = NULL;
    if (proc_maps_read("/proc", getpid(), &maps))
        return 0;
    for (size_t i = 0; i < proc_maps_count(maps); i++) {
        const struct proc_map_entry *e = proc_maps_get(maps, i);
        if (strcmp(e->path, "[vdso]") == 0)
            len = (size_t)(e->end - e->start);
    }
    proc_maps_free(maps);
    return len;
}

static int native_report(struct native *n);

/* Whether @maps has an executable mapping of the file of @e (same device and inode). */
static bool native_file_runs(const struct proc_maps *maps, const struct proc_map_entry *e)
{
    for (size_t i = 0; i < proc_maps_count(maps); i++) {
        const struct proc_map_entry *x = proc_maps_get(maps, i);
        if ((x->perms & PROC_MAP_EXEC) && x->inode == e->inode && x->dev_major == e->dev_major &&
            x->dev_minor == e->dev_minor)
            return true;
    }
    return false;
}

int native_refresh(struct native *n)
{
    struct native *outer = native_current;
    native_current = n;
    int err = native_report(n);
    native_current = outer;
    return err;
}

/* native_refresh(), with native_current set. */
static int native_report(struct native *n)
{
    if (n->dwfl)
        dwfl_end(n->dwfl);
    memset(n->cache, 0, sizeof(n->cache));
    memset(n->ranges, 0, sizeof(n->ranges));
    n->nmodules = 0;
    n->dwfl = dwfl_begin(&native_callbacks);
    if (!n->dwfl)
        return -ENOMEM;
    struct proc_maps *maps = NULL;
    int err = proc_maps_read(n->proc_root, n->pid, &maps);
    if (err)
        return err;
    dwfl_report_begin(n->dwfl);
    size_t reported = 0;
    for (size_t i = 0; i < proc_maps_count(maps); i++) {
        const struct proc_map_entry *e = proc_maps_get(maps, i);
        if (strcmp(e->path, "[vdso]") == 0 && e->end - e->start == native_own_vdso_len()) {
            int fd = native_vdso_fd((size_t)(e->end - e->start));
            if (fd >= 0 && dwfl_report_elf(n->dwfl, "[vdso]", "[vdso]", fd, e->start, false))
                reported++;
            else if (fd >= 0)
                close(fd);
            continue;
        }
        /* each file once, at its first mapping (file offset 0: where its
         * first segment, and so the library's address 0, is placed) */
        if (!proc_map_is_file(e) || e->offset != 0 || e->path[0] != '/' ||
            !native_file_runs(maps, e))
            continue;
        const char *via;
        int fd = pyruntime_open_mapped(n->proc_root, n->pid, e, &via);
        if (fd < 0)
            continue; /* its frames show as addresses */
        /* named as the process knows it, below its root (as its Python
         * files are): frames show that name, and its debug file is looked
         * for from there */
        const char *inside = pyruntime_inside_root(n->proc_root, n->pid, e->path);
        const char *name = inside ? inside : e->path;
        Dwfl_Module *m = dwfl_report_elf(n->dwfl, name, name, fd, e->start, false);
        if (!m) {
            close(fd); /* not an ELF file, or a clash: consumed only on success */
            continue;
        }
        reported++;
        GElf_Addr bias;
        Elf *elf = dwfl_module_getelf(m, &bias);
        void **ud = NULL;
        (void)dwfl_module_info(m, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
        struct native_module *mod;
        if (elf && native_symtab_bytes(elf) > NATIVE_MAX_SYMTAB &&
            (mod = native_module_of(n, ud))) {
            mod->no_symbols = true; /* its frames named by offset, from the CFI */
            n->counts.huge_symtabs++;
        }
    }
    proc_maps_free(maps);
    dwfl_report_end(n->dwfl, NULL, NULL);
    if (!reported || !dwfl_attach_state(n->dwfl, NULL, n->pid, &native_thread_callbacks, n))
        return -ENOENT;
    return 0;
}

int native_new(const char *proc_root, pid_t pid, struct native **out, char *why, size_t whylen)
{
    struct native *n = alloc_calloc(1, sizeof(*n));
    if (n)
        n->who = (struct tfile_who)TFILE_WHO_INIT;
    const char *root = proc_root ? proc_root : "/proc";
    size_t len = strlen(root) + 1;
    if (n)
        n->proc_root = alloc_malloc(len);
    if (!n || !n->proc_root) {
        native_free(n);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    memcpy(n->proc_root, root, len);
    n->pid = pid;
    /* (without its root or credentials, no debug file is looked for: every
     * lookup is refused with the reason) */
    (void)tfile_who_open(root, pid, &n->who);
    int err = native_refresh(n);
    if (err) {
        snprintf(why, whylen, "%s",
                 err == -ENOENT ? "no executable file of the process could be read"
                                : strerror(-err));
        native_free(n);
        return err;
    }
    *out = n;
    return 0;
}

void native_free(struct native *n)
{
    if (!n)
        return;
    if (n->dwfl)
        dwfl_end(n->dwfl);
    tfile_who_close(&n->who);
    alloc_free(n->proc_root);
    alloc_free(n);
}

struct native_files native_files(const struct native *n)
{
    return n->counts;
}

/* ---- unwinding ------------------------------------------------------------- */

static void native_resolve(struct native *n, Dwarf_Addr at, struct native_frame *f);

static int native_frame_cb(Dwfl_Frame *state, void *arg)
{
    struct native *n = arg;
    Dwarf_Addr pc;
    bool activation;
    if (n->n == n->max || !dwfl_frame_pc(state, &pc, &activation))
        return DWARF_CB_ABORT;
    /* a return address points after the call: look up the call itself */
    Dwarf_Addr at = activation || pc == 0 ? pc : pc - 1;
    struct native_frame *f = &n->frames[n->n++];
    *f = (struct native_frame){.pc = pc};
    Dwarf_Word sp = 0;
    if (dwfl_frame_reg(state, 7 /* rsp */, &sp) == 0)
        f->sp = sp;
    struct native_sym *c = &n->cache[(at * 0x9e3779b97f4a7c15ull) >> 52 & (NATIVE_CACHE_SIZE - 1)];
    if (c->at == at) {
        f->file = c->file;
        f->function = c->function;
        f->file_offset = c->file_offset;
        f->offset = c->offset;
        f->start_offset = c->start_offset;
        f->mapping = c->mapping;
        return DWARF_CB_OK;
    }
    native_resolve(n, at, f);
    *c = (struct native_sym){.at = at,
                             .file = f->file,
                             .function = f->function,
                             .file_offset = f->file_offset,
                             .offset = f->offset,
                             .start_offset = f->start_offset,
                             .mapping = f->mapping};
    return DWARF_CB_OK;
}

/* Module @m's mapping (made once per session, kept in its userdata slot @ud). */
static const struct frame_mapping *native_mapping(struct native *n, Dwfl_Module *m, void **ud,
                                                  const char *file, uint64_t start, uint64_t end)
{
    struct native_module *mod = native_module_of(n, ud);
    if (!mod)
        return NULL;
    if (mod->filled)
        return &mod->map;
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(m, &bits, &vaddr);
    size_t k = 0;
    for (int i = 0; i < len && k + 2 < sizeof(mod->build_id); i++) {
        static const char hex[] = "0123456789abcdef";
        mod->build_id[k++] = hex[bits[i] >> 4];
        mod->build_id[k++] = hex[bits[i] & 15];
    }
    mod->build_id[k] = '\0';
    mod->map = (struct frame_mapping){
        .file = file ? file : "", .build_id = mod->build_id, .start = start, .limit = end};
    mod->filled = true;
    return &mod->map;
}

/* Remembers that [lo, hi) resolves as @f did (module at @module_start). */
static void native_remember(struct native *n, uint64_t lo, uint64_t hi,
                            const struct native_frame *f, uint64_t module_start)
{
    if (hi <= lo)
        return;
    n->ranges[n->next_range++ % NATIVE_RANGES] =
        (struct native_range){.lo = lo,
                              .hi = hi,
                              .file = f->file,
                              .function = f->function,
                              .module_start = module_start,
                              .start_offset = f->start_offset,
                              .mapping = f->mapping};
}

/* Names address @at of frame @f: its module, symbol or CFI start. */
static void native_resolve(struct native *n, Dwarf_Addr at, struct native_frame *f)
{
    for (size_t i = 0; i < NATIVE_RANGES; i++) {
        const struct native_range *r = &n->ranges[i];
        if (at >= r->lo && at < r->hi) {
            f->file = r->file;
            f->function = r->function;
            f->file_offset = at - r->module_start;
            f->start_offset = r->start_offset;
            f->offset = f->function ? at - r->lo : 0;
            f->mapping = r->mapping;
            return;
        }
    }
    Dwfl_Module *m = dwfl_addrmodule(n->dwfl, at);
    if (!m)
        return;
    Dwarf_Addr start = 0, end = 0;
    void **ud = NULL;
    f->file = dwfl_module_info(m, &ud, &start, &end, NULL, NULL, NULL, NULL);
    f->file_offset = at - start;
    f->mapping = native_mapping(n, m, ud, f->file, start, end);
    GElf_Off off = 0;
    GElf_Sym sym;
    const struct native_module *mod = ud ? *ud : NULL;
    f->function =
        mod && mod->no_symbols ? NULL : dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
    f->offset = f->function ? off : 0;
    if (f->function) {
        f->start_offset = at - off - start;
        if (sym.st_size)
            native_remember(n, at - off, at - off + sym.st_size, f, start);
        return;
    }
    /* no symbol: the start of the FDE that covers it (.eh_frame) */
    Dwarf_Addr bias = 0;
    Dwarf_CFI *cfi = dwfl_module_eh_cfi(m, &bias);
    Dwarf_Frame *fde = NULL;
    if (cfi && dwarf_cfi_addrframe(cfi, at - bias, &fde) == 0) {
        Dwarf_Addr lo = 0, hi = 0;
        if (dwarf_frame_info(fde, &lo, &hi, NULL) >= 0 && lo + bias >= start) {
            f->start_offset = lo + bias - start;
            /* (no symbol anywhere in it, or the lookup would have named it) */
            native_remember(n, lo + bias, hi + bias, f, start);
        }
        alloc_free_foreign(fde); /* libdw allocated it */
    }
}

int native_unwind(struct native *n, const struct perfsample_record *s, struct native_frame *frames,
                  size_t max)
{
    n->complete = false;
    if (!s->regs_valid || !max)
        return 0;
    if (!dwfl_addrmodule(n->dwfl, s->regs[PERFSAMPLE_IP]))
        return -ENOENT;
    n->cur = s;
    n->frames = frames;
    n->max = max < NATIVE_MAX_FRAMES ? max : NATIVE_MAX_FRAMES;
    n->n = 0;
    struct native *outer = native_current;
    native_current = n;
    /* the end of what can be unwound (the stack copy, a frame without CFI)
     * is an error to libdwfl and the end of the stack to us */
    n->complete = dwfl_getthread_frames(n->dwfl, (pid_t)s->tid, native_frame_cb, n) == 0;
    native_current = outer;
    n->cur = NULL;
    return (int)n->n;
}

bool native_complete(const struct native *n)
{
    return n->complete;
}
