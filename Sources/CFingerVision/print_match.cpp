// The minutia matcher behind cvis_print_model_make / cvis_print_match. See Docs/finger-print.md.
//
// Matching: Minutia Cylinder-Code (Cappelli et al. 2010, bit version) local similarities,
//   consolidated by relaxation (LSS-R), plus the support of the best local affine map. The image
//   stages are print_extract.cpp.
#include "cvision_imaging.h"
#include "cvision_print.h"
#include "cvision_internal.hpp"
#include "print_angles.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace {
using cvis::angleDiff;
using cvis::fail;
using cvis::guarded;
using cvis::kPi;
using cvis::kTwoPi;
using cvis::wrap2pi;

// MARK: - Matching: Minutia Cylinder-Code

constexpr int kNs = 16, kNd = 6;
constexpr float kRadius = 70, kSigmaS = 28.0f / 3, kSigmaD = 2 * kPi / 9, kMuPsi = 0.01f;
constexpr int kCells = kNs * kNs * kNd, kWords = kCells / 64; // 1536 bits, 24 words
constexpr float kOmega = 50;                                  // hull enlargement (px)
constexpr float kRotationWindow = kPi / 2; // pairs kept around the voted rotation (MCC's δθ)
// Consolidated pairs a similarity is averaged over (always this many; missing pairs count 0).
constexpr int kConsolidated = 12;

struct Cylinder {
    std::array<uint64_t, kWords> bits{}, valid{};
    int validCount = 0;
};

struct PreparedMinutia {
    float x, y, angle;
    int kind;
    float quality;
};

} // namespace

struct cvis_print_model {
    std::vector<PreparedMinutia> minutiae;
    std::vector<Cylinder> cylinders;
    std::vector<int> owner; // minutia index of each cylinder
    std::vector<cv::Point2f> hull; // convex hull of all minutiae (the print's extent)
    // Pairwise geometry of the cylinder minutiae (row-major, cylinders × cylinders), precomputed
    // so the relaxation step is table look-ups: distance, relative direction, radial angle.
    std::vector<float> distance, direction, radial;
    // Coarse orientation field (cvis_print_model_make_with_field): per cell the doubled-angle
    // vector times its strength (re, im) and the strength; fieldWidth 0 when the template has none.
    int fieldWidth = 0, fieldHeight = 0;
    std::vector<float> fieldRe, fieldIm, fieldStrength;
    std::vector<float> fieldCos, fieldSin; // the cell's ridge direction as a unit vector
};

namespace {

float gaussianArea(float a, float b, float sigma) {
    const float s = sigma * std::sqrt(2.0f);
    return 0.5f * (std::erf(b / s) - std::erf(a / s));
}

/// Directional contribution C_D of MCC: the Gaussian (σ_D) mass of each of the Nd direction bins
/// for a given relative direction, tabulated at 1024 steps over (−π, π] (erf is slow).
struct DirectionTable {
    static constexpr int kSteps = 1024;
    std::vector<float> values; // [step][bin]
    DirectionTable() : values(size_t(kSteps + 1) * kNd) {
        const float dD = kTwoPi / kNd;
        for (int i = 0; i <= kSteps; ++i) {
            float rel = -kPi + kTwoPi * i / kSteps;
            for (int k = 0; k < kNd; ++k) {
                float a = angleDiff(-kPi + (k + 0.5f) * dD, rel);
                values[size_t(i) * kNd + k] = gaussianArea(a - dD / 2, a + dD / 2, kSigmaD);
            }
        }
    }
    const float *row(float rel) const {
        int i = int(std::lround((rel + kPi) / kTwoPi * kSteps));
        return &values[size_t(std::min(kSteps, std::max(0, i))) * kNd];
    }
};

const DirectionTable &directionTable() {
    static const DirectionTable table;
    return table;
}

/// The cylinder of each minutia: which neighbours sit where (relative to its own position and
/// direction) and with what relative direction — invariant to rotation and translation, and
/// local, so partial overlap and distortion only affect the cylinders near them.
void buildCylinders(cvis_print_model &model) {
    auto &ms = model.minutiae;
    const int n = int(ms.size());
    std::vector<cv::Point2f> pts;
    for (auto &m : ms) pts.emplace_back(m.x, m.y);
    std::vector<cv::Point2f> hull;
    if (n >= 3) cv::convexHull(pts, hull);
    model.hull = hull;
    const float dS = 2 * kRadius / kNs;
    const int cellsInDisk = [&] {
        int c = 0;
        for (int i = 0; i < kNs; ++i)
            for (int j = 0; j < kNs; ++j)
                if (std::hypot((i - (kNs - 1) / 2.0f) * dS, (j - (kNs - 1) / 2.0f) * dS) <= kRadius) ++c;
        return c;
    }();
    for (int mi = 0; mi < n; ++mi) {
        const auto &m = ms[mi];
        float c = std::cos(m.angle), s = std::sin(m.angle);
        std::vector<int> near;
        for (int t = 0; t < n; ++t)
            if (t != mi && std::hypot(ms[t].x - m.x, ms[t].y - m.y) <= kRadius + 3 * kSigmaS) near.push_back(t);
        // MCC's own minimum (2 neighbours). 4, chosen on FVC2002 DB2_B, dropped the cylinders of
        // sparse prints from other sensors (DB1_B EER 3.2 → 2.2 % with 2, DB2_B unchanged).
        if (near.size() < 2) continue; // too few neighbours to be distinctive
        Cylinder cyl;
        int validCells = 0;
        for (int i = 0; i < kNs; ++i)
            for (int j = 0; j < kNs; ++j) {
                float ox = (i - (kNs - 1) / 2.0f) * dS, oy = (j - (kNs - 1) / 2.0f) * dS;
                if (std::hypot(ox, oy) > kRadius) continue;
                float px = m.x + c * ox - s * oy, py = m.y + s * ox + c * oy;
                if (hull.size() >= 3 && cv::pointPolygonTest(hull, cv::Point2f(px, py), false) < 0 &&
                    cv::pointPolygonTest(hull, cv::Point2f(px, py), true) < -kOmega)
                    continue; // outside the print (its minutiae's hull grown by Ω)
                ++validCells;
                float sums[kNd] = {0};
                for (int t : near) {
                    float d = std::hypot(ms[t].x - px, ms[t].y - py);
                    if (d > 3 * kSigmaS) continue;
                    float cs = std::exp(-d * d / (2 * kSigmaS * kSigmaS)) / (kSigmaS * std::sqrt(kTwoPi));
                    const float *cd = directionTable().row(angleDiff(m.angle, ms[t].angle));
                    for (int k = 0; k < kNd; ++k) sums[k] += cs * cd[k];
                }
                for (int k = 0; k < kNd; ++k) {
                    int bit = (i * kNs + j) * kNd + k;
                    cyl.valid[bit / 64] |= uint64_t(1) << (bit % 64);
                    if (sums[k] >= kMuPsi) cyl.bits[bit / 64] |= uint64_t(1) << (bit % 64);
                }
            }
        if (validCells < int(0.75f * cellsInDisk)) continue;
        cyl.validCount = validCells * kNd;
        model.cylinders.push_back(cyl);
        model.owner.push_back(mi);
    }
    const size_t nc = model.owner.size();
    model.distance.assign(nc * nc, 0);
    model.direction.assign(nc * nc, 0);
    model.radial.assign(nc * nc, 0);
    for (size_t i = 0; i < nc; ++i)
        for (size_t j = 0; j < nc; ++j) {
            const auto &a = ms[model.owner[i]], &b = ms[model.owner[j]];
            model.distance[i * nc + j] = std::hypot(a.x - b.x, a.y - b.y);
            model.direction[i * nc + j] = angleDiff(a.angle, b.angle);
            model.radial[i * nc + j] = angleDiff(a.angle, std::atan2(b.y - a.y, b.x - a.x));
        }
}

// Distortion-tolerant compatibility (issue 26): skin stretch moves two minutiae apart or together
// in proportion to how far apart they are, and turns their directions more the longer the ridge
// path between them. The distance tolerance is therefore 5 px + 2 % of the pair's distance, the
// direction tolerance grows by 20 % per 100 px, and pairs farther apart than 200 px do not
// constrain each other at all (no single rigid relation holds that far on a distorted print):
// consistency is required within neighbourhoods, not globally. Over the four shared sets: mean EER
// 3.05 → 2.70 %, FVC2004 DB1_B FMR1000 12.50 → 11.07 % (Docs/finger-print.md, "Across sensors").
constexpr float kDistanceGrowth = 0.02f, kDirectionGrowthPer100px = 0.2f, kNeighbourhood = 200;

inline float sigmoid(float v, float mu, float tau) { return 1.0f / (1.0f + std::exp(-tau * (v - mu))); }

/// Bit-MCC similarity of two cylinders over the cells valid in both.
__attribute__((always_inline)) inline float cylinderSimilarity(const Cylinder &a, const Cylinder &b, int minCommon) {
    int common = 0, na = 0, nb = 0, diff = 0;
    for (int w = 0; w < kWords; ++w) {
        uint64_t v = a.valid[w] & b.valid[w];
        common += __builtin_popcountll(v);
        uint64_t ca = a.bits[w] & v, cb = b.bits[w] & v;
        na += __builtin_popcountll(ca);
        nb += __builtin_popcountll(cb);
        diff += __builtin_popcountll(ca ^ cb);
    }
    if (common < minCommon || na + nb == 0) return 0;
    return 1.0f - std::sqrt(float(diff)) / (std::sqrt(float(na)) + std::sqrt(float(nb)));
}

/// The local similarity matrix (cylinders of A × cylinders of B), for all pairs: MCC's limit on
/// the direction difference (δθ = 90° around 0) would make prints rotated by more than 90°
/// unmatchable, so it is applied afterwards around the voted rotation instead
/// (restrictToDominantRotation). A window centred on a rotation estimated from minutia-direction
/// histograms failed: directions cluster at θ and θ+180°, so that estimate is ambiguous.
__attribute__((always_inline)) inline void similarityMatrix(const cvis_print_model &A, const cvis_print_model &B,
                                                            float *gamma) {
    const int nA = int(A.cylinders.size()), nB = int(B.cylinders.size());
    const int minCommon = int(0.6f * kCells * 0.78f);
    for (int i = 0; i < nA; ++i)
        for (int j = 0; j < nB; ++j)
            gamma[size_t(i) * nB + j] = cylinderSimilarity(A.cylinders[i], B.cylinders[j], minCommon);
}

#if defined(__x86_64__)
// Baseline x86-64 has no POPCNT instruction (the compiler calls a slow library routine): this
// copy is compiled for CPUs with it and chosen at run time.
__attribute__((target("popcnt"))) void similarityMatrixPopcnt(const cvis_print_model &A, const cvis_print_model &B,
                                                               float *gamma) {
    similarityMatrix(A, B, gamma);
}
// With AVX-512 VPOPCNTDQ the 24-word loop vectorises (3 × 512 bits per cylinder).
__attribute__((target("popcnt,avx2,avx512f,avx512vpopcntdq"))) void
similarityMatrixAVX512(const cvis_print_model &A, const cvis_print_model &B, float *gamma) {
    similarityMatrix(A, B, gamma);
}
const bool kHasPopcnt = (__builtin_cpu_init(), __builtin_cpu_supports("popcnt"));
const bool kHasAVX512Popcnt = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
#endif

void localSimilarities(const cvis_print_model &A, const cvis_print_model &B, float *gamma) {
#if defined(__x86_64__)
    if (kHasAVX512Popcnt) return similarityMatrixAVX512(A, B, gamma);
    if (kHasPopcnt) return similarityMatrixPopcnt(A, B, gamma);
#endif
    similarityMatrix(A, B, gamma);
}

/// Rotation invariance without MCC's fixed 90° window: the most similar local pairs vote for the
/// global rotation (their direction differences, weighted by similarity — true correspondences
/// dominate the top of a genuine comparison), and pairs whose direction difference is more than
/// kRotationWindow away from it are discarded, as MCC's δθ does around 0.
void restrictToDominantRotation(const cvis_print_model &A, const cvis_print_model &B, std::vector<float> &gamma) {
    const int nB = int(B.cylinders.size());
    constexpr int kTop = 20, kBins = 32;
    std::array<std::pair<float, int>, kTop> top{};
    int filled = 0;
    for (size_t k = 0; k < gamma.size(); ++k) {
        float g = gamma[k];
        if (g <= 0 || (filled == kTop && g <= top[kTop - 1].first)) continue;
        int at = std::min(filled, kTop - 1);
        while (at > 0 && top[size_t(at - 1)].first < g) {
            if (at < kTop) top[size_t(at)] = top[size_t(at - 1)];
            --at;
        }
        top[size_t(at)] = {g, int(k)};
        filled = std::min(kTop, filled + 1);
    }
    if (filled == 0) return;
    auto rotationOf = [&](int k) {
        return wrap2pi(B.minutiae[B.owner[k % nB]].angle - A.minutiae[A.owner[k / nB]].angle);
    };
    std::array<float, kBins> votes{};
    for (int t = 0; t < filled; ++t) {
        int bin = int(rotationOf(top[size_t(t)].second) / kTwoPi * kBins) % kBins;
        votes[size_t(bin)] += top[size_t(t)].first;
        votes[size_t((bin + 1) % kBins)] += 0.5f * top[size_t(t)].first;
        votes[size_t((bin + kBins - 1) % kBins)] += 0.5f * top[size_t(t)].first;
    }
    int best = int(std::max_element(votes.begin(), votes.end()) - votes.begin());
    const float rotation = (best + 0.5f) * kTwoPi / kBins;
    for (size_t k = 0; k < gamma.size(); ++k)
        if (gamma[k] > 0 && std::abs(angleDiff(rotationOf(int(k)), rotation)) > kRotationWindow) gamma[k] = 0;
}

// Local-affine support (issue 26): relaxation ranks pairs by pairwise consistency within 200 px,
// which a distorted genuine comparison with little overlap can lose to chance look-alikes. A second,
// independent check: affine maps (scale 0.8–1.25, any rotation) through triples of the kAffineTop
// most similar candidate pairs; the best one's support is the sum of the local similarities of the
// candidate pairs it carries within 15 px and 30°. Impostors' chance pairs rarely share one such
// map. Added as kAffineWeight × support (Docs/finger-print.md, "Across sensors" item 7).
constexpr int kAffineTop = 15;
constexpr float kAffineWeight = 0.001f, kAffineTolerance = 15;

/// The best local affine map: B ≈ b0 + M (A − a0).
struct AffineMap {
    bool found = false;
    float a0x = 0, a0y = 0, b0x = 0, b0y = 0, m00 = 1, m01 = 0, m10 = 0, m11 = 1;
};

template <typename Pair>
double affineSupport(const cvis_print_model &A, const cvis_print_model &B, const std::vector<Pair> &pairs, AffineMap &map) {
    const int n = int(pairs.size()), top = std::min(kAffineTop, n);
    std::vector<float> ax(n), ay(n), aa(n), bx(n), by(n), ba(n);
    for (int t = 0; t < n; ++t) {
        const auto &a = A.minutiae[A.owner[pairs[t].a]], &b = B.minutiae[B.owner[pairs[t].b]];
        ax[t] = a.x, ay[t] = a.y, aa[t] = a.angle, bx[t] = b.x, by[t] = b.y, ba[t] = b.angle;
    }
    int bestCount = 0;
    double best = 0;
    const float tol2 = kAffineTolerance * kAffineTolerance;
    for (int i = 0; i < top; ++i)
        for (int j = i + 1; j < top; ++j)
            for (int k = j + 1; k < top; ++k) {
                const float ux = ax[j] - ax[i], uy = ay[j] - ay[i], vx = ax[k] - ax[i], vy = ay[k] - ay[i];
                const float det = ux * vy - uy * vx;
                if (std::abs(det) < 400) continue; // nearly collinear: the map is ill-defined
                const float px = bx[j] - bx[i], py = by[j] - by[i], qx = bx[k] - bx[i], qy = by[k] - by[i];
                const float i00 = vy / det, i01 = -vx / det, i10 = -uy / det, i11 = ux / det;
                const float m00 = px * i00 + qx * i10, m01 = px * i01 + qx * i11;
                const float m10 = py * i00 + qy * i10, m11 = py * i01 + qy * i11;
                const float dm = m00 * m11 - m01 * m10;
                if (dm < 0.7f || dm > 1.4f) continue;
                // Both singular values within [0.8, 1.25]: skin stretches, it does not fold.
                const float fro = m00 * m00 + m01 * m01 + m10 * m10 + m11 * m11;
                const float s1 = 0.5f * (fro + std::sqrt(std::max(0.0f, fro * fro - 4 * dm * dm)));
                if (s1 > 1.5625f || dm * dm / s1 < 0.64f) continue;
                const float rot = std::atan2(m10, m00);
                int count = 0;
                double support = 0;
                for (int t = 0; t < n; ++t) {
                    const float dx = ax[t] - ax[i], dy = ay[t] - ay[i];
                    const float ex = bx[i] + m00 * dx + m01 * dy - bx[t], ey = by[i] + m10 * dx + m11 * dy - by[t];
                    if (ex * ex + ey * ey > tol2) continue;
                    if (std::abs(angleDiff(aa[t] + rot, ba[t])) > kPi / 6) continue;
                    ++count;
                    support += pairs[t].sim;
                }
                if (count > bestCount || (count == bestCount && support > best)) {
                    bestCount = count, best = support;
                    map = {true, ax[i], ay[i], bx[i], by[i], m00, m01, m10, m11};
                }
            }
    return best;
}

// Orientation check (Docs/finger-print.md, "Across sensors" item 9). An impostor whose minutiae
// agree by chance (FVC2004 DB1_B's top impostors hold 10–17 rigid "inliers", as many as its hard
// genuine pairs) rarely has ridges running the same way over the whole overlap. Under the best
// local affine map, every usable cell of A's coarse field is carried into B; where B's cell is
// usable too, the agreement of the two directions is cos 2Δθ, weighted by both strengths. The
// similarity is scaled by the mean agreement (negative counts as 0); no map or no overlap gives 0.
// A comparison where either template has no field (version 1, ISO 19794-2 imports) is scored on
// minutiae alone, scaled so its impostor tail lies below the orientation-checked one: over the
// 11,520 impostor pairs of the four shared sets, the orientation-checked similarity is 0.71–0.83 ×
// the minutiae-only one at every tail quantile from the 90th to the maximum; 0.7 keeps the one
// FAR calibration conservative for both kinds of comparison.
constexpr float kMinutiaeOnlyScale = 0.7f;

// Near-perfect ridge flow over a large overlap (Docs/finger-print.md, "Across sensors" item 10).
// The agreement factor only ever lowers a score, so a distorted genuine comparison with few
// consistent minutia pairs stays among the impostors that share its pattern class (their flow
// agrees at 0.8–0.9). Agreement of kFlowAgreement or more over at least kFlowCells common cells
// is where the two differ: 81–97 % of the genuine comparisons of the four shared sets reach it,
// 0.4–1.3 % of the impostors. There the similarity is raised by up to kFlowBoost, in proportion
// to how far the agreement lies above kFlowAgreement and to the overlap (full at kFlowCells
// cells, 100 × 256 px² ≈ 40 % of a fingertip): evidence beside the minutiae, which still carry
// the score — no minutia similarity, no boost. Measured over neighbouring values (agreement
// 0.92–0.94, boost 0.15–0.35, cells 50–200) the gain holds; cuts of 0.88–0.90 cost DB4_B pairs.
constexpr double kFlowAgreement = 0.92, kFlowBoost = 0.25, kFlowCells = 100;

double flowBoost(double agreement, int cells) {
    if (agreement <= kFlowAgreement) return 1;
    return 1 + kFlowBoost * (agreement - kFlowAgreement) / (1 - kFlowAgreement) * std::min(1.0, cells / kFlowCells);
}

double orientationAgreement(const cvis_print_model &A, const cvis_print_model &B, const AffineMap &map, int &cells) {
    cells = 0;
    if (!map.found) return 0;
    const float C = CVIS_PRINT_FIELD_CELL;
    double sum = 0, weight = 0;
    for (int cy = 0; cy < A.fieldHeight; ++cy)
        for (int cx = 0; cx < A.fieldWidth; ++cx) {
            const size_t ka = size_t(cy) * size_t(A.fieldWidth) + size_t(cx);
            const float sa = A.fieldStrength[ka];
            if (sa == 0) continue;
            const float px = cx * C + C / 2 - map.a0x, py = cy * C + C / 2 - map.a0y;
            const float qx = map.b0x + map.m00 * px + map.m01 * py, qy = map.b0y + map.m10 * px + map.m11 * py;
            if (qx < 0 || qy < 0) continue;
            const int bx = int(qx / C), by = int(qy / C);
            if (bx >= B.fieldWidth || by >= B.fieldHeight) continue;
            const size_t kb = size_t(by) * size_t(B.fieldWidth) + size_t(bx);
            const float sb = B.fieldStrength[kb];
            if (sb == 0) continue;
            // A's ridge direction carried through the map (the map may shear), then
            // cos 2(θ' − θb) from the doubled-angle vectors.
            const float dx = map.m00 * A.fieldCos[ka] + map.m01 * A.fieldSin[ka];
            const float dy = map.m10 * A.fieldCos[ka] + map.m11 * A.fieldSin[ka];
            const float n2 = dx * dx + dy * dy;
            if (n2 <= 0) continue;
            const float agreement = ((dx * dx - dy * dy) * B.fieldRe[kb] + 2 * dx * dy * B.fieldIm[kb]) / (n2 * sb);
            sum += sa * sb * agreement;
            weight += sa * sb;
            ++cells;
        }
    return weight > 0 ? std::clamp(sum / weight, 0.0, 1.0) : 0;
}

/// MCC local similarities, one-to-one candidate pairs, relaxation (LSS-R), then the similarity:
/// the relaxed similarities of the kConsolidated most geometrically consistent pairs, summed and
/// divided by kConsolidated whatever the number of pairs there were.
void localStage(const cvis_print_model &A, const cvis_print_model &B, cvis_print_match_info &out) {
    const int nA = int(A.cylinders.size()), nB = int(B.cylinders.size());
    if (nA == 0 || nB == 0) return;
    std::vector<float> gamma(size_t(nA) * nB, 0);
    localSimilarities(A, B, gamma.data());
    restrictToDominantRotation(A, B, gamma);
    // Candidate pairs: greedy one-to-one by local similarity (LSA-like), nR = min(nA, nB).
    struct Pair {
        int a, b;
        float sim;
    };
    // Greedy one-to-one pairs in decreasing local similarity. Similarities are bucketed (1/1024
    // steps, a counting sort: O(nA·nB)) — comparison sorts of all pairs were the matcher's
    // largest cost; order within a bucket does not matter at that resolution.
    constexpr int kBuckets = 1024;
    std::array<int, kBuckets + 1> start{};
    std::vector<uint16_t> key(gamma.size());
    for (size_t k = 0; k < gamma.size(); ++k) {
        int b = gamma[k] > 0 ? std::min(kBuckets - 1, int(gamma[k] * kBuckets)) : -1;
        key[k] = uint16_t(b + 1); // 0: not a candidate
        if (b >= 0) ++start[size_t(kBuckets - 1 - b) + 1];
    }
    for (int b = 0; b < kBuckets; ++b) start[size_t(b) + 1] += start[size_t(b)];
    std::vector<int> ranked(static_cast<size_t>(start[kBuckets]));
    {
        std::array<int, kBuckets + 1> fill = start;
        for (size_t k = 0; k < gamma.size(); ++k)
            if (key[k]) ranked[size_t(fill[size_t(kBuckets - key[k])]++)] = int(k);
    }
    const int nR = std::min(nA, nB);
    std::vector<uint8_t> usedA(nA, 0), usedB(nB, 0);
    std::vector<Pair> pairs;
    for (size_t k = 0; k < ranked.size() && int(pairs.size()) < nR; ++k) {
        int a = ranked[k] / nB, b = ranked[k] % nB;
        if (usedA[a] || usedB[b]) continue;
        usedA[a] = usedB[b] = 1;
        pairs.push_back({a, b, gamma[size_t(ranked[k])]});
    }
    const int n = int(pairs.size());
    if (n < 2) return;
    // Relaxation (LSS-R): a pair keeps its similarity only if other pairs agree with its geometry
    // (distance, relative direction, radial angle).
    std::vector<float> rho(size_t(n) * n, 0);
    const size_t ncA = A.owner.size(), ncB = B.owner.size();
    for (int t = 0; t < n; ++t) {
        const size_t at = size_t(pairs[t].a), bt = size_t(pairs[t].b);
        for (int k = 0; k < n; ++k) {
            if (k == t) continue;
            const size_t ak = size_t(pairs[k].a), bk = size_t(pairs[k].b);
            // Each factor is a falling sigmoid; beyond ~10/τ past its midpoint it is < 1e-4, so the
            // product is skipped (most pairs of an impostor comparison end here).
            const float da = A.distance[at * ncA + ak], db = B.distance[bt * ncB + bk];
            const float mean = 0.5f * (da + db);
            if (mean > kNeighbourhood) continue;
            const float scale = 1.0f + kDistanceGrowth * mean / 5.0f; // tolerance 5 px + 2 % of the distance
            float d1 = std::abs(da - db) / scale;
            if (d1 > 11) continue;
            const float ascale = 1.0f + kDirectionGrowthPer100px * mean / 100.0f;
            float d2 = std::abs(angleDiff(A.direction[at * ncA + ak], B.direction[bt * ncB + bk])) / ascale;
            if (d2 > kPi / 12 + 0.35f) continue;
            float d3 = std::abs(angleDiff(A.radial[at * ncA + ak], B.radial[bt * ncB + bk]));
            if (d3 > kPi / 12 + 0.35f) continue;
            rho[size_t(t) * n + k] =
                sigmoid(d1, 5, -8.0f / 5) * sigmoid(d2, kPi / 12, -30) * sigmoid(d3, kPi / 12, -30);
        }
    }
    std::vector<float> lambda(n), next(n);
    for (int t = 0; t < n; ++t) lambda[t] = pairs[t].sim;
    const float wR = 0.5f;
    for (int it = 0; it < 5; ++it) {
        for (int t = 0; t < n; ++t) {
            float s = 0;
            for (int k = 0; k < n; ++k) s += rho[size_t(t) * n + k] * lambda[k];
            next[t] = wR * lambda[t] + (1 - wR) * s / float(n - 1);
        }
        lambda.swap(next);
    }
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int x, int y) {
        return lambda[x] / pairs[x].sim > lambda[y] / pairs[y].sim;
    });
    // MCC's n_P grew with the smaller template (4 pairs for sparse ones, 12 for rich ones) and
    // averaged over the pairs taken: a 14-minutia template then needed only 4 coincidental
    // consistent pairs for a similarity as high as a genuine mate's (FVC2002 DB1_B 103_4 scored
    // 100 against finger 102). The sum is now always divided by kConsolidated: a comparison with
    // fewer consistent pairs (a sparse template, a small overlap) is worth proportionally less.
    const int used = std::min(kConsolidated, n);
    double score = 0;
    for (int i = 0; i < used; ++i) score += lambda[order[i]];
    out.pairs = used;
    AffineMap map;
    out.similarity = score / kConsolidated + kAffineWeight * affineSupport(A, B, pairs, map);
    if (A.fieldWidth > 0 && B.fieldWidth > 0) {
        out.orientation = orientationAgreement(A, B, map, out.field_cells);
        // At most 1, the documented range (only a print against itself comes near it).
        out.similarity = std::min(1.0, out.similarity * out.orientation * flowBoost(out.orientation, out.field_cells));
    } else {
        out.similarity *= kMinutiaeOnlyScale;
    }
}


cvis_print_match_info matchDetailed(const cvis_print_model &A, const cvis_print_model &B) {
    cvis_print_match_info out{};
    out.orientation = 1;
    out.minutiae_a = int(A.minutiae.size());
    out.minutiae_b = int(B.minutiae.size());
    out.cylinders_a = int(A.cylinders.size());
    out.cylinders_b = int(B.cylinders.size());
    localStage(A, B, out);
    return out;
}

double match(const cvis_print_model &A, const cvis_print_model &B) { return matchDetailed(A, B).similarity; }

} // namespace

extern "C" {

cvis_print_model *cvis_print_model_make(const cvis_minutia *minutiae, int count, cvis_status *status) {
    return cvis_print_model_make_with_field(minutiae, count, nullptr, 0, 0, status);
}

cvis_print_model *cvis_print_model_make_with_field(const cvis_minutia *minutiae, int count, const uint8_t *field,
                                                  int field_width, int field_height, cvis_status *status) {
    cvis_print_model *result = nullptr;
    cvis_status st = guarded([&]() -> cvis_status {
        if (count < 0 || count > 10000 || (count > 0 && !minutiae)) return fail(CVIS_ERR_ARGUMENT, "bad minutiae");
        if (field_width < 0 || field_height < 0 || field_width > 4096 || field_height > 4096 ||
            (field_width > 0) != (field_height > 0) || (field_width > 0 && !field))
            return fail(CVIS_ERR_ARGUMENT, "bad orientation field");
        auto model = std::make_unique<cvis_print_model>();
        for (int i = 0; i < count; ++i) {
            const cvis_minutia &m = minutiae[i];
            if (!std::isfinite(m.x) || !std::isfinite(m.y) || !std::isfinite(m.angle))
                return fail(CVIS_ERR_ARGUMENT, "minutia is not finite");
            model->minutiae.push_back({m.x, m.y, wrap2pi(-m.angle), int(m.kind), m.quality / 100.0f});
        }
        if (field_width > 0) {
            const size_t cells = size_t(field_width) * size_t(field_height);
            model->fieldWidth = field_width, model->fieldHeight = field_height;
            model->fieldRe.resize(cells), model->fieldIm.resize(cells), model->fieldStrength.resize(cells);
            model->fieldCos.resize(cells), model->fieldSin.resize(cells);
            for (size_t k = 0; k < cells; ++k) {
                const float strength = field[2 * k + 1] / 255.0f, doubled = 2 * field[2 * k] * kPi / 256;
                model->fieldStrength[k] = strength;
                model->fieldRe[k] = strength * std::cos(doubled);
                model->fieldIm[k] = strength * std::sin(doubled);
                model->fieldCos[k] = std::cos(doubled / 2);
                model->fieldSin[k] = std::sin(doubled / 2);
            }
        }
        buildCylinders(*model);
        result = model.release();
        return CVIS_OK;
    });
    if (status) *status = st;
    return st == CVIS_OK ? result : nullptr;
}

void cvis_print_model_free(cvis_print_model *model) { delete model; }

int cvis_print_model_cylinders(const cvis_print_model *model) { return model ? int(model->cylinders.size()) : 0; }

cvis_status cvis_print_match_details(const cvis_print_model *probe, const cvis_print_model *reference,
                                     cvis_print_match_info *info) {
    if (!probe || !reference || !info) return fail(CVIS_ERR_ARGUMENT, "null argument");
    return guarded([&]() -> cvis_status {
        *info = matchDetailed(*probe, *reference);
        return CVIS_OK;
    });
}

double cvis_print_match(const cvis_print_model *probe, const cvis_print_model *reference) {
    if (!probe || !reference) return 0;
    try {
        return match(*probe, *reference);
    } catch (...) {
        return 0;
    }
}

} // extern "C"
