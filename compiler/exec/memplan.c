/* memplan.c - static placement of buffers with known lifetimes (see ir.h).
 *
 * Greedy by size: the largest buffer is placed first, each at the lowest offset where
 * it overlaps no already-placed buffer whose lifetime intersects its own. Used by the
 * FP32 executor now and by the INT8 backend's arena plan.
 *
 * The placed buffers whose lifetimes meet a new one are found through per-step lists
 * (every placed buffer is listed at each step it lives), not by scanning every placed
 * buffer: the cost is the sum of the lifetimes plus, per buffer, the entries of the
 * steps it spans, which is linear in the size of the graph for networks whose tensors
 * live a few steps (a 100k-node chain) instead of quadratic in the buffer count. */
#include "exec.h"

#include <stdlib.h>

static int by_size_desc(const void *a, const void *b) {
    const OqcLive *x = *(const OqcLive *const *)a, *y = *(const OqcLive *const *)b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x < y ? -1 : (x > y);
}

static int by_offset(const void *a, const void *b) {
    const OqcLive *x = *(const OqcLive *const *)a, *y = *(const OqcLive *const *)b;
    return x->offset < y->offset ? -1 : (x->offset > y->offset);
}

/* The placed buffers listed at one step. */
typedef struct Step {
    int *ids;      /* indices into bufs */
    int n, cap;
} Step;

size_t oqc_memplan(OqcLive *bufs, int n, size_t align) {
    if (n <= 0)
        return 0;
    int steps = 0;
    for (int i = 0; i < n; i++)
        if (bufs[i].last + 1 > steps)
            steps = bufs[i].last + 1;
    OqcLive **order = malloc((size_t)n * sizeof *order);
    OqcLive **conflict = malloc((size_t)n * sizeof *conflict);
    int *seen = malloc((size_t)n * sizeof *seen);   /* last buffer that listed it */
    Step *at = calloc((size_t)steps + 1, sizeof *at);
    if (!order || !conflict || !seen || !at)
        oqc_panic(__FILE__, __LINE__, "out of memory planning buffers");
    for (int i = 0; i < n; i++) {
        order[i] = &bufs[i];
        seen[i] = -1;
    }
    qsort(order, (size_t)n, sizeof *order, by_size_desc);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        OqcLive *b = order[i];
        int id = (int)(b - bufs);
        size_t size = (b->size + align - 1) & ~(align - 1);
        int nc = 0;
        int lo = b->first < 0 ? 0 : b->first;
        for (int t = lo; t <= b->last && t < steps; t++)
            for (int k = 0; k < at[t].n; k++) {
                int c = at[t].ids[k];
                if (seen[c] != id) {
                    seen[c] = id;
                    conflict[nc++] = &bufs[c];
                }
            }
        qsort(conflict, (size_t)nc, sizeof *conflict, by_offset);
        size_t off = 0;
        for (int k = 0; k < nc; k++) {
            size_t cend = conflict[k]->offset + ((conflict[k]->size + align - 1) & ~(align - 1));
            if (conflict[k]->offset >= off + size)
                break; /* fits in the gap before this one */
            if (cend > off)
                off = cend;
        }
        b->offset = off;
        for (int t = lo; t <= b->last && t < steps; t++) {
            Step *st = &at[t];
            if (st->n == st->cap) {
                st->cap = st->cap ? 2 * st->cap : 4;
                st->ids = realloc(st->ids, (size_t)st->cap * sizeof *st->ids);
                if (!st->ids)
                    oqc_panic(__FILE__, __LINE__, "out of memory planning buffers");
            }
            st->ids[st->n++] = id;
        }
        if (off + size > total)
            total = off + size;
    }
    for (int t = 0; t <= steps; t++)
        free(at[t].ids);
    free(at);
    free(seen);
    free(order);
    free(conflict);
    return total;
}
