// Pixel conversion, image decoding (codecs.cpp) and PNG/JPEG encoding; the thread's last error of
// every cvis_ target. Video files: video.cpp.
#include "cvision_imaging.h"
#include "codecs.hpp"
#include "cvision_internal.hpp"
#include "imaging_internal.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fstream>
#include <iterator>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace cvis {
thread_local std::string last_error;
} // namespace cvis

namespace {
using cvis::fail;
using cvis::guarded;

constexpr uint32_t fourcc(char a, char b, char c, char d) {
    return uint32_t(uint8_t(a)) | (uint32_t(uint8_t(b)) << 8) | (uint32_t(uint8_t(c)) << 16) |
           (uint32_t(uint8_t(d)) << 24);
}

// Writes grey and optionally BGR from a decoded 1- or 3-channel 8-bit image.
cvis_status export_mat(const cv::Mat &m, uint8_t *grey, uint8_t *bgr) {
    cv::Mat g(m.rows, m.cols, CV_8UC1, grey);
    if (m.channels() == 1) {
        m.copyTo(g);
        if (bgr) cv::cvtColor(m, cv::Mat(m.rows, m.cols, CV_8UC3, bgr), cv::COLOR_GRAY2BGR);
    } else {
        cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
        if (bgr) m.copyTo(cv::Mat(m.rows, m.cols, CV_8UC3, bgr));
    }
    return CVIS_OK;
}
} // namespace

extern "C" {

const char *cvis_last_error(void) { return cvis::last_error.c_str(); }

void cvis_set_threads(int threads) {
    try {
        cv::setNumThreads(threads);
    } catch (...) {
    }
}

cvis_status cvis_orient_plane(const uint8_t *src, int width, int height, int channels, int rotate, int mirror, uint8_t *dst) {
    if (!src || !dst || width <= 0 || height <= 0 || width > 16384 || height > 16384 || (channels != 1 && channels != 3))
        return fail(CVIS_ERR_ARGUMENT, "bad plane geometry");
    if (rotate != 0 && rotate != 90 && rotate != 180 && rotate != 270) return fail(CVIS_ERR_ARGUMENT, "rotate must be 0, 90, 180 or 270");
    return guarded([&]() -> cvis_status {
        const int type = channels == 1 ? CV_8UC1 : CV_8UC3;
        cv::Mat s(height, width, type, const_cast<uint8_t *>(src));
        const bool quarter = rotate == 90 || rotate == 270;
        cv::Mat d(quarter ? width : height, quarter ? height : width, type, dst);
        switch (rotate) {
        case 90: cv::rotate(s, d, cv::ROTATE_90_CLOCKWISE); break;
        case 180: cv::rotate(s, d, cv::ROTATE_180); break;
        case 270: cv::rotate(s, d, cv::ROTATE_90_COUNTERCLOCKWISE); break;
        default:  // mirror only: the flip is the one pass
            if (mirror) cv::flip(s, d, 1); else s.copyTo(d);
            return CVIS_OK;
        }
        if (mirror) cv::flip(d, d, 1);
        return CVIS_OK;
    });
}

cvis_status cvis_convert_frame(uint32_t format, const uint8_t *src, size_t length, int width, int height, int stride,
                               uint8_t *grey, uint8_t *bgr) {
    if (!src || !grey || width <= 0 || height <= 0 || width > 16384 || height > 16384)
        return fail(CVIS_ERR_ARGUMENT, "bad frame geometry");
    return guarded([&]() -> cvis_status {
        cv::Mat g(height, width, CV_8UC1, grey);
        cv::Mat b;
        if (bgr) b = cv::Mat(height, width, CV_8UC3, bgr);
        auto need = [&](size_t bytesPerRow, size_t rows) -> bool { return length >= bytesPerRow * (rows - 1) + size_t(width); };
        void *s = const_cast<uint8_t *>(src);
        switch (format) {
        case fourcc('Y', 'U', 'Y', 'V'):
        case fourcc('U', 'Y', 'V', 'Y'): {
            size_t st = stride > 0 ? size_t(stride) : size_t(width) * 2;
            if (length < st * size_t(height)) return fail(CVIS_ERR_ARGUMENT, "short YUYV frame");
            cv::Mat yuv(height, width, CV_8UC2, s, st);
            bool yuyv = format == fourcc('Y', 'U', 'Y', 'V');
            cv::cvtColor(yuv, g, yuyv ? cv::COLOR_YUV2GRAY_YUYV : cv::COLOR_YUV2GRAY_UYVY);
            if (bgr) cv::cvtColor(yuv, b, yuyv ? cv::COLOR_YUV2BGR_YUYV : cv::COLOR_YUV2BGR_UYVY);
            return CVIS_OK;
        }
        case fourcc('G', 'R', 'E', 'Y'): {
            size_t st = stride > 0 ? size_t(stride) : size_t(width);
            if (!need(st, height)) return fail(CVIS_ERR_ARGUMENT, "short GREY frame");
            cv::Mat m(height, width, CV_8UC1, s, st);
            m.copyTo(g);
            if (bgr) cv::cvtColor(m, b, cv::COLOR_GRAY2BGR);
            return CVIS_OK;
        }
        case fourcc('Y', '1', '6', ' '): {
            size_t st = stride > 0 ? size_t(stride) : size_t(width) * 2;
            if (length < st * size_t(height)) return fail(CVIS_ERR_ARGUMENT, "short Y16 frame");
            cv::Mat m(height, width, CV_16UC1, s, st);
            m.convertTo(g, CV_8U, 1.0 / 256.0);
            if (bgr) cv::cvtColor(g, b, cv::COLOR_GRAY2BGR);
            return CVIS_OK;
        }
        case fourcc('N', 'V', '1', '2'): {
            size_t st = stride > 0 ? size_t(stride) : size_t(width);
            if (st != size_t(width)) return fail(CVIS_ERR_FORMAT, "padded NV12 rows are not supported");
            if (length < size_t(width) * height * 3 / 2) return fail(CVIS_ERR_ARGUMENT, "short NV12 frame");
            cv::Mat m(height * 3 / 2, width, CV_8UC1, s);
            m.rowRange(0, height).copyTo(g);
            if (bgr) cv::cvtColor(m, b, cv::COLOR_YUV2BGR_NV12);
            return CVIS_OK;
        }
        case fourcc('R', 'G', 'B', '3'):
        case fourcc('B', 'G', 'R', '3'): {
            size_t st = stride > 0 ? size_t(stride) : size_t(width) * 3;
            if (length < st * size_t(height)) return fail(CVIS_ERR_ARGUMENT, "short RGB frame");
            cv::Mat m(height, width, CV_8UC3, s, st);
            bool rgb = format == fourcc('R', 'G', 'B', '3');
            cv::cvtColor(m, g, rgb ? cv::COLOR_RGB2GRAY : cv::COLOR_BGR2GRAY);
            if (bgr) {
                if (rgb) cv::cvtColor(m, b, cv::COLOR_RGB2BGR);
                else m.copyTo(b);
            }
            return CVIS_OK;
        }
        case fourcc('M', 'J', 'P', 'G'):
        case fourcc('J', 'P', 'E', 'G'): {
            if (length < 4 || length > (size_t(1) << 30)) return fail(CVIS_ERR_ARGUMENT, "bad MJPEG frame length");
            // Straight into the BGR plane when there is one (else a scratch plane), then grey from it.
            cv::Mat scratch;
            uint8_t *target = bgr;
            if (!target) {
                scratch.create(height, width, CV_8UC3);
                target = scratch.data;
            }
            const cvis_status st = cvis::decode_jpeg_frame(src, length, width, height, target);
            if (st != CVIS_OK) return st;
            cv::cvtColor(cv::Mat(height, width, CV_8UC3, target), g, cv::COLOR_BGR2GRAY);
            return CVIS_OK;
        }
        default:
            return fail(CVIS_ERR_FORMAT, "unsupported pixel format");
        }
    });
}

static cvis_image *finish_image(cv::Mat mat, int64_t max_pixels, cvis_status *status, const char *what) {
    if (mat.empty()) {
        *status = fail(CVIS_ERR_DECODE, std::string(what) + " is not a decodable image (PNG, JPEG, TIFF, WebP, PGM/PPM, BMP)");
        return nullptr;
    }
    if (max_pixels > 0 && int64_t(mat.rows) * mat.cols > max_pixels) {
        *status = fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
        return nullptr;
    }
    if (mat.depth() != CV_8U) {
        cv::Mat eight;
        double scale = mat.depth() == CV_16U ? 1.0 / 256.0 : 1.0;
        mat.convertTo(eight, CV_8U, scale);
        mat = eight;
    }
    if (mat.channels() == 4) cv::cvtColor(mat, mat, cv::COLOR_BGRA2BGR);
    if (mat.channels() != 1 && mat.channels() != 3) {
        *status = fail(CVIS_ERR_FORMAT, "image has an unsupported channel count");
        return nullptr;
    }
    auto *img = new cvis_image{std::move(mat)};
    *status = CVIS_OK;
    return img;
}

cvis_image *cvis_image_decode(const uint8_t *data, size_t length, int64_t max_pixels, cvis_status *status) {
    cvis_image *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!data || length == 0) return fail(CVIS_ERR_DECODE, "image is empty");
        if (length > (size_t(1) << 30)) return fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
        cv::Mat mat;
        const cvis_status st = cvis::decode_image(data, length, max_pixels, mat);
        if (st != CVIS_OK) return st;
        cvis_status finished = CVIS_OK;
        result = finish_image(std::move(mat), max_pixels, &finished, "data");
        return finished;
    });
    return *status == CVIS_OK ? result : nullptr;
}

cvis_image *cvis_image_read(const char *path, int64_t max_pixels, cvis_status *status) {
    cvis_image *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!path) return fail(CVIS_ERR_ARGUMENT, "no path");
        std::ifstream in(path, std::ios::binary);
        if (!in) return fail(CVIS_ERR_IO, std::string(path) + " cannot be read");
        in.seekg(0, std::ios::end);
        const std::streamoff size = in.tellg();
        if (size <= 0) return fail(CVIS_ERR_DECODE, std::string(path) + " is empty");
        if (size > (std::streamoff(1) << 30)) return fail(CVIS_ERR_ARGUMENT, std::string(path) + " is larger than allowed");
        std::vector<uint8_t> bytes(static_cast<size_t>(size));
        in.seekg(0);
        if (!in.read(reinterpret_cast<char *>(bytes.data()), size))
            return fail(CVIS_ERR_IO, std::string(path) + " cannot be read");
        cv::Mat mat;
        const cvis_status st = cvis::decode_image(bytes.data(), bytes.size(), max_pixels, mat);
        if (st != CVIS_OK) return fail(st, std::string(path) + ": " + cvis::last_error);
        cvis_status finished = CVIS_OK;
        result = finish_image(std::move(mat), max_pixels, &finished, path);
        return finished;
    });
    return *status == CVIS_OK ? result : nullptr;
}

int cvis_image_width(const cvis_image *image) { return image ? image->mat.cols : 0; }
int cvis_image_height(const cvis_image *image) { return image ? image->mat.rows : 0; }
int cvis_image_channels(const cvis_image *image) { return image ? image->mat.channels() : 0; }

cvis_status cvis_image_copy(const cvis_image *image, uint8_t *grey, uint8_t *bgr) {
    if (!image || !grey) return fail(CVIS_ERR_ARGUMENT, "no image");
    return guarded([&]() { return export_mat(image->mat, grey, bgr); });
}

void cvis_image_free(cvis_image *image) { delete image; }

/// Copies an encoder's output into a malloc'd buffer the caller frees with cvis_free.
static cvis_status hand_out(const std::vector<uint8_t> &buffer, uint8_t **out, size_t *out_length) {
    auto *copy = static_cast<uint8_t *>(std::malloc(std::max<size_t>(1, buffer.size())));
    if (!copy) return fail(CVIS_ERR_INTERNAL, "out of memory");
    std::memcpy(copy, buffer.data(), buffer.size());
    *out = copy;
    *out_length = buffer.size();
    return CVIS_OK;
}

cvis_status cvis_encode_png(const uint8_t *pixels, int width, int height, int channels, uint8_t **out,
                            size_t *out_length) {
    if (!pixels || !out || !out_length || width <= 0 || height <= 0 || (channels != 1 && channels != 3))
        return fail(CVIS_ERR_ARGUMENT, "bad image for PNG");
    return guarded([&]() -> cvis_status {
        const cv::Mat m(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels));
        std::vector<uint8_t> buffer;
        const cvis_status st = cvis::encode_png(m, buffer);
        return st == CVIS_OK ? hand_out(buffer, out, out_length) : st;
    });
}

cvis_status cvis_encode_jpeg(const uint8_t *pixels, int width, int height, int channels, int quality, uint8_t **out,
                             size_t *out_length) {
    if (!pixels || !out || !out_length || width <= 0 || height <= 0 || (channels != 1 && channels != 3) ||
        quality < 1 || quality > 100)
        return fail(CVIS_ERR_ARGUMENT, "bad image for JPEG");
    return guarded([&]() -> cvis_status {
        const cv::Mat m(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels));
        std::vector<uint8_t> buffer;
        const cvis_status st = cvis::encode_jpeg(m, quality, buffer);
        return st == CVIS_OK ? hand_out(buffer, out, out_length) : st;
    });
}

cvis_status cvis_encode_jpeg_scaled(const uint8_t *pixels, int width, int height, int channels, int dst_width,
                                    int dst_height, int quality, uint8_t **out, size_t *out_length) {
    if (!pixels || !out || !out_length || width <= 0 || height <= 0 || (channels != 1 && channels != 3) ||
        dst_width <= 0 || dst_height <= 0 || dst_width > width || dst_height > height || quality < 1 || quality > 100)
        return fail(CVIS_ERR_ARGUMENT, "bad image or size for a JPEG preview");
    return guarded([&]() -> cvis_status {
        const cv::Mat m(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels));
        cv::Mat small;
        if (dst_width == width && dst_height == height) small = m;
        else cv::resize(m, small, cv::Size(dst_width, dst_height), 0, 0, cv::INTER_AREA);
        std::vector<uint8_t> buffer;
        const cvis_status st = cvis::encode_jpeg(small, quality, buffer);
        return st == CVIS_OK ? hand_out(buffer, out, out_length) : st;
    });
}

void cvis_free(void *pointer) { std::free(pointer); }

} // extern "C"
