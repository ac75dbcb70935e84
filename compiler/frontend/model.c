/* model.c - loading a model by content and preparing it for a command (see ir.h).
 *
 * Every command goes through oqc_prepare: load (ONNX protobuf or an oqc XML dump),
 * apply --input-shape, infer shapes. `dump` is lenient (unknown ops are shown with
 * unknown shapes); commands that execute or compile are strict (unsupported ops are
 * listed in one error). */
#include "frontend.h"

#include <errno.h>
#include <string.h>

OqcGraph *oqc_load_model(const char *path, OqcDiag *d) {
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return NULL;
    char head[64] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    const char *p = head;
    if (n >= 3 && (unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb &&
        (unsigned char)p[2] == 0xbf)
        p += 3; /* UTF-8 byte order mark */
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (strncmp(p, "<?xml", 5) == 0 || strncmp(p, "<oqc-ir", 7) == 0)
        return oqc_load_xml(path, d);
    return oqc_load_onnx(path, d);
}

OqcGraph *oqc_prepare(const char *path, const OqcInputShape *shapes, int nshapes,
                      int strict, OqcDiag *d) {
    OqcGraph *g = oqc_load_model(path, d);
    if (!g)
        return NULL;
    if (oqc_fix_inputs(g, shapes, nshapes, d) < 0 || oqc_infer_shapes(g, strict, d) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}
