// Video files for replay cameras, decoded with FFmpeg's libraries loaded at the first video opened
// (dlopen), so that a daemon that never replays a video never maps libavcodec and the ~100 codec
// libraries it pulls in. OpenCV's videoio would link them (and GStreamer, libdc1394, libgphoto2,
// and imgcodecs' GDAL) into every process: Docs/benchmarks.md "Memory".
//
// Frames are what OpenCV 4.6's cv::VideoCapture (FFmpeg backend) gave: decoded, converted to BGR24
// by swscale with SWS_BICUBIC into a 32-byte aligned frame of the coded size, turned by the
// stream's display matrix; the declared frame rate is avg_frame_rate (else r_frame_rate).
// CodecTests compares the shared clips frame by frame with cv::VideoCapture.
//
// The headers are those of the Debian libraries the daemon depends on; the loader checks that the
// libraries' major versions are the headers' (the structures read here are laid out per major).
#include "cvision_imaging.h"
#include "cvision_internal.hpp"
#include "imaging_internal.hpp"

#include <cmath>
#include <memory>
#include <mutex>
#include <string>

#include <dlfcn.h>

#include <opencv2/core.hpp>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libswscale/swscale.h>
}

namespace {
using cvis::fail;

#define CVIS_STR2(x) #x
#define CVIS_STR(x) CVIS_STR2(x)

/// The FFmpeg functions used here, from the libraries loaded once per process.
struct FFmpeg {
    std::string error; // empty once loaded
    decltype(&::avformat_open_input) open_input = nullptr;
    decltype(&::avformat_find_stream_info) find_stream_info = nullptr;
    decltype(&::av_find_best_stream) find_best_stream = nullptr;
    decltype(&::av_read_frame) read_frame = nullptr;
    decltype(&::avformat_close_input) close_input = nullptr;
    decltype(&::av_stream_get_side_data) stream_side_data = nullptr;
    decltype(&::avformat_version) format_version = nullptr;
    decltype(&::avcodec_alloc_context3) alloc_context = nullptr;
    decltype(&::avcodec_parameters_to_context) parameters_to_context = nullptr;
    decltype(&::avcodec_open2) codec_open = nullptr;
    decltype(&::avcodec_send_packet) send_packet = nullptr;
    decltype(&::avcodec_receive_frame) receive_frame = nullptr;
    decltype(&::avcodec_free_context) free_context = nullptr;
    decltype(&::av_packet_alloc) packet_alloc = nullptr;
    decltype(&::av_packet_free) packet_free = nullptr;
    decltype(&::av_packet_unref) packet_unref = nullptr;
    decltype(&::avcodec_version) codec_version = nullptr;
    decltype(&::av_frame_alloc) frame_alloc = nullptr;
    decltype(&::av_frame_free) frame_free = nullptr;
    decltype(&::av_frame_unref) frame_unref = nullptr;
    decltype(&::av_frame_get_buffer) frame_get_buffer = nullptr;
    decltype(&::av_log_set_level) log_set_level = nullptr;
    decltype(&::av_display_rotation_get) rotation_get = nullptr;
    decltype(&::av_dict_set) dict_set = nullptr;
    decltype(&::av_dict_free) dict_free = nullptr;
    decltype(&::av_strerror) strerror = nullptr;
    decltype(&::avutil_version) util_version = nullptr;
    decltype(&::sws_getCachedContext) sws_context = nullptr;
    decltype(&::sws_scale) sws_scale = nullptr;
    decltype(&::sws_freeContext) sws_free = nullptr;
    decltype(&::swscale_version) sws_version = nullptr;
};

template <typename F> bool bind(void *library, const char *name, F &slot, std::string &error) {
    slot = reinterpret_cast<F>(dlsym(library, name));
    if (!slot) error = std::string("video support: ") + name + " not found in FFmpeg's libraries";
    return slot != nullptr;
}

FFmpeg load_ffmpeg() {
    FFmpeg f;
    const std::string names[4] = {
        "libavutil.so." CVIS_STR(LIBAVUTIL_VERSION_MAJOR), "libswscale.so." CVIS_STR(LIBSWSCALE_VERSION_MAJOR),
        "libavcodec.so." CVIS_STR(LIBAVCODEC_VERSION_MAJOR), "libavformat.so." CVIS_STR(LIBAVFORMAT_VERSION_MAJOR)};
    void *lib[4];
    for (int i = 0; i < 4; ++i) {
        lib[i] = dlopen(names[i].c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib[i]) {
            const char *why = dlerror();
            f.error = "video support needs FFmpeg's " + names[i] + " (Debian: " +
                      (i == 0 ? "libavutil57" : i == 1 ? "libswscale6" : i == 2 ? "libavcodec59" : "libavformat59") +
                      "): " + (why ? why : "not found");
            return f;
        }
    }
    std::string &e = f.error;
    void *util = lib[0], *sws = lib[1], *codec = lib[2], *format = lib[3];
    const bool ok =
        bind(format, "avformat_open_input", f.open_input, e) && bind(format, "avformat_find_stream_info", f.find_stream_info, e) &&
        bind(format, "av_find_best_stream", f.find_best_stream, e) && bind(format, "av_read_frame", f.read_frame, e) &&
        bind(format, "avformat_close_input", f.close_input, e) && bind(format, "av_stream_get_side_data", f.stream_side_data, e) &&
        bind(format, "avformat_version", f.format_version, e) && bind(codec, "avcodec_alloc_context3", f.alloc_context, e) &&
        bind(codec, "avcodec_parameters_to_context", f.parameters_to_context, e) && bind(codec, "avcodec_open2", f.codec_open, e) &&
        bind(codec, "avcodec_send_packet", f.send_packet, e) && bind(codec, "avcodec_receive_frame", f.receive_frame, e) &&
        bind(codec, "avcodec_free_context", f.free_context, e) && bind(codec, "av_packet_alloc", f.packet_alloc, e) &&
        bind(codec, "av_packet_free", f.packet_free, e) && bind(codec, "av_packet_unref", f.packet_unref, e) &&
        bind(codec, "avcodec_version", f.codec_version, e) && bind(util, "av_frame_alloc", f.frame_alloc, e) &&
        bind(util, "av_frame_free", f.frame_free, e) && bind(util, "av_frame_unref", f.frame_unref, e) &&
        bind(util, "av_frame_get_buffer", f.frame_get_buffer, e) && bind(util, "av_log_set_level", f.log_set_level, e) &&
        bind(util, "av_display_rotation_get", f.rotation_get, e) && bind(util, "av_dict_set", f.dict_set, e) &&
        bind(util, "av_dict_free", f.dict_free, e) && bind(util, "av_strerror", f.strerror, e) &&
        bind(util, "avutil_version", f.util_version, e) && bind(sws, "sws_getCachedContext", f.sws_context, e) &&
        bind(sws, "sws_scale", f.sws_scale, e) && bind(sws, "sws_freeContext", f.sws_free, e) &&
        bind(sws, "swscale_version", f.sws_version, e);
    if (!ok) return f;
    // The structures read here (AVFormatContext, AVStream, AVCodecContext, AVFrame, AVPacket) are
    // laid out per major version: refuse libraries other than the headers'.
    if (f.format_version() >> 16 != LIBAVFORMAT_VERSION_MAJOR || f.codec_version() >> 16 != LIBAVCODEC_VERSION_MAJOR ||
        f.util_version() >> 16 != LIBAVUTIL_VERSION_MAJOR || f.sws_version() >> 16 != LIBSWSCALE_VERSION_MAJOR) {
        e = "video support: FFmpeg's libraries are not the version biometricd was built with";
        return f;
    }
    f.log_set_level(AV_LOG_QUIET); // a daemon: errors are reported through cvis_last_error()
    return f;
}

/// The libraries, loaded at the first call (thread-safe); `error` is set when they are missing.
const FFmpeg &ffmpeg() {
    static const FFmpeg loaded = load_ffmpeg();
    return loaded;
}

std::string av_error(const FFmpeg &f, int code) {
    char text[256] = "";
    f.strerror(code, text, sizeof text);
    return text;
}
} // namespace

struct cvis_video {
    const FFmpeg &f;
    AVFormatContext *format = nullptr;
    AVCodecContext *codec = nullptr;
    AVPacket *packet = nullptr;
    AVFrame *decoded = nullptr;
    AVFrame *bgr = nullptr;
    SwsContext *sws = nullptr;
    int stream = -1;
    int rotation = 0; // degrees clockwise to turn each frame upright (OpenCV's CAP_PROP_ORIENTATION_META)
    bool draining = false;
    double fps = 0;
    cvis_image frame;
    cv::Mat turned;

    explicit cvis_video(const FFmpeg &api) : f(api) {}
    ~cvis_video() {
        if (sws) f.sws_free(sws);
        if (bgr) f.frame_free(&bgr);
        if (decoded) f.frame_free(&decoded);
        if (packet) f.packet_free(&packet);
        if (codec) f.free_context(&codec);
        if (format) f.close_input(&format);
    }

    cvis_status open(const char *path) {
        AVDictionary *options = nullptr;
        f.dict_set(&options, "protocol_whitelist", "file", 0); // a replay camera reads local files only
        int rc = f.open_input(&format, path, nullptr, &options);
        f.dict_free(&options);
        if (rc < 0) return fail(CVIS_ERR_IO, std::string(path) + " cannot be opened as a video: " + av_error(f, rc));
        if ((rc = f.find_stream_info(format, nullptr)) < 0)
            return fail(CVIS_ERR_IO, std::string(path) + ": " + av_error(f, rc));
        const AVCodec *decoder = nullptr;
        stream = f.find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
        if (stream < 0 || !decoder) return fail(CVIS_ERR_IO, std::string(path) + " has no video stream this build decodes");
        AVStream *st = format->streams[stream];
        if (!(codec = f.alloc_context(decoder))) return fail(CVIS_ERR_INTERNAL, "out of memory");
        if ((rc = f.parameters_to_context(codec, st->codecpar)) < 0) return fail(CVIS_ERR_IO, av_error(f, rc));
        codec->thread_count = 1; // one replay frame at a time: no frame threads, no extra frames held
        if ((rc = f.codec_open(codec, decoder, nullptr)) < 0)
            return fail(CVIS_ERR_IO, std::string(path) + ": decoder does not open: " + av_error(f, rc));
        if (!(packet = f.packet_alloc()) || !(decoded = f.frame_alloc()) || !(bgr = f.frame_alloc()))
            return fail(CVIS_ERR_INTERNAL, "out of memory");
        auto rate = [](AVRational r) { return r.den > 0 && r.num > 0 ? double(r.num) / r.den : 0.0; };
        fps = rate(st->avg_frame_rate);
        if (fps <= 0) fps = rate(st->r_frame_rate);
        if (const uint8_t *matrix = f.stream_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, nullptr)) {
            int angle = -int(std::lround(f.rotation_get(reinterpret_cast<const int32_t *>(matrix))));
            rotation = ((angle % 360) + 360) % 360;
        }
        return CVIS_OK;
    }

    /// Decodes the next frame into `decoded`: CVIS_OK, CVIS_ERR_END, or an error.
    cvis_status decode_next() {
        while (true) {
            int rc = f.receive_frame(codec, decoded);
            if (rc == 0) return CVIS_OK;
            if (rc == AVERROR_EOF) return fail(CVIS_ERR_END, "end of video");
            if (rc != AVERROR(EAGAIN)) return fail(CVIS_ERR_IO, "video does not decode: " + av_error(f, rc));
            if (draining) return fail(CVIS_ERR_END, "end of video");
            rc = f.read_frame(format, packet);
            if (rc < 0) {
                // End of file (or an unreadable tail): drain the frames the decoder still holds.
                draining = true;
                f.send_packet(codec, nullptr);
                continue;
            }
            if (packet->stream_index == stream) {
                rc = f.send_packet(codec, packet);
                f.packet_unref(packet);
                if (rc < 0 && rc != AVERROR(EAGAIN)) return fail(CVIS_ERR_IO, "video does not decode: " + av_error(f, rc));
            } else {
                f.packet_unref(packet);
            }
        }
    }

    cvis_status next(const cvis_image **out) {
        const cvis_status st = decode_next();
        if (st != CVIS_OK) return st;
        const int w = decoded->width, h = decoded->height;
        if (w <= 0 || h <= 0 || w > 16384 || h > 16384) return fail(CVIS_ERR_DECODE, "video frame has a bad size");
        // As OpenCV: the coded size (a multiple of the macroblock) into a 32-byte aligned BGR frame.
        const int cw = codec->coded_width >= w ? codec->coded_width : w;
        const int ch = codec->coded_height >= h ? codec->coded_height : h;
        if (bgr->width != cw || bgr->height != ch || !bgr->data[0]) {
            f.frame_unref(bgr);
            bgr->format = AV_PIX_FMT_BGR24;
            bgr->width = cw;
            bgr->height = ch;
            if (f.frame_get_buffer(bgr, 32) < 0) return fail(CVIS_ERR_INTERNAL, "out of memory");
        }
        sws = f.sws_context(sws, cw, ch, AVPixelFormat(decoded->format), cw, ch, AV_PIX_FMT_BGR24, SWS_BICUBIC, nullptr,
                            nullptr, nullptr);
        if (!sws) return fail(CVIS_ERR_FORMAT, "video pixel format cannot be converted");
        f.sws_scale(sws, decoded->data, decoded->linesize, 0, ch, bgr->data, bgr->linesize);
        const cv::Mat view(h, w, CV_8UC3, bgr->data[0], size_t(bgr->linesize[0]));
        switch (rotation) {
        case 90: cv::rotate(view, turned, cv::ROTATE_90_CLOCKWISE); frame.mat = turned; break;
        case 180: cv::rotate(view, turned, cv::ROTATE_180); frame.mat = turned; break;
        case 270: cv::rotate(view, turned, cv::ROTATE_90_COUNTERCLOCKWISE); frame.mat = turned; break;
        default: frame.mat = view; break;
        }
        *out = &frame;
        return CVIS_OK;
    }
};

extern "C" {

cvis_video *cvis_video_open(const char *path, cvis_status *status) {
    cvis_status ignored;
    if (!status) status = &ignored;
    cvis_video *result = nullptr;
    *status = cvis::guarded([&]() -> cvis_status {
        if (!path) return fail(CVIS_ERR_ARGUMENT, "no path");
        const FFmpeg &f = ffmpeg();
        if (!f.error.empty()) return fail(CVIS_ERR_IO, f.error);
        auto video = std::make_unique<cvis_video>(f);
        const cvis_status st = video->open(path);
        if (st != CVIS_OK) return st;
        result = video.release();
        return CVIS_OK;
    });
    return result;
}

double cvis_video_fps(const cvis_video *video) {
    if (!video) return 0;
    return video->fps > 0 && video->fps < 1000 ? video->fps : 0;
}

cvis_status cvis_video_next(cvis_video *video, const cvis_image **frame) {
    if (!video || !frame) return fail(CVIS_ERR_ARGUMENT, "no video");
    return cvis::guarded([&]() { return video->next(frame); });
}

void cvis_video_close(cvis_video *video) {
    try {
        delete video;
    } catch (...) {
    }
}

int cvis_video_support_loaded(void) {
    // Whether FFmpeg's libraries are mapped in this process (for the memory benchmark and tests);
    // RTLD_NOLOAD only looks, it never loads.
    void *lib = dlopen("libavcodec.so." CVIS_STR(LIBAVCODEC_VERSION_MAJOR), RTLD_NOW | RTLD_NOLOAD);
    if (lib) dlclose(lib);
    return lib != nullptr;
}

} // extern "C"
