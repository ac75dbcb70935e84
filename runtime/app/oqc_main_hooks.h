/* oqc_main_hooks.h - the per-layer hooks of an emitted model (OQC_LAYER_BEGIN/END, see
 * oqc's docs/compile.md) wired to the driver's profiler (oqc_main.c).  Copied by `oqc
 * compile --main` as main_hooks.h; NAME.c includes it when built with
 * -DOQC_LAYER_HOOKS='"main_hooks.h"'.  Not part of liboqc. */
#ifndef OQC_MAIN_HOOKS_H
#define OQC_MAIN_HOOKS_H
void oqc_main_layer_begin(int index);
void oqc_main_layer_end(int index, const char *name, const char *op, long long macs);
#define OQC_LAYER_BEGIN(index) oqc_main_layer_begin(index)
#define OQC_LAYER_END(index, name, op, macs) oqc_main_layer_end(index, name, op, macs)
#endif
