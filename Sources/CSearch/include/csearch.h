#ifndef CSEARCH_H
#define CSEARCH_H
#include <stddef.h>
#include <stdint.h>

/// Dot products of one probe (int16, `dims` values) with `rows` int8 rows of `dims` values each,
/// stored contiguously: out[r] = sum_i probe[i] * codes[r * dims + i]. Exact integer arithmetic
/// (no overflow for |probe| <= 32767, dims <= 1024).
void csearch_int8_dots(const int8_t *codes, size_t rows, size_t dims, const int16_t *probe, int32_t *out);

/// The face gallery's filter in one pass: for each row r,
///   out[r] = offset - 2 * (dot(probe, codes[r]) * probe_step * steps[r] + error_scale * errors[r])
/// a lower bound on the squared distance when the caller derives offset and error_scale from the
/// quantisation errors (see FaceGallery.swift).
void csearch_int8_bounds(const int8_t *codes, const float *steps, const float *errors, size_t rows, size_t dims,
                         const int16_t *probe, float probe_step, float error_scale, float offset, float *out);

#endif
