/* SPDX-License-Identifier: MIT */
/*
 * pyctx.c: what each version's context-variable layout does beyond the
 * offsets pyctx_generated.c holds (see pyctx.h).
 */
#include "base/compat.h"

#include "python/pyctx.h"

bool pyctx_model_for(unsigned minor, struct pyctx_model *out)
{
    if (!pyctx_layout_for(minor))
        return false;
    *out = (struct pyctx_model){
        .attrs = minor <= 10   ? PYCTX_ATTRS_DICTOFFSET
                 : minor == 11 ? PYCTX_ATTRS_MANAGED_311
                 : minor == 12 ? PYCTX_ATTRS_MANAGED_312
                               : PYCTX_ATTRS_INLINE,
        .keys_log2 = minor >= 11,
        .long_lv_tag = minor >= 12,
        /* 3.9 names the types without their module */
        .context_type = minor == 9 ? "Context" : "_contextvars.Context",
        .contextvar_type = minor == 9 ? "ContextVar" : "_contextvars.ContextVar",
    };
    return true;
}
