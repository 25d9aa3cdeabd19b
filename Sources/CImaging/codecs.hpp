// Still-image codecs of CImaging (not C API): PNG through libpng, JPEG through libjpeg-turbo,
// TIFF through libtiff, WebP through libwebp, PNM and BMP read here. OpenCV's imgcodecs would do
// the same through the same libraries, but Debian's build of it also links GDAL, poppler, GDCM,
// OpenEXR and their ~130 libraries into every process that loads it (~60 MiB of the daemon's RSS
// before a single image is read): Docs/benchmarks.md "Memory".
#ifndef CVISION_CODECS_HPP
#define CVISION_CODECS_HPP

#include "cvision_imaging.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

namespace cvis {

/// Width and height from the image's header, before anything is decoded (PNG, JPEG, TIFF, WebP,
/// PNM, BMP). False for any other format or a header it cannot read.
bool image_header_size(const uint8_t *data, size_t length, int64_t &width, int64_t &height);

/// Decodes PNG, JPEG, TIFF, WebP, PNM (P2/P3/P5/P6) or BMP bytes into `out`: CV_8UC1 (grey) or
/// CV_8UC3 (BGR); 16-bit PNG and PNM keep their depth (CV_16U), alpha is dropped, a JPEG's EXIF
/// orientation is applied (as OpenCV's imdecode does). The size is read from the header first and
/// refused above `max_pixels` (> 0) before any pixel is allocated. Returns a status and sets the
/// thread's last error.
cvis_status decode_image(const uint8_t *data, size_t length, int64_t max_pixels, cv::Mat &out);

/// A camera's MJPEG frame decoded to BGR into `bgr` (width x height x 3, packed), which must be
/// the frame's size.
cvis_status decode_jpeg_frame(const uint8_t *data, size_t length, int width, int height, uint8_t *bgr);

/// PNG (8-bit grey or BGR) into `out`.
cvis_status encode_png(const cv::Mat &image, std::vector<uint8_t> &out);
/// Baseline JPEG (quality 1-100, 4:2:0) of 8-bit grey or BGR into `out`.
cvis_status encode_jpeg(const cv::Mat &image, int quality, std::vector<uint8_t> &out);

} // namespace cvis

#endif
