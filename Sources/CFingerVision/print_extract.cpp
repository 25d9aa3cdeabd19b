// Fingerprint image stages (OpenCV) behind cvis_print_extract. See Docs/finger-print.md.
//
// Extraction, all at 500 ppi:
//   rescale → segmentation (local contrast) → local normalisation → orientation (gradient tensor,
//   two-scale smoothing) → ridge period (oriented signatures) → contextual Gabor filtering →
//   binarisation → thinning (Guo–Hall) → crossing-number minutiae → spurious-minutia removal.
// The matcher is print_match.cpp.
#include "cvision_imaging.h"
#include "cvision_print.h"
#include "cvision_internal.hpp"
#include "print_angles.hpp"
#include "print_learned.hpp"

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
#include "thinning.hpp"

namespace {
using cvis::angleDiff;
using cvis::fail;
using cvis::guarded;
using cvis::kPi;
using cvis::kTwoPi;
using cvis::wrap2pi;

// MARK: - Extraction

struct Minutia {
    float x, y, angle; // angle: image convention atan2(dy, dx), y down
    int kind;          // 1 ending, 2 bifurcation
    float quality;     // 0–1
    bool removed = false;
};

constexpr int kBlock = 8; // orientation / period grid step in pixels
constexpr size_t kMaxScaledPixels = 6'000'000;
/// Local orientation coherence below which a minutia is not trusted. 0.28 was chosen on FVC2002
/// DB2_B alone; on the synthetic and 2004 sensors it threw away real minutiae in the less clear
/// half of the print (DB4_B EER 5.4 → 3.6 % at 0.20, DB2_B unchanged). 0.12 keeps smudge artefacts.
constexpr float kMinMinutiaCoherence = 0.20f;

/// Foreground: where local contrast is high. Blocks of 8 px, threshold relative to the
/// image's strong contrast (so bright, dark, dry and wet prints segment alike), then cleaned
/// by morphology and restricted to the largest component with holes filled.
cv::Mat segment(const cv::Mat &grey32, const cv::Mat &userMask) {
    cv::Mat mean, sq;
    cv::boxFilter(grey32, mean, CV_32F, cv::Size(17, 17));
    cv::boxFilter(grey32.mul(grey32), sq, CV_32F, cv::Size(17, 17));
    cv::Mat var = sq - mean.mul(mean);
    cv::Mat sd;
    cv::sqrt(cv::max(var, 0), sd);
    if (!userMask.empty()) sd.setTo(0, userMask == 0);
    std::vector<float> values(sd.begin<float>(), sd.end<float>());
    size_t k = values.size() * 95 / 100;
    std::nth_element(values.begin(), values.begin() + k, values.end());
    float strong = values[k];
    cv::Mat fg = sd > std::max(4.0f, 0.2f * strong);
    cv::Mat kernel = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(15, 15));
    cv::morphologyEx(fg, fg, cv::MORPH_CLOSE, kernel);
    cv::morphologyEx(fg, fg, cv::MORPH_OPEN, kernel);
    // Largest component, holes filled.
    cv::Mat labels, stats, centroids;
    int n = cv::connectedComponentsWithStats(fg, labels, stats, centroids, 8, CV_32S);
    int best = 0, bestArea = 0;
    for (int i = 1; i < n; ++i)
        if (stats.at<int>(i, cv::CC_STAT_AREA) > bestArea) bestArea = stats.at<int>(i, cv::CC_STAT_AREA), best = i;
    cv::Mat out = cv::Mat::zeros(fg.size(), CV_8U);
    if (best == 0) return out;
    out = labels == best;
    std::vector<std::vector<cv::Point>> contours;
    cv::findContours(out.clone(), contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
    out.setTo(0);
    cv::drawContours(out, contours, -1, cv::Scalar(255), cv::FILLED);
    if (!userMask.empty()) out.setTo(0, userMask == 0);
    return out;
}

/// Zero mean, unit variance over a 33-px neighbourhood: removes pressure and illumination.
cv::Mat normalise(const cv::Mat &grey32) {
    cv::Mat mean, sq;
    cv::GaussianBlur(grey32, mean, cv::Size(0, 0), 8);
    cv::GaussianBlur(grey32.mul(grey32), sq, cv::Size(0, 0), 8);
    cv::Mat sd;
    cv::sqrt(cv::max(sq - mean.mul(mean), 1.0), sd);
    return (grey32 - mean) / sd;
}

struct OrientationField {
    cv::Mat theta;     // ridge direction, [0, π), per pixel
    cv::Mat coherence; // 0–1
};

/// Ridge orientation from the smoothed gradient structure tensor. Gradients come from a lightly
/// blurred image (pores and noise), the tensor is averaged at σ = 5 px (≈ half a ridge period),
/// then the doubled-angle field is smoothed again at σ = 9 px so scars and creases are bridged.
OrientationField orientation(const cv::Mat &norm) {
    cv::Mat blurred, gx, gy;
    cv::GaussianBlur(norm, blurred, cv::Size(0, 0), 1.0);
    cv::Sobel(blurred, gx, CV_32F, 1, 0, 3);
    cv::Sobel(blurred, gy, CV_32F, 0, 1, 3);
    cv::Mat gxx = gx.mul(gx), gyy = gy.mul(gy), gxy = gx.mul(gy);
    cv::GaussianBlur(gxx, gxx, cv::Size(0, 0), 5);
    cv::GaussianBlur(gyy, gyy, cv::Size(0, 0), 5);
    cv::GaussianBlur(gxy, gxy, cv::Size(0, 0), 5);
    cv::Mat c2 = gxx - gyy, s2 = 2 * gxy;
    cv::Mat energy = gxx + gyy;
    OrientationField field;
    cv::Mat mag;
    cv::magnitude(c2, s2, mag);
    field.coherence = mag / (energy + 1e-6);
    // Second smoothing of the doubled-angle vectors (weighted by their strength).
    // σ = 9 px: 6 was chosen on FVC2002 DB2_B alone; the wider smoothing bridges the creases
    // and the distortion of FVC2004 DB1_B (EER 6.8 → 4.7 % together with the two changes above).
    cv::GaussianBlur(c2, c2, cv::Size(0, 0), 9);
    cv::GaussianBlur(s2, s2, cv::Size(0, 0), 9);
    field.theta = cv::Mat(norm.size(), CV_32F);
    for (int y = 0; y < norm.rows; ++y) {
        const float *pc = c2.ptr<float>(y), *ps = s2.ptr<float>(y);
        float *pt = field.theta.ptr<float>(y);
        for (int x = 0; x < norm.cols; ++x) {
            // Gradient direction is 0.5·atan2(s2, c2); ridges run perpendicular to it.
            float t = 0.5f * std::atan2(ps[x], pc[x]) + kPi / 2;
            if (t >= kPi) t -= kPi;
            pt[x] = t;
        }
    }
    return field;
}

/// Local ridge period (pixels) from oriented signatures: grey levels averaged along the ridges
/// and sampled across them in a 32-px window; the spacing of successive minima is the period.
/// Blocks without a clean signature take the median of the valid ones; the grid is then smoothed.
cv::Mat ridgePeriod(const cv::Mat &norm, const cv::Mat &theta, const cv::Mat &fg, float *medianOut, float *periodicOut) {
    int gw = (norm.cols + kBlock - 1) / kBlock, gh = (norm.rows + kBlock - 1) / kBlock;
    cv::Mat grid(gh, gw, CV_32F, cv::Scalar(0));
    std::vector<float> valid;
    int tried = 0;
    cv::Mat smooth;
    cv::GaussianBlur(norm, smooth, cv::Size(0, 0), 1.0);
    for (int by = 0; by < gh; ++by)
        for (int bx = 0; bx < gw; ++bx) {
            int cx = bx * kBlock + kBlock / 2, cy = by * kBlock + kBlock / 2;
            if (cx >= norm.cols || cy >= norm.rows || !fg.at<uint8_t>(cy, cx)) continue;
            ++tried;
            float t = theta.at<float>(cy, cx);
            float rx = std::cos(t), ry = std::sin(t), nx = -ry, ny = rx;
            float sig[33];
            bool ok = true;
            for (int k = -16; k <= 16 && ok; ++k) {
                float sum = 0;
                int cnt = 0;
                for (int l = -5; l <= 5; ++l) {
                    int x = int(std::lround(cx + k * nx + l * rx)), y = int(std::lround(cy + k * ny + l * ry));
                    if (x < 0 || y < 0 || x >= norm.cols || y >= norm.rows) continue;
                    sum += smooth.at<float>(y, x);
                    ++cnt;
                }
                if (cnt < 4) ok = false;
                sig[k + 16] = cnt ? sum / cnt : 0;
            }
            if (!ok) continue;
            std::vector<int> minima;
            float amp = 0;
            for (int i = 1; i < 32; ++i)
                if (sig[i] < sig[i - 1] && sig[i] <= sig[i + 1]) minima.push_back(i);
            for (int i = 0; i < 33; ++i) amp = std::max(amp, std::abs(sig[i]));
            if (minima.size() < 2 || amp < 0.3f) continue;
            float period = float(minima.back() - minima.front()) / float(minima.size() - 1);
            if (period < 5.5f || period > 15.f) continue;
            grid.at<float>(by, bx) = period;
            valid.push_back(period);
        }
    float median = 9.0f;
    if (!valid.empty()) {
        std::nth_element(valid.begin(), valid.begin() + valid.size() / 2, valid.end());
        median = valid[valid.size() / 2];
    }
    *medianOut = median;
    *periodicOut = tried ? float(valid.size()) / float(tried) : 0;
    // Fill the gaps with the median, then smooth (periods change slowly across a finger).
    cv::Mat weight = grid > 0;
    weight.convertTo(weight, CV_32F, 1.0 / 255);
    cv::Mat filled = grid.clone();
    filled.setTo(median, grid == 0);
    cv::Mat num, den;
    cv::GaussianBlur(grid, num, cv::Size(0, 0), 2.0);
    cv::GaussianBlur(weight, den, cv::Size(0, 0), 2.0);
    for (int y = 0; y < gh; ++y)
        for (int x = 0; x < gw; ++x) {
            float d = den.at<float>(y, x), v = d > 0.2f ? num.at<float>(y, x) / d : median;
            filled.at<float>(y, x) = std::min(14.f, std::max(6.f, v));
        }
    cv::Mat full;
    cv::resize(filled, full, cv::Size(gw * kBlock, gh * kBlock), 0, 0, cv::INTER_LINEAR);
    return full(cv::Rect(0, 0, norm.cols, norm.rows)).clone();
}

/// Even-symmetric Gabor kernels tuned to ridge direction and period, quantised to 16 directions
/// and periods 6–14 px in 0.5 px steps. Built once (thread-safe static initialisation).
struct GaborBank {
    static constexpr int kRadius = 11, kSide = 2 * kRadius + 1, kDirections = 16, kPeriods = 17;
    std::vector<float> kernels; // [direction][period][kSide*kSide]
    GaborBank() {
        kernels.resize(size_t(kDirections) * kPeriods * kSide * kSide);
        for (int d = 0; d < kDirections; ++d)
            for (int p = 0; p < kPeriods; ++p) {
                float theta = d * kPi / kDirections, period = 6.0f + 0.5f * p;
                float sigmaAlong = 4.5f, sigmaAcross = 0.42f * period;
                float *k = &kernels[(size_t(d) * kPeriods + p) * kSide * kSide];
                double sum = 0;
                for (int v = -kRadius; v <= kRadius; ++v)
                    for (int u = -kRadius; u <= kRadius; ++u) {
                        float along = u * std::cos(theta) + v * std::sin(theta);
                        float across = -u * std::sin(theta) + v * std::cos(theta);
                        float g = std::exp(-0.5f * (along * along / (sigmaAlong * sigmaAlong) +
                                                    across * across / (sigmaAcross * sigmaAcross))) *
                                  std::cos(kTwoPi * across / period);
                        k[(v + kRadius) * kSide + u + kRadius] = g;
                        sum += g;
                    }
                // Zero DC so flat areas give no response.
                float mean = float(sum / (kSide * kSide));
                for (int i = 0; i < kSide * kSide; ++i) k[i] -= mean;
            }
    }
    const float *kernel(float theta, float period) const {
        int d = int(std::lround(theta / kPi * kDirections)) % kDirections;
        int p = std::min(kPeriods - 1, std::max(0, int(std::lround((period - 6.0f) * 2))));
        return &kernels[(size_t(d) * kPeriods + p) * kSide * kSide];
    }
};

const GaborBank &gaborBank() {
    static const GaborBank bank;
    return bank;
}

/// Contextual filtering: each foreground pixel is convolved with the Gabor kernel matching its
/// local ridge direction and period, so ridges are joined along their flow and separated across it.
cv::Mat enhance(const cv::Mat &norm, const cv::Mat &theta, const cv::Mat &period, const cv::Mat &fg) {
    const GaborBank &bank = gaborBank();
    constexpr int R = GaborBank::kRadius, S = GaborBank::kSide;
    cv::Mat padded;
    cv::copyMakeBorder(norm, padded, R, R, R, R, cv::BORDER_REFLECT);
    cv::Mat out(norm.size(), CV_32F, cv::Scalar(0));
    for (int y = 0; y < norm.rows; ++y) {
        const uint8_t *pm = fg.ptr<uint8_t>(y);
        float *po = out.ptr<float>(y);
        for (int x = 0; x < norm.cols; ++x) {
            if (!pm[x]) continue;
            const float *k = bank.kernel(theta.at<float>(y, x), period.at<float>(y, x));
            float acc = 0;
            for (int v = 0; v < S; ++v) {
                const float *row = padded.ptr<float>(y + v) + x;
                const float *kr = k + v * S;
                for (int u = 0; u < S; ++u) acc += row[u] * kr[u];
            }
            po[x] = acc;
        }
    }
    return out;
}

const int kDx[8] = {1, 1, 0, -1, -1, -1, 0, 1};
const int kDy[8] = {0, 1, 1, 1, 0, -1, -1, -1};

inline bool on(const cv::Mat &skel, int x, int y) {
    return x >= 0 && y >= 0 && x < skel.cols && y < skel.rows && skel.at<uint8_t>(y, x);
}

/// Crossing number: half the number of 0→1 transitions around the 8-neighbourhood.
int crossingNumber(const cv::Mat &skel, int x, int y) {
    int t = 0;
    for (int i = 0; i < 8; ++i) {
        bool a = on(skel, x + kDx[i], y + kDy[i]), b = on(skel, x + kDx[(i + 1) % 8], y + kDy[(i + 1) % 8]);
        if (!a && b) ++t;
    }
    return t;
}

struct Trace {
    cv::Point end;
    int length = 0;
    bool hitMinutia = false; // stopped at another ending or fork
    bool hitEnd = false;     // skeleton stopped (an ending)
};

/// Follows a skeleton branch from `start` (a neighbour of `origin`) for up to `maxLength` pixels,
/// stopping at the next minutia. `cn` holds each skeleton pixel's crossing number.
Trace follow(const cv::Mat &skel, const cv::Mat &cn, cv::Point origin, cv::Point start, int maxLength) {
    Trace t;
    cv::Point prev = origin, cur = start;
    cv::Point prev2 = origin;
    for (t.length = 1; t.length < maxLength; ++t.length) {
        int c = cn.at<uint8_t>(cur.y, cur.x);
        if (c != 2) {
            t.hitMinutia = c == 1 || c >= 3;
            t.hitEnd = c == 1;
            break;
        }
        cv::Point next(-1, -1);
        // Prefer 4-neighbours (thinned skeletons touch diagonally at corners).
        for (int pass = 0; pass < 2 && next.x < 0; ++pass)
            for (int i = pass; i < 8; i += 2) {
                cv::Point q(cur.x + kDx[i], cur.y + kDy[i]);
                if (q == prev || q == prev2 || !on(skel, q.x, q.y)) continue;
                if (std::abs(q.x - prev.x) <= 1 && std::abs(q.y - prev.y) <= 1) continue; // corner of prev
                next = q;
                break;
            }
        if (next.x < 0) break;
        prev2 = prev;
        prev = cur;
        cur = next;
    }
    t.end = cur;
    return t;
}

/// Starting pixels of the branches leaving (x, y): the first skeleton pixel after each gap.
std::vector<cv::Point> branchStarts(const cv::Mat &skel, int x, int y) {
    std::vector<cv::Point> starts;
    for (int i = 0; i < 8; ++i) {
        int p = (i + 7) % 8;
        if (!on(skel, x + kDx[p], y + kDy[p]) && on(skel, x + kDx[i], y + kDy[i])) {
            // Prefer the 4-neighbour within this run of set pixels.
            int best = i;
            for (int j = i; on(skel, x + kDx[j % 8], y + kDy[j % 8]) && j < i + 8; ++j)
                if ((j % 8) % 2 == 0) {
                    best = j % 8;
                    break;
                }
            starts.emplace_back(x + kDx[best], y + kDy[best]);
        }
    }
    return starts;
}

float sampleMean(const cv::Mat &m, int x, int y, int r) {
    cv::Rect box(x - r, y - r, 2 * r + 1, 2 * r + 1);
    box &= cv::Rect(0, 0, m.cols, m.rows);
    return float(cv::mean(m(box))[0]);
}

struct Extraction {
    std::vector<Minutia> minutiae;
    cv::Mat enhanced, skeleton;
    int width = 0, height = 0;
    int quality = 0;
    float foreground = 0, period = 9, periodic = 0;
    std::vector<uint8_t> field; // coarse orientation field (orientationCells), 2 bytes per cell
};

/// Coarse orientation field for the matcher's orientation check (Docs/finger-print.md, "Across
/// sensors" item 9): per CVIS_PRINT_FIELD_CELL-px cell of the 500-ppi print, row-major, two bytes —
/// the coherence-weighted mean ridge direction in π/256 steps (y down, as the minutiae) and its
/// strength (|mean doubled-angle vector| × 255, at least 1); both 0 where less than half the cell
/// is usable print.
std::vector<uint8_t> orientationCells(const cv::Mat &usable, const OrientationField &field) {
    const int C = CVIS_PRINT_FIELD_CELL;
    const int fw = (usable.cols + C - 1) / C, fh = (usable.rows + C - 1) / C;
    std::vector<uint8_t> out(size_t(fw) * size_t(fh) * 2, 0);
    for (int cy = 0; cy < fh; ++cy)
        for (int cx = 0; cx < fw; ++cx) {
            double sc = 0, ss = 0;
            int n = 0;
            for (int y = cy * C; y < std::min(usable.rows, cy * C + C); ++y) {
                const uint8_t *pu = usable.ptr<uint8_t>(y);
                const float *pt = field.theta.ptr<float>(y), *pc = field.coherence.ptr<float>(y);
                for (int x = cx * C; x < std::min(usable.cols, cx * C + C); ++x) {
                    if (!pu[x]) continue;
                    sc += pc[x] * std::cos(2 * pt[x]);
                    ss += pc[x] * std::sin(2 * pt[x]);
                    ++n;
                }
            }
            if (n < C * C / 2) continue;
            double a = 0.5 * std::atan2(ss, sc);
            if (a < 0) a += kPi;
            const size_t k = (size_t(cy) * size_t(fw) + size_t(cx)) * 2;
            out[k] = uint8_t(std::lround(a / kPi * 256) & 255);
            out[k + 1] = uint8_t(std::clamp(std::lround(std::hypot(sc, ss) / n * 255), 1L, 255L));
        }
    return out;
}

Extraction extract(const cv::Mat &input, int ppi, const cv::Mat &inputMask, bool wantImages,
                   cvis_print_learned *learned = nullptr, float threshold = 0) {
    Extraction result;
    double scale = 500.0 / ppi;
    cv::Mat grey, mask;
    if (std::abs(scale - 1) < 1e-3) {
        grey = input;
        mask = inputMask;
    } else {
        cv::Size size(int(std::lround(input.cols * scale)), int(std::lround(input.rows * scale)));
        cv::resize(input, grey, size, 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
        if (!inputMask.empty()) cv::resize(inputMask, mask, grey.size(), 0, 0, cv::INTER_NEAREST);
    }
    result.width = grey.cols;
    result.height = grey.rows;
    cv::Mat g32;
    grey.convertTo(g32, CV_32F);
    cv::Mat fg = segment(g32, mask);
    result.foreground = float(cv::countNonZero(fg)) / float(fg.total());
    if (result.foreground < 0.02f) return result;

    cv::Mat norm = normalise(g32);
    OrientationField field = orientation(norm);
    cv::Mat period = ridgePeriod(norm, field.theta, fg, &result.period, &result.periodic);

    // Low-coherence foreground (smudges, creases, cores are small) stays; really chaotic areas go.
    cv::Mat cohSmooth;
    cv::GaussianBlur(field.coherence, cohSmooth, cv::Size(0, 0), 6);
    cv::Mat usable = fg & (cohSmooth > 0.12f);

    result.field = orientationCells(usable, field);

    // Image quality: mean clarity (coherence) of the usable area, times how much print there is
    // (a full 500-ppi fingertip is ≈ 60,000 px).
    double meanCoh = fg.empty() ? 0 : cv::mean(field.coherence, fg)[0];
    double clarity = std::min(1.0, std::max(0.0, (meanCoh - 0.15) / 0.5));
    double area = std::min(1.0, cv::countNonZero(usable) / 60000.0);
    result.quality = int(std::lround(100 * clarity * std::sqrt(area)));

    if (learned) {
        // The network finds the minutiae (inside the segmented print); the classical stages
        // below would only be needed for the debug images.
        for (const cvis::LearnedMinutia &m : cvis::learnedMinutiae(learned, grey, fg, threshold, CVIS_PRINT_LEARNED_MAX_PIXELS)) {
            Minutia mm;
            mm.x = m.x, mm.y = m.y, mm.angle = m.angle, mm.kind = m.kind, mm.quality = m.quality;
            result.minutiae.push_back(mm);
        }
        if (!wantImages) return result;
    }

    // The Gabor enhancement serves only the classical minutiae and the debug images: a learned
    // extraction skips it (~45 ms a print, two thirds of the classical stages' time).
    cv::Mat enhanced = enhance(norm, field.theta, period, fg);
    cv::Mat ridges = (enhanced < 0) & usable; // ridges are dark: negative after filtering
    // Drop specks and fill pores: components below 30 px.
    {
        cv::Mat labels, stats, centroids;
        for (int pass = 0; pass < 2; ++pass) {
            cv::Mat target = pass == 0 ? ridges : ((ridges == 0) & usable);
            int n = cv::connectedComponentsWithStats(target, labels, stats, centroids, 8, CV_32S);
            std::vector<uint8_t> small(n, 0);
            for (int i = 1; i < n; ++i) small[i] = stats.at<int>(i, cv::CC_STAT_AREA) < 30;
            for (int y = 0; y < ridges.rows; ++y) {
                const int *pl = labels.ptr<int>(y);
                uint8_t *pr = ridges.ptr<uint8_t>(y);
                for (int x = 0; x < ridges.cols; ++x)
                    if (pl[x] && small[pl[x]]) pr[x] = pass == 0 ? 0 : 255;
            }
        }
    }
    cv::Mat skel;
    cvis::thinning_guo_hall(ridges, skel);
    skel = skel > 0;

    cv::Mat cn(skel.size(), CV_8U, cv::Scalar(0));
    for (int y = 0; y < skel.rows; ++y)
        for (int x = 0; x < skel.cols; ++x)
            if (skel.at<uint8_t>(y, x)) cn.at<uint8_t>(y, x) = uint8_t(crossingNumber(skel, x, y));

    // Distance to the edge of the usable area: minutiae near it are mostly ridges cut by the border.
    cv::Mat border;
    cv::Mat usablePad;
    cv::copyMakeBorder(usable, usablePad, 1, 1, 1, 1, cv::BORDER_CONSTANT, 0);
    cv::distanceTransform(usablePad, border, cv::DIST_L2, 3);
    border = border(cv::Rect(1, 1, usable.cols, usable.rows));

    const float P = result.period;
    std::vector<Minutia> found;
    std::vector<std::vector<Trace>> traces;
    for (int y = 1; y < skel.rows - 1; ++y)
        for (int x = 1; x < skel.cols - 1; ++x) {
            int c = cn.at<uint8_t>(y, x);
            if (c != 1 && c != 3) continue;
            if (border.at<float>(y, x) < 0.8f * P) continue;
            std::vector<cv::Point> starts = branchStarts(skel, x, y);
            if ((c == 1 && starts.size() != 1) || (c == 3 && starts.size() != 3)) continue;
            std::vector<Trace> tr;
            for (auto &s : starts) tr.push_back(follow(skel, cn, {x, y}, s, int(1.6f * P)));
            Minutia m{float(x), float(y), 0, c == 1 ? 1 : 2, 0};
            float ridgeTheta = field.theta.at<float>(y, x);
            float traced;
            if (c == 1) {
                traced = std::atan2(float(y - tr[0].end.y), float(x - tr[0].end.x)); // away from the ridge
            } else {
                float dir[3];
                for (int i = 0; i < 3; ++i) dir[i] = std::atan2(float(tr[i].end.y - y), float(tr[i].end.x - x));
                int stem = 0;
                float bestGap = -1;
                for (int i = 0; i < 3; ++i) {
                    float gap = std::min(std::abs(angleDiff(dir[i], dir[(i + 1) % 3])),
                                         std::abs(angleDiff(dir[i], dir[(i + 2) % 3])));
                    if (gap > bestGap) bestGap = gap, stem = i;
                }
                traced = dir[stem]; // towards the stem (the dual of an ending's "away from the ridge")
            }
            // Orientation field angle (smooth) with the direction the traced branches give.
            float a = ridgeTheta;
            if (std::abs(angleDiff(a, traced)) > kPi / 2) a += kPi;
            m.angle = wrap2pi(a);
            float coh = sampleMean(cohSmooth, x, y, 6);
            // Where the ridge flow is unclear (smudges, dark wet patches, creases) the Gabor filter
            // invents plausible ridges and their endings are noise: such minutiae are dropped.
            if (coh < kMinMinutiaCoherence) continue;
            float edge = std::min(1.0f, border.at<float>(y, x) / (3 * P));
            m.quality = std::min(1.0f, std::max(0.0f, (coh - 0.1f) / 0.6f)) * (0.5f + 0.5f * edge);
            found.push_back(m);
            traces.push_back(tr);
        }

    // Spurious-minutia removal.
    auto index = [&](cv::Point p) -> int {
        for (size_t i = 0; i < found.size(); ++i)
            if (std::abs(found[i].x - p.x) <= 1 && std::abs(found[i].y - p.y) <= 1) return int(i);
        return -1;
    };
    for (size_t i = 0; i < found.size(); ++i) {
        for (auto &t : traces[i]) {
            if (!t.hitMinutia || t.length > int(1.5f * P)) continue;
            // A short branch between two minutiae: a spur, bridge, short ridge or hole.
            found[i].removed = true;
            int j = index(t.end);
            if (j >= 0) found[size_t(j)].removed = true;
        }
    }
    // Broken ridges: two endings facing each other across a small gap.
    for (size_t i = 0; i < found.size(); ++i)
        for (size_t j = i + 1; j < found.size(); ++j) {
            Minutia &a = found[i], &b = found[j];
            float dx = b.x - a.x, dy = b.y - a.y, d = std::hypot(dx, dy);
            if (d > 2.0f * P) continue;
            if (a.kind == 1 && b.kind == 1) {
                float facing = std::abs(angleDiff(a.angle, b.angle + kPi));
                float line = std::abs(angleDiff(std::atan2(dy, dx), a.angle));
                if (facing < kPi / 4 && line < kPi / 3) a.removed = b.removed = true;
            }
            if (d < 0.6f * P) a.removed = b.removed = true; // clusters / noise
        }
    std::vector<Minutia> kept;
    for (auto &m : found)
        if (!m.removed) kept.push_back(m);
    // Crowded spots: more than 3 others within one ridge period are noise.
    std::vector<Minutia> clean;
    for (auto &m : kept) {
        int n = 0;
        for (auto &o : kept)
            if (&o != &m && std::hypot(o.x - m.x, o.y - m.y) < 1.2f * P) ++n;
        if (n < 3) clean.push_back(m);
    }
    std::sort(clean.begin(), clean.end(), [](const Minutia &a, const Minutia &b) { return a.quality > b.quality; });
    if (!learned) result.minutiae = clean;

    if (wantImages) {
        cv::Mat e;
        cv::normalize(enhanced, e, 0, 255, cv::NORM_MINMAX, CV_8U, fg);
        e.setTo(255, fg == 0);
        result.enhanced = e;
        result.skeleton = skel;
    }
    return result;
}

cvis_status extractTo(const uint8_t *grey, int width, int height, int ppi, const uint8_t *mask, cvis_minutia *out,
                      int capacity, cvis_print_info *info, uint8_t *enhanced, uint8_t *skeleton, uint8_t *field,
                      cvis_print_learned *learned = nullptr, float threshold = 0) {
    cv::Mat g(height, width, CV_8UC1, const_cast<uint8_t *>(grey));
    cv::Mat m;
    if (mask) m = cv::Mat(height, width, CV_8UC1, const_cast<uint8_t *>(mask));
    Extraction e = extract(g, ppi, m, enhanced || skeleton, learned, threshold);
    info->width = e.width;
    info->height = e.height;
    info->quality = e.quality;
    info->foreground = e.foreground;
    info->ridge_period = e.period;
    info->periodic = e.periodic;
    info->count = int(std::min<size_t>(e.minutiae.size(), CVIS_PRINT_MAX_MINUTIAE));
    for (int i = 0; i < std::min(capacity, info->count); ++i) {
        const Minutia &mm = e.minutiae[size_t(i)];
        out[i].x = mm.x;
        out[i].y = mm.y;
        out[i].angle = wrap2pi(-mm.angle); // on-screen counter-clockwise
        out[i].kind = uint8_t(mm.kind);
        out[i].quality = uint8_t(std::lround(100 * mm.quality));
    }
    if (field) {
        const size_t bytes = cvis_print_field_size(width, height, ppi);
        std::memset(field, 0, bytes);
        std::memcpy(field, e.field.data(), std::min(bytes, e.field.size()));
    }
    cv::Size size(e.width, e.height);
    if (enhanced) {
        cv::Mat dst(size, CV_8UC1, enhanced);
        if (e.enhanced.empty()) dst.setTo(255); else e.enhanced.copyTo(dst);
    }
    if (skeleton) {
        cv::Mat dst(size, CV_8UC1, skeleton);
        if (e.skeleton.empty()) dst.setTo(0); else e.skeleton.copyTo(dst);
    }
    return CVIS_OK;
}

} // namespace

extern "C" {

size_t cvis_print_scaled_size(int width, int height, int ppi) {
    if (width <= 0 || height <= 0 || ppi <= 0) return 0;
    double scale = 500.0 / ppi;
    if (std::abs(scale - 1) < 1e-3) return size_t(width) * size_t(height);
    return size_t(std::lround(width * scale)) * size_t(std::lround(height * scale)); // as extract() resizes
}

size_t cvis_print_field_size(int width, int height, int ppi) {
    if (width <= 0 || height <= 0 || ppi <= 0) return 0;
    int w = width, h = height;
    if (std::abs(500.0 / ppi - 1) >= 1e-3) w = int(std::lround(width * 500.0 / ppi)), h = int(std::lround(height * 500.0 / ppi));
    const int C = CVIS_PRINT_FIELD_CELL;
    return size_t((w + C - 1) / C) * size_t((h + C - 1) / C) * 2;
}

static cvis_status checkInput(const uint8_t *grey, int width, int height, int ppi, cvis_minutia *out, int capacity,
                              cvis_print_info *info) {
    if (!grey || !info || width < 32 || height < 32 || width > 8192 || height > 8192)
        return fail(CVIS_ERR_ARGUMENT, "bad print geometry");
    if (ppi < 100 || ppi > 2000) return fail(CVIS_ERR_ARGUMENT, "resolution out of range");
    if (capacity < 0 || (capacity > 0 && !out)) return fail(CVIS_ERR_ARGUMENT, "no minutia buffer");
    // At 500 ppi a four-finger slap is ≈ 2.4 Mpx; beyond 6 Mpx the per-pixel stages would take
    // seconds and hundreds of MB, so such input is refused rather than tying up the daemon.
    if (cvis_print_scaled_size(width, height, ppi) > kMaxScaledPixels)
        return fail(CVIS_ERR_ARGUMENT, "print too large: more than 6 Mpx at 500 ppi");
    return CVIS_OK;
}

cvis_status cvis_print_extract(const uint8_t *grey, int width, int height, int ppi, const uint8_t *mask,
                               cvis_minutia *out, int capacity, cvis_print_info *info, uint8_t *enhanced,
                               uint8_t *skeleton, uint8_t *field) {
    cvis_status s = checkInput(grey, width, height, ppi, out, capacity, info);
    if (s != CVIS_OK) return s;
    return guarded([&]() { return extractTo(grey, width, height, ppi, mask, out, capacity, info, enhanced, skeleton, field); });
}

cvis_status cvis_print_extract_learned(const uint8_t *grey, int width, int height, int ppi, const uint8_t *mask,
                                       cvis_print_learned *learned, float threshold, cvis_minutia *out, int capacity,
                                       cvis_print_info *info, uint8_t *field) {
    cvis_status s = checkInput(grey, width, height, ppi, out, capacity, info);
    if (s != CVIS_OK) return s;
    if (!(threshold > 0 && threshold < 1)) return fail(CVIS_ERR_ARGUMENT, "learned threshold out of range");
    return guarded([&]() {
        return extractTo(grey, width, height, ppi, mask, out, capacity, info, nullptr, nullptr, field, learned, threshold);
    });
}

} // extern "C"
