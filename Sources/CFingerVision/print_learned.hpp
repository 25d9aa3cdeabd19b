// The learned minutiae extractor (LEADER, through OpenCV dnn) as print_extract.cpp calls it.
// C++ only, never seen by Swift (the C API is in cvision_print.h).
#ifndef CVISION_PRINT_LEARNED_HPP
#define CVISION_PRINT_LEARNED_HPP

#include "cvision_print.h"

#include <vector>

#include <opencv2/core.hpp>

namespace cvis {

/// One minutia found by the network, in the 500-ppi print's pixels.
struct LearnedMinutia {
    float x, y;
    float angle;   // image convention atan2(dy, dx), y down (print_extract.cpp's internal one)
    int kind;      // 1 ending, 2 bifurcation
    float quality; // the network's (blurred) minutia probability at the peak, 0–1
};

/// Runs the network on `grey` (8-bit, 500 ppi, ridges dark) over the bounding box of `area`
/// (non-zero = print) grown by a margin — when that is more than `maxPixels` (> 0), over a window
/// of that area centred on the print's centre of mass — and returns the minutiae inside `area`
/// whose peak probability is at least `threshold`, strongest first (at most CVIS_PRINT_MAX_MINUTIAE).
std::vector<LearnedMinutia> learnedMinutiae(cvis_print_learned *model, const cv::Mat &grey, const cv::Mat &area,
                                            float threshold, double maxPixels = 0);

} // namespace cvis

#endif
