// Eye state behind cvision_iris.h: MediaPipe Iris (iris_landmark.onnx) through OpenCV's dnn module,
// cropped as MediaPipe's iris_landmark_left_and_right graph does (eye-corner box ×2.3, square,
// rotated level; the right eye mirrored).
#include "cvision_iris.h"
#include "cvision_internal.hpp"
#include "onnx_model.hpp"

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

struct cvis_iris_model {
    std::vector<uchar> onnx;
};

struct cvis_iris {
    cv::dnn::Net net;
    cv::Mat patch, rgb, blob; // scratch, reused frame after frame
};

namespace {

constexpr int input_side = 64;
constexpr double roi_scale = 2.3;
constexpr int contour_points = 71; // 16 eyelid points, then the brows and eye surroundings

} // namespace

extern "C" cvis_iris_model *cvis_iris_model_load(const char *onnx, cvis_status *status) {
    std::unique_ptr<cvis_iris_model> m;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!onnx) return fail(CVIS_ERR_ARGUMENT, "no iris model path");
        auto model = std::make_unique<cvis_iris_model>();
        model->onnx = read_file(onnx);
        if (model->onnx.empty()) return fail(CVIS_ERR_IO, std::string("cannot read ") + onnx);
        (void)make_net(model->onnx); // a file that does not load fails here, not on the first eye
        m = std::move(model);
        return CVIS_OK;
    });
    if (status) *status = s;
    return s == CVIS_OK ? m.release() : nullptr;
}

extern "C" void cvis_iris_model_free(cvis_iris_model *model) { delete model; }

extern "C" cvis_iris *cvis_iris_create(const cvis_iris_model *model, cvis_status *status) {
    std::unique_ptr<cvis_iris> d;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!model) return fail(CVIS_ERR_ARGUMENT, "no iris model");
        auto iris = std::make_unique<cvis_iris>();
        iris->net = make_net(model->onnx);
        d = std::move(iris);
        return CVIS_OK;
    });
    if (status) *status = s;
    return s == CVIS_OK ? d.release() : nullptr;
}

extern "C" void cvis_iris_free(cvis_iris *iris) { delete iris; }

extern "C" cvis_status cvis_iris_eyelid(cvis_iris *iris, cvis_image_view image, float x0, float y0, float x1, float y1,
                                        int mirror, float *out) {
    if (!iris || !out || !image.pixels || image.width < 2 || image.height < 2 || image.width > 16384 ||
        image.height > 16384 || (image.channels != 1 && image.channels != 3)) {
        return fail(CVIS_ERR_ARGUMENT, "bad image or eye model");
    }
    if (!std::isfinite(x0) || !std::isfinite(y0) || !std::isfinite(x1) || !std::isfinite(y1)) {
        return fail(CVIS_ERR_ARGUMENT, "eye corners are not finite");
    }
    double dx = double(x1) - x0, dy = double(y1) - y0;
    double distance = std::sqrt(dx * dx + dy * dy);
    if (distance < 2) return fail(CVIS_ERR_ARGUMENT, "eye corners closer than 2 px");
    return guarded([&]() -> cvis_status {
        cv::Mat src(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(image.pixels));
        // Frame → 64×64 crop: rotate about the corners' midpoint so they are level, scale the
        // 2.3×distance square to the input side, centre it; mirror by negating x.
        double side = roi_scale * distance, k = input_side / side;
        double c = dx / distance * k, s = dy / distance * k;
        double mx = (double(x0) + x1) / 2, my = (double(y0) + y1) / 2;
        double sign = mirror ? -1 : 1;
        // u = sign·(c·(x−mx) + s·(y−my)) + 32, v = −s·(x−mx) + c·(y−my) + 32
        cv::Matx23d forward(sign * c, sign * s, -sign * (c * mx + s * my) + input_side / 2.0,
                            -s, c, (s * mx - c * my) + input_side / 2.0);
        cv::warpAffine(src, iris->patch, forward, cv::Size(input_side, input_side), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        if (iris->patch.channels() == 1) cv::cvtColor(iris->patch, iris->rgb, cv::COLOR_GRAY2RGB);
        else cv::cvtColor(iris->patch, iris->rgb, cv::COLOR_BGR2RGB);
        iris->blob = cv::dnn::blobFromImage(iris->rgb, 1.0 / 127.5, cv::Size(), cv::Scalar(127.5, 127.5, 127.5), false,
                                            false, CV_32F);
        iris->net.setInput(iris->blob);
        std::vector<cv::Mat> outs;
        iris->net.forward(outs, std::vector<cv::String>{"output_eyes_contours_and_brows"});
        if (outs.empty() || outs[0].total() < size_t(contour_points * 3)) {
            throw std::runtime_error("iris network gave too few contour values");
        }
        const float *p = outs[0].ptr<float>(0);
        auto pt = [&](int i) { return cv::Point2d(p[3 * i], p[3 * i + 1]); };
        // Eyelid: 0 and 8 are the corners, 1…7 the lower lid, 9…15 the upper lid (same order).
        double width = cv::norm(pt(0) - pt(8));
        double height = 0;
        for (int i = 1; i <= 7; ++i) height += cv::norm(pt(i) - pt(i + 8));
        height /= 7;
        out[0] = width > 1e-3 ? float(height / width) : 0.f;
        cv::Matx23d back;
        cv::invertAffineTransform(forward, back);
        for (int i = 0; i < 16; ++i) {
            cv::Point2d q = pt(i);
            out[1 + 2 * i] = float(back(0, 0) * q.x + back(0, 1) * q.y + back(0, 2));
            out[2 + 2 * i] = float(back(1, 0) * q.x + back(1, 1) * q.y + back(1, 2));
        }
        return CVIS_OK;
    });
}
