/* SPDX-License-Identifier: MIT */
/*
 * asyncio_internal.h: what the asyncio walker's two files share: struct
 * asyncio, the entries of a sample's task table and the suspended coroutine
 * frames found. Not for other modules (asyncio.h is the interface,
 * docs/async.md the design): scripts/check-src.sh lets only
 * agent/unwind/asyncio*.c and the walker's unit tests include it.
 *
 *   asyncio.c        the table's attach, the walker's life, and a sample:
 *                    the graph read, code objects resolved through the
 *                    unwinder, the logical stacks assembled
 *   asyncio_graph.c  reading the task graph: the tasks of a sample, their
 *                    awaited-by links, names and suspended coroutine chains,
 *                    and the re-read that verifies those chains
 *
 * Thread safety: as asyncio.h (one thread at a time, the one that samples).
 */
#ifndef PYPROFD_UNWIND_ASYNCIO_INTERNAL_H
#define PYPROFD_UNWIND_ASYNCIO_INTERNAL_H

#include "base/compat.h"

#include <stdatomic.h>

#include "base/hash.h"
#include "unwind/asyncio.h"

#define AIO_SLOTS       4096u                    /* task index, > ASYNCIO_MAX_TASKS, power of two */
#define AIO_RAW_MAX     (ASYNCIO_MAX_TASKS * 4u) /* suspended coroutine frames per sample */
#define AIO_GEN_WINDOW  512u /* bytes of a coroutine read at once (frame + value stack) */
#define AIO_TYPES       16u  /* type flags remembered (power of two) */
#define AIO_AWAIT_WORDS 2u   /* words from the awaited object up to the stack pointer, at most */

/*
 * A coroutine frame found suspended, before its code object is looked up;
 * with what its chain link was read from, for the verification read.
 */
struct aio_raw {
    uint64_t code, ip, frame;
    uint64_t sp;      /* its stack pointer */
    uint64_t awaited; /* the object it awaits (untagged), 0: not awaiting */
    uint32_t next;    /* the next (inner) coroutine of the same task, UINT32_MAX: none */
    uint32_t entry;   /* the task it belongs to */
    int8_t state;     /* its gi_frame_state */
    uint32_t tlbc;    /* its bytecode copy (free-threaded 3.14+), 0: the code's own */
};

/* A task (or a plain future standing between tasks) seen by this sample. */
struct aio_entry {
    uint64_t raddr;
    uint64_t name_raddr, awaited_by, coro, next_node;
    size_t thread; /* SIZE_MAX: reached as a waiter only */
    bool listed;   /* a running task, or in a sampled thread's task list */
    bool in_list;  /* met walking a task list (a second time: the list loops) */
    bool running;
    bool read; /* its object was read (ok says whether it made sense) */
    bool ok;
    bool is_task, is_set;
    bool is_waiter; /* some entry lists it as a waiter */
    bool waiters_done;
    uint32_t wfirst, nw;          /* waiters, in aio->waiters */
    uint32_t rfirst, rlast, nraw; /* suspended coroutine frames, a list from the outermost */
    uint32_t ffirst, nf;          /* the same resolved, leaf first, in aio->task_frames */
    uint32_t run_first, run_n;    /* a running task: its frames, copied from its thread's */
    uint64_t cur;                 /* chain walk: the coroutine to read next (0: done) */
    uint64_t cur_type;            /* ... and the type it must have */
    bool chain_torn;              /* a coroutine of it runs or ended: it is not waiting */
    uint32_t visit;               /* chain-walk stamp */
    const char *name;             /* in the sample's name arena (or a constant) */
    const char *marker;           /* "<task NAME>", the same */
};

struct asyncio {
    struct unwinder *u;
    struct memread *mr;
    struct py_version version; /* the runtime's */
    uint64_t runtime_raddr;    /* ... and where its main table is */
    enum asyncio_mode mode;
    _Atomic int state; /* enum asyncio_state */
    char why[256];
    struct pyasync_layout l;
    const struct py_layout *base;
    struct asyncio_counts counts;

    /* per sample */
    struct aio_entry *entries;
    size_t nentries;
    uint32_t *slot_idx; /* entries index + 1 by address */
    uint32_t *slot_stamp;
    uint32_t stamp;
    uint32_t visit;
    uint64_t *waiters;
    size_t nwaiters;
    struct aio_raw *raw;
    size_t nraw;
    struct unwind_frame *task_frames;
    size_t ntask_frames;
    struct unwind_frame *frames; /* output stacks */
    size_t nframes;
    struct asyncio_sample *samples;
    size_t nsamples;
    struct asyncio_task *tasks;
    struct asyncio_result result;

    /* scratch for batched reads */
    struct memread_iov *iov;
    uint32_t *iov_entry;
    uint8_t *buf;       /* ASYNCIO_MAX_TASKS windows of AIO_GEN_WINDOW bytes */
    uint64_t *slot_val; /* AIO_AWAIT_WORDS per task */
    char *names;        /* this sample's task names and markers, ASYNCIO_NAME_ARENA bytes */
    size_t names_used;

    /* type flags by type address, direct-mapped */
    uint64_t type_raddr[AIO_TYPES], type_flags[AIO_TYPES];
};

/* The entry of @raddr in this sample's task table; NULL when it has none. */
static inline struct aio_entry *aio_find(struct asyncio *a, uint64_t raddr)
{
    size_t i = (size_t)((raddr >> 4) * HASH_GOLDEN >> 40) & (AIO_SLOTS - 1);
    for (;; i = (i + 1) & (AIO_SLOTS - 1)) {
        if (a->slot_stamp[i] != a->stamp)
            return NULL;
        if (a->entries[a->slot_idx[i] - 1].raddr == raddr)
            return &a->entries[a->slot_idx[i] - 1];
    }
}

/* ---- asyncio_graph.c: reading the task graph --------------------------- */

/*
 * Reads the task graph of the threads of @r into a's task table: the running
 * task of each thread (and in ASYNCIO_ALL mode each thread's task list), the
 * tasks awaiting them, their names, their suspended coroutine chains, then
 * those chains again to verify them. *@any: there was a task to look at
 * (false: nothing was read beyond the task lists). Returns 0, or -ESRCH /
 * -EPERM / a read error that stops the sample (its stacks stay plain).
 */
PYPROFD_WARN_UNUSED int asyncio_graph_read(struct asyncio *a, const struct unwind_result *r,
                                           bool *any);

#endif /* PYPROFD_UNWIND_ASYNCIO_INTERNAL_H */
