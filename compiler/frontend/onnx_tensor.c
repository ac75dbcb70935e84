/* onnx_tensor.c - ONNX TensorProto contents into oqc values (see ir.h).
 *
 * Every storage form: raw_data (little-endian, used in place: the bytes already live in
 * the model's arena), float_data, int32_data (for 8/16-bit types, bool, float16),
 * int64_data, double_data, uint64_data, string_data, and external data (ONNX's
 * external-data spec: location relative to the model's directory, offset and length
 * checked against the file). Dims are validated (rank, negative, absurd sizes) before
 * anything is allocated. */
#include "frontend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"

int oqc_onnx_check_dims(const OqcOnnxCtx *c, const char *what, const char *name, size_t n,
                      const int64_t *dims, OqcShape *shape) {
    if (n > OQC_MAX_RANK)
        return oqc_err(c->d, "%s: %s '%s' has rank %zu; oqc supports rank <= %d", c->path,
                       what, name, n, OQC_MAX_RANK);
    shape->rank = (int)n;
    int64_t numel = 1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0)
            return oqc_err(c->d, "%s: %s '%s' has negative dimension %" PRId64
                                 " at axis %zu", c->path, what, name, dims[i], i);
        shape->d[i] = dims[i];
        if (dims[i] && numel > OQC_MAX_ELEMENTS / dims[i]) {
            numel = OQC_MAX_ELEMENTS + 1;
        } else {
            numel *= dims[i];
        }
    }
    for (size_t i = 0; i < n && numel > OQC_MAX_ELEMENTS; i++)
        if (dims[i] == 0)
            numel = 0;
    if (numel > OQC_MAX_ELEMENTS) {
        char buf[160];
        return oqc_err(c->d, "%s: %s '%s' has shape %s, more than %" PRId64
                             " elements: absurd, refusing it", c->path, what, name,
                       oqc_shape_str(shape, buf, sizeof buf), OQC_MAX_ELEMENTS);
    }
    return 0;
}

/* Reads external data for a tensor into the arena. */
static int read_external(const OqcOnnxCtx *c, const Onnx__TensorProto *tp, const char *name,
                         size_t need, void **out) {
    const char *location = NULL;
    uint64_t offset = 0, length = UINT64_MAX;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value)
            continue;
        char *endp;
        if (strcmp(e->key, "location") == 0) {
            location = e->value;
        } else if (strcmp(e->key, "offset") == 0 || strcmp(e->key, "length") == 0) {
            errno = 0;
            unsigned long long v = strtoull(e->value, &endp, 10);
            if (errno || *endp || e->value[0] == '-' || !e->value[0])
                return oqc_err(c->d, "%s: tensor '%s': external data %s '%s' is not a "
                                     "number", c->path, name, e->key, e->value);
            if (e->key[0] == 'o')
                offset = v;
            else
                length = v;
        }
    }
    if (!location || !location[0])
        return oqc_err(c->d, "%s: tensor '%s': external data without a location", c->path,
                       name);
    if (location[0] == '/' || strstr(location, ".."))
        return oqc_err(c->d, "%s: tensor '%s': external data location '%s' must be a "
                             "relative path inside the model's directory", c->path, name,
                       location);
    if (length != UINT64_MAX && length != need)
        return oqc_err(c->d, "%s: tensor '%s': external data length %" PRIu64
                             " but its shape needs %zu bytes", c->path, name, length, need);
    char *file = oqc_arena_printf(c->arena, "%s/%s", c->dir, location);
    struct stat st;
    int fd = oqc_in_open_inside(c->dir, file, "external data file", &st, c->d);
    if (fd < 0)
        return oqc_err(c->d, "%s: tensor '%s': cannot use external data file '%s'", c->path,
                       name, file);
    int rc = 0;
    if (offset > (uint64_t)st.st_size ||
        need > (uint64_t)st.st_size - offset) {
        rc = oqc_err(c->d, "%s: tensor '%s': external data file '%s' is %lld bytes, too "
                           "short for offset %" PRIu64 " + length %zu", c->path, name, file,
                     (long long)st.st_size, offset, need);
    } else {
        unsigned char *p = oqc_arena_alloc_raw(c->arena, need ? need : 1);
        size_t done = 0;
        while (done < need) {
            ssize_t got = pread(fd, p + done, need - done, (off_t)(offset + done));
            if (got <= 0) {
                rc = oqc_err(c->d, "%s: tensor '%s': error reading '%s'", c->path, name,
                             file);
                break;
            }
            done += (size_t)got;
        }
        *out = p;
    }
    close(fd);
    return rc;
}

/* Converts a TensorProto's contents into v (dtype, shape, dense data). */
int oqc_onnx_tensor(const OqcOnnxCtx *c, const Onnx__TensorProto *tp, const char *what,
                    OqcValue *v) {
    const char *name = tp->name ? tp->name : "";
    OqcfDType dt = (OqcfDType)tp->data_type;
    size_t el = oqcf_dtype_size(dt);
    if (dt == OQCF_STRING)
        el = sizeof(char *);
    if (!tp->has_data_type || el == 0)
        return oqc_err(c->d, "%s: %s '%s' has unknown data type %d", c->path, what, name,
                       tp->data_type);
    if (tp->segment)
        return oqc_err(c->d, "%s: %s '%s' is segmented; oqc does not support segments",
                       c->path, what, name);
    v->dtype = dt;
    if (oqc_onnx_check_dims(c, what, name, tp->n_dims, tp->dims, &v->shape) < 0)
        return -1;
    size_t numel = (size_t)oqc_shape_numel(&v->shape);
    size_t need = numel * el;
    v->nbytes = need;
    size_t have;  /* elements present in the typed field used */
    OqcArena *a = c->arena;

    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (dt == OQCF_STRING)
            return oqc_err(c->d, "%s: %s '%s': external string data is not supported",
                           c->path, what, name);
        return read_external(c, tp, name, need, &v->data);
    }
    if (tp->has_raw_data && dt != OQCF_STRING) {
        if (tp->raw_data.len != need)
            return oqc_err(c->d, "%s: %s '%s' has %zu bytes of raw_data but its shape "
                                 "needs %zu", c->path, what, name, tp->raw_data.len, need);
        v->data = tp->raw_data.data; /* in the arena already: no copy */
        if (!v->data)
            v->data = oqc_arena_alloc(a, 1);
        return 0;
    }
    switch (dt) {
    case OQCF_FLOAT:
    case OQCF_COMPLEX64:
        have = tp->n_float_data * sizeof(float) / el;
        if (have == numel)
            v->data = tp->n_float_data ? (void *)tp->float_data : oqc_arena_alloc(a, 1);
        break;
    case OQCF_INT32: case OQCF_INT16: case OQCF_INT8: case OQCF_UINT16: case OQCF_UINT8:
    case OQCF_BOOL: case OQCF_FLOAT16: case OQCF_BFLOAT16:
        have = tp->n_int32_data;
        if (have == numel) {
            unsigned char *p = oqc_arena_alloc(a, need ? need : 1);
            for (size_t i = 0; i < numel; i++) {
                int32_t x = tp->int32_data[i];
                if (el == 4) {
                    memcpy(p + 4 * i, &x, 4);
                } else if (el == 2) {
                    uint16_t h = (uint16_t)x;
                    memcpy(p + 2 * i, &h, 2);
                } else {
                    p[i] = (unsigned char)x;
                }
            }
            v->data = p;
        }
        break;
    case OQCF_INT64:
        have = tp->n_int64_data;
        if (have == numel)
            v->data = numel ? (void *)tp->int64_data : oqc_arena_alloc(a, 1);
        break;
    case OQCF_DOUBLE:
    case OQCF_COMPLEX128:
        have = tp->n_double_data * sizeof(double) / el;
        if (have == numel)
            v->data = tp->n_double_data ? (void *)tp->double_data : oqc_arena_alloc(a, 1);
        break;
    case OQCF_UINT32:
    case OQCF_UINT64:
        have = tp->n_uint64_data;
        if (have == numel) {
            if (dt == OQCF_UINT64) {
                v->data = numel ? (void *)tp->uint64_data : oqc_arena_alloc(a, 1);
            } else {
                uint32_t *p = oqc_arena_alloc(a, need ? need : 1);
                for (size_t i = 0; i < numel; i++)
                    p[i] = (uint32_t)tp->uint64_data[i];
                v->data = p;
            }
        }
        break;
    case OQCF_STRING:
        have = tp->n_string_data;
        if (have == numel) {
            const char **p = oqc_arena_alloc(a, (numel ? numel : 1) * sizeof *p);
            for (size_t i = 0; i < numel; i++)
                p[i] = oqc_arena_strndup(a, (const char *)tp->string_data[i].data,
                                         tp->string_data[i].len);
            v->data = (void *)p;
        }
        break;
    default:
        return oqc_err(c->d, "%s: %s '%s' has data type %s that oqc cannot store", c->path,
                       what, name, oqc_dtype_name(dt));
    }
    if (!v->data)
        return oqc_err(c->d, "%s: %s '%s' has %zu elements of data but its shape %s needs "
                             "%zu", c->path, what, name, have,
                       oqc_shape_str(&v->shape, (char[96]){0}, 96), numel);
    return 0;
}

