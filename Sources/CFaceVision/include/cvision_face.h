// CFaceVision face API: detection (YuNet, or dlib HOG when no YuNet model), 68 landmarks (the PFLD
// network; dlib's 68-point predictor for comparison), dlib's 5-point chip alignment, head pose,
// image quality measures, aligned-chip embeddings (dlib ResNet, 128-d), drawing.
// Plain C over C++; every entry point catches all exceptions (status + cvis_last_error()).
#ifndef CVISION_FACE_H
#define CVISION_FACE_H

#include "cvision_imaging.h" // cvis_status, cvis_image_view

#ifdef __cplusplus
extern "C" {
#endif

/// Read-only model weights, loaded once and shared by all engines.
typedef struct cvis_face_models cvis_face_models;

/// What the 68-point landmark model given to cvis_face_models_load is.
enum {
    /// The PFLD network (landmarks_68_pfld.onnx, 2.9 MB): what the daemon runs.
    CVIS_LANDMARKS_PFLD = 0,
    /// dlib's shape_predictor_68_face_landmarks.dat (95 MiB in memory): the benches compare with it.
    CVIS_LANDMARKS_DLIB68 = 1,
};

/// dlib's ResNet face recogniser and the 5-point model its chips are aligned on, loaded apart from
/// the rest (they are the largest files: loaded on another thread, their bytes released sooner).
typedef struct cvis_face_recognition cvis_face_recognition;
/// Loads from the files' bytes (each a whole file the caller read, and may have checked the sha256
/// of; nothing keeps pointing into them): dlib's shape_predictor_5_face_landmarks.dat and
/// dlib_face_recognition_resnet_model_v1.dat.
cvis_face_recognition *cvis_face_recognition_load(const cvis_model_bytes *shape5, const cvis_model_bytes *resnet,
                                                  cvis_status *status);
void cvis_face_recognition_free(cvis_face_recognition *recognition);

/// Loads the models from their bytes (as above). `yunet_onnx` may be NULL (then detection uses
/// dlib's HOG detector). `landmarks` is required (landmarks, pose, blink), in `landmarks_format`.
/// Without a recognition attached (cvis_face_models_attach_recognition) embedding fails with
/// CVIS_ERR_ARGUMENT. On failure returns NULL and sets *status and cvis_last_error().
/// YuNet must be the 2023 model (face_detection_yunet_2023mar.onnx; it is run with OpenCV's dnn
/// module, as OpenCV 4.6's cv::FaceDetectorYN only reads the 2022 model).
cvis_face_models *cvis_face_models_load(const cvis_model_bytes *yunet_onnx, const cvis_model_bytes *landmarks,
                                        int landmarks_format, cvis_status *status);
/// Hands `recognition` over to `models` (it is freed with them). Call before any engine exists.
void cvis_face_models_attach_recognition(cvis_face_models *models, cvis_face_recognition *recognition);
void cvis_face_models_free(cvis_face_models *models);
/// 1 when detection uses YuNet, 0 for HOG.
int cvis_face_models_has_yunet(const cvis_face_models *models);

/// Per-thread working state (the detector's and the landmark network's instances, scratch). An
/// engine is used by one thread at a time; create one per analysis thread. The models must outlive
/// their engines. The ResNet is the models' (one copy, used under a lock).
typedef struct cvis_face_engine cvis_face_engine;
cvis_face_engine *cvis_face_engine_create(const cvis_face_models *models, cvis_status *status);
void cvis_face_engine_free(cvis_face_engine *engine);

typedef struct {
    float x, y, width, height;  // pixels, top-left origin
    float score;                // detector confidence 0..1 (HOG: squashed margin)
} cvis_face_box;

/// Detects faces, largest first. Returns the count written (<= max_faces) or -1 on error.
/// `min_size` is the smallest face side in pixels to report (0 = detector default).
/// YuNet: frames are scaled so the longer side is <= 640 px (less when `min_size` asks for small
/// faces); boxes cover forehead to chin and may extend past the image edges; score threshold 0.6.
/// HOG: finds faces from 80 px, or 40 px in images under 400 px (upsampled once); with `min_size`
/// the image is scaled so that `min_size` becomes 80 px. Score: the SVM margin squashed so that the
/// detection threshold maps to 0.6.
int cvis_face_detect(cvis_face_engine *engine, cvis_image_view image, int min_size, cvis_face_box *out, int max_faces,
                     cvis_status *status);

/// cvis_face_detect, and also each face's five keypoints from the detector: `points` (may be NULL)
/// receives 10 floats per face written, x, y of the image-left eye, the image-right eye, the nose
/// tip, the image-left and the image-right mouth corner (cvis_recognizer_points' order, so they
/// can align cvis_recognizer_embed), in pixels. YuNet gives them (decoded as OpenCV's
/// FaceDetectorYN does); the HOG detector gives none: its faces' points are NaN.
int cvis_face_detect_points(cvis_face_engine *engine, cvis_image_view image, int min_size, cvis_face_box *out,
                            float *points, int max_faces, cvis_status *status);

/// The detector's five keypoints (as cvis_face_detect_points orders them) of the face in `box`
/// (a detector box, or a tracked box of the same shape), without detecting on the whole frame:
/// YuNet runs on the square of twice the box's longer side around its centre, scaled to 256 px
/// (the face then as large as an LFW face, where the second network's accuracy with these points
/// was measured), and the detection overlapping the box most (IoU ≥ 0.3) gives the points.
/// Returns 1 (out written), 0 when there are none (HOG detector, or no face there), -1 on error.
int cvis_face_keypoints(cvis_face_engine *engine, cvis_image_view image, cvis_face_box box, float out[10],
                        cvis_status *status);

/// 68 landmarks (iBUG order) inside `box`: out[2*i], out[2*i+1] = x, y in pixels.
/// `box` is one from cvis_face_detect with the same models (YuNet boxes are mapped to the square box
/// dlib's predictors were trained on; PFLD sees 1.2× that box, moved down by 5 % of its side).
cvis_status cvis_face_landmarks(cvis_face_engine *engine, cvis_image_view image, cvis_face_box box, float out[136]);

/// Head pose from 68 landmarks (solvePnP on a generic 3D face, focal = image width):
/// out[0] yaw (+ = the person turns to their left, i.e. face moves to image right), out[1] pitch
/// (+ = looks up), out[2] roll (+ = head tilts clockwise in the image). A frontal face ≈ 0, 0, 0.
/// Degrees. Uses a mean 3D face (nose, eye corners, mouth corners); "frontal" pitch is the median
/// of LFW's faces. Expect a few degrees of error, more for pitch (face proportions vary).
cvis_status cvis_face_pose(const float landmarks[136], int image_width, int image_height, float out[3]);

/// Quality measures of the face region (grey): mean brightness 0-255, RMS contrast 0-128,
/// sharpness = variance of the Laplacian on the face resized to 128 px wide.
typedef struct {
    float brightness;
    float contrast;
    float sharpness;
} cvis_face_measures;
cvis_status cvis_face_measure(cvis_image_view image, cvis_face_box box, cvis_face_measures *out);

/// 128-d embedding of the face aligned from its 68 landmarks to dlib's 150x150 chip (0.25
/// padding). `flip` 1 also embeds the mirrored chip and averages (then re-normalises); 2 adds six
/// fixed small jitters of the chip (dlib's jitter_image distribution: up to 3°, 2 % shift, 3 %
/// zoom; eight chips, about four times the cost). The output is L2-normalised.
/// The chip is aligned on dlib's 5-point model's points, found in the box of this engine's last
/// cvis_face_landmarks call if `landmarks` are that call's output (else in a box derived from the
/// landmarks). LFW accuracy (YuNet boxes):
/// 5-point 98.95% (flip 0) / 99.10% (flip 1); from a derived box 98.4 / 98.8; 68-point 98.5 / 98.65.
/// The best LFW threshold on the Euclidean distance between two outputs is about 0.42 (flip 1).
cvis_status cvis_face_embed(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136], int flip,
                            float out[128]);

/// For evaluation: the raw descriptor (128 floats, not normalised) of each of the first `views`
/// (1-42) chips of the fixed view table (the chip, its mirror, then jitters; `cvis_face_embed`
/// averages the first 1, 2 or 8), written to `out` one after another. `alignment` 0 is the default
/// one; 1 the 68 landmarks, 2 five of the 68, 3 the 5-point model on a landmark-derived box.
cvis_status cvis_face_embed_views(cvis_face_engine *engine, cvis_image_view image, const float landmarks[136],
                                  int alignment, int views, float *out);

/// Draws a box and landmarks (may be NULL) onto a BGR image in place.
cvis_status cvis_face_draw(uint8_t *bgr, int width, int height, cvis_face_box box, const float *landmarks);

#ifdef __cplusplus
}
#endif
#endif
