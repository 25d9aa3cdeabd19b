/*
 * Deterministic fuzzer of pamb_handle_reply() (the reply handling pam_biometricd.so runs) and
 * of the request builder. Build with sanitizers (Tests/pam/run.sh does):
 *
 *   cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -ISources/PAM/include \
 *      Tests/pam/fuzz_reply.c Sources/PAM/reply.c Sources/PAM/bjson.c -o fuzz_reply
 *   ./fuzz_reply [--cases N] [--seed S] [--dump-success FILE]
 *
 * Classes of input:
 *   - hand-made valid successes: must give PAMB_SUCCESS;
 *   - hand-made hostile lines with a known verdict (never PAMB_SUCCESS);
 *   - generated garbage that can never be a valid success (random bytes, deep nesting, token
 *     floods, oversize lines, wrong types for ok/factor/id/jsonrpc, wrong ids, unknown users,
 *     invalid UTF-8 / surrogates / NULs): PAMB_SUCCESS is a failure;
 *   - generated lines that might by chance still be a valid success (byte mutations and
 *     splices of valid replies, JSON token soup): every PAMB_SUCCESS among them is written (hex,
 *     one per line) to --dump-success, and Tests/pam/oracle.py re-checks each one with Python's
 *     json module as an independent judge.
 * Prints "N passed, M failed" and exits 1 on any failure.
 */
#include "pam_biometricd.h"
#include "bjson.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static long passed, failed, dumped;
static FILE *dump;
static const char *USER = "alice";

#define MAXBUF (PAMB_MAX_LINE * 4)
static char *buf;

static void fail(const char *what, const char *line, size_t len)
{
    failed++;
    if (failed <= 20) {
        fprintf(stderr, "FAIL %s: ", what);
        for (size_t i = 0; i < len && i < 300; i++) {
            unsigned char c = (unsigned char)line[i];
            if (c >= 0x20 && c < 0x7f) fputc(c, stderr); else fprintf(stderr, "\\x%02x", c);
        }
        fputc('\n', stderr);
    }
}

/* Runs one line. must: -1 any verdict allowed (oracle checks successes), 0 never success,
 * otherwise the exact verdict expected. */
static void check(const char *line, size_t len, int must, const char *what)
{
    struct pamb_outcome out;
    /* Copy into an exactly sized heap block so ASan catches any read past len. */
    char *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, line, len);
    int v = pamb_handle_reply(copy, len, 1, USER, &out);
    free(copy);
    if (v != out.verdict || v < PAMB_CONTINUE || v > PAMB_UNAVAIL) { fail("bad verdict", line, len); return; }
    if (memchr(out.message, 0, sizeof out.message) == NULL || memchr(out.factor, 0, sizeof out.factor) == NULL ||
        memchr(out.reason, 0, sizeof out.reason) == NULL) { fail("unterminated outcome", line, len); return; }
    if (v == PAMB_SUCCESS && out.factor[0] == '\0') { fail("success without factor", line, len); return; }
    if (must == 0 && v == PAMB_SUCCESS) { fail(what, line, len); return; }
    if (must > 0 && v != must) { fail(what, line, len); return; }
    if (must == -1 && v == PAMB_SUCCESS && dump) {
        for (size_t i = 0; i < len; i++) fprintf(dump, "%02x", (unsigned char)line[i]);
        fputc('\n', dump);
        dumped++;
    }
    passed++;
}
static void checks(const char *line, int must, const char *what) { check(line, strlen(line), must, what); }

static const char *const valid_success[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"user\":\"alice\",\"duration_ms\":1234,\"tried\":[],\"skipped\":[]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"finger\"}}",
    "{\"result\":{\"factor\":\"face\",\"ok\":true},\"id\":1,\"jsonrpc\":\"2.0\"}",
    " { \"jsonrpc\" : \"2.0\" , \"id\" : 1 , \"result\" : { \"ok\" : true , \"factor\" : \"face\" } } \r",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"o\\u006b\":true,\"factor\":\"f\\u0061ce\",\"user\":\"al\\u0069ce\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"extra\":{\"a\":[1,2,{\"b\":null}],\"\\ud83d\\ude00\":\"\xf0\x9f\x98\x80\"}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"pin\",\"tried\":[{\"factor\":\"face\",\"reason\":\"no_match\",\"code\":0}]}}",
};

struct known { const char *line; int verdict; };
static const struct known hostile[] = {
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":\"true\",\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":1,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":null,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":[true],\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":{\"ok\":true},\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":null}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":1}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":[\"face\"]}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"fa ce\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"fa\\u0000ce\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"user\":\"root\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"user\":null}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"user\":\"alice\",\"user\":\"bob\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"o\\u006b\":false,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"factor\":\"finger\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":-1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1e0,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":01,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551617,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1000000000000000000000000000001,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":2,\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"},\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"},\"error\":{\"code\":1}}", PAMB_UNAVAIL },
    { "{\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.00\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":2.0,\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"event\",\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_CONTINUE },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[{\"ok\":true,\"factor\":\"face\"}]}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"ok\"}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":true}", PAMB_UNAVAIL },
    { "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}]", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}x", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}{}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\" /* c */}}", PAMB_UNAVAIL },
    { "{'jsonrpc':'2.0','id':1,'result':{'ok':true,'factor':'face'}}", PAMB_UNAVAIL },
    { "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":NaN}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"\\ud800\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"\\udc00\\ud800\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"\xc0\xaf\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"\xed\xa0\x80\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"\xf4\x90\x80\x80\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"a\tb\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"\\x\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":tru,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":True,\"factor\":\"face\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"factor\":null,\"tried\":[{\"factor\":\"face\",\"code\":0,\"reason\":\"no_match\"}]}}", PAMB_AUTH_ERR },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"factor\":null,\"tried\":[{\"factor\":\"face\",\"code\":3004,\"reason\":\"spoof_detected\"}]}}", PAMB_AUTH_ERR },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"tried\":[{\"factor\":\"face\",\"code\":3003}]}}", PAMB_AUTH_ERR },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"tried\":[{\"factor\":\"face\",\"code\":1007,\"reason\":\"timeout\"},{\"factor\":\"finger\",\"code\":2001,\"reason\":\"no_camera\"}]}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"tried\":[]}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":false,\"tried\":[1,null,\"x\",[]]}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":5001,\"message\":\"m\",\"data\":{\"reason\":\"locked_out\",\"retry_after_s\":27}}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1002,\"message\":\"m\",\"data\":{\"reason\":\"not_found\"}}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":null}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error\"}}", PAMB_UNAVAIL },
    { "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"request\":1,\"type\":\"face.frame\",\"feedback\":[\"no_face\"]}}", PAMB_CONTINUE },
    { "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"request\":2,\"type\":\"face.frame\",\"feedback\":[\"no_face\"]}}", PAMB_CONTINUE },
    { "{\"jsonrpc\":\"2.0\",\"method\":\"camera.added\",\"params\":{}}", PAMB_CONTINUE },
    { "{\"jsonrpc\":\"2.0\",\"method\":\"event\"}", PAMB_CONTINUE },
    { "", PAMB_UNAVAIL },
    { "null", PAMB_UNAVAIL },
    { "true", PAMB_UNAVAIL },
    { "{}", PAMB_UNAVAIL },
    { "1", PAMB_UNAVAIL },
    { "\"ok\"", PAMB_UNAVAIL },
};

/* Fragments for token soup. */
static const char *const frags[] = {
    "{", "}", "[", "]", ":", ",", " ", "\"jsonrpc\"", "\"2.0\"", "\"id\"", "1", "2", "-1", "1.5",
    "\"result\"", "\"error\"", "\"ok\"", "true", "false", "null", "\"factor\"", "\"face\"",
    "\"finger\"", "\"user\"", "\"alice\"", "\"method\"", "\"event\"", "\"params\"", "\"tried\"",
    "\"reason\"", "\"no_match\"", "\"code\"", "5001", "\"data\"", "\"retry_after_s\"", "\"\\u006b\"",
    "\"\\ud800\"", "\"", "\\", "1e999", "\x00", "\xff", "\"o\\u006b\"",
};

static size_t gen_value(char *o, size_t cap, int depth);

static size_t gen_string(char *o, size_t cap)
{
    static const char *const pieces[] = { "a", "face", "finger", "\\n", "\\u0041", "\\ud83d\\ude00",
                                          "\xc3\xa9", "\\\"", "\\\\", "\\u0000", "ok", " " };
    size_t n = 0;
    if (cap < 64) return 0;
    o[n++] = '"';
    for (size_t k = below(5); k > 0; k--) {
        const char *p = pieces[below(sizeof pieces / sizeof *pieces)];
        size_t l = strlen(p);
        if (n + l + 2 >= cap) break;
        memcpy(o + n, p, l);
        n += l;
    }
    o[n++] = '"';
    return n;
}

/* A random JSON value (valid JSON; used where the verdict is fixed by the surrounding shape). */
static size_t gen_value(char *o, size_t cap, int depth)
{
    static const char *const atoms[] = { "true", "false", "null", "0", "1", "-1", "1.0", "1e3",
                                         "123456789012345678901234567890", "-0", "2" };
    if (cap < 128) return 0;
    size_t k = below(depth > 3 ? 3 : 5);
    if (k == 0) { const char *a = atoms[below(sizeof atoms / sizeof *atoms)]; size_t l = strlen(a); memcpy(o, a, l); return l; }
    if (k == 1) return gen_string(o, cap);
    if (k == 2) { memcpy(o, "true", 4); return 4; }
    size_t n = 0;
    int obj = k == 3;
    o[n++] = obj ? '{' : '[';
    for (size_t m = below(4), first = 1; m > 0 && n + 64 < cap; m--, first = 0) {
        if (!first) o[n++] = ',';
        if (obj) { n += gen_string(o + n, cap - n - 8); o[n++] = ':'; }
        n += gen_value(o + n, cap - n - 8, depth + 1);
    }
    o[n++] = obj ? '}' : ']';
    return n;
}

static size_t put(char *o, size_t n, const char *s)
{
    size_t l = strlen(s);
    memcpy(o + n, s, l);
    return n + l;
}

/* Success shape with one slot replaced by a generated value that is never acceptable there. */
static size_t gen_type_confusion(char *o)
{
    char v[2048];
    size_t vl;
    size_t slot = below(4), n = 0;
    do {
        vl = gen_value(v, sizeof v, 0);
        v[vl] = '\0';
        /* reject values that would be legitimate in that slot */
        if (slot == 0 && strcmp(v, "true") == 0) continue;
        if (slot == 1 && v[0] == '"') continue;
        if (slot == 2 && strcmp(v, "1") == 0) continue;
        if (slot == 3 && strcmp(v, "\"2.0\"") == 0) continue;
        break;
    } while (1);
    n = put(o, n, "{\"jsonrpc\":");
    n = put(o, n, slot == 3 ? v : "\"2.0\"");
    n = put(o, n, ",\"id\":");
    n = put(o, n, slot == 2 ? v : "1");
    n = put(o, n, ",\"result\":{\"ok\":");
    n = put(o, n, slot == 0 ? v : "true");
    n = put(o, n, ",\"factor\":");
    n = put(o, n, slot == 1 ? v : "\"face\"");
    n = put(o, n, "}}");
    return n;
}

static size_t mutate(char *o, const char *src)
{
    size_t n = strlen(src);
    memcpy(o, src, n);
    for (size_t k = 1 + below(4); k > 0; k--) {
        size_t pos = below(n + 1);
        switch (below(7)) {
        case 0: if (n) o[below(n)] = (char)rnd(); break;                      /* flip */
        case 1: if (n) o[below(n)] ^= (char)(1u << below(8)); break;          /* bit flip */
        case 2: if (n) { memmove(o + pos, o + pos + (pos < n), n - pos - (pos < n)); n -= (pos < n); } break; /* delete */
        case 3: memmove(o + pos + 1, o + pos, n - pos); o[pos] = "{}[]\",:\\0tfn \x80"[below(15)]; n++; break;
        case 4: n = pos; break;                                               /* truncate */
        case 5: { /* duplicate a chunk */
            size_t a = below(n + 1), l = below(n - a + 1);
            if (n + l < 4096) { memmove(o + pos + l, o + pos, n - pos); memmove(o + pos, o + (a < pos ? a : a + l), l); n += l; }
            break; }
        default: { /* splice in a fragment */
            const char *f = frags[below(sizeof frags / sizeof *frags)];
            size_t l = strlen(f) ? strlen(f) : 1;
            memmove(o + pos + l, o + pos, n - pos); memcpy(o + pos, f, l); n += l;
            break; }
        }
    }
    return n;
}

static void fuzz_request(void)
{
    /* Random user names: valid ones must come back intact through a strict parse. */
    char user[160], req[1024];
    size_t ul = below(140);
    for (size_t i = 0; i < ul; i++) {
        size_t k = below(10);
        user[i] = k < 6 ? (char)(0x20 + below(95)) : k < 8 ? "\"\\"[below(2)] : (char)rnd();
    }
    user[ul] = '\0';
    int valid = pamb_user_valid(user);
    int len = pamb_build_request(req, sizeof req, 1, user, below(2) ? "face,finger" : NULL,
                                 below(2) ? "cam0" : NULL, 10000);
    if (!valid) { if (len != -1) fail("request for an invalid user", user, ul); else passed++; return; }
    if (len <= 0 || req[len - 1] != '\n' || memchr(req, '\n', (size_t)len - 1)) { fail("request line", user, ul); return; }
    struct bjson_tok toks[64];
    struct bjson_doc d;
    char back[PAMB_MAX_USER + 1];
    if (bjson_parse(&d, req, (size_t)len - 1, toks, 64) < 0 ||
        bjson_str(&d, bjson_get(&d, bjson_get(&d, 0, "params"), "user"), back, sizeof back) < 0 ||
        strcmp(back, user) != 0) { fail("request round trip", req, (size_t)len); return; }
    passed++;
}

int main(int argc, char **argv)
{
    long cases = 1000000;
    uint64_t seed = 20240601;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) cases = atol(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dump-success") == 0 && i + 1 < argc) dump = fopen(argv[++i], "w");
        else { fprintf(stderr, "usage: %s [--cases N] [--seed S] [--dump-success FILE]\n", argv[0]); return 2; }
    }
    rng_state = seed;
    buf = malloc(MAXBUF);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    long n_valid = (long)(sizeof valid_success / sizeof *valid_success);
    for (long i = 0; i < n_valid; i++) checks(valid_success[i], PAMB_SUCCESS, "valid success refused");
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++)
        checks(hostile[i].line, hostile[i].verdict, "hand-made case");
    {
        static const char nul[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\"}}\0";
        check(nul, sizeof nul - 1, PAMB_UNAVAIL, "NUL after reply");
    }

    /* Fixed big cases: deep nesting, token floods, oversize. */
    memset(buf, '[', 200000); check(buf, 200000, PAMB_UNAVAIL, "deep nesting");
    {
        size_t n = 0;
        for (int d = 0; d < 33; d++) n = put(buf, n, "{\"a\":");
        n = put(buf, n, "1");
        for (int d = 0; d < 33; d++) buf[n++] = '}';
        check(buf, n, PAMB_UNAVAIL, "depth 34");
        n = put(buf, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":[");
        for (int k = 0; k < 5000; k++) n = put(buf, n, k ? ",0" : "0");
        n = put(buf, n, "]}}");
        check(buf, n, PAMB_UNAVAIL, "token flood");
        n = put(buf, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"");
        memset(buf + n, 'a', PAMB_MAX_LINE); n += PAMB_MAX_LINE;
        n = put(buf, n, "\"}}");
        check(buf, n, PAMB_UNAVAIL, "oversize line");
    }

    long done = passed + failed;
    for (long i = 0; done + i < cases || i < 1; i++) {
        size_t n = 0;
        switch (i % 10) {
        case 0: /* random bytes */
            n = below(300);
            for (size_t k = 0; k < n; k++) buf[k] = (char)rnd();
            check(buf, n, 0, "random bytes");
            break;
        case 1: /* deep or wide nesting with a success inside */
            n = below(3) == 0 ? 30 + below(10) : 1 + below(120000);
            memset(buf, below(2) ? '[' : '{', n);
            n = put(buf, n, valid_success[below((size_t)n_valid)]);
            check(buf, n, 0, "nesting");
            break;
        case 2: /* type confusion in ok / factor / id / jsonrpc */
            n = gen_type_confusion(buf);
            check(buf, n, 0, "type confusion");
            break;
        case 3: { /* success with another id or user */
            char tail[256];
            long id = (long)(rnd() % 2000000) - 1000000;
            if (id == 1) id = 7;
            snprintf(tail, sizeof tail, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"ok\":true,\"factor\":\"face\"}}", id);
            if (below(2)) snprintf(tail, sizeof tail, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"user\":\"alice%c\"}}", (char)('a' + below(26)));
            check(tail, strlen(tail), 0, "wrong id or user");
            break; }
        case 4: /* invalid UTF-8 or surrogates inside an otherwise valid success */
            n = put(buf, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"factor\":\"face\",\"x\":\"");
            switch (below(4)) {
            case 0: buf[n++] = (char)(0x80 + below(0x40)); break;
            case 1: n = put(buf, n, below(2) ? "\\ud800" : "\\udfff"); n = put(buf, n, below(2) ? "\\u0041" : ""); break;
            case 2: buf[n++] = (char)0xed; buf[n++] = (char)(0xa0 + below(0x20)); buf[n++] = (char)0x80; break;
            default: buf[n++] = (char)below(0x20); break;
            }
            n = put(buf, n, "\"}}");
            check(buf, n, 0, "bad string");
            break;
        case 5: case 6: case 7: /* mutations of valid replies: the oracle judges successes */
            n = mutate(buf, valid_success[below((size_t)n_valid)]);
            check(buf, n, -1, "mutation");
            break;
        case 8: /* mutations of failures, errors and events */
            n = mutate(buf, hostile[below(sizeof hostile / sizeof *hostile)].line);
            check(buf, n, -1, "mutation");
            break;
        default: /* token soup */
            for (size_t k = 1 + below(40); k > 0; k--) {
                const char *f = frags[below(sizeof frags / sizeof *frags)];
                n = put(buf, n, *f ? f : " ");
            }
            check(buf, n, -1, "soup");
            if (i % 1000 == 9) fuzz_request();
            break;
        }
    }
    for (int k = 0; k < 100000; k++) fuzz_request();

    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (dump) fclose(dump);
    fprintf(stderr, "fuzz_reply: %ld cases in %.1f s, %ld successes from mutations sent to the oracle\n",
            passed + failed, s, dumped);
    printf("%ld passed, %ld failed\n", passed, failed);
    free(buf);
    return failed ? 1 : 0;
}
