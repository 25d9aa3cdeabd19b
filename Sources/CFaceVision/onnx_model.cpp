// Behind onnx_model.hpp.
#include "onnx_model.hpp"

#include <fstream>
#include <iterator>

namespace cvis {

std::vector<uchar> read_file(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    return std::vector<uchar>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

cv::dnn::Net make_net(const std::vector<uchar> &onnx) {
    cv::dnn::Net net = cv::dnn::readNetFromONNX(onnx);
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    return net;
}

} // namespace cvis
