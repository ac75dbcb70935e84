/* test_fp32_models.c - the FP32 executor against PyTorch on real networks.
 *
 * Fashion-MNIST CNN (models/fashion): the 1000 test images give the same argmax as
 * PyTorch's logits for every image, so the accuracy equals the recorded one exactly,
 * and every logit is within FP32_TOL * max|ref|.
 * torchvision models (models/tv, squeezenet1_1 committed; resnet18, mobilenet_v2 and
 * googlenet from `make models`, checked by `make check-models`): outputs at batch 1 and
 * batch 4 within FP32_TOL * max|ref| of PyTorch's.
 * FP32_TOL: float32 accumulation order differs from PyTorch's.  Measured max|diff| /
 * max|ref|: Fashion 4.4e-7 (5.3e-6 of 11.8), squeezenet1_1 2.5e-7 (batch 1) and 2.3e-7
 * (batch 4), and through the same kernels ResNet-32 and MobileNetV2-CIFAR 5.7e-7 and
 * 5.4e-7 against ONNX Runtime (tests/cli/devset.sh); the bound is about 10x the
 * largest.  (resnet18, mobilenet_v2 and googlenet of `make models` were not measured
 * when the bound was set.)
 * Batched execution: a model with a dynamic batch run at N = 4 equals four runs at
 * N = 1 within 1e-5 relative (same kernels, different blocking). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "backend.h"

#define FP32_TOL 5e-6

/* Runs model on every sample of `in` (any stacking oqc_samples_of accepts), writing
 * the stacked first output to out (allocated in a). Returns samples or -1. */
static int64_t run_all(OqcGraph *g, OqcExec *e, const OqcValue *in, float **out, OqcDiag *d) {
    int64_t samples;
    const OqcTensor *x = &g->tensors[g->inputs[0]];
    if (oqc_samples_of("input", in, &x->shape, &samples, d) < 0)
        return -1;
    const OqcTensor *y = &g->tensors[g->outputs[0]];
    int64_t ny = oqc_shape_numel(&y->shape);
    *out = oqc_arena_alloc_raw(g->arena, (size_t)(samples * ny) * sizeof(float));
    size_t step = in->nbytes / (size_t)samples;
    for (int64_t s = 0; s < samples; s++) {
        const void *ip = (const char *)in->data + (size_t)s * step;
        void *op = *out + s * ny;
        if (oqc_exec_run(e, &ip, &op, d) < 0)
            return -1;
    }
    return samples;
}

static double max_abs(const float *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

static double max_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = fabs((double)a[i] - b[i]) > m ? fabs((double)a[i] - b[i]) : m;
    return m;
}

static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static void test_fashion_matches_pytorch(void) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_prepare("models/fashion/fashion_cnn.onnx", NULL, 0, 1, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    OqcValue x, ref, labels;
    CU_ASSERT_EQUAL_FATAL(oqc_npy_read("models/fashion/test_1000.npy", g->arena, &x, &d), 0);
    CU_ASSERT_EQUAL_FATAL(oqc_npy_read("models/fashion/test_logits_1000.npy", g->arena, &ref, &d), 0);
    CU_ASSERT_EQUAL_FATAL(oqc_npy_read("models/fashion/test_labels_1000.npy", g->arena, &labels, &d), 0);
    for (int threads = 1; threads <= 2; threads++) {
        OqcExec *e = oqc_exec_new(g, threads, &d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        float *y;
        CU_ASSERT_EQUAL_FATAL(run_all(g, e, &x, &y, &d), 1000);
        oqc_exec_free(e);
        int same = 0, correct = 0;
        for (int i = 0; i < 1000; i++) {
            int a = argmax(y + 10 * i, 10);
            same += a == argmax((const float *)ref.data + 10 * i, 10);
            correct += a == ((const int64_t *)labels.data)[i];
        }
        double tol = FP32_TOL * max_abs(ref.data, 10000), diff = max_diff(y, ref.data, 10000);
        printf("\n  threads %d: argmax equal %d/1000, accuracy %.4f, max|diff| %.3g (tol %.3g)",
               threads, same, correct / 1000.0, diff, tol);
        CU_ASSERT_EQUAL(same, 1000);
        CU_ASSERT(diff <= tol);
        char *acc = oqc_test_read_file("models/fashion/accuracy.txt", NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
        const char *p = strstr(acc, "test_1000_top1");
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT(fabs(atof(p + 14) - correct / 1000.0) < 1e-9);
        free(acc);
    }
    oqc_graph_free(g);
    oqc_diag_free(&d);
}

static void test_torchvision_match_pytorch(void) {
    static const char *const names[] = {"squeezenet1_1", "resnet18", "mobilenet_v2", "googlenet"};
    int tested = 0;
    for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
        char model[256], in[256], out[256];
        snprintf(model, sizeof model, "models/tv/%s.onnx", names[m]);
        if (m > 0 && !oqc_test_made_model(model))
            continue; /* only squeezenet1_1 is committed; the rest: make check-models */
        OqcDiag d;
        oqc_diag_init(&d);
        OqcGraph *g = oqc_prepare(model, NULL, 0, 1, &d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        OqcExec *e = oqc_exec_new(g, 2, &d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        for (int batch = 1; batch <= 4; batch += 3) {
            OqcValue x, ref;
            snprintf(in, sizeof in, "models/tv/%s_in%d.npy", names[m], batch);
            snprintf(out, sizeof out, "models/tv/%s_out%d.npy", names[m], batch);
            CU_ASSERT_EQUAL_FATAL(oqc_npy_read(in, g->arena, &x, &d), 0);
            CU_ASSERT_EQUAL_FATAL(oqc_npy_read(out, g->arena, &ref, &d), 0);
            float *y;
            CU_ASSERT_EQUAL_FATAL(run_all(g, e, &x, &y, &d), batch);
            int64_t n = oqc_shape_numel(&ref.shape);
            double tol = FP32_TOL * max_abs(ref.data, n), diff = max_diff(y, ref.data, n);
            printf("\n  %s batch %d: max|diff| %.3g, tol %.3g", names[m], batch, diff, tol);
            CU_ASSERT(diff <= tol);
        }
        oqc_exec_free(e);
        oqc_graph_free(g);
        oqc_diag_free(&d);
        tested++;
    }
    CU_ASSERT(tested >= 1);
}

static void test_batched_equals_single(void) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcInputShape s1 = {"x", {4, {1, 3, 8, 8}}}, s4 = {"x", {4, {4, 3, 8, 8}}};
    OqcGraph *g1 = oqc_prepare("models/tiny/dynamic_batch.onnx", &s1, 1, 1, &d);
    OqcGraph *g4 = oqc_prepare("models/tiny/dynamic_batch.onnx", &s4, 1, 1, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g4);
    OqcExec *e1 = oqc_exec_new(g1, 1, &d), *e4 = oqc_exec_new(g4, 2, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e4);
    float x[4 * 3 * 8 * 8];
    uint32_t seed = 12345;
    for (int i = 0; i < 4 * 192; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    }
    int64_t ny4 = oqc_shape_numel(&g4->tensors[g4->outputs[0]].shape);
    float *y4 = malloc((size_t)ny4 * sizeof *y4), *y1 = malloc((size_t)ny4 * sizeof *y1);
    const void *ip = x;
    void *op = y4;
    CU_ASSERT_EQUAL(oqc_exec_run(e4, &ip, &op, &d), 0);
    for (int s = 0; s < 4; s++) {
        ip = x + s * 192;
        op = y1 + s * (ny4 / 4);
        CU_ASSERT_EQUAL(oqc_exec_run(e1, &ip, &op, &d), 0);
    }
    CU_ASSERT(max_diff(y1, y4, ny4) <= 1e-5 * max_abs(y1, ny4));
    free(y1);
    free(y4);
    oqc_exec_free(e1);
    oqc_exec_free(e4);
    oqc_graph_free(g1);
    oqc_graph_free(g4);
    oqc_diag_free(&d);
}

OQC_TEST_MAIN("fp32-models", OQC_TEST(test_fashion_matches_pytorch),
              OQC_TEST(test_torchvision_match_pytorch), OQC_TEST(test_batched_equals_single))
