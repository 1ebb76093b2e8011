/* SPDX-License-Identifier: MIT */
/* Research probe (scratch, not part of pyprofd): prints the offsets the OTel
 * SDK context chain needs, from one CPython version's own headers. Compile:
 *   cc -DNDEBUG -w -I<include/python3.X> probe.c -o probe && ./probe
 * HAMT node structs that live in Python/hamt.c (not in any header) and, for
 * 3.9/3.10, the dict keys struct of Objects/dict-common.h are copied here
 * from those files (same in 3.9 .. 3.15). */
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

/* Python/hamt.c (3.9 .. 3.15): */
#if PY_MINOR_VERSION <= 11
typedef struct {
    PyObject_VAR_HEAD uint32_t b_bitmap;
    PyObject *b_array[1];
} Bitmap;
#else
typedef PyHamtNode_Bitmap Bitmap; /* in pycore_hamt.h / pycore_structs.h */
#endif
typedef struct {
    PyObject_HEAD PyHamtNode *a_array[32];
    Py_ssize_t a_count;
} ArrayNode;
typedef struct {
    PyObject_VAR_HEAD int32_t c_hash;
    PyObject *c_array[1];
} Collision;

#if PY_MINOR_VERSION <= 10
/* Objects/dict-common.h, 3.9 and 3.10 */
typedef Py_ssize_t (*dict_lookup_func)(PyDictObject *, PyObject *, Py_hash_t, PyObject **);
struct _dictkeysobject {
    Py_ssize_t dk_refcnt;
    Py_ssize_t dk_size;
    dict_lookup_func dk_lookup;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
};
typedef struct {
    Py_hash_t me_hash;
    PyObject *me_key;
    PyObject *me_value;
} PyDictKeyEntry;
#endif

#define P(name, v) printf("%-34s %zd\n", name, (Py_ssize_t)(v))
#define O(type, f) P(#type "." #f, offsetof(type, f))
#define S(type)    P("sizeof(" #type ")", sizeof(type))

int main(void)
{
    printf("CPython %s%s\n", PY_VERSION,
#ifdef Py_GIL_DISABLED
           " (Py_GIL_DISABLED)"
#else
           ""
#endif
    );
    S(PyObject);
    S(PyVarObject);
    O(PyVarObject, ob_size);
    O(PyThreadState, context);
    O(PyThreadState, context_ver);
    O(PyThreadState, id);
    S(PyThreadState);
    O(PyContext, ctx_prev);
    O(PyContext, ctx_vars);
    O(PyContext, ctx_weakreflist);
    O(PyContext, ctx_entered);
    S(PyContext);
    O(PyContextVar, var_name);
    O(PyContextVar, var_default);
#if !defined(Py_GIL_DISABLED)
    O(PyContextVar, var_cached);
    O(PyContextVar, var_cached_tsid);
    O(PyContextVar, var_cached_tsver);
#endif
    O(PyContextVar, var_hash);
    S(PyContextVar);
    O(PyHamtObject, h_root);
    O(PyHamtObject, h_weakreflist);
    O(PyHamtObject, h_count);
    S(PyHamtObject);
    O(Bitmap, b_bitmap);
    O(Bitmap, b_array);
    O(ArrayNode, a_array);
    O(ArrayNode, a_count);
    S(ArrayNode);
    O(Collision, c_hash);
    O(Collision, c_array);
    O(PyDictObject, ma_used);
#if PY_MINOR_VERSION >= 14
    O(PyDictObject, _ma_watcher_tag);
#else
    O(PyDictObject, ma_version_tag);
#endif
    O(PyDictObject, ma_keys);
    O(PyDictObject, ma_values);
    S(PyDictObject);
    O(PyDictKeysObject, dk_refcnt);
#if PY_MINOR_VERSION <= 10
    O(PyDictKeysObject, dk_size);
    O(PyDictKeysObject, dk_lookup);
#else
    O(PyDictKeysObject, dk_log2_size);
    O(PyDictKeysObject, dk_log2_index_bytes);
    O(PyDictKeysObject, dk_kind);
    O(PyDictKeysObject, dk_version);
#endif
    O(PyDictKeysObject, dk_usable);
    O(PyDictKeysObject, dk_nentries);
    O(PyDictKeysObject, dk_indices);
    S(PyDictKeyEntry);
#if PY_MINOR_VERSION >= 11
    S(PyDictUnicodeEntry);
    O(PyDictValues, values);
#endif
#if PY_MINOR_VERSION >= 13
    O(PyDictValues, capacity);
    O(PyDictValues, size);
    O(PyDictValues, embedded);
    O(PyDictValues, valid);
    P("MANAGED_DICT_OFFSET", MANAGED_DICT_OFFSET);
    P("MANAGED_WEAKREF_OFFSET", MANAGED_WEAKREF_OFFSET);
#elif PY_MINOR_VERSION == 12
    P("dict_or_values (obj - 3 words)", -3 * (Py_ssize_t)sizeof(PyObject *));
#elif PY_MINOR_VERSION == 11
    P("values ptr (obj - 4 words)", -4 * (Py_ssize_t)sizeof(PyObject *));
    P("MANAGED_DICT_OFFSET", MANAGED_DICT_OFFSET);
#endif
    P("Py_TPFLAGS_DICT_SUBCLASS", Py_TPFLAGS_DICT_SUBCLASS);
    P("Py_TPFLAGS_TUPLE_SUBCLASS", Py_TPFLAGS_TUPLE_SUBCLASS);
    P("Py_TPFLAGS_LONG_SUBCLASS", Py_TPFLAGS_LONG_SUBCLASS);
    P("Py_TPFLAGS_HEAPTYPE", Py_TPFLAGS_HEAPTYPE);
#ifdef Py_TPFLAGS_MANAGED_DICT
    P("Py_TPFLAGS_MANAGED_DICT", Py_TPFLAGS_MANAGED_DICT);
#endif
#ifdef Py_TPFLAGS_INLINE_VALUES
    P("Py_TPFLAGS_INLINE_VALUES", Py_TPFLAGS_INLINE_VALUES);
#endif
    O(PyTypeObject, tp_name);
    O(PyTypeObject, tp_basicsize);
    O(PyTypeObject, tp_flags);
    O(PyTypeObject, tp_dictoffset);
    O(PyTypeObject, tp_dict);
    O(PyTypeObject, tp_mro);
    O(PyHeapTypeObject, ht_name);
    O(PyHeapTypeObject, ht_qualname);
    O(PyHeapTypeObject, ht_cached_keys);
#if PY_MINOR_VERSION >= 9
    O(PyHeapTypeObject, ht_module);
#endif
    S(PyHeapTypeObject);
    O(PyTupleObject, ob_base.ob_size);
    O(PyTupleObject, ob_item);
#if PY_MINOR_VERSION >= 12
    O(PyLongObject, long_value.lv_tag);
    O(PyLongObject, long_value.ob_digit);
    P("_PyLong_NON_SIZE_BITS", _PyLong_NON_SIZE_BITS);
#else
    O(PyLongObject, ob_base.ob_size);
    O(PyLongObject, ob_digit);
#endif
    P("PyLong_SHIFT", PyLong_SHIFT);
    P("sizeof(digit)", sizeof(digit));
    O(PyASCIIObject, length);
    O(PyASCIIObject, hash);
    O(PyASCIIObject, state);
    S(PyASCIIObject);
    S(PyCompactUnicodeObject);
    return 0;
}
