// CHandScene: synthetic hand scenes for tests, the finger benchmark and replay cameras
// (Tests/Support/FingerScene). Test support only: the daemon does not link it.
// Plain C over C++; failures return a status and set cvis_last_error() (CImaging's).
#ifndef CVISION_HAND_SCENE_H
#define CVISION_HAND_SCENE_H

#include "cvision_imaging.h" // cvis_status

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CVIS_SCENE_LIVE = 0, CVIS_SCENE_PAPER = 1, CVIS_SCENE_SCREEN = 2 } cvis_scene_attack;

/// An open hand, palm toward the camera, fingers up, rendered with shading; the distal phalanges
/// carry real prints as darker skin modulation.
typedef struct {
    int width, height;          // frame size
    int right_hand;             // 1 right (thumb on the image's right), 0 left
    int thumb_mode;             // 1: only the thumb extended (fingers folded)
    float finger_width;         // pixels, middle finger; others scale from it
    float tip_x, tip_y;         // where the middle fingertip (thumb mode: thumb tip) is, frame fractions
    float rotation;             // degrees clockwise
    float blur_sigma;           // optical blur (0 = sharp)
    int attack;                 // cvis_scene_attack
    int empty;                  // 1: background only
    uint32_t absent;            // bit 1 index .. bit 4 little: finger not rendered (amputated)
    uint32_t seed, frame_index; // deterministic jitter and noise
    float print_ppi;            // resolution of the prints (FVC2002 DB2: 569)
    const uint8_t *prints[5];   // grey prints, [0..3] index..little; thumb mode: [0] thumb; NULL = plain skin
    int print_width[5], print_height[5];
} cvis_scene_params;

/// Renders one BGR frame (width*height*3 bytes).
cvis_status cvis_hand_render_scene(const cvis_scene_params *params, uint8_t *bgr);


#ifdef __cplusplus
}
#endif
#endif
