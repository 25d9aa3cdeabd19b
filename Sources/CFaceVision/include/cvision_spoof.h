// Presentation-attack cues that a plain camera can see.
#ifndef CVISION_SPOOF_H
#define CVISION_SPOOF_H

#include "cvision_face.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    CVIS_BORDER_LEFT = 1,
    CVIS_BORDER_RIGHT = 2,
    CVIS_BORDER_TOP = 4,
    CVIS_BORDER_BOTTOM = 8,
};

/// Long straight edges around the face, as a screen bezel, a video window or a photo's edge
/// draws them: a bit mask of the sides (CVIS_BORDER_*) on which an edge at least 60 % as long
/// as the face runs alongside it, outside it. Returns -1 on error.
int cvis_face_border_sides(cvis_image_view image, cvis_face_box box);

/// Re-capture features of the face region (no borders needed), for a screen or print held so
/// close that its edges are out of view. Fills `out[CVIS_RECAPTURE_FEATURES]`:
///   [0] moire: the strongest high-frequency peak of the face's spectrum over the median of its
///       band (log10 ratio) — a display's pixel grid beating with the camera's makes such peaks;
///   [1] high-frequency share: spectral energy above half the Nyquist frequency / all but DC;
///   [2] mean saturation (0-1) — an emissive screen shifts skin colour;
///   [3] glare: fraction of near-white pixels (V > 245).
/// Returns CVIS_OK, or an error for an empty box or a bad image.
enum { CVIS_RECAPTURE_FEATURES = 4 };
cvis_status cvis_face_recapture_features(cvis_image_view image, cvis_face_box box, float *out);

#ifdef __cplusplus
}
#endif
#endif
