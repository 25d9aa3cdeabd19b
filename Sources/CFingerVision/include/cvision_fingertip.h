// CFingerVision fingertips: where a fingertip's sides and apex are, whether its ridges are
// resolved (ridge period in pixels, ridge area), and the contact-like 500-ppi print scaled by the
// finger's own ridges and unrolled around the finger's axis. Plain C over C++; every entry point
// catches all exceptions (status + cvis_last_error()). Geometry in frame pixels, y down.
#ifndef CVISION_FINGERTIP_H
#define CVISION_FINGERTIP_H

#include "cvision_hand.h" // cvis_print_quality, cvis_image_view

#ifdef __cplusplus
extern "C" {
#endif

/// Where to look: a point at (or near) the fingertip, the finger's distal joint (so base → tip is
/// the finger's direction) and the width expected there (pixels).
typedef struct {
    float tip_x, tip_y;
    float base_x, base_y;
    float width;
} cvis_fingertip_seed;

/// A fingertip as measured in the frame.
typedef struct {
    int found;              // 1: both sides and the apex were found; 0: the rest is the seed's geometry
    float tip_x, tip_y;     // the apex (the fingertip's outline on its axis)
    float dir_x, dir_y;     // unit vector along the finger, base → tip
    float width;            // across the distal phalanx (pixels)
    float length;           // apex → distal joint (pixels)
    float edge_contrast;    // how clearly the sides stand out (median edge / median gradient), ≥ 0
    float ridge_period;     // median ridge period on the pad's surface (pixels), 0 = no ridges found
    float ridge_area;       // share of the pad (|x| ≤ 0.38 width) where ridges were found (0..1)
    float ridge_strength;   // mean share of the spectral energy in the ridge peak of those blocks (0..1)
    float ridge_along;      // share of those blocks whose ridges run within 25° of the finger's axis (0..1)
    float ridge_gridded;    // share of those blocks whose spacing lies within 4° of the frame's rows or columns
    float repeated;         // the factor the frame was blown up by around the pad, repeating pixels (equal
                            // neighbours within k-pixel runs far more often than across them); 1: none
    float centre_level, edge_level; // mean grey across the middle and near the sides (shading, liveness)
    float mean_saturation;  // HSV saturation of the pad's centre, 0..1 (colour frames; 0 for grey)
    float mean_cr;          // YCrCb Cr of the pad's centre (128 = neutral; 0 for grey frames)
} cvis_fingertip;

/// Measures a fingertip around `seed` in `image` (BGR or grey): its sides (the innermost strong
/// edge either side of the axis, row by row), apex, width and axis; then the ridge period by the
/// spectral peak of 32-pixel blocks over the pad (the finger resampled to at most 256 pixels
/// across; each block's spacing corrected for the finger's curvature, a cylinder of the width).
cvis_status cvis_fingertip_measure(cvis_image_view image, cvis_fingertip_seed seed, cvis_fingertip *out);

/// The size of the print cvis_fingertip_print makes for `tip`: its ridges brought to
/// `target_period` pixels (the 500-ppi period of an average adult finger), the pad unrolled over
/// ±`half_angle_deg` around the axis. CVIS_ERR_ARGUMENT when the fingertip has no ridge period or
/// the print would be larger than 1024 on a side.
cvis_status cvis_fingertip_print_size(const cvis_fingertip *tip, float target_period, float half_angle_deg, int *width,
                                      int *height);

/// The contact-like print of `tip` from the grey frame: the distal phalanx seen as a cylinder of
/// the measured width, unrolled around its axis (arc length across, so ridges near the sides are
/// no longer compressed), turned upright (apex at the top), scaled so its ridges have
/// `target_period` pixels, mirrored left-right (contact sensors give the mirror image of what a
/// camera sees), shading removed and contrast normalised; ridges as the camera saw them,
/// background 255. `mask` (optional) is 255 on the finger. `quality` (optional) gets the measures
/// of cvis_hand_print_quality.
cvis_status cvis_fingertip_print(cvis_image_view grey, const cvis_fingertip *tip, float target_period,
                                 float half_angle_deg, uint8_t *out, uint8_t *mask, int out_width, int out_height,
                                 cvis_print_quality *quality);

/// Where a finger held close to the camera may be: the largest bright, skin-coloured or reddish
/// region (Otsu on brightness, on Cr, a YCrCb skin box) that enters the frame from a border, its
/// tip the region's far end from that border, its width the region's median width near the tip.
/// Writes up to `max_seeds` seeds at least `min_width` pixels wide, one per hypothesis that gives
/// a finger-like region (sides roughly parallel below a narrower tip); the caller measures each
/// and keeps the one whose ridges are clearest. Returns the count or -1.
int cvis_fingertip_closeup_seeds(cvis_image_view image, float min_width, cvis_fingertip_seed *out, int max_seeds,
                                 cvis_status *status);

/// The ridge period (pixels) of a grey print or image region measured the same way, over the
/// whole image (mask optional, 255 = use): for calibrating the target period on contact prints.
/// Writes the share of blocks with ridges to `area` (optional). Returns 0 when none were found, -1 on error.
float cvis_ridge_period(const uint8_t *grey, const uint8_t *mask, int width, int height, float *area, cvis_status *status);

/// The ridge period (pixels) of a print, measured finely: 64-pixel tiles (a step of 32) wholly
/// inside `mask` (optional, non-zero = finger), each tile's strongest spectral peak at periods
/// 5–16 px located to a fraction of a bin (zero-padded to 128, a parabola on each axis); the
/// median over the tiles. 0 when fewer than 4 tiles fit, -1 on error. The frame's ridge measure
/// (32-px blocks, whole bins) is coarse and its error depends on the period, so two prints of one
/// finger can come out up to 10–15 % apart in size; this measure puts them right.
float cvis_print_ridge_period(const uint8_t *grey, const uint8_t *mask, int width, int height, cvis_status *status);

/// Resamples a print to out_width × out_height (area averaging when shrinking, cubic otherwise).
cvis_status cvis_print_resample(const uint8_t *grey, int width, int height, uint8_t *out, int out_width,
                                int out_height);

#ifdef __cplusplus
}
#endif
#endif
