/* SPDX-License-Identifier: MIT */
/*
 * pyctx.h: CPython's context variables as data, for reading a thread's
 * current OpenTelemetry span from outside (unwind/otel_sdk.h): where the
 * thread state keeps its context (PEP 567), the PyContext and ContextVar
 * objects, the HAMT their values live in (its three node kinds), dicts and
 * their keys tables, the attribute storage of ordinary instances, tuples,
 * ints and ASCII str.
 *
 * No _Py_DebugOffsets table describes any of it, so every version 3.9-3.15
 * has a layout generated from its own headers (pyctx_generated.c, by
 * scripts/gen-pyctx.sh; default builds on x86-64; free-threaded builds are not
 * covered). What differs between versions beyond offsets (how a dict's keys
 * are laid out, where an instance keeps its attributes, how an int stores
 * its size) is named by pyctx_model_for(). The reader checks the layout
 * against the live process before trusting it (type sizes and names).
 *
 * Data only: no state, thread-safe.
 */
#ifndef PYPROFD_PYTHON_PYCTX_H
#define PYPROFD_PYTHON_PYCTX_H

#include "base/compat.h"

/** Offsets and sizes in bytes; a field a version lacks is 0. */
struct pyctx_layout {
    unsigned minor;
    const char *source;                    /* "CPython 3.11.2 headers" */
    uint32_t ts_context;                   /* PyThreadState.context (PyContext *) */
    uint32_t ob_type, ob_size;             /* PyObject.ob_type, PyVarObject.ob_size */
    uint32_t ctx_vars, ctx_size;           /* PyContext.ctx_vars (the HAMT) */
    uint32_t var_name, var_hash, var_size; /* PyContextVar */
    uint32_t hamt_root, hamt_count, hamt_size;
    uint32_t bitmap_bitmap, bitmap_array; /* the HAMT's bitmap node (u32, pairs) */
    uint32_t array_array, array_size;     /* its array node (32 children) */
    uint32_t collision_array;             /* its collision node (pairs) */
    uint32_t dict_used, dict_keys, dict_values, dict_size;
    uint32_t dict_version;                     /* ma_version_tag, <= 3.13 */
    uint32_t keys_size;                        /* <= 3.10: dk_size (Py_ssize_t) */
    uint32_t keys_log2_index_bytes, keys_kind; /* 3.11+: u8 each */
    uint32_t keys_nentries, keys_indices;
    uint32_t entry_size, uentry_size;       /* {hash, key, value}; 3.11+ {key, value} */
    uint32_t values_array;                  /* 3.13+: PyDictValues.values */
    uint32_t values_capacity, values_valid; /* 3.13+: u8 each */
    int32_t managed_values;                 /* 3.11: the values pointer, before the object */
    int32_t managed_dict;                   /* 3.11+: the dict (3.12: or tagged values) word */
    uint32_t tp_name, tp_basicsize, tp_itemsize, tp_flags, tp_members, tp_dictoffset;
    uint32_t ht_cached_keys;         /* PyHeapTypeObject: the shared keys */
    uint32_t tuple_item;             /* PyTupleObject.ob_item */
    uint32_t long_size, long_digits; /* ob_size (<= 3.11) or lv_tag; 30-bit digits */
    uint32_t str_state, str_ascii_data;
};

/** How a version lays out what offsets do not say. */
enum pyctx_attrs {
    PYCTX_ATTRS_DICTOFFSET,  /* <= 3.10: the instance dict at obj + tp_dictoffset */
    PYCTX_ATTRS_MANAGED_311, /* 3.11: values pointer or dict before the object */
    PYCTX_ATTRS_MANAGED_312, /* 3.12: one word: dict, or values - 1 (bit 0 set) */
    PYCTX_ATTRS_INLINE,      /* 3.13+: values inline after the object, else the dict */
};

struct pyctx_model {
    enum pyctx_attrs attrs;
    bool keys_log2;   /* 3.11+: dk_log2_index_bytes and kinds; else dk_size */
    bool long_lv_tag; /* 3.12+: digits = lv_tag >> 3, sign in its low 2 bits */
    /* the static types' tp_name */
    const char *context_type, *contextvar_type;
};

/* type flags (the same in every version) */
#define PYCTX_TPFLAGS_INLINE_VALUES  (1ul << 2) /* 3.13+ */
#define PYCTX_TPFLAGS_MANAGED_DICT   (1ul << 4) /* 3.11+ */
#define PYCTX_TPFLAGS_HEAPTYPE       (1ul << 9)
#define PYCTX_TPFLAGS_LONG_SUBCLASS  (1ul << 24)
#define PYCTX_TPFLAGS_TUPLE_SUBCLASS (1ul << 26)
#define PYCTX_TPFLAGS_DICT_SUBCLASS  (1ul << 29)
/* dict keys kinds (3.11+) */
#define PYCTX_KEYS_GENERAL 0
#define PYCTX_KEYS_SPLIT   2
#define PYCTX_LONG_SHIFT   30u

extern const struct pyctx_layout pyctx_layout_3_9, pyctx_layout_3_10, pyctx_layout_3_11,
    pyctx_layout_3_12, pyctx_layout_3_13, pyctx_layout_3_14, pyctx_layout_3_15;

/** The generated layout of CPython 3.<minor> (default build), or NULL. */
const struct pyctx_layout *pyctx_layout_for(unsigned minor);

/** What 3.<minor> does beyond offsets; false for a minor without a layout. */
bool pyctx_model_for(unsigned minor, struct pyctx_model *out);

#endif /* PYPROFD_PYTHON_PYCTX_H */
