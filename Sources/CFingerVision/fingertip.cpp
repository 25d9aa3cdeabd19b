// Fingertips behind cvision_fingertip.h: the sides and apex of a fingertip found from a seed (hand
// landmarks, the previous frame, or the close-up finder), its ridge period measured in the pad's
// centre, and the print scaled by those ridges and unrolled around the finger's axis.
#include "cvision_fingertip.h"
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

float median(std::vector<float> v) {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
}

// An upright view of the frame around a finger: output pixel (u, v) at `scale` output pixels per
// frame pixel, the output's up along `dir`, the output's x along perp = (-dir.y, dir.x) (screen
// right of an upward finger), centred on `centre`. Large downscales are area-averaged first.
struct Upright {
    cv::Point2f centre, dir, perp;
    float scale = 1;
    int width = 0, height = 0;

    cv::Point2f toFrame(float u, float v) const {
        float x = (u - width * 0.5f) / scale, y = (v - height * 0.5f) / scale; // y down = toward the base
        return centre + perp * x - dir * y;
    }

    cv::Mat sample(const cv::Mat &frame, int interpolation = cv::INTER_LINEAR) const {
        // Frame ROI holding the view, area-downscaled when the view is much smaller than the frame.
        cv::Point2f corners[4] = {toFrame(0, 0), toFrame(float(width), 0), toFrame(0, float(height)),
                                  toFrame(float(width), float(height))};
        float x0 = 1e9f, y0 = 1e9f, x1 = -1e9f, y1 = -1e9f;
        for (auto &c : corners) {
            x0 = std::min(x0, c.x);
            y0 = std::min(y0, c.y);
            x1 = std::max(x1, c.x);
            y1 = std::max(y1, c.y);
        }
        cv::Rect roi(int(std::floor(x0)) - 2, int(std::floor(y0)) - 2, int(std::ceil(x1 - x0)) + 5, int(std::ceil(y1 - y0)) + 5);
        roi &= cv::Rect(0, 0, frame.cols, frame.rows);
        cv::Mat out(height, width, frame.type(), cv::Scalar::all(0));
        if (roi.width < 2 || roi.height < 2) return out;
        cv::Mat src = frame(roi);
        float pre = 1;
        cv::Mat small;
        if (scale < 0.5f) {
            pre = scale * 1.5f; // area-average to 1.5 output pixels, then interpolate
            cv::resize(src, small, cv::Size(), pre, pre, cv::INTER_AREA);
            src = small;
        }
        // output → source pixels
        cv::Point2f o = toFrame(0, 0), ex = toFrame(1, 0) - o, ey = toFrame(0, 1) - o;
        cv::Matx23f m(ex.x * pre, ey.x * pre, (o.x - roi.x) * pre, ex.y * pre, ey.y * pre, (o.y - roi.y) * pre);
        cv::warpAffine(src, out, m, out.size(), interpolation | cv::WARP_INVERSE_MAP, cv::BORDER_REPLICATE);
        return out;
    }
};

// Edge strength across (horizontal) and along (vertical) the upright view, colour-aware: skin and
// background often differ more in chroma than in brightness.
void edge_maps(const cv::Mat &view, float sigma, cv::Mat &gx, cv::Mat &gy) {
    std::vector<cv::Mat> planes;
    if (view.channels() == 3) {
        cv::Mat ycc;
        cv::cvtColor(view, ycc, cv::COLOR_BGR2YCrCb);
        cv::split(ycc, planes);
    } else {
        planes.push_back(view);
    }
    gx = cv::Mat::zeros(view.size(), CV_32F);
    gy = cv::Mat::zeros(view.size(), CV_32F);
    int k = std::max(3, int(std::lround(sigma * 3)) | 1);
    for (size_t i = 0; i < planes.size(); ++i) {
        cv::Mat f, dx, dy;
        planes[i].convertTo(f, CV_32F, i == 0 ? 1.0 : 2.0); // chroma counts double
        cv::GaussianBlur(f, f, cv::Size(k, k), sigma);
        cv::Sobel(f, dx, CV_32F, 1, 0, 3);
        cv::Sobel(f, dy, CV_32F, 0, 1, 3);
        gx += cv::abs(dx);
        gy += cv::abs(dy);
    }
}

// Ridge measure of one grey float image over a 0/1 mask: 32-pixel blocks (Hann window, a step of
// 16) whose power spectrum has a clear single peak at periods 2.5–12.8 px. A block has ridges when
// the peak (±1.5 frequency bins, with its mirror) holds ≥ 30 % of the band's energy and the band
// at right angles to it holds less than half the peak (ridges run one way; block grids, weave and
// noise do not). Ridges flow: a block counts toward the ridge area only when a neighbouring block
// also has ridges running the same way (±25°) at the same spacing (±25 %) — JPEG ringing, pores
// and speckle give single blocks with a peak in any direction.
struct RidgeMeasure {
    float period = 0, area = 0, strength = 0, along = 0, gridded = 0;
};

// `radius`: when > 0, `f` is a view of a cylinder of this radius (pixels) whose axis runs down the
// middle column: each block's frequency is corrected for the compression across the axis at its
// centre (x = R sin φ: spacings across shrink by cos φ), so blocks off the middle give the
// surface's period too.
// `frameAngle`: the angle of the view's x axis in the frame (to tell how many blocks' ridges lie
// along the frame's rows or columns).
RidgeMeasure measure_ridges(const cv::Mat &f, const cv::Mat &mask, float radius = 0, float frameAngle = 0) {
    constexpr int B = 32, step = 16;
    static const cv::Mat window = [] {
        cv::Mat w;
        cv::createHanningWindow(w, cv::Size(B, B), CV_32F);
        return w;
    }();
    RidgeMeasure m;
    struct Block {
        bool used = false, ridges = false;
        float period = 0, angle = 0, share = 0; // angle of the frequency vector, 0..π
        bool gridded = false;                   // its observed frequency lies along the frame's rows or columns
    };
    const int gx = f.cols >= B ? (f.cols - B) / step + 1 : 0, gy = f.rows >= B ? (f.rows - B) / step + 1 : 0;
    std::vector<Block> grid(size_t(gx) * gy);
    cv::Mat patch, spec, planes[2], power;
    const float rLo = B / 12.8f, rHi = B / 2.5f;
    // The band's frequency bins (half plane: each frequency once), with radius and angle, once.
    struct Bin {
        int u, v, fu, fv;
        float radius, angle;
    };
    static const std::vector<Bin> bins = [] {
        std::vector<Bin> b;
        const float lo = B / 12.8f, hi = B / 2.5f;
        for (int v = 0; v < B; ++v)
            for (int u = 0; u < B / 2 + 1; ++u) {
                int fu = u, fv = v <= B / 2 ? v : v - B;
                float rad = std::sqrt(float(fu * fu + fv * fv));
                if (rad < lo || rad > hi) continue;
                b.push_back({u, v, fu, fv, rad, std::atan2(float(fv), float(fu))});
            }
        return b;
    }();
    (void)rLo;
    (void)rHi;
    for (int j = 0; j < gy; ++j)
        for (int i = 0; i < gx; ++i) {
            cv::Rect r(i * step, j * step, B, B);
            if (!mask.empty() && cv::mean(mask(r))[0] < 0.95) continue;
            Block &b = grid[size_t(j) * gx + i];
            b.used = true;
            f(r).copyTo(patch);
            patch -= cv::mean(patch)[0];
            patch = patch.mul(window);
            cv::dft(patch, spec, cv::DFT_COMPLEX_OUTPUT);
            cv::split(spec, planes);
            cv::magnitude(planes[0], planes[1], power);
            power = power.mul(power);
            float total = 0, best = 0;
            int bu = 0, bv = 0;
            for (const Bin &bin : bins) {
                float p = power.at<float>(bin.v, bin.u);
                total += p;
                if (p > best) {
                    best = p;
                    bu = bin.fu;
                    bv = bin.fv;
                }
            }
            if (total <= 0) continue;
            float peak = 0, weighted = 0, perp = 0;
            float a0 = std::atan2(float(bv), float(bu));
            for (const Bin &bin : bins) {
                float p = power.at<float>(bin.v, bin.u);
                int d1u = bin.fu - bu, d1v = bin.fv - bv, d2u = bin.fu + bu, d2v = bin.fv + bv;
                if (std::min(d1u * d1u + d1v * d1v, d2u * d2u + d2v * d2v) <= 2) { // within 1.5 bins
                    peak += p;
                    weighted += p * bin.radius;
                }
                float da = std::fabs(std::remainder(bin.angle - a0 - kPi / 2, kPi));
                if (da < kPi / 8) perp += p;
            }
            float share = peak / total;
            if (share >= 0.30f && perp < 0.5f * peak && weighted > 0) {
                b.ridges = true;
                {
                    float fa = std::fabs(std::remainder(a0 + frameAngle, kPi / 2));
                    b.gridded = fa < 4 * kPi / 180;
                }
                float rad = weighted / peak, fx = rad * std::cos(a0), fy = rad * std::sin(a0);
                if (radius > 0) {
                    float x = (r.x + B * 0.5f - f.cols * 0.5f) / radius;
                    float c = std::sqrt(std::max(0.05f, 1 - x * x)); // cos φ
                    fx *= c;                                          // the surface's frequency across
                    a0 = std::atan2(fy, fx);
                    rad = std::hypot(fx, fy);
                }
                b.period = B / rad;
                b.angle = a0 < 0 ? a0 + kPi : a0; // 0..π
                b.share = share;
            }
        }
    int used = 0, flowing = 0, along = 0, gridded = 0;
    std::vector<float> periods, strengths;
    auto agree = [&](const Block &a, const Block &b) {
        float d = std::fabs(a.angle - b.angle);
        d = std::min(d, kPi - d);
        return b.ridges && d < 25 * kPi / 180 && b.period < 1.25f * a.period && a.period < 1.25f * b.period;
    };
    for (int j = 0; j < gy; ++j)
        for (int i = 0; i < gx; ++i) {
            const Block &b = grid[size_t(j) * gx + i];
            if (!b.used) continue;
            ++used;
            if (!b.ridges) continue;
            bool flows = false;
            for (auto [di, dj] : {std::pair{1, 0}, {-1, 0}, {0, 1}, {0, -1}}) {
                int ni = i + di, nj = j + dj;
                if (ni >= 0 && nj >= 0 && ni < gx && nj < gy && agree(b, grid[size_t(nj) * gx + ni])) flows = true;
            }
            if (!flows) continue;
            ++flowing;
            periods.push_back(b.period);
            strengths.push_back(b.share);
            // Ridges run across the frequency vector: along the axis (the view's y) when it is
            // within 25° of the view's x.
            if (std::min(b.angle, kPi - b.angle) < 25 * kPi / 180) ++along;
            if (b.gridded) ++gridded;
        }
    if (used == 0) return m;
    m.area = float(flowing) / float(used);
    if (!periods.empty()) {
        m.period = median(periods);
        float sum = 0;
        for (float v : strengths) sum += v;
        m.strength = sum / strengths.size();
        m.along = float(along) / float(periods.size());
        m.gridded = float(gridded) / float(periods.size());
    }
    return m;
}

// The factor `frame` around `box` was blown up by, repeating pixels: for some k (2–8) and phase,
// neighbours within each k-pixel run are nearly always equal (≥ 85 %) and far more often than
// across runs; 1 when none is. A camera's own pixels never are.
float replication(const cv::Mat &frame, cv::Rect box) {
    box &= cv::Rect(0, 0, frame.cols, frame.rows);
    if (box.width < 24 || box.height < 8) return 1;
    // On brightness: JPEG keeps it at full resolution (colour is stored at half resolution, which
    // repeats pixels in every colour plane of any JPEG).
    cv::Mat luma;
    if (frame.channels() == 3) cv::cvtColor(frame(box), luma, cv::COLOR_BGR2GRAY);
    else luma = frame(box);
    std::vector<long> equal(luma.cols, 0), pairs(luma.cols, 0);
    for (int y = 0; y < luma.rows; ++y) {
        const uint8_t *row = luma.ptr<uint8_t>(y);
        for (int x = 0; x + 1 < luma.cols; ++x) {
            if (row[x] == 0 || row[x] == 255) continue; // clipped
            ++pairs[x];
            if (row[x] == row[x + 1]) ++equal[x];
        }
    }
    float worst = 0;
    int factor = 1;
    for (int k = 2; k <= 8; ++k)
        for (int phase = 0; phase < k; ++phase) {
            // Pairs inside a k-pixel run (column mod k ≠ k − 1 after the phase) against pairs across runs.
            long we = 0, wp = 0, ae = 0, ap = 0;
            for (int c = 0; c < luma.cols; ++c) {
                if ((c + phase) % k == k - 1) ae += equal[c], ap += pairs[c];
                else we += equal[c], wp += pairs[c];
            }
            if (wp == 0 || ap == 0) continue;
            float within = float(we) / wp, d = within - float(ae) / ap;
            if (within >= 0.85f && d > 0.3f && d > worst) worst = d, factor = k;
        }
    return float(factor);
}

bool seed_ok(const cvis_fingertip_seed &s) {
    float dx = s.tip_x - s.base_x, dy = s.tip_y - s.base_y;
    return std::isfinite(s.tip_x) && std::isfinite(s.tip_y) && std::isfinite(s.base_x) && std::isfinite(s.base_y) &&
           std::isfinite(s.width) && s.width >= 4 && s.width < 8192 && std::hypot(dx, dy) >= 1;
}

} // namespace

extern "C" {

cvis_status cvis_fingertip_measure(cvis_image_view image, cvis_fingertip_seed seed, cvis_fingertip *out) {
    if (!view_ok(image) || !out || !seed_ok(seed)) return fail(CVIS_ERR_ARGUMENT, "bad image, seed or output");
    return guarded([&]() -> cvis_status {
        cv::Mat frame = mat_of(image);
        cv::Point2f tip(seed.tip_x, seed.tip_y), base(seed.base_x, seed.base_y);
        cv::Point2f dir = tip - base;
        float len = std::hypot(dir.x, dir.y);
        dir /= len;
        float w0 = seed.width;
        cvis_fingertip t{};
        t.tip_x = tip.x;
        t.tip_y = tip.y;
        t.dir_x = dir.x;
        t.dir_y = dir.y;
        t.width = w0;
        t.length = std::clamp(len, 0.9f * w0, 1.7f * w0);

        // 1. Sides and apex on an upright view ~96 px across the expected width.
        Upright v;
        v.dir = dir;
        v.perp = cv::Point2f(-dir.y, dir.x);
        v.scale = std::min(1.0f, 96.0f / w0);
        float below = std::max(t.length, 1.2f * w0); // rows toward the base
        float above = 0.6f * w0;                      // rows beyond the seed tip
        v.width = int(std::lround(2.4f * w0 * v.scale));
        v.height = int(std::lround((above + below) * v.scale));
        v.centre = tip - dir * ((below - above) * 0.5f);
        cv::Mat view = v.sample(frame);
        cv::Mat gx, gy;
        edge_maps(view, 1.2f, gx, gy);
        const float ww = w0 * v.scale, cx = v.width * 0.5f, tipRow = above * v.scale;
        std::vector<float> rowsY, centres, widths, edgeVals;
        cv::Mat rowMed;
        double gmed = 0;
        {
            std::vector<float> all(gx.begin<float>(), gx.end<float>());
            gmed = std::max(4.0f, median(all)); // ≥ a one-grey-level step (Sobel gain 4)
        }
        for (int r = int(tipRow + 0.5f * ww); r < std::min(v.height - 1, int(tipRow + 0.5f * ww + 0.8f * (below * v.scale - 0.5f * ww))); r += 2) {
            const float *g = gx.ptr<float>(r);
            int l0 = std::max(1, int(cx - 0.9f * ww)), l1 = int(cx - 0.2f * ww);
            int r0 = int(cx + 0.2f * ww), r1 = std::min(v.width - 2, int(cx + 0.9f * ww));
            // Each side: the innermost strong edge (a local maximum of at least half the
            // strongest in the range), so a neighbouring finger's edges beyond it do not win.
            float ml = 0, mr = 0;
            for (int x = l0; x <= l1; ++x) ml = std::max(ml, g[x]);
            for (int x = r0; x <= r1; ++x) mr = std::max(mr, g[x]);
            int bl = -1, br = -1;
            float vl = 0, vr = 0;
            for (int x = l1; x >= l0; --x)
                if (g[x] >= 0.5f * ml && g[x] >= g[x - 1] && g[x] >= g[x + 1]) {
                    bl = x, vl = g[x];
                    break;
                }
            for (int x = r0; x <= r1; ++x)
                if (g[x] >= 0.5f * mr && g[x] >= g[x - 1] && g[x] >= g[x + 1]) {
                    br = x, vr = g[x];
                    break;
                }
            if (bl < 0 || br < 0 || ml <= 0 || mr <= 0) continue;
            rowsY.push_back(float(r));
            centres.push_back(0.5f * (bl + br));
            widths.push_back(float(br - bl));
            edgeVals.push_back(std::min(vl, vr));
        }
        bool found = false;
        if (rowsY.size() >= 6) {
            float wMed = median(widths);
            // Rows whose width agrees (the others cross a crease, a neighbour or background clutter).
            std::vector<cv::Point2f> pts;
            std::vector<float> keptEdges, keptWidths;
            for (size_t i = 0; i < rowsY.size(); ++i)
                if (std::fabs(widths[i] - wMed) < 0.15f * wMed) {
                    pts.emplace_back(centres[i], rowsY[i]);
                    keptEdges.push_back(edgeVals[i]);
                    keptWidths.push_back(widths[i]);
                }
            t.edge_contrast = float(median(keptEdges) / gmed);
            if (pts.size() >= std::max<size_t>(5, rowsY.size() / 2) && t.edge_contrast > 2.0f) {
                cv::Vec4f line;
                cv::fitLine(pts, line, cv::DIST_HUBER, 0, 0.01, 0.01);
                float lx = line[0], ly = line[1];
                if (ly > 0) lx = -lx, ly = -ly; // toward the tip (up in the view)
                // The axis in the frame: view up (0,-1) is dir; view x is perp.
                cv::Point2f axis = v.perp * lx - v.dir * ly;
                axis /= std::hypot(axis.x, axis.y);
                if (axis.dot(dir) > 0.9f) { // within ~25° of the seed
                    float wPx = median(keptWidths) / v.scale;
                    // Apex: the strongest edge along the axis near the seed tip (mean over the central columns).
                    float xTop = line[2] + (tipRow - line[3]) * line[0] / (std::fabs(line[1]) > 1e-3f ? line[1] : 1e-3f);
                    int apexRow = -1;
                    float bestG = 0;
                    for (int r = 1; r < std::min(v.height - 1, int(tipRow + 0.45f * ww)); ++r) {
                        float xr = xTop + (r - tipRow) * line[0] / (std::fabs(line[1]) > 1e-3f ? line[1] : 1e-3f);
                        float s = 0;
                        int n = 0;
                        for (int dx = -int(0.15f * ww); dx <= int(0.15f * ww); ++dx) {
                            int x = int(xr) + dx;
                            if (x < 0 || x >= v.width) continue;
                            s += gy.at<float>(r, x);
                            ++n;
                        }
                        if (n && s / n > bestG) bestG = s / n, apexRow = r;
                    }
                    if (apexRow >= 0 && bestG > 2.0f * gmed) {
                        float xr = xTop + (apexRow - tipRow) * line[0] / (std::fabs(line[1]) > 1e-3f ? line[1] : 1e-3f);
                        cv::Point2f apex = v.toFrame(xr, float(apexRow));
                        t.tip_x = apex.x;
                        t.tip_y = apex.y;
                        t.dir_x = axis.x;
                        t.dir_y = axis.y;
                        t.width = wPx;
                        // Apex → distal joint: the seed's joint when it is plausible, else 1.35 widths.
                        float toBase = (apex - base).dot(axis);
                        t.length = (toBase > 0.9f * wPx && toBase < 1.8f * wPx) ? toBase : 1.35f * wPx;
                        found = true;
                    }
                }
            }
        }
        t.found = found ? 1 : 0;

        // 2. Ridges in the pad: 25–90 % of the way from the apex to the joint, at ≤ 256 px across
        //    the finger.
        if (found) {
            Upright r;
            r.dir = cv::Point2f(t.dir_x, t.dir_y);
            r.perp = cv::Point2f(-t.dir_y, t.dir_x);
            r.scale = std::min(1.0f, 256.0f / t.width);
            // Across: |x| ≤ 0.38 width (the surface turned ≤ 50° from the camera; each block's
            // spacing corrected for it).
            r.width = std::max(8, int(std::lround(0.76f * t.width * r.scale)));
            r.height = std::max(8, int(std::lround(0.65f * t.length * r.scale)));
            r.centre = cv::Point2f(t.tip_x, t.tip_y) - r.dir * (0.575f * t.length);
            cv::Mat pad = r.sample(frame);
            cv::Mat grey, f;
            if (pad.channels() == 3) {
                cv::cvtColor(pad, grey, cv::COLOR_BGR2GRAY);
                cv::Mat hsv, ycc;
                cv::cvtColor(pad, hsv, cv::COLOR_BGR2HSV);
                cv::cvtColor(pad, ycc, cv::COLOR_BGR2YCrCb);
                t.mean_saturation = float(cv::mean(hsv)[1] / 255.0);
                t.mean_cr = float(cv::mean(ycc)[1]);
            } else {
                grey = pad;
            }
            grey.convertTo(f, CV_32F);
            // Shading removed (the fingertip darkens toward its sides and tip): its slope would
            // leak into the ridge band of the spectrum and drown faint ridges.
            cv::Mat shade;
            cv::GaussianBlur(f, shade, cv::Size(0, 0), 6);
            f -= shade;
            RidgeMeasure m = measure_ridges(f, cv::Mat(), 0.5f * t.width * r.scale, std::atan2(r.perp.y, r.perp.x));
            t.ridge_period = m.period > 0 ? m.period / r.scale : 0;
            t.ridge_area = m.area;
            t.ridge_strength = m.strength;
            t.ridge_along = m.along;
            t.ridge_gridded = m.gridded;
            // Pixel repetition around the pad (an image blown up from a smaller one): ridges must
            // be resolved in the source pixels, not in their copies.
            {
                cv::Point2f c = cv::Point2f(t.tip_x, t.tip_y) - r.dir * (0.575f * t.length);
                int side = std::max(24, int(0.4f * t.width));
                t.repeated = replication(frame, cv::Rect(int(c.x) - side / 2, int(c.y) - side / 2, side, side));
            }
        }
        cvis::finger::shading_levels(frame, {t.tip_x, t.tip_y}, {t.dir_x, t.dir_y}, t.width, t.centre_level, t.edge_level);
        *out = t;
        return CVIS_OK;
    });
}

cvis_status cvis_fingertip_print_size(const cvis_fingertip *tip, float target_period, float half_angle_deg, int *width,
                                      int *height) {
    if (!tip || !width || !height || !(tip->ridge_period > 0) || !(tip->width > 0) || !(tip->length > 0) ||
        !(target_period > 1 && target_period < 64) || !(half_angle_deg > 10 && half_angle_deg <= 85))
        return fail(CVIS_ERR_ARGUMENT, "no ridge period, or a bad target");
    float s = target_period / tip->ridge_period;
    float half = tip->width * 0.5f * half_angle_deg * kPi / 180; // arc length either side of the axis
    int w = int(std::lround(2 * half * s)), h = int(std::lround((tip->length + 0.05f * tip->width) * s));
    if (w < 16 || h < 16 || w > 1024 || h > 1024) return fail(CVIS_ERR_ARGUMENT, "the print would be too small or too large");
    *width = w;
    *height = h;
    return CVIS_OK;
}

cvis_status cvis_fingertip_print(cvis_image_view grey, const cvis_fingertip *tip, float target_period,
                                 float half_angle_deg, uint8_t *out, uint8_t *mask, int out_width, int out_height,
                                 cvis_print_quality *quality) {
    int w = 0, h = 0;
    if (!view_ok(grey) || grey.channels != 1 || !out) return fail(CVIS_ERR_ARGUMENT, "bad image or output");
    if (cvis_fingertip_print_size(tip, target_period, half_angle_deg, &w, &h) != CVIS_OK) return CVIS_ERR_ARGUMENT;
    if (w != out_width || h != out_height) return fail(CVIS_ERR_ARGUMENT, "output size differs from cvis_fingertip_print_size");
    return guarded([&]() -> cvis_status {
        cv::Mat frame = mat_of(grey);
        const float s = target_period / tip->ridge_period; // output px per frame px (along the surface)
        const float R = tip->width * 0.5f;
        const float margin = 0.05f * tip->width; // above the apex
        const float phiMax = half_angle_deg * kPi / 180;
        cv::Point2f apex(tip->tip_x, tip->tip_y), dir(tip->dir_x, tip->dir_y), perp(-tip->dir_y, tip->dir_x);
        // A view of the frame at ~2 frame px per output px at most (area-averaged when the print
        // is much smaller than the finger in the frame), then the unrolling map into it.
        cv::Mat mapX(h, w, CV_32F), mapY(h, w, CV_32F), mask8(h, w, CV_8U);
        // The rounded tip: the finger's half-width at depth a below the apex (an ellipse ~1.1 R deep).
        const float tipDepth = 1.1f * R;
        // Across the print: arc length → the lateral offset on the cylinder (mirrored left-right),
        // the same for every row.
        std::vector<float> lateral(w);
        std::vector<uint8_t> inArc(w);
        for (int x = 0; x < w; ++x) {
            float phi = (x + 0.5f - w * 0.5f) / s / R;
            lateral[x] = -R * std::sin(std::clamp(phi, -kPi / 2, kPi / 2));
            inArc[x] = std::fabs(phi) <= phiMax;
        }
        for (int y = 0; y < h; ++y) {
            float a = y / s - margin; // frame px below the apex, along the axis
            float half = a <= 0 ? 0 : (a >= tipDepth ? R : R * std::sqrt(std::max(0.0f, 1 - (1 - a / tipDepth) * (1 - a / tipDepth))));
            float *mx = mapX.ptr<float>(y), *my = mapY.ptr<float>(y);
            uint8_t *mk = mask8.ptr<uint8_t>(y);
            const cv::Point2f row = apex - dir * a;
            for (int x = 0; x < w; ++x) {
                mx[x] = row.x + perp.x * lateral[x];
                my[x] = row.y + perp.y * lateral[x];
                mk[x] = (inArc[x] && std::fabs(lateral[x]) <= 0.94f * half) ? 255 : 0;
            }
        }
        // Points that fall outside the frame are not finger.
        for (int y = 0; y < h; ++y) {
            const float *mx = mapX.ptr<float>(y), *my = mapY.ptr<float>(y);
            uint8_t *mk = mask8.ptr<uint8_t>(y);
            for (int x = 0; x < w; ++x)
                if (mx[x] < 0 || my[x] < 0 || mx[x] > frame.cols - 1 || my[x] > frame.rows - 1) mk[x] = 0;
        }
        cv::Mat crop;
        if (s < 0.5f) {
            // Area-average the finger's neighbourhood first so the remap does not alias.
            float pre = s * 2;
            cv::Rect roi = cv::boundingRect(std::vector<cv::Point2f>{
                apex + perp * (R + 2) + dir * (margin + 2), apex - perp * (R + 2) + dir * (margin + 2),
                apex + perp * (R + 2) - dir * (tip->length + 2), apex - perp * (R + 2) - dir * (tip->length + 2)});
            roi &= cv::Rect(0, 0, frame.cols, frame.rows);
            if (roi.width < 2 || roi.height < 2) return fail(CVIS_ERR_ARGUMENT, "the fingertip is outside the frame");
            cv::Mat small;
            cv::resize(frame(roi), small, cv::Size(), pre, pre, cv::INTER_AREA);
            mapX = (mapX - roi.x) * pre;
            mapY = (mapY - roi.y) * pre;
            cv::remap(small, crop, mapX, mapY, cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        } else {
            cv::remap(frame, crop, mapX, mapY, cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        }
        cv::erode(mask8, mask8, cv::Mat(), cv::Point(-1, -1), 2);
        cv::Mat maskF;
        mask8.convertTo(maskF, CV_32F, 1.0 / 255);
        cv::Mat f;
        crop.convertTo(f, CV_32F);
        cv::GaussianBlur(f, f, cv::Size(5, 5), 0.8);
        cv::Mat mean = cvis::finger::masked_blur(f, maskF, 8);
        cv::Mat flat = f - mean;
        cv::Mat var = cvis::finger::masked_blur(flat.mul(flat), maskF, 8);
        cv::Mat sd;
        cv::sqrt(var + 4.0f, sd);
        cv::Mat norm = flat / sd;
        cv::Mat o(h, w, CV_8U, out);
        cv::Mat outF = norm * 60 + 128;
        outF.setTo(255, mask8 == 0);
        outF.convertTo(o, CV_8U);
        if (mask) mask8.copyTo(cv::Mat(h, w, CV_8U, mask));
        if (quality) cvis::finger::measure_print(norm, flat, maskF, *quality);
        return CVIS_OK;
    });
}

int cvis_fingertip_closeup_seeds(cvis_image_view image, float min_width, cvis_fingertip_seed *out, int max_seeds,
                                 cvis_status *status) {
    int count = -1;
    cvis_status st;
    if (!view_ok(image) || (!out && max_seeds > 0) || max_seeds < 0 || !(min_width >= 0)) {
        st = fail(CVIS_ERR_ARGUMENT, "bad image or output");
    } else {
        st = guarded([&]() -> cvis_status {
            cv::Mat frame = mat_of(image);
            const float k = std::min(1.0f, 320.0f / std::max(frame.cols, frame.rows));
            cv::Mat small;
            cv::resize(frame, small, cv::Size(), k, k, cv::INTER_AREA);
            std::vector<cv::Mat> masks;
            cv::Mat y, cr;
            if (small.channels() == 3) {
                cv::Mat ycc;
                cv::cvtColor(small, ycc, cv::COLOR_BGR2YCrCb);
                cv::extractChannel(ycc, y, 0);
                cv::extractChannel(ycc, cr, 1);
                cv::Mat skin;
                cv::inRange(ycc, cv::Scalar(40, 136, 77), cv::Scalar(255, 180, 130), skin);
                masks.push_back(skin);
                cv::GaussianBlur(cr, cr, cv::Size(5, 5), 0);
                cv::Mat m;
                cv::threshold(cr, m, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU);
                masks.push_back(m);
            } else {
                y = small;
            }
            cv::GaussianBlur(y, y, cv::Size(5, 5), 0);
            cv::Mat bright;
            cv::threshold(y, bright, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU);
            masks.push_back(bright);
            std::vector<cvis_fingertip_seed> seeds;
            const cv::Mat k7 = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(7, 7));
            for (cv::Mat &m : masks) {
                cv::morphologyEx(m, m, cv::MORPH_OPEN, k7);
                cv::morphologyEx(m, m, cv::MORPH_CLOSE, k7);
                cv::Mat labels, stats, centroids;
                int n = cv::connectedComponentsWithStats(m, labels, stats, centroids, 8, CV_32S);
                int best = -1, bestArea = 0;
                for (int i = 1; i < n; ++i) {
                    int a = stats.at<int>(i, cv::CC_STAT_AREA);
                    if (a > bestArea) bestArea = a, best = i;
                }
                const int total = m.rows * m.cols;
                if (best < 0 || bestArea < total / 20 || bestArea > total * 9 / 10) continue;
                cv::Mat blob = labels == best;
                // Where the region enters the frame: its pixels within 4 px of the border (a
                // camera's outermost rows and columns are often dark).
                double bx = 0, by = 0;
                int nb = 0;
                const int edge = 4;
                for (int yy = 0; yy < m.rows; ++yy) {
                    const uint8_t *row = blob.ptr<uint8_t>(yy);
                    const bool rowEdge = yy < edge || yy >= m.rows - edge;
                    for (int x = 0; x < m.cols; ++x)
                        if (row[x] && (rowEdge || x < edge || x >= m.cols - edge)) bx += x, by += yy, ++nb;
                }
                cv::Point2f centroid(float(centroids.at<double>(best, 0)), float(centroids.at<double>(best, 1)));
                cv::Point2f entry;
                if (nb >= 4) {
                    entry = cv::Point2f(float(bx / nb), float(by / nb));
                } else {
                    // Not touching the border (its base in shadow): the end of the region's long
                    // axis nearer a border is where it comes from.
                    cv::Moments mo = cv::moments(blob, true);
                    if (mo.m00 <= 0) continue;
                    double th = 0.5 * std::atan2(2 * mo.mu11, mo.mu20 - mo.mu02);
                    cv::Point2f ax(float(std::cos(th)), float(std::sin(th)));
                    std::vector<cv::Point> all;
                    cv::findNonZero(blob, all);
                    cv::Point2f lo = centroid, hi = centroid;
                    float pmin = 0, pmax = 0;
                    for (const cv::Point &p : all) {
                        float pr = (cv::Point2f(p) - centroid).dot(ax);
                        if (pr < pmin) pmin = pr, lo = p;
                        if (pr > pmax) pmax = pr, hi = p;
                    }
                    auto border = [&](cv::Point2f q) { return std::min({q.x, q.y, m.cols - 1 - q.x, m.rows - 1 - q.y}); };
                    entry = border(lo) < border(hi) ? lo : hi;
                    if (border(entry) > 0.1f * std::max(m.cols, m.rows)) continue; // a blob in mid-frame is no finger held close
                }
                cv::Point2f dir = centroid - entry;
                float dl = std::hypot(dir.x, dir.y);
                if (dl < 2) continue;
                dir /= dl;
                cv::Point2f perp(-dir.y, dir.x);
                // Along-axis extent: the tip is the farthest blob pixel from the entry, near the axis.
                std::vector<cv::Point> pts;
                cv::findNonZero(blob, pts);
                float far = -1e9f;
                for (const cv::Point &p : pts) far = std::max(far, (cv::Point2f(p) - entry).dot(dir));
                // Widths across the axis, by depth below the tip (1-px bins).
                const int depthBins = int(far) + 2;
                std::vector<float> lo(depthBins, 1e9f), hi(depthBins, -1e9f);
                for (const cv::Point &p : pts) {
                    cv::Point2f d = cv::Point2f(p) - entry;
                    int depth = int(far - d.dot(dir));
                    if (depth < 0 || depth >= depthBins) continue;
                    float across = d.dot(perp);
                    lo[depth] = std::min(lo[depth], across);
                    hi[depth] = std::max(hi[depth], across);
                }
                // The width where the sides have become parallel: the median over 0.6–1.4 widths
                // below the tip (iterated from the width at 25 % of the length).
                float w = std::max(1.0f, hi[std::min(depthBins - 1, int(far / 4))] - lo[std::min(depthBins - 1, int(far / 4))]);
                std::vector<float> ws, cs;
                for (int it = 0; it < 3; ++it) {
                    ws.clear();
                    cs.clear();
                    for (int d = int(0.6f * w); d <= int(1.4f * w) && d < depthBins; ++d)
                        if (hi[d] > lo[d]) {
                            ws.push_back(hi[d] - lo[d]);
                            cs.push_back(0.5f * (hi[d] + lo[d]));
                        }
                    if (ws.size() < 3) break;
                    w = median(ws);
                }
                if (ws.size() < 3 || w / k < min_width) continue;
                // Finger-like: the region is at least as long as it is wide beyond the tip and its
                // width varies little there.
                int parallel = 0;
                for (float v : ws) parallel += std::fabs(v - w) < 0.2f * w;
                if (far < 1.0f * w || parallel < int(0.6f * ws.size())) continue;
                float c = median(cs);
                cv::Point2f tip = entry + dir * far + perp * c;
                cv::Point2f base = tip - dir * (1.35f * w);
                cvis_fingertip_seed s{tip.x / k, tip.y / k, base.x / k, base.y / k, w / k};
                bool duplicate = false;
                for (auto &o : seeds)
                    if (std::hypot(o.tip_x - s.tip_x, o.tip_y - s.tip_y) < 0.2f * s.width && std::fabs(o.width - s.width) < 0.2f * s.width)
                        duplicate = true;
                if (!duplicate) seeds.push_back(s);
            }
            count = std::min(int(seeds.size()), max_seeds);
            std::copy(seeds.begin(), seeds.begin() + count, out);
            return CVIS_OK;
        });
    }
    if (status) *status = st;
    return st == CVIS_OK ? count : -1;
}

float cvis_ridge_period(const uint8_t *grey, const uint8_t *mask, int width, int height, float *area, cvis_status *status) {
    float result = -1;
    cvis_status s;
    if (!grey || width < 32 || height < 32 || width > 8192 || height > 8192) {
        s = fail(CVIS_ERR_ARGUMENT, "bad image");
    } else {
        s = guarded([&]() -> cvis_status {
            cv::Mat g(height, width, CV_8U, const_cast<uint8_t *>(grey)), f, m;
            g.convertTo(f, CV_32F);
            if (mask) cv::Mat(height, width, CV_8U, const_cast<uint8_t *>(mask)).convertTo(m, CV_32F, 1.0 / 255);
            RidgeMeasure r = measure_ridges(f, m);
            if (area) *area = r.area;
            result = r.period;
            return CVIS_OK;
        });
    }
    if (status) *status = s;
    return s == CVIS_OK ? result : -1;
}

float cvis_print_ridge_period(const uint8_t *grey, const uint8_t *mask, int width, int height, cvis_status *status) {
    float result = -1;
    cvis_status s;
    if (!grey || width < 64 || height < 64 || width > 4096 || height > 4096) {
        s = fail(CVIS_ERR_ARGUMENT, "bad print");
    } else {
        s = guarded([&]() -> cvis_status {
            constexpr int T = 64, step = 32, N = 128;
            static const cv::Mat window = [] {
                cv::Mat w;
                cv::createHanningWindow(w, cv::Size(T, T), CV_32F);
                return w;
            }();
            cv::Mat g(height, width, CV_8U, const_cast<uint8_t *>(grey)), m;
            if (mask) m = cv::Mat(height, width, CV_8U, const_cast<uint8_t *>(mask));
            // The band's frequency bins (half plane u ≥ 0: each frequency once), once.
            static const std::vector<std::pair<int, int>> band = [] {
                std::vector<std::pair<int, int>> b;
                const float lo = float(N) / 16, hi = float(N) / 5; // periods 5–16 px
                for (int v = 0; v < N; ++v)
                    for (int u = 0; u <= N / 2; ++u) {
                        int fv = v <= N / 2 ? v : v - N;
                        float rad = std::sqrt(float(u * u + fv * fv));
                        if (rad >= lo && rad <= hi) b.push_back({u, fv});
                    }
                return b;
            }();
            cv::Mat tile, padded(N, N, CV_32F), spec, planes[2], power;
            std::vector<float> periods;
            for (int y = 0; y + T <= height; y += step)
                for (int x = 0; x + T <= width; x += step) {
                    cv::Rect r(x, y, T, T);
                    if (!m.empty() && cv::countNonZero(m(r)) < int(0.98 * T * T)) continue;
                    g(r).convertTo(tile, CV_32F);
                    tile -= cv::mean(tile)[0];
                    tile = tile.mul(window);
                    padded.setTo(0);
                    tile.copyTo(padded(cv::Rect(0, 0, T, T)));
                    cv::dft(padded, spec, cv::DFT_COMPLEX_OUTPUT);
                    cv::split(spec, planes);
                    cv::magnitude(planes[0], planes[1], power);
                    float best = 0;
                    int bu = 0, bv = 0;
                    for (auto [u, fv] : band) {
                        float p = power.at<float>((fv + N) % N, u);
                        if (p > best) {
                            best = p;
                            bu = u;
                            bv = fv;
                        }
                    }
                    if (best <= 0) continue;
                    // Sub-bin peak: a parabola through the peak and its neighbours on each axis.
                    auto at = [&](int u, int fv) {
                        if (u < 0) {
                            u = -u;
                            fv = -fv;
                        }
                        if (u > N / 2) return 0.f;
                        return power.at<float>((fv + N) % N, u);
                    };
                    auto refine = [](float l, float c, float r) {
                        float d = l - 2 * c + r;
                        return d < 0 ? std::clamp(0.5f * (l - r) / d, -0.5f, 0.5f) : 0.f;
                    };
                    float fu = bu + refine(at(bu - 1, bv), best, at(bu + 1, bv));
                    float fvv = bv + refine(at(bu, bv - 1), best, at(bu, bv + 1));
                    float rad = std::hypot(fu, fvv);
                    if (rad > 0) periods.push_back(float(N) / rad);
                }
            result = periods.size() >= 4 ? median(periods) : 0;
            return CVIS_OK;
        });
    }
    if (status) *status = s;
    return s == CVIS_OK ? result : -1;
}

cvis_status cvis_print_resample(const uint8_t *grey, int width, int height, uint8_t *out, int out_width, int out_height) {
    if (!grey || !out || width < 1 || height < 1 || out_width < 1 || out_height < 1 || width > 4096 || height > 4096 ||
        out_width > 4096 || out_height > 4096)
        return fail(CVIS_ERR_ARGUMENT, "bad print size");
    return guarded([&]() -> cvis_status {
        cv::Mat g(height, width, CV_8U, const_cast<uint8_t *>(grey)), o(out_height, out_width, CV_8U, out);
        bool shrink = out_width < width;
        cv::resize(g, o, o.size(), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_CUBIC);
        return CVIS_OK;
    });
}

} // extern "C"
