/* memplan.c - static placement of buffers with known lifetimes (see ir.h).
 *
 * Greedy by size: the largest buffer is placed first, each at the lowest offset where
 * it overlaps no already-placed buffer whose lifetime intersects its own. Used by the
 * FP32 executor now and by the INT8 backend's arena plan. O(n^2 log n), fine for the
 * few thousand tensors of a network. */
#include "ir.h"

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

size_t oqc_memplan(OqcLive *bufs, int n, size_t align) {
    if (n <= 0)
        return 0;
    OqcLive **order = malloc((size_t)n * sizeof *order);
    OqcLive **placed = malloc((size_t)n * sizeof *placed);
    OqcLive **conflict = malloc((size_t)n * sizeof *conflict);
    if (!order || !placed || !conflict)
        oqc_panic(__FILE__, __LINE__, "out of memory planning buffers");
    for (int i = 0; i < n; i++)
        order[i] = &bufs[i];
    qsort(order, (size_t)n, sizeof *order, by_size_desc);
    size_t total = 0;
    int nplaced = 0;
    for (int i = 0; i < n; i++) {
        OqcLive *b = order[i];
        size_t size = (b->size + align - 1) & ~(align - 1);
        int nc = 0;
        for (int k = 0; k < nplaced; k++)
            if (placed[k]->first <= b->last && b->first <= placed[k]->last)
                conflict[nc++] = placed[k];
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
        placed[nplaced++] = b;
        if (off + size > total)
            total = off + size;
    }
    free(order);
    free(placed);
    free(conflict);
    return total;
}
