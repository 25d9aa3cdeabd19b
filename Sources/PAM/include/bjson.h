/*
 * bjson: a tiny, strict, non-recursive JSON reader for pam_biometricd.
 *
 * bjson_parse() checks one complete JSON text (RFC 8259: no trailing data, no comments, no
 * NaN/Infinity, strings must be valid UTF-8 without raw control characters, \u escapes must
 * form valid surrogate pairs) and records it as a flat array of tokens in document order.
 * Nesting is limited to BJSON_MAX_DEPTH and the token count to the caller's array: anything
 * over a limit is an error, never a crash. Nothing is allocated; the tokens point into the
 * caller's buffer, which must stay alive while the document is read.
 */
#ifndef BJSON_H
#define BJSON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BJSON_MAX_DEPTH 32

enum bjson_type {
    BJSON_NULL = 1,
    BJSON_FALSE,
    BJSON_TRUE,
    BJSON_NUMBER,
    BJSON_STRING,
    BJSON_ARRAY,
    BJSON_OBJECT
};

struct bjson_tok {
    unsigned char type;  /* enum bjson_type */
    unsigned int start;  /* string: first byte after the quote; others: first byte */
    unsigned int len;    /* string: raw bytes between the quotes; number: literal length */
    unsigned int next;   /* index of the first token after this value and everything in it */
    unsigned int count;  /* array: elements; object: members (key/value pairs) */
};

struct bjson_doc {
    const char *src;
    const struct bjson_tok *tok;
    unsigned int n;
};

/* Parses src[0..len). Returns 0 and fills doc, or -1 (syntax, UTF-8, depth, too many tokens). */
int bjson_parse(struct bjson_doc *doc, const char *src, size_t len,
                struct bjson_tok *toks, unsigned int cap);

/* Type of token i, or 0 when i is out of range. */
int bjson_type(const struct bjson_doc *doc, int i);

/* Value of member `key` of object token obj: its token index; -1 when absent or obj is not an
 * object; -2 when the key occurs more than once (callers treat that as malformed). Keys are
 * compared after decoding escapes. */
int bjson_get(const struct bjson_doc *doc, int obj, const char *key);

/* Index of element k of array token arr, or -1. */
int bjson_at(const struct bjson_doc *doc, int arr, unsigned int k);

/* Decodes string token i into buf (NUL-terminated). Returns its length, or -1 when i is not a
 * string, does not fit, or contains U+0000. */
int bjson_str(const struct bjson_doc *doc, int i, char *buf, size_t cap);

/* 1 when token i is a string whose decoded value equals s, else 0. */
int bjson_str_eq(const struct bjson_doc *doc, int i, const char *s);

/* Integer value of number token i when it is written as an integer (no fraction, no exponent)
 * of at most 15 digits. Returns 0 and sets *out, or -1. */
int bjson_int(const struct bjson_doc *doc, int i, long long *out);

/* 1 when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int bjson_utf8_valid(const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif
