/* SPDX-License-Identifier: MIT */
/*
 * pyversion.h: the header of a target's _Py_DebugOffsets table: cookie,
 * version word and free-threaded flag, and the decision whether pyprofd
 * supports that interpreter.
 *
 * The table starts at the _PyRuntime structure (the start of the .PyRuntime
 * ELF section):
 *
 *   pos 0   char     cookie[8]      "xdebugpy", no terminator
 *   pos 8   uint64_t version        PY_VERSION_HEX
 *   pos 16  uint64_t free_threaded  1 for Py_GIL_DISABLED builds
 *
 * PY_VERSION_HEX is (major << 24) | (minor << 16) | (micro << 8) |
 * (level << 4) | serial, with level 0xA alpha, 0xB beta, 0xC candidate,
 * 0xF final.
 *
 * The bytes come from another process and are untrusted: decoding checks the
 * cookie and that the version word is plausible; support is a separate,
 * explicit decision with a message that names the version.
 *
 * Thread safety: pure functions.
 */
#ifndef PYPROFD_PYTHON_PYVERSION_H
#define PYPROFD_PYTHON_PYVERSION_H

#include "base/compat.h"

/** The cookie that opens every _Py_DebugOffsets table. */
#define PYVERSION_COOKIE     "xdebugpy"
#define PYVERSION_COOKIE_LEN 8
/** Bytes of the table header decoded here. */
#define PYVERSION_HEADER_SIZE 24

/*
 * The CPython versions pyprofd reads, in one place: every minor version from
 * 3.PYVERSION_MIN_MINOR to 3.PYVERSION_MAX_MINOR, those before
 * PYVERSION_TABLE_MINOR through layouts generated from their headers
 * (python/layouts_generated.c), the others through their own debug offsets
 * table (python/debug_offsets_3_*.c). PYVERSION_SUPPORTED is the range as
 * every help text and message says it ("3.9 to 3.15"); a new version moves
 * PYVERSION_MAX_MINOR and nothing outside python/.
 */
#define PYVERSION_MIN_MINOR   9
#define PYVERSION_TABLE_MINOR 13
#define PYVERSION_MAX_MINOR   15
#define PYVERSION_STR_(x)     #x
#define PYVERSION_STR(x)      PYVERSION_STR_(x)
#define PYVERSION_SUPPORTED                                                                        \
    "3." PYVERSION_STR(PYVERSION_MIN_MINOR) " to 3." PYVERSION_STR(PYVERSION_MAX_MINOR)

/** Whether pyprofd reads CPython 3.@a minor (final releases; see pyversion_check_supported()). */
bool pyversion_minor_supported(unsigned minor);

/*
 * The binaries of 3.PYVERSION_SYMBOL_MINOR on export their version word
 * (Py_Version); those before it are known by the PY_VERSION string in their
 * read-only data, or else by the minor version their file is named for.
 */
#define PYVERSION_SYMBOL_MINOR 11

/** Whether a binary of CPython 3.@a minor is known by its PY_VERSION string: a supported
 *  minor version before PYVERSION_SYMBOL_MINOR. */
bool pyversion_minor_by_string(unsigned minor);

enum py_release_level {
    PY_RELEASE_ALPHA = 0xA,
    PY_RELEASE_BETA = 0xB,
    PY_RELEASE_CANDIDATE = 0xC,
    PY_RELEASE_FINAL = 0xF,
};

/** A decoded table header. */
struct py_version {
    uint64_t hex; /* the raw version word */
    unsigned major;
    unsigned minor;
    unsigned micro;
    unsigned level; /* enum py_release_level */
    unsigned serial;
    bool free_threaded;
    /* the micro version is not known (3.9, 3.10 named only by a file name):
     * shown as "3.9", and hex/micro/level/serial are those of 3.9.0 final */
    bool micro_unknown;
};

/**
 * Decodes the @a len bytes at @a header (a copy of the start of a remote
 * _PyRuntime). Returns 0; -EAGAIN when @a len < PYVERSION_HEADER_SIZE;
 * -ENOENT when the cookie is not "xdebugpy" (not a CPython 3.13+ runtime, or
 * not initialised yet); -EPROTO when the cookie matches but the version word
 * or free-threaded flag is implausible (major not 3, unknown release level,
 * bits above the low 32, a flag other than 0/1).
 */
PYPROFD_WARN_UNUSED int pyversion_decode(const void *header, size_t len, struct py_version *out);

/**
 * Decodes a PY_VERSION_HEX word @a hex (the table's, or a 3.11/3.12 binary's
 * Py_Version) and a free-threaded flag @a ft (0 or 1). Returns 0, or -EPROTO
 * when either is implausible, as pyversion_decode().
 */
PYPROFD_WARN_UNUSED int pyversion_from_hex(uint64_t hex, uint64_t ft, struct py_version *out);

/**
 * Decides whether pyprofd can profile this interpreter. Returns 0, or
 * -ENOTSUP with a one-line reason in @a why (always NUL-terminated when
 * @a why_len > 0), e.g. "CPython 3.16.0 is not supported yet (supported:
 * 3.9 to 3.15)", "CPython 3.15.0b1 is a pre-release; only final
 * releases are supported". Free-threaded and debug builds of a supported
 * version are supported.
 */
PYPROFD_WARN_UNUSED int pyversion_check_supported(const struct py_version *v, char *why,
                                                  size_t why_len);

/**
 * Formats @a v as "3.14.8", "3.15.0b1" or "3.14.8t" (free-threaded, as
 * CPython spells it) into @a buf. Returns @a buf.
 */
/**
 * Finds, in the @a len bytes at @a buf (a piece of a binary's read-only
 * data: untrusted), the first string ending in "3.N.M" (no digit or dot
 * before it, a NUL after it: how PY_VERSION sits in every CPython binary, on
 * its own or as the tail of a longer string the linker merged it into), with
 * N == @a minor unless @a minor is 0. Returns
 * its offset and a final release in @a out, or -ENOENT. Pre-release
 * suffixes ("3.9.0rc1") are not matched: only final releases are read.
 */
PYPROFD_WARN_UNUSED int pyversion_scan(const void *buf, size_t len, unsigned minor,
                                       struct py_version *out);

const char *pyversion_format(const struct py_version *v, char *buf, size_t len);

#endif /* PYPROFD_PYTHON_PYVERSION_H */
