/* layer_hooks.h - the per-layer hooks of emitted code (OQC_LAYER_BEGIN/END, see
 * docs/compile.md) wired to bench/emitted_latency.c's layer timer.  Build the emitted
 * files and emitted_latency.c with -DOQC_LAYER_HOOKS='"layer_hooks.h"' -I bench. */
#ifndef OQC_BENCH_LAYER_HOOKS_H
#define OQC_BENCH_LAYER_HOOKS_H
void oqc_bench_layer_begin(int index);
void oqc_bench_layer_end(int index, const char *name, const char *op, long long macs);
#define OQC_LAYER_BEGIN(index) oqc_bench_layer_begin(index)
#define OQC_LAYER_END(index, name, op, macs) oqc_bench_layer_end(index, name, op, macs)
#endif
