// CFaceVision face API: detection (YuNet, or dlib HOG when no YuNet model), 68/5-point landmarks,
// head pose, image quality measures, aligned-chip embeddings (dlib ResNet, 128-d), drawing.
// Plain C over C++; every entry point catches all exceptions (status + cvis_last_error()).
#ifndef CVISION_FACE_H
#define CVISION_FACE_H

#include "cvision_imaging.h" // cvis_status, cvis_image_view

#ifdef __cplusplus
extern "C" {
#endif

/// Read-only model weights, loaded once and shared by all engines.
typedef struct cvis_face_models cvis_face_models;

/// Loads the models. `yunet_onnx` may be NULL (then detection uses dlib's HOG detector).
/// `shape68` is required (landmarks, pose, blink). `resnet` may be NULL (then embedding fails with
/// CVIS_ERR_ARGUMENT). On failure returns NULL and sets *status and cvis_last_error().
/// YuNet must be the 2023 model (face_detection_yunet_2023mar.onnx; it is run with OpenCV's dnn
/// module, as OpenCV 4.6's cv::FaceDetectorYN only reads the 2022 model). When
/// shape_predictor_5_face_landmarks.dat is in the same folder as `shape68` it is loaded too and
/// used to align embedding chips (see cvis_face_embed).
cvis_face_models *cvis_face_models_load(const char *yunet_onnx, const char *shape68, const char *resnet,
                                        cvis_status *status);
void cvis_face_models_free(cvis_face_models *models);
/// 1 when detection uses YuNet, 0 for HOG.
int cvis_face_models_has_yunet(const cvis_face_models *models);

/// Per-thread working state (detector input buffers, network scratch). An engine is used by one
/// thread at a time; create one per analysis thread. The models must outlive their engines.
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
/// `box` is one from cvis_face_detect with the same models (YuNet boxes are mapped to the box the
/// landmark model was trained on).
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
/// When the 5-point model is loaded the chip is aligned on its 5 points, found in the box of this
/// engine's last cvis_face_landmarks call if `landmarks` are that call's output (else in a box
/// derived from the landmarks); without it, on the 68 landmarks. LFW accuracy (YuNet boxes):
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
