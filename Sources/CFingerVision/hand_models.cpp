// MediaPipe hands behind cvision_hand_models.h: the palm detector (SSD on a 192×192 letterbox,
// 2,016 anchors) and the 21-point landmark model on a rotated 224×224 crop, with MediaPipe's
// tracking (the next frame's crop comes from this frame's landmarks; the detector runs only when
// the track is lost). Decoding follows MediaPipe's palm_detection and hand_landmark graphs.
#include "cvision_hand_models.h"
#include "cvision_internal.hpp"
#include "finger_internal.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

using cvis::fail;
using cvis::guarded;
using cvis::finger::view_ok;

namespace {

constexpr float kPi = 3.14159265358979f;
constexpr int kPalmSide = 192;
constexpr int kLandmarkSide = 224;
constexpr int kAnchors = 2016;

// MediaPipe's SSD anchors for the palm detector: strides 8, 16, 16, 16 on 192×192 give a 24×24
// grid with 2 anchors per cell and a 12×12 grid with 6 per cell; every anchor is 1×1 (fixed size).
std::vector<cv::Point2f> palm_anchors() {
    std::vector<cv::Point2f> a;
    a.reserve(kAnchors);
    const int grids[2] = {24, 12}, per[2] = {2, 6};
    for (int g = 0; g < 2; ++g)
        for (int y = 0; y < grids[g]; ++y)
            for (int x = 0; x < grids[g]; ++x)
                for (int k = 0; k < per[g]; ++k) a.emplace_back((x + 0.5f) / grids[g], (y + 0.5f) / grids[g]);
    return a;
}

float normalize_radians(float a) { return a - 2 * kPi * std::floor((a + kPi) / (2 * kPi)); }

// A square crop of the frame, turned by `angle` (radians, clockwise on screen: the crop's up is the
// frame direction (sin a, -cos a)).
struct Crop {
    float cx = 0, cy = 0, size = 0, angle = 0;
    // crop pixel (u, v) of a side×side tensor → frame
    cv::Matx23f toFrame(int side) const {
        float k = size / side, c = std::cos(angle) * k, s = std::sin(angle) * k;
        return cv::Matx23f(c, -s, cx - (c - s) * side * 0.5f, s, c, cy - (s + c) * side * 0.5f);
    }
};

bool has_outputs(cv::dnn::Net &net, std::initializer_list<const char *> names) {
    std::vector<cv::String> outs = net.getUnconnectedOutLayersNames();
    for (const char *n : names)
        if (std::find(outs.begin(), outs.end(), n) == outs.end()) return false;
    return true;
}

} // namespace

struct cvis_hand_models {
    cv::dnn::Net palm, landmark;
    std::mutex palm_mutex, landmark_mutex;
    std::vector<cv::Point2f> anchors = palm_anchors();
};

struct cvis_hand_tracker {
    cvis_hand_models *models = nullptr;
    bool tracking = false;
    Crop crop;                         // where the next frame's landmarks are read
    bool hasLast = false;
    Crop last;                         // the last crop landmarks were found in (for a predicted crop)
    cv::Mat rgb, letterbox, patch, blob; // scratch
};

namespace {

// The frame (BGR or grey), not copied: only the networks' small inputs are converted to RGB.
cv::Mat frame_of(const cvis_image_view &v) {
    return cv::Mat(v.height, v.width, v.channels == 3 ? CV_8UC3 : CV_8UC1, const_cast<uint8_t *>(v.pixels));
}

// A network input (BGR or grey patch) as an RGB float blob scaled to 0..1.
void to_blob(cvis_hand_tracker &t, const cv::Mat &patch) {
    cv::cvtColor(patch, t.rgb, patch.channels() == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_GRAY2RGB);
    cv::dnn::blobFromImage(t.rgb, t.blob, 1.0 / 255.0);
}

struct Palm {
    float score;
    float cx, cy, w, h; // normalised to the letterbox (0..1)
    float kx[7], ky[7];
};

float iou(const Palm &a, const Palm &b) {
    float ax0 = a.cx - a.w / 2, ax1 = a.cx + a.w / 2, ay0 = a.cy - a.h / 2, ay1 = a.cy + a.h / 2;
    float bx0 = b.cx - b.w / 2, bx1 = b.cx + b.w / 2, by0 = b.cy - b.h / 2, by1 = b.cy + b.h / 2;
    float ix = std::max(0.0f, std::min(ax1, bx1) - std::max(ax0, bx0));
    float iy = std::max(0.0f, std::min(ay1, by1) - std::max(ay0, by0));
    float inter = ix * iy, uni = a.w * a.h + b.w * b.h - inter;
    return uni > 0 ? inter / uni : 0;
}

// Palms in frame pixels, best first.
std::vector<cvis_palm> detect(cvis_hand_tracker &t, const cv::Mat &rgb, float minScore) {
    // Letterbox: the frame scaled to fit 192×192 (area-averaged), centred, black bars.
    float s = float(kPalmSide) / std::max(rgb.cols, rgb.rows);
    int nw = std::max(1, int(std::lround(rgb.cols * s))), nh = std::max(1, int(std::lround(rgb.rows * s)));
    int px = (kPalmSide - nw) / 2, py = (kPalmSide - nh) / 2;
    t.letterbox.create(kPalmSide, kPalmSide, rgb.type());
    t.letterbox.setTo(cv::Scalar::all(0));
    cv::Mat inner = t.letterbox(cv::Rect(px, py, nw, nh));
    cv::resize(rgb, inner, cv::Size(nw, nh), 0, 0, s < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
    to_blob(t, t.letterbox);
    std::vector<cv::Mat> outs;
    {
        std::lock_guard<std::mutex> lock(t.models->palm_mutex);
        t.models->palm.setInput(t.blob);
        t.models->palm.forward(outs, std::vector<cv::String>{"Identity", "Identity_1"});
    }
    if (outs.size() != 2 || outs[0].total() != size_t(kAnchors) * 18 || outs[1].total() != size_t(kAnchors))
        throw std::runtime_error("palm detector: unexpected output shapes");
    const float *reg = outs[0].ptr<float>(), *cls = outs[1].ptr<float>();
    const float logitMin = std::log(minScore / (1 - minScore));
    std::vector<Palm> raw;
    for (int i = 0; i < kAnchors; ++i) {
        float logit = std::clamp(cls[i], -100.0f, 100.0f);
        if (logit < logitMin) continue;
        const float *r = reg + i * 18;
        const cv::Point2f &a = t.models->anchors[i];
        Palm p;
        p.score = 1 / (1 + std::exp(-logit));
        p.cx = r[0] / kPalmSide + a.x;
        p.cy = r[1] / kPalmSide + a.y;
        p.w = r[2] / kPalmSide;
        p.h = r[3] / kPalmSide;
        for (int k = 0; k < 7; ++k) {
            p.kx[k] = r[4 + 2 * k] / kPalmSide + a.x;
            p.ky[k] = r[5 + 2 * k] / kPalmSide + a.y;
        }
        if (p.w > 0 && p.h > 0) raw.push_back(p);
    }
    std::sort(raw.begin(), raw.end(), [](const Palm &a, const Palm &b) { return a.score > b.score; });
    // MediaPipe's weighted non-maximum suppression: each kept palm is the score-weighted mean of
    // the boxes (and keypoints) that overlap it by IoU > 0.3.
    std::vector<cvis_palm> result;
    std::vector<bool> used(raw.size(), false);
    for (size_t i = 0; i < raw.size(); ++i) {
        if (used[i]) continue;
        Palm sum{};
        float total = 0;
        for (size_t j = i; j < raw.size(); ++j) {
            if (used[j] || iou(raw[i], raw[j]) <= 0.3f) continue;
            used[j] = true;
            const Palm &q = raw[j];
            total += q.score;
            sum.cx += q.score * q.cx;
            sum.cy += q.score * q.cy;
            sum.w += q.score * q.w;
            sum.h += q.score * q.h;
            for (int k = 0; k < 7; ++k) {
                sum.kx[k] += q.score * q.kx[k];
                sum.ky[k] += q.score * q.ky[k];
            }
        }
        cvis_palm out{};
        auto fx = [&](float v) { return (v / total * kPalmSide - px) / s; };
        auto fy = [&](float v) { return (v / total * kPalmSide - py) / s; };
        out.cx = fx(sum.cx);
        out.cy = fy(sum.cy);
        out.width = sum.w / total * kPalmSide / s;
        out.height = sum.h / total * kPalmSide / s;
        for (int k = 0; k < 7; ++k) {
            out.kx[k] = fx(sum.kx[k]);
            out.ky[k] = fy(sum.ky[k]);
        }
        out.score = raw[i].score;
        result.push_back(out);
    }
    return result;
}

// MediaPipe's palm → hand crop: turned so the wrist (keypoint 0) → middle-finger base (2) axis
// points up, shifted half a box height toward the fingers, a square 2.6× the box.
Crop palm_crop(const cvis_palm &p) {
    Crop c;
    c.angle = normalize_radians(kPi / 2 - std::atan2(-(p.ky[2] - p.ky[0]), p.kx[2] - p.kx[0]));
    const float shiftY = -0.5f;
    c.cx = p.cx - p.height * shiftY * std::sin(c.angle);
    c.cy = p.cy + p.height * shiftY * std::cos(c.angle);
    c.size = std::max(p.width, p.height) * 2.6f;
    return c;
}

// MediaPipe's landmarks → next crop: turned by wrist → (middle base + mean of index and ring
// bases)/2, the bounding box of the palm and lower finger joints in that turned frame, a square
// 2× its longer side, shifted a tenth of its height toward the fingers.
Crop landmark_crop(const cvis_hand_landmarks &h) {
    static const int subset[12] = {0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18};
    Crop c;
    float x1 = ((h.x[5] + h.x[13]) / 2 + h.x[9]) / 2, y1 = ((h.y[5] + h.y[13]) / 2 + h.y[9]) / 2;
    c.angle = normalize_radians(kPi / 2 - std::atan2(-(y1 - h.y[0]), x1 - h.x[0]));
    float ca = std::cos(c.angle), sa = std::sin(c.angle);
    float minU = 1e9f, maxU = -1e9f, minV = 1e9f, maxV = -1e9f;
    float ax0 = 1e9f, ax1 = -1e9f, ay0 = 1e9f, ay1 = -1e9f;
    for (int i : subset) {
        ax0 = std::min(ax0, h.x[i]);
        ax1 = std::max(ax1, h.x[i]);
        ay0 = std::min(ay0, h.y[i]);
        ay1 = std::max(ay1, h.y[i]);
    }
    float acx = (ax0 + ax1) / 2, acy = (ay0 + ay1) / 2;
    for (int i : subset) {
        float dx = h.x[i] - acx, dy = h.y[i] - acy;
        float u = ca * dx + sa * dy, v = -sa * dx + ca * dy; // into the turned frame
        minU = std::min(minU, u);
        maxU = std::max(maxU, u);
        minV = std::min(minV, v);
        maxV = std::max(maxV, v);
    }
    float cu = (minU + maxU) / 2, cv_ = (minV + maxV) / 2, w = maxU - minU, hgt = maxV - minV;
    c.cx = acx + ca * cu - sa * cv_;
    c.cy = acy + sa * cu + ca * cv_;
    const float shiftY = -0.1f;
    c.cx += -hgt * shiftY * sa;
    c.cy += hgt * shiftY * ca;
    c.size = std::max(w, hgt) * 2.0f;
    return c;
}

// Landmarks on a crop; false when the crop is degenerate.
bool read_landmarks(cvis_hand_tracker &t, const cv::Mat &rgb, const Crop &crop, cvis_hand_landmarks &out) {
    if (!(crop.size > 8) || !std::isfinite(crop.cx) || !std::isfinite(crop.cy)) return false;
    cv::Matx23f toFrame = crop.toFrame(kLandmarkSide);
    cv::warpAffine(rgb, t.patch, toFrame, cv::Size(kLandmarkSide, kLandmarkSide), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                   cv::BORDER_CONSTANT, cv::Scalar::all(0));
    to_blob(t, t.patch);
    std::vector<cv::Mat> outs;
    {
        std::lock_guard<std::mutex> lock(t.models->landmark_mutex);
        t.models->landmark.setInput(t.blob);
        t.models->landmark.forward(outs, std::vector<cv::String>{"Identity", "Identity_1", "Identity_2"});
    }
    if (outs.size() != 3 || outs[0].total() != 63 || outs[1].total() != 1 || outs[2].total() != 1)
        throw std::runtime_error("hand landmark model: unexpected output shapes");
    const float *p = outs[0].ptr<float>();
    const float k = crop.size / kLandmarkSide;
    for (int i = 0; i < CVIS_HAND_POINTS; ++i) {
        float u = p[3 * i], v = p[3 * i + 1];
        out.x[i] = toFrame(0, 0) * u + toFrame(0, 1) * v + toFrame(0, 2);
        out.y[i] = toFrame(1, 0) * u + toFrame(1, 1) * v + toFrame(1, 2);
        out.z[i] = p[3 * i + 2] * k;
    }
    out.presence = outs[1].ptr<float>()[0];
    out.handedness = outs[2].ptr<float>()[0];
    out.roi_cx = crop.cx;
    out.roi_cy = crop.cy;
    out.roi_size = crop.size;
    out.roi_angle = crop.angle;
    return std::isfinite(out.presence);
}

} // namespace

extern "C" {

cvis_hand_models *cvis_hand_models_load(const char *palm_onnx, const char *landmark_onnx, cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    cvis_hand_models *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!palm_onnx || !landmark_onnx) return fail(CVIS_ERR_ARGUMENT, "both hand models are required");
        auto models = std::make_unique<cvis_hand_models>();
        auto load = [](const char *path, cv::dnn::Net &net) -> bool {
            try {
                net = cv::dnn::readNetFromONNX(path);
            } catch (const cv::Exception &e) {
                fail(CVIS_ERR_DECODE, std::string(path) + " is not a loadable ONNX model: " + e.what());
                return false;
            }
            net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
            net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
            return true;
        };
        if (!load(palm_onnx, models->palm)) return CVIS_ERR_DECODE;
        if (!has_outputs(models->palm, {"Identity", "Identity_1"}))
            return fail(CVIS_ERR_FORMAT, std::string(palm_onnx) + " is not MediaPipe's palm detector (outputs Identity, Identity_1)");
        if (!load(landmark_onnx, models->landmark)) return CVIS_ERR_DECODE;
        if (!has_outputs(models->landmark, {"Identity", "Identity_1", "Identity_2"}))
            return fail(CVIS_ERR_FORMAT, std::string(landmark_onnx) + " is not MediaPipe's hand landmark model (outputs Identity..Identity_2)");
        result = models.release();
        return CVIS_OK;
    });
    return *status == CVIS_OK ? result : nullptr;
}

void cvis_hand_models_free(cvis_hand_models *models) {
    try {
        delete models;
    } catch (...) {
    }
}

cvis_hand_tracker *cvis_hand_tracker_create(const cvis_hand_models *models, cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    cvis_hand_tracker *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!models) return fail(CVIS_ERR_ARGUMENT, "no hand models");
        auto t = std::make_unique<cvis_hand_tracker>();
        t->models = const_cast<cvis_hand_models *>(models); // the networks' forward() is not const; guarded by their locks
        result = t.release();
        return CVIS_OK;
    });
    return *status == CVIS_OK ? result : nullptr;
}

void cvis_hand_tracker_free(cvis_hand_tracker *tracker) {
    try {
        delete tracker;
    } catch (...) {
    }
}

void cvis_hand_tracker_reset(cvis_hand_tracker *tracker) {
    if (tracker) tracker->tracking = tracker->hasLast = false;
}

void cvis_hand_tracker_shift(cvis_hand_tracker *tracker, float dx, float dy, float scale) {
    if (!tracker || !std::isfinite(dx) || !std::isfinite(dy) || !(scale > 0.2f && scale < 5)) return;
    cvis_hand_tracker &t = *tracker;
    if (!t.tracking) {
        if (!t.hasLast) return;
        t.crop = t.last; // the hand's last crop, moved with it: tried on the next frame
        t.tracking = true;
    }
    t.crop.cx += dx;
    t.crop.cy += dy;
    t.crop.size *= scale;
    t.last = t.crop;
}

int cvis_hand_track(cvis_hand_tracker *tracker, cvis_image_view image, float min_presence, int allow_detect,
                    cvis_hand_landmarks *out, cvis_status *status) {
    int found = -1;
    cvis_status s;
    if (!tracker || !view_ok(image) || !out) {
        s = fail(CVIS_ERR_ARGUMENT, "bad tracker, image or output");
    } else {
        s = guarded([&]() -> cvis_status {
            cvis_hand_tracker &t = *tracker;
            const cv::Mat rgb = frame_of(image);
            cvis_hand_landmarks h{};
            if (t.tracking) {
                // The crop from the last frame, then the same crop half as large again (a hand
                // that came closer or moved fast between frames).
                Crop wide = t.crop;
                wide.size *= 1.5f;
                for (const Crop &c : {t.crop, wide}) {
                    if (read_landmarks(t, rgb, c, h) && h.presence >= min_presence) {
                        t.last = c;
                        t.hasLast = true;
                        t.crop = landmark_crop(h);
                        *out = h;
                        found = 1;
                        return CVIS_OK;
                    }
                }
                t.tracking = false;
            }
            found = 0;
            if (!allow_detect) return CVIS_OK;
            std::vector<cvis_palm> palms = detect(t, rgb, 0.5f);
            // The most confident palm; a second hand in view is not followed.
            for (size_t i = 0; i < palms.size() && i < 2; ++i) {
                Crop c = palm_crop(palms[i]);
                if (read_landmarks(t, rgb, c, h) && h.presence >= min_presence) {
                    h.palm_score = palms[i].score;
                    t.last = c;
                    t.hasLast = true;
                    t.crop = landmark_crop(h);
                    t.tracking = true;
                    *out = h;
                    found = 1;
                    break;
                }
            }
            return CVIS_OK;
        });
    }
    if (status) *status = s;
    return s == CVIS_OK ? found : -1;
}

int cvis_hand_detect_palms(cvis_hand_tracker *tracker, cvis_image_view image, float min_score, cvis_palm *out,
                           int max_palms, cvis_status *status) {
    int count = -1;
    cvis_status s;
    if (!tracker || !view_ok(image) || (!out && max_palms > 0) || max_palms < 0 || !(min_score > 0 && min_score < 1)) {
        s = fail(CVIS_ERR_ARGUMENT, "bad tracker, image, output or score");
    } else {
        s = guarded([&]() -> cvis_status {
            std::vector<cvis_palm> palms = detect(*tracker, frame_of(image), min_score);
            count = std::min(int(palms.size()), max_palms);
            std::copy(palms.begin(), palms.begin() + count, out);
            return CVIS_OK;
        });
    }
    if (status) *status = s;
    return s == CVIS_OK ? count : -1;
}

} // extern "C"
