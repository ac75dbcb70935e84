/* onnx_read.c - reading a .onnx file without holding it whole: a small protobuf
 * wire-format walker reads the file through a buffer, unpacks each
 * GraphProto.initializer (field 5) on its own with protobuf-c, and collects every other
 * field of ModelProto and GraphProto into two small buffers that protobuf-c unpacks
 * afterwards (onnx_load.c builds the IR from the result). */
#include "frontend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx.pb-c.h"

/* Buffered sequential reader over a file descriptor. */
typedef struct Reader {
    int fd;                   /* the model file */
    uint64_t size;            /* file size */
    uint64_t pos;             /* absolute position of the next byte */
    unsigned char buf[65536]; /* read-ahead buffer */
    uint64_t bstart;          /* file offset of buf[0] */
    size_t blen;              /* valid bytes in buf */
} Reader;

/* A growable byte buffer (malloc'd; only for the small non-initializer fields). */
typedef struct Bytes {
    unsigned char *p;  /* data */
    size_t n;          /* used */
    size_t cap;        /* allocated */
} Bytes;

static int bytes_reserve(Bytes *b, size_t need) {
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    return 0;
}

static int bytes_put(Bytes *b, const void *src, size_t n) {
    if (bytes_reserve(b, b->n + n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

static int bytes_varint(Bytes *b, uint64_t v) {
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    return bytes_put(b, tmp, n);
}

/* Copies n bytes at the reader's position to dst (dst may be NULL to skip). */
static int rd_bytes(Reader *r, void *dst, uint64_t n) {
    if (n > r->size - r->pos)
        return -1;
    unsigned char *out = dst;
    while (n > 0) {
        if (r->pos >= r->bstart && r->pos < r->bstart + r->blen) {
            size_t off = (size_t)(r->pos - r->bstart);
            size_t k = r->blen - off;
            if (k > n)
                k = (size_t)n;
            if (out) {
                memcpy(out, r->buf + off, k);
                out += k;
            }
            r->pos += k;
            n -= k;
        } else if (n >= sizeof r->buf || !out) {
            /* Large copies go straight to the destination; skips just move. */
            if (out) {
                size_t k = (size_t)n;
                while (k > 0) {
                    ssize_t got = pread(r->fd, out, k, (off_t)r->pos);
                    if (got <= 0)
                        return -1;
                    out += got;
                    r->pos += (uint64_t)got;
                    k -= (size_t)got;
                }
                n = 0;
            } else {
                r->pos += n;
                n = 0;
            }
        } else {
            ssize_t got = pread(r->fd, r->buf, sizeof r->buf, (off_t)r->pos);
            if (got <= 0)
                return -1;
            r->bstart = r->pos;
            r->blen = (size_t)got;
        }
    }
    return 0;
}

static int rd_varint(Reader *r, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        unsigned char b;
        if (rd_bytes(r, &b, 1) < 0)
            return -1;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* Copies the field whose tag was just read into out (re-encoding tag and length). */
static int copy_field(Reader *r, uint64_t tag, uint64_t end, Bytes *out) {
    if (bytes_varint(out, tag) < 0)
        return -1;
    uint64_t v;
    unsigned char tmp[8];
    switch (tag & 7) {
    case 0:
        return rd_varint(r, &v) < 0 || r->pos > end ? -1 : bytes_varint(out, v);
    case 1:
    case 5: {
        size_t n = (tag & 7) == 1 ? 8 : 4;
        if (r->pos + n > end || rd_bytes(r, tmp, n) < 0)
            return -1;
        return bytes_put(out, tmp, n);
    }
    case 2: {
        if (rd_varint(r, &v) < 0 || r->pos > end || v > end - r->pos ||
            bytes_varint(out, v) < 0)
            return -1;
        size_t at = out->n;
        if (bytes_reserve(out, at + (size_t)v) < 0)
            return -1;
        if (rd_bytes(r, out->p + at, v) < 0)
            return -1;
        out->n = at + (size_t)v;
        return 0;
    }
    default:
        return -1; /* groups (3, 4) are not used by ONNX; 6, 7 are invalid */
    }
}

/* Splits the model file into "model minus graph", "graph minus initializers" and the
 * individually unpacked initializers; returns the reassembled ModelProto. */
Onnx__ModelProto *oqc_onnx_read_model(int fd, uint64_t size, ProtobufCAllocator *pb,
                                      OqcArena *arena, const char *path, OqcDiag *d) {
    Reader *r = malloc(sizeof *r);
    Bytes model_rest = {0}, graph_rest = {0};
    unsigned char *scratch = NULL;
    size_t scratch_cap = 0;
    Onnx__TensorProto **inits = NULL;
    size_t ninits = 0, cap_inits = 0;
    Onnx__ModelProto *m = NULL;
    int ngraphs = 0;
    const char *bad = NULL;
    if (!r)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->size = size;

    while (!bad && r->pos < size) {
        uint64_t tag, len;
        if (rd_varint(r, &tag) < 0) {
            bad = "truncated field tag";
            break;
        }
        if ((tag >> 3) != 7 || (tag & 7) != 2) {
            if (copy_field(r, tag, size, &model_rest) < 0)
                bad = "truncated or malformed ModelProto field";
            continue;
        }
        if (rd_varint(r, &len) < 0 || len > size - r->pos) {
            bad = "truncated graph";
            break;
        }
        if (++ngraphs > 1) {
            bad = "more than one graph";
            break;
        }
        uint64_t end = r->pos + len;
        while (!bad && r->pos < end) {
            uint64_t gtag, tlen;
            if (rd_varint(r, &gtag) < 0 || r->pos > end) {
                bad = "truncated GraphProto field tag";
                break;
            }
            if ((gtag >> 3) != 5 || (gtag & 7) != 2) {
                if (copy_field(r, gtag, end, &graph_rest) < 0)
                    bad = "truncated or malformed GraphProto field";
                continue;
            }
            if (rd_varint(r, &tlen) < 0 || r->pos > end || tlen > end - r->pos) {
                bad = "truncated initializer";
                break;
            }
            if (tlen > scratch_cap) {
                free(scratch);
                scratch_cap = (size_t)tlen;
                scratch = malloc(scratch_cap ? scratch_cap : 1);
                if (!scratch)
                    oqc_panic(__FILE__, __LINE__, "out of memory reading an initializer");
            }
            if (rd_bytes(r, scratch, tlen) < 0) {
                bad = "truncated initializer";
                break;
            }
            Onnx__TensorProto *tp = onnx__tensor_proto__unpack(pb, (size_t)tlen, scratch);
            if (!tp) {
                bad = "malformed initializer (TensorProto)";
                break;
            }
            if (ninits == cap_inits) {
                size_t cap = cap_inits ? 2 * cap_inits : 64;
                inits = oqc_arena_grow(arena, inits, ninits, cap, sizeof *inits);
                cap_inits = cap;
            }
            inits[ninits++] = tp;
        }
        if (!bad && r->pos != end)
            bad = "graph field overruns its length";
    }
    if (!bad) {
        m = onnx__model_proto__unpack(pb, model_rest.n, model_rest.p);
        if (!m)
            bad = "malformed ModelProto";
    }
    if (!bad && ngraphs == 0)
        bad = "no graph in the model";
    if (!bad) {
        m->graph = onnx__graph_proto__unpack(pb, graph_rest.n, graph_rest.p);
        if (!m->graph)
            bad = "malformed GraphProto";
    }
    if (bad) {
        oqc_err(d, "%s: not a valid ONNX model: %s (at byte %" PRIu64 " of %" PRIu64 ")",
                path, bad, r->pos, size);
        m = NULL;
    } else {
        m->graph->initializer = inits;
        m->graph->n_initializer = ninits;
    }
    free(r);
    free(scratch);
    free(model_rest.p);
    free(graph_rest.p);
    return m;
}
