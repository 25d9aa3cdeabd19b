// The second face network behind cvision_recognizer.h: MobileFaceNet (ArcFace loss) through
// OpenCV's dnn module, on a chip aligned to the ArcFace five-point template.
#include "cvision_recognizer.h"
#include "cvision_internal.hpp"
#include "onnx_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

using cvis::fail;
using cvis::guarded;
using cvis::read_file;
using cvis::make_net;

struct cvis_recognizer_models {
    std::vector<uchar> onnx;
};

struct cvis_recognizer {
    cv::dnn::Net net;
    cv::Mat chip, mirrored, blob; // scratch, reused frame after frame
};

namespace {

constexpr int side = 112;
// insightface's arcface_dst: where the eyes, nose tip and mouth corners of a 112×112 chip lie.
constexpr float template_points[10] = {38.2946f, 51.6963f, 73.5318f, 51.5014f, 56.0252f,
                                       71.7366f, 41.5493f, 92.3655f, 70.7299f, 92.2041f};
constexpr float channel_mean[3] = {0.485f, 0.456f, 0.406f}; // R, G, B
constexpr float channel_std[3] = {0.229f, 0.224f, 0.225f};

// The least-squares similarity transform (rotation, uniform scale, shift) taking `from` onto
// `to` (Umeyama's, in complex numbers: w = a·z + b), as a 2×3 matrix for warpAffine.
cv::Mat similarity(const float *from, const float *to, int n) {
    double zx = 0, zy = 0, wx = 0, wy = 0;
    for (int i = 0; i < n; ++i) { zx += from[2 * i]; zy += from[2 * i + 1]; wx += to[2 * i]; wy += to[2 * i + 1]; }
    zx /= n; zy /= n; wx /= n; wy /= n;
    double re = 0, im = 0, norm = 0;
    for (int i = 0; i < n; ++i) {
        double ax = from[2 * i] - zx, ay = from[2 * i + 1] - zy, bx = to[2 * i] - wx, by = to[2 * i + 1] - wy;
        re += ax * bx + ay * by; // conj(z)·w
        im += ax * by - ay * bx;
        norm += ax * ax + ay * ay;
    }
    if (!(norm > 1e-6)) throw std::runtime_error("degenerate face points");
    double a = re / norm, b = im / norm; // w = (a + ib)·z + shift
    cv::Mat m = (cv::Mat_<double>(2, 3) << a, -b, wx - (a * zx - b * zy), b, a, wy - (b * zx + a * zy));
    return m;
}

// One raw forward pass of a 112×112 BGR chip.
void forward(cvis_recognizer &r, const cv::Mat &chip, float *sum) {
    r.blob.create(std::vector<int>{1, 3, side, side}, CV_32F);
    float *dst = r.blob.ptr<float>();
    for (int y = 0; y < side; ++y) {
        const uchar *row = chip.ptr<uchar>(y);
        for (int x = 0; x < side; ++x) {
            for (int c = 0; c < 3; ++c) { // NCHW, RGB order: channel c reads BGR index 2 - c
                dst[(c * side + y) * side + x] = (row[3 * x + (2 - c)] / 255.0f - channel_mean[c]) / channel_std[c];
            }
        }
    }
    r.net.setInput(r.blob);
    cv::Mat out = r.net.forward();
    if (int(out.total()) != CVIS_RECOGNIZER_DIM) {
        throw std::runtime_error("recognizer gave " + std::to_string(out.total()) + " outputs, expected 128");
    }
    const float *o = out.ptr<float>();
    for (int i = 0; i < CVIS_RECOGNIZER_DIM; ++i) sum[i] += o[i];
}

} // namespace

extern "C" cvis_recognizer_models *cvis_recognizer_models_load(const cvis_model_bytes *onnx, cvis_status *status) {
    std::unique_ptr<cvis_recognizer_models> m;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!onnx || !onnx->data || onnx->length == 0) return fail(CVIS_ERR_ARGUMENT, "no recognizer model");
        auto models = std::make_unique<cvis_recognizer_models>();
        models->onnx.assign(onnx->data, onnx->data + onnx->length);
        (void)make_net(models->onnx); // a file that does not load fails here, not on the first face
        m = std::move(models);
        return CVIS_OK;
    });
    if (status) *status = s;
    return s == CVIS_OK ? m.release() : nullptr;
}

extern "C" void cvis_recognizer_models_free(cvis_recognizer_models *models) { delete models; }

extern "C" cvis_recognizer *cvis_recognizer_create(const cvis_recognizer_models *models, cvis_status *status) {
    std::unique_ptr<cvis_recognizer> r;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!models) return fail(CVIS_ERR_ARGUMENT, "no recognizer model");
        auto made = std::make_unique<cvis_recognizer>();
        made->net = make_net(models->onnx);
        r = std::move(made);
        return CVIS_OK;
    });
    if (status) *status = s;
    return s == CVIS_OK ? r.release() : nullptr;
}

extern "C" void cvis_recognizer_free(cvis_recognizer *recognizer) { delete recognizer; }

extern "C" cvis_status cvis_recognizer_points(const float landmarks[136], float out[10]) {
    if (!landmarks || !out) return fail(CVIS_ERR_ARGUMENT, "no landmarks");
    for (int i = 0; i < 136; ++i) {
        if (!std::isfinite(landmarks[i])) return fail(CVIS_ERR_ARGUMENT, "landmarks not finite");
    }
    for (int e = 0; e < 2; ++e) { // 36-41: the eye on the image left; 42-47: the other
        float x = 0, y = 0;
        for (int k = 0; k < 6; ++k) { x += landmarks[2 * (36 + 6 * e + k)]; y += landmarks[2 * (36 + 6 * e + k) + 1]; }
        out[2 * e] = x / 6;
        out[2 * e + 1] = y / 6;
    }
    const int rest[3] = {30, 48, 54};
    for (int k = 0; k < 3; ++k) {
        out[4 + 2 * k] = landmarks[2 * rest[k]];
        out[5 + 2 * k] = landmarks[2 * rest[k] + 1];
    }
    return CVIS_OK;
}

namespace {
bool bad_input(const cvis_recognizer *recognizer, const cvis_image_view &image, const float *points) {
    if (!recognizer || !points || !image.pixels || image.width < 2 || image.height < 2 || image.width > 16384 ||
        image.height > 16384 || (image.channels != 1 && image.channels != 3)) {
        return true;
    }
    for (int i = 0; i < 10; ++i) {
        if (!std::isfinite(points[i]) || std::fabs(points[i]) > 1e6f) return true;
    }
    return false;
}

// The aligned 112×112 BGR chip into r.chip.
void align(cvis_recognizer &r, const cvis_image_view &image, const float *points) {
    cv::Mat src(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(image.pixels));
    cv::Mat m = similarity(points, template_points, 5);
    cv::Mat warped;
    cv::warpAffine(src, warped, m, cv::Size(side, side), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
    if (warped.channels() == 1) cv::cvtColor(warped, r.chip, cv::COLOR_GRAY2BGR);
    else r.chip = warped;
}
} // namespace

extern "C" cvis_status cvis_recognizer_raw(cvis_recognizer *recognizer, cvis_image_view image, const float points[10], float out[256]) {
    if (!out || bad_input(recognizer, image, points)) return fail(CVIS_ERR_ARGUMENT, "bad image, points or recognizer");
    return guarded([&]() -> cvis_status {
        cvis_recognizer &r = *recognizer;
        align(r, image, points);
        std::fill(out, out + 2 * CVIS_RECOGNIZER_DIM, 0.0f);
        forward(r, r.chip, out);
        cv::flip(r.chip, r.mirrored, 1);
        forward(r, r.mirrored, out + CVIS_RECOGNIZER_DIM);
        return CVIS_OK;
    });
}

extern "C" cvis_status cvis_recognizer_embed(cvis_recognizer *recognizer, cvis_image_view image, const float points[10], int flip,
                                             float out[128], uint8_t *chip) {
    if (!out || bad_input(recognizer, image, points)) return fail(CVIS_ERR_ARGUMENT, "bad image, points or recognizer");
    return guarded([&]() -> cvis_status {
        cvis_recognizer &r = *recognizer;
        align(r, image, points);
        float sum[CVIS_RECOGNIZER_DIM] = {0};
        forward(r, r.chip, sum);
        if (flip) {
            cv::flip(r.chip, r.mirrored, 1);
            forward(r, r.mirrored, sum);
        }
        double norm = 0;
        for (float v : sum) norm += double(v) * v;
        norm = std::sqrt(norm);
        if (!(norm > 0)) return fail(CVIS_ERR_INTERNAL, "recognizer gave a zero embedding");
        for (int i = 0; i < CVIS_RECOGNIZER_DIM; ++i) out[i] = float(sum[i] / norm);
        if (chip) std::memcpy(chip, r.chip.data, size_t(side) * side * 3);
        return CVIS_OK;
    });
}
