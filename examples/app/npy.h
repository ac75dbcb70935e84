/* npy.h - reading the .npy files of the examples' program (float32 samples, int64
 * labels): the part of the program that does not depend on the model. */
#ifndef EXAMPLE_NPY_H
#define EXAMPLE_NPY_H

#include <stddef.h>

/* Reads path, a version 1 or 2 .npy of little-endian dtype descr ("<f4", "<i8"), into
 * *data (malloc'd; *n elements of elem bytes); 0, or -1 with a message on stderr. */
int npy_read(const char *path, const char *descr, size_t elem, void **data, size_t *n);

#endif
