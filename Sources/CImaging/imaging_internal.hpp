// Types shared by CImaging's translation units (not C API).
#ifndef CVISION_IMAGING_INTERNAL_HPP
#define CVISION_IMAGING_INTERNAL_HPP

#include <opencv2/core.hpp>

struct cvis_image {
    cv::Mat mat; // CV_8UC1 or CV_8UC3 (BGR); may be a view with padded rows (video frames)
};

#endif
