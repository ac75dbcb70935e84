/* image_tensor.c - the tensors oqc makes of image files, as a .npy, for comparing
 * oqc's decoding and --preprocess with PIL/torchvision (tests/cli/images.sh,
 * models/images/make_refs.py).
 *
 *   image_tensor SPEC SHAPE OUT.npy IMAGE...
 *
 * SHAPE is the model input shape (e.g. 1x3x224x224); OUT gets [n, ...] float32, one
 * sample per image, exactly what calibrate/eval/run feed the model.  Errors (a bad
 * image, a spec that does not fit the shape) go to stderr with exit status 1. */
#include "backend.h"

#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: image_tensor SPEC SHAPE OUT.npy IMAGE...\n");
        return 2;
    }
    OqcDiag d;
    oqc_diag_init(&d);
    OqcArena *a = oqc_arena_new();
    OqcPreprocess p;
    OqcInputShape shape = {0};
    OqcValue v;
    int rc = oqc_preprocess_parse(argv[1], &p, &d);
    if (rc == 0)
        rc = oqc_parse_input_shape(argv[2], &shape, &d);
    if (rc == 0)
        rc = oqc_images_read((const char *const *)argv + 4, argc - 4, &p, &shape.shape, a, &v,
                             &d);
    if (rc == 0)
        rc = oqc_npy_write(argv[3], &v, &d);
    if (rc < 0)
        fputs(d.buf ? d.buf : "image_tensor: failed\n", stderr);
    free((void *)shape.name);
    oqc_arena_free(a);
    oqc_diag_free(&d);
    return rc < 0 ? 1 : 0;
}
