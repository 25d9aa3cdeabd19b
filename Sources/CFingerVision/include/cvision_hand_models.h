// CFingerVision hand models: MediaPipe's palm detector and 21-point hand landmark model (ONNX, run
// by OpenCV's dnn), and a per-session hand tracker over them. Plain C over C++; every entry point
// catches all exceptions (status + cvis_last_error()). Geometry is in frame pixels, top-left
// origin, y down.
#ifndef CVISION_HAND_MODELS_H
#define CVISION_HAND_MODELS_H

#include "cvision_imaging.h" // cvis_status, cvis_image_view

#ifdef __cplusplus
extern "C" {
#endif

/// The two networks, loaded once per process and shared by every tracker (each network runs under
/// its own lock, so trackers on several threads take turns on it).
typedef struct cvis_hand_models cvis_hand_models;

/// Loads palm_detection_lite.onnx and hand_landmark_lite_cv46.onnx (both required); checks that
/// each has the inputs and outputs this code reads.
cvis_hand_models *cvis_hand_models_load(const char *palm_onnx, const char *landmark_onnx, cvis_status *status);
void cvis_hand_models_free(cvis_hand_models *models);

/// Landmarks: 0 wrist; 1-4 thumb (CMC, MCP, IP, tip); 5-8 index (MCP, PIP, DIP, tip); 9-12 middle;
/// 13-16 ring; 17-20 little.
#define CVIS_HAND_POINTS 21

/// One hand in one frame.
typedef struct {
    float x[CVIS_HAND_POINTS], y[CVIS_HAND_POINTS]; // frame pixels
    float z[CVIS_HAND_POINTS];                     // relative depth, frame-pixel scale (smaller = nearer)
    float presence;   // the landmark model's hand presence, 0..1
    float handedness; // its raw handedness output, 0..1 (> 0.5: the hand MediaPipe labels "right")
    float palm_score; // the palm detector's score when this frame found the hand anew, else 0
    float roi_cx, roi_cy, roi_size, roi_angle; // the square crop the landmarks were read from (angle: radians)
} cvis_hand_landmarks;

/// A palm found by the detector (for benchmarks and tests): box centre and size, 7 keypoints
/// (0 wrist, 2 middle-finger base), score 0..1.
typedef struct {
    float cx, cy, width, height;
    float kx[7], ky[7];
    float score;
} cvis_palm;

/// Per-session state: the crop to read landmarks from on the next frame and scratch buffers.
/// Not thread-safe; one per capture session.
typedef struct cvis_hand_tracker cvis_hand_tracker;
cvis_hand_tracker *cvis_hand_tracker_create(const cvis_hand_models *models, cvis_status *status);
void cvis_hand_tracker_free(cvis_hand_tracker *tracker);
/// Forgets the track: the next cvis_hand_track runs the palm detector.
void cvis_hand_tracker_reset(cvis_hand_tracker *tracker);

/// One frame (BGR, or grey/IR): landmarks on the crop derived from the previous frame's landmarks
/// (MediaPipe's tracking: the crop turned so the wrist→middle-finger axis points up, 2× the hand;
/// if the hand is not in it, once more on that crop 1.5× as large);
/// when there is no track, or the hand's presence falls under `min_presence`, the palm detector
/// runs on this frame (only if `allow_detect`) and the landmarks are read on its palm crop
/// (turned the same way, 2.6× the palm, shifted half a palm toward the fingers).
/// Returns 1 and fills `out` when a hand is tracked in this frame, 0 when none, -1 on error.
int cvis_hand_track(cvis_hand_tracker *tracker, cvis_image_view image, float min_presence, int allow_detect,
                    cvis_hand_landmarks *out, cvis_status *status);

/// Moves the tracked crop by (dx, dy) frame pixels and scales it by `scale` about its new centre:
/// a hand followed by other means between frames (its fingertips). When the track was lost, the
/// last crop the hand was found in is moved so, and tried on the next frame. No effect before any.
void cvis_hand_tracker_shift(cvis_hand_tracker *tracker, float dx, float dy, float scale);

/// The palm detector alone on a frame: up to `max_palms` palms with score ≥ `min_score`, best
/// first (non-maximum suppression at IoU 0.3, boxes weighted as MediaPipe's). Returns the count or -1.
int cvis_hand_detect_palms(cvis_hand_tracker *tracker, cvis_image_view image, float min_score, cvis_palm *out,
                           int max_palms, cvis_status *status);

#ifdef __cplusplus
}
#endif
#endif
