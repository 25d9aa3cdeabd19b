// Camera side of the finger pipeline behind cvision_hand.h: finding fingers in a frame (skin mask,
// outline, fingertips with parallel sides), fingertip prints at 500 ppi with quality measures.
// The synthetic hand scenes of the tests are CHandScene's (Tests/Support/CHandScene).
#include "cvision_hand.h"
#include "cvision_internal.hpp"
#include "finger_internal.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

using cvis::fail;
using cvis::guarded;
using cvis::finger::mat_of;
using cvis::finger::view_ok;

namespace {

constexpr float kPi = 3.14159265f;

// Adult finger widths at the distal phalanx (mm), thumb..little: the same constants the print
// conversion uses to turn a measured width in pixels into a resolution.
constexpr float kNominalWidthMM[5] = {20.0f, 17.0f, 17.0f, 16.0f, 14.5f};

} // namespace

extern "C" {

float cvis_hand_nominal_width_mm(int digit) { return (digit >= 0 && digit < 5) ? kNominalWidthMM[digit] : 17.0f; }

} // extern "C"

// ---------------------------------------------------------------------------------------------
// Finding fingers (cvis_hand_find_fingers): skin mask → outline → fingertips as the points from
// which the outline runs down two parallel sides (a finger) for at least ~one finger width.
// ---------------------------------------------------------------------------------------------
namespace {

constexpr int kWorkWidth = 640; // frames are analysed at most this wide

struct Candidate {
    cv::Point2f tip, dir; // dir: base → tip
    float width = 0, length = 0, score = 0;
    int index = 0; // contour point
};

} // namespace

struct cvis_hand_engine {
    cv::Mat small, ycrcb, mask, hsv, tmp, edges; // working-scale planes, reused
    std::vector<std::vector<cv::Point>> contours;
    std::vector<cv::Point2f> outline;
    cvis_hand_stats stats{};
    float workScale = 1; // work pixels per frame pixel
    int lastKind = 0;    // skin hypothesis that explained the last frame best
};

namespace {

void clean_mask(cv::Mat &m) {
    cv::Mat k3 = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(3, 3));
    cv::Mat k5 = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(5, 5));
    cv::morphologyEx(m, m, cv::MORPH_OPEN, k3);
    cv::morphologyEx(m, m, cv::MORPH_CLOSE, k5);
}

// Skin hypotheses for a BGR image at working scale, most general first: (0) a broad YCrCb box,
// (1) a Mahalanobis ellipse around the chroma that box found (adapts to the light and the skin
// tone), (2) Otsu on Cr (skin is redder than most backgrounds), (3) Otsu on brightness. The one
// whose outline explains the most finger-like shapes wins (see cvis_hand_find_fingers).
// (4) and (5) are (0) and (1) cut along strong edges, for skin-coloured backgrounds (beige walls,
// wooden furniture) where only an edge separates the hand from what is behind it.
void skin_mask_colour(cvis_hand_engine &e, int kind) {
    if (kind >= 4) {
        skin_mask_colour(e, kind - 4);
        if (e.edges.size() != e.small.size()) {
            cv::Mat y;
            cv::extractChannel(e.ycrcb, y, 0);
            cv::GaussianBlur(y, y, cv::Size(5, 5), 0);
            cv::Canny(y, e.edges, 30, 90);
            cv::dilate(e.edges, e.edges, cv::Mat());
        }
        e.mask.setTo(0, e.edges);
        cv::morphologyEx(e.mask, e.mask, cv::MORPH_OPEN, cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(3, 3)));
        return;
    }
    cv::Mat broad;
    cv::inRange(e.ycrcb, cv::Scalar(40, 136, 77), cv::Scalar(250, 180, 128), broad);
    int count = cv::countNonZero(broad);
    e.mask = broad;
    if (kind == 2) {
        cv::Mat cr;
        cv::extractChannel(e.ycrcb, cr, 1);
        cv::GaussianBlur(cr, cr, cv::Size(5, 5), 0);
        cv::threshold(cr, e.mask, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU);
    } else if (kind == 3) {
        cv::Mat y;
        cv::extractChannel(e.ycrcb, y, 0);
        cv::GaussianBlur(y, y, cv::Size(5, 5), 0);
        cv::threshold(y, e.mask, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU);
    } else if (kind == 1 && count > int(broad.total() / 400)) {
        cv::Mat planes[3];
        cv::split(e.ycrcb, planes);
        cv::Scalar mCr, sCr, mCb, sCb;
        cv::meanStdDev(planes[1], mCr, sCr, broad);
        cv::meanStdDev(planes[2], mCb, sCb, broad);
        // Correlation of Cr and Cb inside the broad mask.
        cv::Mat cr, cb;
        planes[1].convertTo(cr, CV_32F, 1, -mCr[0]);
        planes[2].convertTo(cb, CV_32F, 1, -mCb[0]);
        double cov = cv::mean(cr.mul(cb), broad)[0];
        double vr = std::max(sCr[0] * sCr[0], 4.0), vb = std::max(sCb[0] * sCb[0], 4.0);
        double det = vr * vb - cov * cov;
        if (det > 1) {
            // d² = [cr cb] Σ⁻¹ [cr cb]ᵀ < 3.2² (generous: the broad box is a crude start)
            cv::Mat d2 = (cr.mul(cr) * vb - cr.mul(cb) * (2 * cov) + cb.mul(cb) * vr) / det;
            cv::Mat adaptive = (d2 < 10.0) & (planes[0] > 30);
            e.mask = adaptive;
        }
    }
    clean_mask(e.mask);
}

// Colour of the skin found (liveness cues), over the winning mask.
void skin_stats(cvis_hand_engine &e, const cv::Mat &mask) {
    e.stats.skin_fraction = float(cv::countNonZero(mask)) / float(mask.total());
    e.stats.mean_saturation = e.stats.mean_cr = 0;
    if (e.stats.skin_fraction > 0 && e.small.channels() == 3) {
        cv::cvtColor(e.small, e.hsv, cv::COLOR_BGR2HSV);
        cv::Scalar hs = cv::mean(e.hsv, mask);
        cv::Scalar yc = cv::mean(e.ycrcb, mask);
        e.stats.mean_saturation = float(hs[1] / 255.0);
        e.stats.mean_cr = float(yc[1]);
    }
}

// Grey / IR frames: the hand is the bright foreground (IR illuminators light the near hand).
void skin_mask_grey(cvis_hand_engine &e) {
    cv::GaussianBlur(e.small, e.tmp, cv::Size(5, 5), 0);
    cv::threshold(e.tmp, e.mask, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU);
    cv::Mat k5 = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(5, 5));
    cv::morphologyEx(e.mask, e.mask, cv::MORPH_OPEN, k5);
}

// Resamples a closed outline to points one pixel apart along it.
void resample(const std::vector<cv::Point> &in, std::vector<cv::Point2f> &out) {
    out.clear();
    if (in.size() < 3) return;
    float carry = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        cv::Point2f a = in[i], b = in[(i + 1) % in.size()];
        cv::Point2f d = b - a;
        float len = std::sqrt(d.dot(d));
        if (len <= 0) continue;
        float t = carry;
        while (t < len) {
            out.push_back(a + d * (t / len));
            t += 1.0f;
        }
        carry = t - len;
    }
}

// Tests whether the outline point i is a fingertip: walking both ways along the outline, the
// two sides must reach a width w after about 0.8 w of arc (a rounded tip) and then stay parallel
// (width within −25 %/+30 %) with a straight midline for at least `minStraight` widths.
bool finger_at(const std::vector<cv::Point2f> &pts, const cv::Mat &mask, int i, float minW, float maxW,
               Candidate &out) {
    const int n = int(pts.size());
    const int maxJ = std::min(n / 2 - 1, int(maxW * 4.5f));
    auto at = [&](int k) { return pts[((k % n) + n) % n]; };
    int jStart = -1;
    float w = 0;
    for (int j = 2; j < maxJ; ++j) {
        cv::Point2f d = at(i - j) - at(i + j);
        float wj = std::sqrt(d.dot(d));
        if (wj > maxW * 1.3f) return false;
        if (j >= 0.8f * wj && wj >= minW * 0.8f) {
            jStart = j;
            w = wj;
            break;
        }
    }
    if (jStart < 0 || w < minW || w > maxW) return false;
    // A fingertip is rounded: 0.3 w of outline from the apex, the chord already lies ≈ 0.09 w
    // below it (a semicircle); the flat end of a door frame or a box edge has none.
    {
        int js = std::max(1, int(0.3f * w));
        cv::Point2f chord = (at(i - js) + at(i + js)) * 0.5f - pts[i];
        if (std::sqrt(chord.dot(chord)) < 0.045f * w) return false;
    }
    // The tip must be convex: its midpoint inside the skin.
    cv::Point2f m0 = (at(i - jStart) + at(i + jStart)) * 0.5f;
    int mx = int(m0.x), my = int(m0.y);
    if (mx < 0 || my < 0 || mx >= mask.cols || my >= mask.rows || !mask.at<uint8_t>(my, mx)) return false;
    // Walk down the sides while they stay parallel and the midline straight.
    std::vector<cv::Point2f> mids;
    std::vector<float> widths;
    cv::Point2f refDir;
    bool haveAxis = false;
    int jEnd = jStart;
    for (int j = jStart; j < maxJ; ++j) {
        cv::Point2f a = at(i - j), b = at(i + j);
        cv::Point2f d = a - b;
        float wj = std::sqrt(d.dot(d));
        if (wj < 0.75f * w || wj > 1.3f * w) break;
        cv::Point2f m = (a + b) * 0.5f;
        // The midline must go on straight: once half a width of it is known, it fixes the axis,
        // and the walk ends where the midline leaves it (two fingers joining, the palm).
        if (!haveAxis && j - jStart >= int(0.5f * w) && !mids.empty()) {
            cv::Point2f d0 = m - mids.front();
            float l0 = std::sqrt(d0.dot(d0));
            if (l0 > 1) {
                refDir = d0 / l0;
                haveAxis = true;
            }
        }
        if (haveAxis) {
            cv::Point2f rel = m - mids.front();
            if (std::fabs(rel.x * refDir.y - rel.y * refDir.x) > 0.12f * w) break;
        }
        mids.push_back(m);
        widths.push_back(wj);
        jEnd = j;
    }
    float straight = float(jEnd - jStart);
    if (straight < 0.7f * w || mids.size() < 6) return false;
    // Axis: line through the midpoints.
    cv::Vec4f line;
    cv::fitLine(mids, line, cv::DIST_L2, 0, 0.01, 0.01);
    cv::Point2f u(line[0], line[1]), c(line[2], line[3]);
    // Orient base → tip.
    if ((pts[i] - c).dot(u) < 0) u = -u;
    // Both sides leave the apex alike (a corner of a box has one side flat across the axis).
    {
        int js = std::max(1, int(0.3f * w));
        float dl = (pts[i] - at(i - js)).dot(u), dr = (pts[i] - at(i + js)).dot(u);
        if (std::min(dl, dr) < 0.03f * w || std::fabs(dl - dr) > 0.5f * std::max(dl, dr) + 0.03f * w) return false;
    }
    float residual = 0;
    for (auto &m : mids) {
        cv::Point2f r = m - c;
        residual = std::max(residual, std::fabs(r.x * u.y - r.y * u.x));
    }
    if (residual > 0.2f * w) return false;
    // The finger is skin all along its axis (a gap between two fingers has parallel sides too).
    int inside = 0;
    for (auto &m : mids) {
        int x = int(m.x + 0.5f), y = int(m.y + 0.5f);
        if (x >= 0 && y >= 0 && x < mask.cols && y < mask.rows && mask.at<uint8_t>(y, x)) ++inside;
    }
    if (inside < int(0.9f * mids.size())) return false;
    std::vector<float> sorted = widths;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    float wMed = sorted[sorted.size() / 2];
    // The tip lies on the axis (symmetric pairs): its offset from the axis line.
    cv::Point2f rt = pts[i] - c;
    float tipOff = std::fabs(rt.x * u.y - rt.y * u.x);
    float lengthScore = std::min(1.0f, straight / (1.6f * wMed));
    float straightScore = 1 - residual / (0.2f * w);
    float symmetry = std::max(0.0f, 1 - tipOff / (0.35f * wMed));
    out.tip = pts[i];
    out.dir = u;
    out.width = wMed;
    out.length = straight + jStart;
    out.score = lengthScore * (0.5f + 0.5f * straightScore) * (0.4f + 0.6f * symmetry);
    out.index = i;
    return out.score > 0.15f;
}

// Reorders `cands` so that the best-scoring hand-like group (up to five candidates of similar width
// and direction whose tips lie within a few widths of each other) comes first; returns its score.
float group_first(std::vector<Candidate> &cands) {
    float bestTotal = 0;
    std::vector<int> bestGroup;
    for (size_t s = 0; s < cands.size(); ++s) {
        const Candidate &seed = cands[s];
        if (seed.score < 0.45f) continue;
        std::vector<int> group;
        float total = 0;
        for (size_t i = 0; i < cands.size(); ++i) {
            const Candidate &c = cands[i];
            if (c.score < 0.45f || c.width < 0.65f * seed.width || c.width > 1.5f * seed.width) continue;
            if (c.dir.dot(seed.dir) < 0.5f) continue; // within 60°
            cv::Point2f d = c.tip - seed.tip;
            if (std::sqrt(d.dot(d)) > 6.0f * seed.width) continue;
            group.push_back(int(i));
            total += c.score;
            if (group.size() == 5) break;
        }
        if (total > bestTotal) {
            bestTotal = total;
            bestGroup = group;
        }
    }
    std::vector<Candidate> ordered;
    std::vector<bool> used(cands.size(), false);
    for (int i : bestGroup) {
        ordered.push_back(cands[i]);
        used[i] = true;
    }
    for (size_t i = 0; i < cands.size(); ++i)
        if (!used[i]) ordered.push_back(cands[i]);
    cands.swap(ordered);
    return bestTotal;
}

// Fingers along the outlines of the largest regions of e.mask (working scale), one per finger,
// best first; `rect` is the bounding box of the region holding the best finger.
std::vector<Candidate> fingers_in_mask(cvis_hand_engine &e, float minW, float maxW, cv::Rect &rect) {
    // Close the frame border so fingers leaving the frame still have outlines.
    cv::Mat padded;
    cv::copyMakeBorder(e.mask, padded, 1, 1, 1, 1, cv::BORDER_CONSTANT, 0);
    e.contours.clear();
    cv::findContours(padded, e.contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_NONE, cv::Point(-1, -1));
    std::sort(e.contours.begin(), e.contours.end(),
              [](const auto &a, const auto &b) { return cv::contourArea(a) > cv::contourArea(b); });
    std::vector<Candidate> cands;
    float minArea = minW * minW * 3;
    for (size_t ci = 0; ci < e.contours.size() && ci < 4; ++ci) {
        if (cv::contourArea(e.contours[ci]) < minArea) break;
        resample(e.contours[ci], e.outline);
        const auto &pts = e.outline;
        const int n = int(pts.size());
        if (n < 20) continue;
        // Apex candidates: outline points on (or next to) the convex hull — spread fingertips are
        // extremities of the hand — tested by finger_at.
        std::vector<cv::Point2f> hull;
        cv::convexHull(pts, hull);
        const double nearHull = std::max(3.0, 0.5 * minW);
        const float border = std::max(3.0f, 0.012f * e.mask.cols);
        for (int i = 0; i < n; ++i) {
            // Skip points on the frame border (a finger cut by the edge is no tip).
            const cv::Point2f &p = pts[i];
            if (p.x <= border || p.y <= border || p.x >= e.mask.cols - 1 - border || p.y >= e.mask.rows - 1 - border) continue;
            if (cv::pointPolygonTest(hull, p, true) > nearHull) continue;
            Candidate c;
            if (finger_at(pts, e.mask, i, minW, maxW, c)) cands.push_back(c);
        }
    }
    // One candidate per finger: group those whose tips are close and axes agree; keep the
    // best-scoring, with its tip moved to the group's outermost point along the axis.
    std::sort(cands.begin(), cands.end(), [](const Candidate &a, const Candidate &b) { return a.score > b.score; });
    std::vector<Candidate> kept;
    for (const auto &c : cands) {
        bool merged = false;
        for (auto &k2 : kept) {
            cv::Point2f d = c.tip - k2.tip;
            float along = d.dot(k2.dir);
            float across = std::fabs(d.x * k2.dir.y - d.y * k2.dir.x);
            if (across < 0.6f * k2.width && along > -1.5f * k2.width && along < 0.8f * k2.width) {
        if (along > 0 && across < 0.35f * k2.width) k2.tip = c.tip; // further out
        merged = true;
        break;
            }
        }
        if (!merged) kept.push_back(c);
    }
    // A finger whose both ends are free (a thumb drawn over the palm, a finger separated from the
    // hand by its own shadow) is found from both ends; the real tip is the end farther from the
    // bulk of the skin.
    if (kept.size() > 1) {
        cv::Moments mo = cv::moments(e.mask, true);
        if (mo.m00 > 0) {
            cv::Point2f centroid(float(mo.m10 / mo.m00), float(mo.m01 / mo.m00));
            std::vector<bool> drop(kept.size(), false);
            for (size_t a = 0; a < kept.size(); ++a)
                for (size_t b = a + 1; b < kept.size(); ++b) {
                    const Candidate &p = kept[a], &q = kept[b];
                    if (p.dir.dot(q.dir) > -0.8f) continue;
                    cv::Point2f d = q.tip - p.tip;
                    float across = std::fabs(d.x * p.dir.y - d.y * p.dir.x);
                    if (across > 0.5f * p.width || -d.dot(p.dir) > p.length + q.length + p.width) continue;
                    cv::Point2f dp = p.tip - centroid, dq = q.tip - centroid;
                    drop[dp.dot(dp) < dq.dot(dq) ? a : b] = true;
                }
            std::vector<Candidate> rest;
            for (size_t k = 0; k < kept.size(); ++k)
                if (!drop[k]) rest.push_back(kept[k]);
            kept.swap(rest);
        }
    }
    rect = cv::Rect();
    if (!kept.empty()) {
        for (auto &c : e.contours) {
            if (cv::pointPolygonTest(c, kept[0].tip, true) > -3) {
                rect = cv::boundingRect(c);
                break;
            }
        }
    }
    return kept;
}

} // namespace

extern "C" {

cvis_hand_engine *cvis_hand_engine_create(cvis_status *status) {
    cvis_hand_engine *engine = nullptr;
    cvis_status s = guarded([&]() -> cvis_status {
        engine = new cvis_hand_engine();
        return CVIS_OK;
    });
    if (status) *status = s;
    return engine;
}

void cvis_hand_engine_free(cvis_hand_engine *engine) { delete engine; }

cvis_status cvis_hand_last_stats(const cvis_hand_engine *engine, cvis_hand_stats *out) {
    if (!engine || !out) return fail(CVIS_ERR_ARGUMENT, "null argument");
    *out = engine->stats;
    return CVIS_OK;
}

int cvis_hand_find_fingers(cvis_hand_engine *engine, cvis_image_view image, float min_width, float max_width,
                           cvis_finger *out, int max_fingers, cvis_status *status) {
    int found = -1;
    cvis_status s;
    if (!engine || !view_ok(image) || (!out && max_fingers > 0) || max_fingers < 0) {
        s = fail(CVIS_ERR_ARGUMENT, "bad engine, image or output");
    } else {
        s = guarded([&]() -> cvis_status {
            cvis_hand_engine &e = *engine;
            cv::Mat frame = mat_of(image);
            float scale = std::min(1.0f, float(kWorkWidth) / float(image.width));
            e.workScale = scale;
            if (scale < 1)
                cv::resize(frame, e.small, cv::Size(), scale, scale, cv::INTER_AREA);
            else
                frame.copyTo(e.small);
            float minW = (min_width > 0 ? min_width : 0.015f * image.width) * scale;
            float maxW = (max_width > 0 ? max_width : 0.45f * image.width) * scale;
            minW = std::max(minW, 6.0f);
            // Try the mask that won last time first; others only when it explains < 4 fingers.
            std::vector<Candidate> best;
            float bestScore = -1;
            cv::Mat bestMask;
            cv::Rect bestRect;
            int kinds = image.channels == 3 ? 6 : 1;
            if (image.channels == 3) cv::cvtColor(e.small, e.ycrcb, cv::COLOR_BGR2YCrCb); // once per frame
            e.edges.release(); // computed on demand, once per frame
            for (int t = 0; t < kinds; ++t) {
                int kind = (e.lastKind + t) % kinds;
                if (image.channels == 3)
                    skin_mask_colour(e, kind);
                else
                    skin_mask_grey(e);
                cv::Rect rect;
                std::vector<Candidate> kept = fingers_in_mask(e, minW, maxW, rect);
                // Explanation score: the best group of fingers of one hand (similar widths and
                // directions, tips near each other); the group goes first in the list.
                float total = group_first(kept);
                if (total > bestScore) {
                    bestScore = total;
                    best = kept;
                    bestMask = e.mask.clone();
                    bestRect = rect;
                    e.lastKind = kind;
                }
                if (total >= 2.8f) break; // four good fingers: no need to look further
            }
            skin_stats(e, bestMask);
            e.mask = bestMask;
            std::vector<Candidate> &kept = best;
            e.stats.hand_x = bestRect.x / scale;
            e.stats.hand_y = bestRect.y / scale;
            e.stats.hand_width = bestRect.width / scale;
            e.stats.hand_height = bestRect.height / scale;
            int count = std::min(int(kept.size()), max_fingers);
            for (int i = 0; i < count; ++i) {
                Candidate c = kept[i];
                c.tip = c.tip / scale;
                c.width /= scale;
                c.length /= scale;
                cvis_finger &f = out[i];
                f.tip_x = c.tip.x;
                f.tip_y = c.tip.y;
                f.dir_x = c.dir.x;
                f.dir_y = c.dir.y;
                f.width = c.width;
                f.length = c.length;
                f.score = c.score;
                cvis::finger::shading_levels(frame, c.tip, c.dir, c.width, f.centre_level, f.edge_level);
            }
            found = count;
            return CVIS_OK;
        });
    }
    if (status) *status = s;
    return s == CVIS_OK ? found : -1;
}

} // extern "C"
// ---------------------------------------------------------------------------------------------
// Fingertip prints: upright crop at 500 ppi, shading removed, local contrast normalised; quality.
// ---------------------------------------------------------------------------------------------
namespace cvis::finger {

void shading_levels(const cv::Mat &img, cv::Point2f tip, cv::Point2f dir, float width, float &centre, float &edge) {
    cv::Point2f perp(-dir.y, dir.x);
    double sc = 0, se = 0;
    int nc = 0, ne = 0;
    for (float along = 0.5f; along <= 1.3f; along += 0.1f) {
        cv::Point2f p0 = tip - dir * (along * width);
        for (float u = -0.9f; u <= 0.9f; u += 0.05f) {
            cv::Point2f p = p0 + perp * (u * 0.5f * width);
            int x = int(p.x + 0.5f), y = int(p.y + 0.5f);
            if (x < 0 || y < 0 || x >= img.cols || y >= img.rows) continue;
            float v;
            if (img.channels() == 3) {
                const cv::Vec3b &b = img.at<cv::Vec3b>(y, x);
                v = 0.114f * b[0] + 0.587f * b[1] + 0.299f * b[2];
            } else {
                v = img.at<uint8_t>(y, x);
            }
            float au = std::fabs(u);
            if (au < 0.3f) {
                sc += v;
                ++nc;
            } else if (au > 0.7f && au < 0.9f) {
                se += v;
                ++ne;
            }
        }
    }
    centre = nc ? float(sc / nc) : 0;
    edge = ne ? float(se / ne) : 0;
}


// Mean of `src` over the mask's support (normalised convolution), so the finger's edge does not
// pull the local mean toward the background.
// A wide Gaussian computed at a quarter of the resolution: the result is smooth anyway, and this
// costs a fraction of a full-size wide kernel.
void smooth(const cv::Mat &src, cv::Mat &dst, double sigma) {
    cv::Mat small;
    cv::resize(src, small, cv::Size((src.cols + 3) / 4, (src.rows + 3) / 4), 0, 0, cv::INTER_AREA);
    cv::GaussianBlur(small, small, cv::Size(), sigma / 4, 0, cv::BORDER_REFLECT);
    cv::resize(small, dst, src.size(), 0, 0, cv::INTER_LINEAR);
}

cv::Mat masked_blur(const cv::Mat &src, const cv::Mat &maskF, double sigma) {
    cv::Mat num, den;
    smooth(src.mul(maskF), num, sigma);
    smooth(maskF, den, sigma);
    return num / (den + 1e-3f);
}

// Quality measures of a float print (ridges at ~500 ppi: period ≈ 9 px) over a 0/1 float mask.
void measure_print(const cv::Mat &norm, const cv::Mat &raw, const cv::Mat &maskF, cvis_print_quality &q) {
    q = {};
    double area = cv::sum(maskF)[0];
    q.foreground = float(area / double(maskF.total()));
    if (area < 400) return;
    cv::Mat m8;
    maskF.convertTo(m8, CV_8U, 255);
    cv::Mat inner;
    cv::erode(m8, inner, cv::Mat(), cv::Point(-1, -1), 7);
    if (cv::countNonZero(inner) < 200) inner = m8;
    // Band-pass at the ridge frequency against the finer detail (noise, blur-amplified grain).
    cv::Mat g1, g35;
    cv::GaussianBlur(norm, g1, cv::Size(7, 7), 1.4); // explicit 7×7: OpenCV 4.6 is slow on float kernels of its own size choice
    smooth(norm, g35, 4.0);
    cv::Mat band = g1 - g35, fine = norm - g1;
    cv::Scalar mb, sb, mf, sf;
    cv::meanStdDev(band, mb, sb, inner);
    cv::meanStdDev(fine, mf, sf, inner);
    double eb = sb[0] * sb[0], ef = sf[0] * sf[0];
    q.focus = float(eb / (eb + ef + 1e-6));
    // Ridge contrast in the flat-fielded grey levels of the camera.
    cv::Mat r1, r35;
    cv::GaussianBlur(raw, r1, cv::Size(7, 7), 1.4);
    smooth(raw, r35, 4.0);
    cv::Scalar mr, sr;
    cv::meanStdDev(r1 - r35, mr, sr, inner);
    q.contrast = float(std::min(1.0, sr[0] / 12.0));
    // Orientation coherence of the gradients over ~2 ridge periods.
    cv::Mat gx, gy;
    cv::Sobel(g1, gx, CV_32F, 1, 0, 3);
    cv::Sobel(g1, gy, CV_32F, 0, 1, 3);
    cv::Mat jxx = gx.mul(gx), jyy = gy.mul(gy), jxy = gx.mul(gy);
    smooth(jxx, jxx, 7);
    smooth(jyy, jyy, 7);
    smooth(jxy, jxy, 7);
    cv::Mat diff = jxx - jyy, num, den = jxx + jyy + 1e-3f;
    cv::sqrt(diff.mul(diff) + 4 * jxy.mul(jxy), num);
    cv::Mat coh = num / den;
    q.coherence = float(cv::mean(coh, inner)[0]);
}

} // namespace cvis::finger

using cvis::finger::masked_blur;
using cvis::finger::measure_print;


extern "C" {

cvis_status cvis_hand_fingertip_print(cvis_hand_engine *engine, cvis_image_view grey, cvis_rotated_box box, float scale,
                                      uint8_t *out, uint8_t *mask, int out_width, int out_height,
                                      cvis_print_quality *quality) {
    if (!engine || !view_ok(grey) || grey.channels != 1 || !out || out_width < 16 || out_height < 16 ||
        out_width > 4096 || out_height > 4096 || !(scale > 0.05f && scale < 50) || !(box.width > 2))
        return fail(CVIS_ERR_ARGUMENT, "bad print request");
    return guarded([&]() -> cvis_status {
        cvis_hand_engine &e = *engine;
        cv::Mat frame = mat_of(grey);
        // out (ox, oy) → frame: centre + R · ((ox, oy) − out/2) / scale, R rotating by `angle`
        // clockwise on screen (so the output's up is the finger's direction).
        float a = box.angle * kPi / 180, ca = std::cos(a), sa = std::sin(a);
        float inv = 1 / scale;
        cv::Matx23f toFrame(ca * inv, -sa * inv, box.cx - (ca * out_width - sa * out_height) * 0.5f * inv,
                            sa * inv, ca * inv, box.cy - (sa * out_width + ca * out_height) * 0.5f * inv);
        cv::Mat crop;
        cv::warpAffine(frame, crop, toFrame, cv::Size(out_width, out_height), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                       cv::BORDER_REPLICATE);
        // Finger mask: the skin mask of the last detection (working scale), warped the same way,
        // and the box's own sides (the finger is the box's width).
        cv::Mat mask8(out_height, out_width, CV_8U, cv::Scalar(255));
        if (!e.mask.empty() && e.workScale > 0) {
            cv::Matx23f toWork = toFrame;
            for (int c = 0; c < 3; ++c) {
                toWork(0, c) *= e.workScale;
                toWork(1, c) *= e.workScale;
            }
            cv::warpAffine(e.mask, mask8, toWork, cv::Size(out_width, out_height), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                           cv::BORDER_CONSTANT, 0);
            cv::threshold(mask8, mask8, 127, 255, cv::THRESH_BINARY);
        }
        // Mirror left-right: contact sensors (and the ink cards they imitate) give the mirror image
        // of the fingertip as a camera sees it, and the print side matches against those.
        cv::flip(crop, crop, 1);
        cv::flip(mask8, mask8, 1);
        // Keep the central 88 % of the width: the outermost ridges are seen edge-on.
        int margin = int(out_width * 0.06f);
        mask8.colRange(0, margin).setTo(0);
        mask8.colRange(out_width - margin, out_width).setTo(0);
        cv::erode(mask8, mask8, cv::Mat(), cv::Point(-1, -1), 4);
        cv::Mat maskF;
        mask8.convertTo(maskF, CV_32F, 1.0 / 255);

        cv::Mat f;
        crop.convertTo(f, CV_32F);
        cv::GaussianBlur(f, f, cv::Size(5, 5), 0.8); // camera noise, below the ridge frequency
        // Shading removed, then contrast normalised over ~1.5 ridge periods.
        cv::Mat mean = masked_blur(f, maskF, 8);
        cv::Mat flat = f - mean;
        cv::Mat var = masked_blur(flat.mul(flat), maskF, 8);
        cv::Mat sd;
        cv::sqrt(var + 4.0f, sd);
        cv::Mat norm = flat / sd;
        cv::Mat o(out_height, out_width, CV_8U, out);
        cv::Mat outF = norm * 60 + 128;
        outF.setTo(255, mask8 == 0); // background white, as on a contact sensor
        outF.convertTo(o, CV_8U);
        if (mask) mask8.copyTo(cv::Mat(out_height, out_width, CV_8U, mask));
        if (quality) measure_print(norm, flat, maskF, *quality);
        return CVIS_OK;
    });
}

cvis_status cvis_hand_print_quality(const uint8_t *grey, const uint8_t *mask, int width, int height,
                                    cvis_print_quality *quality) {
    if (!grey || !quality || width < 16 || height < 16 || width > 8192 || height > 8192)
        return fail(CVIS_ERR_ARGUMENT, "bad print");
    return guarded([&]() -> cvis_status {
        cv::Mat g(height, width, CV_8U, const_cast<uint8_t *>(grey));
        cv::Mat maskF(height, width, CV_32F, cv::Scalar(1));
        if (mask) cv::Mat(height, width, CV_8U, const_cast<uint8_t *>(mask)).convertTo(maskF, CV_32F, 1.0 / 255);
        cv::threshold(maskF, maskF, 0.5, 1.0, cv::THRESH_BINARY);
        cv::Mat f;
        g.convertTo(f, CV_32F);
        cv::Mat mean = masked_blur(f, maskF, 8);
        cv::Mat flat = f - mean;
        cv::Mat var = masked_blur(flat.mul(flat), maskF, 8);
        cv::Mat sd;
        cv::sqrt(var + 4.0f, sd);
        measure_print(flat / sd, flat, maskF, *quality);
        return CVIS_OK;
    });
}

float cvis_hand_region_periodicity(cvis_image_view grey, cvis_rotated_box box, cvis_status *status) {
    float result = -1;
    cvis_status s;
    if (!view_ok(grey) || grey.channels != 1) {
        s = fail(CVIS_ERR_ARGUMENT, "bad image");
    } else {
        s = guarded([&]() -> cvis_status {
            cv::Mat frame = mat_of(grey);
            // A 64×64 patch at the box centre, native resolution (halftone and pixel grids live at
            // 2–4 px periods, which any resampling would destroy).
            const int n = 64;
            int x0 = int(box.cx) - n / 2, y0 = int(box.cy) - n / 2;
            x0 = std::clamp(x0, 0, std::max(0, frame.cols - n));
            y0 = std::clamp(y0, 0, std::max(0, frame.rows - n));
            if (frame.cols < n || frame.rows < n) return fail(CVIS_ERR_ARGUMENT, "image too small");
            cv::Mat patch;
            frame(cv::Rect(x0, y0, n, n)).convertTo(patch, CV_32F);
            patch -= cv::mean(patch)[0];
            cv::Mat win;
            cv::createHanningWindow(win, cv::Size(n, n), CV_32F);
            patch = patch.mul(win);
            cv::Mat spec;
            cv::dft(patch, spec, cv::DFT_COMPLEX_OUTPUT);
            cv::Mat planes[2];
            cv::split(spec, planes);
            cv::Mat mag;
            cv::magnitude(planes[0], planes[1], mag);
            // Band: periods 2–3.3 px, kept below this finger's own ridge period (0.45 mm on a ~17 mm
            // finger of `box.width` px).
            float ridge = 0.45f / 17.0f * box.width;
            float pHi = std::min(3.3f, 0.8f * ridge), pLo = 2.0f;
            if (ridge < 4.25f || pHi < pLo + 0.2f) {
                result = 0; // ridges too fine: their harmonics fall in the band
                return CVIS_OK;
            }
            double sum = 0, peak = 0;
            int count = 0;
            for (int v = 0; v < n; ++v)
                for (int u = 0; u < n / 2 + 1; ++u) {
                    int fu = u, fv = v <= n / 2 ? v : v - n;
                    double r = std::sqrt(double(fu * fu + fv * fv));
                    if (r < n / pHi || r > n / pLo) continue;
                    double m = mag.at<float>(v, u);
                    sum += m;
                    peak = std::max(peak, m);
                    ++count;
                }
            result = count > 0 && sum > 0 ? float(peak / (sum / count)) : 1.0f;
            return CVIS_OK;
        });
    }
    if (status) *status = s;
    return s == CVIS_OK ? result : -1;
}

} // extern "C"
