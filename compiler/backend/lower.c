/* lower.c - from an optimised float graph to the INT8 graph `oqc compile` emits and
 * `oqc eval` runs: thresholds (calibration and/or an imported table) into the tensors'
 * quant, then pass "quantize" (passes/quantize.c). */
#include "backend.h"
#include "passes.h"

int oqc_lower_int8(OqcGraph *g, OqcGraph *gb, int64_t b, const OqcCalibOptions *o,
                   const OqcQuantConfig *cfg, OqcCalibEntry **entries, int *nentries,
                   OqcDiag *d) {
    OqcCalibEntry *es = NULL;
    int n = 0;
    if (o->ndata > 0) {
        int64_t samples = 0;
        if (oqc_calibrate(g, gb, b, o, &es, &n, &samples, d) < 0)
            return -1;
    } else if (o->ntable > 0) {
        es = (OqcCalibEntry *)o->table;
        n = o->ntable;
    } else {
        return oqc_err(d, "%s: INT8 needs thresholds: give calibration data (--calib) or a "
                          "table (--table)", g->path);
    }
    if (oqc_quant_apply(g, es, n, d) < 0)
        return -1;
    g->qcfg = cfg;
    int rc = oqc_run_passes(g, "quantize", NULL, NULL, NULL, d);
    if (entries)
        *entries = es;
    if (nentries)
        *nentries = n;
    return rc;
}
