// Synthetic hand scenes behind cvision_hand_scene.h, for tests, the finger benchmark and replay
// cameras: an open hand, palm toward the camera, drawn as shaded capsules and an ellipsoid, whose
// distal phalanges carry real prints. Test support: the daemon does not link it.
#include "cvision_hand_scene.h"
#include "cvision_hand.h" // cvis_hand_nominal_width_mm: the finger widths the print conversion assumes
#include "cvision_internal.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

using cvis::fail;
using cvis::guarded;

namespace {

constexpr float kPi = 3.14159265f;

struct Vec {
    float x, y;
};
inline Vec operator+(Vec a, Vec b) { return {a.x + b.x, a.y + b.y}; }
inline Vec operator-(Vec a, Vec b) { return {a.x - b.x, a.y - b.y}; }
inline Vec operator*(Vec a, float k) { return {a.x * k, a.y * k}; }
inline float dot(Vec a, Vec b) { return a.x * b.x + a.y * b.y; }
inline float cross(Vec a, Vec b) { return a.x * b.y - a.y * b.x; }

// A print prepared as a ridge modulation map: +1 on ridges, -1 in valleys, faded to 0 off the print.
struct RidgeMap {
    cv::Mat mod; // CV_32F
    float ppmm = 22.4f;
    float topMM = 0, centreX = 0; // foreground top row and centre column (print pixels)
    bool valid() const { return !mod.empty(); }
    float sample(float x, float y) const {
        if (x < 0 || y < 0 || x >= mod.cols - 1 || y >= mod.rows - 1) return 0;
        int ix = int(x), iy = int(y);
        float fx = x - ix, fy = y - iy;
        const float *r0 = mod.ptr<float>(iy), *r1 = mod.ptr<float>(iy + 1);
        return (r0[ix] * (1 - fx) + r0[ix + 1] * fx) * (1 - fy) + (r1[ix] * (1 - fx) + r1[ix + 1] * fx) * fy;
    }
};

RidgeMap prepare_print(const uint8_t *pixels, int w, int h, float ppi, float framePxPerPrintPx) {
    RidgeMap r;
    if (!pixels || w <= 0 || h <= 0) return r;
    cv::Mat g(h, w, CV_8UC1, const_cast<uint8_t *>(pixels));
    cv::Mat f;
    g.convertTo(f, CV_32F);
    // Local normalisation: ridge signal independent of the sensor's contrast.
    cv::Mat mean, sq, var;
    cv::GaussianBlur(f, mean, cv::Size(), 6);
    cv::GaussianBlur((f - mean).mul(f - mean), var, cv::Size(), 6);
    cv::Mat sd;
    cv::sqrt(var + 1.0f, sd);
    cv::Mat n = (mean - f) / sd; // ridges (dark) positive
    // Foreground: where there is ridge contrast and the print is not background-white.
    cv::Mat fg = (sd > 10.0f) & (mean < 215.0f);
    cv::Mat fgf;
    fg.convertTo(fgf, CV_32F, 1.0 / 255);
    cv::GaussianBlur(fgf, fgf, cv::Size(), 8);
    cv::Mat m = n.mul(fgf);
    cv::min(m, 1.5f, m);
    cv::max(m, -1.5f, m);
    // Anti-alias for the frame's sampling.
    float sigma = std::max(0.4f, 0.45f / std::max(framePxPerPrintPx, 0.05f));
    cv::GaussianBlur(m, r.mod, cv::Size(), sigma);
    r.ppmm = ppi / 25.4f;
    // Foreground extent.
    cv::Rect box = cv::boundingRect(fg);
    r.topMM = box.height > 0 ? box.y / r.ppmm : 0;
    r.centreX = box.width > 0 ? box.x + box.width * 0.5f : w * 0.5f;
    return r;
}

// A finger (or thumb) as a capsule: base point, unit direction toward the tip, length from base to
// apex, radius.
struct Capsule {
    Vec base, dir;
    float length, radius;
    float creaseMM; // distal crease distance from the apex (mm), 0 = none
    const RidgeMap *ridges = nullptr;
    float pxPerMM = 1;
};

struct Canvas {
    cv::Mat img; // CV_32FC3, 0..1
    cv::Vec3f skin;
};

// Draws a shaded capsule (a cylinder with a hemispherical tip) over the canvas.
void draw_capsule(Canvas &c, const Capsule &k, float shadeAmbient) {
    Vec apex = k.base + k.dir * k.length;
    Vec tipCentre = apex - k.dir * k.radius;
    float r = k.radius;
    int x0 = std::max(0, int(std::min(k.base.x, apex.x) - r - 2)), x1 = std::min(c.img.cols - 1, int(std::max(k.base.x, apex.x) + r + 2));
    int y0 = std::max(0, int(std::min(k.base.y, apex.y) - r - 2)), y1 = std::min(c.img.rows - 1, int(std::max(k.base.y, apex.y) + r + 2));
    float segLen = k.length - r;
    for (int y = y0; y <= y1; ++y) {
        cv::Vec3f *row = c.img.ptr<cv::Vec3f>(y);
        for (int x = x0; x <= x1; ++x) {
            Vec p{float(x), float(y)};
            Vec d = p - k.base;
            float t = std::clamp(dot(d, k.dir), 0.0f, segLen);
            Vec q = k.base + k.dir * t;
            Vec e = p - q;
            float dist = std::sqrt(dot(e, e));
            float cover = std::clamp(r - dist + 0.5f, 0.0f, 1.0f);
            if (cover <= 0) continue;
            float u = std::min(dist / r, 1.0f);
            float z = std::sqrt(std::max(0.0f, 1 - u * u));
            // Light from the camera, slightly from the top-left.
            Vec en = dist > 1e-3f ? e * (1.0f / dist) : Vec{0, 0};
            float nx = en.x * u, ny = en.y * u;
            float lambert = std::max(0.0f, 0.93f * z - 0.25f * nx - 0.25f * ny);
            float shade = shadeAmbient + (1 - shadeAmbient) * lambert;
            float mod = 1;
            float along = dot(apex - p, k.dir); // mm from apex = along / pxPerMM
            if (k.ridges && k.ridges->valid()) {
                // Signed offset across the finger. Its sign maps the print mirrored, as a camera
                // sees a fingertip whose contact impression (the FVC image) is the ink-card view.
                float lateral = -cross(k.dir, d);
                float s = std::clamp(lateral / r, -1.0f, 1.0f);
                float surfMM = (r / k.pxPerMM) * std::asin(s); // arc length on the finger's surface
                float aMM = along / k.pxPerMM;
                float px = k.ridges->centreX + surfMM * k.ridges->ppmm;
                float py = (k.ridges->topMM - 1.0f + aMM) * k.ridges->ppmm;
                mod = 1 - 0.16f * k.ridges->sample(px, py);
            }
            if (k.creaseMM > 0) {
                float dc = std::fabs(along / k.pxPerMM - k.creaseMM);
                if (dc < 0.6f) mod *= 0.86f + 0.14f * dc / 0.6f;
            }
            // Perfusion: fingertips a little redder than the rest of the hand.
            float tipness = std::clamp(1 - along / (3 * r), 0.0f, 1.0f);
            cv::Vec3f col = c.skin * (shade * mod);
            col[2] *= 1 + 0.05f * tipness;
            col[1] *= 1 - 0.03f * tipness;
            row[x] = row[x] * (1 - cover) + col * cover;
        }
    }
}

// The palm as a shaded ellipse (semi-axes a across, b along the hand).
void draw_palm(Canvas &c, Vec centre, Vec up, float a, float b) {
    Vec side{-up.y, up.x};
    float rmax = std::max(a, b);
    int x0 = std::max(0, int(centre.x - rmax - 2)), x1 = std::min(c.img.cols - 1, int(centre.x + rmax + 2));
    int y0 = std::max(0, int(centre.y - rmax - 2)), y1 = std::min(c.img.rows - 1, int(centre.y + rmax + 2));
    for (int y = y0; y <= y1; ++y) {
        cv::Vec3f *row = c.img.ptr<cv::Vec3f>(y);
        for (int x = x0; x <= x1; ++x) {
            Vec d = Vec{float(x), float(y)} - centre;
            float u = dot(d, side) / a, v = dot(d, up) / b;
            float rr = std::sqrt(u * u + v * v);
            float cover = std::clamp((1 - rr) * std::min(a, b) + 0.5f, 0.0f, 1.0f);
            if (cover <= 0) continue;
            float z = std::sqrt(std::max(0.0f, 1 - std::min(rr, 1.0f) * std::min(rr, 1.0f)));
            float shade = 0.45f + 0.55f * z;
            row[x] = row[x] * (1 - cover) + c.skin * shade * cover;
        }
    }
}

void draw_background(cv::Mat &img, cv::RNG &rng) {
    cv::Vec3f top(0.55f + float(rng.uniform(-0.1, 0.1)), 0.55f, 0.50f), bottom(0.35f, 0.38f + float(rng.uniform(-0.05, 0.05)), 0.36f);
    for (int y = 0; y < img.rows; ++y) {
        float t = float(y) / img.rows;
        cv::Vec3f col = top * (1 - t) + bottom * t;
        cv::Vec3f *row = img.ptr<cv::Vec3f>(y);
        for (int x = 0; x < img.cols; ++x) row[x] = col;
    }
    // A few muted objects (shelves, frames): low chroma so they are not skin.
    for (int i = 0; i < 4; ++i) {
        int w = rng.uniform(img.cols / 10, img.cols / 3), h = rng.uniform(img.rows / 10, img.rows / 3);
        int x = rng.uniform(0, img.cols - w), y = rng.uniform(0, img.rows - h);
        float g = float(rng.uniform(0.15, 0.8));
        cv::Vec3f col(g + float(rng.uniform(0.0, 0.12)), g + float(rng.uniform(-0.04, 0.04)), g - float(rng.uniform(0.0, 0.06)));
        cv::rectangle(img, cv::Rect(x, y, w, h), cv::Scalar(col[0], col[1], col[2]), cv::FILLED);
    }
}

} // namespace

extern "C" {

cvis_status cvis_hand_render_scene(const cvis_scene_params *p, uint8_t *bgr) {
    if (!p || !bgr || p->width < 64 || p->height < 64 || p->width > 8192 || p->height > 8192 || p->finger_width < 4)
        return fail(CVIS_ERR_ARGUMENT, "bad scene parameters");
    return guarded([&]() -> cvis_status {
        const int W = p->width, H = p->height;
        cv::RNG rng(uint64_t(p->seed) * 2654435761u + 17);
        Canvas c;
        c.img.create(H, W, CV_32FC3);
        draw_background(c.img, rng);
        // Per-scene constants from the seed, per-frame motion from (seed, frame).
        const float skinJitter = float(rng.uniform(-0.04, 0.04));
        c.skin = cv::Vec3f(0.50f + skinJitter, 0.62f + skinJitter, 0.86f); // BGR, light skin
        const float ph[8] = {float(rng.uniform(0.0, 6.28)), float(rng.uniform(0.0, 6.28)), float(rng.uniform(0.0, 6.28)),
                             float(rng.uniform(0.0, 6.28)), float(rng.uniform(0.0, 6.28)), float(rng.uniform(0.0, 6.28)),
                             float(rng.uniform(0.0, 6.28)), float(rng.uniform(0.0, 6.28))};
        cv::RNG frameRng(uint64_t(p->seed) * 7919u + uint64_t(p->frame_index) * 104729u + 3);
        const float f = float(p->frame_index);
        const bool live = p->attack == CVIS_SCENE_LIVE;

        if (!p->empty) {
            const float wMid = p->finger_width;
            const float pxPerMM = wMid / cvis_hand_nominal_width_mm(2);
            const float scale = 1 + 0.015f * std::sin(0.23f * f + ph[3]);
            const float rot = (p->rotation + 1.2f * std::sin(0.29f * f + ph[2])) * kPi / 180;
            const Vec shift{8 * std::sin(0.37f * f + ph[0]) + float(frameRng.gaussian(1.0)),
                            6 * std::sin(0.31f * f + ph[1]) + float(frameRng.gaussian(1.0))};
            const float sgn = p->right_hand ? 1.0f : -1.0f; // thumb side is +x for a right hand
            const float w = wMid * scale, mm = pxPerMM * scale;
            // Hand-local frame: x toward the thumb side (mirrored for the left hand), y toward the wrist.
            const Vec up{std::sin(rot), -std::cos(rot)}, side{std::cos(rot), std::sin(rot)};
            auto dirAt = [&](float deg) {
                float a = rot + sgn * deg * kPi / 180;
                return Vec{std::sin(a), -std::cos(a)};
            };
            std::vector<RidgeMap> maps(5);
            auto mapFor = [&](int slot) -> const RidgeMap * {
                if (slot < 0 || slot > 4 || !p->prints[slot]) return nullptr;
                float framePxPerPrintPx = mm / (p->print_ppi / 25.4f);
                maps[slot] = prepare_print(p->prints[slot], p->print_width[slot], p->print_height[slot],
                                           p->print_ppi > 0 ? p->print_ppi : 500, framePxPerPrintPx);
                return &maps[slot];
            };
            // Anchor: in 4-finger mode the middle fingertip, in thumb mode the thumb tip.
            const Vec anchor{p->tip_x * W + shift.x, p->tip_y * H + shift.y};
            auto local = [&](Vec origin, float lx, float ly) { return origin + side * (sgn * lx) + up * (-ly); };

            if (!p->thumb_mode) {
                // Knuckle line centre so that the middle fingertip lands on the anchor.
                const float midLen = 3.9f * w;
                Vec dMid = dirAt(2);
                Vec knuckle = anchor - dMid * midLen;
                // Forearm and palm.
                Vec palmC = local(knuckle, 0, 2.3f * w);
                Capsule arm{local(knuckle, 0, 9 * w), up, 6.5f * w, 1.9f * w, 0, nullptr, mm};
                draw_capsule(c, arm, 0.4f);
                draw_palm(c, palmC, up, 2.55f * w, 2.7f * w);
                // Thumb, folded to the side.
                Capsule thumb{local(knuckle, 2.3f * w, 2.7f * w), dirAt(52), 3.0f * w, 0.5f * cvis_hand_nominal_width_mm(0) * mm, 0, nullptr, mm};
                draw_capsule(c, thumb, 0.3f);
                // Fingers: index, middle, ring, little (digit 1..4).
                const float baseX[4] = {1.62f, 0.5f, -0.6f, -1.62f}, baseY[4] = {0.15f, 0.0f, 0.1f, 0.45f};
                const float len[4] = {3.5f, 3.9f, 3.6f, 2.9f}, fan[4] = {10, 2, -6, -15};
                for (int i = 0; i < 4; ++i) {
                    if (p->absent & (1u << (i + 1))) {
                        // Amputated: a short stump.
                        float r = 0.5f * cvis_hand_nominal_width_mm(i + 1) * mm;
                        Capsule stump{local(knuckle, baseX[i] * w, baseY[i] * w + 0.6f * w), dirAt(fan[i]), 1.0f * w, r, 0, nullptr, mm};
                        draw_capsule(c, stump, 0.3f);
                        continue;
                    }
                    float jitter = live ? 1.2f * std::sin(0.5f * f + ph[4 + i]) : 0.0f;
                    float r = 0.5f * cvis_hand_nominal_width_mm(i + 1) * mm;
                    Capsule fin{local(knuckle, baseX[i] * w, baseY[i] * w + 0.6f * w), dirAt(fan[i] + jitter), (len[i] + 0.6f) * w, r,
                                23.0f, mapFor(i), mm};
                    draw_capsule(c, fin, 0.3f);
                }
            } else {
                // Fist with the thumb up: thumb anchored at its tip.
                Vec dT = dirAt(12 + (live ? 1.0f * std::sin(0.5f * f + ph[4]) : 0.0f));
                float tr = 0.5f * cvis_hand_nominal_width_mm(0) * mm;
                float tLen = 3.4f * w;
                Vec tBase = anchor - dT * tLen;
                Vec palmC = local(tBase, -1.1f * w, 0.8f * w); // the thumb grows out of the palm
                Capsule arm{local(palmC, 0, 6.5f * w), up, 6.0f * w, 1.9f * w, 0, nullptr, mm};
                draw_capsule(c, arm, 0.4f);
                draw_palm(c, palmC, up, 2.5f * w, 2.4f * w);
                // Folded fingers: curled across the palm toward the thumb, as a fist shows them.
                for (int i = 0; i < 4; ++i) {
                    Capsule k{local(palmC, -2.0f * w, (-1.2f + 0.72f * i) * w), dirAt(90), 2.9f * w, 0.4f * w, 0, nullptr, mm};
                    draw_capsule(c, k, 0.35f);
                }
                Capsule thumb{tBase, dT, tLen, tr, 27.0f, mapFor(0), mm};
                draw_capsule(c, thumb, 0.3f);
            }
        }

        cv::Mat out;
        if (p->blur_sigma > 0) cv::GaussianBlur(c.img, c.img, cv::Size(), p->blur_sigma);
        if (p->attack == CVIS_SCENE_PAPER) {
            // A colour print of a photo of the hand, photographed: desaturated, compressed contrast,
            // flat page illumination, halftone dots and paper grain.
            cv::Mat grey;
            cv::cvtColor(c.img, grey, cv::COLOR_BGR2GRAY);
            cv::Mat grey3;
            cv::cvtColor(grey, grey3, cv::COLOR_GRAY2BGR);
            c.img = c.img * 0.6 + grey3 * 0.4;
            c.img = c.img * 0.75 + cv::Scalar::all(0.12);
            for (int y = 0; y < H; ++y) {
                cv::Vec3f *row = c.img.ptr<cv::Vec3f>(y);
                for (int x = 0; x < W; ++x) {
                    float page = 0.92f + 0.1f * float(x) / W;
                    float dots = std::cos(2 * kPi * (x + y) / 4.2f) * std::cos(2 * kPi * (x - y) / 4.2f);
                    row[x] *= page * (1 - 0.09f * (0.5f + 0.5f * dots));
                }
            }
        } else if (p->attack == CVIS_SCENE_SCREEN) {
            // A phone or monitor showing the hand: bluer white point, the sub-pixel stripes and the
            // dark gaps between pixel rows of the display.
            for (int y = 0; y < H; ++y) {
                cv::Vec3f *row = c.img.ptr<cv::Vec3f>(y);
                for (int x = 0; x < W; ++x) {
                    cv::Vec3f v = row[x];
                    v[0] = v[0] * 1.1f + 0.04f;
                    v[2] *= 0.94f;
                    v[x % 3] *= 1.12f;
                    if (y % 3 == 0) v *= 0.9f;
                    row[x] = v;
                }
            }
        }
        cv::Mat noise(H, W, CV_32FC3);
        frameRng.fill(noise, cv::RNG::NORMAL, cv::Scalar::all(0), cv::Scalar::all(p->attack == CVIS_SCENE_PAPER ? 0.012 : 0.008));
        c.img += noise;
        cv::Mat dst(H, W, CV_8UC3, bgr);
        c.img.convertTo(dst, CV_8UC3, 255.0);
        return CVIS_OK;
    });
}

} // extern "C"
