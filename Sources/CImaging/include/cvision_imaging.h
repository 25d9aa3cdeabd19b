// CImaging: the imaging base of the native vision layer (OpenCV core and imgproc; libpng,
// libjpeg-turbo, libtiff, libwebp for still images; FFmpeg's libraries, loaded at the first video
// opened, for video files), behind a plain C API: status codes and the thread's last error (shared
// by CFaceVision and CFingerVision), camera frame conversion, image and video reading, PNG/JPEG
// encoding. OpenCV's imgcodecs and videoio are not linked: Debian's builds pull GDAL, poppler,
// FFmpeg and GStreamer into every process that links them (Docs/benchmarks.md "Memory").
// Every entry point catches all C++ exceptions; failures return an error code and set a
// thread-local message readable with cvis_last_error().
#ifndef CVISION_IMAGING_H
#define CVISION_IMAGING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CVIS_OK = 0,
    CVIS_ERR_ARGUMENT = 1,   // bad size, stride or pointer
    CVIS_ERR_FORMAT = 2,     // pixel format not supported
    CVIS_ERR_DECODE = 3,     // bytes are not a decodable image
    CVIS_ERR_IO = 4,         // file cannot be opened or read
    CVIS_ERR_END = 5,        // end of a video stream
    CVIS_ERR_INTERNAL = 6,   // an OpenCV exception or out of memory
} cvis_status;

/// Threads OpenCV may use inside one call (cv::setNumThreads). The daemon sets 1: its analysis pool
/// already runs one job per core, and OpenCV's own workers on top of it only oversubscribe the
/// cores (more CPU per frame, longer tails when the machine is busy: Docs/benchmarks.md).
void cvis_set_threads(int threads);

/// Last error message of this thread (valid until the next failing call on the thread). One for
/// all the cvis_ targets (CImaging, CFaceVision, CFingerVision).
const char *cvis_last_error(void);

/// Image: packed 8-bit rows, `channels` 3 (BGR) or 1 (grey/IR), row stride = width*channels.
typedef struct {
    const uint8_t *pixels;
    int width;
    int height;
    int channels;
} cvis_image_view;

/// A model file's bytes, read (or mapped) by the caller: the loaders parse them and keep no pointer
/// into them. `name` (may be NULL) names the file in errors.
typedef struct {
    const uint8_t *data;
    size_t length;
    const char *name;
} cvis_model_bytes;

// MARK: Pixel conversion (camera frames)

/// Pixel formats of camera frames, as V4L2 fourccs.
/// Converts one camera frame into 8-bit grey (always) and BGR (when `bgr` is non-NULL).
/// `grey` must hold width*height bytes, `bgr` width*height*3. `stride` is bytes per source row
/// (0 = packed). For MJPEG, `length` is the compressed size and the decoded size must match.
cvis_status cvis_convert_frame(uint32_t fourcc, const uint8_t *src, size_t length, int width, int height,
                               int stride, uint8_t *grey, uint8_t *bgr);

/// Turns a camera mounted rotated or mirrored upright: one cv::rotate of a width x height plane of
/// `channels` (1 or 3) 8-bit channels into `dst` (height x width for 90/270), then, with `mirror`,
/// a left-right flip in place. `rotate` is 0, 90, 180 or 270 degrees clockwise.
cvis_status cvis_orient_plane(const uint8_t *src, int width, int height, int channels, int rotate, int mirror, uint8_t *dst);

// MARK: Still images and video files

typedef struct cvis_image cvis_image;

/// Decodes PNG, JPEG, TIFF, WebP, PGM/PPM or BMP bytes (any other format is refused). The size is
/// read from the header first and, with `max_pixels` > 0, a larger image is refused before any
/// pixel is allocated. A JPEG's EXIF orientation is applied; alpha is dropped; 16-bit samples are
/// scaled to 8 bits.
cvis_image *cvis_image_decode(const uint8_t *data, size_t length, int64_t max_pixels, cvis_status *status);
/// Reads an image file (the formats of cvis_image_decode).
cvis_image *cvis_image_read(const char *path, int64_t max_pixels, cvis_status *status);
int cvis_image_width(const cvis_image *image);
int cvis_image_height(const cvis_image *image);
/// 1 when the source had one channel (grey / IR), else 3.
int cvis_image_channels(const cvis_image *image);
/// Copies the image out as grey and (when non-NULL) BGR, packed rows.
cvis_status cvis_image_copy(const cvis_image *image, uint8_t *grey, uint8_t *bgr);
void cvis_image_free(cvis_image *image);

/// A video file, decoded with FFmpeg's libraries (libavformat, libavcodec, libswscale), which are
/// loaded into the process at the first call: a process that never opens a video never maps them.
/// Only local files are read. Frames are BGR, as OpenCV's VideoCapture gave them.
typedef struct cvis_video cvis_video;
cvis_video *cvis_video_open(const char *path, cvis_status *status);
/// Frames per second the file declares (0 when unknown).
double cvis_video_fps(const cvis_video *video);
/// Decodes the next frame into the video's own image (valid until the next call).
/// Returns CVIS_ERR_END at end of stream.
cvis_status cvis_video_next(cvis_video *video, const cvis_image **frame);
void cvis_video_close(cvis_video *video);
/// 1 when FFmpeg's libraries are mapped in this process (a video was opened), else 0.
int cvis_video_support_loaded(void);

// MARK: Encoding

/// Encodes packed grey (channels 1) or BGR (channels 3) pixels as PNG. The caller frees *out
/// with cvis_free.
cvis_status cvis_encode_png(const uint8_t *pixels, int width, int height, int channels, uint8_t **out,
                            size_t *out_length);
/// Encodes packed grey (channels 1) or BGR (channels 3) pixels as baseline JPEG (quality 1–100).
/// The caller frees *out with cvis_free.
cvis_status cvis_encode_jpeg(const uint8_t *pixels, int width, int height, int channels, int quality,
                             uint8_t **out, size_t *out_length);
/// Downscales packed grey/BGR pixels to dst_width x dst_height (cv::resize, INTER_AREA) and encodes
/// the result as baseline JPEG in one call: the live preview of face and finger sessions, so the
/// full-size frame is read once and never copied. The caller frees *out with cvis_free.
cvis_status cvis_encode_jpeg_scaled(const uint8_t *pixels, int width, int height, int channels, int dst_width,
                                    int dst_height, int quality, uint8_t **out, size_t *out_length);
void cvis_free(void *pointer);

#ifdef __cplusplus
}
#endif
#endif
