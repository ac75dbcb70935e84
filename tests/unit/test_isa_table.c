/* test_isa_table.c - the one ISA table (OQC_ISA_TABLE, runtime/fp32/oqc_isa.h) and what
 * is derived from it or must agree with it: the --target flags and names of
 * `oqc compile`, the INT8 family names and x86 kernel levels, and the lists of targets
 * in docs/compile.md (its table of --target flags), docs/cli.md and docs/oqc.1. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "harness.h"
#include "oqci.h"

#define ROW(name, int8, fp32, x86, flags, files) {name, int8, fp32, x86, flags, files},
static const struct {
    const char *name;
    int int8, fp32, x86;
    const char *flags, *files;
} rows[] = {OQC_ISA_TABLE(ROW)};
#undef ROW
#define NROWS (sizeof rows / sizeof rows[0])

/* Every row with flags is a --target with exactly those flags; the others are not;
 * the names are unique. */
static void test_targets(void) {
    int ntargets = 0;
    for (size_t i = 0; i < NROWS; i++) {
        const char *f = oqc_target_flags(rows[i].name);
        if (rows[i].flags) {
            ntargets++;
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            CU_ASSERT_STRING_EQUAL(f, rows[i].flags);
        } else {
            CU_ASSERT_PTR_NULL(f);
        }
        for (size_t k = 0; k < i; k++)
            CU_ASSERT(strcmp(rows[i].name, rows[k].name) != 0);
    }
    CU_ASSERT_PTR_NULL(oqc_target_flags("bogus"));
    CU_ASSERT_PTR_NOT_NULL(oqc_target_flags(NULL));   /* the default target */
    CU_ASSERT_EQUAL(ntargets, 9);
}

/* The names the CLI's error lists: the targets in table order, "a, b, ... or z". */
static void test_target_names(void) {
    char names[256], want[256] = "";
    const char *last = NULL;
    oqc_target_names(names, sizeof names);
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].flags) {
            if (last)
                strcat(strcat(want, last), ", ");
            last = rows[i].name;
        }
    want[strlen(want) - 2] = 0;
    strcat(strcat(want, " or "), last);
    CU_ASSERT_STRING_EQUAL(names, want);
}

/* Each INT8 family (OQCI_ISA_AUTO .. OQCI_ISA_COUNT - 1) is one row; its name and x86
 * level are the row's. */
static void test_int8_rows(void) {
    for (int isa = 0; isa < OQCI_ISA_COUNT; isa++) {
        int n = 0;
        for (size_t i = 0; i < NROWS; i++)
            if (rows[i].int8 == isa) {
                n++;
                CU_ASSERT_STRING_EQUAL(oqci_isa_name(isa), rows[i].name);
                CU_ASSERT_EQUAL(oqci_isa_x86(isa), rows[i].x86);
            }
        CU_ASSERT_EQUAL(n, 1);
    }
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(-1), "?");
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(OQCI_ISA_COUNT), "?");
}

/* Each row's conv files are runtime files oqc embeds. */
static void test_files(void) {
    for (size_t i = 0; i < NROWS; i++)
        for (const char *p = rows[i].files; *p;) {
            size_t n = strcspn(p, " ");
            int found = 0;
            for (const OqcRuntimeFile *r = oqc_runtime_files; r->name; r++)
                found |= strlen(r->name) == n && !strncmp(r->name, p, n);
            CU_ASSERT(found);
            if (!found)
                printf("\n  %s: '%.*s' is no runtime file", rows[i].name, (int)n, p);
            p += n + (p[n] == ' ');
        }
}

/* docs/compile.md's table of --target flags has one line per target, "| `name`...",
 * holding "`flags`", and no other. */
static void test_compile_md(void) {
    char *doc = oqc_test_read_file("docs/compile.md", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    char *t = strstr(doc, "| `--target` | flags |");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    int nlines = 0;
    for (char *l = strchr(t, '\n') + 1; !strncmp(l, "|", 1); l = strchr(l, '\n') + 1)
        nlines += !strncmp(l, "| `", 3);
    int ntargets = 0;
    for (size_t i = 0; i < NROWS; i++) {
        if (!rows[i].flags)
            continue;
        ntargets++;
        char head[64], flags[128];
        snprintf(head, sizeof head, "\n| `%s`", rows[i].name);
        snprintf(flags, sizeof flags, "`%s`", rows[i].flags);
        char *l = strstr(t, head), *end = l ? strchr(l + 1, '\n') : NULL;
        CU_ASSERT(l && end);
        if (!l || !end)
            continue;
        *end = 0;
        CU_ASSERT_PTR_NOT_NULL(strstr(l, flags));
        *end = '\n';
    }
    CU_ASSERT_EQUAL(nlines, ntargets);
    free(doc);
}

/* docs/cli.md spells the targets as --target a|b|...|z, in table order. */
static void test_cli_md(void) {
    char *doc = oqc_test_read_file("docs/cli.md", NULL);
    char want[256] = "`--target ";
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].flags)
            strcat(strcat(want, rows[i].name), "|");
    want[strlen(want) - 1] = '`';
    CU_ASSERT_PTR_NOT_NULL(strstr(doc, want));
    free(doc);
}

/* docs/oqc.1 names every target in --target's paragraph. */
static void test_man_page(void) {
    char *doc = oqc_test_read_file("docs/oqc.1", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    char *t = strstr(doc, "\\-\\-target");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    char *end = strstr(t, ".TP");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    *end = 0;
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].flags) {
            char word[64];
            snprintf(word, sizeof word, " %s", rows[i].name);
            CU_ASSERT_PTR_NOT_NULL(strstr(t, word));
        }
    free(doc);
}

OQC_TEST_MAIN("isa-table", OQC_TEST(test_targets), OQC_TEST(test_target_names),
              OQC_TEST(test_int8_rows), OQC_TEST(test_files), OQC_TEST(test_compile_md),
              OQC_TEST(test_cli_md), OQC_TEST(test_man_page))
