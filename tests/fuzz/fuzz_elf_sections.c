/* SPDX-License-Identifier: MIT */
/* Fuzz target: ELF headers (agent/discovery/elf_sections.c). */
#include "base/compat.h"

#include "discovery/elf_sections.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct elf_file *ef = NULL;
    if (elf_file_parse(data, size, &ef) == 0) {
        struct elf_section sec;
        uint64_t base;
        int found = 0;
        found += elf_file_find_section(ef, ".PyRuntime", &sec) == 0;
        found += elf_file_find_section(ef, ".AsyncioDebug", &sec) == 0;
        found += elf_file_load_base(ef, &base) == 0;
        PYPROFD_ASSERT(found <= 3 && elf_file_type(ef) == elf_file_type(ef));
        static const char *const names[] = {"_PyRuntime", "Py_Version", "PyCode_Type"};
        struct elf_symbol sym[3];
        int rc = elf_file_find_symbols(ef, data, size, names, 3, sym);
        PYPROFD_ASSERT(rc == 0 || rc == -ENOMEM); /* malformed tables are skipped, not errors */
        elf_file_free(ef);
    }
    return 0;
}
