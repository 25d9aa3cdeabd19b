// Test support: OpenCV's own image decoding, video reading and Guo-Hall thinning (imgcodecs,
// videoio, ximgproc), which the daemon no longer links. Tests compare CImaging's decoders and
// CFingerVision's thinning with these, pixel for pixel. Never linked by the daemon.
#ifndef CVISION_REFERENCE_H
#define CVISION_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// cv::imdecode(IMREAD_ANYDEPTH | IMREAD_ANYCOLOR), brought to 8 bits and 1 or 3 channels the way
/// CImaging did it before (16-bit scaled by 1/256, BGRA to BGR). Packed pixels the caller frees
/// with cvref_free, or NULL when OpenCV cannot decode the bytes.
uint8_t *cvref_imdecode(const uint8_t *data, size_t length, int *width, int *height, int *channels);

/// cv::VideoCapture (FFmpeg backend) of a file.
typedef struct cvref_video cvref_video;
cvref_video *cvref_video_open(const char *path);
double cvref_video_fps(cvref_video *video);
/// The next frame, packed BGR, freed by the caller with cvref_free; NULL at the end.
uint8_t *cvref_video_next(cvref_video *video, int *width, int *height);
void cvref_video_close(cvref_video *video);

/// cv::ximgproc::thinning(THINNING_GUOHALL) of a packed grey image into `dst`; 0 on success.
int cvref_thinning(const uint8_t *src, int width, int height, uint8_t *dst);

/// cv::imencode with `extension` (".webp", ".tiff", ".bmp", ".ppm", ".png", ...) of packed pixels
/// (`channels` 1, 3 or 4; 16-bit samples when `depth16`): test inputs in formats CImaging does not
/// write. Freed with cvref_free; NULL on failure.
uint8_t *cvref_imencode(const char *extension, const uint8_t *pixels, int width, int height, int channels, int depth16,
                        size_t *length);

void cvref_free(void *pointer);

#ifdef __cplusplus
}
#endif
#endif
