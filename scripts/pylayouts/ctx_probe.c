/* SPDX-License-Identifier: MIT */
/*
 * scripts/pylayouts/ctx_probe.c: compiled by scripts/gen-pyctx.sh against one
 * CPython version's own headers (with Py_BUILD_CORE, for the internal
 * structures), prints the layout of what a thread's context variables sit in
 * (the thread state's context, PyContext, ContextVar, the HAMT and its nodes,
 * dicts and their keys, instance attribute storage, tuples, ints, str) as the
 * body of a struct pyctx_layout (agent/python/pyctx.h). Nothing here runs in
 * pyprofd; it is a build tool.
 *
 * The HAMT node structs live in no header (Python/hamt.c); nor does 3.9's and
 * 3.10's dict keys struct (Objects/dict-common.h). They are declared below
 * from the field lists of those files, which name the same fields in the same
 * order in every version 3.9 to 3.15 (pycore_hamt.h has the bitmap node from
 * 3.12 on: it is used where it exists).
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#include <internal/pycore_context.h>
#include <internal/pycore_hamt.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_dict.h>
#endif
#include <internal/pycore_object.h>

#if PY_MINOR_VERSION <= 11
struct probe_bitmap {
    PyObject_VAR_HEAD uint32_t b_bitmap;
    PyObject *b_array[1];
};
#else
#define probe_bitmap _probe_bitmap_unused
typedef PyHamtNode_Bitmap probe_bitmap_t;
#endif
struct probe_array {
    PyObject_HEAD PyHamtNode *a_array[32];
    Py_ssize_t a_count;
};
struct probe_collision {
    PyObject_VAR_HEAD int32_t c_hash;
    PyObject *c_array[1];
};
#if PY_MINOR_VERSION <= 11
typedef struct probe_bitmap probe_bitmap_t;
#endif

#if PY_MINOR_VERSION <= 10
struct probe_keys {
    Py_ssize_t dk_refcnt;
    Py_ssize_t dk_size;
    void *dk_lookup;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
};
#define PROBE_ENTRY_SIZE  (3 * sizeof(void *))
#define PROBE_UENTRY_SIZE 0
#else
typedef PyDictKeysObject probe_keys_t;
#define PROBE_ENTRY_SIZE  sizeof(PyDictKeyEntry)
#define PROBE_UENTRY_SIZE sizeof(PyDictUnicodeEntry)
#endif
#if PY_MINOR_VERSION <= 10
typedef struct probe_keys probe_keys_t;
#endif

#define F(name, value)        printf("    .%s = %zd,\n", name, (Py_ssize_t)(value))
#define O(name, type, member) F(name, offsetof(type, member))

int main(void)
{
    printf("    .minor = %d,\n", PY_MINOR_VERSION);
    printf("    .source = \"CPython %s headers\",\n", PY_VERSION);
    O("ts_context", PyThreadState, context);
    O("ob_type", PyObject, ob_type);
    O("ob_size", PyVarObject, ob_size);
    O("ctx_vars", PyContext, ctx_vars);
    F("ctx_size", sizeof(PyContext));
    O("var_name", PyContextVar, var_name);
    O("var_hash", PyContextVar, var_hash);
    F("var_size", sizeof(PyContextVar));
    O("hamt_root", PyHamtObject, h_root);
    O("hamt_count", PyHamtObject, h_count);
    F("hamt_size", sizeof(PyHamtObject));
    O("bitmap_bitmap", probe_bitmap_t, b_bitmap);
    O("bitmap_array", probe_bitmap_t, b_array);
    O("array_array", struct probe_array, a_array);
    F("array_size", sizeof(struct probe_array));
    O("collision_array", struct probe_collision, c_array);
    O("dict_used", PyDictObject, ma_used);
    O("dict_keys", PyDictObject, ma_keys);
    O("dict_values", PyDictObject, ma_values);
#if PY_MINOR_VERSION <= 13
    O("dict_version", PyDictObject, ma_version_tag);
#endif
    F("dict_size", sizeof(PyDictObject));
#if PY_MINOR_VERSION <= 10
    O("keys_size", probe_keys_t, dk_size);
#else
    O("keys_log2_index_bytes", probe_keys_t, dk_log2_index_bytes);
    O("keys_kind", probe_keys_t, dk_kind);
#endif
    O("keys_nentries", probe_keys_t, dk_nentries);
    O("keys_indices", probe_keys_t, dk_indices);
    F("entry_size", PROBE_ENTRY_SIZE);
    F("uentry_size", PROBE_UENTRY_SIZE);
#if PY_MINOR_VERSION >= 13
    O("values_array", PyDictValues, values);
    O("values_capacity", PyDictValues, capacity);
    O("values_valid", PyDictValues, valid);
    F("managed_dict", MANAGED_DICT_OFFSET);
#elif PY_MINOR_VERSION == 12
    F("managed_dict", -3 * (Py_ssize_t)sizeof(PyObject *)); /* the dict-or-values word */
#elif PY_MINOR_VERSION == 11
    F("managed_values", -4 * (Py_ssize_t)sizeof(PyObject *));
    F("managed_dict", -3 * (Py_ssize_t)sizeof(PyObject *));
#endif
    O("tp_name", PyTypeObject, tp_name);
    O("tp_basicsize", PyTypeObject, tp_basicsize);
    O("tp_itemsize", PyTypeObject, tp_itemsize);
    O("tp_flags", PyTypeObject, tp_flags);
    O("tp_members", PyTypeObject, tp_members);
    O("tp_dictoffset", PyTypeObject, tp_dictoffset);
    O("ht_cached_keys", PyHeapTypeObject, ht_cached_keys);
    O("tuple_item", PyTupleObject, ob_item);
#if PY_MINOR_VERSION >= 12
    O("long_size", PyLongObject, long_value.lv_tag);
    O("long_digits", PyLongObject, long_value.ob_digit);
#else
    O("long_size", PyLongObject, ob_base.ob_size);
    O("long_digits", PyLongObject, ob_digit);
#endif
    O("str_state", PyASCIIObject, state);
    F("str_ascii_data", sizeof(PyASCIIObject));
    return 0;
}
