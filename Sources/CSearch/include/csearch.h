#ifndef CSEARCH_H
#define CSEARCH_H
#include <stddef.h>
#include <stdint.h>

/// Dot products of one probe (int16, `dims` values) with `rows` int8 rows of `dims` values each,
/// stored contiguously: out[r] = sum_i probe[i] * codes[r * dims + i]. `dims` must be a multiple
/// of 32. Exact integer arithmetic (no overflow for |probe| <= 32767, dims <= 1024).
void csearch_int8_dots(const int8_t *codes, size_t rows, size_t dims, const int16_t *probe, int32_t *out);

#endif
