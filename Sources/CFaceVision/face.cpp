// Face pipeline behind cvision_face.h: YuNet (OpenCV dnn) or dlib HOG detection, dlib 68-point
// landmarks, solvePnP head pose, quality measures, embeddings (face_embed.cpp), drawing.
#include "cvision_face.h"
#include "face_internal.hpp"
#include "cvision_internal.hpp"
#include "onnx_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <streambuf>
#include <istream>
#include <string>
#include <vector>

#include <opencv2/calib3d.hpp>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include <dlib/image_processing.h>
#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/opencv.h>

using cvis::fail;
using cvis::guarded;
using cvis::read_file;

struct cvis_face_models {
    bool has_yunet = false; // else HOG
    dlib::frontal_face_detector hog;
    // The 68 landmarks: the PFLD network (what the daemon ships, 2.9 MB), or, for comparison in the
    // benches, dlib's 68-point predictor (95 MiB in memory). One of the two is loaded.
    bool has_pfld = false;
    dlib::shape_predictor shape68;
    dlib::shape_predictor shape5; // chip alignment for the ResNet (required with it)
    // One ResNet for all engines, used under its lock: a dlib network keeps per-call state, and a
    // copy per analysis thread cost 22 MiB of weights each. An embedding (3 frames of an attempt)
    // takes ~25 ms; two sessions embedding at the same moment wait for each other that long.
    std::unique_ptr<cvis::FaceNet> net;
    mutable std::mutex net_mutex;
    // YuNet and PFLD likewise: one network each (weights and activation buffers, ~12–16 MiB for
    // YuNet) for all engines, each used under its lock. An analysis thread uses PFLD on every frame
    // and YuNet on every eighth; the other thread, embedding the frame before, uses YuNet once for
    // the keypoints: they rarely wait for each other.
    mutable cv::dnn::Net yunet, pfld;
    mutable std::mutex yunet_mutex, pfld_mutex;
};

struct cvis_face_recognition {
    dlib::shape_predictor shape5;
    std::unique_ptr<cvis::FaceNet> net;
};

struct cvis_face_engine {
    const cvis_face_models *models = nullptr;
    std::unique_ptr<dlib::frontal_face_detector> hog; // object_detector keeps per-call state
    cv::Mat bgr, scaled, padded, blob, grey, crop, landmark_crop, landmark_blob; // scratch
    // The last cvis_face_landmarks result and the box it ran on: embedding these landmarks runs the
    // 5-point model on the same (detector) box rather than on one derived from the landmarks.
    bool has_last = false;
    float last_landmarks[136];
    dlib::rectangle last_box;
};

namespace {

// YuNet (face_detection_yunet_2023mar.onnx). OpenCV 4.6's cv::FaceDetectorYN only understands the
// 2022 model's outputs and fails on this one, so the 2023 decoding is done here: per stride a
// grid of cls/obj scores, box (centre offset, log size) and 5 keypoints.
constexpr int yunet_max_side = 640;
constexpr float yunet_score_threshold = 0.6f;
constexpr float yunet_nms_threshold = 0.3f;
constexpr int yunet_strides[3] = {8, 16, 32};
const std::vector<cv::String> yunet_outputs = {"cls_8",  "cls_16",  "cls_32",  "obj_8", "obj_16", "obj_32",
                                               "bbox_8", "bbox_16", "bbox_32", "kps_8", "kps_16", "kps_32"};

// cvis_face_keypoints: YuNet on a crop of 2× the face box scaled to 256 px (~3 ms, against ~15 ms
// for a 640×480 frame): the face about 128 px wide, as LFW's faces in their 250 px images.
constexpr double keypoint_crop_ratio = 2.0;
constexpr int keypoint_input = 256;

// dlib's HOG detector scans an 80x80 window.
constexpr double hog_window = 80;

bool valid_view(const cvis_image_view &v) {
    return v.pixels && v.width > 0 && v.height > 0 && v.width <= 16384 && v.height <= 16384 &&
           (v.channels == 1 || v.channels == 3);
}

cv::Mat view_mat(const cvis_image_view &v) {
    return cv::Mat(v.height, v.width, v.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(v.pixels));
}

bool finite_box(const cvis_face_box &b) {
    return std::isfinite(b.x) && std::isfinite(b.y) && std::isfinite(b.width) && std::isfinite(b.height) &&
           b.width > 0 && b.height > 0;
}

bool finite_landmarks(const float *lm, int count) {
    for (int i = 0; i < 2 * count; ++i)
        if (!std::isfinite(lm[i])) return false;
    return true;
}

// Squashes a HOG SVM margin (0 at the detection threshold) into 0..1 so that the threshold maps
// to 0.6, YuNet's score threshold.
float squash_margin(double margin) { return float(1.0 / (1.0 + std::exp(-(2.0 * margin + 0.405)))); }

template <typename Face> void sort_largest_first(std::vector<Face> &faces) {
    std::stable_sort(faces.begin(), faces.end(), [](const Face &a, const Face &b) {
        return a.box.width * a.box.height > b.box.width * b.box.height;
    });
}

// A detection with the detector's five keypoints (YuNet; NaN for HOG), in cvis_recognizer_points'
// order: image-left eye, image-right eye, nose tip, image-left mouth corner, image-right one.
struct detected_face {
    cvis_face_box box;
    float points[10];
};

std::vector<detected_face> detect_yunet(cvis_face_engine &e, const cv::Mat &image, int min_size) {
    const cv::Mat *bgr = &image;
    if (image.channels() == 1) {
        cv::cvtColor(image, e.bgr, cv::COLOR_GRAY2BGR);
        bgr = &e.bgr;
    }
    double scale = std::min(1.0, double(yunet_max_side) / std::max(image.cols, image.rows));
    // Keep small requested faces at >= ~20 px in the network input.
    if (min_size > 0) scale = std::max(scale, std::min(1.0, 20.0 / min_size));
    const cv::Mat *input = bgr;
    if (scale < 1.0) {
        cv::Size size(std::max(1, int(std::lround(image.cols * scale))), std::max(1, int(std::lround(image.rows * scale))));
        cv::resize(*bgr, e.scaled, size, 0, 0, cv::INTER_AREA);
        input = &e.scaled;
    }
    const int pad_w = (input->cols + 31) / 32 * 32, pad_h = (input->rows + 31) / 32 * 32;
    cv::copyMakeBorder(*input, e.padded, 0, pad_h - input->rows, 0, pad_w - input->cols, cv::BORDER_CONSTANT,
                       cv::Scalar::all(0));
    cv::dnn::blobFromImage(e.padded, e.blob);
    // The outputs share the network's buffers: the lock is held until they are decoded.
    std::lock_guard<std::mutex> lock(e.models->yunet_mutex);
    e.models->yunet.setInput(e.blob);
    std::vector<cv::Mat> out;
    e.models->yunet.forward(out, yunet_outputs);
    if (out.size() != 12) throw std::runtime_error("YuNet: unexpected outputs");

    std::vector<cv::Rect2d> boxes;
    std::vector<float> scores;
    std::vector<std::array<float, 10>> keypoints;
    for (int s = 0; s < 3; ++s) {
        const int stride = yunet_strides[s], cols = pad_w / stride, rows = pad_h / stride;
        const cv::Mat &cls = out[s], &obj = out[3 + s], &bbox = out[6 + s], &kps = out[9 + s];
        const size_t cells = size_t(cols) * rows;
        if (cls.total() < cells || obj.total() < cells || bbox.total() < cells * 4 || kps.total() < cells * 10)
            throw std::runtime_error("YuNet: output size does not match the input");
        const float *c = cls.ptr<float>(), *o = obj.ptr<float>(), *b = bbox.ptr<float>(), *p = kps.ptr<float>();
        for (int r = 0; r < rows; ++r)
            for (int k = 0; k < cols; ++k) {
                const size_t i = size_t(r) * cols + k;
                const float score = std::sqrt(std::clamp(c[i], 0.f, 1.f) * std::clamp(o[i], 0.f, 1.f));
                if (score < yunet_score_threshold) continue;
                const double cx = (k + b[4 * i]) * stride, cy = (r + b[4 * i + 1]) * stride;
                const double w = std::exp(b[4 * i + 2]) * stride, h = std::exp(b[4 * i + 3]) * stride;
                boxes.emplace_back(cx - w / 2, cy - h / 2, w, h);
                scores.push_back(score);
                // As OpenCV's FaceDetectorYN decodes them: (col + dx, row + dy) · stride. YuNet's
                // order (the person's right eye, left eye, nose, right and left mouth corner) is
                // image-left first, the ArcFace template's order.
                std::array<float, 10> k5;
                for (int j = 0; j < 5; ++j) {
                    k5[size_t(2 * j)] = float((k + p[10 * i + 2 * j]) * stride / scale);
                    k5[size_t(2 * j + 1)] = float((r + p[10 * i + 2 * j + 1]) * stride / scale);
                }
                keypoints.push_back(k5);
            }
    }
    std::vector<int> keep;
    cv::dnn::NMSBoxes(boxes, scores, yunet_score_threshold, yunet_nms_threshold, keep);
    std::vector<detected_face> faces;
    for (int i : keep) {
        const cv::Rect2d &b = boxes[size_t(i)];
        detected_face f{{float(b.x / scale), float(b.y / scale), float(b.width / scale), float(b.height / scale),
                         scores[size_t(i)]},
                        {}};
        if (min_size > 0 && std::max(f.box.width, f.box.height) < min_size) continue;
        std::copy_n(keypoints[size_t(i)].begin(), 10, f.points);
        faces.push_back(f);
    }
    return faces;
}

std::vector<detected_face> detect_hog(cvis_face_engine &e, const cv::Mat &image, int min_size) {
    const cv::Mat *grey = &image;
    if (image.channels() == 3) {
        cv::cvtColor(image, e.grey, cv::COLOR_BGR2GRAY);
        grey = &e.grey;
    }
    // The detector finds faces from 80 px: scale so the smallest wanted face becomes 80 px (less
    // work for big minimum sizes); by default upsample small images once so 40 px faces count.
    double scale = 1.0;
    if (min_size > 0) scale = std::clamp(hog_window / min_size, 0.1, 2.0);
    else if (std::max(image.cols, image.rows) < 400) scale = 2.0;
    const cv::Mat *input = grey;
    if (scale != 1.0) {
        cv::Size size(std::max(1, int(std::lround(image.cols * scale))), std::max(1, int(std::lround(image.rows * scale))));
        cv::resize(*grey, e.scaled, size, 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
        input = &e.scaled;
    }
    std::vector<dlib::rect_detection> dets;
    (*e.hog)(dlib::cv_image<unsigned char>(*input), dets, 0.0);
    std::vector<detected_face> faces;
    for (const auto &d : dets) {
        const dlib::rectangle &r = d.rect;
        detected_face f{{float(r.left() / scale), float(r.top() / scale), float(r.width() / scale),
                         float(r.height() / scale), squash_margin(d.detection_confidence)},
                        {}};
        if (min_size > 0 && std::max(f.box.width, f.box.height) < min_size) continue;
        std::fill_n(f.points, 10, std::numeric_limits<float>::quiet_NaN()); // HOG gives no keypoints
        faces.push_back(f);
    }
    return faces;
}

// YuNet box -> predictor box: centre shift (x: fraction of width, y: fraction of height) and
// side = a * width + b * height. Least-squares fit on LFW (7641 faces both detectors found)
// against dlib's HOG boxes; with it, landmarks from YuNet boxes differ from those from HOG boxes by
// a median 1% of the eye-corner span.
constexpr double yunet_to_hog[4] = {-0.022, 0.044, 0.666, 0.342};

// The 68-point predictor was trained on dlib HOG boxes (square, brows to lower lip). YuNet boxes
// are taller (forehead to chin): map them to the box the predictor expects.
dlib::rectangle predictor_box(const cvis_face_engine &e, const cvis_face_box &b) {
    double cx = b.x + b.width / 2, cy = b.y + b.height / 2, side = std::max(b.width, b.height);
    if (e.models->has_yunet) {
        cx += yunet_to_hog[0] * b.width;
        cy += yunet_to_hog[1] * b.height;
        side = yunet_to_hog[2] * b.width + yunet_to_hog[3] * b.height;
    } else {
        side = (b.width + b.height) / 2;
    }
    const double half = side / 2;
    return dlib::rectangle(long(std::lround(cx - half)), long(std::lround(cy - half)),
                           long(std::lround(cx + half)) - 1, long(std::lround(cy + half)) - 1);
}

// Runs a shape predictor on the grey pixels around `rect` only (converting a whole frame to grey
// costs more than the predictor). The predictor samples close to its box; the margin of one box
// side keeps every sample inside the converted region.
dlib::full_object_detection predict_shape(const dlib::shape_predictor &predictor, const cv::Mat &image,
                                          const dlib::rectangle &rect, cv::Mat &scratch) {
    const long side = std::max(rect.width(), rect.height());
    const cv::Rect region = cv::Rect(int(rect.left() - side), int(rect.top() - side), int(rect.width() + 2 * side),
                                     int(rect.height() + 2 * side)) &
                            cv::Rect(0, 0, image.cols, image.rows);
    const cv::Point offset = region.empty() ? cv::Point(0, 0) : region.tl();
    cv::Mat grey;
    if (region.empty()) grey = cv::Mat(1, 1, CV_8UC1, cv::Scalar(0));
    else if (image.channels() == 3) {
        cv::cvtColor(image(region), scratch, cv::COLOR_BGR2GRAY);
        grey = scratch;
    } else {
        grey = image(region);
    }
    dlib::full_object_detection shape =
        predictor(dlib::cv_image<unsigned char>(grey), dlib::translate_rect(rect, -offset.x, -offset.y));
    for (unsigned long i = 0; i < shape.num_parts(); ++i) shape.part(i) += dlib::point(offset.x, offset.y);
    return shape;
}

// PFLD's input: the square of pfld_crop × the predictor box's side around its centre, moved down by
// pfld_shift × the side, scaled to 112 px. Chosen so that PFLD's points sit where dlib's 68-point
// predictor put them on the same box (median distance 6.9 % of the eye distance over 192 LFW faces,
// `pfld_fit` in Docs/face.md "Landmarks"; 1.0× the box: 7.8 %), so pose, blink and tracking keep
// the geometry they were measured with.
constexpr double pfld_crop = 1.2;
constexpr double pfld_shift = 0.05;
constexpr int pfld_input = 112;

// The 68 landmarks of the face in `rect` from the PFLD network (RGB /255 input, outputs in 0..1 of
// the crop); pixels outside the image are black.
void pfld_landmarks(cvis_face_engine &e, const cv::Mat &image, const dlib::rectangle &rect, float out[136]) {
    const double side = (rect.width() + rect.height()) / 2.0;
    const double cx = (rect.left() + rect.right() + 1) / 2.0, cy = (rect.top() + rect.bottom() + 1) / 2.0 + pfld_shift * side;
    const double crop = pfld_crop * side, s = pfld_input / crop;
    const double x0 = cx - crop / 2, y0 = cy - crop / 2;
    const cv::Matx23d warp(s, 0, -x0 * s, 0, s, -y0 * s);
    cv::warpAffine(image, e.landmark_crop, warp, cv::Size(pfld_input, pfld_input), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                   cv::Scalar::all(0));
    if (e.landmark_crop.channels() == 1) cv::cvtColor(e.landmark_crop, e.landmark_crop, cv::COLOR_GRAY2BGR);
    cv::dnn::blobFromImage(e.landmark_crop, e.landmark_blob, 1.0 / 255, cv::Size(), cv::Scalar(), true, false);
    std::lock_guard<std::mutex> lock(e.models->pfld_mutex);
    e.models->pfld.setInput(e.landmark_blob);
    const cv::Mat result = e.models->pfld.forward();
    if (result.total() < 136 || result.type() != CV_32F) throw std::runtime_error("PFLD: unexpected output");
    const float *o = result.ptr<float>();
    for (int i = 0; i < 68; ++i) {
        out[2 * i] = float(x0 + o[2 * i] * crop);
        out[2 * i + 1] = float(y0 + o[2 * i + 1] * crop);
    }
}

// The box dlib's HOG detector would give for a face with these 68 landmarks (fitted on LFW: the
// landmarks' bounding box, 8% wider, centre raised by 11.5% of its width). Used to run the
// 5-point predictor for chip alignment.
dlib::rectangle box_from_landmarks(const float *lm) {
    float minx = lm[0], maxx = lm[0], miny = lm[1], maxy = lm[1];
    for (int i = 1; i < 68; ++i) {
        minx = std::min(minx, lm[2 * i]), maxx = std::max(maxx, lm[2 * i]);
        miny = std::min(miny, lm[2 * i + 1]), maxy = std::max(maxy, lm[2 * i + 1]);
    }
    const double w = maxx - minx, cx = (minx + maxx) / 2.0, cy = (miny + maxy) / 2.0 - 0.115 * w;
    const double half = 1.08 * w / 2;
    return dlib::rectangle(long(std::lround(cx - half)), long(std::lround(cy - half)), long(std::lround(cx + half)) - 1,
                           long(std::lround(cy + half)) - 1);
}

// Mean 3D face for solvePnP: points of MediaPipe's canonical face model (cm), moved to camera-like
// axes (x to the image right, y down, z away from the camera) with the nose tip at the origin, so
// that a frontal, upright face has rotation ≈ identity. The chin is left out (it drops when the
// mouth opens). The common 6-point "generic" model puts the eyes only 0.3 eye-spans behind the
// nose tip, against 0.48 here, and overstates yaw by about half. iBUG index -> point:
constexpr int pose_indices[8] = {30, 33, 36, 45, 39, 42, 48, 54};
const cv::Point3d pose_model[8] = {
    {0, 0, 0},               // nose tip
    {0, 0.962, 1.417},       // bottom of the nose
    {-4.446, -3.791, 4.303}, // outer corner of the image-left eye
    {4.446, -3.791, 4.303},  // outer corner of the image-right eye
    {-1.856, -3.712, 3.718}, // inner corner of the image-left eye
    {1.856, -3.712, 3.718},  // inner corner of the image-right eye
    {-2.456, 3.216, 3.192},  // image-left mouth corner
    {2.456, 3.216, 3.192},   // image-right mouth corner
};
// Median pitch of the 7700 LFW faces with this model, taken as "frontal" and subtracted.
constexpr double pitch_offset = 6.3;

} // namespace

namespace cvis {
void predictor_rect(const cvis_face_engine *engine, const cvis_face_box &box, long out[4]) {
    const dlib::rectangle r = predictor_box(*engine, box);
    out[0] = r.left(), out[1] = r.top(), out[2] = r.right(), out[3] = r.bottom();
}

cvis_status face_embed_points(cvis_face_engine *engine, cvis_image_view image, const float *points, int count,
                              int flip, float out[128]) {
    if (!engine || !points || !out || !valid_view(image)) return fail(CVIS_ERR_ARGUMENT, "bad face embed arguments");
    if (!engine->models->net) return fail(CVIS_ERR_ARGUMENT, "no face recognition model loaded");
    if (!finite_landmarks(points, count)) return fail(CVIS_ERR_ARGUMENT, "landmarks are not finite");
    return guarded([&]() -> cvis_status {
        std::lock_guard<std::mutex> lock(engine->models->net_mutex);
        engine->models->net->embed(view_mat(image), points, count, flip <= 0 ? 1 : flip == 1 ? 2 : face_jittered_views, out);
        return CVIS_OK;
    });
}

cvis_status face_descriptors_points(cvis_face_engine *engine, cvis_image_view image, const float *points, int count,
                                    int views, float *out) {
    if (!engine || !points || !out || !valid_view(image)) return fail(CVIS_ERR_ARGUMENT, "bad face embed arguments");
    if (!engine->models->net) return fail(CVIS_ERR_ARGUMENT, "no face recognition model loaded");
    if (!finite_landmarks(points, count)) return fail(CVIS_ERR_ARGUMENT, "landmarks are not finite");
    return guarded([&]() -> cvis_status {
        std::lock_guard<std::mutex> lock(engine->models->net_mutex);
        engine->models->net->descriptors(view_mat(image), points, count, std::clamp(views, 1, face_view_count), out);
        return CVIS_OK;
    });
}

// The alignment points of `alignment` for a face with these 68 landmarks (`points` holds 68 or 5).
cvis_status alignment_points(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136],
                             ChipAlignment alignment, float points[136], int &count) {
    if (!engine || !landmarks || !valid_view(image)) return fail(CVIS_ERR_ARGUMENT, "bad face embed arguments");
    if (!finite_landmarks(landmarks, 68)) return fail(CVIS_ERR_ARGUMENT, "landmarks are not finite");
    switch (alignment) {
    case ChipAlignment::landmarks68:
        std::copy(landmarks, landmarks + 136, points);
        count = 68;
        return CVIS_OK;
    case ChipAlignment::eyesNose5: {
        // dlib's 5-point order: image-right eye outer, inner; image-left eye outer, inner; nose bottom.
        static constexpr int five[5] = {45, 42, 36, 39, 33};
        for (int i = 0; i < 5; ++i) {
            points[2 * i] = landmarks[2 * five[i]];
            points[2 * i + 1] = landmarks[2 * five[i] + 1];
        }
        count = 5;
        return CVIS_OK;
    }
    case ChipAlignment::shape5:
        if (engine->models->shape5.num_parts() != 5) return fail(CVIS_ERR_ARGUMENT, "no 5-point landmark model loaded");
        count = 5;
        return guarded([&]() -> cvis_status {
            const bool same = engine->has_last && std::equal(landmarks, landmarks + 136, engine->last_landmarks);
            const dlib::rectangle box = same ? engine->last_box : box_from_landmarks(landmarks);
            const dlib::full_object_detection shape =
                predict_shape(engine->models->shape5, view_mat(image), box, engine->grey);
            for (unsigned long i = 0; i < 5; ++i) {
                points[2 * i] = float(shape.part(i).x());
                points[2 * i + 1] = float(shape.part(i).y());
            }
            return CVIS_OK;
        });
    }
    return fail(CVIS_ERR_ARGUMENT, "unknown chip alignment");
}

cvis_status face_embed_with(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136], int flip,
                            ChipAlignment alignment, float out[128]) {
    float points[136];
    int count = 0;
    const cvis_status st = alignment_points(engine, image, landmarks, alignment, points, count);
    return st == CVIS_OK ? face_embed_points(engine, image, points, count, flip, out) : st;
}

ChipAlignment default_alignment(const cvis_face_engine *engine) {
    return engine && engine->models->shape5.num_parts() == 5 ? ChipAlignment::shape5 : ChipAlignment::landmarks68;
}
} // namespace cvis

namespace {
// dlib's deserialize from bytes already in memory (the caller read the file once and may have
// checked its sha256 on the same bytes).
struct MemoryBuffer : std::streambuf {
    MemoryBuffer(const uint8_t *data, size_t length) {
        char *p = reinterpret_cast<char *>(const_cast<uint8_t *>(data));
        setg(p, p, p + length);
    }
};

template <typename T> void deserialize_bytes(const cvis_model_bytes &bytes, T &item) {
    MemoryBuffer buffer(bytes.data, bytes.length);
    std::istream in(&buffer);
    dlib::deserialize(item, in);
}

bool has_bytes(const cvis_model_bytes *b) { return b && b->data && b->length > 0; }
std::string label(const cvis_model_bytes &b, const char *fallback) { return b.name ? b.name : fallback; }
} // namespace

extern "C" {

cvis_face_recognition *cvis_face_recognition_load(const cvis_model_bytes *shape5, const cvis_model_bytes *resnet,
                                                  cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    cvis_face_recognition *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!has_bytes(shape5) || !has_bytes(resnet))
            return fail(CVIS_ERR_ARGUMENT, "the recognition network needs the 5-point model and the ResNet");
        auto recognition = std::make_unique<cvis_face_recognition>();
        const std::string name = label(*shape5, "5-point model");
        try {
            deserialize_bytes(*shape5, recognition->shape5);
        } catch (const dlib::serialization_error &e) {
            return fail(CVIS_ERR_DECODE, name + " is not a dlib shape predictor: " + e.what());
        }
        if (recognition->shape5.num_parts() != 5) return fail(CVIS_ERR_FORMAT, name + " is not a 5-point shape predictor");
        try {
            MemoryBuffer buffer(resnet->data, resnet->length);
            std::istream in(&buffer);
            recognition->net = std::make_unique<cvis::FaceNet>(cvis::load_face_net(in));
        } catch (const dlib::serialization_error &e) {
            return fail(CVIS_ERR_DECODE, label(*resnet, "ResNet") + " is not dlib's face recognition ResNet: " + e.what());
        }
        result = recognition.release();
        return CVIS_OK;
    });
    return *status == CVIS_OK ? result : nullptr;
}

void cvis_face_recognition_free(cvis_face_recognition *recognition) {
    try {
        delete recognition;
    } catch (...) {
    }
}

cvis_face_models *cvis_face_models_load(const cvis_model_bytes *yunet_onnx, const cvis_model_bytes *landmarks,
                                        int landmarks_format, cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    cvis_face_models *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!has_bytes(landmarks)) return fail(CVIS_ERR_ARGUMENT, "the 68-point landmark model is required");
        if (landmarks_format != CVIS_LANDMARKS_PFLD && landmarks_format != CVIS_LANDMARKS_DLIB68)
            return fail(CVIS_ERR_ARGUMENT, "unknown landmark model format");
        auto models = std::make_unique<cvis_face_models>();
        if (has_bytes(yunet_onnx)) {
            const std::string name = label(*yunet_onnx, "YuNet");
            try { // the one network of all engines; a bad file fails here
                models->yunet = cvis::make_net(std::vector<uchar>(yunet_onnx->data, yunet_onnx->data + yunet_onnx->length));
                models->has_yunet = true;
                std::vector<cv::String> names = models->yunet.getUnconnectedOutLayersNames();
                for (const auto &n : yunet_outputs)
                    if (std::find(names.begin(), names.end(), n) == names.end())
                        return fail(CVIS_ERR_FORMAT, name + " is not a YuNet 2023 model (no output " + n + ")");
            } catch (const cv::Exception &e) {
                return fail(CVIS_ERR_DECODE, name + " is not a loadable ONNX model: " + e.what());
            }
        } else {
            models->hog = dlib::get_frontal_face_detector();
        }
        const std::string lname = label(*landmarks, "landmark model");
        if (landmarks_format == CVIS_LANDMARKS_PFLD) {
            try {
                models->pfld = cvis::make_net(std::vector<uchar>(landmarks->data, landmarks->data + landmarks->length));
                models->has_pfld = true;
                const int shape[4] = {1, 3, pfld_input, pfld_input};
                models->pfld.setInput(cv::Mat(4, shape, CV_32F, cv::Scalar(0.5)));
                if (models->pfld.forward().total() != 136) return fail(CVIS_ERR_FORMAT, lname + " is not a 68-point PFLD network");
            } catch (const cv::Exception &e) {
                return fail(CVIS_ERR_DECODE, lname + " is not a loadable ONNX model: " + e.what());
            }
        } else {
            try {
                deserialize_bytes(*landmarks, models->shape68);
            } catch (const dlib::serialization_error &e) {
                return fail(CVIS_ERR_DECODE, lname + " is not a dlib shape predictor: " + e.what());
            }
            if (models->shape68.num_parts() != 68) return fail(CVIS_ERR_FORMAT, lname + " is not a 68-point shape predictor");
        }
        result = models.release();
        return CVIS_OK;
    });
    return *status == CVIS_OK ? result : nullptr;
}

void cvis_face_models_attach_recognition(cvis_face_models *models, cvis_face_recognition *recognition) {
    std::unique_ptr<cvis_face_recognition> owned(recognition);
    if (!models || !owned) return;
    models->shape5 = std::move(owned->shape5);
    models->net = std::move(owned->net);
}

void cvis_face_models_free(cvis_face_models *models) {
    try {
        delete models;
    } catch (...) {
    }
}

int cvis_face_models_has_yunet(const cvis_face_models *models) { return models && models->has_yunet; }

cvis_face_engine *cvis_face_engine_create(const cvis_face_models *models, cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    cvis_face_engine *result = nullptr;
    *status = guarded([&]() -> cvis_status {
        if (!models) return fail(CVIS_ERR_ARGUMENT, "no face models");
        auto engine = std::make_unique<cvis_face_engine>();
        engine->models = models;
        if (!models->has_yunet) engine->hog = std::make_unique<dlib::frontal_face_detector>(models->hog);
        result = engine.release();
        return CVIS_OK;
    });
    return *status == CVIS_OK ? result : nullptr;
}

void cvis_face_engine_free(cvis_face_engine *engine) {
    try {
        delete engine;
    } catch (...) {
    }
}

int cvis_face_detect_points(cvis_face_engine *engine, cvis_image_view image, int min_size, cvis_face_box *out,
                            float *points, int max_faces, cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    if (!engine || !valid_view(image) || max_faces < 0 || (max_faces > 0 && !out) || min_size < 0) {
        *status = fail(CVIS_ERR_ARGUMENT, "bad face detection arguments");
        return -1;
    }
    int count = 0;
    *status = guarded([&]() -> cvis_status {
        const cv::Mat mat = view_mat(image);
        std::vector<detected_face> faces = engine->hog ? detect_hog(*engine, mat, min_size)
                                                       : detect_yunet(*engine, mat, min_size);
        sort_largest_first(faces);
        count = std::min(int(faces.size()), max_faces);
        for (int i = 0; i < count; ++i) {
            out[i] = faces[size_t(i)].box;
            if (points) std::copy_n(faces[size_t(i)].points, 10, points + 10 * i);
        }
        return CVIS_OK;
    });
    return *status == CVIS_OK ? count : -1;
}

int cvis_face_detect(cvis_face_engine *engine, cvis_image_view image, int min_size, cvis_face_box *out, int max_faces,
                     cvis_status *status) {
    return cvis_face_detect_points(engine, image, min_size, out, nullptr, max_faces, status);
}

int cvis_face_keypoints(cvis_face_engine *engine, cvis_image_view image, cvis_face_box box, float out[10],
                        cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    if (!engine || !out || !valid_view(image) || !finite_box(box) || box.width > 1e5f || box.height > 1e5f) {
        *status = fail(CVIS_ERR_ARGUMENT, "bad face keypoint arguments");
        return -1;
    }
    if (engine->hog) {
        *status = CVIS_OK;
        return 0;
    }
    int found = 0;
    *status = guarded([&]() -> cvis_status {
        // The square of keypoint_crop_ratio × the box's longer side around its centre, scaled to
        // keypoint_input px (outside the image: black), so the face is as large in the network's
        // input as an LFW face in its 250 px image — the geometry the accuracy was measured on.
        const double side = keypoint_crop_ratio * std::max(box.width, box.height);
        const double x0 = box.x + box.width / 2.0 - side / 2, y0 = box.y + box.height / 2.0 - side / 2;
        const double s = keypoint_input / side;
        const cv::Mat mat = view_mat(image);
        const cv::Rect roi = cv::Rect(int(std::floor(x0)), int(std::floor(y0)), int(std::ceil(side)) + 1,
                                      int(std::ceil(side)) + 1) &
                             cv::Rect(0, 0, mat.cols, mat.rows);
        engine->crop.create(keypoint_input, keypoint_input, mat.type());
        engine->crop.setTo(cv::Scalar::all(0));
        if (roi.area() > 0) {
            // Place the visible part: its top-left at (roi.x - x0)·s in the crop.
            const int dx = std::max(0, int(std::lround((roi.x - x0) * s))), dy = std::max(0, int(std::lround((roi.y - y0) * s)));
            // A sliver at the crop's far edge can round to dx or dy = keypoint_input: nothing to
            // place (and std::clamp needs its low bound under its high one).
            if (dx < keypoint_input && dy < keypoint_input) {
                const int w = std::clamp(int(std::lround(roi.width * s)), 1, keypoint_input - dx);
                const int h = std::clamp(int(std::lround(roi.height * s)), 1, keypoint_input - dy);
                cv::Mat part;
                cv::resize(mat(roi), part, cv::Size(w, h), 0, 0, s < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
                part.copyTo(engine->crop(cv::Rect(dx, dy, w, h)));
            }
        }
        // The face the box means: the detection in the crop overlapping the box (mapped into the
        // crop) the most, at IoU 0.3 or more.
        const cv::Rect2d expected((box.x - x0) * s, (box.y - y0) * s, box.width * s, box.height * s);
        const std::vector<detected_face> faces = detect_yunet(*engine, engine->crop, 0);
        double best = 0.3;
        const detected_face *pick = nullptr;
        for (const auto &f : faces) {
            const cv::Rect2d r(f.box.x, f.box.y, f.box.width, f.box.height);
            const double inter = (r & expected).area(), uni = r.area() + expected.area() - inter;
            if (uni > 0 && inter / uni >= best) {
                best = inter / uni;
                pick = &f;
            }
        }
        if (pick) {
            for (int i = 0; i < 5; ++i) {
                out[2 * i] = float(x0 + pick->points[2 * i] / s);
                out[2 * i + 1] = float(y0 + pick->points[2 * i + 1] / s);
            }
            found = 1;
        }
        return CVIS_OK;
    });
    return *status == CVIS_OK ? found : -1;
}

cvis_status cvis_face_landmarks(cvis_face_engine *engine, cvis_image_view image, cvis_face_box box, float out[136]) {
    if (!engine || !out || !valid_view(image) || !finite_box(box))
        return fail(CVIS_ERR_ARGUMENT, "bad face landmark arguments");
    return guarded([&]() -> cvis_status {
        engine->has_last = false;
        const dlib::rectangle rect = predictor_box(*engine, box);
        if (engine->models->has_pfld) {
            pfld_landmarks(*engine, view_mat(image), rect, out);
            if (!finite_landmarks(out, 68)) return fail(CVIS_ERR_INTERNAL, "landmark network gave non-finite points");
        } else {
            const dlib::full_object_detection shape = predict_shape(engine->models->shape68, view_mat(image), rect, engine->grey);
            if (shape.num_parts() != 68) return fail(CVIS_ERR_INTERNAL, "shape predictor did not give 68 points");
            for (unsigned long i = 0; i < 68; ++i) {
                out[2 * i] = float(shape.part(i).x());
                out[2 * i + 1] = float(shape.part(i).y());
            }
        }
        std::copy_n(out, 136, engine->last_landmarks);
        engine->last_box = rect;
        engine->has_last = true;
        return CVIS_OK;
    });
}

cvis_status cvis_face_pose(const float landmarks[136], int image_width, int image_height, float out[3]) {
    if (!landmarks || !out || image_width <= 0 || image_height <= 0 || !finite_landmarks(landmarks, 68))
        return fail(CVIS_ERR_ARGUMENT, "bad head pose arguments");
    return guarded([&]() -> cvis_status {
        std::vector<cv::Point3d> object(std::begin(pose_model), std::end(pose_model));
        std::vector<cv::Point2d> points;
        for (int i : pose_indices) points.emplace_back(landmarks[2 * i], landmarks[2 * i + 1]);
        const double f = image_width;
        const cv::Matx33d camera(f, 0, image_width / 2.0, 0, f, image_height / 2.0, 0, 0, 1);
        // Start from a frontal face at the distance the eye-corner span implies: avoids the
        // mirrored (behind-the-camera) solution.
        const double span = cv::norm(points[3] - points[2]);
        if (!(span > 1e-3)) return fail(CVIS_ERR_ARGUMENT, "landmarks are degenerate");
        const double z = f * (pose_model[3].x - pose_model[2].x) / span;
        cv::Mat rvec = cv::Mat::zeros(3, 1, CV_64F);
        cv::Mat tvec = (cv::Mat_<double>(3, 1) << (points[0].x - image_width / 2.0) * z / f,
                        (points[0].y - image_height / 2.0) * z / f, z);
        if (!cv::solvePnP(object, points, camera, cv::noArray(), rvec, tvec, true, cv::SOLVEPNP_ITERATIVE))
            return fail(CVIS_ERR_INTERNAL, "solvePnP failed");
        cv::Matx33d rotation, r, q;
        cv::Rodrigues(rvec, rotation);
        // Euler angles (degrees) about the camera x, y, z axes; rotation ≈ identity when frontal.
        const cv::Vec3d euler = cv::RQDecomp3x3(rotation, r, q);
        auto wrap = [](double a) { return std::remainder(a, 360.0); };
        // Camera y points down: a positive turn about it moves the nose to image left, and a
        // positive turn about x moves it down; about z (into the image) it is clockwise.
        out[0] = float(wrap(-euler[1]));
        out[1] = float(wrap(-euler[0] - pitch_offset));
        out[2] = float(wrap(euler[2]));
        return CVIS_OK;
    });
}

cvis_status cvis_face_measure(cvis_image_view image, cvis_face_box box, cvis_face_measures *out) {
    if (!out || !valid_view(image) || !finite_box(box)) return fail(CVIS_ERR_ARGUMENT, "bad face measure arguments");
    return guarded([&]() -> cvis_status {
        const cv::Mat mat = view_mat(image);
        const cv::Rect area = cv::Rect(int(std::floor(box.x)), int(std::floor(box.y)), int(std::ceil(box.width)),
                                       int(std::ceil(box.height))) &
                              cv::Rect(0, 0, mat.cols, mat.rows);
        if (area.width < 2 || area.height < 2) return fail(CVIS_ERR_ARGUMENT, "face box is outside the image");
        cv::Mat grey;
        if (mat.channels() == 3) cv::cvtColor(mat(area), grey, cv::COLOR_BGR2GRAY);
        else grey = mat(area);
        cv::Scalar mean, stddev;
        cv::meanStdDev(grey, mean, stddev);
        const int width = 128;
        const int height = std::max(1, int(std::lround(double(width) * area.height / area.width)));
        cv::Mat resized, laplacian;
        cv::resize(grey, resized, cv::Size(width, height), 0, 0, width < area.width ? cv::INTER_AREA : cv::INTER_LINEAR);
        cv::Laplacian(resized, laplacian, CV_32F);
        cv::Scalar lmean, lstddev;
        cv::meanStdDev(laplacian, lmean, lstddev);
        out->brightness = float(mean[0]);
        out->contrast = float(stddev[0]);
        out->sharpness = float(lstddev[0] * lstddev[0]);
        return CVIS_OK;
    });
}

cvis_status cvis_face_embed(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136], int flip,
                            float out[128]) {
    return cvis::face_embed_with(engine, image, landmarks, flip, cvis::default_alignment(engine), out);
}

cvis_status cvis_face_embed_views(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136],
                                  int alignment, int views, float *out) {
    float points[136];
    int count = 0;
    if (alignment < 0 || alignment > 3) return fail(CVIS_ERR_ARGUMENT, "unknown chip alignment");
    const cvis::ChipAlignment chosen = alignment == 0 ? cvis::default_alignment(engine)
                                       : alignment == 1 ? cvis::ChipAlignment::landmarks68
                                       : alignment == 2 ? cvis::ChipAlignment::eyesNose5
                                                        : cvis::ChipAlignment::shape5;
    if (alignment == 3 && engine) engine->has_last = false; // force the landmark-derived box
    const cvis_status st = cvis::alignment_points(engine, image, landmarks, chosen, points, count);
    return st == CVIS_OK ? cvis::face_descriptors_points(engine, image, points, count, views, out) : st;
}

cvis_status cvis_face_draw(uint8_t *bgr, int width, int height, cvis_face_box box, const float *landmarks) {
    if (!bgr || width <= 0 || height <= 0 || width > 16384 || height > 16384 || !finite_box(box))
        return fail(CVIS_ERR_ARGUMENT, "bad face drawing arguments");
    if (landmarks && !finite_landmarks(landmarks, 68)) return fail(CVIS_ERR_ARGUMENT, "landmarks are not finite");
    return guarded([&]() -> cvis_status {
        cv::Mat mat(height, width, CV_8UC3, bgr);
        const int thickness = std::max(1, int(std::lround(std::min(width, height) / 240.0)));
        const cv::Point2f tl(box.x, box.y), br(box.x + box.width, box.y + box.height);
        cv::rectangle(mat, cv::Point(cvRound(tl.x), cvRound(tl.y)), cv::Point(cvRound(br.x), cvRound(br.y)),
                      cv::Scalar(0, 255, 0), thickness, cv::LINE_AA);
        if (landmarks)
            for (int i = 0; i < 68; ++i)
                cv::circle(mat, cv::Point(cvRound(landmarks[2 * i]), cvRound(landmarks[2 * i + 1])), thickness,
                           cv::Scalar(0, 200, 255), cv::FILLED, cv::LINE_AA);
        return CVIS_OK;
    });
}

} // extern "C"
