// Still-image codecs behind codecs.hpp: each format through its own Debian library (libpng,
// libjpeg-turbo, libtiff, libwebp), PNM and BMP read here. Decoding matches what OpenCV 4.6's
// imdecode(IMREAD_ANYDEPTH | IMREAD_ANYCOLOR) gave through the same libraries (checked pixel for
// pixel by CodecTests against cv::imdecode on the shared photos and prints).
//
// libpng and libjpeg report fatal errors by longjmp. The functions that call setjmp hold no C++
// object of their own whose state changes after it (the output cv::Mat belongs to the caller and
// the libraries' structs are plain C), so the jump skips no destructor.
#include "codecs.hpp"
#include "cvision_internal.hpp"

#include <algorithm>
#include <csetjmp>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <opencv2/imgproc.hpp>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

namespace {
using cvis::fail;

int64_t be16(const uint8_t *d) { return int64_t(d[0]) << 8 | d[1]; }
int64_t be32(const uint8_t *d) { return be16(d) << 16 | be16(d + 2); }
int64_t le16(const uint8_t *d) { return int64_t(d[1]) << 8 | d[0]; }
int64_t le32(const uint8_t *d) { return le16(d + 2) << 16 | le16(d); }

enum class Format { unknown, png, jpeg, tiff, webp, pnm, bmp };

Format sniff(const uint8_t *d, size_t n) {
    if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return Format::png;
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return Format::jpeg;
    if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0 ||
                   std::memcmp(d, "II+\0", 4) == 0 || std::memcmp(d, "MM\0+", 4) == 0))
        return Format::tiff;
    if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return Format::webp;
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return Format::pnm;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return Format::bmp;
    return Format::unknown;
}

// MARK: PNM header (also read by the decoder)

struct PNMHeader {
    int kind = 0; // 2, 3, 5, 6 (1 and 4, bitmaps, are refused)
    int64_t width = 0, height = 0, maxval = 0;
    size_t data = 0; // offset of the first sample
};

/// Reads "P<k> <width> <height> [<maxval>]" and the one whitespace byte after it.
bool pnm_header(const uint8_t *d, size_t n, PNMHeader &h) {
    if (n < 3 || d[0] != 'P' || d[1] < '1' || d[1] > '6') return false;
    h.kind = d[1] - '0';
    size_t i = 2;
    int64_t v[3] = {0, 0, 1};
    const int fields = (h.kind == 1 || h.kind == 4) ? 2 : 3;
    for (int k = 0; k < fields; ++k) {
        while (i < n && (std::isspace(d[i]) || d[i] == '#')) {
            if (d[i] == '#')
                while (i < n && d[i] != '\n') ++i;
            else
                ++i;
        }
        if (i >= n || !std::isdigit(d[i])) return false;
        v[k] = 0;
        while (i < n && std::isdigit(d[i])) {
            if (v[k] > (int64_t(1) << 40)) return false;
            v[k] = v[k] * 10 + (d[i++] - '0');
        }
    }
    if (i >= n || !std::isspace(d[i])) return false;
    h.width = v[0], h.height = v[1], h.maxval = v[2];
    h.data = i + 1;
    return true;
}

// MARK: BMP header

struct BMPHeader {
    int64_t width = 0, height = 0; // height < 0: rows top-down
    int bits = 0;
    uint32_t compression = 0, colours = 0;
    size_t pixels = 0, palette = 0, palette_entry = 4;
    uint32_t masks[3] = {0, 0, 0};
};

bool bmp_header(const uint8_t *d, size_t n, BMPHeader &h) {
    if (n < 26 || d[0] != 'B' || d[1] != 'M') return false;
    const int64_t info = le32(d + 14);
    h.pixels = size_t(le32(d + 10));
    if (info == 12) { // BITMAPCOREHEADER
        h.width = le16(d + 18), h.height = int16_t(le16(d + 20)), h.bits = int(le16(d + 24));
        h.palette = 26, h.palette_entry = 3;
        return true;
    }
    if (info < 40 || n < 54) return false;
    h.width = int32_t(le32(d + 18)), h.height = int32_t(le32(d + 22));
    h.bits = int(le16(d + 28));
    h.compression = uint32_t(le32(d + 30));
    h.colours = uint32_t(le32(d + 46));
    h.palette = 14 + size_t(info);
    if (h.compression == 3 /* BI_BITFIELDS */) {
        if (info >= 52 && n >= 14 + 52) {
            for (int k = 0; k < 3; ++k) h.masks[k] = uint32_t(le32(d + 54 + 4 * k));
        } else if (n >= 54 + 12) { // masks right after a 40-byte header
            for (int k = 0; k < 3; ++k) h.masks[k] = uint32_t(le32(d + 54 + 4 * k));
            h.palette += 12;
        }
    }
    return true;
}

// MARK: JPEG

struct JPEGError {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr info) {
    auto *e = reinterpret_cast<JPEGError *>(info->err);
    info->err->format_message(info, e->message);
    std::longjmp(e->jump, 1);
}
// Warnings (a corrupt but readable stream) are not errors, as in OpenCV.
void jpeg_quiet(j_common_ptr, int) {}

/// EXIF orientation (1-8) from an APP1 segment, 1 when absent or unreadable.
int exif_orientation(const jpeg_decompress_struct &info) {
    for (jpeg_saved_marker_ptr m = info.marker_list; m; m = m->next) {
        if (m->marker != JPEG_APP0 + 1 || m->data_length < 14 || std::memcmp(m->data, "Exif\0\0", 6) != 0) continue;
        const uint8_t *t = m->data + 6;
        const size_t n = m->data_length - 6;
        const bool le = t[0] == 'I' && t[1] == 'I';
        if (!le && !(t[0] == 'M' && t[1] == 'M')) return 1;
        auto u16 = [&](size_t i) { return le ? le16(t + i) : be16(t + i); };
        auto u32 = [&](size_t i) { return le ? le32(t + i) : be32(t + i); };
        const int64_t ifd = u32(4);
        if (ifd < 8 || size_t(ifd) + 2 > n) return 1;
        const int64_t count = u16(size_t(ifd));
        for (int64_t k = 0; k < count; ++k) {
            const size_t e = size_t(ifd) + 2 + 12 * size_t(k);
            if (e + 12 > n) return 1;
            if (u16(e) == 0x0112 && u16(e + 2) == 3) {
                const int64_t value = u16(e + 8);
                return value >= 1 && value <= 8 ? int(value) : 1;
            }
        }
        return 1;
    }
    return 1;
}

/// The turns of an EXIF orientation, as OpenCV's ApplyExifOrientation does them.
void apply_orientation(cv::Mat &m, int orientation) {
    switch (orientation) {
    case 2: cv::flip(m, m, 1); break;
    case 3: cv::flip(m, m, -1); break;
    case 4: cv::flip(m, m, 0); break;
    case 5: cv::transpose(m, m); break;
    case 6: cv::transpose(m, m); cv::flip(m, m, 1); break;
    case 7: cv::transpose(m, m); cv::flip(m, m, -1); break;
    case 8: cv::transpose(m, m); cv::flip(m, m, 0); break;
    default: break;
    }
}

/// OpenCV's CMYK (Adobe's inverted) to BGR.
void cmyk_to_bgr(const uint8_t *cmyk, uint8_t *bgr, int width) {
    for (int x = 0; x < width; ++x, cmyk += 4, bgr += 3) {
        const int k = cmyk[3];
        bgr[2] = uint8_t(k - ((255 - cmyk[0]) * k >> 8));
        bgr[1] = uint8_t(k - ((255 - cmyk[1]) * k >> 8));
        bgr[0] = uint8_t(k - ((255 - cmyk[2]) * k >> 8));
    }
}

/// Decodes a JPEG into `out` (grey for a one-component file, else BGR; `bgr` forces BGR). When
/// `into` is set the pixels go straight there (packed rows of `into_width` x `into_height`, which
/// the file must have) and `out` is not used. `orientation` receives the EXIF orientation.
cvis_status jpeg_decode(const uint8_t *data, size_t length, bool bgr, int64_t max_pixels, cv::Mat &out, uint8_t *into,
                        int into_width, int into_height, int &orientation) {
    jpeg_decompress_struct info;
    JPEGError error;
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = jpeg_error_exit;
    error.manager.emit_message = jpeg_quiet;
    std::vector<uint8_t> *volatile cmyk_row = nullptr;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        delete cmyk_row;
        return fail(CVIS_ERR_DECODE, std::string("JPEG: ") + error.message);
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, static_cast<unsigned long>(length));
    jpeg_save_markers(&info, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&info, TRUE);
    orientation = exif_orientation(info);
    if (max_pixels > 0 && int64_t(info.image_width) * info.image_height > max_pixels) {
        jpeg_destroy_decompress(&info);
        return fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
    }
    const bool four = info.num_components == 4;
    const bool colour = bgr || info.num_components > 1;
    info.out_color_space = four ? JCS_CMYK : colour ? JCS_EXT_BGR : JCS_GRAYSCALE;
    jpeg_start_decompress(&info);
    const int w = int(info.output_width), h = int(info.output_height);
    uint8_t *base = into;
    size_t step = size_t(w) * (colour ? 3 : 1);
    if (into) {
        if (w != into_width || h != into_height || !colour) {
            jpeg_destroy_decompress(&info);
            return fail(CVIS_ERR_DECODE, "MJPEG frame size differs from the negotiated size");
        }
    } else {
        try {
            out.create(h, w, colour ? CV_8UC3 : CV_8UC1);
        } catch (...) {
            jpeg_destroy_decompress(&info);
            return fail(CVIS_ERR_INTERNAL, "out of memory");
        }
        base = out.data;
        step = out.step;
    }
    if (four) {
        try {
            cmyk_row = new std::vector<uint8_t>(size_t(w) * 4);
        } catch (...) {
            jpeg_destroy_decompress(&info);
            return fail(CVIS_ERR_INTERNAL, "out of memory");
        }
    }
    while (info.output_scanline < info.output_height) {
        uint8_t *row = base + step * info.output_scanline;
        JSAMPROW target = four ? cmyk_row->data() : row;
        if (jpeg_read_scanlines(&info, &target, 1) != 1) break;
        if (four) cmyk_to_bgr(cmyk_row->data(), row, w);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    delete cmyk_row;
    return CVIS_OK;
}

// MARK: PNG

struct PNGSource {
    const uint8_t *data;
    size_t length, position;
    char message[256];
};

void png_read_memory(png_structp png, png_bytep out, png_size_t length) {
    auto *s = static_cast<PNGSource *>(png_get_io_ptr(png));
    if (length > s->length - s->position) png_error(png, "truncated PNG");
    std::memcpy(out, s->data + s->position, length);
    s->position += length;
}
/// libpng's fatal-error handler: the message into the reader's or writer's state (its error
/// pointer), then back to the setjmp of png_decode or encode_png.
template <typename State> void png_fatal(png_structp png, png_const_charp message) {
    auto *s = static_cast<State *>(png_get_error_ptr(png));
    std::snprintf(s->message, sizeof s->message, "%s", message);
    png_longjmp(png, 1);
}
void png_quiet(png_structp, png_const_charp) {}

struct PNGSink {
    std::vector<uint8_t> *out;
    char message[256] = "";
};

void png_write_memory(png_structp png, png_bytep data, png_size_t length) {
    auto *s = static_cast<PNGSink *>(png_get_io_ptr(png));
    try {
        s->out->insert(s->out->end(), data, data + length);
    } catch (...) { // no C++ exception may unwind through libpng's C frames
        png_error(png, "out of memory");
    }
}

cvis_status png_decode(const uint8_t *data, size_t length, cv::Mat &out) {
    PNGSource source{data, length, 0, "PNG error"};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_fatal<PNGSource>, png_quiet);
    if (!png) return fail(CVIS_ERR_INTERNAL, "out of memory");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, nullptr, nullptr);
        return fail(CVIS_ERR_INTERNAL, "out of memory");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, nullptr);
        return fail(CVIS_ERR_DECODE, std::string("PNG: ") + source.message);
    }
    png_set_read_fn(png, &source, png_read_memory);
    png_read_info(png, info);
    const int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    const bool colour = (type & PNG_COLOR_MASK_COLOR) != 0;
    png_set_expand(png);      // palette to RGB, grey under 8 bits to 8, tRNS to alpha
    png_set_strip_alpha(png); // as OpenCV's IMREAD_ANYCOLOR: the colour planes, no compositing
    if (colour) png_set_bgr(png);
    if (depth == 16) png_set_swap(png); // native (little-endian) 16-bit samples
    const int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    const int w = int(png_get_image_width(png, info)), h = int(png_get_image_height(png, info));
    const int channels = png_get_channels(png, info);
    if ((colour ? 3 : 1) != channels) png_error(png, "unexpected channel count");
    try {
        out.create(h, w, CV_MAKETYPE(depth == 16 ? CV_16U : CV_8U, channels));
    } catch (...) {
        png_destroy_read_struct(&png, &info, nullptr);
        return fail(CVIS_ERR_INTERNAL, "out of memory");
    }
    if (png_get_rowbytes(png, info) != size_t(w) * channels * (depth == 16 ? 2 : 1)) png_error(png, "unexpected row size");
    for (int pass = 0; pass < passes; ++pass)
        for (int y = 0; y < h; ++y) png_read_row(png, out.ptr<png_byte>(y), nullptr);
    png_read_end(png, nullptr);
    png_destroy_read_struct(&png, &info, nullptr);
    return CVIS_OK;
}

// MARK: TIFF

struct TIFFSource {
    const uint8_t *data;
    toff_t length, position;
    std::string message;
};

tmsize_t tiff_read(thandle_t h, void *buffer, tmsize_t size) {
    auto *s = static_cast<TIFFSource *>(h);
    if (size <= 0 || s->position >= s->length) return 0;
    const toff_t n = std::min<toff_t>(toff_t(size), s->length - s->position);
    std::memcpy(buffer, s->data + s->position, size_t(n));
    s->position += n;
    return tmsize_t(n);
}
tmsize_t tiff_write(thandle_t, void *, tmsize_t) { return -1; }
toff_t tiff_seek(thandle_t h, toff_t offset, int whence) {
    auto *s = static_cast<TIFFSource *>(h);
    const toff_t base = whence == SEEK_CUR ? s->position : whence == SEEK_END ? s->length : 0;
    if (offset > ~toff_t(0) - base) return toff_t(-1);
    s->position = base + offset;
    return s->position;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TIFFSource *>(h)->length; }
int tiff_map(thandle_t h, void **base, toff_t *size) {
    auto *s = static_cast<TIFFSource *>(h);
    *base = const_cast<uint8_t *>(s->data);
    *size = s->length;
    return 1;
}
void tiff_unmap(thandle_t, void *, toff_t) {}
int tiff_error(TIFF *, void *user, const char *module, const char *format, va_list args) {
    char text[512];
    std::vsnprintf(text, sizeof text, format, args);
    auto *s = static_cast<TIFFSource *>(user);
    if (s->message.empty()) s->message = std::string(module ? module : "TIFF") + ": " + text;
    return 1;
}
int tiff_warning(TIFF *, void *, const char *, const char *, va_list) { return 1; }

cvis_status tiff_decode(const uint8_t *data, size_t length, int64_t max_pixels, cv::Mat &out) {
    TIFFSource source{data, toff_t(length), 0, {}};
    TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
    if (!options) return fail(CVIS_ERR_INTERNAL, "out of memory");
    TIFFOpenOptionsSetErrorHandlerExtR(options, tiff_error, &source);
    TIFFOpenOptionsSetWarningHandlerExtR(options, tiff_warning, &source);
    // No single allocation beyond what the largest allowed image needs (a strip or tile table
    // cannot claim gigabytes from a few bytes of header).
    TIFFOpenOptionsSetMaxSingleMemAlloc(options, tmsize_t(std::max<int64_t>(max_pixels, 64 << 20) * 4 + (1 << 20)));
    TIFF *tif = TIFFClientOpenExt("memory", "rm", &source, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                                  tiff_map, tiff_unmap, options);
    TIFFOpenOptionsFree(options);
    if (!tif) return fail(CVIS_ERR_DECODE, "TIFF: " + (source.message.empty() ? std::string("not readable") : source.message));
    struct Closer {
        TIFF *t;
        ~Closer() { TIFFClose(t); }
    } closer{tif};
    uint32_t w = 0, h = 0;
    uint16_t spp = 1, photometric = PHOTOMETRIC_MINISBLACK;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PHOTOMETRIC, &photometric);
    if (w == 0 || h == 0 || w > 65535 || h > 65535) return fail(CVIS_ERR_DECODE, "TIFF: bad image size");
    if (max_pixels > 0 && int64_t(w) * h > max_pixels) return fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
    uint16_t bits = 8, planar = PLANARCONFIG_CONTIG;
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    const bool grey_like = photometric == PHOTOMETRIC_MINISBLACK && (spp == 1 || spp == 2);
    const bool rgb_like = photometric == PHOTOMETRIC_RGB && (spp == 3 || spp == 4);
    if ((grey_like || rgb_like) && (bits == 8 || bits == 16) && planar == PLANARCONFIG_CONTIG && !TIFFIsTiled(tif)) {
        // The common case (prints, scans, photos) row by row at its own depth: 16-bit samples are
        // scaled to 8 later with rounding, as OpenCV's decoder did.
        const int depth = bits == 16 ? CV_16U : CV_8U;
        cv::Mat row(1, int(w) * spp, CV_MAKETYPE(depth, 1));
        if (size_t(TIFFScanlineSize64(tif)) != row.total() * row.elemSize()) return fail(CVIS_ERR_DECODE, "TIFF: unexpected row size");
        out.create(int(h), int(w), CV_MAKETYPE(depth, grey_like ? 1 : 3));
        for (uint32_t y = 0; y < h; ++y) {
            if (TIFFReadScanline(tif, row.data, y, 0) < 0)
                return fail(CVIS_ERR_DECODE, "TIFF: " + (source.message.empty() ? std::string("cannot be read") : source.message));
            const cv::Mat samples = row.reshape(spp, 1);
            cv::Mat target = out.row(int(y));
            if (grey_like) {
                if (spp == 1) samples.copyTo(target);
                else cv::extractChannel(samples, target, 0);
            } else {
                cv::cvtColor(samples, target, spp == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_RGBA2BGR);
            }
        }
        return CVIS_OK;
    }
    char why[1024] = "";
    if (!TIFFRGBAImageOK(tif, why)) return fail(CVIS_ERR_FORMAT, std::string("TIFF: ") + why);
    cv::Mat rgba(int(h), int(w), CV_8UC4);
    if (!TIFFReadRGBAImageOriented(tif, w, h, rgba.ptr<uint32_t>(), ORIENTATION_TOPLEFT, 0))
        return fail(CVIS_ERR_DECODE, "TIFF: " + (source.message.empty() ? std::string("cannot be read") : source.message));
    // The raster holds R, G, B, A bytes in memory order; grey images repeat the grey level.
    const bool grey = photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE;
    if (grey) cv::extractChannel(rgba, out, 0);
    else cv::cvtColor(rgba, out, cv::COLOR_RGBA2BGR);
    return CVIS_OK;
}

// MARK: WebP

cvis_status webp_decode(const uint8_t *data, size_t length, int64_t max_pixels, cv::Mat &out) {
    int w = 0, h = 0;
    if (!WebPGetInfo(data, length, &w, &h) || w <= 0 || h <= 0) return fail(CVIS_ERR_DECODE, "WebP: header not readable");
    if (max_pixels > 0 && int64_t(w) * h > max_pixels) return fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
    out.create(h, w, CV_8UC3);
    if (!WebPDecodeBGRInto(data, length, out.data, out.step * size_t(h), int(out.step)))
        return fail(CVIS_ERR_DECODE, "WebP: does not decode (animated or corrupt)");
    return CVIS_OK;
}

// MARK: PNM

cvis_status pnm_decode(const uint8_t *data, size_t length, int64_t max_pixels, cv::Mat &out) {
    PNMHeader h;
    if (!pnm_header(data, length, h)) return fail(CVIS_ERR_DECODE, "PNM: header not readable");
    if (h.kind == 1 || h.kind == 4) return fail(CVIS_ERR_FORMAT, "PNM: bitmaps (P1, P4) are not accepted");
    if (h.width <= 0 || h.height <= 0 || h.width > 65535 || h.height > 65535 || h.maxval <= 0 || h.maxval > 65535)
        return fail(CVIS_ERR_DECODE, "PNM: bad size or maximum value");
    if (max_pixels > 0 && h.width * h.height > max_pixels) return fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
    const int channels = (h.kind == 3 || h.kind == 6) ? 3 : 1;
    const bool wide = h.maxval > 255;
    const size_t samples = size_t(h.width) * size_t(h.height) * channels;
    out.create(int(h.height), int(h.width), CV_MAKETYPE(wide ? CV_16U : CV_8U, channels));
    if (h.kind == 5 || h.kind == 6) {
        const size_t bytes = samples * (wide ? 2 : 1);
        if (length - h.data < bytes) return fail(CVIS_ERR_DECODE, "PNM: truncated");
        const uint8_t *p = data + h.data;
        for (int y = 0; y < out.rows; ++y) {
            const size_t row = size_t(out.cols) * channels;
            if (wide) {
                uint16_t *o = out.ptr<uint16_t>(y);
                for (size_t k = 0; k < row; ++k, p += 2) o[k] = uint16_t(be16(p));
            } else {
                std::memcpy(out.ptr(y), p, row);
                p += row;
            }
        }
    } else {
        size_t i = h.data;
        for (int y = 0; y < out.rows; ++y)
            for (int k = 0; k < out.cols * channels; ++k) {
                while (i < length && std::isspace(data[i])) ++i;
                if (i >= length || !std::isdigit(data[i])) return fail(CVIS_ERR_DECODE, "PNM: truncated");
                int64_t v = 0;
                while (i < length && std::isdigit(data[i]) && v <= 65535) v = v * 10 + (data[i++] - '0');
                if (v > h.maxval) return fail(CVIS_ERR_DECODE, "PNM: sample above the maximum value");
                if (wide) out.ptr<uint16_t>(y)[k] = uint16_t(v);
                else out.ptr<uint8_t>(y)[k] = uint8_t(v);
            }
    }
    if (channels == 3) cv::cvtColor(out, out, cv::COLOR_RGB2BGR);
    return CVIS_OK;
}

// MARK: BMP

cvis_status bmp_decode(const uint8_t *data, size_t length, int64_t max_pixels, cv::Mat &out) {
    BMPHeader h;
    if (!bmp_header(data, length, h)) return fail(CVIS_ERR_DECODE, "BMP: header not readable");
    const int64_t w = h.width, rows = h.height < 0 ? -h.height : h.height;
    if (w <= 0 || rows <= 0 || w > 65535 || rows > 65535) return fail(CVIS_ERR_DECODE, "BMP: bad size");
    if (max_pixels > 0 && w * rows > max_pixels) return fail(CVIS_ERR_ARGUMENT, "image is larger than allowed");
    const bool plain = h.compression == 0;
    const bool fields = h.compression == 3 && h.bits == 32 && h.masks[0] == 0x00FF0000 && h.masks[1] == 0x0000FF00 &&
                        h.masks[2] == 0x000000FF;
    if (!((plain && (h.bits == 8 || h.bits == 24 || h.bits == 32)) || fields))
        return fail(CVIS_ERR_FORMAT, "BMP: only uncompressed 8, 24 and 32-bit images are accepted");
    const size_t stride = (size_t(w) * h.bits / 8 + 3) & ~size_t(3);
    if (h.pixels > length || length - h.pixels < stride * size_t(rows)) return fail(CVIS_ERR_DECODE, "BMP: truncated");
    const uint8_t *pixels = data + h.pixels;
    auto source_row = [&](int64_t y) { return pixels + stride * size_t(h.height < 0 ? y : rows - 1 - y); };
    if (h.bits == 8) {
        const size_t entries = h.colours ? std::min<size_t>(h.colours, 256) : 256;
        if (h.palette > length || (length - h.palette) / h.palette_entry < entries)
            return fail(CVIS_ERR_DECODE, "BMP: truncated palette");
        const uint8_t *pal = data + h.palette;
        bool grey = true;
        for (size_t k = 0; k < entries; ++k) {
            const uint8_t *e = pal + k * h.palette_entry;
            grey = grey && e[0] == e[1] && e[1] == e[2];
        }
        out.create(int(rows), int(w), grey ? CV_8UC1 : CV_8UC3);
        for (int64_t y = 0; y < rows; ++y) {
            const uint8_t *s = source_row(y);
            uint8_t *o = out.ptr<uint8_t>(int(y));
            for (int64_t x = 0; x < w; ++x) {
                const size_t k = std::min<size_t>(s[x], entries - 1);
                const uint8_t *e = pal + k * h.palette_entry;
                if (grey) o[x] = e[0];
                else std::memcpy(o + 3 * x, e, 3);
            }
        }
        return CVIS_OK;
    }
    out.create(int(rows), int(w), CV_8UC3);
    const int step = h.bits / 8;
    for (int64_t y = 0; y < rows; ++y) {
        const uint8_t *s = source_row(y);
        uint8_t *o = out.ptr<uint8_t>(int(y));
        for (int64_t x = 0; x < w; ++x) std::memcpy(o + 3 * x, s + step * x, 3);
    }
    return CVIS_OK;
}

// MARK: Encoding

/// Compressed bytes straight into the caller's vector (grown by doubling). A failed allocation
/// becomes a libjpeg error (a longjmp back to the encoder), never an exception through C frames.
struct JPEGDestination {
    jpeg_destination_mgr manager;
    std::vector<uint8_t> *out;
};

bool resize_to(std::vector<uint8_t> &v, size_t n) {
    try {
        v.resize(n);
        return true;
    } catch (...) {
        return false;
    }
}
void jpeg_destination_start(j_compress_ptr info) {
    auto *d = reinterpret_cast<JPEGDestination *>(info->dest);
    if (!resize_to(*d->out, 1 << 16)) ERREXIT1(info, JERR_OUT_OF_MEMORY, 0);
    d->manager.next_output_byte = d->out->data();
    d->manager.free_in_buffer = d->out->size();
}
boolean jpeg_destination_grow(j_compress_ptr info) {
    auto *d = reinterpret_cast<JPEGDestination *>(info->dest);
    const size_t used = d->out->size();
    if (!resize_to(*d->out, used * 2)) ERREXIT1(info, JERR_OUT_OF_MEMORY, 0);
    d->manager.next_output_byte = d->out->data() + used;
    d->manager.free_in_buffer = d->out->size() - used;
    return TRUE;
}
void jpeg_destination_end(j_compress_ptr info) {
    auto *d = reinterpret_cast<JPEGDestination *>(info->dest);
    d->out->resize(d->out->size() - d->manager.free_in_buffer);
}

} // namespace

namespace cvis {

bool image_header_size(const uint8_t *d, size_t n, int64_t &w, int64_t &h) {
    switch (sniff(d, n)) {
    case Format::png:
        if (n < 24) return false;
        w = be32(d + 16), h = be32(d + 20);
        return true;
    case Format::jpeg: { // walk the markers to the first SOFn
        size_t i = 2;
        while (i + 9 < n) {
            if (d[i] != 0xFF) return false;
            const uint8_t m = d[i + 1];
            if (m == 0xFF) {
                ++i;
                continue;
            }
            if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
                h = be16(d + i + 5), w = be16(d + i + 7);
                return true;
            }
            i += 2 + size_t(be16(d + i + 2));
        }
        return false;
    }
    case Format::tiff: { // the first IFD of a classic TIFF
        if (n < 8 || d[2] == 43 || d[3] == 43) return false;
        const bool le = d[0] == 'I';
        auto u16 = [&](size_t i) { return le ? le16(d + i) : be16(d + i); };
        auto u32 = [&](size_t i) { return le ? le32(d + i) : be32(d + i); };
        const size_t ifd = size_t(u32(4));
        if (ifd + 2 > n) return false;
        const int64_t count = u16(ifd);
        int got = 0;
        for (int64_t k = 0; k < count && ifd + 2 + 12 * size_t(k + 1) <= n; ++k) {
            const size_t e = ifd + 2 + 12 * size_t(k);
            const int64_t tag = u16(e), type = u16(e + 2);
            const int64_t value = type == 3 ? u16(e + 8) : u32(e + 8);
            if (tag == 256) w = value, got |= 1;
            if (tag == 257) h = value, got |= 2;
        }
        return got == 3;
    }
    case Format::webp: {
        int iw = 0, ih = 0;
        if (!WebPGetInfo(d, n, &iw, &ih)) return false;
        w = iw, h = ih;
        return true;
    }
    case Format::pnm: {
        PNMHeader p;
        if (!pnm_header(d, n, p)) return false;
        w = p.width, h = p.height;
        return true;
    }
    case Format::bmp: {
        BMPHeader b;
        if (!bmp_header(d, n, b)) return false;
        w = b.width < 0 ? -b.width : b.width, h = b.height < 0 ? -b.height : b.height;
        return true;
    }
    case Format::unknown: return false;
    }
    return false;
}

cvis_status decode_image(const uint8_t *data, size_t length, int64_t max_pixels, cv::Mat &out) {
    const Format format = sniff(data, length);
    if (format == Format::unknown)
        return fail(CVIS_ERR_FORMAT, "image format not accepted (accepted: PNG, JPEG, TIFF, WebP, PGM/PPM, BMP)");
    int64_t w = 0, h = 0;
    if (max_pixels > 0) {
        if (!image_header_size(data, length, w, h)) return fail(CVIS_ERR_DECODE, "image header unreadable");
        if (w <= 0 || h <= 0 || w * h > max_pixels)
            return fail(CVIS_ERR_ARGUMENT, "image is " + std::to_string(w) + "x" + std::to_string(h) +
                                               ", larger than allowed (" + std::to_string(max_pixels) + " pixels)");
    }
    switch (format) {
    case Format::jpeg: {
        int orientation = 1;
        const cvis_status st = jpeg_decode(data, length, false, max_pixels, out, nullptr, 0, 0, orientation);
        if (st == CVIS_OK) apply_orientation(out, orientation);
        return st;
    }
    case Format::png: return png_decode(data, length, out);
    case Format::tiff: return tiff_decode(data, length, max_pixels, out);
    case Format::webp: return webp_decode(data, length, max_pixels, out);
    case Format::pnm: return pnm_decode(data, length, max_pixels, out);
    case Format::bmp: return bmp_decode(data, length, max_pixels, out);
    case Format::unknown: break;
    }
    return fail(CVIS_ERR_FORMAT, "image format not accepted");
}

cvis_status decode_jpeg_frame(const uint8_t *data, size_t length, int width, int height, uint8_t *bgr) {
    if (sniff(data, length) != Format::jpeg) return fail(CVIS_ERR_DECODE, "MJPEG frame is not a JPEG");
    cv::Mat unused;
    int orientation = 1;
    return jpeg_decode(data, length, true, 0, unused, bgr, width, height, orientation);
}

cvis_status encode_png(const cv::Mat &image, std::vector<uint8_t> &out) {
    if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3) || !image.isContinuous())
        return fail(CVIS_ERR_ARGUMENT, "PNG: 8-bit grey or BGR, packed rows");
    // The full write API, not png_image_write_to_memory: that one deflates the image twice (once to
    // size the buffer) at zlib's default level 6, which made encoding a 1280x720 frame cost more
    // than everything else done with it. Level 1 (Z_BEST_SPEED, with libpng's adaptive row
    // filters) is the level OpenCV's imwrite uses by default; the pixels read back are the same.
    PNGSink sink;
    sink.out = &out;
    out.clear();
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, png_fatal<PNGSink>, png_quiet);
    if (!png) return fail(CVIS_ERR_INTERNAL, "PNG: cannot create the writer");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, nullptr);
        return fail(CVIS_ERR_INTERNAL, "PNG: cannot create the writer");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        out.clear();
        return fail(CVIS_ERR_INTERNAL, std::string("PNG: ") + sink.message);
    }
    png_set_write_fn(png, &sink, png_write_memory, nullptr);
    png_set_compression_level(png, 1);
    const bool colour = image.channels() == 3;
    png_set_IHDR(png, info, png_uint_32(image.cols), png_uint_32(image.rows), 8,
                 colour ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    if (colour) png_set_bgr(png);
    for (int y = 0; y < image.rows; ++y) png_write_row(png, image.ptr<png_byte>(y));
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return CVIS_OK;
}

cvis_status encode_jpeg(const cv::Mat &image, int quality, std::vector<uint8_t> &out) {
    if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3))
        return fail(CVIS_ERR_ARGUMENT, "JPEG: 8-bit grey or BGR");
    jpeg_compress_struct info;
    JPEGError error;
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = jpeg_error_exit;
    error.manager.emit_message = jpeg_quiet;
    JPEGDestination destination;
    destination.out = &out;
    destination.manager.init_destination = jpeg_destination_start;
    destination.manager.empty_output_buffer = jpeg_destination_grow;
    destination.manager.term_destination = jpeg_destination_end;
    if (setjmp(error.jump)) {
        jpeg_destroy_compress(&info);
        out.clear();
        return fail(CVIS_ERR_INTERNAL, std::string("JPEG: ") + error.message);
    }
    jpeg_create_compress(&info);
    info.dest = &destination.manager;
    info.image_width = JDIMENSION(image.cols);
    info.image_height = JDIMENSION(image.rows);
    info.input_components = image.channels();
    info.in_color_space = image.channels() == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, std::clamp(quality, 1, 100), TRUE);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = const_cast<uint8_t *>(image.ptr<uint8_t>(int(info.next_scanline)));
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    return CVIS_OK;
}

} // namespace cvis
