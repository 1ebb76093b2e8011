/* SPDX-License-Identifier: MIT */
/*
 * pyimage.c: synthetic CPython memory images (see pyimage.h). Everything is
 * laid out from the layout the real table yields, so the same test code
 * builds a 3.13, 3.14 or 3.15 image.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "fixture.h"
#include "pyimage.h"

#define PYIMAGE_INTERP      0x20000000ull
#define PYIMAGE_THREADS     0x30000000ull /* one 4 KiB slot per thread state */
#define PYIMAGE_CHUNKS      0x40000000ull /* one 16 KiB chunk per thread */
#define PYIMAGE_OBJECTS     0x50000000ull /* code objects and strings */
#define PYIMAGE_MAX_THREADS 24
#define PYIMAGE_CHUNK       16384u
#define PYIMAGE_OBJ_CAP     (1u << 20)

struct pyimage_thread {
    uint8_t tstate[4096];
    uint8_t chunk[PYIMAGE_CHUNK];
    size_t chunk_top; /* next free byte */
    uint64_t last_frame;
};

struct pyimage {
    struct py_layout l;
    uint8_t *table;
    size_t table_len;
    uint8_t runtime[4096];
    uint8_t *interp; /* a prefix of the interpreter state */
    size_t interp_len;
    struct pyimage_thread threads[PYIMAGE_MAX_THREADS];
    unsigned nthreads;
    uint8_t *objects;
    size_t objects_used;
};

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

/*
 * Turns a GIL build's 3.14/3.15 table into a free-threaded one: the flag and
 * the three per-thread bytecode entries (synthetic offsets inside their
 * structs, clear of every field the image writes).
 */
static void pyimage_make_ft(uint8_t *t, unsigned minor)
{
    const struct pyabi_schema *s = pyabi_schema_for(minor);
    uint64_t fr_size, co_size, code_gen;
    put64(t + 16, 1);
    memcpy(&fr_size, t + s->pos[PYOFF_FRAME_SIZE], 8);
    memcpy(&co_size, t + s->pos[PYOFF_CODE_SIZE], 8);
    memcpy(&code_gen, t + s->pos[PYOFF_INTERP_CODE_GENERATION], 8);
    put64(t + s->pos[PYOFF_INTERP_TLBC_GENERATION], code_gen + 8);
    put64(t + s->pos[PYOFF_FRAME_TLBC_INDEX], fr_size - 8);
    put64(t + s->pos[PYOFF_CODE_TLBC], co_size - 16);
}

static struct pyimage *pyimage_make(unsigned minor, bool free_threaded)
{
    struct pyimage *img = alloc_calloc(1, sizeof(*img));
    assert_non_null(img);
    char rel[64];
    snprintf(rel, sizeof(rel), "debug_offsets/3.%u%s.bin", minor,
             free_threaded && minor == 13 ? "t" : "");
    img->table = fixture_load(rel, &img->table_len);
    assert_non_null(img->table);
    if (free_threaded && minor > 13)
        pyimage_make_ft(img->table, minor);
    struct py_version v;
    char why[256];
    assert_int_equal(pyversion_decode(img->table, img->table_len, &v), 0);
    assert_int_equal(pyabi_layout_load(&v, img->table, img->table_len, &img->l, why, sizeof(why)),
                     0);
    img->interp_len = 16384;
    img->interp = alloc_calloc(1, img->interp_len);
    img->objects = alloc_calloc(1, PYIMAGE_OBJ_CAP);
    assert_non_null(img->interp);
    assert_non_null(img->objects);
    pyimage_runtime_state(img, true, false);
    put64(img->interp + img->l.in_id, 0);
    return img;
}

struct pyimage *pyimage_new(unsigned minor)
{
    return pyimage_make(minor, false);
}

struct pyimage *pyimage_new_ft(unsigned minor)
{
    return pyimage_make(minor, true);
}

void pyimage_free(struct pyimage *img)
{
    if (!img)
        return;
    alloc_free(img->table);
    alloc_free(img->interp);
    alloc_free(img->objects);
    alloc_free(img);
}

const struct py_layout *pyimage_layout(const struct pyimage *img)
{
    return &img->l;
}

void pyimage_runtime_state(struct pyimage *img, bool initialized, bool finalizing)
{
    put64(img->runtime + img->l.rt_interpreters_head, initialized ? PYIMAGE_INTERP : 0);
    put64(img->runtime + img->l.rt_finalizing, finalizing ? PYIMAGE_THREADS : 0);
}

void pyimage_code_generation(struct pyimage *img, uint64_t gen)
{
    if (img->l.has_code_generation)
        put64(img->interp + img->l.in_code_generation, gen);
}

static uint64_t pyimage_alloc(struct pyimage *img, size_t len, uint8_t **local)
{
    size_t at = (img->objects_used + 15) & ~(size_t)15;
    assert_true(at + len <= PYIMAGE_OBJ_CAP);
    img->objects_used = at + len;
    *local = img->objects + at;
    return PYIMAGE_OBJECTS + at;
}

uint64_t pyimage_object(struct pyimage *img, size_t len, uint8_t **local)
{
    return pyimage_alloc(img, len, local);
}

uint8_t *pyimage_tstate(struct pyimage *img, unsigned t)
{
    assert_true(t < img->nthreads);
    return img->threads[t].tstate;
}

uint64_t pyimage_tstate_raddr(const struct pyimage *img, unsigned t)
{
    (void)img;
    return PYIMAGE_THREADS + (uint64_t)t * 0x10000;
}

void pyimage_link_frame(struct pyimage *img, unsigned t, uint64_t frame)
{
    struct pyimage_thread *th = &img->threads[t];
    pyimage_set_previous(img, frame, th->last_frame);
    th->last_frame = frame;
    put64(th->tstate + img->l.ts_current_frame, frame);
}

static int pyimage_record(FILE *out, uint64_t raddr, const void *data, size_t len)
{
    uint64_t hdr[2] = {raddr, len};
    return fwrite(hdr, sizeof(hdr), 1, out) == 1 && fwrite(data, 1, len, out) == len ? 0 : -EIO;
}

int pyimage_write_records(const struct pyimage *img, FILE *out)
{
    int err = pyimage_record(out, PYIMAGE_RUNTIME, img->runtime, sizeof(img->runtime));
    if (!err)
        err = pyimage_record(out, PYIMAGE_INTERP, img->interp, img->interp_len);
    for (unsigned t = 0; !err && t < img->nthreads; t++) {
        err = pyimage_record(out, PYIMAGE_THREADS + (uint64_t)t * 0x10000, img->threads[t].tstate,
                             sizeof(img->threads[t].tstate));
        if (!err)
            err = pyimage_record(out, PYIMAGE_CHUNKS + (uint64_t)t * 0x100000,
                                 img->threads[t].chunk, PYIMAGE_CHUNK);
    }
    if (!err)
        err = pyimage_record(out, PYIMAGE_OBJECTS, img->objects, img->objects_used);
    return err;
}

uint64_t pyimage_str(struct pyimage *img, const char *ascii)
{
    size_t n = strlen(ascii);
    uint8_t *p;
    uint64_t raddr = pyimage_alloc(img, img->l.str_ascii_data + n + 1, &p);
    put64(p + img->l.str_length, n);
    put32(p + img->l.str_state, ((1u << 2) | (1u << 5) | (1u << 6)) << img->l.str_state_shift);
    memcpy(p + img->l.str_ascii_data, ascii, n + 1);
    return raddr;
}

uint64_t pyimage_code(struct pyimage *img, const char *qualname, const char *file,
                      int32_t firstlineno)
{
    /* line table: 64 one-unit entries, "one-line form, next line", cols 0..4 */
    uint8_t table[64 * 3];
    for (size_t i = 0; i < 64; i++) {
        table[3 * i] = (uint8_t)(0x80 | (11 << 3)); /* code 11: line += 1, 1 unit */
        table[3 * i + 1] = 0;
        table[3 * i + 2] = 4;
    }
    uint8_t *b;
    uint64_t bytes = pyimage_alloc(img, img->l.bytes_ob_sval + sizeof(table) + 1, &b);
    put64(b + img->l.bytes_ob_size, sizeof(table));
    memcpy(b + img->l.bytes_ob_sval, table, sizeof(table));

    uint64_t name = pyimage_str(img, qualname);
    uint64_t fname = pyimage_str(img, file);
    uint8_t *c;
    uint64_t code = pyimage_alloc(img, img->l.co_size + 128, &c);
    put64(c + img->l.co_qualname, name);
    put64(c + img->l.co_filename, fname);
    put64(c + img->l.co_linetable, bytes);
    put32(c + img->l.co_firstlineno, (uint32_t)firstlineno);
    return code;
}

static uint8_t *pyimage_local(struct pyimage *img, uint64_t raddr, size_t len)
{
    if (raddr >= PYIMAGE_OBJECTS && raddr + len <= PYIMAGE_OBJECTS + PYIMAGE_OBJ_CAP)
        return img->objects + (raddr - PYIMAGE_OBJECTS);
    for (unsigned t = 0; t < img->nthreads; t++) {
        uint64_t base = PYIMAGE_CHUNKS + (uint64_t)t * 0x100000;
        if (raddr >= base && raddr + len <= base + PYIMAGE_CHUNK)
            return img->threads[t].chunk + (raddr - base);
        base = PYIMAGE_THREADS + (uint64_t)t * 0x10000;
        if (raddr >= base && raddr + len <= base + sizeof(img->threads[t].tstate))
            return img->threads[t].tstate + (raddr - base);
    }
    fail_msg("pyimage: 0x%" PRIx64 " is not in the image", raddr);
    return NULL;
}

unsigned pyimage_thread(struct pyimage *img, uint64_t native_tid)
{
    assert_true(img->nthreads < PYIMAGE_MAX_THREADS);
    unsigned t = img->nthreads++;
    struct pyimage_thread *th = &img->threads[t];
    uint64_t ts = PYIMAGE_THREADS + (uint64_t)t * 0x10000;
    uint64_t chunk = PYIMAGE_CHUNKS + (uint64_t)t * 0x100000;
    put64(th->tstate + img->l.ts_native_thread_id, native_tid);
    put64(th->tstate + img->l.ts_thread_id, 0x7f0000000000ull + native_tid);
    put64(th->tstate + img->l.ts_datastack_chunk, chunk);
    put64(th->tstate + img->l.ts_exc_info, ts + img->l.ts_exc_state);
    put64(th->chunk + 8, PYIMAGE_CHUNK); /* size; previous 0 */
    th->chunk_top = PYABI_CHUNK_HEADER;
    if (img->l.has_base_frame) {
        /* the base frame sits in the thread state, after the public part */
        uint64_t base = ts + img->l.ts_size;
        put64(th->tstate + img->l.ts_base_frame, base);
        th->tstate[img->l.ts_size + img->l.fr_owner] = PYABI_OWNER_INTERPRETER;
        th->last_frame = base;
    }
    /* newest thread first; the first thread is the main thread */
    put64(th->tstate + img->l.ts_next,
          img->nthreads > 1 ? PYIMAGE_THREADS + (uint64_t)(t - 1) * 0x10000 : 0);
    put64(img->interp + img->l.in_threads_head, ts);
    if (t == 0)
        put64(img->interp + img->l.in_threads_main, ts);
    return t;
}

uint64_t pyimage_push(struct pyimage *img, unsigned t, unsigned owner, uint64_t code, unsigned unit)
{
    struct pyimage_thread *th = &img->threads[t];
    uint64_t chunk = PYIMAGE_CHUNKS + (uint64_t)t * 0x100000;
    size_t size = img->l.fr_size + 16;
    assert_true(th->chunk_top + size <= PYIMAGE_CHUNK);
    uint64_t frame = chunk + th->chunk_top;
    uint8_t *f = th->chunk + th->chunk_top;
    th->chunk_top += size;
    f[img->l.fr_owner] = (uint8_t)owner;
    put64(f + img->l.fr_previous, th->last_frame);
    if (owner != PYABI_OWNER_INTERPRETER) {
        /* tagged like a deferred _PyStackRef where the version tags */
        put64(f + img->l.fr_executable, code | (img->l.tag_mask & 1));
        put64(f + img->l.fr_instr_ptr, code + img->l.co_adaptive + 2u * unit);
    }
    th->last_frame = frame;
    put64(th->tstate + img->l.ts_current_frame, frame);
    return frame;
}

void pyimage_set_previous(struct pyimage *img, uint64_t frame, uint64_t previous)
{
    put64(pyimage_local(img, frame, img->l.fr_size) + img->l.fr_previous, previous);
}

uint64_t pyimage_tlbc(struct pyimage *img, uint64_t code, unsigned index)
{
    assert_true(img->l.has_tlbc && index > 0 && index < 8);
    uint8_t *c = pyimage_local(img, code, img->l.co_size);
    uint64_t arr = 0;
    memcpy(&arr, c + img->l.co_tlbc, 8);
    uint8_t *a;
    if (!arr) { /* {ssize_t n; void *entry[n]}: entry 0 is the code's own */
        arr = pyimage_alloc(img, 8 + 8 * 8, &a);
        put64(a, 8);
        put64(a + 8, code + img->l.co_adaptive);
        put64(c + img->l.co_tlbc, arr);
    } else {
        a = pyimage_local(img, arr, 8 + 8 * 8);
    }
    uint8_t *copy;
    uint64_t base = pyimage_alloc(img, 128, &copy);
    put64(a + 8 + 8 * index, base);
    return base;
}

void pyimage_frame_tlbc(struct pyimage *img, uint64_t frame, unsigned index, uint64_t base,
                        unsigned unit)
{
    uint8_t *f = pyimage_local(img, frame, img->l.fr_size);
    put32(f + img->l.fr_tlbc_index, index);
    put64(f + img->l.fr_instr_ptr, base + 2u * unit);
}

void pyimage_tlbc_generation(struct pyimage *img, uint32_t gen)
{
    put32(img->interp + img->l.in_tlbc_generation, gen);
}

void pyimage_hold_gil(struct pyimage *img, unsigned t)
{
    uint8_t *ts = img->threads[t].tstate;
    if (img->l.holds_gil_kind == PYABI_GIL_INT)
        put32(ts + img->l.ts_holds_gil, 1);
    else
        put32(ts + img->l.ts_status, img->l.holds_gil_mask);
}

void pyimage_gc(struct pyimage *img, uint64_t frame)
{
    put32(img->interp + img->l.in_gc_collecting, 1);
    if (img->l.has_gc_frame)
        put64(img->interp + img->l.in_gc_frame, frame);
}

void pyimage_install(struct pyimage *img, struct memread_fake *fake, struct pyruntime *rt)
{
    memcpy(img->runtime, img->table, img->table_len);
    assert_int_equal(memread_fake_add(fake, PYIMAGE_RUNTIME, img->runtime, sizeof(img->runtime)),
                     0);
    assert_int_equal(memread_fake_add(fake, PYIMAGE_INTERP, img->interp, img->interp_len), 0);
    for (unsigned t = 0; t < img->nthreads; t++) {
        assert_int_equal(memread_fake_add(fake, PYIMAGE_THREADS + (uint64_t)t * 0x10000,
                                          img->threads[t].tstate, sizeof(img->threads[t].tstate)),
                         0);
        assert_int_equal(memread_fake_add(fake, PYIMAGE_CHUNKS + (uint64_t)t * 0x100000,
                                          img->threads[t].chunk, PYIMAGE_CHUNK),
                         0);
    }
    assert_int_equal(memread_fake_add(fake, PYIMAGE_OBJECTS, img->objects, PYIMAGE_OBJ_CAP), 0);
    memset(rt, 0, sizeof(*rt));
    rt->raddr = PYIMAGE_RUNTIME;
    rt->section_size = sizeof(img->runtime);
    rt->initialized = true;
    assert_int_equal(pyversion_decode(img->table, img->table_len, &rt->version), 0);
}
