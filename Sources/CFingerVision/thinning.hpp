// Guo-Hall thinning of a binary ridge map (not C API).
#ifndef CVISION_THINNING_HPP
#define CVISION_THINNING_HPP

#include <opencv2/core.hpp>

namespace cvis {

/// Guo & Hall's two-subiteration parallel thinning ("Parallel thinning with two-subiteration
/// algorithms", CACM 1989), exactly as OpenCV-contrib's cv::ximgproc::thinning(THINNING_GUOHALL)
/// computes it: `input` CV_8UC1, pixels >= 128 are set; the one-pixel frame of the image is never
/// thinned; the output is 0/255. Written here because ximgproc links imgcodecs, and Debian's
/// imgcodecs links GDAL, poppler and ~130 other libraries into the daemon (Docs/benchmarks.md
/// "Memory"); FingerTests compare the two on real prints, pixel for pixel.
void thinning_guo_hall(const cv::Mat &input, cv::Mat &output);

} // namespace cvis

#endif
