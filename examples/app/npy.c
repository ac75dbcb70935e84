/* npy.c - a minimal .npy reader for the examples' program (see npy.h): checks the magic,
 * the dtype and C order, then reads the data that follows the header. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int npy_read(const char *path, const char *descr, size_t elem, void **data, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char pre[12];
    if (!f || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fprintf(stderr, "%s: not a .npy file\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    size_t hl = pre[8] | (size_t)pre[9] << 8;
    if (pre[6] >= 2) { /* version 2: a 4-byte header length */
        if (fread(pre + 10, 1, 2, f) != 2) {
            fclose(f);
            return -1;
        }
        hl |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    }
    char *h = malloc(hl + 1);
    if (!h || fread(h, 1, hl, f) != hl) {
        fprintf(stderr, "%s: truncated header\n", path);
        free(h);
        fclose(f);
        return -1;
    }
    h[hl] = 0;
    char want[32];
    snprintf(want, sizeof want, "'descr': '%s'", descr);
    if (!strstr(h, want) || !strstr(h, "'fortran_order': False")) {
        fprintf(stderr, "%s: expected C-ordered %s data\n", path, descr);
        free(h);
        fclose(f);
        return -1;
    }
    free(h);
    long start = ftell(f);
    fseek(f, 0, SEEK_END);
    size_t bytes = (size_t)(ftell(f) - start);
    fseek(f, start, SEEK_SET);
    *n = bytes / elem;
    *data = malloc(bytes ? bytes : 1);
    if (!*data || fread(*data, elem, *n, f) != *n) {
        fprintf(stderr, "%s: cannot read the data\n", path);
        free(*data);
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}
