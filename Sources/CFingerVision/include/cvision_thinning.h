// CFingerVision: Guo-Hall thinning of a binary image (what print extraction skeletonises ridge
// maps with), as plain C for tests and tools. See thinning.hpp for why it is written here.
#ifndef CVISION_THINNING_H
#define CVISION_THINNING_H

#include "cvision_imaging.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Thins `src` (width x height grey, packed; pixels >= 128 are set) into `dst` (same size, 0/255)
/// exactly as OpenCV-contrib's cv::ximgproc::thinning(THINNING_GUOHALL).
cvis_status cvis_thinning(const uint8_t *src, int width, int height, uint8_t *dst);

#ifdef __cplusplus
}
#endif
#endif
