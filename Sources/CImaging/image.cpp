// Pixel conversion, image decoding, video reading and PNG/JPEG encoding with OpenCV; the thread's
// last error of every cvis_ target.
#include "cvision_imaging.h"
#include "cvision_internal.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

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

struct cvis_image {
    cv::Mat mat; // CV_8UC1 or CV_8UC3 (BGR)
};

struct cvis_video {
    cv::VideoCapture capture;
    cvis_image frame;
};

extern "C" {

const char *cvis_last_error(void) { return cvis::last_error.c_str(); }

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
            cv::Mat raw(1, int(length), CV_8UC1, s);
            cv::Mat decoded = cv::imdecode(raw, cv::IMREAD_COLOR);
            if (decoded.empty()) return fail(CVIS_ERR_DECODE, "MJPEG frame does not decode");
            if (decoded.cols != width || decoded.rows != height)
                return fail(CVIS_ERR_DECODE, "MJPEG frame size differs from the negotiated size");
            return export_mat(decoded, grey, bgr);
        }
        default:
            return fail(CVIS_ERR_FORMAT, "unsupported pixel format");
        }
    });
}

// Image size from the header, before decoding: a small file may claim a huge image (a
// decompression bomb), and OpenCV's own cap (2^30 pixels) is far above ours. Returns false for
// formats or headers it does not know: cvis_image_decode then refuses the image, so only the
// formats whose size it can read first (PNG, JPEG, TIFF, PNM, BMP) are ever decoded from bytes.
static bool header_size(const uint8_t *d, size_t n, int64_t &w, int64_t &h) {
    auto be16 = [&](size_t i) { return int64_t(d[i]) << 8 | d[i + 1]; };
    auto be32 = [&](size_t i) { return be16(i) << 16 | be16(i + 2); };
    auto le16 = [&](size_t i) { return int64_t(d[i + 1]) << 8 | d[i]; };
    auto le32 = [&](size_t i) { return le16(i + 2) << 16 | le16(i); };
    if (n >= 24 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) {
        w = be32(16), h = be32(20);
        return true;
    }
    if (n >= 26 && d[0] == 'B' && d[1] == 'M') {
        w = std::abs(int32_t(le32(18))), h = std::abs(int32_t(le32(22)));
        return true;
    }
    if (n >= 4 && d[0] == 0xFF && d[1] == 0xD8) {  // JPEG: walk the markers to the first SOFn
        size_t i = 2;
        while (i + 9 < n) {
            if (d[i] != 0xFF) return false;
            uint8_t m = d[i + 1];
            if (m == 0xFF) { ++i; continue; }
            if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
                h = be16(i + 5), w = be16(i + 7);
                return true;
            }
            i += 2 + size_t(be16(i + 2));
        }
        return false;
    }
    if (n >= 8 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0)) {  // TIFF: first IFD
        bool le = d[0] == 'I';
        auto u16 = [&](size_t i) { return le ? le16(i) : be16(i); };
        auto u32 = [&](size_t i) { return le ? le32(i) : be32(i); };
        size_t ifd = size_t(u32(4));
        if (ifd + 2 > n) return false;
        int64_t count = u16(ifd), got = 0;
        for (int64_t k = 0; k < count && ifd + 2 + 12 * (k + 1) <= n; ++k) {
            size_t e = ifd + 2 + 12 * size_t(k);
            int64_t tag = u16(e), type = u16(e + 2);
            int64_t value = type == 3 ? u16(e + 8) : u32(e + 8);
            if (tag == 256) w = value, got |= 1;
            if (tag == 257) h = value, got |= 2;
        }
        return got == 3;
    }
    if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') {  // PNM: "P5 <w> <h> ..."
        size_t i = 2;
        int64_t v[2];
        for (int k = 0; k < 2; ++k) {
            while (i < n && (std::isspace(d[i]) || d[i] == '#')) {
                if (d[i] == '#') while (i < n && d[i] != '\n') ++i;
                else ++i;
            }
            if (i >= n || !std::isdigit(d[i])) return false;
            v[k] = 0;
            while (i < n && std::isdigit(d[i]) && v[k] < (int64_t(1) << 40)) v[k] = v[k] * 10 + (d[i++] - '0');
        }
        w = v[0], h = v[1];
        return true;
    }
    return false;
}

static cvis_image *finish_image(cv::Mat mat, int64_t max_pixels, cvis_status *status, const char *what) {
    if (mat.empty()) {
        *status = fail(CVIS_ERR_DECODE, std::string(what) + " is not a decodable image (PNG, JPEG, PGM, TIFF, BMP)");
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
        int64_t w = 0, h = 0;
        if (max_pixels > 0) {
            // WebP, JPEG 2000, OpenEXR, Radiance, Sun raster, PFM... are refused: their size is
            // not read here before OpenCV allocates the whole image.
            if (!header_size(data, length, w, h))
                return fail(CVIS_ERR_FORMAT, "image format not accepted or header unreadable (accepted: PNG, JPEG, TIFF, "
                                             "PGM/PPM, BMP)");
            if (w <= 0 || h <= 0 || w * h > max_pixels)
                return fail(CVIS_ERR_ARGUMENT, "image is " + std::to_string(w) + "x" + std::to_string(h) +
                                                   ", larger than allowed (" + std::to_string(max_pixels) + " pixels)");
        }
        cv::Mat raw(1, int(length), CV_8UC1, const_cast<uint8_t *>(data));
        cvis_status st = CVIS_OK;
        result = finish_image(cv::imdecode(raw, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR), max_pixels, &st, "data");
        return st;
    });
    return *status == CVIS_OK ? result : nullptr;
}

cvis_image *cvis_image_read(const char *path, int64_t max_pixels, cvis_status *status) {
    cvis_image *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!path) return fail(CVIS_ERR_ARGUMENT, "no path");
        cvis_status st = CVIS_OK;
        result = finish_image(cv::imread(path, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR), max_pixels, &st, path);
        return st;
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

cvis_video *cvis_video_open(const char *path, cvis_status *status) {
    cvis_video *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        auto video = std::make_unique<cvis_video>();
        if (!video->capture.open(path, cv::CAP_ANY) || !video->capture.isOpened())
            return fail(CVIS_ERR_IO, std::string(path) + " cannot be opened as a video");
        result = video.release();
        return CVIS_OK;
    });
    return result;
}

double cvis_video_fps(const cvis_video *video) {
    if (!video) return 0;
    try {
        double fps = const_cast<cv::VideoCapture &>(video->capture).get(cv::CAP_PROP_FPS);
        return fps > 0 && fps < 1000 ? fps : 0;
    } catch (...) {
        return 0;
    }
}

cvis_status cvis_video_next(cvis_video *video, const cvis_image **frame) {
    if (!video || !frame) return fail(CVIS_ERR_ARGUMENT, "no video");
    return guarded([&]() -> cvis_status {
        if (!video->capture.read(video->frame.mat) || video->frame.mat.empty())
            return fail(CVIS_ERR_END, "end of video");
        *frame = &video->frame;
        return CVIS_OK;
    });
}

void cvis_video_close(cvis_video *video) {
    try {
        delete video;
    } catch (...) {
    }
}

cvis_status cvis_encode_png(const uint8_t *pixels, int width, int height, int channels, uint8_t **out,
                            size_t *out_length) {
    if (!pixels || !out || !out_length || width <= 0 || height <= 0 || (channels != 1 && channels != 3))
        return fail(CVIS_ERR_ARGUMENT, "bad image for PNG");
    return guarded([&]() -> cvis_status {
        cv::Mat m(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels));
        std::vector<uint8_t> buffer;
        if (!cv::imencode(".png", m, buffer)) return fail(CVIS_ERR_INTERNAL, "PNG encoding failed");
        auto *copy = static_cast<uint8_t *>(std::malloc(buffer.size()));
        if (!copy) return fail(CVIS_ERR_INTERNAL, "out of memory");
        std::memcpy(copy, buffer.data(), buffer.size());
        *out = copy;
        *out_length = buffer.size();
        return CVIS_OK;
    });
}

cvis_status cvis_encode_jpeg(const uint8_t *pixels, int width, int height, int channels, int quality, uint8_t **out,
                             size_t *out_length) {
    if (!pixels || !out || !out_length || width <= 0 || height <= 0 || (channels != 1 && channels != 3) ||
        quality < 1 || quality > 100)
        return fail(CVIS_ERR_ARGUMENT, "bad image for JPEG");
    return guarded([&]() -> cvis_status {
        cv::Mat m(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels));
        std::vector<uint8_t> buffer;
        if (!cv::imencode(".jpg", m, buffer, {cv::IMWRITE_JPEG_QUALITY, quality}))
            return fail(CVIS_ERR_INTERNAL, "JPEG encoding failed");
        auto *copy = static_cast<uint8_t *>(std::malloc(buffer.size()));
        if (!copy) return fail(CVIS_ERR_INTERNAL, "out of memory");
        std::memcpy(copy, buffer.data(), buffer.size());
        *out = copy;
        *out_length = buffer.size();
        return CVIS_OK;
    });
}

cvis_status cvis_encode_jpeg_scaled(const uint8_t *pixels, int width, int height, int channels, int dst_width,
                                    int dst_height, int quality, uint8_t **out, size_t *out_length) {
    if (!pixels || !out || !out_length || width <= 0 || height <= 0 || (channels != 1 && channels != 3) ||
        dst_width <= 0 || dst_height <= 0 || dst_width > width || dst_height > height || quality < 1 || quality > 100)
        return fail(CVIS_ERR_ARGUMENT, "bad image or size for a JPEG preview");
    return guarded([&]() -> cvis_status {
        cv::Mat m(height, width, channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels));
        cv::Mat small;
        if (dst_width == width && dst_height == height) small = m;
        else cv::resize(m, small, cv::Size(dst_width, dst_height), 0, 0, cv::INTER_AREA);
        std::vector<uint8_t> buffer;
        if (!cv::imencode(".jpg", small, buffer, {cv::IMWRITE_JPEG_QUALITY, quality}))
            return fail(CVIS_ERR_INTERNAL, "JPEG encoding failed");
        auto *copy = static_cast<uint8_t *>(std::malloc(buffer.size()));
        if (!copy) return fail(CVIS_ERR_INTERNAL, "out of memory");
        std::memcpy(copy, buffer.data(), buffer.size());
        *out = copy;
        *out_length = buffer.size();
        return CVIS_OK;
    });
}

void cvis_free(void *pointer) { std::free(pointer); }

} // extern "C"
