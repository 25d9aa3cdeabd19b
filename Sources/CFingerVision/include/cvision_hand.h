// CFingerVision hand and fingertip API (camera frames): finding fingers, fingertip boxes, print crops.
// Plain C over C++; every entry point catches all exceptions (status + cvis_last_error()).
// Geometry is in frame pixels, top-left origin, y down.
#ifndef CVISION_HAND_H
#define CVISION_HAND_H

#include "cvision_imaging.h" // cvis_status, cvis_image_view

#ifdef __cplusplus
extern "C" {
#endif

// MARK: Finding fingers

/// Per-thread working state (reused buffers: masks, contours). One per capture session.
typedef struct cvis_hand_engine cvis_hand_engine;
cvis_hand_engine *cvis_hand_engine_create(cvis_status *status);
void cvis_hand_engine_free(cvis_hand_engine *engine);

/// One finger found in a frame: its tip, its axis and its measured width.
typedef struct {
    float tip_x, tip_y;  // the apex of the fingertip (on the outline)
    float dir_x, dir_y;  // unit vector along the finger, from its base toward the tip
    float width;         // finger width in pixels, measured across the distal part
    float length;        // visible straight length (pixels) over which the sides stay parallel
    float score;         // 0..1: how finger-like (parallel sides, straight axis, length)
    float centre_level;  // mean grey across the finger's middle (0..255), for shading
    float edge_level;    // mean grey near its sides (|offset| ≈ 0.8 half-width)
} cvis_finger;

/// Finds finger-like protrusions of the largest skin regions (colour frames: skin chroma adapted
/// to the frame; grey/IR frames: bright foreground by Otsu). Writes up to `max_fingers`, best first.
/// `min_width` / `max_width`: finger widths in pixels to accept (0 = 1.5 % / 45 % of the frame width).
/// Returns the count or -1 on error.
int cvis_hand_find_fingers(cvis_hand_engine *engine, cvis_image_view image, float min_width, float max_width,
                           cvis_finger *out, int max_fingers, cvis_status *status);

/// About the skin mask of the last cvis_hand_find_fingers call: its share of the frame, its mean
/// saturation/Cr (colour frames, for liveness cues), and the bounding box of the skin region that
/// holds the best finger (the hand; all 0 when no finger was found).
typedef struct {
    float hand_x, hand_y, hand_width, hand_height;
    float skin_fraction;
    float mean_saturation; // HSV S of the skin pixels, 0..1 (0 for grey frames)
    float mean_cr;         // YCrCb Cr of the skin pixels (128 = neutral; 0 for grey frames)
} cvis_hand_stats;
cvis_status cvis_hand_last_stats(const cvis_hand_engine *engine, cvis_hand_stats *out);

// MARK: Fingertip prints

/// A rotated box: centre, size, angle in degrees clockwise on screen, 0 = finger pointing up
/// (the box's height runs along the finger).
typedef struct {
    float cx, cy, width, height, angle;
} cvis_rotated_box;

/// Quality measures of a contact-like print, each 0..1.
typedef struct {
    float focus;      // band-pass (ridge-frequency) energy against all detail: 1 = all detail is ridges
    float contrast;   // ridge contrast (std of the band-passed print / 40 grey levels, capped)
    float coherence;  // mean ridge-orientation coherence of the foreground blocks
    float foreground; // fraction of the output that is finger
} cvis_print_quality;

/// Cuts `box` out of `grey` (frame pixels), rotates it upright (fingertip at the top), scales it by
/// `scale` (output px per frame px), mirrors it left-right (contact sensors give the mirror image of
/// what a camera sees) and makes a contact-like print: shading removed, local contrast normalised,
/// ridges dark, background 255. `out` and `mask` (optional) hold out_width*out_height bytes; the
/// mask is 255 on the finger (the last cvis_hand_find_fingers skin mask, inside the box's central
/// 88 %). Uses the engine's mask: call after cvis_hand_find_fingers on the same frame.
cvis_status cvis_hand_fingertip_print(cvis_hand_engine *engine, cvis_image_view grey, cvis_rotated_box box,
                                      float scale, uint8_t *out, uint8_t *mask, int out_width, int out_height,
                                      cvis_print_quality *quality);

/// The same measures for any grey print at ~500 ppi (with optional mask), e.g. a contact print.
cvis_status cvis_hand_print_quality(const uint8_t *grey, const uint8_t *mask, int width, int height,
                                    cvis_print_quality *quality);

/// Periodic-texture measure (halftone, screen pixel grid) of a frame region: the strongest narrow
/// peak at periods 2–3.3 px (clear of the ridges expected for a finger `box.width` wide) against
/// the mean of that band, in a 64×64 patch of the grey frame itself. ≈ 1–10 for skin; 0 = not
/// measurable (a finger under ~160 px wide has ridges fine enough to put harmonics in the band);
/// -1 on error.
float cvis_hand_region_periodicity(cvis_image_view grey, cvis_rotated_box box, cvis_status *status);

// MARK: Finger sizes

/// Physical finger widths (mm) the print conversion and the synthetic scene renderer
/// (CHandScene) assume, by digit (0 thumb .. 4 little).
float cvis_hand_nominal_width_mm(int digit);

#ifdef __cplusplus
}
#endif
#endif
