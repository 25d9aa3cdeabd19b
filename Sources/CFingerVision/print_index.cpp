// Coarse 1:N pre-selection codes for minutia templates. See Docs/finger-print.md ("1:N pre-selection").
//
// A print's code is a 4,096-bit Bloom filter of its minutia triplets (Germain et al. 1997's FLASH,
// Bhanu & Tan 2003): every triangle a minutia forms with two of its nearest neighbours is reduced
// to features that do not change under rotation and translation — its three side lengths, its
// handedness, and each vertex's minutia direction relative to a side — quantised and hashed to
// one bit. Two impressions of a finger share many such triangles; the coarse score is the number
// of shared bits, normalised by the size of the reference's set (so prints with many minutiae do
// not win by filling their filter). Scoring is AND + popcount over 64 words per reference.
#include "cvision_print.h"
#include "cvision_internal.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

namespace {
using cvis::fail;
using cvis::guarded;

constexpr float kPi = 3.14159265358979f;
constexpr float kTwoPi = 2 * kPi;
constexpr int kBits = CVIS_PRINT_CODE_WORDS * 64;

// Triangles: each minutia with pairs of its kNeighbours nearest neighbours between kMinSide and
// kMaxSide px (closer ones are mostly extraction noise, farther ones distort too much).
constexpr int kNeighbours = 4;
constexpr float kMinSide = 12, kMaxSide = 130;
// Quantisation: side lengths in 12-px bins (≈ one ridge period and a half), directions in 45°
// bins. When two sides differ by less than kTie px their order (hence the vertex order) is
// unstable between impressions, so the triangle is also entered with the other order.
constexpr float kSideBin = 12, kTie = 3;
constexpr int kDirectionBins = 8;

struct Point {
    float x, y, angle; // angle counter-clockwise on screen (y down)
};

/// A fixed 64-bit mixer (SplitMix64's finaliser): codes must be the same on every run and machine.
inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Direction of the segment a → b, counter-clockwise on screen.
inline float heading(const Point &a, const Point &b) { return std::atan2(a.y - b.y, b.x - a.x); }

/// The quantised invariant features of the triangle with vertices in `order` (longest opposite
/// side first), packed into one key.
uint64_t triangleKey(const Point *p, const std::array<int, 3> &order, const std::array<float, 3> &opposite) {
    uint64_t key = 0;
    for (int v : order) key = key << 5 | uint64_t(std::min(31, int(opposite[size_t(v)] / kSideBin)));
    const Point &a = p[order[0]], &b = p[order[1]], &c = p[order[2]];
    const float cross = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
    key = key << 1 | (cross > 0 ? 1 : 0);
    for (int i = 0; i < 3; ++i) {
        const Point &from = p[order[size_t(i)]], &to = p[order[size_t((i + 1) % 3)]];
        float rel = std::fmod(from.angle - heading(from, to), kTwoPi);
        if (rel < 0) rel += kTwoPi;
        key = key << 3 | uint64_t(int(rel / kTwoPi * kDirectionBins) % kDirectionBins);
    }
    return key;
}

constexpr int kCodeQuality = 30, kCodeMinimum = 12;

void setBit(uint64_t *code, uint64_t key) {
    const uint64_t bit = mix(key) & (kBits - 1);
    code[bit / 64] |= uint64_t(1) << (bit % 64);
}

void makeCode(const cvis_minutia *minutiae, int count, uint64_t *code) {
    std::memset(code, 0, sizeof(uint64_t) * CVIS_PRINT_CODE_WORDS);
    // Triplets are built from the clear minutiae only (quality ≥ kCodeQuality): since the
    // extractor keeps minutiae down to coherence 0.20 (issue 26), the unclear ones (quality < 30
    // means coherence < 0.28) change a minutia's nearest neighbours between impressions, and
    // with them most of its triangles; the full matcher still sees them all. A print with fewer
    // than kCodeMinimum clear minutiae uses all of them.
    std::vector<Point> p;
    int clear = 0;
    for (int i = 0; i < count; ++i) clear += minutiae[i].quality >= kCodeQuality;
    const bool selective = clear >= kCodeMinimum;
    for (int i = 0; i < count; ++i)
        if (std::isfinite(minutiae[i].x) && std::isfinite(minutiae[i].y) && std::isfinite(minutiae[i].angle) &&
            (!selective || minutiae[i].quality >= kCodeQuality))
            p.push_back({minutiae[i].x, minutiae[i].y, minutiae[i].angle});
    const int n = int(p.size());
    // Each triangle once, whichever of its vertices found it: sorted vertex triples.
    std::vector<uint64_t> triangles;
    std::vector<std::pair<float, int>> near;
    for (int i = 0; i < n; ++i) {
        near.clear();
        for (int j = 0; j < n; ++j) {
            const float d = std::hypot(p[size_t(j)].x - p[size_t(i)].x, p[size_t(j)].y - p[size_t(i)].y);
            if (j != i && d >= kMinSide && d <= kMaxSide) near.emplace_back(d, j);
        }
        const size_t k = std::min<size_t>(kNeighbours, near.size());
        std::partial_sort(near.begin(), near.begin() + long(k), near.end());
        for (size_t a = 0; a < k; ++a)
            for (size_t b = a + 1; b < k; ++b) {
                std::array<uint64_t, 3> t{uint64_t(i), uint64_t(near[a].second), uint64_t(near[b].second)};
                std::sort(t.begin(), t.end());
                triangles.push_back(t[0] << 42 | t[1] << 21 | t[2]);
            }
    }
    std::sort(triangles.begin(), triangles.end());
    triangles.erase(std::unique(triangles.begin(), triangles.end()), triangles.end());
    for (uint64_t t : triangles) {
        const Point v[3] = {p[size_t(t >> 42)], p[size_t((t >> 21) & 0x1FFFFF)], p[size_t(t & 0x1FFFFF)]};
        const std::array<float, 3> opposite{std::hypot(v[1].x - v[2].x, v[1].y - v[2].y),
                                            std::hypot(v[0].x - v[2].x, v[0].y - v[2].y),
                                            std::hypot(v[0].x - v[1].x, v[0].y - v[1].y)};
        std::array<int, 3> order{0, 1, 2};
        std::sort(order.begin(), order.end(), [&](int a, int b) { return opposite[size_t(a)] > opposite[size_t(b)]; });
        setBit(code, triangleKey(v, order, opposite));
        if (opposite[size_t(order[0])] - opposite[size_t(order[1])] < kTie)
            setBit(code, triangleKey(v, {order[1], order[0], order[2]}, opposite));
        if (opposite[size_t(order[1])] - opposite[size_t(order[2])] < kTie)
            setBit(code, triangleKey(v, {order[0], order[2], order[1]}, opposite));
    }
}

/// Shared bits with the probe / √(bits of the reference), for `count` codes.
__attribute__((always_inline)) inline void scoreCodes(const uint64_t *probe, const uint64_t *codes, size_t count,
                                                      float *scores) {
    for (size_t i = 0; i < count; ++i) {
        const uint64_t *c = codes + i * CVIS_PRINT_CODE_WORDS;
        int shared = 0, set = 0;
        for (int w = 0; w < CVIS_PRINT_CODE_WORDS; ++w) {
            shared += __builtin_popcountll(probe[w] & c[w]);
            set += __builtin_popcountll(c[w]);
        }
        scores[i] = float(shared) / std::sqrt(float(std::max(1, set)));
    }
}

#if defined(__x86_64__)
// As in print.cpp: baseline x86-64 has no POPCNT; copies for CPUs with it (and with AVX-512
// VPOPCNTDQ, where the 64-word loop vectorises) are chosen at run time.
__attribute__((target("popcnt"))) void scoreCodesPopcnt(const uint64_t *probe, const uint64_t *codes, size_t count,
                                                         float *scores) {
    scoreCodes(probe, codes, count, scores);
}
__attribute__((target("popcnt,avx2,avx512f,avx512vpopcntdq"))) void
scoreCodesAVX512(const uint64_t *probe, const uint64_t *codes, size_t count, float *scores) {
    scoreCodes(probe, codes, count, scores);
}
const bool kHasPopcnt = (__builtin_cpu_init(), __builtin_cpu_supports("popcnt"));
const bool kHasAVX512Popcnt = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
#endif

void scoreAll(const uint64_t *probe, const uint64_t *codes, size_t count, float *scores) {
#if defined(__x86_64__)
    if (kHasAVX512Popcnt) return scoreCodesAVX512(probe, codes, count, scores);
    if (kHasPopcnt) return scoreCodesPopcnt(probe, codes, count, scores);
#endif
    scoreCodes(probe, codes, count, scores);
}

} // namespace

extern "C" {

cvis_status cvis_print_index_code(const cvis_minutia *minutiae, int count, uint64_t *code) {
    if (count < 0 || count > 10000 || (count > 0 && !minutiae) || !code) return fail(CVIS_ERR_ARGUMENT, "bad minutiae");
    return guarded([&]() {
        makeCode(minutiae, count, code);
        return CVIS_OK;
    });
}

cvis_status cvis_print_index_best(const uint64_t *probe, const uint64_t *codes, size_t count, size_t k,
                                  uint32_t *best_index, float *best_score, size_t *found) {
    if (!probe || (count > 0 && !codes) || (k > 0 && (!best_index || !best_score)) || !found || count > UINT32_MAX)
        return fail(CVIS_ERR_ARGUMENT, "bad index arguments");
    *found = 0;
    return guarded([&]() {
        std::vector<float> scores(count);
        scoreAll(probe, codes, count, scores.data());
        std::vector<uint32_t> order(count);
        for (size_t i = 0; i < count; ++i) order[i] = uint32_t(i);
        const size_t n = std::min(k, count);
        // Best first; equal scores by position, so the result does not depend on how a caller
        // splits the gallery.
        auto better = [&](uint32_t a, uint32_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; };
        std::nth_element(order.begin(), order.begin() + long(n), order.end(), better);
        for (size_t i = 0; i < n; ++i) {
            best_index[i] = order[i];
            best_score[i] = scores[order[i]];
        }
        *found = n;
        return CVIS_OK;
    });
}

} // extern "C"
