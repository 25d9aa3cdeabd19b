// Behind thinning.hpp.
#include "thinning.hpp"
#include "cvision_internal.hpp"
#include "cvision_thinning.h"

#include <array>
#include <cstdint>

namespace {

/// Whether the centre pixel is deleted in subiteration `iter` for each of the 256 neighbourhoods
/// (bit 0: p9, 1: p2, 2: p3, 3: p4, 4: p5, 5: p6, 6: p7, 7: p8, with
///   p9 p2 p3
///   p8 p1 p4
///   p7 p6 p5), from Guo and Hall's conditions.
std::array<uint8_t, 256> deletion_table(int iter) {
    std::array<uint8_t, 256> table{};
    for (int n = 0; n < 256; ++n) {
        const int p9 = n & 1, p2 = (n >> 1) & 1, p3 = (n >> 2) & 1, p4 = (n >> 3) & 1;
        const int p5 = (n >> 4) & 1, p6 = (n >> 5) & 1, p7 = (n >> 6) & 1, p8 = (n >> 7) & 1;
        const int c = ((!p2) & (p3 | p4)) + ((!p4) & (p5 | p6)) + ((!p6) & (p7 | p8)) + ((!p8) & (p9 | p2));
        const int n1 = (p9 | p2) + (p3 | p4) + (p5 | p6) + (p7 | p8);
        const int n2 = (p2 | p3) + (p4 | p5) + (p6 | p7) + (p8 | p9);
        const int nn = n1 < n2 ? n1 : n2;
        const int m = iter == 0 ? ((p6 | p7 | (!p9)) & p8) : ((p2 | p3 | (!p5)) & p4);
        table[size_t(n)] = c == 1 && nn >= 2 && nn <= 3 && m == 0;
    }
    return table;
}

/// One subiteration: every set pixel whose neighbourhood (as it was before this pass) is in the
/// table is cleared. Returns whether anything changed.
bool subiteration(cv::Mat &img, cv::Mat &marker, const std::array<uint8_t, 256> &table) {
    const int rows = img.rows, cols = img.cols;
    marker.setTo(0);
    bool changed = false;
    for (int i = 1; i < rows - 1; ++i) {
        const uint8_t *up = img.ptr<uint8_t>(i - 1), *row = img.ptr<uint8_t>(i), *down = img.ptr<uint8_t>(i + 1);
        uint8_t *mark = marker.ptr<uint8_t>(i);
        for (int j = 1; j < cols - 1; ++j) {
            if (!row[j]) continue;
            const int n = up[j - 1] | (up[j] << 1) | (up[j + 1] << 2) | (row[j + 1] << 3) | (down[j + 1] << 4) |
                          (down[j] << 5) | (down[j - 1] << 6) | (row[j - 1] << 7);
            if (table[size_t(n)]) {
                mark[j] = 1;
                changed = true;
            }
        }
    }
    if (changed)
        for (int i = 1; i < rows - 1; ++i) {
            uint8_t *row = img.ptr<uint8_t>(i);
            const uint8_t *mark = marker.ptr<uint8_t>(i);
            for (int j = 1; j < cols - 1; ++j) row[j] &= uint8_t(!mark[j]);
        }
    return changed;
}

} // namespace

namespace cvis {

void thinning_guo_hall(const cv::Mat &input, cv::Mat &output) {
    CV_Assert(input.type() == CV_8UC1);
    static const std::array<uint8_t, 256> first = deletion_table(0), second = deletion_table(1);
    cv::Mat img(input.size(), CV_8UC1);
    for (int i = 0; i < input.rows; ++i) {
        const uint8_t *s = input.ptr<uint8_t>(i);
        uint8_t *d = img.ptr<uint8_t>(i);
        for (int j = 0; j < input.cols; ++j) d[j] = s[j] >= 128; // OpenCV's `/= 255`, rounded
    }
    cv::Mat marker(input.size(), CV_8UC1);
    if (img.rows >= 3 && img.cols >= 3) {
        // Until a whole iteration (both subiterations) changes nothing.
        while (true) {
            const bool a = subiteration(img, marker, first);
            const bool b = subiteration(img, marker, second);
            if (!a && !b) break;
        }
    }
    output = img * 255;
}

} // namespace cvis

extern "C" cvis_status cvis_thinning(const uint8_t *src, int width, int height, uint8_t *dst) {
    if (!src || !dst || width <= 0 || height <= 0 || width > 16384 || height > 16384)
        return cvis::fail(CVIS_ERR_ARGUMENT, "bad image for thinning");
    return cvis::guarded([&]() -> cvis_status {
        cv::Mat out;
        cvis::thinning_guo_hall(cv::Mat(height, width, CV_8UC1, const_cast<uint8_t *>(src)), out);
        out.copyTo(cv::Mat(height, width, CV_8UC1, dst));
        return CVIS_OK;
    });
}
