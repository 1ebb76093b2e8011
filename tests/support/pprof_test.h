/* SPDX-License-Identifier: MIT */
/*
 * pprof_test.h: the reading side of the pprof encoder, for tests and test
 * programs: gunzip + protobuf-c unpack (through the project allocator), a
 * checker of every rule the consumers enforce (go tool pprof, Parca,
 * Pyroscope; see agent/pprof/pprof_build.h), a text rendering for golden
 * files, and the fixed window the golden file, the unit test and
 * pprof-sample-writer all encode.
 */
#ifndef PYPROFD_TESTS_PPROF_TEST_H
#define PYPROFD_TESTS_PPROF_TEST_H

#include "base/compat.h"

#include <protobuf-c/protobuf-c.h>

#include "aggregate/agg.h"
#include "pprof/pprof_build.h"
#include "profile.pb-c.h"

/** Cap on the unpacked size pprof_test_decode() accepts. */
#define PPROF_TEST_MAX_BYTES (64u << 20)

/** A protobuf-c allocator over alloc_* (base/alloc.h). */
ProtobufCAllocator *pprof_test_allocator(void);

/**
 * Gunzips and unpacks @a len bytes at @a gz. Returns 0 and the profile in
 * *@a out (pprof_test_free() it), a gzip_decompress() error, or -EPROTO when
 * the bytes are not a Profile message.
 */
int pprof_test_decode(const uint8_t *gz, size_t len, Perftools__Profiles__Profile **out);
/** Frees a decoded profile; NULL is a no-op. */
void pprof_test_free(Perftools__Profiles__Profile *p);

/**
 * Checks @a p against the consumers' rules: string_table[0] is "" and has no
 * duplicates, every string is valid UTF-8 (proto3), every string index is in range,
 * mapping/function/location ids are 1..N in array order, every referenced id exists, every sample
 * has one value per sample type, labels have a key, one kind of value, no empty string value and no
 * key twice on one sample, type strings have no '-'. Returns 0, or -EINVAL with the first broken
 * rule in @a why.
 */
int pprof_test_check(const Perftools__Profiles__Profile *p, char *why, size_t why_len);

/** Writes @a p as readable text (the format of tests/fixtures/pprof/golden.txt). */
void pprof_test_render(const Perftools__Profiles__Profile *p, FILE *out);

/** Adds the fixed sample set (described in pprof_test.c) to @a a. Returns 0 or agg_add_in()'s
 * error.
 */
int pprof_test_fill(struct agg *a);
/** The metadata the fixed profile is encoded with (cpu/nanoseconds, 100 Hz). */
struct pprof_meta pprof_test_meta(void);

#endif
