/* SPDX-License-Identifier: MIT */
/*
 * elf_sections.c: bounded ELF64 header reader (see elf_sections.h). Reads go
 * through one helper that checks every (offset, length) against the file size,
 * so the parser above it never has to think about reading out of bounds.
 */
#include "base/compat.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "discovery/elf_sections.h"

struct elf_file {
    uint16_t type;
    uint16_t machine;
    struct elf_tls_segment tls; /* PT_TLS, when the file has thread-local storage */
    uint64_t entry;
    uint64_t file_size;
    bool has_load;
    uint64_t load_base;
    size_t nsections;
    Elf64_Shdr *sections;
    size_t shstrtab_len;
    char *shstrtab;
};

/* Where the bytes come from: a buffer or a file descriptor. */
struct elf_src {
    const unsigned char *buf;
    int fd;
    uint64_t size;
};

static int elf_src_read(const struct elf_src *src, uint64_t off, void *dst, size_t len)
{
    if (off > src->size || len > src->size - off)
        return -ENOEXEC; /* the file claims data it does not have */
    if (src->buf) {
        memcpy(dst, src->buf + off, len);
        return 0;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(src->fd, (char *)dst + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO; /* the file shrank under us */
        done += (size_t)n;
    }
    return 0;
}

/* Reads @count entries of @entsize bytes at @off into a new array. */
static int elf_src_read_array(const struct elf_src *src, uint64_t off, size_t count, size_t entsize,
                              void **out)
{
    *out = NULL;
    if (count == 0)
        return 0;
    void *arr = alloc_calloc(count, entsize);
    if (!arr)
        return -ENOMEM;
    int err = elf_src_read(src, off, arr, count * entsize);
    if (err) {
        alloc_free(arr);
        return err;
    }
    *out = arr;
    return 0;
}

static int elf_parse_program_headers(const struct elf_src *src, const Elf64_Ehdr *eh,
                                     struct elf_file *ef)
{
    if (eh->e_phnum == 0)
        return 0;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum > ELF_MAX_SEGMENTS)
        return -ENOEXEC;
    Elf64_Phdr *ph = NULL;
    int err = elf_src_read_array(src, eh->e_phoff, eh->e_phnum, sizeof(*ph), (void **)&ph);
    if (err)
        return err;
    for (size_t i = 0; i < eh->e_phnum; i++) {
        uint64_t align = ph[i].p_align;
        if (ph[i].p_type == PT_TLS && !ef->tls.present) {
            /* p_align is 0, 1 or a power of two by the ELF spec; others are malformed */
            if (align > 1 && (align & (align - 1)) != 0)
                continue; /* no usable TLS: the file is read for the rest */
            ef->tls = (struct elf_tls_segment){.vaddr = ph[i].p_vaddr,
                                               .memsz = ph[i].p_memsz,
                                               .align = align ? align : 1,
                                               .present = true};
        }
        if (ph[i].p_type != PT_LOAD || ef->has_load)
            continue;
        if (align > 1 && (align & (align - 1)) != 0) {
            err = -ENOEXEC;
            break;
        }
        ef->load_base = align > 1 ? ph[i].p_vaddr - (ph[i].p_vaddr % align) : ph[i].p_vaddr;
        ef->has_load = true;
    }
    alloc_free(ph);
    return err;
}

static int elf_parse_section_headers(const struct elf_src *src, const Elf64_Ehdr *eh,
                                     struct elf_file *ef)
{
    if (eh->e_shoff == 0)
        return 0; /* stripped of section headers: nothing to find */
    if (eh->e_shentsize != sizeof(Elf64_Shdr))
        return -ENOEXEC;

    size_t nsec = eh->e_shnum;
    size_t shstrndx = eh->e_shstrndx;
    if (nsec == 0 || shstrndx == SHN_XINDEX) {
        /* extended numbering: the real values live in section header 0 */
        Elf64_Shdr first;
        int err = elf_src_read(src, eh->e_shoff, &first, sizeof(first));
        if (err)
            return err;
        if (nsec == 0)
            nsec = first.sh_size > ELF_MAX_SECTIONS ? ELF_MAX_SECTIONS + 1 : (size_t)first.sh_size;
        if (shstrndx == SHN_XINDEX)
            shstrndx = first.sh_link;
    }
    if (nsec > ELF_MAX_SECTIONS || shstrndx >= nsec)
        return -ENOEXEC;

    int err =
        elf_src_read_array(src, eh->e_shoff, nsec, sizeof(Elf64_Shdr), (void **)&ef->sections);
    if (err)
        return err;
    ef->nsections = nsec;

    const Elf64_Shdr *strsec = &ef->sections[shstrndx];
    if (strsec->sh_type == SHT_NOBITS || strsec->sh_size == 0 || strsec->sh_size > ELF_MAX_SHSTRTAB)
        return -ENOEXEC;
    ef->shstrtab_len = (size_t)strsec->sh_size;
    ef->shstrtab = alloc_malloc(ef->shstrtab_len + 1);
    if (!ef->shstrtab)
        return -ENOMEM;
    err = elf_src_read(src, strsec->sh_offset, ef->shstrtab, ef->shstrtab_len);
    if (err)
        return err;
    ef->shstrtab[ef->shstrtab_len] = '\0'; /* names at the end stay terminated */
    return 0;
}

static int elf_parse(const struct elf_src *src, struct elf_file **out)
{
    Elf64_Ehdr eh;
    int err = elf_src_read(src, 0, &eh, sizeof(eh));
    if (err)
        return err;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT)
        return -ENOEXEC;

    struct elf_file *ef = alloc_calloc(1, sizeof(*ef));
    if (!ef)
        return -ENOMEM;
    ef->type = eh.e_type;
    ef->machine = eh.e_machine;
    ef->entry = eh.e_entry;
    ef->file_size = src->size;
    err = elf_parse_program_headers(src, &eh, ef);
    if (!err)
        err = elf_parse_section_headers(src, &eh, ef);
    if (err) {
        elf_file_free(ef);
        return err;
    }
    *out = ef;
    return 0;
}

int elf_file_open_fd(int fd, struct elf_file **out)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -ENOEXEC;
    struct elf_src src = {.buf = NULL, .fd = fd, .size = (uint64_t)st.st_size};
    return elf_parse(&src, out);
}

int elf_file_parse(const void *buf, size_t len, struct elf_file **out)
{
    struct elf_src src = {.buf = buf, .fd = -1, .size = len};
    return elf_parse(&src, out);
}

int elf_file_find_section(const struct elf_file *ef, const char *name, struct elf_section *out)
{
    size_t want = strlen(name);
    for (size_t i = 0; i < ef->nsections; i++) {
        const Elf64_Shdr *sh = &ef->sections[i];
        if (sh->sh_name >= ef->shstrtab_len)
            continue; /* a name outside the table names nothing */
        const char *have = ef->shstrtab + sh->sh_name;
        if (strnlen(have, ef->shstrtab_len - sh->sh_name) != want || memcmp(have, name, want))
            continue;
        out->addr = sh->sh_addr;
        out->offset = sh->sh_offset;
        out->size = sh->sh_size;
        out->type = sh->sh_type;
        out->flags = sh->sh_flags;
        return 0;
    }
    return -ENOENT;
}

int elf_file_load_base(const struct elf_file *ef, uint64_t *out)
{
    if (!ef->has_load)
        return -ENOENT;
    *out = ef->load_base;
    return 0;
}

/*
 * Calls @visit for each defined, named symbol of one symbol table (@symsec,
 * of type .dynsym or .symtab) with its name (@len bytes, within the string
 * table) and index, reading the table a bounded chunk at a time, until
 * @visit returns true. A malformed table is skipped (returns 0): the other
 * table, or the caller's fallback, may still do.
 */
static int elf_each_symbol(const struct elf_file *ef, const struct elf_src *src,
                           const Elf64_Shdr *symsec,
                           bool (*visit)(void *arg, const Elf64_Sym *sy, const char *name,
                                         size_t len, uint64_t index),
                           void *arg)
{
    if (symsec->sh_entsize != sizeof(Elf64_Sym) || symsec->sh_link >= ef->nsections)
        return 0;
    const Elf64_Shdr *strsec = &ef->sections[symsec->sh_link];
    if (strsec->sh_type != SHT_STRTAB || strsec->sh_size == 0 || strsec->sh_size > ELF_MAX_STRTAB)
        return 0;
    size_t strlen_ = (size_t)strsec->sh_size;
    char *str = alloc_malloc(strlen_ + 1);
    Elf64_Sym *syms = alloc_calloc(ELF_SYMS_PER_READ, sizeof(Elf64_Sym));
    int err = str && syms ? 0 : -ENOMEM;
    if (!err)
        err = elf_src_read(src, strsec->sh_offset, str, strlen_);
    if (err == -ENOEXEC)
        err = 0, strlen_ = 0; /* the string table is outside the file: skip the table */
    /* a table that claims more than the file holds is read as far as it goes */
    uint64_t avail = symsec->sh_offset < src->size ? src->size - symsec->sh_offset : 0;
    uint64_t bytes = symsec->sh_size < avail ? symsec->sh_size : avail;
    uint64_t count = strlen_ ? bytes / sizeof(Elf64_Sym) : 0;
    bool done = false;
    for (uint64_t at = 0; !err && !done && at < count; at += ELF_SYMS_PER_READ) {
        size_t batch = count - at < ELF_SYMS_PER_READ ? (size_t)(count - at) : ELF_SYMS_PER_READ;
        err = elf_src_read(src, symsec->sh_offset + at * sizeof(Elf64_Sym), syms,
                           batch * sizeof(Elf64_Sym));
        for (size_t i = 0; !err && !done && i < batch; i++) {
            const Elf64_Sym *sy = &syms[i];
            if (sy->st_shndx == SHN_UNDEF || sy->st_name == 0 || sy->st_name >= strlen_)
                continue;
            const char *name = str + sy->st_name;
            done = visit(arg, sy, name, strnlen(name, strlen_ - sy->st_name), at + i);
        }
    }
    alloc_free(syms);
    alloc_free(str);
    return err;
}

/* elf_find_symbols()'s names, and what was found of them */
struct elf_wanted {
    const char *const *names;
    size_t n;
    struct elf_symbol *out;
};

static bool elf_visit_wanted(void *arg, const Elf64_Sym *sy, const char *name, size_t len,
                             uint64_t index)
{
    (void)index;
    struct elf_wanted *w = arg;
    for (size_t k = 0; k < w->n; k++) {
        if (w->out[k].found || strlen(w->names[k]) != len || memcmp(w->names[k], name, len))
            continue;
        w->out[k].value = sy->st_value;
        w->out[k].size = sy->st_size;
        w->out[k].found = true;
    }
    return false;
}

/* One symbol table: fills the names still missing. */
static int elf_scan_symtab(const struct elf_file *ef, const struct elf_src *src,
                           const Elf64_Shdr *symsec, const char *const *names, size_t n,
                           struct elf_symbol *out)
{
    struct elf_wanted w = {.names = names, .n = n, .out = out};
    return elf_each_symbol(ef, src, symsec, elf_visit_wanted, &w);
}

static int elf_find_symbols(const struct elf_file *ef, const struct elf_src *src,
                            const char *const *names, size_t n, struct elf_symbol *out)
{
    for (size_t k = 0; k < n; k++)
        out[k] = (struct elf_symbol){0};
    static const uint32_t order[] = {SHT_DYNSYM, SHT_SYMTAB};
    for (size_t o = 0; o < PYPROFD_ARRAY_SIZE(order); o++) {
        for (size_t i = 0; i < ef->nsections; i++) {
            if (ef->sections[i].sh_type != order[o])
                continue;
            int err = elf_scan_symtab(ef, src, &ef->sections[i], names, n, out);
            if (err)
                return err;
        }
    }
    return 0;
}

int elf_file_find_symbols_fd(const struct elf_file *ef, int fd, const char *const *names, size_t n,
                             struct elf_symbol *out)
{
    struct elf_src src = {.buf = NULL, .fd = fd, .size = ef->file_size};
    return elf_find_symbols(ef, &src, names, n, out);
}

int elf_file_find_symbols(const struct elf_file *ef, const void *buf, size_t len,
                          const char *const *names, size_t n, struct elf_symbol *out)
{
    struct elf_src src = {.buf = buf, .fd = -1, .size = len};
    return elf_find_symbols(ef, &src, names, n, out);
}

uint16_t elf_file_type(const struct elf_file *ef)
{
    return ef->type;
}

uint64_t elf_file_entry(const struct elf_file *ef)
{
    return ef->entry;
}

bool elf_file_tls(const struct elf_file *ef, struct elf_tls_segment *out)
{
    *out = ef->tls;
    return ef->tls.present;
}

/* ---- a thread-local symbol and the relocations that reach it ------------------ */

/* x86-64's TLS relocation types (the psABI's numbers; elf.h has them too). */
enum {
    ELF_R_DTPMOD64 = 16, /* module id into a GOT word (general dynamic) */
    ELF_R_DTPOFF64 = 17, /* offset in the module's block into the next */
    ELF_R_TPOFF64 = 18,  /* offset from the thread pointer (initial exec) */
    ELF_R_TLSDESC = 36,  /* a two-word descriptor (TLSDESC) */
};

/* elf_tls_symbol_index()'s name, and where its symbol goes */
struct elf_wanted_tls {
    const char *name;
    struct elf_tls_ref *out;
    uint64_t index;
};

static bool elf_visit_tls(void *arg, const Elf64_Sym *sy, const char *name, size_t len,
                          uint64_t index)
{
    struct elf_wanted_tls *w = arg;
    if (ELF64_ST_TYPE(sy->st_info) != STT_TLS || strlen(w->name) != len ||
        memcmp(name, w->name, len) != 0)
        return false;
    w->out->value = sy->st_value;
    w->out->size = sy->st_size;
    w->out->found = true;
    w->index = index;
    return true;
}

/* The index in .dynsym of the defined STT_TLS symbol @name, or 0 (not there). */
static int elf_tls_symbol_index(const struct elf_file *ef, const struct elf_src *src,
                                const Elf64_Shdr *symsec, const char *name, struct elf_tls_ref *out,
                                uint64_t *index)
{
    struct elf_wanted_tls w = {.name = name, .out = out};
    int err = elf_each_symbol(ef, src, symsec, elf_visit_tls, &w);
    *index = w.index;
    return err;
}

/* The relocations of one SHT_RELA section that name symbol @index. */
static int elf_tls_scan_rela(const struct elf_src *src, const Elf64_Shdr *sec, uint64_t index,
                             struct elf_tls_ref *out)
{
    if (sec->sh_entsize != sizeof(Elf64_Rela))
        return 0;
    Elf64_Rela *r = alloc_calloc(ELF_SYMS_PER_READ, sizeof(*r));
    if (!r)
        return -ENOMEM;
    uint64_t avail = sec->sh_offset < src->size ? src->size - sec->sh_offset : 0;
    uint64_t count = (sec->sh_size < avail ? sec->sh_size : avail) / sizeof(*r);
    int err = 0;
    for (uint64_t at = 0; !err && at < count && at < ELF_MAX_RELOCS; at += ELF_SYMS_PER_READ) {
        size_t batch = count - at < ELF_SYMS_PER_READ ? (size_t)(count - at) : ELF_SYMS_PER_READ;
        err = elf_src_read(src, sec->sh_offset + at * sizeof(*r), r, batch * sizeof(*r));
        for (size_t i = 0; !err && i < batch; i++) {
            if (ELF64_R_SYM(r[i].r_info) != index)
                continue;
            switch (ELF64_R_TYPE(r[i].r_info)) {
            case ELF_R_TLSDESC:
                out->desc = r[i].r_offset;
                out->desc_addend = r[i].r_addend;
                break;
            case ELF_R_DTPMOD64:
                out->gd_module = r[i].r_offset;
                break;
            case ELF_R_DTPOFF64:
                out->gd_offset = r[i].r_offset;
                break;
            case ELF_R_TPOFF64:
                out->ie = r[i].r_offset;
                out->ie_addend = r[i].r_addend;
                break;
            default:
                break;
            }
        }
    }
    alloc_free(r);
    return err;
}

static int elf_find_tls(const struct elf_file *ef, const struct elf_src *src, const char *name,
                        struct elf_tls_ref *out)
{
    *out = (struct elf_tls_ref){0};
    if (!ef->tls.present || ef->machine != EM_X86_64)
        return 0;
    const Elf64_Shdr *dynsym = NULL;
    for (size_t i = 0; i < ef->nsections && !dynsym; i++) {
        if (ef->sections[i].sh_type == SHT_DYNSYM)
            dynsym = &ef->sections[i];
    }
    uint64_t index = 0;
    int err = dynsym ? elf_tls_symbol_index(ef, src, dynsym, name, out, &index) : 0;
    for (size_t i = 0; !err && index && i < ef->nsections; i++) {
        /* the dynamic relocations: those whose symbol table is .dynsym */
        const Elf64_Shdr *sec = &ef->sections[i];
        if (sec->sh_type == SHT_RELA && sec->sh_link < ef->nsections &&
            &ef->sections[sec->sh_link] == dynsym)
            err = elf_tls_scan_rela(src, sec, index, out);
    }
    return err;
}

int elf_file_find_tls_fd(const struct elf_file *ef, int fd, const char *name,
                         struct elf_tls_ref *out)
{
    struct elf_src src = {.buf = NULL, .fd = fd, .size = ef->file_size};
    return elf_find_tls(ef, &src, name, out);
}

int elf_file_find_tls(const struct elf_file *ef, const void *buf, size_t len, const char *name,
                      struct elf_tls_ref *out)
{
    struct elf_src src = {.buf = buf, .fd = -1, .size = len};
    return elf_find_tls(ef, &src, name, out);
}

void elf_file_free(struct elf_file *ef)
{
    if (!ef)
        return;
    alloc_free(ef->sections);
    alloc_free(ef->shstrtab);
    alloc_free(ef);
}
