// The 1:N face search kernel: one streaming pass over the int8 gallery, memory-bandwidth bound
// when vectorised. The AVX2 version is chosen at run time (__builtin_cpu_supports), so the binary
// stays portable; other CPUs get the plain loop, which the compiler vectorises for SSE2.
#include "csearch.h"

#if defined(__x86_64__)
#include <immintrin.h>

/// Rows of 16·blocks dimensions (128: dlib; 256: the fused two-network vector) with AVX2: each
/// row is `blocks` × (16 int8 widened to int16, multiply-add with the probe into int32 pairs);
/// four rows share one horizontal reduction.
__attribute__((target("avx2")))
static void bounds_avx2(const int8_t *codes, const float *steps, const float *errors, size_t rows, int blocks,
                        const int16_t *probe, float probe_step, float error_scale, float offset, float *out) {
    const size_t dims = (size_t)blocks * 16;
    __m256i p[16];
    for (int k = 0; k < blocks; k++) p[k] = _mm256_loadu_si256((const __m256i *)(probe + 16 * k));
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        __m256i acc[4];
        for (int j = 0; j < 4; j++) {
            const int8_t *row = codes + (r + j) * dims;
            __m256i a = _mm256_setzero_si256();
            for (int k = 0; k < blocks; k++) {
                const __m256i c = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(row + 16 * k)));
                a = _mm256_add_epi32(a, _mm256_madd_epi16(c, p[k]));
            }
            acc[j] = a;
        }
        // Reduce four 8-lane sums at once: two hadds, then add the 128-bit halves.
        const __m256i h01 = _mm256_hadd_epi32(acc[0], acc[1]);
        const __m256i h23 = _mm256_hadd_epi32(acc[2], acc[3]);
        const __m256i h = _mm256_hadd_epi32(h01, h23);
        const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const __m128 dots = _mm_cvtepi32_ps(sums);
        const __m128 approx = _mm_mul_ps(_mm_mul_ps(dots, _mm_set1_ps(probe_step)), _mm_loadu_ps(steps + r));
        const __m128 slack = _mm_mul_ps(_mm_set1_ps(error_scale), _mm_loadu_ps(errors + r));
        const __m128 bound = _mm_sub_ps(_mm_set1_ps(offset), _mm_mul_ps(_mm_set1_ps(2.0f), _mm_add_ps(approx, slack)));
        _mm_storeu_ps(out + r, bound);
    }
    for (; r < rows; r++) {
        int32_t sum = 0;
        for (size_t i = 0; i < dims; i++) sum += (int32_t)probe[i] * (int32_t)codes[r * dims + i];
        out[r] = offset - 2.0f * ((float)sum * probe_step * steps[r] + error_scale * errors[r]);
    }
}
#endif

void csearch_int8_bounds(const int8_t *codes, const float *steps, const float *errors, size_t rows, size_t dims,
                         const int16_t *probe, float probe_step, float error_scale, float offset, float *out) {
#if defined(__x86_64__)
    if ((dims == 128 || dims == 256) && __builtin_cpu_supports("avx2")) {
        bounds_avx2(codes, steps, errors, rows, (int)(dims / 16), probe, probe_step, error_scale, offset, out);
        return;
    }
#endif
    for (size_t r = 0; r < rows; r++) {
        const int8_t *row = codes + r * dims;
        int32_t sum = 0;
        for (size_t i = 0; i < dims; i++) sum += (int32_t)probe[i] * (int32_t)row[i];
        out[r] = offset - 2.0f * ((float)sum * probe_step * steps[r] + error_scale * errors[r]);
    }
}
