// Passive presentation-attack detection: Minivision's Silent-Face networks (MiniFASNetV2 and
// MiniFASNetV1SE, ONNX, run with OpenCV's dnn module). Plain C over C++; every entry point catches
// all exceptions (status + cvis_last_error()).
#ifndef CVISION_ANTISPOOF_H
#define CVISION_ANTISPOOF_H

#include "cvision_face.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The two networks' ONNX bytes, read once and shared (read-only) by every detector made from them.
typedef struct cvis_antispoof_models cvis_antispoof_models;

/// Reads and checks (by building a network from each) MiniFASNetV2.onnx and MiniFASNetV1SE.onnx.
/// On failure returns NULL and sets *status and cvis_last_error().
cvis_antispoof_models *cvis_antispoof_models_load(const cvis_model_bytes *v2_onnx, const cvis_model_bytes *v1se_onnx,
                                                  cvis_status *status);
void cvis_antispoof_models_free(cvis_antispoof_models *models);

/// One thread's networks (cv::dnn::Net keeps per-call state): one detector per analysis thread.
/// The models must outlive their detectors.
typedef struct cvis_antispoof cvis_antispoof;
cvis_antispoof *cvis_antispoof_create(const cvis_antispoof_models *models, cvis_status *status);
void cvis_antispoof_free(cvis_antispoof *detector);

/// The probability that `box` shows a real face rather than a print or a screen, as upstream
/// decides it: per network, the face box expanded about its centre (V2 ×2.7, V1SE ×4.0; the
/// scale lowered until the box fits the frame, then the box shifted inside it), resized to 80×80,
/// BGR raw 0..255 NCHW (grey frames are repeated into three channels); softmax over three
/// classes, class 1 = real. out[0]: the two networks' real probabilities averaged; out[1] V2's,
/// out[2] V1SE's. Returns CVIS_OK, or an error for an empty box or a bad image.
enum { CVIS_ANTISPOOF_OUTPUTS = 3 };
cvis_status cvis_antispoof_score(cvis_antispoof *detector, cvis_image_view image, cvis_face_box box, float *out);

#ifdef __cplusplus
}
#endif
#endif
