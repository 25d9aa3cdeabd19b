// Eye state from MediaPipe's iris landmark network (eyelid contour + iris, ONNX, run with
// OpenCV's dnn module). Plain C over C++; every entry point catches all exceptions
// (status + cvis_last_error()).
#ifndef CVISION_IRIS_H
#define CVISION_IRIS_H

#include "cvision_face.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The network's ONNX bytes, read once and shared (read-only) by every eye model made from them.
typedef struct cvis_iris_model cvis_iris_model;

/// Reads and checks (by building a network from it) iris_landmark.onnx. NULL + *status on failure.
cvis_iris_model *cvis_iris_model_load(const char *onnx, cvis_status *status);
void cvis_iris_model_free(cvis_iris_model *model);

/// One thread's network (cv::dnn::Net keeps per-call state). The model must outlive it.
typedef struct cvis_iris cvis_iris;
cvis_iris *cvis_iris_create(const cvis_iris_model *model, cvis_status *status);
void cvis_iris_free(cvis_iris *iris);

/// The eyelid opening of one eye, given its two corners in frame pixels, as MediaPipe crops it:
/// a square 2.3× the corner distance about their midpoint, rotated so the corners are level,
/// resized to 64×64, RGB mapped to -1..1 (grey frames repeated into three channels). The network
/// was trained on the subject's LEFT eye; `mirror` 1 flips the crop first (the other eye).
/// out[0] = eyelid height / width: the mean distance of the 7 upper–lower lid point pairs over the
/// corner-to-corner distance of the predicted contour (≈0.1 closed, ≈0.35 open).
/// out[1..32] = the 16 eyelid contour points (x, y) mapped back to frame pixels.
enum { CVIS_IRIS_OUTPUTS = 33 };
cvis_status cvis_iris_eyelid(cvis_iris *iris, cvis_image_view image, float x0, float y0, float x1, float y1,
                             int mirror, float *out);

#ifdef __cplusplus
}
#endif
#endif
