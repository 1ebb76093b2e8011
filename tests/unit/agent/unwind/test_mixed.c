/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/mixed.c: C and Python frames joined at the entry
 * frames, over stacks written here in the shape the kernel's samples and the
 * unwinder give (C frames with stack pointers growing towards the root,
 * Python frames with an entry marker at the address of each entry frame):
 * one evaluation loop calling into C; C calling back into Python (a sorted()
 * key function) with the interpreter's frames between; a thread running
 * bytecode itself; the stack copy ending before the outermost loop; and the
 * reads disagreeing (an entry frame off the sampled stack, two in one C
 * frame, out of order), which must give no merge. Before 3.12, the same
 * joined at the C frames named as the loop (3.11's is_entry markers, 3.9's
 * one loop per frame), and their disagreements.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "unwind/mixed.h"

static struct native_frame cf(const char *name, uint64_t sp)
{
    return (struct native_frame){
        .pc = sp ^ 0x5555, .sp = sp, .function = name, .file = "/lib/x.so"};
}

static struct unwind_frame pyf(const char *name)
{
    return (struct unwind_frame){.kind = UNWIND_FRAME_PYTHON, .function = name, .file = "w.py"};
}

static struct unwind_frame entry(uint64_t addr)
{
    return (struct unwind_frame){
        .kind = UNWIND_FRAME_NATIVE, .function = "<native>", .file = "~", .frame_raddr = addr};
}

/* "a;b;c" of @f (leaf first), for comparing */
static const char *names(const struct unwind_frame *f, size_t n)
{
    static char buf[1024];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof(buf); i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ";" : "", f[i].function);
    return buf;
}

static struct mixed *m;

static int setup(void **state)
{
    (void)state;
    return mixed_new(&m);
}

static int teardown(void **state)
{
    (void)state;
    mixed_free(m);
    return 0;
}

/* hash_loop -> sha256.update -> SHA256_Update, under <module> */
static void test_one_loop(void **state)
{
    (void)state;
    struct native_frame c[] = {cf("SHA256_Update", 0x1000),
                               cf("EVP_update", 0x1100),
                               cf(NULL, 0x1200) /* the loop, unnamed */,
                               cf("PyEval_EvalCode", 0x1800),
                               cf("Py_RunMain", 0x1900),
                               cf("main", 0x1a00)};
    struct unwind_frame py[] = {pyf("hash_loop"), pyf("<module>"), entry(0x1300)};
    const struct unwind_frame *out;
    size_t n;
    assert_int_equal(mixed_merge(m, c, 6, false, py, 3, &out, &n), MIXED_OK);
    assert_string_equal(
        names(out, n),
        "SHA256_Update;EVP_update;hash_loop;<module>;PyEval_EvalCode;Py_RunMain;main");
    assert_int_equal(out[0].kind, UNWIND_FRAME_C);
    assert_int_equal(out[0].pc, 0x1000 ^ 0x5555);
    assert_string_equal(out[0].file, "/lib/x.so");
    assert_int_equal(out[2].kind, UNWIND_FRAME_PYTHON);
}

/* sorted(key=k): k's loop above builtin_sorted, above the outer loop */
static void test_callback(void **state)
{
    (void)state;
    struct native_frame c[] = {cf("memcpy", 0x1000),          cf(NULL, 0x1080) /* inner loop */,
                               cf("_PyEval_Vector", 0x1400),  cf("list_sort", 0x1480),
                               cf("builtin_sorted", 0x1500),  cf(NULL, 0x1600) /* outer loop */,
                               cf("PyEval_EvalCode", 0x1a00), cf("main", 0x1b00)};
    struct unwind_frame py[] = {pyf("key"), entry(0x1100), pyf("sort_them"), pyf("<module>"),
                                entry(0x1700)};
    const struct unwind_frame *out;
    size_t n;
    assert_int_equal(mixed_merge(m, c, 8, false, py, 5, &out, &n), MIXED_OK);
    assert_string_equal(names(out, n), "memcpy;key;_PyEval_Vector;list_sort;builtin_sorted;"
                                       "sort_them;<module>;PyEval_EvalCode;main");
    /* without C frames: the Python stack with <native> where C called back */
    n = mixed_python_only(m, py, 5, &out);
    assert_string_equal(names(out, n), "key;<native>;sort_them;<module>");
    assert_int_equal(out[1].frame_raddr, 0);
}

/* the thread runs bytecode: the loop is the leaf */
static void test_in_bytecode(void **state)
{
    (void)state;
    struct native_frame c[] = {cf(NULL, 0x1000), cf("PyEval_EvalCode", 0x1400), cf("main", 0x1500)};
    struct unwind_frame py[] = {pyf("fib"), pyf("fib"), pyf("<module>"), entry(0x1200)};
    const struct unwind_frame *out;
    size_t n;
    assert_int_equal(mixed_merge(m, c, 3, false, py, 4, &out, &n), MIXED_OK);
    assert_string_equal(names(out, n), "fib;fib;<module>;PyEval_EvalCode;main");
}

/* the copy ends inside the inner loop's caller: the outer Python frames follow a marker */
static void test_cut(void **state)
{
    (void)state;
    struct native_frame c[] = {cf("deflate", 0x1000), cf(NULL, 0x1100), cf("call", 0x1300)};
    struct unwind_frame py[] = {pyf("inner"), entry(0x1200), pyf("outer"), pyf("<module>"),
                                entry(0x9000)};
    const struct unwind_frame *out;
    size_t n;
    assert_int_equal(mixed_merge(m, c, 3, false, py, 5, &out, &n), MIXED_CUT);
    assert_string_equal(names(out, n), "deflate;inner;call;<native>;outer;<module>");
}

/* a thread with no Python: its C frames */
static void test_c_only(void **state)
{
    (void)state;
    struct native_frame c[] = {cf("poll", 0x1000), cf("worker", 0x1100)};
    const struct unwind_frame *out;
    size_t n;
    assert_int_equal(mixed_merge(m, c, 2, false, NULL, 0, &out, &n), MIXED_OK);
    assert_string_equal(names(out, n), "poll;worker");
}

/* the two reads disagree: nothing is merged */
static void test_disagree(void **state)
{
    (void)state;
    struct native_frame c[] = {cf("SHA256_Update", 0x1000), cf(NULL, 0x1200),
                               cf("PyEval_EvalCode", 0x1800), cf("main", 0x1900)};
    const struct unwind_frame *out = NULL;
    size_t n = 0;
    /* an entry frame below the sampled stack pointer: a loop entered since */
    struct unwind_frame below[] = {pyf("f"), entry(0x0f00), pyf("<module>"), entry(0x1300)};
    assert_int_equal(mixed_merge(m, c, 4, false, below, 4, &out, &n), MIXED_DISAGREE);
    /* two entry frames in one C frame */
    struct unwind_frame same[] = {pyf("f"), entry(0x1210), pyf("<module>"), entry(0x1300)};
    assert_int_equal(mixed_merge(m, c, 4, false, same, 4, &out, &n), MIXED_DISAGREE);
    /* out of order */
    struct unwind_frame order[] = {pyf("f"), entry(0x1850), pyf("<module>"), entry(0x1300)};
    assert_int_equal(mixed_merge(m, c, 4, false, order, 4, &out, &n), MIXED_DISAGREE);
    /* Python frames but no C frames */
    struct unwind_frame ok[] = {pyf("f"), entry(0x1300)};
    assert_int_equal(mixed_merge(m, c, 0, false, ok, 2, &out, &n), MIXED_DISAGREE);
    /* C stack pointers that do not grow towards the root */
    struct native_frame bad[] = {cf("a", 0x1000), cf("b", 0x0900), cf("c", 0x1800)};
    assert_int_equal(mixed_merge(m, bad, 3, false, ok, 2, &out, &n), MIXED_DISAGREE);
    assert_null(out);
    /* a Python stack without entry addresses (before 3.12), C frames down to main
     * and none named as the loop */
    struct unwind_frame old[] = {pyf("f"), entry(0)};
    assert_int_equal(mixed_merge(m, c, 4, true, old, 2, &out, &n), MIXED_NO_ENTRY);
}

#define LOOP "_PyEval_EvalFrameDefault"

/*
 * Before 3.12, by the loop's name. 3.11: a sorted() key function; each
 * stretch ends at an is_entry marker without an address.
 */
static void test_by_name_311(void **state)
{
    (void)state;
    struct native_frame c[] = {
        cf("SHA256_Update", 0x1000),  cf(LOOP, 0x1100), cf("list_sort", 0x1200),
        cf("builtin_sorted", 0x1300), cf(LOOP, 0x1400), cf("PyEval_EvalCode", 0x1500),
        cf("Py_RunMain", 0x1600),
    };
    struct unwind_frame py[] = {pyf("key"), entry(0), pyf("sort_it"), pyf("<module>"), entry(0)};
    const struct unwind_frame *out = NULL;
    size_t n = 0;
    assert_int_equal(mixed_merge(m, c, 7, true, py, 5, &out, &n), MIXED_OK);
    assert_string_equal(names(out, n), "SHA256_Update;key;list_sort;builtin_sorted;sort_it;"
                                       "<module>;PyEval_EvalCode;Py_RunMain");
    /* the copy ended inside the interpreter: the rest is Python, after a marker */
    assert_int_equal(mixed_merge(m, c, 3, false, py, 5, &out, &n), MIXED_CUT);
    assert_string_equal(names(out, n), "SHA256_Update;key;list_sort;<native>;sort_it;<module>");
    /* ... but the whole C stack with fewer loops than stretches: they disagree */
    assert_int_equal(mixed_merge(m, c, 3, true, py, 5, &out, &n), MIXED_DISAGREE);
    /* more loops than stretches */
    struct unwind_frame one[] = {pyf("key"), entry(0)};
    assert_int_equal(mixed_merge(m, c, 7, true, one, 2, &out, &n), MIXED_DISAGREE);
    /* entry markers with and without addresses: not one interpreter's */
    struct unwind_frame mixed_kinds[] = {pyf("key"), entry(0), pyf("<module>"), entry(0x1450)};
    assert_int_equal(mixed_merge(m, c, 7, true, mixed_kinds, 4, &out, &n), MIXED_DISAGREE);
    /* no C frame by the loop's name (a build without the symbol): nothing to join at */
    struct native_frame anon[] = {cf("SHA256_Update", 0x1000), cf(NULL, 0x1100),
                                  cf("Py_RunMain", 0x1600)};
    assert_int_equal(mixed_merge(m, anon, 3, true, py, 5, &out, &n), MIXED_NO_ENTRY);
}

/* 3.9, 3.10: no markers; each frame object has its own loop */
static void test_by_name_39(void **state)
{
    (void)state;
    struct native_frame c[] = {
        cf("deflate", 0x1000), cf("zlib_compress", 0x1080),
        cf(LOOP, 0x1100),      cf("_PyFunction_Vectorcall", 0x1200),
        cf(LOOP, 0x1300),      cf("PyEval_EvalCode", 0x1400),
        cf("main", 0x1500),
    };
    struct unwind_frame py[] = {pyf("deflate_loop"), pyf("<module>")};
    const struct unwind_frame *out = NULL;
    size_t n = 0;
    assert_int_equal(mixed_merge(m, c, 7, true, py, 2, &out, &n), MIXED_OK);
    assert_string_equal(names(out, n), "deflate;zlib_compress;deflate_loop;_PyFunction_Vectorcall;"
                                       "<module>;PyEval_EvalCode;main");
    /* a Python frame more than the C stack has loops */
    struct unwind_frame deeper[] = {pyf("inner"), pyf("deflate_loop"), pyf("<module>")};
    assert_int_equal(mixed_merge(m, c, 7, true, deeper, 3, &out, &n), MIXED_DISAGREE);
    /* one fewer */
    struct unwind_frame shallower[] = {pyf("<module>")};
    assert_int_equal(mixed_merge(m, c, 7, true, shallower, 1, &out, &n), MIXED_DISAGREE);
}

/*
 * Issue 37: a C extension recursing deeper than the frames unwound
 * (NATIVE_MAX_FRAMES, or the stack copy): no loop among the C frames. From
 * 3.12 on the entry frame's address lies beyond them: cut. Before 3.12 the
 * same cut, by name: the leaf C frames, then the Python frames after a
 * marker (it was "Python only": every C frame dropped, the leaf's with them).
 */
static void test_deep_c_is_cut(void **state)
{
    (void)state;
    static struct native_frame c[NATIVE_MAX_FRAMES];
    c[0] = cf("spin", 0x10000);
    for (size_t i = 1; i < NATIVE_MAX_FRAMES; i++)
        c[i] = cf("recurse", 0x10000 + 0x40 * i);
    const struct unwind_frame *out = NULL;
    size_t n = 0;
    /* 3.12+: the loop's entry frame far below the last C frame unwound */
    struct unwind_frame py312[] = {pyf("call_deep"), pyf("<module>"), entry(0x90000)};
    assert_int_equal(mixed_merge(m, c, NATIVE_MAX_FRAMES, false, py312, 3, &out, &n), MIXED_CUT);
    assert_int_equal(n, NATIVE_MAX_FRAMES + 3);
    assert_string_equal(out[0].function, "spin");
    assert_string_equal(out[NATIVE_MAX_FRAMES - 1].function, "recurse");
    assert_string_equal(names(out + NATIVE_MAX_FRAMES, 3), "<native>;call_deep;<module>");
    /* 3.11: its is_entry markers have no address */
    struct unwind_frame py311[] = {pyf("call_deep"), pyf("<module>"), entry(0)};
    assert_int_equal(mixed_merge(m, c, NATIVE_MAX_FRAMES, false, py311, 3, &out, &n), MIXED_CUT);
    assert_int_equal(n, NATIVE_MAX_FRAMES + 3);
    assert_string_equal(out[0].function, "spin");
    assert_int_equal(out[0].kind, UNWIND_FRAME_C);
    assert_string_equal(names(out + NATIVE_MAX_FRAMES, 3), "<native>;call_deep;<module>");
    /* ... with a C call back into Python further out: a marker there too */
    struct unwind_frame back[] = {pyf("call_deep"), entry(0), pyf("key"), pyf("<module>"),
                                  entry(0)};
    assert_int_equal(mixed_merge(m, c, NATIVE_MAX_FRAMES, false, back, 5, &out, &n), MIXED_CUT);
    assert_string_equal(names(out + NATIVE_MAX_FRAMES, 5),
                        "<native>;call_deep;<native>;key;<module>");
    /* 3.9, 3.10: no markers, one loop per frame */
    struct unwind_frame py39[] = {pyf("call_deep"), pyf("<module>")};
    assert_int_equal(mixed_merge(m, c, NATIVE_MAX_FRAMES, false, py39, 2, &out, &n), MIXED_CUT);
    assert_int_equal(n, NATIVE_MAX_FRAMES + 3);
    assert_string_equal(out[0].function, "spin");
    assert_string_equal(names(out + NATIVE_MAX_FRAMES, 3), "<native>;call_deep;<module>");
    /* a short stack the unwinding gave up on (no call-frame information): cut the same way */
    assert_int_equal(mixed_merge(m, c, 1, false, py311, 3, &out, &n), MIXED_CUT);
    assert_string_equal(names(out, n), "spin;<native>;call_deep;<module>");
    /* the same C frames reaching the outermost one: a build that names no loop */
    assert_int_equal(mixed_merge(m, c, NATIVE_MAX_FRAMES, true, py311, 3, &out, &n),
                     MIXED_NO_ENTRY);
    assert_int_equal(mixed_merge(m, c, NATIVE_MAX_FRAMES, true, py39, 2, &out, &n), MIXED_NO_ENTRY);
}

/* unnamed C frames are named by file and function start, not by address */
static void test_names(void **state)
{
    (void)state;
    char buf[128];
    struct native_frame f = {.pc = 0x7f0000004ece,
                             .file = "/usr/lib/libz.so.1",
                             .file_offset = 0x4ecd,
                             .start_offset = 0x4e80};
    assert_string_equal(mixed_c_name(&f, buf, sizeof(buf)), "libz.so.1+0x4e80");
    f.start_offset = 0;
    assert_string_equal(mixed_c_name(&f, buf, sizeof(buf)), "libz.so.1+0x4ecd");
    f.file = NULL;
    assert_string_equal(mixed_c_name(&f, buf, sizeof(buf)), "0x7f0000004ece");
    f.function = "deflate";
    assert_string_equal(mixed_c_name(&f, buf, sizeof(buf)), "deflate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_loop),    cmocka_unit_test(test_callback),
        cmocka_unit_test(test_in_bytecode), cmocka_unit_test(test_cut),
        cmocka_unit_test(test_c_only),      cmocka_unit_test(test_disagree),
        cmocka_unit_test(test_names),       cmocka_unit_test(test_by_name_311),
        cmocka_unit_test(test_by_name_39),  cmocka_unit_test(test_deep_c_is_cut),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
