/* tensor_io.c - reading and writing tensors: NumPy .npy, ONNX TensorProto .pb, raw
 * float32 (see ir.h).
 *
 * .npy: format versions 1.0-3.0, little-endian or byte-order-free dtypes, C order only
 * (a Fortran-order file is an error naming the file). Writing goes to a temporary file
 * renamed into place, so a failed write never leaves a partial .npy behind. */
#include "frontend.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *descr;   /* numpy dtype string */
    OqcfDType dt;        /* oqc dtype */
} npy_types[] = {
    {.descr = "<f4", .dt = OQCF_FLOAT},
    {.descr = "<f8", .dt = OQCF_DOUBLE},
    {.descr = "<f2", .dt = OQCF_FLOAT16},
    {.descr = "|u1", .dt = OQCF_UINT8},
    {.descr = "|i1", .dt = OQCF_INT8},
    {.descr = "<u2", .dt = OQCF_UINT16},
    {.descr = "<i2", .dt = OQCF_INT16},
    {.descr = "<i4", .dt = OQCF_INT32},
    {.descr = "<i8", .dt = OQCF_INT64},
    {.descr = "<u4", .dt = OQCF_UINT32},
    {.descr = "<u8", .dt = OQCF_UINT64},
    {.descr = "|b1", .dt = OQCF_BOOL},
};

static int npy_bad(OqcDiag *d, const char *path, const char *why) {
    return oqc_err(d, "%s: not a valid .npy file: %s", path, why);
}

/* The header of the .npy file f after its magic and version (a malloc'd string), or
 * NULL with an error naming path. */
static char *npy_header(FILE *f, const char *path, OqcDiag *d) {
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        npy_bad(d, path, "missing the \\x93NUMPY magic");
        return NULL;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            npy_bad(d, path, "truncated header");
            return NULL;
        }
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
               (uint32_t)pre[11] << 24;
    } else {
        npy_bad(d, path, "unknown format version");
        return NULL;
    }
    if (hlen > (1u << 20)) {
        npy_bad(d, path, "header too long");
        return NULL;
    }
    char *hdr = malloc(hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        npy_bad(d, path, "truncated header");
        return NULL;
    }
    hdr[hlen] = 0;
    return hdr;
}

/* The header's 'descr' as an oqc dtype (*dt); an error for one oqc does not read. */
static int npy_dtype(const char *hdr, const char *path, OqcfDType *dt, OqcDiag *d) {
    const char *p = strstr(hdr, "'descr'");
    char descr[16] = "";
    if (!p || sscanf(p, "'descr' : '%15[^']'", descr) != 1) {
        if (!p || sscanf(p, "'descr': '%15[^']'", descr) != 1)
            return npy_bad(d, path, "no 'descr' in the header");
    }
    if (!strcmp(descr, "<u1") || !strcmp(descr, "|u1") || !strcmp(descr, "u1"))
        strcpy(descr, "|u1");
    if (!strcmp(descr, "<i1") || !strcmp(descr, "|i1") || !strcmp(descr, "i1"))
        strcpy(descr, "|i1");
    if (!strcmp(descr, "<b1") || !strcmp(descr, "|b1"))
        strcpy(descr, "|b1");
    *dt = OQCF_UNDEFINED;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (!strcmp(descr, npy_types[i].descr))
            *dt = npy_types[i].dt;
    if (*dt == OQCF_UNDEFINED)
        return oqc_err(d, "%s: .npy dtype '%s' is not supported (expected a little-endian "
                          "numeric type such as '<f4')", path, descr);
    return 0;
}

/* The header's 'fortran_order' must be False (C order). */
static int npy_c_order(const char *hdr, const char *path, OqcDiag *d) {
    const char *p = strstr(hdr, "'fortran_order'");
    int fortran = -1; /* its value: 1 True, 0 False, -1 missing or anything else */
    if (p) {
        p += strlen("'fortran_order'");
        p += strspn(p, " ");
        p += *p == ':';
        p += strspn(p, " ");
        if (!strncmp(p, "False", 5) && !isalnum((unsigned char)p[5]))
            fortran = 0;
        else if (!strncmp(p, "True", 4) && !isalnum((unsigned char)p[4]))
            fortran = 1;
    }
    if (fortran < 0)
        return npy_bad(d, path, "the header's 'fortran_order' must be True or False");
    if (fortran)
        return oqc_err(d, "%s: .npy in Fortran order is not supported; save it with "
                          "numpy.ascontiguousarray", path);
    return 0;
}

/* The header's 'shape' tuple into *shape, its element count into *numel. */
static int npy_shape(const char *hdr, const char *path, OqcShape *shape, int64_t *numel,
                     OqcDiag *d) {
    const char *p = strstr(hdr, "'shape'");
    p = p ? strchr(p, '(') : NULL;
    if (!p)
        return npy_bad(d, path, "no 'shape' in the header");
    p++;
    shape->rank = 0;
    *numel = 1;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        char *end;
        errno = 0;
        long long dim = strtoll(p, &end, 10);
        if (end == p || errno || dim < 0 || shape->rank == OQC_MAX_RANK)
            return npy_bad(d, path, "bad shape in the header");
        shape->d[shape->rank++] = dim;
        if (dim && *numel > OQC_MAX_ELEMENTS / dim)
            return oqc_err(d, "%s: .npy array is absurdly large", path);
        *numel *= dim;
        p = end;
        while (*p == 'L')
            p++;
    }
    return 0;
}

int oqc_npy_read(const char *path, OqcArena *a, OqcValue *v, OqcDiag *d) {
    memset(v, 0, sizeof *v);
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    /* The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False,
     * 'shape': (2, 3), } */
    char *hdr = npy_header(f, path, d);
    int64_t numel = 0;
    int rc = hdr && npy_dtype(hdr, path, &v->dtype, d) == 0 && npy_c_order(hdr, path, d) == 0 &&
                     npy_shape(hdr, path, &v->shape, &numel, d) == 0
                 ? 0
                 : -1;
    if (rc == 0) {
        size_t need = (size_t)numel * oqcf_dtype_size(v->dtype);
        v->data = oqc_arena_alloc_raw(a, need ? need : 1);
        v->nbytes = need;
        if (fread(v->data, 1, need, f) != need) {
            char buf[128];
            rc = oqc_err(d, "%s: .npy data is truncated (shape %s needs %zu bytes)", path,
                         oqc_shape_str(&v->shape, buf, sizeof buf), need);
        }
    }
    free(hdr);
    fclose(f);
    return rc;
}

int oqc_npy_write(const char *path, const OqcValue *v, OqcDiag *d) {
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].dt == v->dtype)
            descr = npy_types[i].descr;
    if (!descr)
        return oqc_err(d, "%s: cannot write dtype %s to .npy", path, oqc_dtype_name(v->dtype));
    char shape[256] = "";
    size_t len = 0;
    for (int i = 0; i < v->shape.rank; i++) {
        int w = snprintf(shape + len, sizeof shape - len, "%" PRId64 "%s", v->shape.d[i],
                         v->shape.rank == 1 ? "," : (i + 1 < v->shape.rank ? ", " : ""));
        if (w < 0 || (size_t)w >= sizeof shape - len)
            return oqc_err(d, "%s: shape too long", path);
        len += (size_t)w;
    }
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr, shape);
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    OqcOutFile of;
    if (oqc_out_open(&of, path, d) < 0)
        return -1;
    FILE *f = of.f;
    unsigned hl = (unsigned)(n + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff),
                             (unsigned char)(hl >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n;
    for (int i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && (v->nbytes == 0 || fwrite(v->data, 1, v->nbytes, f) == v->nbytes);
    if (!ok) {
        oqc_err(d, "%s: error writing: %s", path, strerror(errno));
        oqc_out_commit(&of, 0, d);
        return -1;
    }
    return oqc_out_commit(&of, 1, d);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int oqc_tensor_read(const char *path, const OqcShape *raw_shape, OqcArena *a, OqcValue *v,
                    OqcDiag *d) {
    if (ends_with(path, ".npy"))
        return oqc_npy_read(path, a, v, d);
    if (ends_with(path, ".pb"))
        return oqc_load_tensor_pb(path, a, v, NULL, d);
    /* Raw little-endian float32: the shape comes from the model or --input-shape. */
    if (!raw_shape || !oqc_shape_known(raw_shape))
        return oqc_err(d, "%s: raw input needs a known input shape (use --input-shape or a "
                          ".npy / .pb file)", path);
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    int rc = 0;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return oqc_err(d, "%s: cannot determine its size", path);
    }
    long size = ftell(f);
    rewind(f);
    size_t one = (size_t)oqc_shape_numel(raw_shape) * sizeof(float);
    if (size <= 0 || one == 0 || (size_t)size % one) {
        char buf[128];
        rc = oqc_err(d, "%s: raw float32 file of %ld bytes is not a whole number of samples "
                        "of shape %s (%zu bytes each)", path, size,
                     oqc_shape_str(raw_shape, buf, sizeof buf), one);
    } else {
        v->dtype = OQCF_FLOAT;
        v->nbytes = (size_t)size;
        size_t samples = (size_t)size / one;
        v->shape = *raw_shape;
        if (samples > 1) { /* a leading sample axis */
            for (int i = v->shape.rank; i > 0; i--)
                v->shape.d[i] = v->shape.d[i - 1];
            v->shape.d[0] = (int64_t)samples;
            v->shape.rank++;
        }
        v->data = oqc_arena_alloc_raw(a, v->nbytes);
        if (fread(v->data, 1, v->nbytes, f) != v->nbytes)
            rc = oqc_err(d, "%s: read error", path);
    }
    fclose(f);
    return rc;
}

int oqc_samples_of(const char *what, const OqcValue *v, const OqcShape *in, int64_t *nsamples,
                   OqcDiag *d) {
    char a[128], b[128];
    *nsamples = 0;
    if (oqc_shape_equal(&v->shape, in)) {
        *nsamples = 1;
        return 0;
    }
    /* A leading sample axis: [S, ...input shape]. */
    if (v->shape.rank == in->rank + 1) {
        OqcShape rest = {.rank = in->rank};
        for (int i = 0; i < in->rank; i++)
            rest.d[i] = v->shape.d[i + 1];
        if (oqc_shape_equal(&rest, in)) {
            *nsamples = v->shape.d[0];
            return 0;
        }
    }
    /* Several batches stacked on the batch axis: [k * B, ...]. */
    if (v->shape.rank == in->rank && in->rank > 0 && in->d[0] > 0 &&
        v->shape.d[0] % in->d[0] == 0) {
        int same = 1;
        for (int i = 1; i < in->rank; i++)
            same &= v->shape.d[i] == in->d[i];
        if (same) {
            *nsamples = v->shape.d[0] / in->d[0];
            return 0;
        }
    }
    return oqc_err(d, "%s: data of shape %s does not fit the model input of shape %s (nor "
                      "a stack of such samples)", what, oqc_shape_str(&v->shape, a, sizeof a),
                   oqc_shape_str(in, b, sizeof b));
}
