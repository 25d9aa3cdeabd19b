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

#ifdef __cplusplus
}
#endif
#endif
