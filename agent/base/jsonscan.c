/* SPDX-License-Identifier: MIT */
/*
 * jsonscan.c: the scanner behind jsonscan.h, one byte-driven state machine.
 * Nothing is buffered but the text of the token being read (up to text_cap)
 * and one bit per open container (object or array), so a state survives any
 * split of the input between two feeds.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/jsonscan.h"
#include "base/utf8.h"

enum jsonscan_state {
    ST_VALUE,     /* a value must come (top level, after ':', after ',' in an array) */
    ST_ARR_FIRST, /* after '[': a value or ']' */
    ST_OBJ_FIRST, /* after '{': a key or '}' */
    ST_OBJ_KEY,   /* after ',' in an object: a key */
    ST_COLON,     /* after a key: ':' */
    ST_AFTER,     /* after a value inside a container: ',' or its close */
    ST_TRAIL,     /* single-value mode, after the value: whitespace only */
    ST_STR,       /* inside a string */
    ST_ESC,       /* after a backslash */
    ST_UHEX,      /* inside \uXXXX */
    ST_UTF8,      /* inside a multi-byte UTF-8 sequence */
    ST_NUM,       /* inside a number */
    ST_LIT,       /* inside true, false or null */
};

/* where a number is in its grammar: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)? */
enum jsonscan_num {
    NUM_MINUS, /* "-" */
    NUM_ZERO,  /* "0" or "-0" (complete) */
    NUM_INT,   /* digits (complete) */
    NUM_DOT,   /* "." */
    NUM_FRAC,  /* fraction digits (complete) */
    NUM_E,     /* "e" */
    NUM_ESIGN, /* "e+" */
    NUM_EXP,   /* exponent digits (complete) */
};

/*
 * What each byte is to the loop: SCAN_C_WS, whitespace between tokens;
 * SCAN_C_PLAIN, a string byte copied as it is (printable ASCII but '"' and
 * '\\'). One load instead of a chain of comparisons, which matters in
 * instrumented (sanitizer, fuzzer) builds.
 */
#define SCAN_C_WS    1u
#define SCAN_C_PLAIN 2u
static const unsigned char scan_class[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    3, 2, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

struct jsonscan {
    unsigned max_depth;
    unsigned flags;
    size_t cap;
    char *text; /* cap + 1 bytes */

    enum jsonscan_state st;
    int err;
    unsigned depth;
    /* jsonscan_skip(): nothing inside the container at depth skip_depth - 1
     * is emitted or kept (0: none); skip_req asks for it from a BEGIN */
    unsigned skip_depth;
    bool skip_req;
    uint64_t objects; /* bit d: the container at depth d is an object */
    bool docs;        /* a top-level value was completed (single-value mode) */
    bool in_doc;
    bool ending; /* the END callback runs: end_bytes is the value's length */
    uint64_t end_bytes;
    uint64_t offset;    /* bytes fed since the reset */
    uint64_t doc_start; /* offset of the current top-level value's first byte */

    /* the token being read */
    size_t len;
    uint64_t full_len;
    unsigned tflags;
    bool is_key;
    /* \u escapes */
    unsigned hex_n;
    uint32_t hex;
    uint32_t high; /* a high surrogate waiting for its low half, or 0 */
    /* a raw UTF-8 sequence */
    unsigned need;
    unsigned char lo, hi; /* the range of the next continuation byte */
    bool seq_kept;        /* its bytes are being kept (it fitted) */
    /* numbers and literals */
    enum jsonscan_num num;
    const char *lit;
    unsigned lit_i;
};

int jsonscan_new(unsigned max_depth, size_t text_cap, unsigned flags, struct jsonscan **out)
{
    *out = NULL;
    if (max_depth < 1 || max_depth > JSONSCAN_MAX_DEPTH || text_cap < 16 || text_cap > (64u << 20))
        return -EINVAL;
    struct jsonscan *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->text = alloc_malloc(text_cap + 1);
    if (!s->text) {
        alloc_free(s);
        return -ENOMEM;
    }
    s->max_depth = max_depth;
    s->cap = text_cap;
    s->flags = flags;
    jsonscan_reset(s);
    *out = s;
    return 0;
}

void jsonscan_free(struct jsonscan *s)
{
    if (!s)
        return;
    alloc_free(s->text);
    alloc_free(s);
}

void jsonscan_reset(struct jsonscan *s)
{
    s->st = ST_VALUE;
    s->err = 0;
    s->depth = 0;
    s->skip_depth = 0;
    s->skip_req = false;
    s->objects = 0;
    s->docs = false;
    s->in_doc = false;
    s->ending = false;
    s->offset = 0;
    s->doc_start = 0;
    s->len = 0;
    s->full_len = 0;
    s->tflags = 0;
    s->high = 0;
    s->text[0] = '\0';
}

bool jsonscan_idle(const struct jsonscan *s)
{
    return s->err == 0 && !s->in_doc;
}

uint64_t jsonscan_value_bytes(const struct jsonscan *s)
{
    if (s->ending)
        return s->end_bytes;
    return s->in_doc ? s->offset - s->doc_start : 0;
}

uint64_t jsonscan_offset(const struct jsonscan *s)
{
    return s->offset;
}

unsigned jsonscan_depth(const struct jsonscan *s)
{
    return s->depth;
}

size_t jsonscan_memory(const struct jsonscan *s)
{
    return sizeof(*s) + s->cap + 1;
}

static bool scan_ws(unsigned char c)
{
    return scan_class[c] & SCAN_C_WS;
}

void jsonscan_skip(struct jsonscan *s)
{
    s->skip_req = true;
}

static int scan_emit(struct jsonscan *s, enum jsonscan_tok type, unsigned depth, jsonscan_fn cb,
                     void *arg)
{
    s->skip_req = false; /* only a BEGIN's own callback may ask */
    if (!cb || (s->skip_depth && depth >= s->skip_depth))
        return 0;
    bool text = type == JSONSCAN_KEY || type == JSONSCAN_STRING || type == JSONSCAN_NUMBER;
    s->text[text ? s->len : 0] = '\0';
    struct jsonscan_token t = {
        .type = type,
        .depth = depth,
        .text = s->text,
        .len = text ? s->len : 0,
        .full_len = text ? s->full_len : 0,
        .flags = text ? s->tflags : 0,
    };
    return cb(arg, &t);
}

/* A new key, string or number starts: its text is empty. */
static void scan_text_begin(struct jsonscan *s)
{
    s->len = 0;
    s->full_len = 0;
    s->tflags = 0;
    s->high = 0;
}

/*
 * Keeps @a n bytes of one character (or of a number) when the whole of it
 * fits; once a character did not, nothing more is kept (the text is a prefix
 * that ends on a character boundary).
 */
static void scan_keep(struct jsonscan *s, const unsigned char *b, size_t n)
{
    s->full_len += n;
    if ((s->tflags & JSONSCAN_CUT) || s->skip_depth)
        return;
    if (s->len + n > s->cap) {
        s->tflags |= JSONSCAN_CUT;
        return;
    }
    memcpy(s->text + s->len, b, n);
    s->len += n;
}

static void scan_keep_cp(struct jsonscan *s, uint32_t cp)
{
    unsigned char b[UTF8_MAX_SEQ];
    if (cp == 0)
        s->tflags |= JSONSCAN_HAS_NUL;
    scan_keep(s, b, utf8_encode(cp, b));
}

/* A high surrogate that no low one followed: U+FFFD. */
static void scan_flush_high(struct jsonscan *s)
{
    if (s->high) {
        s->high = 0;
        s->tflags |= JSONSCAN_REPLACED;
        scan_keep_cp(s, UTF8_REPLACEMENT);
    }
}

/* A value ended (a scalar, or a container's close was emitted). */
static int scan_value_done(struct jsonscan *s, jsonscan_fn cb, void *arg)
{
    if (s->depth > 0) {
        s->st = ST_AFTER;
        return 0;
    }
    /* the value's last byte is the one being scanned, but for a number,
     * which ends at the byte after it (or at the end of the input) */
    s->end_bytes = s->offset + (s->st == ST_NUM ? 0 : 1) - s->doc_start;
    s->in_doc = false;
    s->docs = true;
    s->st = (s->flags & JSONSCAN_MULTI) ? ST_VALUE : ST_TRAIL;
    s->ending = true;
    int rc = scan_emit(s, JSONSCAN_END, 0, cb, arg);
    s->ending = false;
    return rc;
}

static int scan_open(struct jsonscan *s, bool object, jsonscan_fn cb, void *arg)
{
    if (s->depth >= s->max_depth)
        return s->err = -ELOOP;
    int rc = scan_emit(s, object ? JSONSCAN_OBJECT_BEGIN : JSONSCAN_ARRAY_BEGIN, s->depth, cb, arg);
    if (object)
        s->objects |= 1ull << s->depth;
    else
        s->objects &= ~(1ull << s->depth);
    s->depth++;
    if (s->skip_req) {
        s->skip_req = false;
        if (!s->skip_depth)
            s->skip_depth = s->depth;
    }
    s->st = object ? ST_OBJ_FIRST : ST_ARR_FIRST;
    return rc;
}

static int scan_close(struct jsonscan *s, bool object, jsonscan_fn cb, void *arg)
{
    if (s->skip_depth == s->depth)
        s->skip_depth = 0; /* the skipped container's own end is emitted */
    s->depth--;
    int rc = scan_emit(s, object ? JSONSCAN_OBJECT_END : JSONSCAN_ARRAY_END, s->depth, cb, arg);
    if (rc != 0)
        return rc;
    return scan_value_done(s, cb, arg);
}

static bool scan_in_object(const struct jsonscan *s)
{
    return s->depth > 0 && (s->objects >> (s->depth - 1)) & 1;
}

/* Whether @a num is a state where a number may end. */
static bool scan_num_complete(enum jsonscan_num num)
{
    return num == NUM_ZERO || num == NUM_INT || num == NUM_FRAC || num == NUM_EXP;
}

/* The start of a value at byte @a c (in ST_VALUE or ST_ARR_FIRST). */
static int scan_value_start(struct jsonscan *s, unsigned char c, jsonscan_fn cb, void *arg)
{
    if (s->depth == 0 && !s->in_doc) {
        s->in_doc = true;
        s->doc_start = s->offset;
    }
    switch (c) {
    case '{':
        return scan_open(s, true, cb, arg);
    case '[':
        return scan_open(s, false, cb, arg);
    case '"':
        scan_text_begin(s);
        s->is_key = false;
        s->st = ST_STR;
        return 0;
    case 't':
    case 'f':
    case 'n':
        s->lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
        s->lit_i = 1;
        s->st = ST_LIT;
        return 0;
    default:
        break;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        scan_text_begin(s);
        scan_keep(s, &c, 1);
        s->num = c == '-' ? NUM_MINUS : c == '0' ? NUM_ZERO : NUM_INT;
        s->st = ST_NUM;
        return 0;
    }
    return s->err = -EBADMSG;
}

/* One byte of a number; *@a again: the byte ended it and must be scanned again. */
static int scan_num(struct jsonscan *s, unsigned char c, bool *again, jsonscan_fn cb, void *arg)
{
    bool digit = c >= '0' && c <= '9';
    enum jsonscan_num next;
    switch (s->num) {
    case NUM_MINUS:
        next = c == '0' ? NUM_ZERO : digit ? NUM_INT : (enum jsonscan_num) - 1;
        break;
    case NUM_ZERO:
    case NUM_INT:
        if (digit && s->num == NUM_INT)
            next = NUM_INT;
        else if (c == '.')
            next = NUM_DOT;
        else if (c == 'e' || c == 'E')
            next = NUM_E;
        else
            next = (enum jsonscan_num) - 1;
        break;
    case NUM_DOT:
    case NUM_FRAC:
        if (digit)
            next = NUM_FRAC;
        else if ((c == 'e' || c == 'E') && s->num == NUM_FRAC)
            next = NUM_E;
        else
            next = (enum jsonscan_num) - 1;
        break;
    case NUM_E:
        next = digit ? NUM_EXP : (c == '+' || c == '-') ? NUM_ESIGN : (enum jsonscan_num) - 1;
        break;
    case NUM_ESIGN:
    case NUM_EXP:
        next = digit ? NUM_EXP : (enum jsonscan_num) - 1;
        break;
    default:
        next = (enum jsonscan_num) - 1;
        break;
    }
    if (next != (enum jsonscan_num) - 1) {
        s->num = next;
        scan_keep(s, &c, 1);
        return 0;
    }
    if (!scan_num_complete(s->num))
        return s->err = -EBADMSG;
    *again = true;
    int rc = scan_emit(s, JSONSCAN_NUMBER, s->depth, cb, arg);
    if (rc != 0)
        return rc;
    return scan_value_done(s, cb, arg);
}

static int scan_hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The end of a string: a key (then ':') or a string value. */
static int scan_str_end(struct jsonscan *s, jsonscan_fn cb, void *arg)
{
    scan_flush_high(s);
    if (s->is_key) {
        s->st = ST_COLON;
        return scan_emit(s, JSONSCAN_KEY, s->depth, cb, arg);
    }
    int rc = scan_emit(s, JSONSCAN_STRING, s->depth, cb, arg);
    if (rc != 0)
        return rc;
    return scan_value_done(s, cb, arg);
}

/* The lead byte @a c of a multi-byte sequence (Unicode's table of well-formed sequences). */
static int scan_utf8_lead(struct jsonscan *s, unsigned char c)
{
    unsigned need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return s->err = -EBADMSG;
    }
    s->need = need;
    s->lo = lo;
    s->hi = hi;
    s->full_len += need + 1;
    s->seq_kept = !(s->tflags & JSONSCAN_CUT) && !s->skip_depth && s->len + need + 1 <= s->cap;
    if (s->seq_kept)
        s->text[s->len++] = (char)c;
    else
        s->tflags |= JSONSCAN_CUT;
    s->st = ST_UTF8;
    return 0;
}

/*
 * Copies a run of plain string bytes (printable ASCII but '"' and '\') at
 * @a p; returns how many.
 */
static size_t scan_str_run(struct jsonscan *s, const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (scan_class[p[i]] & SCAN_C_PLAIN))
        i++;
    if (i == 0)
        return 0;
    s->full_len += i;
    if (!(s->tflags & JSONSCAN_CUT) && !s->skip_depth) {
        size_t room = s->cap - s->len;
        size_t k = i < room ? i : room;
        memcpy(s->text + s->len, p, k);
        s->len += k;
        if (k < i)
            s->tflags |= JSONSCAN_CUT;
    }
    return i;
}

int jsonscan_feed(struct jsonscan *s, const void *data, size_t len, jsonscan_fn cb, void *arg)
{
    const unsigned char *p = data;
    if (s->err)
        return s->err;
    size_t i = 0;
    int rc = 0;
    while (i < len && rc == 0) {
        unsigned char c = p[i];
        bool again = false;
        if (s->st <= ST_TRAIL && (scan_class[c] & SCAN_C_WS)) {
            /* whitespace between tokens: nothing to do but count it */
            i++;
            s->offset++;
            continue;
        }
        switch (s->st) {
        case ST_VALUE:
            if (!scan_ws(c))
                rc = scan_value_start(s, c, cb, arg);
            break;
        case ST_ARR_FIRST:
            if (scan_ws(c))
                break;
            rc = c == ']' ? scan_close(s, false, cb, arg) : scan_value_start(s, c, cb, arg);
            break;
        case ST_OBJ_FIRST:
        case ST_OBJ_KEY:
            if (scan_ws(c))
                break;
            if (c == '"') {
                scan_text_begin(s);
                s->is_key = true;
                s->st = ST_STR;
            } else if (c == '}' && s->st == ST_OBJ_FIRST) {
                rc = scan_close(s, true, cb, arg);
            } else {
                rc = s->err = -EBADMSG;
            }
            break;
        case ST_COLON:
            if (c == ':')
                s->st = ST_VALUE;
            else if (!scan_ws(c))
                rc = s->err = -EBADMSG;
            break;
        case ST_AFTER:
            if (scan_ws(c))
                break;
            if (c == ',')
                s->st = scan_in_object(s) ? ST_OBJ_KEY : ST_VALUE;
            else if (c == '}' && scan_in_object(s))
                rc = scan_close(s, true, cb, arg);
            else if (c == ']' && !scan_in_object(s))
                rc = scan_close(s, false, cb, arg);
            else
                rc = s->err = -EBADMSG;
            break;
        case ST_TRAIL:
            if (!scan_ws(c))
                rc = s->err = -EBADMSG;
            break;
        case ST_STR:
            if (!s->high && (scan_class[c] & SCAN_C_PLAIN)) {
                size_t run = scan_str_run(s, p + i, len - i);
                if (run > 0) {
                    i += run;
                    s->offset += run;
                    continue;
                }
            }
            if (c == '\\') {
                s->st = ST_ESC;
                break;
            }
            scan_flush_high(s);
            if (c == '"')
                rc = scan_str_end(s, cb, arg);
            else if (c < 0x20)
                rc = s->err = -EBADMSG;
            else if (c < 0x80)
                scan_keep(s, &c, 1);
            else
                rc = scan_utf8_lead(s, c);
            break;
        case ST_UTF8:
            if (c < s->lo || c > s->hi) {
                rc = s->err = -EBADMSG;
                break;
            }
            if (s->seq_kept)
                s->text[s->len++] = (char)c;
            s->lo = 0x80;
            s->hi = 0xBF;
            if (--s->need == 0)
                s->st = ST_STR;
            break;
        case ST_ESC: {
            static const char from[] = "\"\\/bfnrt";
            static const char to[] = "\"\\/\b\f\n\r\t";
            if (c == 'u') {
                s->hex_n = 0;
                s->hex = 0;
                s->st = ST_UHEX;
                break;
            }
            const char *e = c ? strchr(from, c) : NULL;
            if (!e) {
                rc = s->err = -EBADMSG;
                break;
            }
            scan_flush_high(s);
            unsigned char out = (unsigned char)to[e - from];
            scan_keep(s, &out, 1);
            s->st = ST_STR;
            break;
        }
        case ST_UHEX: {
            int h = scan_hex(c);
            if (h < 0) {
                rc = s->err = -EBADMSG;
                break;
            }
            s->hex = s->hex << 4 | (uint32_t)h;
            if (++s->hex_n < 4)
                break;
            s->st = ST_STR;
            uint32_t cp = s->hex;
            if (cp >= 0xDC00 && cp <= 0xDFFF && s->high) {
                cp = 0x10000 + ((s->high - 0xD800) << 10) + (cp - 0xDC00);
                s->high = 0;
                scan_keep_cp(s, cp);
                break;
            }
            scan_flush_high(s);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                s->high = cp;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                s->tflags |= JSONSCAN_REPLACED;
                scan_keep_cp(s, UTF8_REPLACEMENT);
            } else {
                scan_keep_cp(s, cp);
            }
            break;
        }
        case ST_NUM:
            rc = scan_num(s, c, &again, cb, arg);
            break;
        case ST_LIT:
            if (c != (unsigned char)s->lit[s->lit_i]) {
                rc = s->err = -EBADMSG;
                break;
            }
            if (s->lit[++s->lit_i] == '\0') {
                enum jsonscan_tok t = s->lit[0] == 't'   ? JSONSCAN_TRUE
                                      : s->lit[0] == 'f' ? JSONSCAN_FALSE
                                                         : JSONSCAN_NULL;
                rc = scan_emit(s, t, s->depth, cb, arg);
                if (rc == 0)
                    rc = scan_value_done(s, cb, arg);
            }
            break;
        }
        if (!again) {
            i++;
            s->offset++;
        }
    }
    return rc;
}

int jsonscan_finish(struct jsonscan *s, jsonscan_fn cb, void *arg)
{
    if (s->err)
        return s->err;
    if (s->st == ST_NUM && s->depth == 0) {
        if (!scan_num_complete(s->num))
            return s->err = -EBADMSG;
        int rc = scan_emit(s, JSONSCAN_NUMBER, 0, cb, arg);
        if (rc != 0)
            return rc;
        rc = scan_value_done(s, cb, arg);
        if (rc != 0)
            return rc;
    }
    if (s->in_doc)
        return s->err = -EBADMSG;
    if (!(s->flags & JSONSCAN_MULTI) && !s->docs)
        return s->err = -EBADMSG;
    return 0;
}
