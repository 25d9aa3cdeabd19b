// The second face network: MobileFaceNet trained with ArcFace (foamliu/MobileFaceNet, ONNX, run
// with OpenCV's dnn module), a 128-d embedding compared by cosine, fused with dlib's ResNet
// (Docs/face.md "Two networks"). Plain C over C++; every entry point catches all exceptions
// (status + cvis_last_error()).
#ifndef CVISION_RECOGNIZER_H
#define CVISION_RECOGNIZER_H

#include "cvision_face.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The network's ONNX bytes, read once and shared (read-only) by every recognizer made from them.
typedef struct cvis_recognizer_models cvis_recognizer_models;

/// Checks (by building the network once) and keeps the bytes of mobilefacenet_arcface_cv46.onnx.
/// On failure returns NULL and sets *status and cvis_last_error().
cvis_recognizer_models *cvis_recognizer_models_load(const cvis_model_bytes *onnx, cvis_status *status);
void cvis_recognizer_models_free(cvis_recognizer_models *models);

/// One thread's network (cv::dnn::Net keeps per-call state). The models must outlive it.
typedef struct cvis_recognizer cvis_recognizer;
cvis_recognizer *cvis_recognizer_create(const cvis_recognizer_models *models, cvis_status *status);
void cvis_recognizer_free(cvis_recognizer *recognizer);

enum { CVIS_RECOGNIZER_DIM = 128 };

/// The ArcFace five points from 68 iBUG landmarks: the two eye centres (mean of each eye's six
/// points; image left first), the nose tip (30), the mouth corners (48, 54). out[2*i], out[2*i+1].
cvis_status cvis_recognizer_points(const float landmarks[136], float out[10]);

/// The L2-normalised embedding of the face whose five points are `points` (as
/// cvis_recognizer_points gives them): aligned by a least-squares similarity transform onto the
/// ArcFace 112×112 template (38.29,51.70 73.53,51.50 56.03,71.74 41.55,92.37 70.73,92.20), RGB,
/// /255, mean (0.485,0.456,0.406), std (0.229,0.224,0.225), NCHW. `flip` 1 also embeds the
/// mirrored chip and averages the two raw outputs before normalising. Grey images are repeated
/// into three channels. `chip` (may be NULL) receives the aligned 112×112 BGR chip (37,632 bytes).
cvis_status cvis_recognizer_embed(cvis_recognizer *recognizer, cvis_image_view image, const float points[10], int flip,
                                  float out[128], uint8_t *chip);

/// For evaluation: the raw (not normalised) outputs of the chip and of its mirror, 128 floats
/// each, one after the other in `out` (256 floats).
cvis_status cvis_recognizer_raw(cvis_recognizer *recognizer, cvis_image_view image, const float points[10], float out[256]);

#ifdef __cplusplus
}
#endif
#endif
