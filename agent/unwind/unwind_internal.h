/* SPDX-License-Identifier: MIT */
/*
 * unwind_internal.h: what the unwinder's files share: struct unwinder, the
 * raw frames and chain links of a sample, and the calls from one file into
 * another. Not for other modules (unwind.h is the interface, docs/unwinder.md
 * the design): scripts/check-src.sh lets only agent/unwind/unwind*.c and the
 * unwinder's unit tests include it. The files, by job:
 *
 *   unwind.c         the unwinder's life (attach, the buffers that grow,
 *                    free) and a sample: the runtime, its interpreters, the
 *                    threads to sample in each
 *   unwind_attach.c  attach-time checks: the layout (the target's table, or
 *                    a generated one checked against the live process), and
 *                    the ranges a sample reads the interpreter, the runtime
 *                    and a thread state in
 *   unwind_thread.c  one thread's sample: its flags and TID (<= 3.10 from
 *                    glibc's struct pthread, whose TID offset is learnt
 *                    once; checked against the target's threads and
 *                    resolved when it is not one of them), then its walk,
 *                    verification and resolve
 *   unwind_walk.c    the frame walk: a thread state read with the stack
 *                    chunks and frames its last walk used, the walk of the
 *                    chain over those copies, the re-read that verifies it
 *   unwind_code.c    code objects: names and positions through the code
 *                    cache (the asyncio walker's too), 3.13's re-check,
 *                    opcodes
 *
 * Only unwind.c allocates: every buffer at attach, and their growth on the
 * rare sample that needs more than any before (unwind_grow_*()). The
 * per-frame steps of the walk stay inside unwind_walk.c, where they inline.
 *
 * Thread safety: as unwind.h (one thread at a time per unwinder and per
 * scratch).
 */
#ifndef PYPROFD_UNWIND_UNWIND_INTERNAL_H
#define PYPROFD_UNWIND_UNWIND_INTERNAL_H

#include "base/compat.h"

#include "base/hash.h"
#include "memread/memread.h"
#include "python/pyabi.h"
#include "unwind/pystr.h"
#include "unwind/unwind.h"

#define UNWIND_CHUNK_BUF       (1024u * 1024u) /* local copies of data-stack chunks */
#define UNWIND_MAX_CHUNKS      64u
#define UNWIND_VISITED_SLOTS   4096u /* > UNWIND_MAX_DEPTH, power of two */
#define UNWIND_LINETABLE_MAX   (256u * 1024u)
#define UNWIND_NAME_MAX        (4 * PYSTR_MAX_CHARS + 1)
#define UNWIND_MAX_GENERATIONS 32u
#define UNWIND_CHUNK_GUESSES   64u /* thread state -> last chunk, direct-mapped */
#define UNWIND_GUESS_FRAMES    4u  /* out-of-chunk frames remembered per thread */
/* <= 3.10: every frame is a heap object of its own; this many are read with
 * the thread state (a steady stack costs one read) */
#define UNWIND_GUESS_FRAMEOBJS 64u
/* <= 3.10: remembered frames that lie close together are read as one range
 * (the kernel's cost is per range): at most this many bytes per range, and
 * this many in all (the rest one range each) */
#define UNWIND_FRAMEOBJ_SPAN 1024u
#define UNWIND_SPAN_BUF      (16u * 1024u)
#define UNWIND_GUESS_CHUNKS  4u  /* data-stack chunks remembered per thread */
#define UNWIND_GUESS_CODES   64u /* 3.13: code objects re-checked in the thread's read */
#define UNWIND_THREAD_IOV                                                                          \
    (3u + UNWIND_GUESS_CHUNKS + UNWIND_GUESS_FRAMEOBJS + UNWIND_GUESS_CODES) /* one thread read */
#define UNWIND_INTERP_SPAN  4096u /* largest interpreter range read in one piece */
#define UNWIND_RUNTIME_SPAN 4096u /* largest runtime range read in one piece */

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

/*
 * A thread state whose TID is none of the target's threads, and what it was
 * resolved to (unwind_thread.c): kept until the task list changes (gen).
 */
struct tid_memo {
    uint64_t tstate, stated, pthread; /* the thread state, the TID it names, its pthread_t */
    uint64_t tid;                     /* what it was resolved to */
    uint64_t gen;                     /* the task list it was judged by (0: an empty slot) */
    uint64_t first_seen;              /* the sample that first saw it */
    uint64_t listed;                  /* the sample whose listing judged it */
    enum unwind_tid_source source;
};
#define UNWIND_TID_MEMOS 16u
/* a task list that could not be had is asked for again after this many samples */
#define UNWIND_TASKS_RETRY 64u

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
     * The target's threads (unwinder_set_tasks()), as the target numbers
     * them, ascending: listed by tasks_fn at the first sample that checks a
     * TID, then when a thread state names one not here, at most once per
     * sample (tasks_serial: the sample that listed them, 0: never). gen
     * moves when the list changes; tasks_ok (below): the last listing
     * worked.
     */
    int (*tasks_fn)(void *ctx, uint64_t *tids, size_t max, size_t *n);
    void *tasks_ctx;
    uint64_t tasks[UNWIND_MAX_THREADS];
    size_t ntasks;
    uint64_t tasks_gen, tasks_serial, sample_serial;
    struct tid_memo tid_memo[UNWIND_TID_MEMOS];
    size_t tid_memo_next; /* the slot the next new one takes */
    uint64_t sample_head; /* this sample's first interpreter (for unwind_learn_tid()) */
    /*
     * <= 3.10: a thread is known by its pthread_t only; its TID is the int
     * at tid_off in glibc's struct pthread (learnt from the main thread,
     * whose TID is the process ID; 0: not known), read with the thread
     * state for the pthread_t the slot's last sample saw (a pthread_t is
     * reused by the next thread glibc starts on the same stack). Later
     * versions read it only for a thread whose own TID is not the target's.
     */
    uint32_t tid_off;
    pid_t ns_pid; /* the process's PID in its own namespace (rt->ns_pid) */
    uint64_t guess_pthread[UNWIND_CHUNK_GUESSES];
    uint64_t pthread_guessed;
    int32_t tid_word;
    bool tid_tried;
    bool tasks_ok; /* the last listing of the target's threads worked (above) */
    bool own_sc;   /* the scratch was allocated by unwinder_new(), freed with the unwinder */
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
    bool word_set[UNWIND_THREAD_WORDS];
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

/* The per-thread memory slot of a thread state (a multiplicative hash: thread
 * states are often equally spaced, which a plain modulo would fold together). */
static inline size_t unwind_slot(uint64_t tstate_raddr)
{
    return (size_t)((tstate_raddr * HASH_GOLDEN) >> 58) % UNWIND_CHUNK_GUESSES;
}

/* Whether a read that failed with @err may succeed without the guesses it carried. */
static inline bool unwind_guess_may_be_why(int err)
{
    return err != 0 && err != -ESRCH && err != -EPERM;
}

/* ---- unwind.c: the buffers that grow ----------------------------------- */

/* Doubles the frame slots (raw, frames, tags); false when it cannot. */
bool unwind_grow_frames(struct unwinder *u);
/* Doubles the thread slots; false when it cannot. */
bool unwind_grow_threads(struct unwinder *u);
/* Doubles the walked chain's links; false when it cannot. */
bool unwind_grow_chain(struct unwinder *u);

/* Appends a raw frame to the thread whose frames start at @first; false at
 * a cap (the thread is too deep, or the sample holds too many frames). */
static inline bool unwind_push(struct unwinder *u, size_t first, uint64_t code, uint64_t ip,
                               enum unwind_frame_kind kind, uint64_t frame)
{
    if (u->nframes == UNWIND_MAX_FRAMES || u->nframes - first >= UNWIND_MAX_DEPTH)
        return false;
    if (u->nframes == u->frames_cap && !unwind_grow_frames(u))
        return false;
    u->raw[u->nframes++] = (struct raw_frame){code, ip, kind, frame, 0};
    return true;
}

/* ---- unwind_attach.c: attach-time checks ------------------------------- */

struct pyruntime;

/* The layout of the runtime @rt: its _Py_DebugOffsets table, validated, or
 * (3.9-3.12) a generated layout checked against the live process. Returns
 * 0, or -ENOTSUP / -EPROTO / a read error with the reason in @why. */
PYPROFD_WARN_UNUSED int unwind_attach_layout(struct memread *mr, const struct pyruntime *rt,
                                             struct py_layout *out, char *why, size_t why_len);
/* Sets the ranges a sample reads the interpreter, the runtime's fields and
 * a thread state in, from u->l. */
void unwind_interp_span(struct unwinder *u);

/* ---- unwind_thread.c: one thread --------------------------------------- */

/* Samples the thread at @tstate_raddr of interpreter @in (@preread: its
 * state was read already); false when its thread state could not be read. */
bool unwind_sample_thread(struct unwinder *u, uint64_t tstate_raddr, const struct interp_view *in,
                          unsigned flags, bool preread);
/* Learns the TID's offset in struct pthread from the main thread (state
 * @main); tried once. */
void unwind_learn_tid_off(struct unwinder *u, uint64_t main);

/* ---- unwind.c: the interpreters ----------------------------------------- */

/* Learns the TID's offset in struct pthread from the main interpreter's
 * main thread (the interpreters listed from @head); tried once. */
void unwind_learn_tid(struct unwinder *u, uint64_t head);

/* ---- unwind_walk.c: the frame walk ------------------------------------- */

/* Sets up the ranges of a thread read into @iov (at most UNWIND_THREAD_IOV). */
size_t unwind_thread_prepare(struct unwinder *u, uint64_t tstate_raddr, struct memread_iov *iov,
                             struct thread_read *tr);
/* Completes a thread read whose ranges were all read. Returns 0 or a read error. */
PYPROFD_WARN_UNUSED int unwind_thread_finish(struct unwinder *u, const struct thread_read *tr);
/* Forgets the guesses of the thread at @tstate_raddr (a read carrying them failed). */
void unwind_forget_guesses(struct unwinder *u, uint64_t tstate_raddr);
/* Reads the thread at @tstate_raddr with its guesses. Returns 0 or a read error. */
PYPROFD_WARN_UNUSED int unwind_read_thread(struct unwinder *u, uint64_t tstate_raddr);
/* Remembers the chunks and outside frames of this walk for the thread's next read. */
void unwind_remember_extra(struct unwinder *u, bool steady);
/* Sets u->top_frame, the frame the thread runs. */
enum sample_status unwind_top_frame(struct unwinder *u);
/* Walks one thread's chain into raw frames [@first, ...). */
enum sample_status unwind_walk(struct unwinder *u, const struct interp_view *in, unsigned flags,
                               size_t first);
/* Re-reads the walked chain: SAMPLE_OK when it is still the thread's stack. */
enum sample_status unwind_verify(struct unwinder *u);
/* The walked chain's identity (never 0). */
uint64_t unwind_chain_hash(const struct unwinder *u);

/* ---- unwind_code.c: code objects --------------------------------------- */

/* 3.13: re-checks the cached code objects of frames [@from, ...). */
void unwind_recheck_codes(struct unwinder *u, size_t from);
/* 3.13: remembers the code objects of frames [@from, ...) for the thread's next read. */
void unwind_remember_codes(struct unwinder *u, size_t from);
/* Resolves frames [@from, ...); true when each was kept from resolve @prev_serial. */
bool unwind_resolve(struct unwinder *u, size_t from, uint64_t prev_serial, uint64_t *serial);
/* UNWIND_OPCODES: names each frame's opcode; true when any changed. */
bool unwind_read_opcodes(struct unwinder *u, size_t first);

#endif /* PYPROFD_UNWIND_UNWIND_INTERNAL_H */
