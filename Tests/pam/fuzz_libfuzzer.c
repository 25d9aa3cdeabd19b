/*
 * libFuzzer entry for the reply handling of pam_biometricd.so (coverage-guided; the
 * deterministic Tests/pam/fuzz_reply.c is the one CI runs). Build and run:
 *
 *   clang -O1 -g -fsanitize=fuzzer,address,undefined -ISources/PAM/include \
 *       Tests/pam/fuzz_libfuzzer.c Sources/PAM/reply.c Sources/PAM/bjson.c -o fuzz_libfuzzer
 *   ./fuzz_libfuzzer -max_total_time=60 -max_len=4096 -dict=Tests/pam/reply.dict corpus/
 *
 * Checks: no crash, no sanitizer report, and a success verdict only for input that contains
 * a literal true and a "factor" key and parses as one JSON object (a cheap sanity bound;
 * fuzz_reply.c + oracle.py do the exact check).
 */
#include "pam_biometricd.h"
#include "bjson.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int contains(const uint8_t *d, size_t n, const char *s)
{
    size_t l = strlen(s);
    for (size_t i = 0; l <= n && i <= n - l; i++)
        if (memcmp(d + i, s, l) == 0) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pamb_outcome out;
    int v = pamb_handle_reply((const char *)data, size, 1, "alice", &out);
    if (v == PAMB_SUCCESS) {
        static struct bjson_tok toks[PAMB_MAX_TOKENS];
        struct bjson_doc d;
        if (!contains(data, size, "true") || !contains(data, size, "factor") ||
            bjson_parse(&d, (const char *)data, size, toks, PAMB_MAX_TOKENS) < 0 ||
            bjson_type(&d, 0) != BJSON_OBJECT || out.factor[0] == '\0')
            abort();
    }
    /* The reader on its own, with every accessor on every token. */
    static struct bjson_tok toks[256];
    struct bjson_doc d;
    if (bjson_parse(&d, (const char *)data, size, toks, 256) == 0) {
        char buf[64];
        long long x;
        for (unsigned i = 0; i < d.n; i++) {
            bjson_str(&d, (int)i, buf, sizeof buf);
            bjson_int(&d, (int)i, &x);
            bjson_get(&d, (int)i, "ok");
            bjson_at(&d, (int)i, 1);
        }
    }
    return 0;
}
