/* SPDX-License-Identifier: MIT */
/*
 * unwind.c: the remote stack walker (see unwind.h and docs/unwinder.md).
 *
 * A sample runs in two phases per thread. The walk follows the frame chain
 * through local copies of the thread's data-stack chunks and records raw
 * frames (code object address, instruction pointer, marker kind). The resolve
 * phase then turns raw frames into names and positions through the code
 * cache, reading only code objects it has not seen. Keeping the phases apart
 * lets 3.13 re-check every cached code object of the sample in one batched
 * read before trusting the cache.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "discovery/pyruntime.h"
#include "python/pyopcode.h"
#include "unwind/codecache.h"
#include "unwind/pystr.h"
#include "unwind/unwind.h"

#define UNWIND_CHUNK_BUF       (1024u * 1024u) /* local copies of data-stack chunks */
#define UNWIND_CHUNK_DEFAULT   (16u * 1024u)   /* CPython's _PY_DATA_STACK_CHUNK_SIZE */
#define UNWIND_CHUNK_MAX       (16u << 20)     /* larger "chunks" are garbage */
#define UNWIND_MAX_CHUNKS      64u
#define UNWIND_VISITED_SLOTS   4096u /* > UNWIND_MAX_DEPTH, power of two */
#define UNWIND_FRAMES_START    64u   /* frame slots at first; doubled up to UNWIND_MAX_FRAMES */
#define UNWIND_THREADS_START   8u    /* thread slots at first; doubled up to UNWIND_MAX_THREADS */
#define UNWIND_CHAIN_START     16u   /* chain links at first; doubled up to UNWIND_MAX_DEPTH */
#define UNWIND_CODE_START      64u   /* code-cache entries at first (see codecache.h) */
#define UNWIND_CODE_ENTRIES    4096u
#define UNWIND_CODE_ARENA      (4u << 20)
#define UNWIND_LINETABLE_MAX   (256u * 1024u)
#define UNWIND_NAME_MAX        (4 * PYSTR_MAX_CHARS + 1)
#define UNWIND_MAX_GENERATIONS 32u
#define UNWIND_CHUNK_GUESSES   64u /* thread state -> last chunk, direct-mapped */
#define UNWIND_GUESS_FRAMES    4u  /* out-of-chunk frames remembered per thread */
/* <= 3.10: every frame is a heap object of its own; this many are read with
 * the thread state (a steady stack costs one read) */
#define UNWIND_GUESS_FRAMEOBJS 64u
#define UNWIND_PTHREAD_SCAN    2048u /* bytes of struct pthread searched for the TID */
/* <= 3.10: remembered frames that lie close together are read as one range
 * (the kernel's cost is per range): at most this many bytes per range, and
 * this many in all (the rest one range each) */
#define UNWIND_FRAMEOBJ_SPAN 1024u
#define UNWIND_SPAN_BUF      (16u * 1024u)
#define UNWIND_GLIBC_TID_OFF 720u /* struct pthread's tid in x86-64 glibc 2.26+ */
#define UNWIND_TID_SCAN_MIN  300  /* smallest PID searched for in struct pthread */
#define UNWIND_INTERP_IOV    10u  /* ranges of one interpreter read */
#define UNWIND_GUESS_CHUNKS  4u   /* data-stack chunks remembered per thread */
#define UNWIND_GUESS_CODES   64u  /* 3.13: code objects re-checked in the thread's read */
#define UNWIND_THREAD_IOV                                                                          \
    (3u + UNWIND_GUESS_CHUNKS + UNWIND_GUESS_FRAMEOBJS + UNWIND_GUESS_CODES) /* one thread read */
#define UNWIND_CHUNK_SLACK  2048u /* copied beyond the last walk's deepest frame */
#define UNWIND_INTERP_SPAN  4096u /* largest interpreter range read in one piece */
#define UNWIND_RUNTIME_SPAN 4096u /* largest runtime range read in one piece */

static const char unwind_native_name[] = "<native>";
static const char unwind_gc_name[] = "<GC>";
static const char unwind_unreadable_name[] = "<unreadable frame>";
static const char unwind_unknown_function[] = "<unknown function>";
static const char unwind_unknown_file[] = "<unknown file>";
static const char unwind_marker_file[] = "~";

/* A frame as the walk records it, before names are looked up. */
struct raw_frame {
    uint64_t code_raddr;
    uint64_t instr_ptr;
    enum unwind_frame_kind kind;
    uint64_t frame_raddr;
    uint32_t tlbc; /* free-threaded 3.14+: the bytecode copy instr_ptr is in (0: the code's own) */
};

/* Where one code object's per-thread bytecode copy starts (free-threaded). */
struct tlbc_slot {
    uint64_t code, base, epoch; /* base 0: not readable; epoch 0: empty */
    uint32_t index;
};
#define UNWIND_TLBC_SLOTS 64u

/* One frame of the walked chain and the fields the walk relied on. */
struct chain_link {
    uint64_t raddr;
    uint64_t previous, executable, instr_ptr;
    bool leaf;                    /* no Python frame above it: its instruction may move */
    int32_t chunk;                /* index of the chunk copy holding it, or -1 */
    size_t buf_off;               /* its offset in chunk_buf (and verify_buf) */
    uint8_t now[PYABI_MAX_FRAME]; /* re-read of a frame outside the chunks */
};

struct chunk_copy {
    uint64_t raddr;
    size_t size; /* bytes copied (header included) */
    const uint8_t *data;
    uint64_t real_size; /* the chunk's own size, from its header */
};

/* A data-stack chunk a thread's last walk went through, for the next read. */
struct chunk_guess {
    uint64_t raddr;     /* 0: none */
    uint64_t real_size; /* its size */
    uint32_t used;      /* bytes up to the end of its last frame walked; 0: unknown */
    bool steady;        /* that walk found the chain of the walk before it */
};

/*
 * What frames[i] was last resolved from: the raw frame (its code address is
 * frames[i].code_raddr), the code-cache epoch (0: never, or not to be
 * reused), and the unwind_resolve() call that last wrote or kept it.
 */
struct resolved_tag {
    uint64_t ip;
    uint64_t epoch;
    uint64_t serial;
    enum unwind_frame_kind kind;
    uint32_t tlbc;
};

/* A thread's last resolve: frames [first, first + n) by resolve @serial. */
struct resolved_thread {
    uint64_t tstate_raddr; /* 0: none */
    uint64_t serial;
    uint64_t key; /* its stack_key */
    size_t first, n;
};

/* Code ids (unwind_frame.code_id) of the frames that are not code objects. */
#define UNWIND_ID_NATIVE     1u
#define UNWIND_ID_GC         2u
#define UNWIND_ID_UNREADABLE 3u

/* What a sample needs to know of one interpreter. */
struct interp_view {
    uint64_t raddr;
    int64_t id;
    uint64_t next, threads_head, threads_main, gil_holder, gc_frame, code_generation;
    int32_t gc_collecting, gil_locked;
    uint32_t tlbc_generation; /* free-threaded 3.14+ */
};

/* What one sample uses and leaves nothing in (see unwind.h). */
struct unwind_scratch {
    uint8_t *chunk_buf;
    uint8_t *verify_buf; /* re-reads of chunk spans, at the offsets of chunk_buf */
    uint64_t *visited;   /* frame addresses of this walk, open addressing */
    uint32_t *visited_stamp;
    uint32_t stamp; /* of the walk in progress, whichever unwinder's */
    uint8_t *linetable_buf;
    /* 3.13: code objects to re-check this sample, and their re-reads
     * (allocated by the first 3.13 unwinder, grown to the largest code-object
     * read of its unwinders) */
    uint64_t *check_addr;
    uint8_t *check_buf;
    size_t check_len; /* bytes per code object check_buf holds */
};

struct unwinder {
    const char *const (*optable)[3]; /* the version's opcode names (UNWIND_OPCODES) */
    bool opcodes_seen; /* a sample asked for opcodes: later ones without must clear them */
    struct memread *mr;
    struct py_layout l;
    uint64_t runtime_raddr;
    uint64_t none_object; /* Py_None (3.11, 3.12; 0 otherwise): handles no exception */

    /* per-thread scratch */
    /* the thread state, and the frame that may follow it (3.15's base frame) */
    uint8_t tstate[PYABI_MAX_TSTATE + PYABI_MAX_FRAME];
    uint64_t tstate_raddr;
    size_t tstate_len;
    uint8_t frame_buf[PYABI_MAX_FRAME];
    /* frames outside the chunks that the last sample of this thread read on
     * their own (entry frames on the C stack): read again with the thread
     * state, in the same system call */
    uint8_t *extra;                                  /* guess_max frames of fr_size bytes */
    uint64_t extra_raddr[UNWIND_GUESS_FRAMEOBJS];    /* ascending */
    const uint8_t *extra_at[UNWIND_GUESS_FRAMEOBJS]; /* where each was read to */
    uint8_t *span_buf; /* <= 3.10: UNWIND_SPAN_BUF bytes for ranges of several frames */
    size_t nextra;
    uint64_t seen_extra[UNWIND_GUESS_FRAMEOBJS];
    size_t nseen_extra;
    size_t guess_max; /* frames remembered per thread: UNWIND_GUESS_FRAMES(OBJS) */
    /*
     * <= 3.10: a thread is known by its pthread_t only; its TID is the int
     * at tid_off in glibc's struct pthread (learnt from the main thread,
     * whose TID is the process ID; 0: not known), read with the thread
     * state for the pthread_t the slot's last sample saw (a pthread_t is
     * reused by the next thread glibc starts on the same stack).
     */
    uint32_t tid_off;
    pid_t ns_pid; /* the process's PID in its own namespace (rt->ns_pid) */
    uint64_t guess_pthread[UNWIND_CHUNK_GUESSES];
    uint64_t pthread_guessed;
    int32_t tid_word;
    bool tid_tried;
    bool own_sc; /* the scratch was allocated by unwinder_new(), freed with the unwinder */
    /* chunk_buf, verify_buf, visited and linetable_buf: in the scratch */
    struct unwind_scratch *sc;
    size_t chunk_used;
    struct chunk_copy chunks[UNWIND_MAX_CHUNKS];
    uint64_t chunk_low[UNWIND_MAX_CHUNKS]; /* this walk: lowest frame address in each chunk */
    size_t nchunks;
    uint64_t next_chunk; /* next older chunk not copied yet */
    uint64_t guess_tstate[UNWIND_CHUNK_GUESSES];
    struct chunk_guess guess_chunks[UNWIND_CHUNK_GUESSES][UNWIND_GUESS_CHUNKS];
    uint64_t *guess_frames; /* UNWIND_CHUNK_GUESSES slots of guess_max: UNWIND_GF(u, slot) */
    uint64_t verified_hash[UNWIND_CHUNK_GUESSES]; /* the thread's last verified chain */
    /*
     * 3.11/3.12: the _PyCFrame that held the thread's current frame last
     * time (on its C stack; it moves only when the eval loop is entered
     * anew), whose current_frame word is read with the thread state:
     * cframe_guessed is what this read guessed (0: none), cframe_word what
     * it read there. cframe_raddr: the cframe this walk started from.
     */
    uint64_t guess_cframe[UNWIND_CHUNK_GUESSES];
    uint64_t cframe_guessed, cframe_word, cframe_raddr;
    uint64_t top_frame; /* the current frame this walk started from */
    /* <= 3.11: the runtime's GIL, read once per sample */
    uint64_t rt_gil_holder;
    int32_t rt_gil_locked;
    /* each thread's last resolved frames: where, and by which resolve */
    struct resolved_thread resolved[UNWIND_CHUNK_GUESSES];
    struct resolved_tag *tags; /* per frame slot: what frames[i] was resolved from */
    uint64_t resolve_serial;   /* counts unwind_resolve() calls */
    uint64_t last_key;         /* the last stack_key handed out */
    uint64_t resolve_epoch;    /* moves whenever cached code entries change */
    /* this walk: end of the furthest frame read in each of the first chunks */
    size_t used_extent[UNWIND_GUESS_CHUNKS];
    uint64_t interp_guess; /* the first interpreter, read with the runtime */
    uint64_t main_guess;   /* its main thread's state, read in the same call */
    /* the interpreter fields lie close together: read [in_lo, in_lo + in_span)
     * as one range when the span is small (0: one range per field) */
    uint32_t in_lo, in_span;
    uint8_t interp_buf[UNWIND_INTERP_SPAN];
    /* the same for the runtime's interpreter list head and finalizing flag */
    uint32_t rt_lo, rt_span;
    uint8_t runtime_buf[UNWIND_RUNTIME_SPAN];
    size_t ts_read_len; /* bytes of a thread state that hold every field used */
    size_t ts_base_len; /* ... without the words asked for by unwinder_set_thread_words() */
    uint32_t word_off[UNWIND_THREAD_WORDS];
    size_t nwords;
    /* the last read of the runtime's fields found it running with the main
     * interpreter (interp_guess, static in _PyRuntime) first in the list and
     * its threads.main set: see unwinder_sample() */
    bool main_running;
    /* the chain as walked, to check it is still there afterwards */
    struct chain_link *chain;
    size_t nchain, chain_cap; /* chain_cap grows on demand to UNWIND_MAX_DEPTH */

    /* per-sample output */
    struct raw_frame *raw;
    struct unwind_frame *frames;
    size_t nframes;
    size_t frames_cap; /* raw, frames and tags; grows on demand to UNWIND_MAX_FRAMES */
    struct unwind_thread *threads;
    size_t threads_cap; /* grows on demand to UNWIND_MAX_THREADS */
    struct unwind_result result;

    /* code objects */
    struct codecache *codes;
    uint64_t gen_interp[UNWIND_MAX_GENERATIONS];
    uint64_t gen_value[UNWIND_MAX_GENERATIONS];
    uint32_t gen_tlbc[UNWIND_MAX_GENERATIONS];
    struct tlbc_slot tlbc[UNWIND_TLBC_SLOTS]; /* valid in the current epoch only */
    size_t ngen;
    uint8_t code_buf[PYABI_MAX_CODE];
    char name_buf[UNWIND_NAME_MAX];
    char file_buf[UNWIND_NAME_MAX];
    /* 3.13: the distinct code objects of each thread's last sample (per
     * slot, UNWIND_GUESS_CODES each, 0-terminated), read again with the
     * thread state into pre_buf: the re-check needs no call of its own */
    uint64_t *guess_codes;
    uint64_t pre_addr[UNWIND_GUESS_CODES];
    size_t npre;
    uint8_t *pre_buf;

    bool (*on_cpu)(void *ctx, uint64_t native_tid);
    void *on_cpu_ctx;
};

/* The frames outside the chunks remembered for the thread of slot @slot. */
#define UNWIND_GF(u, slot) ((u)->guess_frames + (size_t)(slot) * (u)->guess_max)

/* The per-thread memory slot of a thread state (a multiplicative hash: thread
 * states are often equally spaced, which a plain modulo would fold together). */
static size_t unwind_slot(uint64_t tstate_raddr)
{
    return (size_t)((tstate_raddr * HASH_GOLDEN) >> 58) % UNWIND_CHUNK_GUESSES;
}

/* Decides whether the interpreter fields a sample needs fit one small range. */
static void unwind_interp_span(struct unwinder *u)
{
    const struct py_layout *l = &u->l;
    uint32_t off[] = {l->in_id,
                      l->in_next,
                      l->in_threads_head,
                      l->in_threads_main,
                      l->in_gil_holder,
                      l->in_gc_collecting,
                      l->in_gil_locked,
                      l->has_gc_frame ? l->in_gc_frame : l->in_id,
                      l->has_code_generation ? l->in_code_generation : l->in_id,
                      l->has_tlbc ? l->in_tlbc_generation : l->in_id};
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(off); i++) {
        lo = off[i] < lo ? off[i] : lo;
        hi = off[i] + 8 > hi ? off[i] + 8 : hi;
    }
    u->in_lo = lo;
    u->in_span = hi - lo <= UNWIND_INTERP_SPAN ? hi - lo : 0;

    uint32_t a = l->rt_interpreters_head, b = l->rt_finalizing;
    u->rt_lo = a < b ? a : b;
    u->rt_span = (a > b ? a : b) + 8 - u->rt_lo;
    if (u->rt_span > UNWIND_RUNTIME_SPAN)
        u->rt_span = 0;

    /* Only the start of a thread state holds what a sample uses (the kernel
     * pins every page a range touches): read up to the last such field. */
    struct {
        uint32_t off, width;
    } ts[] = {{l->ts_next, 8},
              {l->ts_current_frame, 8},
              {l->has_base_frame ? l->ts_base_frame : 0, 8},
              {l->ts_thread_id, 8},
              {l->ts_native_thread_id, 8},
              {l->ts_datastack_chunk, 8},
              {l->holds_gil_kind == PYABI_GIL_INT ? l->ts_holds_gil : l->ts_status, 4},
              {l->has_gil_requested ? l->ts_gil_requested : 0, 4},
              {l->ts_current_exception, 8},
              {l->ts_exc_info, 8},
              {l->ts_exc_value, 8}};
    size_t end = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(ts); i++)
        end = ts[i].off + ts[i].width > end ? ts[i].off + ts[i].width : end;
    u->ts_read_len = end < l->ts_size ? end : l->ts_size;
    u->ts_base_len = u->ts_read_len;
}

int unwind_scratch_new(struct unwind_scratch **out)
{
    struct unwind_scratch *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->chunk_buf = alloc_malloc(UNWIND_CHUNK_BUF);
    s->verify_buf = alloc_malloc(UNWIND_CHUNK_BUF);
    s->visited = alloc_calloc(UNWIND_VISITED_SLOTS, sizeof(*s->visited));
    s->visited_stamp = alloc_calloc(UNWIND_VISITED_SLOTS, sizeof(*s->visited_stamp));
    s->linetable_buf = alloc_malloc(UNWIND_LINETABLE_MAX);
    if (!s->chunk_buf || !s->verify_buf || !s->visited || !s->visited_stamp || !s->linetable_buf) {
        unwind_scratch_free(s);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

void unwind_scratch_free(struct unwind_scratch *s)
{
    if (!s)
        return;
    alloc_free(s->chunk_buf);
    alloc_free(s->verify_buf);
    alloc_free(s->visited);
    alloc_free(s->visited_stamp);
    alloc_free(s->linetable_buf);
    alloc_free(s->check_addr);
    alloc_free(s->check_buf);
    alloc_free(s);
}

/*
 * A generated layout is checked against the live process before any sample
 * trusts it: the runtime's first interpreter has a thread whose state points
 * back at it, and the frame that thread runs (if any) holds a code object
 * (its type is PyCode_Type, when the binary names that) whose file name is a
 * str (PyUnicode_Type) that decodes. A runtime with no interpreter yet is
 * not checked (nothing to check against): NEEDSWORK, the check could run at
 * its first sample instead. Returns 0, or -EPROTO with "layout check
 * failed: ..." in @why, or a read error.
 */
static int unwind_check_layout(struct memread *mr, const struct pyruntime *rt,
                               const struct py_layout *l, char *why, size_t why_len)
{
    uint64_t head = 0, tstate = 0, back = 0, frame = 0, code = 0, type = 0, file = 0;
    int err = memread_read(mr, rt->raddr + l->rt_interpreters_head, &head, 8);
    if (err || head == 0)
        goto read_error;
    err = memread_read(mr, head + l->in_threads_head, &tstate, 8);
    if (err || tstate == 0)
        goto read_error;
    err = memread_read(mr, tstate + l->ts_interp, &back, 8);
    if (err)
        goto read_error;
    if (back != head) {
        snprintf(why, why_len,
                 "layout check failed: the thread state at 0x%" PRIx64
                 " names interpreter 0x%" PRIx64 ", not 0x%" PRIx64 " that lists it",
                 tstate, back, head);
        return -EPROTO;
    }
    if (l->has_cframe) {
        uint64_t cf = 0;
        if (memread_read(mr, tstate + l->ts_cframe, &cf, 8) || cf == 0 ||
            memread_read(mr, cf + l->cf_current_frame, &frame, 8))
            frame = 0;
    } else if (memread_read(mr, tstate + l->ts_current_frame, &frame, 8)) {
        frame = 0;
    }
    if (frame == 0)
        return 0; /* the thread runs no Python now: the links above must do */
    if (memread_read(mr, frame + l->fr_executable, &code, 8) || code == 0)
        return 0; /* (it moved on: a running thread's frame is not waited for) */
    code &= ~l->tag_mask;
    if (memread_read(mr, code + l->ob_type, &type, 8) == 0 && rt->code_type &&
        type != rt->code_type) {
        snprintf(why, why_len,
                 "layout check failed: the running frame's code object at 0x%" PRIx64
                 " has type 0x%" PRIx64 ", not PyCode_Type (0x%" PRIx64 ")",
                 code, type, rt->code_type);
        return -EPROTO;
    }
    if (memread_read(mr, code + l->co_filename, &file, 8) == 0 && file && rt->unicode_type &&
        (memread_read(mr, file + l->ob_type, &type, 8) != 0 || type != rt->unicode_type)) {
        snprintf(why, why_len,
                 "layout check failed: the code object at 0x%" PRIx64
                 " has no str where its file name should be",
                 code);
        return -EPROTO;
    }
    return 0;
read_error:
    if (err == -ESRCH || err == -EPERM) {
        snprintf(why, why_len, "cannot read the runtime: %s", memread_strerror(err));
        return err;
    }
    return 0; /* not running Python yet (no interpreter or thread): nothing to check */
}

#define UNWIND_MEMBERS_MAX 48u /* PyMemberDef entries read of one type */
#define UNWIND_MEMBER_NAME 24u /* bytes of a member's name read */

/* A member a type's table should list, at the offset the layout has. */
struct unwind_member_want {
    const char *name;
    uint32_t offset;
};

/*
 * The type object at @type describes its instances itself: its tp_basicsize
 * must be @basicsize (0: not compared), and every member of its PyMemberDef
 * table named in @want must sit at the offset the layout has for it.
 * Returns the number of members that agreed, or -EPROTO with "layout check
 * failed: ..." in @why. A table that cannot be read is not compared (0).
 */
static int unwind_check_members(struct memread *mr, uint64_t type, const char *type_name,
                                uint64_t basicsize, const struct unwind_member_want *want,
                                size_t nwant, char *why, size_t why_len)
{
    uint64_t size = 0, members = 0;
    struct memread_iov hdr[2] = {{type + PYABI_TYPE_BASICSIZE, &size, 8},
                                 {type + PYABI_TYPE_MEMBERS, &members, 8}};
    if (memread_readv(mr, hdr, 2) != 0)
        return 0;
    size = load_le64((const uint8_t *)&size);
    members = load_le64((const uint8_t *)&members);
    if (basicsize && size != basicsize) {
        snprintf(why, why_len,
                 "layout check failed: %s says its objects are %" PRIu64
                 " bytes, the generated layout %" PRIu64,
                 type_name, size, basicsize);
        return -EPROTO;
    }
    uint8_t table[UNWIND_MEMBERS_MAX * PYABI_MEMBERDEF_SIZE];
    size_t n = UNWIND_MEMBERS_MAX;
    /* the table may end near the end of its mapping: fewer entries then */
    while (members && n >= 8 && memread_read(mr, members, table, n * PYABI_MEMBERDEF_SIZE) != 0)
        n /= 2;
    if (!members || n < 8)
        return 0;
    char names[UNWIND_MEMBERS_MAX][UNWIND_MEMBER_NAME] = {{0}};
    struct memread_iov iov[UNWIND_MEMBERS_MAX];
    size_t count = 0;
    for (; count < n; count++) {
        uint64_t name = load_le64(table + count * PYABI_MEMBERDEF_SIZE);
        if (!name)
            break;
        iov[count] = (struct memread_iov){name, names[count], UNWIND_MEMBER_NAME};
    }
    /* names near the end of a mapping: one by one, shorter */
    if (count && memread_readv(mr, iov, count) != 0) {
        for (size_t i = 0; i < count; i++) {
            if (memread_read(mr, iov[i].raddr, names[i], 12) != 0)
                names[i][0] = '\0';
            names[i][11] = '\0';
        }
    }
    int agreed = 0;
    for (size_t i = 0; i < count; i++) {
        names[i][UNWIND_MEMBER_NAME - 1] = '\0';
        uint64_t off = load_le64(table + i * PYABI_MEMBERDEF_SIZE + PYABI_MEMBERDEF_OFF);
        for (size_t k = 0; k < nwant; k++) {
            if (strcmp(names[i], want[k].name) != 0)
                continue;
            if (off != want[k].offset) {
                snprintf(why, why_len,
                         "layout check failed: %s says %s is at %" PRIu64
                         ", the generated layout at %" PRIu32,
                         type_name, want[k].name, off, want[k].offset);
                return -EPROTO;
            }
            agreed++;
        }
    }
    return agreed;
}

/*
 * What the running binary says of its own layout (a generated one), where
 * it says it: PyCode_Type's instance size and member offsets, and on 3.9 and
 * 3.10 PyFrame_Type's. Returns the number of offsets that agreed, or
 * -EPROTO (@why says which did not).
 */
static int unwind_check_types(struct memread *mr, const struct pyruntime *rt,
                              const struct py_layout *l, char *why, size_t why_len)
{
    const struct unwind_member_want code[] = {
        {"co_filename", l->co_filename},
        {"co_name", l->co_name},
        {"co_firstlineno", l->co_firstlineno},
        {l->lines == PYABI_LINES_LNOTAB ? "co_lnotab" : "co_linetable", l->co_linetable},
        {l->frame_objects ? "" : "co_qualname", l->co_qualname},
    };
    int agreed = 0, n;
    if (rt->code_type) {
        /* 3.11+: the instance ends where the bytecode starts */
        n = unwind_check_members(mr, rt->code_type, "PyCode_Type",
                                 l->frame_objects ? l->co_size : l->co_adaptive, code,
                                 PYPROFD_ARRAY_SIZE(code), why, why_len);
        if (n < 0)
            return n;
        agreed += n;
    }
    if (rt->frame_type && l->frame_objects) {
        const struct unwind_member_want frame[] = {
            {"f_back", l->fr_previous},
            {"f_code", l->fr_executable},
            {"f_lasti", l->fr_instr_ptr},
        };
        n = unwind_check_members(mr, rt->frame_type, "PyFrame_Type", l->fo_size, frame,
                                 PYPROFD_ARRAY_SIZE(frame), why, why_len);
        if (n < 0)
            return n;
        agreed += n;
    }
    return agreed;
}

int unwinder_new(struct memread *mr, const struct pyruntime *rt, struct unwinder **out, char *why,
                 size_t why_len)
{
    return unwinder_new_shared(mr, rt, NULL, out, why, why_len);
}

int unwinder_new_shared(struct memread *mr, const struct pyruntime *rt,
                        struct unwind_scratch *scratch, struct unwinder **out, char *why,
                        size_t why_len)
{
    uint8_t table[PYABI_MAX_TABLE];
    struct py_layout layout;
    int err;
    if (rt->no_table) {
        /* 3.11, 3.12: a layout generated from the version's headers */
        err = pyabi_layout_generated(
            &rt->version, pyabi_generated_for(rt->version.major == 3 ? rt->version.minor : 0),
            &layout, why, why_len);
        if (err)
            return err;
    } else {
        const struct pyabi_schema *schema =
            pyabi_schema_for(rt->version.major == 3 ? rt->version.minor : 0);
        size_t table_len = schema ? schema->table_size : PYVERSION_HEADER_SIZE;
        if (table_len > rt->section_size) {
            snprintf(why, why_len,
                     "debug offsets: .PyRuntime (%" PRIu64 " bytes) is smaller than the table",
                     rt->section_size);
            return -EPROTO;
        }
        err = memread_read(mr, rt->raddr, table, table_len);
        if (err) {
            snprintf(why, why_len, "cannot read the debug offsets table: %s",
                     memread_strerror(err));
            return err;
        }
        err = pyabi_layout_load(&rt->version, table, table_len, &layout, why, why_len);
        if (err)
            return err;
    }
    /* a layout not from the target is checked against it first; a running
     * thread can move between the reads, so only three failures in a row
     * refuse it */
    for (int tries = 0; rt->no_table && tries < 3; tries++) {
        err = unwind_check_layout(mr, rt, &layout, why, why_len);
        if (err != -EPROTO)
            break;
    }
    if (rt->no_table && err)
        return err;
    if (rt->no_table) {
        int agreed = unwind_check_types(mr, rt, &layout, why, why_len);
        if (agreed < 0)
            return agreed;
        layout.members_agreed = (unsigned)agreed;
    }
    struct unwinder *u = alloc_calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->l = layout;
    err = -ENOMEM;
    u->optable = pyopcode_table(rt->version.minor);
    u->mr = mr;
    u->runtime_raddr = rt->raddr;
    u->none_object = rt->no_table ? rt->none_object : 0;
    u->ns_pid = rt->ns_pid;
    if (scratch) {
        u->sc = scratch;
    } else {
        err = unwind_scratch_new(&u->sc);
        if (err) {
            snprintf(why, why_len, "out of memory for the unwinder's scratch");
            goto fail;
        }
        u->own_sc = true;
        err = -ENOMEM;
    }
    u->guess_max = u->l.frame_objects ? UNWIND_GUESS_FRAMEOBJS : UNWIND_GUESS_FRAMES;
    u->extra = alloc_calloc(u->guess_max, u->l.fr_size);
    if (u->l.frame_objects)
        u->span_buf = alloc_malloc(UNWIND_SPAN_BUF);
    u->guess_frames = alloc_calloc((size_t)UNWIND_CHUNK_GUESSES * u->guess_max, sizeof(uint64_t));
    u->chain_cap = UNWIND_CHAIN_START;
    u->chain = alloc_calloc(u->chain_cap, sizeof(*u->chain));
    u->frames_cap = UNWIND_FRAMES_START;
    u->raw = alloc_calloc(u->frames_cap, sizeof(*u->raw));
    u->frames = alloc_calloc(u->frames_cap, sizeof(*u->frames));
    u->tags = alloc_calloc(u->frames_cap, sizeof(*u->tags));
    u->threads_cap = UNWIND_THREADS_START;
    u->threads = alloc_calloc(u->threads_cap, sizeof(*u->threads));
    if (!u->l.has_code_generation) { /* 3.13's re-check of cached code objects */
        if (u->sc->check_len < u->l.co_read_len) {
            uint8_t *b = alloc_malloc((size_t)MEMREAD_MAX_IOV * u->l.co_read_len);
            if (b) {
                alloc_free(u->sc->check_buf);
                u->sc->check_buf = b;
                u->sc->check_len = u->l.co_read_len;
            }
        }
        if (!u->sc->check_addr)
            u->sc->check_addr = alloc_calloc(MEMREAD_MAX_IOV, sizeof(*u->sc->check_addr));
        u->guess_codes = alloc_calloc((size_t)UNWIND_CHUNK_GUESSES * UNWIND_GUESS_CODES,
                                      sizeof(*u->guess_codes));
        u->pre_buf = alloc_malloc((size_t)UNWIND_GUESS_CODES * u->l.co_read_len);
    }
    if (!u->chain || !u->raw || !u->frames || !u->tags || !u->threads || !u->extra ||
        !u->guess_frames || (u->l.frame_objects && !u->span_buf) ||
        (!u->l.has_code_generation && (!u->guess_codes || !u->pre_buf || !u->sc->check_addr ||
                                       u->sc->check_len < u->l.co_read_len))) {
        snprintf(why, why_len, "out of memory for the unwinder's buffers");
        goto fail;
    }
    err = codecache_new(UNWIND_CODE_START, UNWIND_CODE_ENTRIES, UNWIND_CODE_ARENA, &u->codes);
    if (err) {
        snprintf(why, why_len, "out of memory for the code cache");
        goto fail;
    }
    u->result.threads = u->threads;
    u->resolve_epoch = 1; /* tags of epoch 0 are never reused */
    unwind_interp_span(u);
    *out = u;
    return 0;
fail:
    unwinder_free(u);
    return err;
}

void unwinder_free(struct unwinder *u)
{
    if (!u)
        return;
    codecache_free(u->codes);
    if (u->own_sc)
        unwind_scratch_free(u->sc);
    alloc_free(u->chain);
    alloc_free(u->raw);
    alloc_free(u->frames);
    alloc_free(u->tags);
    alloc_free(u->threads);
    alloc_free(u->guess_codes);
    alloc_free(u->pre_buf);
    alloc_free(u->extra);
    alloc_free(u->span_buf);
    alloc_free(u->guess_frames);
    alloc_free(u);
}

void unwinder_set_on_cpu(struct unwinder *u, bool (*on_cpu)(void *ctx, uint64_t native_tid),
                         void *ctx)
{
    u->on_cpu = on_cpu;
    u->on_cpu_ctx = ctx;
}

int unwinder_set_thread_words(struct unwinder *u, const uint32_t *offsets, size_t n)
{
    if (n > UNWIND_THREAD_WORDS)
        return -EINVAL;
    size_t end = u->ts_base_len;
    for (size_t i = 0; i < n; i++) {
        if (offsets[i] % 8 != 0 || (size_t)offsets[i] + 8 > PYABI_MAX_TSTATE)
            return -EINVAL;
        end = offsets[i] + 8u > end ? offsets[i] + 8u : end;
    }
    for (size_t i = 0; i < n; i++)
        u->word_off[i] = offsets[i];
    u->nwords = n;
    u->ts_read_len = end;
    return 0;
}

const struct py_layout *unwinder_layout(const struct unwinder *u)
{
    return &u->l;
}

/* --- walking ----------------------------------------------------------- */

/* Remembers @addr for this walk; false if it was seen already (a loop). */
static bool unwind_visit(struct unwinder *u, uint64_t addr)
{
    size_t i = (size_t)((addr >> 3) * HASH_GOLDEN) & (UNWIND_VISITED_SLOTS - 1);
    for (;; i = (i + 1) & (UNWIND_VISITED_SLOTS - 1)) {
        if (u->sc->visited_stamp[i] != u->sc->stamp) {
            u->sc->visited_stamp[i] = u->sc->stamp;
            u->sc->visited[i] = addr;
            return true;
        }
        if (u->sc->visited[i] == addr)
            return false;
    }
}

/*
 * Registers the chunk whose first @copied bytes were copied to @dst: a
 * guess's partial copy (@guessed), or the first UNWIND_CHUNK_DEFAULT bytes.
 * Returns 0, 1 when it is not a chunk, or a read error.
 */
static int unwind_add_chunk(struct unwinder *u, uint64_t raddr, uint8_t *dst, size_t copied,
                            bool guessed)
{
    uint64_t size = load_le64(dst + 8);
    if (size <= PYABI_CHUNK_HEADER || size > UNWIND_CHUNK_MAX) {
        u->next_chunk = 0;
        return 1; /* not a chunk: stop copying, frames are read directly */
    }
    size_t have = copied;
    if (guessed) {
        have = (size_t)size < copied ? (size_t)size : copied; /* frames beyond: read directly */
    } else if (size > have) {
        /* a big chunk: copy what fits, read frames beyond it directly */
        have = (size_t)size <= UNWIND_CHUNK_BUF - u->chunk_used ? (size_t)size
                                                                : UNWIND_CHUNK_BUF - u->chunk_used;
        int err = memread_read(u->mr, raddr, dst, have);
        if (err)
            return err;
    } else {
        have = (size_t)size;
    }
    u->chunk_low[u->nchunks] = UINT64_MAX;
    u->chunks[u->nchunks++] = (struct chunk_copy){raddr, have, dst, size};
    u->chunk_used += have;
    u->next_chunk = load_le64(dst); /* previous (older) chunk */
    return 0;
}

/* Copies the next older data-stack chunk. Returns 0, 1 when there is none, or an error. */
static int unwind_load_chunk(struct unwinder *u)
{
    if (u->next_chunk == 0 || u->nchunks == UNWIND_MAX_CHUNKS ||
        UNWIND_CHUNK_BUF - u->chunk_used < UNWIND_CHUNK_DEFAULT)
        return 1;
    uint64_t raddr = u->next_chunk;
    uint8_t *dst = u->sc->chunk_buf + u->chunk_used;
    int err = memread_read(u->mr, raddr, dst, UNWIND_CHUNK_DEFAULT);
    return err ? err : unwind_add_chunk(u, raddr, dst, UNWIND_CHUNK_DEFAULT, false);
}

/*
 * A thread state is read together with, in the same system call, the chunks
 * its last walk went through (they rarely change): one read instead of
 * several, and the thread state and its frames are copied microseconds
 * apart. What was guessed, for unwind_thread_finish():
 */
struct thread_read {
    size_t slot;
    size_t nguess; /* chunks copied with the thread state, newest first */
    uint64_t guess[UNWIND_GUESS_CHUNKS];
    size_t off[UNWIND_GUESS_CHUNKS], len[UNWIND_GUESS_CHUNKS]; /* where in chunk_buf */
};

/* Sets up the ranges of a thread read into @iov (at most UNWIND_THREAD_IOV). */
static size_t unwind_thread_prepare(struct unwinder *u, uint64_t tstate_raddr,
                                    struct memread_iov *iov, struct thread_read *tr)
{
    const struct py_layout *l = &u->l;
    size_t slot = unwind_slot(tstate_raddr);
    bool known = u->guess_tstate[slot] == tstate_raddr;
    *tr = (struct thread_read){.slot = slot};
    u->nchunks = 0;
    u->chunk_used = 0;
    u->nextra = 0;
    u->nseen_extra = 0;
    u->tstate_raddr = tstate_raddr;
    u->tstate_len = u->ts_read_len;

    size_t n = 0;
    iov[n++] = (struct memread_iov){tstate_raddr, u->tstate, u->tstate_len};
    u->cframe_guessed = 0;
    u->pthread_guessed = 0;
    if (known && u->tid_off && u->guess_pthread[slot]) {
        u->pthread_guessed = u->guess_pthread[slot];
        iov[n++] = (struct memread_iov){u->pthread_guessed + u->tid_off, &u->tid_word, 4};
    }
    if (known && l->has_cframe && u->guess_cframe[slot]) {
        u->cframe_guessed = u->guess_cframe[slot];
        iov[n++] =
            (struct memread_iov){u->cframe_guessed + l->cf_current_frame, &u->cframe_word, 8};
    }
    /* Only the part of each chunk the last walk used is copied: most stacks
     * use a few KiB of the 16, copied to the end of a page, the newest with
     * slack for a deeper call; unless the thread's last two walks found the
     * same chain: a steady stack (a sleeping or waiting target) costs only
     * the bytes it uses. Frames beyond are read
     * directly, and the next sample copies more. */
    size_t off = 0;
    for (size_t i = 0; known && i < UNWIND_GUESS_CHUNKS; i++) {
        const struct chunk_guess *g = &u->guess_chunks[slot][i];
        if (!g->raddr)
            break;
        size_t len = UNWIND_CHUNK_DEFAULT;
        if (g->used) {
            len = g->steady ? g->used
                            : ((size_t)g->used + (i == 0 ? UNWIND_CHUNK_SLACK : 0) + 4095) &
                                  ~(size_t)4095;
            if (len > g->real_size)
                len = (size_t)g->real_size;
        }
        if (len > UNWIND_CHUNK_BUF - off)
            break;
        tr->guess[i] = g->raddr;
        tr->off[i] = off;
        tr->len[i] = len;
        tr->nguess++;
        iov[n++] = (struct memread_iov){g->raddr, u->sc->chunk_buf + off, len};
        off += len;
    }
    /* (ascending: frames that lie close together share a range) */
    const uint64_t *gf = UNWIND_GF(u, slot);
    size_t span_used = 0;
    for (size_t i = 0; known && i < u->guess_max && gf[i];) {
        size_t j = i + 1;
        uint64_t end = gf[i] + l->fr_size;
        while (u->span_buf && j < u->guess_max && gf[j] &&
               gf[j] + l->fr_size - gf[i] <= UNWIND_FRAMEOBJ_SPAN &&
               span_used + (gf[j] + l->fr_size - gf[i]) <= UNWIND_SPAN_BUF) {
            end = gf[j] + l->fr_size;
            j++;
        }
        uint8_t *dst;
        if (j - i > 1) {
            dst = u->span_buf + span_used;
            span_used += (size_t)(end - gf[i]);
        } else {
            dst = u->extra + u->nextra * l->fr_size;
        }
        iov[n++] = (struct memread_iov){gf[i], dst, (size_t)(end - gf[i])};
        for (; i < j; i++) {
            u->extra_raddr[u->nextra] = gf[i];
            u->extra_at[u->nextra++] = dst + (gf[i] - iov[n - 1].raddr);
        }
    }
    /* 3.13: the code objects of the last sample, for unwind_recheck_codes() */
    u->npre = 0;
    const uint64_t *codes = u->guess_codes ? u->guess_codes + slot * UNWIND_GUESS_CODES : NULL;
    for (size_t i = 0; known && codes && i < UNWIND_GUESS_CODES && codes[i]; i++) {
        u->pre_addr[u->npre] = codes[i];
        iov[n++] =
            (struct memread_iov){codes[i], u->pre_buf + u->npre * l->co_read_len, l->co_read_len};
        u->npre++;
    }
    return n;
}

/* Completes a thread read whose ranges were all read. Returns 0 or a read error. */
static int unwind_thread_finish(struct unwinder *u, const struct thread_read *tr)
{
    const struct py_layout *l = &u->l;
    u->next_chunk = l->has_datastack ? load_le64(u->tstate + l->ts_datastack_chunk) : 0;
    if (u->guess_tstate[tr->slot] != u->tstate_raddr) {
        u->guess_tstate[tr->slot] = u->tstate_raddr;
        memset(u->guess_chunks[tr->slot], 0, sizeof(u->guess_chunks[tr->slot]));
        memset(UNWIND_GF(u, tr->slot), 0, u->guess_max * sizeof(uint64_t));
        u->guess_cframe[tr->slot] = 0;
        u->guess_pthread[tr->slot] = 0;
        if (u->guess_codes)
            u->guess_codes[tr->slot * UNWIND_GUESS_CODES] = 0;
    }
    memset(u->used_extent, 0, sizeof(u->used_extent));
    /* each guess holds while the chain of chunks is the same */
    for (size_t i = 0; i < tr->nguess && tr->guess[i] == u->next_chunk; i++) {
        int err =
            unwind_add_chunk(u, tr->guess[i], u->sc->chunk_buf + tr->off[i], tr->len[i], true);
        if (err < 0)
            return err;
        if (err > 0)
            break;
        u->chunk_used = tr->off[i] + tr->len[i];
    }
    return 0;
}

/*
 * Forgets what the last walk of the thread at @tstate_raddr taught: the
 * chunks and outside frames read with its state. A read that carried them
 * failed, and a guess that can never be read (a wild address from a torn
 * walk) must not fail every later sample of the thread.
 */
static void unwind_forget_guesses(struct unwinder *u, uint64_t tstate_raddr)
{
    size_t slot = unwind_slot(tstate_raddr);
    if (u->guess_tstate[slot] != tstate_raddr)
        return;
    memset(u->guess_chunks[slot], 0, sizeof(u->guess_chunks[slot]));
    memset(UNWIND_GF(u, slot), 0, u->guess_max * sizeof(uint64_t));
    u->guess_cframe[slot] = 0;
    u->guess_pthread[slot] = 0;
    if (u->guess_codes)
        u->guess_codes[slot * UNWIND_GUESS_CODES] = 0;
}

/* Whether a read that failed with @err may succeed without the guesses it carried. */
static bool unwind_guess_may_be_why(int err)
{
    return err != 0 && err != -ESRCH && err != -EPERM;
}

static int unwind_read_thread(struct unwinder *u, uint64_t tstate_raddr)
{
    struct memread_iov iov[UNWIND_THREAD_IOV];
    struct thread_read tr;
    size_t n = unwind_thread_prepare(u, tstate_raddr, iov, &tr);
    int err = memread_readv(u->mr, iov, n);
    if (unwind_guess_may_be_why(err)) {
        /* a guess went stale (a chunk freed, a wild frame address), or the
         * struct ends early: plainly, and learn the guesses again */
        unwind_forget_guesses(u, tstate_raddr);
        tr.nguess = 0;
        u->nextra = 0;
        u->npre = 0;
        u->cframe_guessed = 0;
        u->pthread_guessed = 0;
        err = memread_read(u->mr, tstate_raddr, u->tstate, u->tstate_len);
    }
    return err ? err : unwind_thread_finish(u, &tr);
}

/* Remembers the chunks this walk went through and the frames it had to read
 * on their own, for the next sample; @steady: the chain is the thread's
 * last verified one. */
static void unwind_remember_extra(struct unwinder *u, bool steady)
{
    size_t slot = unwind_slot(u->tstate_raddr);
    size_t keep = 1; /* the newest chunk always (the stack may grow back into it) */
    for (size_t i = 1; i < u->nchunks && i < UNWIND_GUESS_CHUNKS; i++) {
        if (u->used_extent[i])
            keep = i + 1;
    }
    for (size_t i = 0; i < UNWIND_GUESS_CHUNKS; i++) {
        struct chunk_guess *g = &u->guess_chunks[slot][i];
        if (i < keep && i < u->nchunks)
            *g = (struct chunk_guess){u->chunks[i].raddr, u->chunks[i].real_size,
                                      (uint32_t)u->used_extent[i], steady};
        else
            *g = (struct chunk_guess){0}; /* (a walk that used no chunk: none) */
    }
    /* ascending, for the read that fetches them and the search that finds them */
    uint64_t *gf = UNWIND_GF(u, slot);
    for (size_t i = 0; i < u->guess_max; i++) {
        uint64_t a = i < u->nseen_extra ? u->seen_extra[i] : 0;
        size_t k = i;
        for (; a && k > 0 && gf[k - 1] > a; k--)
            gf[k] = gf[k - 1];
        gf[k] = a;
    }
}

/*
 * The frame at @addr: from a chunk copy (*@chunk = its index), else read
 * directly (*@chunk = -1). NULL + *err on failure.
 */
static const uint8_t *unwind_frame_at(struct unwinder *u, uint64_t addr, int32_t *chunk, int *err)
{
    size_t fr = u->l.fr_size;
    *chunk = -1;
    bool beyond = false; /* in a chunk, past the part copied: no other chunk holds it */
    while (!beyond) {
        for (size_t i = 0; i < u->nchunks; i++) {
            const struct chunk_copy *c = &u->chunks[i];
            if (addr >= c->raddr + PYABI_CHUNK_HEADER && addr - c->raddr <= c->size &&
                c->size - (addr - c->raddr) >= fr) {
                if (i < UNWIND_GUESS_CHUNKS && addr - c->raddr + fr > u->used_extent[i])
                    u->used_extent[i] = (size_t)(addr - c->raddr) + fr;
                *chunk = (int32_t)i;
                return c->data + (addr - c->raddr);
            }
            if (addr >= c->raddr + PYABI_CHUNK_HEADER && addr - c->raddr < c->real_size) {
                beyond = true;
                if (i < UNWIND_GUESS_CHUNKS && addr - c->raddr + fr > u->used_extent[i])
                    u->used_extent[i] = (size_t)(addr - c->raddr) + fr; /* copy more next time */
            }
        }
        if (beyond)
            break;
        /* inside what was read with the thread state? */
        if (addr >= u->tstate_raddr && addr - u->tstate_raddr <= u->tstate_len &&
            u->tstate_len - (addr - u->tstate_raddr) >= fr)
            return u->tstate + (addr - u->tstate_raddr);
        /* frames read with the thread state (ascending: a binary search) */
        size_t lo = 0, hi = u->nextra;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (u->extra_raddr[mid] < addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < u->nextra && u->extra_raddr[lo] == addr) {
            if (u->nseen_extra < u->guess_max)
                u->seen_extra[u->nseen_extra++] = addr;
            return u->extra_at[lo];
        }
        int rc = unwind_load_chunk(u);
        if (rc < 0) {
            *err = rc;
            return NULL;
        }
        if (rc > 0)
            break;
    }
    if (!beyond && u->nseen_extra < u->guess_max)
        u->seen_extra[u->nseen_extra++] = addr; /* (beyond: a larger copy next time) */
    *err = memread_read(u->mr, addr, u->frame_buf, fr);
    return *err ? NULL : u->frame_buf;
}

/* A copy of @n elements of @size from @old in a new block of @cap elements,
 * the rest zeroed; NULL when out of memory (@old is kept). */
static void *unwind_regrow(const void *old, size_t n, size_t cap, size_t size)
{
    uint8_t *p = alloc_malloc(cap * size);
    if (!p)
        return NULL;
    memcpy(p, old, n * size);
    memset(p + n * size, 0, (cap - n) * size);
    return p;
}

/*
 * Doubles the frame slots (raw, frames, tags) up to UNWIND_MAX_FRAMES: the
 * one allocation a sample may make, only when a sample holds more frames
 * than any before (a few times in the unwinder's life). The threads of this
 * sample already walked are pointed at the new frames. Returns false (the
 * frame is left out, as at the cap) when out of memory.
 */
static bool unwind_grow_frames(struct unwinder *u)
{
    if (u->frames_cap >= UNWIND_MAX_FRAMES)
        return false;
    size_t cap = u->frames_cap * 2 < UNWIND_MAX_FRAMES ? u->frames_cap * 2 : UNWIND_MAX_FRAMES;
    struct raw_frame *raw = unwind_regrow(u->raw, u->frames_cap, cap, sizeof(*raw));
    struct unwind_frame *frames = unwind_regrow(u->frames, u->frames_cap, cap, sizeof(*frames));
    struct resolved_tag *tags = unwind_regrow(u->tags, u->frames_cap, cap, sizeof(*tags));
    if (!raw || !frames || !tags) {
        alloc_free(raw);
        alloc_free(frames);
        alloc_free(tags);
        return false;
    }
    for (size_t i = 0; i < u->result.nthreads; i++) {
        struct unwind_thread *t = &u->threads[i];
        if (t->frames)
            t->frames = frames + (t->frames - u->frames);
    }
    alloc_free(u->raw);
    alloc_free(u->frames);
    alloc_free(u->tags);
    u->raw = raw;
    u->frames = frames;
    u->tags = tags;
    u->frames_cap = cap;
    return true;
}

/*
 * Doubles the thread slots up to UNWIND_MAX_THREADS, as unwind_grow_frames()
 * does the frames: only when a sample holds more threads than any before.
 * Returns false (the thread is left out, as at the cap) when out of memory.
 */
static bool unwind_grow_threads(struct unwinder *u)
{
    if (u->threads_cap >= UNWIND_MAX_THREADS)
        return false;
    size_t cap = u->threads_cap * 2 < UNWIND_MAX_THREADS ? u->threads_cap * 2 : UNWIND_MAX_THREADS;
    struct unwind_thread *t = unwind_regrow(u->threads, u->threads_cap, cap, sizeof(*t));
    if (!t)
        return false;
    alloc_free(u->threads);
    u->threads = t;
    u->threads_cap = cap;
    u->result.threads = t;
    return true;
}

static bool unwind_push(struct unwinder *u, size_t first, uint64_t code, uint64_t ip,
                        enum unwind_frame_kind kind, uint64_t frame)
{
    if (u->nframes == UNWIND_MAX_FRAMES || u->nframes - first >= UNWIND_MAX_DEPTH)
        return false;
    if (u->nframes == u->frames_cap && !unwind_grow_frames(u))
        return false;
    u->raw[u->nframes++] = (struct raw_frame){code, ip, kind, frame, 0};
    return true;
}

/* A frame's bytecode copy (free-threaded 3.14+); 0 is the code's own, and
 * so is anything out of range (the position is then looked up in vain). */
static uint32_t unwind_frame_tlbc(const struct py_layout *l, const uint8_t *fr)
{
    if (!l->has_tlbc)
        return 0;
    int32_t i = (int32_t)load_le32(fr + l->fr_tlbc_index);
    return i > 0 && i < PYABI_MAX_TLBC ? (uint32_t)i : 0;
}

/* A frame's instruction: instr_ptr, or (<= 3.10) f_lasti sign-extended. */
static uint64_t unwind_frame_ip(const struct py_layout *l, const uint8_t *fr)
{
    if (l->frame_objects)
        return (uint64_t)(int64_t)(int32_t)load_le32(fr + l->fr_instr_ptr);
    return load_le64(fr + l->fr_instr_ptr);
}

/*
 * The frame the thread runs (u->top_frame), from its thread state; on 3.11
 * and 3.12 through the _PyCFrame the state points at, whose word was read
 * with the state when the thread's last cframe was guessed right, else here.
 */
static enum sample_status unwind_top_frame(struct unwinder *u)
{
    const struct py_layout *l = &u->l;
    if (!l->has_cframe) {
        u->top_frame = load_le64(u->tstate + l->ts_current_frame);
        return SAMPLE_OK;
    }
    uint64_t cf = load_le64(u->tstate + l->ts_cframe);
    u->cframe_raddr = cf;
    u->top_frame = 0;
    if (!cf)
        return SAMPLE_OK; /* (a thread state being set up) */
    size_t slot = unwind_slot(u->tstate_raddr);
    if (cf == u->cframe_guessed) {
        u->top_frame = load_le64((const uint8_t *)&u->cframe_word);
        return SAMPLE_OK;
    }
    uint64_t word = 0;
    int err = memread_read(u->mr, cf + l->cf_current_frame, &word, sizeof(word));
    if (err)
        return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
    u->top_frame = load_le64((const uint8_t *)&word);
    if (u->guess_tstate[slot] == u->tstate_raddr)
        u->guess_cframe[slot] = cf;
    return SAMPLE_OK;
}

/* Walks one thread's chain into raw frames. Returns its status. */
static enum sample_status unwind_walk(struct unwinder *u, const struct interp_view *in,
                                      unsigned flags, size_t first)
{
    const struct py_layout *l = &u->l;
    u->sc->stamp++;
    u->nchain = 0;
    uint64_t addr = u->top_frame;
    uint64_t base = l->has_base_frame ? load_le64(u->tstate + l->ts_base_frame) : 0;
    uint64_t gc_frame = (flags & UNWIND_NO_GC) ? 0 : in->gc_frame;
    uint64_t last = 0;
    bool last_entry = true; /* the last frame walked starts a run of Python (an entry) */
    size_t emitted = 0;

    /* Loops: inside one data-stack chunk a caller always lies below its
     * callee (the stack grows up), so while every chunk's frames come in
     * falling addresses none can repeat, and only the frames outside chunks
     * need the visited set. The first frame that breaks the order puts every
     * frame into the set. */
    bool ordered = true;
    while (addr) {
        if (addr == base) {
            /* 3.15's base frame: the bottom of every complete chain, with no
             * previous frame and nothing to show (CPython sets it up so once
             * per thread). Not read. */
            last = addr;
            last_entry = true;
            break;
        }
        int err = 0;
        int32_t chunk;
        const uint8_t *fr = unwind_frame_at(u, addr, &chunk, &err);
        if (!fr)
            return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
        if (ordered && chunk >= 0 && addr < u->chunk_low[chunk]) {
            u->chunk_low[chunk] = addr;
        } else {
            if (ordered && chunk >= 0) {
                ordered = false;
                for (size_t i = 0; i < u->nchain; i++) {
                    if (u->chain[i].chunk >= 0)
                        (void)unwind_visit(u, u->chain[i].raddr);
                }
            }
            if (!unwind_visit(u, addr))
                return SAMPLE_CYCLE;
        }
        /* <= 3.10: frame objects are all Python frames, with no owner; a
         * caller's frame (below the top) is running its loop, or the chain
         * was followed into a frame freed or reused meanwhile: torn (a NULL
         * f_back read there would otherwise end it early as if complete) */
        if (l->has_fr_state && u->nchain > 0 && (int8_t)fr[l->fr_state] != l->fr_state_live)
            return SAMPLE_INCOMPLETE;
        unsigned owner = l->frame_objects ? PYABI_OWNER_THREAD : fr[l->fr_owner];
        uint64_t exe = load_le64(fr + l->fr_executable) & ~l->tag_mask;
        uint64_t prev = load_le64(fr + l->fr_previous);
        if (u->nchain == UNWIND_MAX_DEPTH)
            return SAMPLE_TOO_DEEP;
        if (u->nchain == u->chain_cap) {
            /* a deeper stack than any before: the chain doubles (rare) */
            size_t cap = u->chain_cap * 2 < UNWIND_MAX_DEPTH ? u->chain_cap * 2 : UNWIND_MAX_DEPTH;
            struct chain_link *c = unwind_regrow(u->chain, u->nchain, cap, sizeof(*c));
            if (!c)
                return SAMPLE_TOO_DEEP;
            alloc_free(u->chain);
            u->chain = c;
            u->chain_cap = cap;
        }
        /* field by field: a compound literal would clear the 512-byte
         * re-read buffer of every link on every sample */
        struct chain_link *link = &u->chain[u->nchain++];
        link->raddr = addr;
        link->previous = prev;
        link->executable = load_le64(fr + l->fr_executable);
        link->instr_ptr = unwind_frame_ip(l, fr);
        link->leaf = emitted == 0;
        link->chunk = chunk;
        link->buf_off = chunk >= 0 ? (size_t)(fr - u->sc->chunk_buf) : 0;
        if (owner == PYABI_OWNER_INTERPRETER) {
            /* C called back into Python here. Not at the root: on 3.15 the
             * outermost entry frame links to the base frame, on 3.13/3.14 to nothing. */
            if (flags & UNWIND_ENTRIES) {
                /* (3.15's base frame is the thread state's, not a loop's) */
                if (addr != base && !unwind_push(u, first, 0, 0, UNWIND_FRAME_NATIVE, addr))
                    return SAMPLE_TOO_DEEP;
            } else if ((flags & UNWIND_NATIVE) && prev && prev != base && emitted &&
                       prev != gc_frame) {
                if (!unwind_push(u, first, 0, 0, UNWIND_FRAME_NATIVE, 0))
                    return SAMPLE_TOO_DEEP;
            }
        } else if (owner == PYABI_OWNER_THREAD || owner == PYABI_OWNER_GENERATOR) {
            if (exe) { /* a null executable: the frame is being cleared */
                if (gc_frame && addr == gc_frame &&
                    !unwind_push(u, first, 0, 0, UNWIND_FRAME_GC, 0))
                    return SAMPLE_TOO_DEEP;
                if (!unwind_push(u, first, exe, unwind_frame_ip(l, fr), UNWIND_FRAME_PYTHON, addr))
                    return SAMPLE_TOO_DEEP;
                u->raw[u->nframes - 1].tlbc = unwind_frame_tlbc(l, fr);
                emitted++;
            }
            /* 3.11: no shim frames; the first frame an eval loop ran says
             * so, and C called it (below it, its caller's C code) */
            if (l->has_is_entry && fr[l->fr_is_entry] &&
                ((flags & UNWIND_ENTRIES) || ((flags & UNWIND_NATIVE) && prev && emitted)) &&
                !unwind_push(u, first, 0, 0, UNWIND_FRAME_NATIVE, 0))
                return SAMPLE_TOO_DEEP;
        } else {
            return SAMPLE_BAD_FRAME;
        }
        last = addr;
        /* (<= 3.10: a chain of frame objects ends where f_back is NULL) */
        last_entry = l->frame_objects  ? true
                     : l->has_is_entry ? owner != PYABI_OWNER_INTERPRETER && fr[l->fr_is_entry]
                                       : owner == PYABI_OWNER_INTERPRETER;
        addr = prev;
    }
    /* Torn-read detection: a complete chain ends at the base frame (3.15) or
     * at an entry frame (3.11 to 3.14). An empty chain (no Python running)
     * is fine. */
    if (last != 0 && (l->has_base_frame ? last != base : !last_entry))
        return SAMPLE_INCOMPLETE;
    return SAMPLE_OK;
}

/*
 * Whether the chain walked is still the thread's live stack, given its
 * current frame @top_now read after the chain was re-read: the same top, or
 * a deeper one in the same data-stack chunk (the thread has called further:
 * every frame below is live, the chain's among them). A shallower top means
 * the chain's upper frames were popped, and may be stale memory that reads
 * the same twice.
 */
static bool unwind_top_holds(const struct unwinder *u, uint64_t top_now)
{
    const struct chain_link *top = &u->chain[0];
    if (top_now == top->raddr)
        return true;
    if (top->chunk < 0 || top_now < top->raddr)
        return false;
    const struct chunk_copy *c = &u->chunks[top->chunk];
    return top_now < c->raddr + c->real_size;
}

/*
 * The copy of a running thread's stack is not atomic: frames may be popped
 * and reused while it is taken, and a chain can then mix two moments. So the
 * frames the walk went through are read again, in one batched read, and must
 * still link the same way and run the same code; a caller's instruction
 * pointer must not have moved (a caller waits on its call). Only the leaf's
 * instruction may change: it was running. (Checking only that the current
 * frame stayed put while the chunk was copied misses mixed chains on 3.13,
 * and drops more samples.)
 *
 * Frames that match are not enough on their own: a popped frame's memory
 * keeps its last contents, so a stack that shrank between the copy and this
 * read can leave a stale frame (an earlier call's leaf, say, in the middle
 * of the chain) that reads the same both times. So the thread's current
 * frame is read last, after the frames, and must show the chain still live
 * (unwind_top_holds()). A churning recursion on 3.13 showed such a chain,
 * a leaf function seven frames down, about once in 10^4 samples before this
 * check; with it, 0.3-0.4% more of an ordinary program's samples are
 * counted as torn (test_unwind_live).
 */
static enum sample_status unwind_verify(struct unwinder *u)
{
    const struct py_layout *l = &u->l;
    size_t len = l->fr_instr_ptr + 8;
    if (l->fr_previous + 8 > len)
        len = l->fr_previous + 8;
    if (l->fr_executable + 8 > len)
        len = l->fr_executable + 8;
    if (u->nchain == 0)
        return SAMPLE_OK;

    /* One range per chunk, spanning the chain's frames in it (the kernel's
     * cost is per range), plus one per frame read on its own. */
    struct memread_iov iov[MEMREAD_MAX_IOV];
    size_t n = 0;
    size_t lo[UNWIND_MAX_CHUNKS], hi[UNWIND_MAX_CHUNKS];
    for (size_t c = 0; c < u->nchunks; c++) {
        lo[c] = SIZE_MAX;
        hi[c] = 0;
    }
    for (size_t i = 0; i < u->nchain; i++) {
        const struct chain_link *k = &u->chain[i];
        if (k->chunk >= 0) {
            size_t c = (size_t)k->chunk;
            lo[c] = k->buf_off < lo[c] ? k->buf_off : lo[c];
            hi[c] = k->buf_off + len > hi[c] ? k->buf_off + len : hi[c];
        }
    }
    for (size_t c = 0; c < u->nchunks; c++) {
        if (lo[c] == SIZE_MAX)
            continue;
        size_t data_off = (size_t)(u->chunks[c].data - u->sc->chunk_buf);
        iov[n++] = (struct memread_iov){u->chunks[c].raddr + (lo[c] - data_off),
                                        u->sc->verify_buf + lo[c], hi[c] - lo[c]};
    }
    for (size_t i = 0; i < u->nchain; i++) {
        struct chain_link *k = &u->chain[i];
        if (k->chunk >= 0)
            continue;
        if (n == MEMREAD_MAX_IOV) {
            int err = memread_readv(u->mr, iov, n);
            if (err)
                return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
            n = 0;
        }
        iov[n++] = (struct memread_iov){k->raddr, k->now, len};
    }
    /* last, the thread's current frame: read after every frame above, it
     * must still be the chain's top */
    if (n == MEMREAD_MAX_IOV) {
        int err = memread_readv(u->mr, iov, n);
        if (err)
            return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
        n = 0;
    }
    uint64_t top_now = 0, cframe_now = 0;
    if (l->has_cframe) { /* 3.11/3.12: the cframe, and its current frame, in that order */
        if (n + 2 > MEMREAD_MAX_IOV) {
            int err = memread_readv(u->mr, iov, n);
            if (err)
                return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
            n = 0;
        }
        iov[n++] = (struct memread_iov){u->cframe_raddr + l->cf_current_frame, &top_now, 8};
        iov[n++] = (struct memread_iov){u->tstate_raddr + l->ts_cframe, &cframe_now, 8};
    } else {
        iov[n++] = (struct memread_iov){u->tstate_raddr + l->ts_current_frame, &top_now, 8};
    }
    int err = memread_readv(u->mr, iov, n);
    if (err)
        return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
    if (!unwind_top_holds(u, load_le64((const uint8_t *)&top_now)) ||
        (l->has_cframe && load_le64((const uint8_t *)&cframe_now) != u->cframe_raddr))
        return SAMPLE_INCOMPLETE;

    for (size_t i = 0; i < u->nchain; i++) {
        const struct chain_link *k = &u->chain[i];
        const uint8_t *now = k->chunk >= 0 ? u->sc->verify_buf + k->buf_off : k->now;
        if (load_le64(now + l->fr_previous) != k->previous ||
            load_le64(now + l->fr_executable) != k->executable ||
            (!k->leaf && unwind_frame_ip(l, now) != k->instr_ptr))
            return SAMPLE_INCOMPLETE;
    }
    return SAMPLE_OK;
}

/*
 * Identity of the walked chain: what verification compares, leaf ip
 * excluded. A sum of independently mixed links, so the links' mixing
 * overlaps in the CPU instead of forming one long chain of multiplications;
 * each link's position is part of its term.
 */
static uint64_t unwind_chain_hash(const struct unwinder *u)
{
    uint64_t h = HASH_GOLDEN * (u->nchain + 1);
    for (size_t i = 0; i < u->nchain; i++) {
        const struct chain_link *k = &u->chain[i];
        uint64_t a = hash_fmix64(k->raddr * HASH_GOLDEN + k->previous + i);
        uint64_t b = k->executable * 0xd6e8feb86659fd93ull ^ (k->leaf ? 0 : k->instr_ptr);
        h += hash_fmix64(a ^ b);
    }
    h = hash_fmix64(h);
    return h ? h : 1; /* 0 means "none verified" */
}

/* --- code objects ------------------------------------------------------ */

/* Reads the code object at @raddr into the cache. NULL when unreadable. */
static struct code_info *unwind_fetch_code(struct unwinder *u, uint64_t raddr)
{
    const struct py_layout *l = &u->l;
    if (memread_read(u->mr, raddr, u->code_buf, l->co_read_len))
        return NULL;
    struct code_info ci = {
        .raddr = raddr,
        .qualname = unwind_unknown_function,
        .filename = unwind_unknown_file,
        .qualname_raddr = load_le64(u->code_buf + l->co_qualname),
        .filename_raddr = load_le64(u->code_buf + l->co_filename),
        .linetable_raddr = load_le64(u->code_buf + l->co_linetable),
        .bytecode_raddr = raddr + l->co_adaptive,
        .lines = l->lines,
    };
    ci.firstlineno = (int32_t)load_le32(u->code_buf + l->co_firstlineno);
    if (pystr_read(u->mr, l, ci.qualname_raddr, u->name_buf, sizeof(u->name_buf)) >= 0)
        ci.qualname = u->name_buf;
    if (pystr_read(u->mr, l, ci.filename_raddr, u->file_buf, sizeof(u->file_buf)) >= 0)
        ci.filename = u->file_buf;
    long n = pybytes_read(u->mr, l, ci.linetable_raddr, u->sc->linetable_buf, UNWIND_LINETABLE_MAX);
    /* an empty table too (3.9 leaves co_lnotab empty when every instruction
     * is on co_firstlineno: a lambda, a one-line function) */
    if (n >= 0) {
        ci.linetable = u->sc->linetable_buf;
        ci.linetable_len = (size_t)n;
    }
    return codecache_insert(u->codes, &ci);
}

/* Whether the code-object bytes at @b still hold what @ci cached. */
static bool unwind_code_holds(const struct unwinder *u, const struct code_info *ci,
                              const uint8_t *b)
{
    const struct py_layout *l = &u->l;
    return load_le64(b + l->co_qualname) == ci->qualname_raddr &&
           load_le64(b + l->co_filename) == ci->filename_raddr &&
           load_le64(b + l->co_linetable) == ci->linetable_raddr &&
           (int32_t)load_le32(b + l->co_firstlineno) == ci->firstlineno;
}

/*
 * 3.13 has no code_object_generation: every cached code object this sample
 * uses is read again and entries whose fields changed are dropped. Those the
 * thread's last sample used came with the thread state (pre_addr/pre_buf,
 * the same moment as its frames); the rest are read in one batched call.
 */
static void unwind_recheck_codes(struct unwinder *u, size_t from)
{
    const struct py_layout *l = &u->l;
    size_t n = 0, next_pre = 0;
    uint64_t last = 0;
    struct memread_iov iov[MEMREAD_MAX_IOV];
    for (size_t i = from; i < u->nframes && n < MEMREAD_MAX_IOV; i++) {
        uint64_t code = u->raw[i].code_raddr;
        if (u->raw[i].kind != UNWIND_FRAME_PYTHON || code == last)
            continue;
        last = code;
        struct code_info *ci = codecache_find(u->codes, code);
        if (!ci || ci->qualname_raddr == 0)
            continue;
        /* read with the thread? (mostly in the same order as last time) */
        size_t k = 0;
        for (; k < u->npre; k++) {
            size_t j = (next_pre + k) % u->npre;
            if (u->pre_addr[j] == code) {
                next_pre = j + 1;
                break;
            }
        }
        if (k < u->npre) {
            if (!unwind_code_holds(u, ci, u->pre_buf + (next_pre - 1) * l->co_read_len)) {
                ci->qualname_raddr = 0; /* stale: refetched on use */
                u->resolve_epoch++;
            }
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = u->sc->check_addr[j] == code;
        if (dup)
            continue;
        u->sc->check_addr[n] = code;
        iov[n] = (struct memread_iov){code, u->sc->check_buf + n * l->co_read_len, l->co_read_len};
        n++;
    }
    if (n == 0)
        return;
    bool ok = memread_readv(u->mr, iov, n) == 0;
    for (size_t j = 0; j < n; j++) {
        struct code_info *ci = codecache_find(u->codes, u->sc->check_addr[j]);
        if (!ok || !unwind_code_holds(u, ci, u->sc->check_buf + j * l->co_read_len)) {
            ci->qualname_raddr = 0; /* stale: refetched on use */
            u->resolve_epoch++;
        }
    }
}

/* 3.13: remembers the distinct code objects of the thread's frames
 * [from, u->nframes), for the re-check with its next read. */
static void unwind_remember_codes(struct unwinder *u, size_t from)
{
    if (!u->guess_codes)
        return;
    uint64_t *codes = u->guess_codes + unwind_slot(u->tstate_raddr) * UNWIND_GUESS_CODES;
    size_t n = 0;
    for (size_t i = from; i < u->nframes && n < UNWIND_GUESS_CODES; i++) {
        uint64_t code = u->raw[i].code_raddr;
        if (u->raw[i].kind != UNWIND_FRAME_PYTHON)
            continue;
        /* recursion repeats nearby: a farther repeat costs a range, not a
         * wrong answer */
        bool dup = false;
        for (size_t j = n; j > 0 && j + 8 > n && !dup; j--)
            dup = codes[j - 1] == code;
        if (!dup)
            codes[n++] = code;
    }
    if (n < UNWIND_GUESS_CODES)
        codes[n] = 0;
}

/* The code-cache epoch: resolved names stay valid while it holds. */
static uint64_t unwind_epoch(const struct unwinder *u)
{
    return u->resolve_epoch + codecache_overflows(u->codes);
}

/*
 * Start of copy @index of the bytecode of the code object at @code
 * (free-threaded 3.14+): code->co_tlbc points at {ssize_t n; void *entry[n]}.
 * Cached per epoch; 0 when it cannot be read or is not there.
 */
static uint64_t unwind_tlbc_base(struct unwinder *u, uint64_t code, uint32_t index)
{
    uint64_t epoch = unwind_epoch(u);
    struct tlbc_slot *s = &u->tlbc[hash_fmix64(code * HASH_GOLDEN + index) % UNWIND_TLBC_SLOTS];
    if (s->epoch == epoch && s->code == code && s->index == index)
        return s->base;
    uint64_t arr = 0, n = 0, base = 0;
    if (memread_read(u->mr, code + u->l.co_tlbc, &arr, 8) == 0 && arr &&
        memread_read(u->mr, arr, &n, 8) == 0 && n > index && n <= PYABI_MAX_TLBC &&
        memread_read(u->mr, arr + 8 + 8 * (uint64_t)index, &base, 8) != 0)
        base = 0;
    *s = (struct tlbc_slot){.code = code, .base = base, .epoch = epoch, .index = index};
    return base;
}

/* Resolves one raw frame into @f; false when its code object is unreadable. */
static bool unwind_resolve_one(struct unwinder *u, const struct raw_frame *r,
                               struct unwind_frame *f)
{
    f->kind = r->kind;
    f->code_raddr = r->code_raddr;
    f->opname = f->opbase = f->opmarker = NULL;
    f->opcode = 0;
    f->first_line = 0;
    f->file = unwind_marker_file;
    f->pos = (struct linetable_pos){LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
                                    LINETABLE_UNKNOWN};
    if (r->kind == UNWIND_FRAME_NATIVE) {
        f->function = unwind_native_name;
        f->code_id = UNWIND_ID_NATIVE;
        return true;
    }
    if (r->kind == UNWIND_FRAME_GC) {
        f->function = unwind_gc_name;
        f->code_id = UNWIND_ID_GC;
        return true;
    }
    struct code_info *ci = codecache_find(u->codes, r->code_raddr);
    if (!ci || ci->qualname_raddr == 0)
        ci = unwind_fetch_code(u, r->code_raddr);
    if (!ci) {
        f->kind = UNWIND_FRAME_UNREADABLE;
        f->function = unwind_unreadable_name;
        f->file = unwind_unknown_file;
        f->code_id = UNWIND_ID_UNREADABLE;
        return false;
    }
    f->function = ci->qualname;
    f->file = ci->filename;
    f->first_line = ci->firstlineno;
    f->code_id = ci->id;
    if (u->l.frame_objects) {
        /* <= 3.10: f_lasti, an offset; -1 before the first instruction,
         * where CPython reports the first line */
        int32_t lasti = (int32_t)r->instr_ptr;
        struct linetable_pos pos;
        if (lasti < 0)
            f->pos = (struct linetable_pos){ci->firstlineno, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
                                            LINETABLE_UNKNOWN};
        else if (codecache_position(ci, (uint32_t)lasti * u->l.lasti_scale, &pos) == 0)
            f->pos = pos;
        return true;
    }
    uint64_t bytecode = r->tlbc ? unwind_tlbc_base(u, r->code_raddr, r->tlbc) : ci->bytecode_raddr;
    /* 3.11/3.12: a frame that has not run its first instruction points just
     * before it (prev_instr); it is at its first line */
    uint64_t ip = bytecode && r->instr_ptr + 2 == bytecode ? bytecode : r->instr_ptr;
    if (bytecode && ip >= bytecode && (ip - bytecode) / 2 <= UINT32_MAX) {
        struct linetable_pos pos;
        if (codecache_position(ci, (uint32_t)((ip - bytecode) / 2), &pos) == 0)
            f->pos = pos;
    }
    return true;
}

/*
 * Resolves frames [from, u->nframes). A frame slot that was resolved from the
 * same raw frame under the current code-cache epoch is kept as it is (a
 * stack whose leaf moved costs one frame, not all). Returns true when every
 * frame was kept and had last been written or kept by resolve @prev_serial;
 * *@serial is this call's number.
 */
static bool unwind_resolve(struct unwinder *u, size_t from, uint64_t prev_serial, uint64_t *serial)
{
    uint64_t me = ++u->resolve_serial;
    uint64_t epoch = unwind_epoch(u);
    bool kept = true;
    for (size_t i = from; i < u->nframes; i++) {
        const struct raw_frame *r = &u->raw[i];
        struct unwind_frame *f = &u->frames[i];
        struct resolved_tag *tag = &u->tags[i];
        f->frame_raddr = r->frame_raddr; /* not part of what is resolved */
        if (tag->epoch == epoch && tag->ip == r->instr_ptr && tag->kind == r->kind &&
            f->code_raddr == r->code_raddr && tag->tlbc == r->tlbc) {
            kept = kept && tag->serial == prev_serial;
            tag->serial = me;
            continue;
        }
        kept = false;
        bool readable = unwind_resolve_one(u, r, f);
        /* the epoch after the lookup: an insert may have cleared the cache,
         * which leaves frames resolved before it stale, not this one. An
         * unreadable code object is tried again next time. */
        epoch = unwind_epoch(u);
        *tag = (struct resolved_tag){.ip = r->instr_ptr,
                                     .epoch = readable ? epoch : 0,
                                     .serial = me,
                                     .kind = r->kind,
                                     .tlbc = r->tlbc};
    }
    *serial = me;
    return kept;
}

/* --- threads and interpreters ------------------------------------------ */

static void unwind_thread_flags(struct unwinder *u, struct unwind_thread *t,
                                const struct interp_view *in)
{
    const struct py_layout *l = &u->l;
    const uint8_t *ts = u->tstate;
    if (t->tstate_raddr == in->threads_main)
        t->flags |= UNWIND_THREAD_MAIN;
    bool holds;
    switch (l->holds_gil_kind) {
    case PYABI_GIL_INT:
        holds = load_le32(ts + l->ts_holds_gil) != 0;
        break;
    case PYABI_GIL_INTERP_HOLDER:
        holds = in->gil_locked && in->gil_holder == t->tstate_raddr;
        break;
    case PYABI_GIL_RUNTIME_HOLDER:
        holds = u->rt_gil_locked && u->rt_gil_holder == t->tstate_raddr;
        break;
    default:
        holds = (load_le32(ts + l->ts_status) & l->holds_gil_mask) != 0;
        break;
    }
    if (holds)
        t->flags |= UNWIND_THREAD_HOLDS_GIL;
    else if (l->has_gil_requested && load_le32(ts + l->ts_gil_requested) != 0)
        t->flags |= UNWIND_THREAD_GIL_REQUESTED;
    if (in->gc_collecting)
        t->flags |= UNWIND_THREAD_IN_GC;

    uint64_t handled = load_le64(ts + l->ts_exc_value);
    bool exc =
        load_le64(ts + l->ts_current_exception) != 0 || (handled != 0 && handled != u->none_object);
    uint64_t exc_info = load_le64(ts + l->ts_exc_info);
    if (!exc && exc_info && exc_info != t->tstate_raddr + l->ts_exc_state) {
        /* handling an exception inside a generator: its own stack item */
        uint64_t value = 0;
        if (memread_read(u->mr, exc_info + l->ei_exc_value, &value, sizeof(value)) == 0)
            exc = value != 0 && value != u->none_object;
    }
    if (exc)
        t->flags |= UNWIND_THREAD_HAS_EXCEPTION;
}

/*
 * UNWIND_OPCODES: reads the code unit at each Python frame's instr_ptr (one
 * batched read per MEMREAD_MAX_IOV frames) and names its low byte, the
 * opcode, from the version's table. A frame whose unit cannot be read, or
 * whose opcode the table does not know, has none. Returns whether any
 * frame's opcode differs from what its slot held (a kept stack whose
 * instruction was specialized in place is not unchanged).
 */
static bool unwind_read_opcodes(struct unwinder *u, size_t first)
{
    bool changed = false;
    struct memread_iov iov[MEMREAD_MAX_IOV];
    uint16_t unit[MEMREAD_MAX_IOV];
    size_t at[MEMREAD_MAX_IOV];
    for (size_t i = first; i < u->nframes;) {
        size_t n = 0;
        for (; i < u->nframes && n < MEMREAD_MAX_IOV; i++) {
            const struct raw_frame *r = &u->raw[i];
            if (r->kind != UNWIND_FRAME_PYTHON || !r->instr_ptr) {
                changed |= u->frames[i].opname != NULL;
                u->frames[i].opname = u->frames[i].opbase = u->frames[i].opmarker = NULL;
                continue;
            }
            iov[n] = (struct memread_iov){r->instr_ptr, &unit[n], 2};
            at[n++] = i;
        }
        bool ok = n && memread_readv(u->mr, iov, n) == 0;
        for (size_t k = 0; k < n; k++) {
            struct unwind_frame *f = &u->frames[at[k]];
            uint8_t op = (uint8_t)(load_le16((const uint8_t *)&unit[k]) & 0xff);
            const char *const *row =
                ok && u->optable && u->optable[op][PYOPCODE_NAME] ? u->optable[op] : NULL;
            const char *name = row ? row[PYOPCODE_NAME] : NULL;
            changed |= f->opname != name || f->opcode != op;
            f->opname = name;
            f->opbase = row ? row[PYOPCODE_BASE] : NULL;
            f->opmarker = row ? row[PYOPCODE_MARKER] : NULL;
            f->opcode = op;
        }
    }
    return changed;
}

/*
 * <= 3.10: the TID of the thread whose pthread_t is @pthread (0 when not
 * known): read with the thread state when the slot's last sample saw the
 * same pthread_t, else here (a thread's first sample).
 */
static uint64_t unwind_pthread_tid(struct unwinder *u, uint64_t pthread)
{
    size_t slot = unwind_slot(u->tstate_raddr);
    if (!u->tid_off || !pthread)
        return 0;
    int32_t tid = 0;
    if (pthread == u->pthread_guessed) {
        tid = (int32_t)load_le32((const uint8_t *)&u->tid_word);
    } else if (memread_read(u->mr, pthread + u->tid_off, &tid, sizeof(tid)) != 0) {
        return 0;
    }
    if (u->guess_tstate[slot] == u->tstate_raddr)
        u->guess_pthread[slot] = pthread;
    return tid > 0 ? (uint64_t)tid : 0;
}

/*
 * <= 3.10: learns where glibc keeps the TID in its struct pthread, from the
 * main thread (state @main), whose TID is the process ID (in the process's
 * own PID namespace): glibc's own offset when it holds it there, else the
 * first int in the struct's first UNWIND_PTHREAD_SCAN bytes that does
 * (another C library; not for PIDs under UNWIND_TID_SCAN_MIN, which other
 * fields may hold by chance). Tried once; threads then have no TID (0).
 */
static void unwind_learn_tid_off(struct unwinder *u, uint64_t main)
{
    u->tid_tried = true;
    uint64_t pthread = 0;
    uint8_t buf[UNWIND_PTHREAD_SCAN];
    /* in a container the struct holds the TID in the process's own namespace */
    pid_t pid = u->ns_pid > 0 ? u->ns_pid : memread_pid(u->mr);
    if (pid <= 0 || memread_read(u->mr, main + u->l.ts_thread_id, &pthread, 8) != 0 ||
        pthread == 0 || memread_read(u->mr, pthread, buf, sizeof(buf)) != 0)
        return;
    if ((pid_t)load_le32(buf + UNWIND_GLIBC_TID_OFF) == pid) {
        u->tid_off = UNWIND_GLIBC_TID_OFF;
        return;
    }
    /* another C library: search, unless the PID is so small that another
     * field could hold it by chance */
    for (uint32_t off = 8; pid >= UNWIND_TID_SCAN_MIN && off + 4 <= sizeof(buf); off += 4) {
        if ((pid_t)load_le32(buf + off) == pid) {
            u->tid_off = off;
            return;
        }
    }
}

/* Samples one thread; false when its thread state could not be read. */
static bool unwind_sample_thread(struct unwinder *u, uint64_t tstate_raddr,
                                 const struct interp_view *in, unsigned flags, bool preread)
{
    const struct py_layout *l = &u->l;
    if (u->result.nthreads == u->threads_cap && !unwind_grow_threads(u))
        return false;
    struct unwind_thread *t = &u->threads[u->result.nthreads++];
    *t = (struct unwind_thread){.tstate_raddr = tstate_raddr, .interp_id = in->id};
    size_t first = u->nframes;
    int err = preread ? 0 : unwind_read_thread(u, tstate_raddr);
    if (err) {
        t->status = status_from_errno(err);
        return false;
    }
    t->thread_id = load_le64(u->tstate + l->ts_thread_id);
    t->native_thread_id = l->has_native_thread_id ? load_le64(u->tstate + l->ts_native_thread_id)
                                                  : unwind_pthread_tid(u, t->thread_id);
    for (size_t i = 0; i < u->nwords; i++)
        t->words[i] =
            u->word_off[i] + 8 <= u->tstate_len ? load_le64(u->tstate + u->word_off[i]) : 0;
    unwind_thread_flags(u, t, in);
    /* the mode's test, before any frame is read */
    if (((flags & UNWIND_ONLY_GIL) && !(t->flags & UNWIND_THREAD_HOLDS_GIL)) ||
        ((flags & UNWIND_ONLY_EXCEPTION) && !(t->flags & UNWIND_THREAD_HAS_EXCEPTION)) ||
        ((flags & UNWIND_ONLY_ON_CPU) && u->on_cpu &&
         !u->on_cpu(u->on_cpu_ctx, t->native_thread_id))) {
        u->result.nthreads--;
        return true;
    }

    /* 3.13/3.14 have no GC frame: mark the collecting (GIL-holding) thread's top */
    if (!(flags & UNWIND_NO_GC) && !l->has_gc_frame && in->gc_collecting &&
        (t->flags & UNWIND_THREAD_HOLDS_GIL))
        (void)unwind_push(u, first, 0, 0, UNWIND_FRAME_GC, 0);

    t->status = unwind_top_frame(u);
    if (t->status == SAMPLE_OK)
        t->status = unwind_walk(u, in, flags, first);
    /* A chain identical to one verified before (same frames, links, code
     * and callers' instructions) is that real stack again: no re-read
     * needed. Anything else is verified. */
    size_t slot = unwind_slot(tstate_raddr);
    uint64_t h = t->status == SAMPLE_OK ? unwind_chain_hash(u) : 0;
    bool same = h != 0 && h == u->verified_hash[slot];
    unwind_remember_extra(u, same);
    if (t->status == SAMPLE_OK && !same) {
        t->status = unwind_verify(u);
        u->verified_hash[slot] = t->status == SAMPLE_OK ? h : 0;
    }
    if (t->status != SAMPLE_OK) {
        u->nframes = first; /* a torn stack is counted, not reported */
        return true;
    }
    if (!l->has_code_generation)
        unwind_recheck_codes(u, first);
    unwind_remember_codes(u, first);
    /* Unchanged: the same raw frames as this thread's last sample, at the
     * same place in the frame array, untouched since by any other thread,
     * with no code-cache change: the resolved frames from then are still
     * there and still right. A new stack gets a new key. */
    struct resolved_thread *rec = &u->resolved[unwind_slot(tstate_raddr)];
    size_t n = u->nframes - first;
    bool mine = rec->tstate_raddr == tstate_raddr && rec->first == first && rec->n == n;
    uint64_t serial;
    bool kept = unwind_resolve(u, first, mine ? rec->serial : 0, &serial);
    if ((flags & UNWIND_OPCODES) && !l->frame_objects) { /* (<= 3.10: no names) */
        u->opcodes_seen = true;
        if (unwind_read_opcodes(u, first))
            kept = false;
    } else if (u->opcodes_seen) {
        for (size_t i = first; i < u->nframes; i++) {
            struct unwind_frame *f = &u->frames[i];
            kept = kept && !f->opname;
            f->opname = f->opbase = f->opmarker = NULL;
        }
    }
    t->unchanged = mine && kept;
    *rec = (struct resolved_thread){.tstate_raddr = tstate_raddr,
                                    .serial = serial,
                                    .key = t->unchanged ? rec->key : ++u->last_key,
                                    .first = first,
                                    .n = n};
    t->stack_key = rec->key;
    t->frames = &u->frames[first];
    t->nframes = u->nframes - first;
    return true;
}

/* The ranges that fill @in from the interpreter at @raddr; returns how many. */
static size_t unwind_interp_iov(struct unwinder *u, uint64_t raddr, struct interp_view *in,
                                struct memread_iov *iov)
{
    const struct py_layout *l = &u->l;
    *in = (struct interp_view){.raddr = raddr};
    if (u->in_span) {
        iov[0] = (struct memread_iov){raddr + u->in_lo, u->interp_buf, u->in_span};
        return 1;
    }
    size_t n = 0;
    iov[n++] = (struct memread_iov){raddr + l->in_id, &in->id, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_next, &in->next, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_threads_head, &in->threads_head, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_threads_main, &in->threads_main, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_gil_holder, &in->gil_holder, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_gc_collecting, &in->gc_collecting, 4};
    iov[n++] = (struct memread_iov){raddr + l->in_gil_locked, &in->gil_locked, 4};
    if (l->has_gc_frame)
        iov[n++] = (struct memread_iov){raddr + l->in_gc_frame, &in->gc_frame, 8};
    if (l->has_code_generation)
        iov[n++] = (struct memread_iov){raddr + l->in_code_generation, &in->code_generation, 8};
    if (l->has_tlbc)
        iov[n++] = (struct memread_iov){raddr + l->in_tlbc_generation, &in->tlbc_generation, 4};
    return n;
}

/* After a read set up by unwind_interp_iov(): fills @in from the one range. */
static void unwind_interp_done(struct unwinder *u, struct interp_view *in)
{
    const struct py_layout *l = &u->l;
    if (!u->in_span) {
        if (!l->has_threads_main)
            in->threads_main = 0; /* what was read there is another field */
        return;
    }
#define UNWIND_IN_AT(off) (u->interp_buf + ((off)-u->in_lo))
    in->id = (int64_t)load_le64(UNWIND_IN_AT(l->in_id));
    in->next = load_le64(UNWIND_IN_AT(l->in_next));
    in->threads_head = load_le64(UNWIND_IN_AT(l->in_threads_head));
    in->threads_main = l->has_threads_main ? load_le64(UNWIND_IN_AT(l->in_threads_main)) : 0;
    in->gil_holder = load_le64(UNWIND_IN_AT(l->in_gil_holder));
    in->gc_collecting = (int32_t)load_le32(UNWIND_IN_AT(l->in_gc_collecting));
    in->gil_locked = (int32_t)load_le32(UNWIND_IN_AT(l->in_gil_locked));
    if (l->has_gc_frame)
        in->gc_frame = load_le64(UNWIND_IN_AT(l->in_gc_frame));
    if (l->has_code_generation)
        in->code_generation = load_le64(UNWIND_IN_AT(l->in_code_generation));
    if (l->has_tlbc)
        in->tlbc_generation = load_le32(UNWIND_IN_AT(l->in_tlbc_generation));
#undef UNWIND_IN_AT
}

static int unwind_read_interp(struct unwinder *u, uint64_t raddr, struct interp_view *in)
{
    struct memread_iov iov[UNWIND_INTERP_IOV];
    size_t n = unwind_interp_iov(u, raddr, in, iov);
    int err = memread_readv(u->mr, iov, n);
    if (!err)
        unwind_interp_done(u, in);
    return err;
}

/* Sets in->threads_main to the last thread of the interpreter's list. */
static int unwind_find_tail(struct unwinder *u, struct interp_view *in)
{
    uint64_t t = in->threads_head, next = 0;
    for (unsigned n = 0; t && n < UNWIND_MAX_THREADS; n++) {
        int err = memread_read(u->mr, t + u->l.ts_next, &next, sizeof(next));
        if (err)
            return err;
        if (next == 0) {
            in->threads_main = t;
            return 0;
        }
        t = next;
    }
    return 0; /* a list longer than the cap: no main thread */
}

/*
 * Clears the code cache when an interpreter's code_object_generation moved,
 * and forgets where bytecode copies are when its tlbc_generation moved (a
 * new epoch empties the TLBC slots and re-resolves every frame).
 */
static void unwind_check_generation(struct unwinder *u, const struct interp_view *in)
{
    for (size_t i = 0; i < u->ngen; i++) {
        if (u->gen_interp[i] == in->raddr) {
            if (u->gen_value[i] != in->code_generation) {
                codecache_clear(u->codes);
                u->resolve_epoch++;
                u->gen_value[i] = in->code_generation;
            }
            if (u->gen_tlbc[i] != in->tlbc_generation) {
                u->resolve_epoch++;
                u->gen_tlbc[i] = in->tlbc_generation;
            }
            return;
        }
    }
    if (u->ngen == UNWIND_MAX_GENERATIONS) {
        codecache_clear(u->codes); /* too many interpreters to track: be safe */
        u->resolve_epoch++;
        u->ngen = 0;
    }
    u->gen_interp[u->ngen] = in->raddr;
    u->gen_tlbc[u->ngen] = in->tlbc_generation;
    u->gen_value[u->ngen++] = in->code_generation;
}

int unwinder_sample(struct unwinder *u, unsigned flags, const struct unwind_result **out,
                    enum sample_status *status)
{
    const struct py_layout *l = &u->l;
    u->result.nthreads = 0;
    u->nframes = 0;
    *out = &u->result;

    uint64_t head = 0, finalizing = 0;
    struct memread_iov rt[3 + UNWIND_INTERP_IOV + UNWIND_THREAD_IOV];
    size_t nrt = 0;
    if (u->rt_span) {
        rt[nrt++] = (struct memread_iov){u->runtime_raddr + u->rt_lo, u->runtime_buf, u->rt_span};
    } else {
        rt[nrt++] = (struct memread_iov){u->runtime_raddr + l->rt_interpreters_head, &head, 8};
        rt[nrt++] = (struct memread_iov){u->runtime_raddr + l->rt_finalizing, &finalizing, 8};
    }
    /* <= 3.11: the one GIL is the runtime's (locked and last_holder are
     * neighbours): read with the runtime's fields */
    uint8_t gil[24];
    struct memread_iov gil_iov = {0, gil, 0};
    uint32_t gil_lo = 0;
    if (l->holds_gil_kind == PYABI_GIL_RUNTIME_HOLDER) {
        gil_lo = l->rt_gil_locked < l->rt_gil_holder ? l->rt_gil_locked : l->rt_gil_holder;
        uint32_t hi = l->rt_gil_locked < l->rt_gil_holder ? l->rt_gil_holder : l->rt_gil_locked;
        if (hi - gil_lo <= sizeof(gil) - 8) {
            gil_iov = (struct memread_iov){u->runtime_raddr + gil_lo, gil, hi - gil_lo + 8};
            rt[nrt++] = gil_iov;
        }
    }
    /* the first interpreter rarely changes: read it in the same call */
    struct interp_view guessed;
    size_t n = nrt;
    if (u->interp_guess)
        n += unwind_interp_iov(u, u->interp_guess, &guessed, rt + n);
    /* ... and so does the main thread: when sampling only it, its state and
     * stack are read in the same call too (checked below, used if it held) */
    struct thread_read fused_read;
    bool fused = !(flags & UNWIND_ALL_THREADS) && n > nrt && u->main_guess;
    if (fused)
        n += unwind_thread_prepare(u, u->main_guess, rt + n, &fused_read);
    /*
     * Sampling only the main thread, the runtime's list head and finalizing
     * flag are left out while the main interpreter's threads.main, read in
     * this same call, is set: CPython's main() sets it once the runtime is
     * initialised and clears it when the main module is done, before
     * Py_FinalizeEx() sets the finalizing flag (docs/unwinder.md, "The
     * runtime's fields"). The main interpreter is static, so the list head
     * is not needed to find it; sub-interpreters are not sampled.
     */
    bool skip_runtime = fused && u->main_running;
    int err = skip_runtime ? memread_readv(u->mr, rt + nrt, n - nrt) : memread_readv(u->mr, rt, n);
    if (unwind_guess_may_be_why(err) && n > nrt) {
        /* the interpreter or main thread went away, or a guess read with the
         * main thread can no longer be read: none of them is kept */
        if (fused)
            unwind_forget_guesses(u, u->main_guess);
        u->interp_guess = 0;
        u->main_guess = 0;
        fused = false;
        skip_runtime = false;
        n = nrt;
        err = memread_readv(u->mr, rt, n);
    }
    if (!err && skip_runtime) {
        struct interp_view g = guessed;
        unwind_interp_done(u, &g);
        if (g.id != 0 || g.threads_main == 0) {
            /* main() is done (or this is no longer the main interpreter):
             * the runtime's fields are read, now and from now on */
            skip_runtime = false;
            err = memread_readv(u->mr, rt, nrt);
        }
    }
    if (err == -EFAULT && u->rt_span) {
        /* the bytes between the two fields cannot be read (an image that
         * holds only what older versions read): field by field from now on */
        u->rt_span = 0;
        rt[0] = (struct memread_iov){u->runtime_raddr + l->rt_interpreters_head, &head, 8};
        rt[1] = (struct memread_iov){u->runtime_raddr + l->rt_finalizing, &finalizing, 8};
        nrt = n = 2;
        if (gil_iov.len)
            rt[n++] = gil_iov, nrt++;
        err = memread_readv(u->mr, rt, n);
    }
    if (err) {
        u->main_running = false;
        *status = status_from_errno(err);
        return err;
    }
    if (skip_runtime) {
        head = u->interp_guess; /* the main interpreter, as checked above */
    } else {
        u->main_running = false; /* until the main interpreter is looked at below */
        if (u->rt_span) {
            head = load_le64(u->runtime_buf + (l->rt_interpreters_head - u->rt_lo));
            finalizing = load_le64(u->runtime_buf + (l->rt_finalizing - u->rt_lo));
        }
    }
    if (head == 0) {
        *status = SAMPLE_NOT_INITIALIZED;
        return -EAGAIN;
    }
    if (finalizing != 0) {
        *status = SAMPLE_FINALIZING;
        return -EAGAIN;
    }

    u->rt_gil_locked = 0;
    u->rt_gil_holder = 0;
    /* (read above with the runtime's fields, unless those were left out) */
    if (gil_iov.len &&
        (!skip_runtime || memread_read(u->mr, gil_iov.raddr, gil, gil_iov.len) == 0)) {
        u->rt_gil_locked = (int32_t)load_le32(gil + (l->rt_gil_locked - gil_lo));
        u->rt_gil_holder = load_le64(gil + (l->rt_gil_holder - gil_lo));
    }

    /* <= 3.10: where the TID is, before any thread is sampled (the main
     * interpreter is the last in the list, its main thread the tail) */
    if (!l->has_native_thread_id && !u->tid_tried) {
        uint64_t at = head;
        for (unsigned i = 0; at && i < UNWIND_MAX_INTERPRETERS; i++) {
            struct interp_view in;
            if (unwind_read_interp(u, at, &in) != 0)
                break;
            if (in.id == 0) {
                if (unwind_find_tail(u, &in) == 0 && in.threads_main)
                    unwind_learn_tid_off(u, in.threads_main);
                break;
            }
            at = in.next;
        }
    }

    uint64_t overflows = codecache_overflows(u->codes);
    bool saw_main = false; /* the main interpreter had a main thread */
    uint64_t raddr = head;
    for (unsigned ninterp = 0; raddr && ninterp < UNWIND_MAX_INTERPRETERS; ninterp++) {
        struct interp_view in;
        if (ninterp == 0 && n > nrt && head == u->interp_guess) {
            in = guessed;
            unwind_interp_done(u, &in);
        } else {
            err = unwind_read_interp(u, raddr, &in);
            if (err) {
                *status = status_from_errno(err);
                return err;
            }
        }
        if (ninterp == 0)
            u->interp_guess = raddr;
        if (l->has_code_generation)
            unwind_check_generation(u, &in);
        bool main_set = in.threads_main != 0;
        if (!in.threads_main && in.id == 0) {
            /* Only python's own main() records the main thread; an embedding
             * program never does. Threads are pushed at the head of the list,
             * so the first thread, the one that set Python up, is the tail.
             * Sub-interpreters have no main thread unless they say so. */
            err = unwind_find_tail(u, &in);
            if (err) {
                *status = status_from_errno(err);
                return err;
            }
        }
        if (flags & UNWIND_ALL_THREADS) {
            uint64_t t = in.threads_head;
            /* bounded by threads seen, not kept: a mode may keep none of a
             * (corrupted, circular) list */
            for (unsigned seen = 0;
                 t && seen < UNWIND_MAX_THREADS && u->result.nthreads < UNWIND_MAX_THREADS;
                 seen++) {
                if (!unwind_sample_thread(u, t, &in, flags, false))
                    break; /* without its thread state there is no next pointer */
                t = load_le64(u->tstate + l->ts_next);
            }
        } else if (in.id == 0 && in.threads_main) {
            saw_main = true;
            /* read already, with the runtime, if the guess held */
            bool pre = fused && ninterp == 0 && in.threads_main == u->main_guess &&
                       unwind_thread_finish(u, &fused_read) == 0;
            /* the main interpreter first in the list, main() running (its
             * own threads.main, not the tail found above): from now on the
             * runtime's fields can be left out (see above) */
            if (ninterp == 0 && !skip_runtime && !(flags & UNWIND_ALL_THREADS))
                u->main_running = main_set;
            (void)unwind_sample_thread(u, in.threads_main, &in, flags, pre);
            u->main_guess = in.threads_main;
        }
        raddr = in.next;
    }
    if (!(flags & UNWIND_ALL_THREADS) && !saw_main) {
        /*
         * No main thread to sample: the interpreter is starting, or shutting
         * down and has already deleted it. Not a sample: say which, from a
         * fresh read of the flag, and read the runtime again next time.
         */
        uint64_t fin = 0;
        u->main_running = false;
        bool gone = memread_read(u->mr, u->runtime_raddr + l->rt_finalizing, &fin, 8) == 0 && fin;
        *status = gone ? SAMPLE_FINALIZING : SAMPLE_NOT_INITIALIZED;
        return -EAGAIN;
    }
    /* The cache was cleared while this sample resolved frames: names
     * resolved before that point into the reused arena. Resolve all of them
     * again (the raw frames are still there), once. */
    if (codecache_overflows(u->codes) != overflows) {
        bool fits = unwinder_resolve_again(u);
        /* NEEDSWORK: when not, the sample's code objects do not fit the
         * cache together and names resolved before the second clear are
         * stale; unwind/asyncio.c drops such a sample (SAMPLE_NO_MEMORY) */
        (void)fits;
    }
    *status = SAMPLE_OK;
    return 0;
}

uint64_t unwinder_code_epoch(const struct unwinder *u)
{
    return unwind_epoch(u);
}

bool unwinder_resolve_again(struct unwinder *u)
{
    uint64_t overflows = codecache_overflows(u->codes);
    uint64_t serial;
    (void)unwind_resolve(u, 0, 0, &serial);
    for (size_t i = 0; i < u->result.nthreads; i++) {
        u->threads[i].unchanged = false;
        u->threads[i].stack_key = ++u->last_key;
    }
    for (size_t slot = 0; slot < UNWIND_CHUNK_GUESSES; slot++)
        u->resolved[slot].tstate_raddr = 0;
    return codecache_overflows(u->codes) == overflows;
}

bool unwinder_resolve_code(struct unwinder *u, uint64_t code_raddr, uint64_t instr_ptr,
                           uint32_t tlbc, struct unwind_frame *f)
{
    struct raw_frame r = {code_raddr, instr_ptr, UNWIND_FRAME_PYTHON, 0, tlbc};
    f->frame_raddr = 0;
    return unwind_resolve_one(u, &r, f);
}
