/* SPDX-License-Identifier: MIT */
/*
 * Replays memory images recorded from real CPython 3.9 to 3.15
 * processes (tests/fixtures/unwind/, made by
 * scripts/capture-unwind-fixtures.sh) through the fake backend and compares
 * the unwinder's result with the golden text recorded with them: a change in
 * how the unwinder reads or decodes real stacks shows up here without root
 * or a live interpreter. A second, warm-cache sample must give the same text.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "discovery/pyruntime.h"
#include "fixture.h"
#include "golden.h"
#include "memread_fake.h"
#include "python/pyabi.h"
#include "unwind/unwind.h"

static void replay_text(struct unwinder *u, unsigned flags, char *text, size_t cap)
{
    const struct unwind_result *r;
    enum sample_status st;
    assert_int_equal(unwinder_sample(u, flags, &r, &st), 0);
    memset(text, 0, cap);
    FILE *f = fmemopen(text, cap - 1, "w");
    assert_non_null(f);
    golden_write(r, f);
    fclose(f);
}

/* What replay_case() breaks before attaching (3.9 to 3.12 images only). */
enum replay_break {
    REPLAY_CLEAN,
    REPLAY_WRONG_CODE_TYPE,
    REPLAY_WRONG_STR_TYPE,
    REPLAY_MEMBERS_AGREE,    /* PyCode_Type's member table says what the layout says */
    REPLAY_MEMBERS_DISAGREE, /* ... and puts co_filename 8 bytes further */
    REPLAY_SIZE_DISAGREES,   /* ... and its tp_basicsize is not the layout's */
};

/*
 * Gives the image a PyCode_Type (the recordings hold none: no sample reads
 * it) whose tp_basicsize and one-member table agree with the generated
 * layout, or not, as @brk says.
 */
static void replay_fake_code_type(struct memread_fake *fake, const struct pyruntime *rt,
                                  enum replay_break brk)
{
    struct py_layout lay;
    char why[256];
    assert_int_equal(pyabi_layout_generated(&rt->version, pyabi_generated_for(rt->version.minor),
                                            &lay, why, sizeof(why)),
                     0);
    const uint64_t table_at = 0x7e0000000000ull, name_at = 0x7e0000010000ull;
    static uint8_t type[PYABI_TYPE_MEMBERS + 8], table[48 * PYABI_MEMBERDEF_SIZE];
    static char name[32] = "co_filename";
    memset(type, 0, sizeof(type));
    memset(table, 0, sizeof(table));
    uint64_t size = (lay.frame_objects ? lay.co_size : lay.co_adaptive) +
                    (brk == REPLAY_SIZE_DISAGREES ? 8 : 0);
    uint64_t off = lay.co_filename + (brk == REPLAY_MEMBERS_DISAGREE ? 8 : 0);
    memcpy(type + PYABI_TYPE_BASICSIZE, &size, 8);
    memcpy(type + PYABI_TYPE_MEMBERS, &table_at, 8);
    memcpy(table, &name_at, 8);
    memcpy(table + PYABI_MEMBERDEF_OFF, &off, 8);
    assert_int_equal(memread_fake_add(fake, rt->code_type, type, sizeof(type)), 0);
    assert_int_equal(memread_fake_add(fake, table_at, table, sizeof(table)), 0);
    assert_int_equal(memread_fake_add(fake, name_at, name, sizeof(name)), 0);
}

static void replay_case(const char *name, enum replay_break brk)
{
    char rel[256];
    size_t len;
    snprintf(rel, sizeof(rel), "unwind/%s/meta.txt", name);
    char *meta = (char *)fixture_load(rel, &len);
    assert_non_null(meta);
    uint64_t version, runtime, section;
    unsigned flags;
    assert_int_equal(sscanf(meta,
                            "version 0x%" SCNx64 " runtime 0x%" SCNx64 " section_size %" SCNu64
                            " flags %u",
                            &version, &runtime, &section, &flags),
                     4);
    /* 3.11, 3.12: no debug table; the symbols discovery found */
    struct pyruntime rt = {.raddr = runtime, .section_size = section, .initialized = true};
    const char *nt = strstr(meta, "no_table 1");
    if (nt)
        assert_int_equal(sscanf(nt,
                                "no_table 1 code_type 0x%" SCNx64 " unicode_type 0x%" SCNx64
                                " none_object 0x%" SCNx64,
                                &rt.code_type, &rt.unicode_type, &rt.none_object),
                         3);
    rt.no_table = nt != NULL;
    /* 3.9, 3.10: the process's own PID (its threads' TIDs are learnt from it) */
    const char *ns = strstr(meta, "ns_pid ");
    int ns_pid = 0;
    if (ns)
        assert_int_equal(sscanf(ns, "ns_pid %d", &ns_pid), 1);
    rt.ns_pid = ns_pid;
    alloc_free(meta);

    snprintf(rel, sizeof(rel), "unwind/%s/memory.bin", name);
    uint8_t *mem = fixture_load(rel, &len);
    assert_non_null(mem);
    struct memread_fake *fake;
    struct memread *mr;
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    for (size_t at = 0; at + 16 <= len;) {
        uint64_t hdr[2];
        memcpy(hdr, mem + at, sizeof(hdr));
        at += 16;
        assert_true(hdr[1] <= len - at);
        assert_int_equal(memread_fake_add(fake, hdr[0], mem + at, (size_t)hdr[1]), 0);
        at += (size_t)hdr[1];
    }
    alloc_free(mem);

    /* the version as discovery decodes it, free-threaded flag included */
    uint8_t head[PYVERSION_HEADER_SIZE];
    if (rt.no_table) {
        assert_int_equal(pyversion_from_hex(version, 0, &rt.version), 0);
    } else {
        assert_int_equal(memread_read(mr, runtime, head, sizeof(head)), 0);
        assert_int_equal(pyversion_decode(head, sizeof(head), &rt.version), 0);
    }
    assert_true(rt.version.hex == version);
    const char *dash = strchr(name, '-');
    assert_non_null(dash);
    assert_int_equal(rt.version.free_threaded, dash[-1] == 't'); /* "3.13t-threads" */
    struct unwinder *u = NULL;
    char why[256];
    if (brk == REPLAY_MEMBERS_AGREE) {
        replay_fake_code_type(fake, &rt, brk);
        assert_int_equal(unwinder_new(mr, &rt, &u, why, sizeof(why)), 0);
        /* the fake's co_filename (it overlays the type the capture holds) */
        assert_int_equal(unwinder_layout(u)->members_agreed, 1);
        unwinder_free(u);
        memread_free(mr);
        return;
    }
    if (brk == REPLAY_MEMBERS_DISAGREE || brk == REPLAY_SIZE_DISAGREES) {
        /* the binary's own member table contradicts the generated layout */
        replay_fake_code_type(fake, &rt, brk);
        assert_int_equal(unwinder_new(mr, &rt, &u, why, sizeof(why)), -EPROTO);
        assert_non_null(
            strstr(why, brk == REPLAY_SIZE_DISAGREES
                            ? "layout check failed: PyCode_Type says its objects are"
                            : "layout check failed: PyCode_Type says co_filename is at"));
        assert_null(u);
        memread_free(mr);
        return;
    }
    if (brk != REPLAY_CLEAN) {
        /* a layout that does not describe the process is refused at attach */
        assert_true(rt.no_table);
        if (brk == REPLAY_WRONG_CODE_TYPE)
            rt.code_type += 0x40;
        else
            rt.unicode_type += 0x40;
        assert_int_equal(unwinder_new(mr, &rt, &u, why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, "layout check failed"));
        assert_non_null(strstr(why, brk == REPLAY_WRONG_CODE_TYPE ? "PyCode_Type" : "no str"));
        assert_null(u);
        memread_free(mr);
        return;
    }
    if (unwinder_new(mr, &rt, &u, why, sizeof(why)))
        fail_msg("%s: %s", name, why);

    snprintf(rel, sizeof(rel), "unwind/%s/expected.txt", name);
    char *expected = (char *)fixture_load(rel, &len);
    assert_non_null(expected);
    static char text[1 << 16];
    replay_text(u, flags, text, sizeof(text));
    if (strcmp(text, expected) != 0)
        fail_msg("%s: got\n%s\nexpected\n%s", name, text, expected);
    replay_text(u, flags, text, sizeof(text)); /* warm cache */
    assert_string_equal(text, expected);
    alloc_free(expected);
    unwinder_free(u);
    memread_free(mr);
}

static void test_unwind_replay__recorded_stacks_match_golden(void **state)
{
    (void)state;
    size_t len;
    char *cases = (char *)fixture_load("unwind/CASES", &len);
    assert_non_null(cases);
    unsigned n = 0;
    bool seen[16] = {false}; /* by minor version */
    char *save = NULL;
    for (char *name = strtok_r(cases, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
        replay_case(name, REPLAY_CLEAN);
        unsigned minor = 0;
        if (sscanf(name, "3.%u", &minor) == 1 && minor < 16)
            seen[minor] = true;
        n++;
    }
    alloc_free(cases);
    assert_true(n >= 3);
    /* every version is covered: 3.9 to 3.12 by generated layouts */
    for (unsigned minor = 9; minor <= 15; minor++)
        if (!seen[minor])
            fail_msg("no recorded image of CPython 3.%u", minor);
}

/* 3.9 to 3.12: the check at attach, and the type objects' own member tables (thread state ->
 * interpreter, the running code object's type, its file name's type) against real images, with the
 * type addresses discovery would have found made wrong */
static void test_unwind_replay__layout_check_refuses(void **state)
{
    (void)state;
    static const char *const cases[] = {"3.9-threads",   "3.10-threads", "3.11-threads",
                                        "3.12-threads",  "3.9-callback", "3.10-callback",
                                        "3.11-callback", "3.12-callback"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        replay_case(cases[i], REPLAY_WRONG_CODE_TYPE);
        replay_case(cases[i], REPLAY_WRONG_STR_TYPE);
        replay_case(cases[i], REPLAY_MEMBERS_AGREE);
        replay_case(cases[i], REPLAY_MEMBERS_DISAGREE);
        replay_case(cases[i], REPLAY_SIZE_DISAGREES);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unwind_replay__recorded_stacks_match_golden),
        cmocka_unit_test(test_unwind_replay__layout_check_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
