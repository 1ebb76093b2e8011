/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/elf_sections.c: a hand-built minimal ELF image,
 * malformed variants of it, and real files built by the toolchain.
 */
#include "base/compat.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "discovery/elf_sections.h"
#include "test_util.h"

/* Layout of the hand-built image: ehdr | phdr | .PyRuntime data | shstrtab | shdrs */
struct mini_elf {
    Elf64_Ehdr eh;
    Elf64_Phdr ph;
    unsigned char runtime[24];
    char shstrtab[32];
    Elf64_Shdr sh[3];
};

static const char mini_names[] = "\0.PyRuntime\0.shstrtab";

static void mini_build(struct mini_elf *m)
{
    memset(m, 0, sizeof(*m));
    memcpy(m->eh.e_ident, ELFMAG, SELFMAG);
    m->eh.e_ident[EI_CLASS] = ELFCLASS64;
    m->eh.e_ident[EI_DATA] = ELFDATA2LSB;
    m->eh.e_ident[EI_VERSION] = EV_CURRENT;
    m->eh.e_type = ET_EXEC;
    m->eh.e_machine = EM_X86_64;
    m->eh.e_version = EV_CURRENT;
    m->eh.e_phoff = offsetof(struct mini_elf, ph);
    m->eh.e_shoff = offsetof(struct mini_elf, sh);
    m->eh.e_ehsize = sizeof(Elf64_Ehdr);
    m->eh.e_phentsize = sizeof(Elf64_Phdr);
    m->eh.e_phnum = 1;
    m->eh.e_shentsize = sizeof(Elf64_Shdr);
    m->eh.e_shnum = 3;
    m->eh.e_shstrndx = 2;
    m->ph.p_type = PT_LOAD;
    m->ph.p_vaddr = 0x400123; /* rounded down to 0x400000 by its alignment */
    m->ph.p_align = 0x1000;
    memcpy(m->runtime, "xdebugpy", 8);
    memcpy(m->shstrtab, mini_names, sizeof(mini_names));
    m->sh[1].sh_name = 1;
    m->sh[1].sh_type = SHT_PROGBITS;
    m->sh[1].sh_flags = SHF_ALLOC | SHF_WRITE;
    m->sh[1].sh_addr = 0x4b1000;
    m->sh[1].sh_offset = offsetof(struct mini_elf, runtime);
    m->sh[1].sh_size = sizeof(m->runtime);
    m->sh[2].sh_name = 12;
    m->sh[2].sh_type = SHT_STRTAB;
    m->sh[2].sh_offset = offsetof(struct mini_elf, shstrtab);
    m->sh[2].sh_size = sizeof(mini_names);
}

static void test_elf_sections__finds_section_and_load_base(void **state)
{
    (void)state;
    struct mini_elf m;
    mini_build(&m);
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
    assert_int_equal(elf_file_type(ef), ET_EXEC);
    struct elf_section sec;
    assert_int_equal(elf_file_find_section(ef, ".PyRuntime", &sec), 0);
    assert_true(sec.addr == 0x4b1000);
    assert_int_equal(sec.size, 24);
    assert_int_equal(sec.type, SHT_PROGBITS);
    assert_true(sec.flags == (SHF_ALLOC | SHF_WRITE));
    assert_int_equal(sec.offset, offsetof(struct mini_elf, runtime));
    uint64_t base = 0;
    assert_int_equal(elf_file_load_base(ef, &base), 0);
    assert_true(base == 0x400000);
    assert_int_equal(elf_file_find_section(ef, ".PyRunt", &sec), -ENOENT);
    assert_int_equal(elf_file_find_section(ef, ".AsyncioDebug", &sec), -ENOENT);
    elf_file_free(ef);
    elf_file_free(NULL);
}

static void expect_malformed(struct mini_elf *m, size_t len)
{
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_parse(m, len, &ef), -ENOEXEC);
    assert_null(ef);
}

static void test_elf_sections__rejects_malformed_headers(void **state)
{
    (void)state;
    struct mini_elf m;

    mini_build(&m);
    m.eh.e_ident[EI_MAG1] = 'X';
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.eh.e_ident[EI_CLASS] = ELFCLASS32;
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.eh.e_ident[EI_DATA] = ELFDATA2MSB;
    expect_malformed(&m, sizeof(m));

    mini_build(&m); /* truncated inside the section headers */
    expect_malformed(&m, sizeof(m) - 1);

    mini_build(&m); /* truncated inside the ELF header */
    expect_malformed(&m, 20);

    mini_build(&m);
    m.eh.e_shstrndx = 3;
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.eh.e_shentsize = 32;
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.eh.e_phentsize = 8;
    expect_malformed(&m, sizeof(m));

    mini_build(&m); /* header table far beyond the end of the file */
    m.eh.e_shoff = UINT64_MAX - 8;
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.sh[2].sh_offset = 1u << 30;
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.sh[2].sh_size = ELF_MAX_SHSTRTAB + 1;
    expect_malformed(&m, sizeof(m));

    mini_build(&m);
    m.ph.p_align = 0x1001;
    expect_malformed(&m, sizeof(m));

    mini_build(&m); /* extended numbering claiming too many sections */
    m.eh.e_shnum = 0;
    m.sh[0].sh_size = 1u << 20;
    expect_malformed(&m, sizeof(m));
}

static void test_elf_sections__ignores_names_outside_the_table(void **state)
{
    (void)state;
    struct mini_elf m;
    mini_build(&m);
    m.sh[1].sh_name = 4000; /* past the end of .shstrtab */
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
    struct elf_section sec;
    assert_int_equal(elf_file_find_section(ef, ".PyRuntime", &sec), -ENOENT);
    elf_file_free(ef);

    /* a name running to the end of an unterminated table does not match longer names */
    mini_build(&m);
    m.sh[2].sh_size = 10; /* "\0.PyRuntim" */
    assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
    assert_int_equal(elf_file_find_section(ef, ".PyRuntime", &sec), -ENOENT);
    elf_file_free(ef);
}

static void test_elf_sections__extended_numbering(void **state)
{
    (void)state;
    struct mini_elf m;
    mini_build(&m);
    m.eh.e_shnum = 0;
    m.sh[0].sh_size = 3;
    m.eh.e_shstrndx = SHN_XINDEX;
    m.sh[0].sh_link = 2;
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
    struct elf_section sec;
    assert_int_equal(elf_file_find_section(ef, ".PyRuntime", &sec), 0);
    elf_file_free(ef);
}

static void test_elf_sections__no_section_headers_finds_nothing(void **state)
{
    (void)state;
    struct mini_elf m;
    mini_build(&m);
    m.eh.e_shoff = 0;
    m.eh.e_phnum = 0;
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
    struct elf_section sec;
    uint64_t base;
    assert_int_equal(elf_file_find_section(ef, ".PyRuntime", &sec), -ENOENT);
    assert_int_equal(elf_file_load_base(ef, &base), -ENOENT);
    elf_file_free(ef);
}

static void test_elf_sections__reads_real_files(void **state)
{
    (void)state;
    char path[4096];
    int fd = open(test_fake_path("fake-python3.14", path, sizeof(path)), O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_open_fd(fd, &ef), 0);
    close(fd);
    struct elf_section sec;
    assert_int_equal(elf_file_find_section(ef, ".PyRuntime", &sec), 0);
    assert_true(sec.size >= 24);
    assert_int_equal(elf_file_find_section(ef, ".text", &sec), 0);
    elf_file_free(ef);

    fd = open(test_fake_path("libpython3.14-fake.so", path, sizeof(path)), O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(elf_file_open_fd(fd, &ef), 0);
    close(fd);
    uint64_t base = 1;
    assert_int_equal(elf_file_load_base(ef, &base), 0);
    assert_true(base == 0); /* shared objects are linked at 0 */
    assert_int_equal(elf_file_type(ef), ET_DYN);
    elf_file_free(ef);

    /* not an ELF file, and not a regular file */
    fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(elf_file_open_fd(fd, &ef), -ENOEXEC);
    close(fd);
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_int_equal(elf_file_open_fd(fd, &ef), -ENOEXEC);
    close(fd);
}

/* Layout of an image with symbols: ehdr | dynstr | dynsym | shstrtab | shdrs */
struct sym_elf {
    Elf64_Ehdr eh;
    char dynstr[48];
    Elf64_Sym dynsym[5];
    char shstrtab[32];
    Elf64_Shdr sh[4];
};

static const char sym_strs[] = "\0_PyRuntime\0Py_Version\0PyCode_Type\0Py_Versio";
static const char sym_shnames[] = "\0.dynsym\0.dynstr\0.shstrtab";

static void sym_build(struct sym_elf *m)
{
    memset(m, 0, sizeof(*m));
    memcpy(m->eh.e_ident, ELFMAG, SELFMAG);
    m->eh.e_ident[EI_CLASS] = ELFCLASS64;
    m->eh.e_ident[EI_DATA] = ELFDATA2LSB;
    m->eh.e_ident[EI_VERSION] = EV_CURRENT;
    m->eh.e_type = ET_DYN;
    m->eh.e_version = EV_CURRENT;
    m->eh.e_shoff = offsetof(struct sym_elf, sh);
    m->eh.e_shentsize = sizeof(Elf64_Shdr);
    m->eh.e_shnum = 4;
    m->eh.e_shstrndx = 3;
    memcpy(m->dynstr, sym_strs, sizeof(sym_strs));
    memcpy(m->shstrtab, sym_shnames, sizeof(sym_shnames));
    /* [1] _PyRuntime, [2] Py_Version, [3] PyCode_Type undefined (imported),
     * [4] a name whose bytes run to the table's end ("Py_Versio") */
    m->dynsym[1] =
        (Elf64_Sym){.st_name = 1, .st_shndx = 20, .st_value = 0xa5b740, .st_size = 0x28b20};
    m->dynsym[2] = (Elf64_Sym){.st_name = 12, .st_shndx = 16, .st_value = 0x8cc3e8, .st_size = 8};
    m->dynsym[3] = (Elf64_Sym){.st_name = 23, .st_shndx = SHN_UNDEF};
    m->dynsym[4] = (Elf64_Sym){.st_name = 35, .st_shndx = 16, .st_value = 0x1234};
    m->sh[1].sh_name = 1;
    m->sh[1].sh_type = SHT_DYNSYM;
    m->sh[1].sh_offset = offsetof(struct sym_elf, dynsym);
    m->sh[1].sh_size = sizeof(m->dynsym);
    m->sh[1].sh_entsize = sizeof(Elf64_Sym);
    m->sh[1].sh_link = 2;
    m->sh[2].sh_name = 9;
    m->sh[2].sh_type = SHT_STRTAB;
    m->sh[2].sh_offset = offsetof(struct sym_elf, dynstr);
    m->sh[2].sh_size = sizeof(sym_strs);
    m->sh[3].sh_name = 17;
    m->sh[3].sh_type = SHT_STRTAB;
    m->sh[3].sh_offset = offsetof(struct sym_elf, shstrtab);
    m->sh[3].sh_size = sizeof(sym_shnames);
}

static void test_elf_sections__finds_symbols(void **state)
{
    (void)state;
    static const char *const names[] = {"_PyRuntime", "Py_Version", "PyCode_Type", "Py_Versio",
                                        "PyUnicode_Type"};
    struct elf_symbol sym[5];
    struct sym_elf m;
    sym_build(&m);
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
    assert_int_equal(elf_file_find_symbols(ef, &m, sizeof(m), names, 5, sym), 0);
    assert_true(sym[0].found && sym[0].value == 0xa5b740 && sym[0].size == 0x28b20);
    assert_true(sym[1].found && sym[1].value == 0x8cc3e8);
    assert_false(sym[2].found); /* undefined here: not this file's */
    assert_true(sym[3].found && sym[3].value == 0x1234);
    assert_false(sym[4].found);
    elf_file_free(ef);

    /* a table whose string table is not one or lies outside the file, or whose
     * entries are the wrong size: skipped, nothing found, no error */
    for (int bad = 0; bad < 4; bad++) {
        sym_build(&m);
        if (bad == 0)
            m.sh[1].sh_link = 9;
        else if (bad == 1)
            m.sh[1].sh_entsize = 16;
        else if (bad == 2)
            m.sh[2].sh_offset = sizeof(m) - 4;
        else
            m.sh[1].sh_size = (uint64_t)1 << 40;
        assert_int_equal(elf_file_parse(&m, sizeof(m), &ef), 0);
        assert_int_equal(elf_file_find_symbols(ef, &m, sizeof(m), names, 5, sym), 0);
        if (bad == 3) /* read as far as the file goes */
            assert_true(sym[0].found && sym[0].value == 0xa5b740 && sym[1].found);
        else
            assert_false(sym[0].found || sym[1].found || sym[3].found);
        elf_file_free(ef);
    }
}

static void test_elf_sections__finds_symbols_in_real_files(void **state)
{
    (void)state;
    /* this test's own executable: its .symtab names main */
    static const char *const names[] = {"main", "elf_file_find_symbols_fd", "no_such_symbol"};
    struct elf_symbol sym[3];
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct elf_file *ef = NULL;
    assert_int_equal(elf_file_open_fd(fd, &ef), 0);
    assert_int_equal(elf_file_find_symbols_fd(ef, fd, names, 3, sym), 0);
    close(fd);
    assert_true(sym[0].found && sym[0].value != 0);
    assert_true(sym[1].found && sym[1].size > 0);
    assert_false(sym[2].found);
    elf_file_free(ef);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_sections__finds_section_and_load_base),
        cmocka_unit_test(test_elf_sections__rejects_malformed_headers),
        cmocka_unit_test(test_elf_sections__ignores_names_outside_the_table),
        cmocka_unit_test(test_elf_sections__extended_numbering),
        cmocka_unit_test(test_elf_sections__no_section_headers_finds_nothing),
        cmocka_unit_test(test_elf_sections__reads_real_files),
        cmocka_unit_test(test_elf_sections__finds_symbols),
        cmocka_unit_test(test_elf_sections__finds_symbols_in_real_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
