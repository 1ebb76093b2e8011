/* SPDX-License-Identifier: MIT */
/*
 * elf_sections.h: the little ELF reading discovery needs: find a section by
 * name (".PyRuntime", later ".AsyncioDebug") and the load base of the file, so
 * the section's address in a process can be computed from where the file is
 * mapped:
 *
 *     runtime_raddr = lowest_mapping_start + section.addr - load_base
 *
 * where load_base is the first PT_LOAD segment's p_vaddr rounded down to its
 * alignment (0 for shared objects and PIE executables, typically 0x400000 for
 * a non-PIE executable).
 *
 * ELF files are untrusted input: only 64-bit little-endian files are
 * accepted; every header count, entry size, offset and name is checked against
 * the file size and the caps below before use. Malformed files fail with
 * -ENOEXEC; nothing reads outside the file.
 *
 * Ownership: struct elf_file owns copies of the headers it needs and keeps no
 * reference to the fd or buffer it was parsed from.
 *
 * Thread safety: an elf_file is immutable after parsing.
 */
#ifndef PYPROFD_DISCOVERY_ELF_SECTIONS_H
#define PYPROFD_DISCOVERY_ELF_SECTIONS_H

#include "base/compat.h"

/** Caps on what a file may declare; real binaries are far below them. */
#define ELF_MAX_SECTIONS 65535u
#define ELF_MAX_SEGMENTS 4096u
#define ELF_MAX_SHSTRTAB (1u << 20)

/** A section header, reduced to what callers use. */
struct elf_section {
    uint64_t addr;   /* sh_addr: virtual address in the file's own address space */
    uint64_t offset; /* sh_offset: position in the file */
    uint64_t size;   /* sh_size */
    uint32_t type;   /* sh_type (SHT_PROGBITS, SHT_NOBITS, ...) */
    uint64_t flags;  /* sh_flags (SHF_ALLOC: the section is in the loaded image) */
};

struct elf_file;

/**
 * Reads the ELF header, program headers, section headers and section-name
 * table from @a fd (borrowed; not kept) with pread. Returns 0 and the result in
 * @a out (caller owns it; elf_file_free()), -ENOEXEC if the file is not a
 * well-formed 64-bit little-endian ELF file, -EIO/-errno on read errors,
 * -ENOMEM.
 */
PYPROFD_WARN_UNUSED int elf_file_open_fd(int fd, struct elf_file **out);

/** Same as elf_file_open_fd() over the @a len bytes at @a buf (borrowed; not kept). */
PYPROFD_WARN_UNUSED int elf_file_parse(const void *buf, size_t len, struct elf_file **out);

/**
 * Finds the first section called @a name (e.g. ".PyRuntime"). Returns 0 and
 * fills @a out, or -ENOENT.
 */
PYPROFD_WARN_UNUSED int elf_file_find_section(const struct elf_file *ef, const char *name,
                                              struct elf_section *out);

/**
 * The load base: the first PT_LOAD's p_vaddr rounded down to its p_align.
 * Returns 0, or -ENOENT when the file has no PT_LOAD segment.
 */
PYPROFD_WARN_UNUSED int elf_file_load_base(const struct elf_file *ef, uint64_t *out);

/** A defined symbol's value and size, as found by elf_file_find_symbols(). */
struct elf_symbol {
    uint64_t value; /* st_value: address in the file's own address space */
    uint64_t size;  /* st_size */
    bool found;
};

/** Caps on a symbol table: entries read per pass, and its string table's size. */
#define ELF_SYMS_PER_READ 512u
#define ELF_MAX_STRTAB    (64u << 20)

/**
 * Looks up the @a n symbols named in @a names among the defined symbols of
 * .dynsym, then .symtab (a stripped file has only the former; a static
 * interpreter may have only the latter), reading the tables from @a fd
 * (borrowed; the descriptor @a ef was parsed from) a bounded chunk at a time.
 * Fills @a out[i] for each name; a name not found has found == false. A symbol
 * table whose entry size, string table link or string table size is malformed
 * or over the caps is skipped as if absent. Returns 0 (even when nothing was
 * found), -EIO/-errno on read errors, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int elf_file_find_symbols_fd(const struct elf_file *ef, int fd,
                                                 const char *const *names, size_t n,
                                                 struct elf_symbol *out);

/** Same as elf_file_find_symbols_fd() over the @a len bytes at @a buf (borrowed). */
PYPROFD_WARN_UNUSED int elf_file_find_symbols(const struct elf_file *ef, const void *buf,
                                              size_t len, const char *const *names, size_t n,
                                              struct elf_symbol *out);

/** e_type: ET_EXEC for a non-PIE executable, ET_DYN for shared objects and PIE. */
uint16_t elf_file_type(const struct elf_file *ef);
/** e_entry: the entry point in the file's own address space (what AT_ENTRY is, less the load bias).
 */
uint64_t elf_file_entry(const struct elf_file *ef);

/** A file's PT_TLS segment: the image of its thread-local storage block. */
struct elf_tls_segment {
    uint64_t vaddr; /* p_vaddr */
    uint64_t memsz; /* the block's size (p_memsz) */
    uint64_t align; /* p_align, at least 1 */
    bool present;
};

/** Fills @a out with the file's PT_TLS; false when it has none. */
bool elf_file_tls(const struct elf_file *ef, struct elf_tls_segment *out);

/** Relocations looked at per symbol search: more than any real library has. */
#define ELF_MAX_RELOCS (4u << 20)

/**
 * A thread-local symbol a file defines and the dynamic relocations through
 * which the file itself reaches it (x86-64), as the dynamic linker filled
 * them in the process: each *_got field is the r_offset (an address in the
 * file's own address space) of a GOT word, 0 when the file has no such
 * relocation. Which is present tells the TLS access model the code was built
 * with: desc (TLSDESC, -mtls-dialect=gnu2: a two-word descriptor), gd_module
 * and gd_offset (the legacy general dynamic model: a module id and the
 * offset in its block), ie (initial exec: the offset from the thread
 * pointer). A variable reached only with local exec (an executable's own)
 * has none: its place follows from the PT_TLS segment alone.
 */
struct elf_tls_ref {
    uint64_t value; /* st_value: the offset of the variable in the file's TLS block */
    uint64_t size;  /* st_size */
    uint64_t desc;
    int64_t desc_addend;
    uint64_t gd_module;
    uint64_t gd_offset;
    uint64_t ie;
    int64_t ie_addend;
    bool found; /* the file defines it (STT_TLS, in .dynsym) */
};

/**
 * Looks for the defined STT_TLS symbol @a name in .dynsym of an x86-64 file
 * with a PT_TLS segment (anything else: not found, no I/O beyond the headers
 * already parsed) and for the relocations in its SHT_RELA sections that name
 * it, reading a bounded chunk at a time from @a fd (borrowed; the descriptor
 * @a ef was parsed from). Malformed tables are skipped as if absent. Returns
 * 0 (found or not: @a out->found), -EIO/-errno on read errors, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int elf_file_find_tls_fd(const struct elf_file *ef, int fd, const char *name,
                                             struct elf_tls_ref *out);

/** Same as elf_file_find_tls_fd() over the @a len bytes at @a buf (borrowed). */
PYPROFD_WARN_UNUSED int elf_file_find_tls(const struct elf_file *ef, const void *buf, size_t len,
                                          const char *name, struct elf_tls_ref *out);

/** Frees; NULL is a no-op. */
void elf_file_free(struct elf_file *ef);

#endif /* PYPROFD_DISCOVERY_ELF_SECTIONS_H */
