// dlib's ResNet face recogniser (dlib_face_recognition_resnet_model_v1.dat): aligned 150x150 chip
// -> 128-d descriptor. Kept apart from face.cpp because <dlib/dnn.h> is slow to compile.
#include "face_internal.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <dlib/dnn.h>
#include <dlib/image_transforms.h>
#include <dlib/opencv.h>

namespace {
using namespace dlib;

// The network of dlib's dnn_face_recognition_ex.cpp (a 29-layer ResNet, loss_metric, 128-d).
template <template <int, template <typename> class, int, typename> class block, int N,
          template <typename> class BN, typename SUBNET>
using residual = add_prev1<block<N, BN, 1, tag1<SUBNET>>>;

template <template <int, template <typename> class, int, typename> class block, int N,
          template <typename> class BN, typename SUBNET>
using residual_down = add_prev2<avg_pool<2, 2, 2, 2, skip1<tag2<block<N, BN, 2, tag1<SUBNET>>>>>>;

template <int N, template <typename> class BN, int stride, typename SUBNET>
using block = BN<con<N, 3, 3, 1, 1, relu<BN<con<N, 3, 3, stride, stride, SUBNET>>>>>;

template <int N, typename SUBNET> using ares = relu<residual<block, N, affine, SUBNET>>;
template <int N, typename SUBNET> using ares_down = relu<residual_down<block, N, affine, SUBNET>>;

template <typename SUBNET> using alevel0 = ares_down<256, SUBNET>;
template <typename SUBNET> using alevel1 = ares<256, ares<256, ares_down<256, SUBNET>>>;
template <typename SUBNET> using alevel2 = ares<128, ares<128, ares_down<128, SUBNET>>>;
template <typename SUBNET> using alevel3 = ares<64, ares<64, ares<64, ares_down<64, SUBNET>>>>;
template <typename SUBNET> using alevel4 = ares<32, ares<32, ares<32, SUBNET>>>;

using anet_type = loss_metric<fc_no_bias<
    128, avg_pool_everything<alevel0<alevel1<alevel2<alevel3<alevel4<
             max_pool<3, 3, 2, 2, relu<affine<con<32, 7, 7, 2, 2, input_rgb_image_sized<150>>>>>>>>>>>>>;

constexpr unsigned long chip_size = 150;
constexpr double chip_padding = 0.25;
} // namespace

namespace cvis {

struct FaceNetWeights {
    anet_type net;
};

std::shared_ptr<const FaceNetWeights> load_face_net(const std::string &path) {
    auto weights = std::make_shared<FaceNetWeights>();
    dlib::deserialize(path) >> weights->net;
    return weights;
}

struct FaceNet::Impl {
    anet_type net;
    std::vector<matrix<rgb_pixel>> chips;
    explicit Impl(const anet_type &loaded) : net(loaded) {}
};

FaceNet::FaceNet(const FaceNetWeights &weights) : impl_(std::make_unique<Impl>(weights.net)) {}
FaceNet::~FaceNet() = default;

void FaceNet::embed(const cv::Mat &image, const float *points, int count, int views, float out[128]) {
    if (count != 5 && count != 68) throw std::invalid_argument("alignment needs 5 or 68 points");
    std::vector<point> parts;
    parts.reserve(size_t(count));
    for (int i = 0; i < count; ++i)
        parts.emplace_back(std::lround(points[2 * i]), std::lround(points[2 * i + 1]));
    rectangle bounds;
    for (const point &p : parts) bounds += p;
    full_object_detection shape(bounds, parts);
    // views 0: the chip; 1: + its mirror; 2: + two more scales (padding 0.20 and 0.30) and their
    // mirrors — a deterministic form of dlib's jittered descriptors.
    static constexpr double paddings[3] = {chip_padding, 0.20, 0.30};
    const int scales = views >= 2 ? 3 : 1;
    const bool mirror = views >= 1;
    auto &chips = impl_->chips;
    chips.resize(size_t(scales * (mirror ? 2 : 1)));
    for (int k = 0; k < scales; ++k) {
        const chip_details details = get_face_chip_details(shape, chip_size, paddings[k]);
        matrix<rgb_pixel> &chip = chips[size_t(k * (mirror ? 2 : 1))];
        if (image.channels() == 3) extract_image_chip(cv_image<bgr_pixel>(image), details, chip);
        else extract_image_chip(cv_image<unsigned char>(image), details, chip);
        if (mirror) chips[size_t(k * 2 + 1)] = fliplr(chip);
    }

    const std::vector<matrix<float, 0, 1>> descriptors = impl_->net(chips);
    if (descriptors.empty() || descriptors[0].size() != 128) throw std::runtime_error("face descriptor is not 128-d");
    matrix<float, 0, 1> sum = descriptors[0];
    for (size_t i = 1; i < descriptors.size(); ++i) sum += descriptors[i];
    const float norm = std::sqrt(dlib::sum(squared(sum)));
    if (!(norm > 0) || !std::isfinite(norm)) throw std::runtime_error("face descriptor is degenerate");
    for (long i = 0; i < 128; ++i) out[i] = sum(i) / norm;
}

} // namespace cvis
