#ifndef CSEARCH_H
#define CSEARCH_H
#include <stddef.h>
#include <stdint.h>

/// The face gallery's filter in one pass: for each row r,
///   out[r] = offset - 2 * (dot(probe, codes[r]) * probe_step * steps[r] + error_scale * errors[r])
/// a lower bound on the squared distance when the caller derives offset and error_scale from the
/// quantisation errors (see FaceGallery.swift).
void csearch_int8_bounds(const int8_t *codes, const float *steps, const float *errors, size_t rows, size_t dims,
                         const int16_t *probe, float probe_step, float error_scale, float offset, float *out);

#endif
