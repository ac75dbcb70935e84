/* test_json.c - the JSON writer of `--json` (compiler/base/json.c): exact text for nesting
 * and commas, string escaping of quotes, backslashes, every control character, valid
 * and invalid UTF-8, shortest round-tripping numbers and null for NaN/Inf.  The
 * expected strings are written out from RFC 8259 and RFC 3629, not taken from the
 * writer's output. */
#include "harness.h"
#include "backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The text of a document holding the one string s: ["..."]. */
static char *doc_of_string(const char *s) {
    OqcJson j;
    oqc_json_init(&j);
    oqc_json_array(&j);
    oqc_json_str(&j, s);
    oqc_json_end(&j);
    char *r = strdup(oqc_json_text(&j));
    oqc_json_free(&j);
    return r;
}

#define STR_IS(in, want)                                                                  \
    do {                                                                                  \
        char *got_ = doc_of_string(in);                                                   \
        CU_ASSERT_STRING_EQUAL(got_, "[" want "]\n");                                     \
        free(got_);                                                                       \
    } while (0)

static void test_nesting(void) {
    OqcJson j;
    oqc_json_init(&j);
    oqc_json_object(&j);
    oqc_json_kstr(&j, "a", "x");
    oqc_json_key(&j, "b");
    oqc_json_array(&j);
    oqc_json_int(&j, 1);
    oqc_json_object(&j);
    oqc_json_end(&j);
    oqc_json_array(&j);
    oqc_json_end(&j);
    oqc_json_null(&j);
    oqc_json_bool(&j, 1);
    oqc_json_bool(&j, 0);
    oqc_json_end(&j);
    oqc_json_kint(&j, "c", -9007199254740993LL);
    oqc_json_kstr(&j, "d", NULL);
    oqc_json_kbool(&j, "e", 0);
    oqc_json_end(&j);
    CU_ASSERT_STRING_EQUAL(oqc_json_text(&j),
                           "{\"a\":\"x\",\"b\":[1,{},[],null,true,false],"
                           "\"c\":-9007199254740993,\"d\":null,\"e\":false}\n");
    oqc_json_free(&j);
}

static void test_escapes(void) {
    STR_IS("plain text 0-9 ~", "\"plain text 0-9 ~\"");
    STR_IS("a\"b\\c/d", "\"a\\\"b\\\\c/d\"");
    STR_IS("\n\t\r\b\f", "\"\\n\\t\\r\\b\\f\"");
    STR_IS("\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\"");
    STR_IS("", "\"\"");
    /* every control character is escaped: none appears raw in the output */
    char all[32];
    for (int c = 1; c < 32; c++)
        all[c - 1] = (char)c;
    all[31] = 0;
    char *got = doc_of_string(all);
    for (const char *p = got; *p; p++)
        CU_ASSERT(*p == '\n' ? p[1] == 0 : (unsigned char)*p >= 0x20);
    free(got);
}

static void test_utf8(void) {
    STR_IS("caf\xc3\xa9", "\"caf\\u00e9\"");                 /* U+00E9, two bytes */
    STR_IS("\xe2\x82\xac", "\"\\u20ac\"");                   /* U+20AC, three */
    STR_IS("\xf0\x9f\x98\x80", "\"\\ud83d\\ude00\"");        /* U+1F600: a surrogate pair */
    STR_IS("\xf4\x8f\xbf\xbf", "\"\\udbff\\udfff\"");        /* U+10FFFF, the last */
    /* not UTF-8: each byte on its own, read as Latin-1 */
    STR_IS("\xff", "\"\\u00ff\"");
    STR_IS("\xc3", "\"\\u00c3\"");                           /* truncated at the end */
    STR_IS("\xc3(", "\"\\u00c3(\"");                         /* bad continuation */
    STR_IS("\xc0\xaf", "\"\\u00c0\\u00af\"");                /* overlong '/' */
    STR_IS("\xe0\x80\xaf", "\"\\u00e0\\u0080\\u00af\"");     /* overlong, three bytes */
    STR_IS("\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\"");     /* a surrogate, U+D800 */
    STR_IS("\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\""); /* > U+10FFFF */
    STR_IS("\x80x", "\"\\u0080x\"");                         /* a lone continuation */
}

static void test_numbers(void) {
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0, "0"}, {-0.0, "-0"}, {1, "1"}, {-2.5, "-2.5"}, {0.1, "0.1"}, {1e-7, "1e-07"},
        {123456789012345678.0, "1.2345678901234568e+17"}, {1.0 / 3, "0.3333333333333333"},
        {(double)0.1f, "0.10000000149011612"}, {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"}, {100, "100"}, {1e21, "1e+21"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        OqcJson j;
        oqc_json_init(&j);
        oqc_json_array(&j);
        oqc_json_num(&j, cases[i].v);
        oqc_json_end(&j);
        char want[64];
        snprintf(want, sizeof want, "[%s]\n", cases[i].want);
        CU_ASSERT_STRING_EQUAL(oqc_json_text(&j), want);
        /* and it reads back as the same double */
        CU_ASSERT(strtod(oqc_json_text(&j) + 1, NULL) == cases[i].v);
        oqc_json_free(&j);
    }
    OqcJson j;
    oqc_json_init(&j);
    oqc_json_array(&j);
    oqc_json_num(&j, NAN);
    oqc_json_num(&j, INFINITY);
    oqc_json_num(&j, -INFINITY);
    oqc_json_end(&j);
    CU_ASSERT_STRING_EQUAL(oqc_json_text(&j), "[null,null,null]\n");
    oqc_json_free(&j);
}

/* A large document: the buffer grows without losing anything. */
static void test_growth(void) {
    OqcJson j;
    oqc_json_init(&j);
    oqc_json_array(&j);
    for (int i = 0; i < 100000; i++)
        oqc_json_int(&j, i);
    oqc_json_end(&j);
    const char *t = oqc_json_text(&j);
    CU_ASSERT(!strncmp(t, "[0,1,2,", 7));
    CU_ASSERT(strstr(t, ",99998,99999]\n") != NULL);
    CU_ASSERT_EQUAL(strlen(t), j.len);
    oqc_json_free(&j);
}

OQC_TEST_MAIN("json", OQC_TEST(test_nesting), OQC_TEST(test_escapes), OQC_TEST(test_utf8),
              OQC_TEST(test_numbers), OQC_TEST(test_growth))
