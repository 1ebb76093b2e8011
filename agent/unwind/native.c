/* SPDX-License-Identifier: MIT */
/*
 * native.c: native stacks from the kernel's samples, unwound with libdwfl
 * (see native.h).
 */
#include "base/compat.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/alloc.h"
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
};

struct native {
    char *proc_root;
    pid_t pid;
    Dwfl *dwfl;
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

static char *native_debuginfo_path;

static const Dwfl_Callbacks native_callbacks = {
    /* every module is reported with its file opened: find_elf is not asked */
    .find_elf = dwfl_linux_proc_find_elf,
    /* a separate debug file by build id or debuglink, when one is installed */
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &native_debuginfo_path,
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
        if (dwfl_report_elf(n->dwfl, e->path, e->path, fd, e->start, false))
            reported++;
        else
            close(fd); /* not an ELF file, or a clash: consumed only on success */
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
    alloc_free(n->proc_root);
    alloc_free(n);
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
    if (!ud)
        return NULL;
    if (*ud)
        return &((struct native_module *)*ud)->map;
    if (n->nmodules == NATIVE_MAX_MODULES)
        return NULL;
    struct native_module *mod = &n->modules[n->nmodules++];
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
    *ud = mod;
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
    f->function = dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
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
    /* the end of what can be unwound (the stack copy, a frame without CFI)
     * is an error to libdwfl and the end of the stack to us */
    n->complete = dwfl_getthread_frames(n->dwfl, (pid_t)s->tid, native_frame_cb, n) == 0;
    n->cur = NULL;
    return (int)n->n;
}

bool native_complete(const struct native *n)
{
    return n->complete;
}
