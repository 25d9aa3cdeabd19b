// Internal pieces of the face pipeline shared between face.cpp and face_embed.cpp (not C API).
#ifndef CVISION_FACE_INTERNAL_HPP
#define CVISION_FACE_INTERNAL_HPP

#include "cvision_face.h"

#include <istream>
#include <memory>
#include <string>

#include <opencv2/core.hpp>

namespace cvis {

/// dlib's ResNet face recogniser weights (defined in face_embed.cpp).
struct FaceNetWeights;
/// Deletes where the type is complete (face_embed.cpp), so other files can hold the pointer.
struct FaceNetWeightsDeleter {
    void operator()(FaceNetWeights *w) const;
};
using FaceNetWeightsPtr = std::unique_ptr<FaceNetWeights, FaceNetWeightsDeleter>;
/// Reads the network from `in` (dlib's serialization of dlib_face_recognition_resnet_model_v1.dat).
FaceNetWeightsPtr load_face_net(std::istream &in);

/// Size of the fixed view table (the chip, its mirror, then jitters); see cvis_face_embed_views.
constexpr int face_view_count = 42;
/// Views averaged by cvis_face_embed's `flip` 2 (the chip, its mirror and six jitters).
constexpr int face_jittered_views = 8;

/// The recognition network. dlib nets keep per-call state: one caller at a time (the models hold
/// one, shared by the engines under a lock).
class FaceNet {
  public:
    /// Takes the weights over (no copy).
    explicit FaceNet(FaceNetWeightsPtr weights);
    ~FaceNet();
    FaceNet(const FaceNet &) = delete;
    FaceNet &operator=(const FaceNet &) = delete;

    /// Aligns the face to dlib's 150x150 chip (0.25 padding) from `count` points (68 iBUG
    /// landmarks, or the 5 points of dlib's 5-point model: outer/inner corner of the image-right
    /// eye, outer/inner corner of the image-left eye, bottom of the nose) and embeds the first
    /// `views` entries of the view table (the chip, its mirror, then fixed jitters), averaged.
    /// `out` is L2-normalised. `image` is CV_8UC3 (BGR) or CV_8UC1.
    void embed(const cv::Mat &image, const float *points, int count, int views, float out[128]);

    /// The raw (unaveraged, unnormalised) descriptor of each chip of `views`, 128 floats each.
    void descriptors(const cv::Mat &image, const float *points, int count, int views, float *out);

  private:
    void chips(const cv::Mat &image, const float *points, int count, int views);

    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Chip alignments (cvis_face_embed uses shape5 when the 5-point model is loaded, else landmarks68).
enum class ChipAlignment {
    landmarks68 = 0, ///< dlib's 68-point mean-face points (17-67 without brows and lower lip)
    eyesNose5 = 1,   ///< the 5-point model's points taken from the 68 (45, 42, 36, 39, 33)
    shape5 = 2,      ///< dlib's 5-point predictor, run on the box of the engine's last
                     ///< cvis_face_landmarks call when these are its landmarks, else on a box
                     ///< derived from the landmarks
};

/// cvis_face_embed with an explicit alignment (for evaluation).
cvis_status face_embed_with(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136], int flip,
                            ChipAlignment alignment, float out[128]);

/// The box (left, top, right, bottom, inclusive) given to the landmark predictor for `box`.
void predictor_rect(const cvis_face_engine *engine, const cvis_face_box &box, long out[4]);

/// Embeds from arbitrary 5 or 68 alignment points (for evaluation).
cvis_status face_embed_points(cvis_face_engine *engine, cvis_image_view image, const float *points, int count,
                              int flip, float out[128]);
cvis_status face_descriptors_points(cvis_face_engine *engine, cvis_image_view image, const float *points, int count,
                                    int views, float *out);

} // namespace cvis

#endif
