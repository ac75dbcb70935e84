/* fuzz_replay.c - runs the fuzz target tests/fuzz/fuzz_model.c (linked in) once on each
 * file named on the command line, without libFuzzer: the regression half of fuzzing.
 * tests/cli/fuzz_replay.sh runs it over tests/fuzz/regress/ (inputs that once crashed
 * or tripped a sanitizer, kept so they never do again) in every configuration of
 * `make check`, the sanitizer one included.  Prints one line per file and the usual
 * "RESULT fuzz-replay passed failed"; a crash ends the process (and the test). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        uint8_t *buf = NULL;
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
            LLVMFuzzerTestOneInput(buf, (size_t)n);
            printf("ok %s (%ld bytes)\n", argv[i], n);
            passed++;
        } else {
            printf("FAIL %s: cannot read it\n", argv[i]);
            failed++;
        }
        free(buf);
        if (f)
            fclose(f);
    }
    printf("RESULT fuzz-replay %d %d\n", passed, failed);
    return failed != 0;
}
