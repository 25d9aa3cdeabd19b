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
/// The network keeps the activations of its last batch: two views (a probe's chip and mirror) at a
/// time keep that at a quarter of what an 8-view enrolment batch would hold, for the same output.
constexpr size_t views_per_batch = 2;
constexpr double chip_padding = 0.25;
} // namespace

namespace cvis {

struct FaceNetWeights {
    anet_type net;
};

FaceNetWeightsPtr load_face_net(std::istream &in) {
    FaceNetWeightsPtr weights(new FaceNetWeights());
    dlib::deserialize(weights->net, in);
    return weights;
}

void FaceNetWeightsDeleter::operator()(FaceNetWeights *w) const { delete w; }

struct FaceNet::Impl {
    anet_type net;
    std::vector<matrix<rgb_pixel>> chips;
    matrix<rgb_pixel> base;
    explicit Impl(anet_type &&loaded) : net(std::move(loaded)) {}
};

FaceNet::FaceNet(FaceNetWeightsPtr weights) : impl_(std::make_unique<Impl>(std::move(weights->net))) {}
FaceNet::~FaceNet() = default;

namespace {
/// A small random perturbation of the aligned chip, as dlib's jitter_image draws them: a square crop
/// of the chip's inner 144 px box, 97-100 % of its size, moved by up to 2 % and turned by up to 3°.
struct Jitter {
    double dx, dy, scale, degrees;
    bool mirror;
};

/// View 0 is the chip, 1 its mirror, 2... fixed jitters (dlib's distribution from a fixed seed,
/// mirrored every other one), so that descriptors are deterministic.
const std::vector<Jitter> &view_table() {
    static const std::vector<Jitter> table = [] {
        std::vector<Jitter> t = {{0, 0, 1, 0, false}, {0, 0, 1, 0, true}};
        dlib::rand rnd(20170212);
        for (int i = 0; i < cvis::face_view_count - 2; ++i) {
            Jitter j;
            j.dx = rnd.get_double_in_range(-0.02, 0.02);
            j.dy = rnd.get_double_in_range(-0.02, 0.02);
            j.scale = rnd.get_double_in_range(0.97, 0.99999);
            j.degrees = rnd.get_double_in_range(-3, 3);
            j.mirror = (i % 2) == 1;
            t.push_back(j);
        }
        return t;
    }();
    return table;
}

void jitter_chip(const matrix<rgb_pixel> &chip, const Jitter &j, matrix<rgb_pixel> &out) {
    if (j.dx == 0 && j.dy == 0 && j.scale == 1 && j.degrees == 0) {
        out = j.mirror ? matrix<rgb_pixel>(fliplr(chip)) : chip;
        return;
    }
    const rectangle rect = shrink_rect(get_rect(chip), 3);
    const dpoint shift(j.dx * rect.width(), j.dy * rect.height());
    const long side = long(rect.height() / j.scale);
    const rectangle crop = centered_rect(center(rect) + shift, side, side);
    extract_image_chip(chip, chip_details(crop, chip_dims(chip.nr(), chip.nc()), j.degrees * pi / 180), out);
    if (j.mirror) flip_image_left_right(out);
}
} // namespace

void FaceNet::chips(const cv::Mat &image, const float *points, int count, int views) {
    if (count != 5 && count != 68) throw std::invalid_argument("alignment needs 5 or 68 points");
    if (views < 1 || views > face_view_count) throw std::invalid_argument("bad number of chip views");
    std::vector<point> parts;
    parts.reserve(size_t(count));
    for (int i = 0; i < count; ++i)
        parts.emplace_back(std::lround(points[2 * i]), std::lround(points[2 * i + 1]));
    rectangle bounds;
    for (const point &p : parts) bounds += p;
    const chip_details details = get_face_chip_details(full_object_detection(bounds, parts), chip_size, chip_padding);
    if (image.channels() == 3) extract_image_chip(cv_image<bgr_pixel>(image), details, impl_->base);
    else extract_image_chip(cv_image<unsigned char>(image), details, impl_->base);
    impl_->chips.resize(size_t(views));
    const std::vector<Jitter> &table = view_table();
    for (int k = 0; k < views; ++k) jitter_chip(impl_->base, table[size_t(k)], impl_->chips[size_t(k)]);
}

void FaceNet::embed(const cv::Mat &image, const float *points, int count, int views, float out[128]) {
    chips(image, points, count, views);
    const std::vector<matrix<float, 0, 1>> descriptors = impl_->net(impl_->chips, views_per_batch);
    if (descriptors.empty() || descriptors[0].size() != 128) throw std::runtime_error("face descriptor is not 128-d");
    matrix<float, 0, 1> sum = descriptors[0];
    for (size_t i = 1; i < descriptors.size(); ++i) sum += descriptors[i];
    const float norm = std::sqrt(dlib::sum(squared(sum)));
    if (!(norm > 0) || !std::isfinite(norm)) throw std::runtime_error("face descriptor is degenerate");
    for (long i = 0; i < 128; ++i) out[i] = sum(i) / norm;
}

void FaceNet::descriptors(const cv::Mat &image, const float *points, int count, int views, float *out) {
    chips(image, points, count, views);
    const std::vector<matrix<float, 0, 1>> descriptors = impl_->net(impl_->chips, views_per_batch);
    for (size_t k = 0; k < descriptors.size(); ++k) {
        if (descriptors[k].size() != 128) throw std::runtime_error("face descriptor is not 128-d");
        for (long i = 0; i < 128; ++i) out[k * 128 + size_t(i)] = descriptors[k](i);
    }
}

} // namespace cvis
