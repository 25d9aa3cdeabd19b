// Behind cvision_reference.h: OpenCV's imgcodecs, videoio and ximgproc as they are.
#include "cvision_reference.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/ximgproc.hpp>

namespace {
uint8_t *packed(const cv::Mat &m) {
    const size_t row = size_t(m.cols) * m.elemSize();
    auto *out = static_cast<uint8_t *>(std::malloc(std::max<size_t>(1, row * size_t(m.rows))));
    if (!out) return nullptr;
    for (int y = 0; y < m.rows; ++y) std::memcpy(out + row * size_t(y), m.ptr(y), row);
    return out;
}
} // namespace

struct cvref_video {
    cv::VideoCapture capture;
};

extern "C" {

uint8_t *cvref_imdecode(const uint8_t *data, size_t length, int *width, int *height, int *channels) {
    try {
        cv::Mat m = cv::imdecode(cv::Mat(1, int(length), CV_8UC1, const_cast<uint8_t *>(data)),
                                 cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR);
        if (m.empty()) return nullptr;
        if (m.depth() != CV_8U) {
            cv::Mat eight;
            m.convertTo(eight, CV_8U, m.depth() == CV_16U ? 1.0 / 256.0 : 1.0);
            m = eight;
        }
        if (m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2BGR);
        *width = m.cols, *height = m.rows, *channels = m.channels();
        return packed(m);
    } catch (...) {
        return nullptr;
    }
}

cvref_video *cvref_video_open(const char *path) {
    try {
        auto *v = new cvref_video();
        if (!v->capture.open(path, cv::CAP_FFMPEG)) {
            delete v;
            return nullptr;
        }
        return v;
    } catch (...) {
        return nullptr;
    }
}

double cvref_video_fps(cvref_video *video) { return video ? video->capture.get(cv::CAP_PROP_FPS) : 0; }

uint8_t *cvref_video_next(cvref_video *video, int *width, int *height) {
    try {
        cv::Mat frame;
        if (!video || !video->capture.read(frame) || frame.empty()) return nullptr;
        *width = frame.cols, *height = frame.rows;
        return packed(frame);
    } catch (...) {
        return nullptr;
    }
}

void cvref_video_close(cvref_video *video) { delete video; }

int cvref_thinning(const uint8_t *src, int width, int height, uint8_t *dst) {
    try {
        cv::Mat out;
        cv::ximgproc::thinning(cv::Mat(height, width, CV_8UC1, const_cast<uint8_t *>(src)), out, cv::ximgproc::THINNING_GUOHALL);
        out.copyTo(cv::Mat(height, width, CV_8UC1, dst));
        return 0;
    } catch (...) {
        return 1;
    }
}

uint8_t *cvref_imencode(const char *extension, const uint8_t *pixels, int width, int height, int channels, int depth16,
                        size_t *length) {
    try {
        const int type = CV_MAKETYPE(depth16 ? CV_16U : CV_8U, channels);
        std::vector<uint8_t> bytes;
        if (!cv::imencode(extension, cv::Mat(height, width, type, const_cast<uint8_t *>(pixels)), bytes)) return nullptr;
        auto *out = static_cast<uint8_t *>(std::malloc(std::max<size_t>(1, bytes.size())));
        if (!out) return nullptr;
        std::memcpy(out, bytes.data(), bytes.size());
        *length = bytes.size();
        return out;
    } catch (...) {
        return nullptr;
    }
}

void cvref_free(void *pointer) { std::free(pointer); }

} // extern "C"
