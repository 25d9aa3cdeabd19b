// Model files for the cv::dnn networks of CFaceVision (YuNet, MiniFASNet, MobileFaceNet, iris):
// read once into memory, then one network built per thread from the bytes (not C API).
#ifndef CVISION_ONNX_MODEL_HPP
#define CVISION_ONNX_MODEL_HPP

#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

namespace cvis {

/// The whole file, or empty when it cannot be read.
std::vector<uchar> read_file(const char *path);

/// A network from ONNX bytes on OpenCV's own CPU backend (throws cv::Exception on a bad model).
cv::dnn::Net make_net(const std::vector<uchar> &onnx);

} // namespace cvis

#endif
