/* ragexam.data._trecfast: one pass over a TREC run or qrels file in its plain form.
 *
 * The reader of ragexam.data.trec calls read() first.  It accepts a file only when every line is plain:
 * printable ASCII fields separated by single spaces, or by single tabs (never both in one file), lines ending
 * in "\n" or "\r\n", empty lines allowed, exactly the layout's number of fields, integers and decimal numbers
 * where they are expected.  For anything else it returns None and the reader falls back to pyarrow's CSV
 * reader or to the line-by-line parser, which reports the exact problem; so on every file it accepts, its
 * columns are those the other readers give (tests/test_trec_fast.py compares them).
 *
 * Numbers are read as Python reads them: an integer exactly, a decimal correctly rounded (Clinger's exact
 * case -- at most 19 significant digits forming an integer below 2**53 and a power of ten up to 22 -- in
 * double arithmetic, every other case by PyOS_string_to_double, which is float()'s own conversion).
 *
 * Identifiers are dictionary-encoded in order of first appearance with open-addressing hash tables.  A run
 * read against the judgments it will be evaluated with (`judged`: the qrels' documents, query ids and rows)
 * does not build a table of its own documents -- a million strings probed at random, which is most of the
 * time -- but looks each row's document up among the few judged for the row's query: a judged document gets
 * its qrels code, any other document a code of its own on each row, and a document retrieved twice for one
 * query makes the file not plain (the other readers name the line).  This needs the rows grouped by query;
 * when they are not, the run is read again with one table of every document, the qrels' first.
 * index_in() is a hash join of int64 keys.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- growable buffers ---------------------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = (char *)realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

static PyObject *buf_bytearray(const Buf *b) {
    return PyByteArray_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len);
}

/* ---- a string vocabulary ------------------------------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    uint32_t code1; /* code + 1; 0: an empty slot */
    uint32_t len;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask, used;
    Buf offsets; /* int64 offsets into data, one per entry plus the end */
    Buf data;
    int64_t n;
} Vocab;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 32);
}

/* An empty vocabulary whose table holds `expect` strings without growing and whose buffers hold `bytes` bytes
 * of strings without moving (memory never touched costs nothing: it is only reserved). */
static int vocab_init(Vocab *v, size_t expect, size_t bytes) {
    memset(v, 0, sizeof(*v));
    size_t size = 1024;
    while (size < 2 * expect) size *= 2;
    v->slots = (Slot *)calloc(size, sizeof(Slot));
    if (!v->slots) return -1;
    v->mask = size - 1;
    int64_t zero = 0;
    if (buf_reserve(&v->offsets, (expect + 1) * sizeof(int64_t)) < 0 || buf_reserve(&v->data, bytes) < 0) return -1;
    return buf_put(&v->offsets, &zero, sizeof zero);
}

static void vocab_free(Vocab *v) {
    free(v->slots);
    free(v->offsets.p);
    free(v->data.p);
}

static int vocab_grow(Vocab *v) {
    size_t size = (v->mask + 1) * 2;
    Slot *slots = (Slot *)calloc(size, sizeof(Slot));
    if (!slots) return -1;
    for (size_t i = 0; i <= v->mask; i++) {
        if (!v->slots[i].code1) continue;
        size_t j = v->slots[i].hash & (size - 1);
        while (slots[j].code1) j = (j + 1) & (size - 1);
        slots[j] = v->slots[i];
    }
    free(v->slots);
    v->slots = slots;
    v->mask = size - 1;
    return 0;
}

/* A new entry for s[0:n], not entered in the table; its code, or -1 on memory failure. */
static int64_t vocab_append(Vocab *v, const char *s, size_t n) {
    if (v->n >= (int64_t)UINT32_MAX - 1 || n > UINT32_MAX) return -1;
    if (buf_put(&v->data, s, n) < 0) return -1;
    int64_t end = (int64_t)v->data.len;
    if (buf_put(&v->offsets, &end, sizeof end) < 0) return -1;
    return v->n++;
}

/* The slot of s[0:n] (hash h): its own, or the empty one where it would go. */
static size_t vocab_slot(const Vocab *v, const char *s, size_t n, uint64_t h) {
    size_t j = h & v->mask;
    while (v->slots[j].code1) {
        const Slot *sl = &v->slots[j];
        if (sl->hash == h && sl->len == n &&
            memcmp(v->data.p + ((const int64_t *)v->offsets.p)[sl->code1 - 1], s, n) == 0)
            return j;
        j = (j + 1) & v->mask;
    }
    return j;
}

/* The code of s[0:n] (hash h), or -1 when it is not in the table. */
static int64_t vocab_find(const Vocab *v, const char *s, size_t n, uint64_t h) {
    return (int64_t)v->slots[vocab_slot(v, s, n, h)].code1 - 1;
}

/* The code of s[0:n] (hash h), entered when new; -1 on memory failure. */
static int64_t vocab_code(Vocab *v, const char *s, size_t n, uint64_t h) {
    size_t j = vocab_slot(v, s, n, h);
    if (v->slots[j].code1) return (int64_t)v->slots[j].code1 - 1;
    int64_t c = vocab_append(v, s, n);
    if (c < 0) return -1;
    Slot *sl = &v->slots[j];
    sl->hash = h;
    sl->code1 = (uint32_t)(c + 1);
    sl->len = (uint32_t)n;
    if (++v->used * 2 > v->mask + 1 && vocab_grow(v) < 0) return -1;
    return c;
}

/* ---- the strings of one query ---------------------------------------------------------------------------- */

/* A small table emptied for each query by a new generation: a query's documents, or the documents judged for
 * it (with their qrels codes). */
typedef struct {
    uint64_t hash;
    const char *s;
    int64_t code;
    uint32_t len;
    uint32_t gen;
} QEntry;

typedef struct {
    QEntry *slots;
    size_t mask, count;
    uint32_t gen;
} QTable;

static int qtable_init(QTable *t) {
    t->slots = (QEntry *)calloc(256, sizeof(QEntry));
    t->mask = 255;
    t->count = 0;
    t->gen = 1;
    return t->slots ? 0 : -1;
}

static void qtable_next(QTable *t) {
    t->gen++;
    t->count = 0;
}

/* The slot of s[0:n] (hash h) in this generation: its own, or the free one where it would go. */
static size_t qtable_slot(const QTable *t, const char *s, size_t n, uint64_t h) {
    size_t j = h & t->mask;
    while (t->slots[j].gen == t->gen) {
        const QEntry *e = &t->slots[j];
        if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0) return j;
        j = (j + 1) & t->mask;
    }
    return j;
}

/* The entry of s[0:n] (hash h) of this generation, or NULL. */
static const QEntry *qtable_find(const QTable *t, const char *s, size_t n, uint64_t h) {
    const QEntry *e = &t->slots[qtable_slot(t, s, n, h)];
    return e->gen == t->gen ? e : NULL;
}

/* Enter s[0:n] (hash h) with `code` unless it is there: 1 when it was, 0 when entered, -1 on memory failure. */
static int qtable_add(QTable *t, const char *s, size_t n, uint64_t h, int64_t code) {
    if ((t->count + 1) * 2 > t->mask + 1) {
        size_t size = (t->mask + 1) * 2;
        QEntry *slots = (QEntry *)calloc(size, sizeof(QEntry));
        if (!slots) return -1;
        for (size_t i = 0; i <= t->mask; i++) {
            if (t->slots[i].gen != t->gen) continue;
            size_t j = t->slots[i].hash & (size - 1);
            while (slots[j].gen == t->gen) j = (j + 1) & (size - 1);
            slots[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = slots;
        t->mask = size - 1;
    }
    QEntry *e = &t->slots[qtable_slot(t, s, n, h)];
    if (e->gen == t->gen) return 1;
    e->hash = h;
    e->s = s;
    e->len = (uint32_t)n;
    e->code = code;
    e->gen = t->gen;
    t->count++;
    return 0;
}

/* ---- numbers ------------------------------------------------------------------------------------------- */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* [+-]?[0-9]{1,18}; 0 = not such an integer. */
static int parse_int(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == n || n - i > 18) return 0;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

/* [+-]?(digits[.digits*]|.digits)([eE][+-]?digits)?, correctly rounded; 0 = not such a number. */
static int parse_double(const char *s, size_t n, double *out) {
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    uint64_t m = 0;
    int nd = 0, digits = 0, exact = 1;
    long e10 = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        int d = s[i] - '0';
        if (nd == 0 && d == 0) continue;
        if (nd < 19) {
            m = m * 10 + (uint64_t)d;
            nd++;
        } else {
            e10++;
            if (d) exact = 0;
        }
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            int d = s[i] - '0';
            if (nd == 0 && d == 0) {
                e10--;
                continue;
            }
            if (nd < 19) {
                m = m * 10 + (uint64_t)d;
                nd++;
                e10--;
            } else if (d) {
                exact = 0;
            }
        }
    }
    if (!digits) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        if (i == n) return 0;
        long e = 0;
        for (; i < n; i++) {
            if (s[i] < '0' || s[i] > '9') return 0;
            if (e < 100000) e = e * 10 + (s[i] - '0');
        }
        e10 += eneg ? -e : e;
    }
    if (i != n) return 0;
    double v;
    if (m == 0) {
        v = 0.0;
    } else if (exact && m <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        v = (double)m;
        v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
    } else {
        char small[64];
        char *text = n < sizeof small ? small : (char *)malloc(n + 1);
        if (!text) return 0;
        memcpy(text, s, n);
        text[n] = '\0';
        char *end = NULL;
        double got = PyOS_string_to_double(text, &end, NULL);
        int ok = !(got == -1.0 && PyErr_Occurred()) && end == text + n;
        if (text != small) free(text);
        if (!ok) {
            PyErr_Clear();
            return 0;
        }
        *out = got; /* the sign was read by PyOS_string_to_double */
        return 1;
    }
    *out = neg ? -v : v;
    return 1;
}

/* ---- read() -------------------------------------------------------------------------------------------- */

enum { P_OK, P_NOT_PLAIN, P_UNGROUPED, P_NOMEM };

/* The judgments a run is read against: the qrels' documents (packed strings), and their rows grouped by
 * query (rows_start[k] .. rows_start[k + 1] index row_doc for the k-th query id). */
typedef struct {
    const char *data;
    const int64_t *offsets;
    int64_t n_docs;
    Vocab qids;       /* the qrels' query ids, codes in their order */
    int64_t *rows_start;
    int64_t *row_doc;
} Judged;

typedef struct {
    const char *begin, *end;
    int nfields, i_q, i_d, i_v, i_r, is_float;
    Vocab qv, dv;
    int64_t *qcodes, *dcodes; /* one entry per line at most, in the bytearrays returned */
    char *values;
    size_t rows;
} Parse;

/* What a byte is in a plain file. */
enum { C_TEXT, C_SEP, C_NL, C_CR, C_BAD };

typedef struct {
    Parse *P;
    const Judged *judged;
    QTable *seen, *jt;
    unsigned char cls[256];
    int64_t prev_qc;
    const char *prev_q;
    size_t prev_ql;
} Lines;

/* The query of a line: its code, and with judgments a new query empties the tables of the query before. */
static int line_query(Lines *L, const char *q, size_t ql, int64_t *qc_out) {
    Parse *P = L->P;
    if (ql == L->prev_ql && memcmp(q, L->prev_q, ql) == 0) { /* the query of the line before */
        *qc_out = L->prev_qc;
        return P_OK;
    }
    uint64_t qh = hash_bytes(q, ql);
    int64_t known = P->qv.n;
    int64_t qc = vocab_code(&P->qv, q, ql, qh);
    if (qc < 0) return P_NOMEM;
    const Judged *J = L->judged;
    if (J) {
        if (qc < known) return P_UNGROUPED; /* the query came before, with another in between */
        qtable_next(L->seen);
        qtable_next(L->jt);
        int64_t jq = vocab_find(&J->qids, q, ql, qh); /* the documents judged for it */
        for (int64_t r = jq < 0 ? 0 : J->rows_start[jq]; jq >= 0 && r < J->rows_start[jq + 1]; r++) {
            int64_t dc = J->row_doc[r];
            const char *s = J->data + J->offsets[dc];
            size_t n = (size_t)(J->offsets[dc + 1] - J->offsets[dc]);
            if (qtable_add(L->jt, s, n, hash_bytes(s, n), dc) < 0) return P_NOMEM;
        }
    }
    L->prev_q = q;
    L->prev_ql = ql;
    L->prev_qc = qc;
    *qc_out = qc;
    return P_OK;
}

/* The first byte from c on that is not printable ASCII (0x21-0x7E: field text); a "\n" comes before `limit`.
 * With SSE2 (every x86-64 CPU) 16 bytes at a time while 16 are left before `limit`. */
static inline const char *skip_text(const char *c, const char *limit, const unsigned char *cls) {
#if defined(__SSE2__)
    const __m128i first = _mm_set1_epi8(0x21), del = _mm_set1_epi8(0x7F);
    while (limit - c >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)c);
        /* signed bytes: below 0x21 catches the controls, the space and every byte >= 0x80 */
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(v, first), _mm_cmpeq_epi8(v, del)));
        if (m) return c + __builtin_ctz((unsigned)m);
        c += 16;
    }
#else
    (void)limit;
#endif
    while (cls[(unsigned char)*c] == C_TEXT) c++;
    return c;
}

/* Read the line at *pp, which a "\n" ends before `limit`, and move *pp past it. */
static inline int read_line(Lines *L, const char **pp, const char *limit) {
    Parse *P = L->P;
    const unsigned char *cls = L->cls;
    const char *c = *pp;
    const char *fs[16];
    size_t fl[16];
    int k = 0;
    for (;;) {
        const char *f = c;
        c = skip_text(c, limit, cls);
        int t = cls[(unsigned char)*c];
        size_t len = (size_t)(c - f);
        if (t == C_SEP) {
            if (!len || k >= P->nfields - 1) return P_NOT_PLAIN; /* an empty field, or too many */
            fs[k] = f;
            fl[k++] = len;
            c++;
            continue;
        }
        if (t == C_CR ? c[1] != '\n' : t != C_NL) return P_NOT_PLAIN; /* a lone CR, other whitespace or bytes */
        c += t == C_CR ? 2 : 1;
        if (!len) {
            if (k) return P_NOT_PLAIN;
            *pp = c; /* an empty line */
            return P_OK;
        }
        fs[k] = f;
        fl[k++] = len;
        break;
    }
    *pp = c;
    if (k != P->nfields) return P_NOT_PLAIN;
    int64_t iv;
    double dval;
    if (P->i_r >= 0 && !parse_int(fs[P->i_r], fl[P->i_r], &iv)) return P_NOT_PLAIN;
    if (P->is_float) {
        if (!parse_double(fs[P->i_v], fl[P->i_v], &dval)) return P_NOT_PLAIN;
        memcpy(P->values + 8 * P->rows, &dval, 8);
    } else {
        if (!parse_int(fs[P->i_v], fl[P->i_v], &iv)) return P_NOT_PLAIN;
        memcpy(P->values + 8 * P->rows, &iv, 8);
    }
    int64_t qc, dc;
    int st = line_query(L, fs[P->i_q], fl[P->i_q], &qc);
    if (st != P_OK) return st;
    const char *d = fs[P->i_d];
    size_t dl = fl[P->i_d];
    uint64_t dh = hash_bytes(d, dl);
    if (L->judged) {
        int again = qtable_add(L->seen, d, dl, dh, 0);
        if (again < 0) return P_NOMEM;
        if (again) return P_NOT_PLAIN; /* retrieved twice: the other readers name the line */
        const QEntry *e = qtable_find(L->jt, d, dl, dh);
        dc = e ? e->code : vocab_append(&P->dv, d, dl);
    } else {
        dc = vocab_code(&P->dv, d, dl, dh);
    }
    if (dc < 0) return P_NOMEM;
    P->qcodes[P->rows] = qc;
    P->dcodes[P->rows] = dc;
    P->rows++;
    return P_OK;
}

/* Read every line.  With `judged`, a run's documents are looked up among those judged for the row's query
 * (see the top of this file); P_UNGROUPED when a query's rows are not together. */
static int parse_lines(Parse *P, const Judged *judged, QTable *seen, QTable *jt) {
    const char *p = P->begin, *end = P->end;
    if (P->nfields < 1 || P->nfields > 16) return P_NOT_PLAIN;
    int has_tab = memchr(p, '\t', (size_t)(end - p)) != NULL;
    int has_space = memchr(p, ' ', (size_t)(end - p)) != NULL;
    if (has_tab && has_space) return P_NOT_PLAIN; /* any whitespace separates fields there */
    Lines L;
    memset(&L, 0, sizeof L);
    L.P = P;
    L.judged = judged;
    L.seen = seen;
    L.jt = jt;
    L.prev_ql = (size_t)-1;
    memset(L.cls, C_BAD, sizeof L.cls);
    for (int ch = 0x21; ch <= 0x7E; ch++) L.cls[ch] = C_TEXT;
    L.cls[has_tab ? '\t' : ' '] = C_SEP;
    L.cls['\n'] = C_NL;
    L.cls['\r'] = C_CR;
    /* every line up to the last "\n"; a last line without one is read from a copy that has it */
    const char *stop = p;
    for (const char *c = end; c > p; c--) {
        if (c[-1] == '\n') {
            stop = c;
            break;
        }
    }
    while (p < stop) {
        int st = read_line(&L, &p, end);
        if (st != P_OK) return st;
    }
    if (stop < end) {
        size_t n = (size_t)(end - stop);
        char *tail = (char *)malloc(n + 1);
        if (!tail) return P_NOMEM;
        memcpy(tail, stop, n);
        tail[n] = '\n';
        const char *t = tail;
        int st = read_line(&L, &t, tail + n + 1);
        /* the tables may point into the copy: it is the last line, read once; nothing reads them after */
        free(tail);
        if (st != P_OK) return st;
    }
    return P->rows ? P_OK : P_NOT_PLAIN;
}

static PyObject *vocab_result(Vocab *v) {
    PyObject *offsets = buf_bytearray(&v->offsets);
    PyObject *data = PyBytes_FromStringAndSize(v->data.p ? v->data.p : "", (Py_ssize_t)v->data.len);
    if (!offsets || !data) {
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        return NULL;
    }
    return Py_BuildValue("(NN)", data, offsets);
}

/* Enter the judged documents first (codes 0 .. n_docs - 1) and their query ids; P_NOT_PLAIN when they are not
 * distinct strings.  Buffers: `data`/`offsets` of the documents, the query ids (a list of str), and the
 * rows' int64 query and document codes. */
static int judged_init(Judged *J, Vocab *dv, const Py_buffer *data, const Py_buffer *offsets, PyObject *qids,
                       const Py_buffer *qcodes, const Py_buffer *dcodes) {
    J->data = (const char *)data->buf;
    J->offsets = (const int64_t *)offsets->buf;
    J->n_docs = (int64_t)(offsets->len / (Py_ssize_t)sizeof(int64_t)) - 1;
    for (int64_t k = 0; k < J->n_docs; k++) {
        const char *s = J->data + J->offsets[k];
        size_t n = (size_t)(J->offsets[k + 1] - J->offsets[k]);
        int64_t c = vocab_code(dv, s, n, hash_bytes(s, n));
        if (c < 0) return P_NOMEM;
        if (c != k) return P_NOT_PLAIN;
    }
    Py_ssize_t nq = PyList_GET_SIZE(qids);
    if (vocab_init(&J->qids, (size_t)nq, 0) < 0) return P_NOMEM;
    for (Py_ssize_t k = 0; k < nq; k++) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(qids, k), &n);
        if (!s) return P_NOMEM;
        int64_t c = vocab_code(&J->qids, s, (size_t)n, hash_bytes(s, (size_t)n));
        if (c < 0) return P_NOMEM;
        if (c != k) return P_NOT_PLAIN;
    }
    size_t rows = (size_t)qcodes->len / 8;
    const int64_t *qc = (const int64_t *)qcodes->buf, *dc = (const int64_t *)dcodes->buf;
    J->rows_start = (int64_t *)calloc((size_t)nq + 2, sizeof(int64_t));
    J->row_doc = (int64_t *)malloc((rows ? rows : 1) * sizeof(int64_t));
    if (!J->rows_start || !J->row_doc) return P_NOMEM;
    for (size_t r = 0; r < rows; r++) {
        if (qc[r] < 0 || qc[r] >= nq || dc[r] < 0 || dc[r] >= J->n_docs) return P_NOT_PLAIN;
        J->rows_start[qc[r] + 2]++;
    }
    for (Py_ssize_t k = 0; k < nq; k++) J->rows_start[k + 2] += J->rows_start[k + 1];
    for (size_t r = 0; r < rows; r++) J->row_doc[J->rows_start[qc[r] + 1]++] = dc[r];
    return P_OK;
}

static PyObject *trec_read(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view, jd = {0}, jo = {0}, jq = {0}, jc = {0};
    Py_ssize_t start;
    int nfields, i_q, i_d, i_v, i_r, is_float;
    PyObject *judged_arg = Py_None, *j_qids = NULL;
    if (!PyArg_ParseTuple(args, "y*niiiiip|O", &view, &start, &nfields, &i_q, &i_d, &i_v, &i_r, &is_float,
                          &judged_arg))
        return NULL;
    if (judged_arg != Py_None &&
        !PyArg_ParseTuple(judged_arg, "y*y*O!y*y*", &jd, &jo, &PyList_Type, &j_qids, &jq, &jc)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Parse P;
    memset(&P, 0, sizeof P);
    Judged J;
    memset(&J, 0, sizeof J);
    QTable seen = {0}, jt = {0};
    PyObject *result = NULL, *qcodes = NULL, *dcodes = NULL, *values = NULL;
    int status = P_NOT_PLAIN;
    if (start < 0 || start > view.len) goto done;
    P.begin = (const char *)view.buf + start;
    P.end = (const char *)view.buf + view.len;
    P.nfields = nfields;
    P.i_q = i_q;
    P.i_d = i_d;
    P.i_v = i_v;
    P.i_r = i_r;
    P.is_float = is_float;
    /* at most one row per 2 * nfields bytes (memory never touched costs nothing: it is only reserved) */
    size_t lines = (size_t)(P.end - P.begin) / (size_t)(2 * (nfields > 0 ? nfields : 1)) + 1;
    qcodes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(lines * 8));
    dcodes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(lines * 8));
    values = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(lines * 8));
    /* the documents: one per line at most (a run read against judgments appends most of them), after the
     * judged ones */
    size_t n_judged = jo.obj ? (size_t)(jo.len / 8) : 0;
    size_t doc_bytes = (size_t)(P.end - P.begin) + (jd.obj ? (size_t)jd.len : 0);
    if (!qcodes || !dcodes || !values || vocab_init(&P.qv, 1024, 16384) < 0 ||
        vocab_init(&P.dv, jd.obj ? n_judged : (lines / 4 < (1 << 18) ? lines / 4 : (1 << 18)), doc_bytes) < 0 ||
        buf_reserve(&P.dv.offsets, (lines + n_judged + 1) * sizeof(int64_t)) < 0 || qtable_init(&seen) < 0 ||
        qtable_init(&jt) < 0) {
        status = P_NOMEM;
        goto done;
    }
    P.qcodes = (int64_t *)PyByteArray_AS_STRING(qcodes);
    P.dcodes = (int64_t *)PyByteArray_AS_STRING(dcodes);
    P.values = PyByteArray_AS_STRING(values);
    if (jd.obj) {
        status = judged_init(&J, &P.dv, &jd, &jo, j_qids, &jq, &jc);
        if (status != P_OK) goto done;
    }
    int checked = jd.obj != NULL; /* each query's documents checked for repeats as they were read */
    status = parse_lines(&P, jd.obj ? &J : NULL, &seen, &jt);
    if (status == P_UNGROUPED) { /* again, with one table of every document, the judged ones first */
        vocab_free(&P.qv);
        if (vocab_init(&P.qv, 1024, 16384) < 0) {
            status = P_NOMEM;
            goto done;
        }
        P.dv.n = J.n_docs;
        P.dv.offsets.len = (size_t)(J.n_docs + 1) * sizeof(int64_t);
        P.dv.data.len = (size_t)((const int64_t *)P.dv.offsets.p)[J.n_docs];
        P.rows = 0;
        checked = 0;
        status = parse_lines(&P, NULL, &seen, &jt);
    }
done:
    if (status == P_OK && PyByteArray_Resize(qcodes, (Py_ssize_t)(P.rows * 8)) == 0 &&
        PyByteArray_Resize(dcodes, (Py_ssize_t)(P.rows * 8)) == 0 &&
        PyByteArray_Resize(values, (Py_ssize_t)(P.rows * 8)) == 0) {
        PyObject *qvoc = vocab_result(&P.qv), *dvoc = vocab_result(&P.dv);
        if (qvoc && dvoc) {
            result = Py_BuildValue("(OOOOOLO)", qcodes, qvoc, dcodes, dvoc, values, (long long)J.n_docs,
                                   checked ? Py_True : Py_False);
        }
        Py_XDECREF(qvoc);
        Py_XDECREF(dvoc);
    } else if (status == P_NOMEM) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
    } else if (!PyErr_Occurred()) {
        result = Py_NewRef(Py_None);
    }
    Py_XDECREF(qcodes);
    Py_XDECREF(dcodes);
    Py_XDECREF(values);
    vocab_free(&P.qv);
    vocab_free(&P.dv);
    vocab_free(&J.qids);
    free(J.rows_start);
    free(J.row_doc);
    free(seen.slots);
    free(jt.slots);
    if (jd.obj) {
        PyBuffer_Release(&jd);
        PyBuffer_Release(&jo);
        PyBuffer_Release(&jq);
        PyBuffer_Release(&jc);
    }
    PyBuffer_Release(&view);
    return result;
}

/* ---- index_in() ---------------------------------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    return x ^ (x >> 33);
}

static PyObject *trec_index_in(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer keys, values;
    if (!PyArg_ParseTuple(args, "y*y*", &keys, &values)) return NULL;
    size_t nk = (size_t)keys.len / 8, nv = (size_t)values.len / 8;
    const int64_t *k = (const int64_t *)keys.buf, *v = (const int64_t *)values.buf;
    size_t size = 16;
    while (size < 2 * nv) size *= 2;
    int64_t *slots = (int64_t *)malloc(size * sizeof(int64_t)); /* position + 1, 0 = empty */
    int64_t *slot_key = (int64_t *)malloc(size * sizeof(int64_t));
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(nk * 8));
    if (!slots || !slot_key || !out) {
        free(slots);
        free(slot_key);
        Py_XDECREF(out);
        PyBuffer_Release(&keys);
        PyBuffer_Release(&values);
        return PyErr_NoMemory();
    }
    memset(slots, 0, size * sizeof(int64_t));
    size_t mask = size - 1;
    for (size_t i = 0; i < nv; i++) {
        size_t j = mix64((uint64_t)v[i]) & mask;
        while (slots[j] && slot_key[j] != v[i]) j = (j + 1) & mask;
        if (!slots[j]) { /* the first occurrence wins */
            slots[j] = (int64_t)i + 1;
            slot_key[j] = v[i];
        }
    }
    int64_t *res = (int64_t *)PyByteArray_AS_STRING(out);
    for (size_t i = 0; i < nk; i++) {
        size_t j = mix64((uint64_t)k[i]) & mask;
        int64_t at = -1;
        while (slots[j]) {
            if (slot_key[j] == k[i]) {
                at = slots[j] - 1;
                break;
            }
            j = (j + 1) & mask;
        }
        res[i] = at;
    }
    free(slots);
    free(slot_key);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&values);
    return out;
}

static PyMethodDef methods[] = {
    {"read", trec_read, METH_VARARGS,
     "read(data, start, nfields, i_qid, i_docid, i_value, i_rank, value_is_float[, judged])\n"
     "judged: (doc_data, doc_offsets, qid_list, qid_codes, doc_codes) of the qrels a run is read against\n"
     "-> (qid_codes, (qid_data, qid_offsets), doc_codes, (doc_data, doc_offsets), values, n_judged,\n"
     "    repeats_checked) or None"},
    {"index_in", trec_index_in, METH_VARARGS,
     "index_in(keys, values) -> int64 positions in values (bytearray), -1 where absent"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trecfast",
                                    "A one-pass reader of plain TREC files (see ragexam.data.trec).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__trecfast(void) { return PyModule_Create(&module); }
