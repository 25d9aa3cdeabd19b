// Helpers shared by hand.cpp, hand_models.cpp and fingertip.cpp (internal, not part of the C API).
#ifndef CVISION_FINGER_INTERNAL_HPP
#define CVISION_FINGER_INTERNAL_HPP

#include "cvision_hand.h"

#include <opencv2/core.hpp>
#include <opencv2/core/types.hpp>

namespace cvis::finger {

/// A caller's image is usable: pixels, a size within 16384² and grey or BGR.
inline bool view_ok(const cvis_image_view &v) {
    return v.pixels && v.width > 0 && v.height > 0 && v.width <= 16384 && v.height <= 16384 &&
           (v.channels == 1 || v.channels == 3);
}

/// The caller's pixels as a Mat header (no copy; the caller keeps them alive for the call).
inline cv::Mat mat_of(const cvis_image_view &v) {
    return cv::Mat(v.height, v.width, v.channels == 3 ? CV_8UC3 : CV_8UC1, const_cast<uint8_t *>(v.pixels));
}

/// A wide Gaussian of `src` computed at a quarter of the resolution (the result is smooth anyway).
void smooth(const cv::Mat &src, cv::Mat &dst, double sigma);

/// Mean of `src` over the mask's support (normalised convolution), so the finger's edge does not
/// pull the local mean toward the background.
cv::Mat masked_blur(const cv::Mat &src, const cv::Mat &maskF, double sigma);

/// Quality measures of a float print (ridges at ~500 ppi: period ≈ 9 px) over a 0/1 float mask;
/// `raw` is the flat-fielded print in the camera's grey levels (for the contrast measure).
void measure_print(const cv::Mat &norm, const cv::Mat &raw, const cv::Mat &maskF, cvis_print_quality &q);

/// Mean grey across a finger's middle and near its sides, a little below its tip (`dir` points
/// from the finger's base to the tip, unit length; `width` in pixels): a real, rounded fingertip
/// is darker toward its edges (shading); a flat picture of one much less so. BGR or grey `img`.
void shading_levels(const cv::Mat &img, cv::Point2f tip, cv::Point2f dir, float width, float &centre, float &edge);

} // namespace cvis::finger

#endif
