// The 1:N face search kernels: streaming passes over the int8 gallery. They are memory-bandwidth
// bound when vectorised; target_clones builds an AVX2 and a baseline (SSE2) version and the
// loader picks one for the CPU it runs on, so the binary stays portable.
#include "csearch.h"

__attribute__((target_clones("avx2", "default")))
void csearch_int8_dots(const int8_t *codes, size_t rows, size_t dims, const int16_t *probe, int32_t *out) {
    for (size_t r = 0; r < rows; r++) {
        const int8_t *row = codes + r * dims;
        int32_t sum = 0;
        for (size_t i = 0; i < dims; i++) sum += (int32_t)probe[i] * (int32_t)row[i];
        out[r] = sum;
    }
}

__attribute__((target_clones("avx2", "default")))
void csearch_int8_bounds(const int8_t *codes, const float *steps, const float *errors, size_t rows, size_t dims,
                         const int16_t *probe, float probe_step, float error_scale, float offset, float *out) {
    for (size_t r = 0; r < rows; r++) {
        const int8_t *row = codes + r * dims;
        int32_t sum = 0;
        for (size_t i = 0; i < dims; i++) sum += (int32_t)probe[i] * (int32_t)row[i];
        out[r] = offset - 2.0f * ((float)sum * probe_step * steps[r] + error_scale * errors[r]);
    }
}
