// Passive presentation-attack detection behind cvision_antispoof.h: Minivision's Silent-Face
// MiniFASNetV2 and MiniFASNetV1SE through OpenCV's dnn module, cropped and averaged as upstream
// (minivision-ai/Silent-Face-Anti-Spoofing, src/generate_patches.py and test.py) does.
#include "cvision_antispoof.h"
#include "cvision_internal.hpp"
#include "onnx_model.hpp"

#include <algorithm>
#include <cmath>
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

struct cvis_antispoof_models {
    std::vector<uchar> v2, v1se;
};

struct cvis_antispoof {
    cv::dnn::Net v2, v1se;
    cv::Mat patch, bgr, blob; // scratch, reused frame after frame
};

namespace {

constexpr int input_side = 80;
// Upstream's model names carry the crop scale: 2.7_80x80_MiniFASNetV2, 4_0_0_80x80_MiniFASNetV1SE.
constexpr double v2_scale = 2.7;
constexpr double v1se_scale = 4.0;

// Upstream's CropImage._get_new_box: the box scaled about its centre (the scale lowered until it
// fits the frame), then shifted back inside the frame. Inclusive corners, truncated as upstream.
cv::Rect expanded_box(int width, int height, const cvis_face_box &box, double scale) {
    double bw = box.width, bh = box.height;
    scale = std::min({double(height - 1) / bh, double(width - 1) / bw, scale});
    double nw = bw * scale, nh = bh * scale;
    double cx = box.x + bw / 2, cy = box.y + bh / 2;
    double x0 = cx - nw / 2, y0 = cy - nh / 2, x1 = cx + nw / 2, y1 = cy + nh / 2;
    if (x0 < 0) { x1 -= x0; x0 = 0; }
    if (y0 < 0) { y1 -= y0; y0 = 0; }
    if (x1 > width - 1) { x0 -= x1 - width + 1; x1 = width - 1; }
    if (y1 > height - 1) { y0 -= y1 - height + 1; y1 = height - 1; }
    int ix0 = std::max(0, int(x0)), iy0 = std::max(0, int(y0));
    int ix1 = std::min(width - 1, int(x1)), iy1 = std::min(height - 1, int(y1));
    return cv::Rect(ix0, iy0, std::max(1, ix1 - ix0 + 1), std::max(1, iy1 - iy0 + 1));
}

// Softmax class 1 (real) of one network on its crop.
// `src` is BGR or grey; only the 80×80 patch is converted (a grey camera's frame is never copied).
float real_probability(cvis_antispoof &d, cv::dnn::Net &net, const cv::Mat &src, const cvis_face_box &box, double scale) {
    cv::Rect r = expanded_box(src.cols, src.rows, box, scale);
    cv::resize(src(r), d.patch, cv::Size(input_side, input_side), 0, 0, cv::INTER_LINEAR);
    const cv::Mat *bgr = &d.patch;
    if (d.patch.channels() == 1) {
        cv::cvtColor(d.patch, d.bgr, cv::COLOR_GRAY2BGR);
        bgr = &d.bgr;
    }
    // Raw 0..255, BGR, NCHW: upstream's ToTensor does not scale.
    d.blob = cv::dnn::blobFromImage(*bgr, 1.0, cv::Size(), cv::Scalar(), false, false, CV_32F);
    net.setInput(d.blob);
    cv::Mat logits = net.forward();
    const float *l = logits.ptr<float>(0);
    int n = int(logits.total());
    if (n < 2) throw std::runtime_error("anti-spoofing network gave " + std::to_string(n) + " outputs, expected 3");
    float m = *std::max_element(l, l + n);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(double(l[i] - m));
    return float(std::exp(double(l[1] - m)) / sum);
}

} // namespace

extern "C" cvis_antispoof_models *cvis_antispoof_models_load(const cvis_model_bytes *v2_onnx, const cvis_model_bytes *v1se_onnx,
                                                             cvis_status *status) {
    std::unique_ptr<cvis_antispoof_models> m;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!v2_onnx || !v1se_onnx || !v2_onnx->data || !v1se_onnx->data || !v2_onnx->length || !v1se_onnx->length)
            return fail(CVIS_ERR_ARGUMENT, "both anti-spoofing models are needed");
        auto models = std::make_unique<cvis_antispoof_models>();
        models->v2.assign(v2_onnx->data, v2_onnx->data + v2_onnx->length);
        models->v1se.assign(v1se_onnx->data, v1se_onnx->data + v1se_onnx->length);
        // Build each once, so a file that does not load fails here and not on the first frame.
        (void)make_net(models->v2);
        (void)make_net(models->v1se);
        m = std::move(models);
        return CVIS_OK;
    });
    if (status) *status = s;
    return s == CVIS_OK ? m.release() : nullptr;
}

extern "C" void cvis_antispoof_models_free(cvis_antispoof_models *models) { delete models; }

extern "C" cvis_antispoof *cvis_antispoof_create(const cvis_antispoof_models *models, cvis_status *status) {
    std::unique_ptr<cvis_antispoof> d;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!models) return fail(CVIS_ERR_ARGUMENT, "no anti-spoofing models");
        auto detector = std::make_unique<cvis_antispoof>();
        detector->v2 = make_net(models->v2);
        detector->v1se = make_net(models->v1se);
        d = std::move(detector);
        return CVIS_OK;
    });
    if (status) *status = s;
    return s == CVIS_OK ? d.release() : nullptr;
}

extern "C" void cvis_antispoof_free(cvis_antispoof *detector) { delete detector; }

extern "C" cvis_status cvis_antispoof_score(cvis_antispoof *detector, cvis_image_view image, cvis_face_box box, float *out) {
    if (!detector || !out || !image.pixels || image.width < 2 || image.height < 2 || image.width > 16384 ||
        image.height > 16384 || (image.channels != 1 && image.channels != 3)) {
        return fail(CVIS_ERR_ARGUMENT, "bad image or detector");
    }
    if (!std::isfinite(box.x) || !std::isfinite(box.y) || !std::isfinite(box.width) || !std::isfinite(box.height) ||
        box.width < 4 || box.height < 4) {
        return fail(CVIS_ERR_ARGUMENT, "empty face box");
    }
    return guarded([&]() -> cvis_status {
        cv::Mat src(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(image.pixels));
        float a = real_probability(*detector, detector->v2, src, box, v2_scale);
        float b = real_probability(*detector, detector->v1se, src, box, v1se_scale);
        out[0] = (a + b) / 2;
        out[1] = a;
        out[2] = b;
        return CVIS_OK;
    });
}
