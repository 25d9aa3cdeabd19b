// Replay cue: a face shown on a screen or a print sits inside straight borders.
#include "cvision_spoof.h"
#include "cvision_internal.hpp"

#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

extern "C" int cvis_face_border_sides(cvis_image_view image, cvis_face_box box) {
    if (!image.pixels || image.width <= 0 || image.height <= 0 || (image.channels != 1 && image.channels != 3)) return -1;
    int mask = 0;
    cvis_status status = cvis::guarded([&]() -> cvis_status {
        cv::Mat src(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(image.pixels));
        cv::Mat grey;
        if (image.channels == 3) cv::cvtColor(src, grey, cv::COLOR_BGR2GRAY);
        else grey = src;
        // Work at <= 480 px on the long side: the cue is about long lines, not detail.
        double scale = std::min(1.0, 480.0 / std::max(image.width, image.height));
        if (scale < 1.0) cv::resize(grey, grey, cv::Size(), scale, scale, cv::INTER_AREA);
        cv::Mat edges;
        cv::GaussianBlur(grey, grey, cv::Size(3, 3), 0);
        cv::Canny(grey, edges, 40, 120);
        const double bx = box.x * scale, by = box.y * scale, bw = box.width * scale, bh = box.height * scale;
        std::vector<cv::Vec4i> lines;
        int minLength = int(std::max(20.0, 0.6 * std::min(bw, bh)));
        cv::HoughLinesP(edges, lines, 1, CV_PI / 180, 50, minLength, 6);
        for (const auto &l : lines) {
            double dx = l[2] - l[0], dy = l[3] - l[1];
            double length = std::hypot(dx, dy);
            if (std::abs(dx) < 0.12 * std::abs(dy)) {  // vertical
                double x = (l[0] + l[2]) / 2.0;
                double y0 = std::min(l[1], l[3]), y1 = std::max(l[1], l[3]);
                double overlap = std::min(y1, by + bh) - std::max(y0, by);
                if (length < 0.6 * bh || overlap < 0.3 * bh) continue;
                if (x < bx - 0.08 * bw) mask |= CVIS_BORDER_LEFT;
                else if (x > bx + bw * 1.08) mask |= CVIS_BORDER_RIGHT;
            } else if (std::abs(dy) < 0.12 * std::abs(dx)) {  // horizontal
                double y = (l[1] + l[3]) / 2.0;
                double x0 = std::min(l[0], l[2]), x1 = std::max(l[0], l[2]);
                double overlap = std::min(x1, bx + bw) - std::max(x0, bx);
                if (length < 0.6 * bw || overlap < 0.3 * bw) continue;
                if (y < by - 0.08 * bh) mask |= CVIS_BORDER_TOP;
                else if (y > by + bh * 1.08) mask |= CVIS_BORDER_BOTTOM;
            }
        }
        return CVIS_OK;
    });
    return status == CVIS_OK ? mask : -1;
}

extern "C" cvis_status cvis_face_recapture_features(cvis_image_view image, cvis_face_box box, float *out) {
    if (!image.pixels || image.width <= 0 || image.height <= 0 || (image.channels != 1 && image.channels != 3) || !out) {
        return CVIS_ERR_ARGUMENT;
    }
    return cvis::guarded([&]() -> cvis_status {
        cv::Mat src(image.height, image.width, image.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(image.pixels));
        cv::Rect r(int(std::floor(box.x)), int(std::floor(box.y)), int(std::ceil(box.width)), int(std::ceil(box.height)));
        r &= cv::Rect(0, 0, image.width, image.height);
        if (r.width < 24 || r.height < 24) return CVIS_ERR_ARGUMENT;
        cv::Mat crop = src(r), grey;
        if (image.channels == 3) cv::cvtColor(crop, grey, cv::COLOR_BGR2GRAY);
        else grey = crop;
        const int n = 128;
        cv::Mat g;
        cv::resize(grey, g, cv::Size(n, n), 0, 0, r.width >= n ? cv::INTER_AREA : cv::INTER_LINEAR);
        g.convertTo(g, CV_32F);
        g -= cv::mean(g)[0];
        cv::Mat window;
        cv::createHanningWindow(window, cv::Size(n, n), CV_32F);
        g = g.mul(window);
        cv::Mat planes[] = {g, cv::Mat::zeros(g.size(), CV_32F)}, spectrum;
        cv::merge(planes, 2, spectrum);
        cv::dft(spectrum, spectrum);
        cv::split(spectrum, planes);
        cv::Mat magnitude;
        cv::magnitude(planes[0], planes[1], magnitude);
        std::vector<float> band;
        double high = 0, all = 0;
        for (int y = 0; y < n; y++) {
            for (int x = 0; x < n; x++) {
                int fx = x <= n / 2 ? x : x - n, fy = y <= n / 2 ? y : y - n;
                double radius = std::hypot(double(fx), double(fy)) / (n / 2);
                if (radius < 1e-9) continue;
                float m = magnitude.at<float>(y, x);
                double e = double(m) * m;
                all += e;
                if (radius > 0.5) high += e;
                if (radius > 0.3 && radius < 0.95) band.push_back(m);
            }
        }
        float moire = 0;
        if (!band.empty()) {
            std::vector<float> sorted = band;
            std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
            float median = std::max(sorted[sorted.size() / 2], 1e-6f);
            float peak = *std::max_element(band.begin(), band.end());
            moire = float(std::log10(peak / median));
        }
        out[0] = moire;
        out[1] = all > 0 ? float(high / all) : 0;
        if (image.channels == 3) {
            cv::Mat hsv;
            cv::cvtColor(crop, hsv, cv::COLOR_BGR2HSV);
            cv::Scalar mean = cv::mean(hsv);
            out[2] = float(mean[1] / 255.0);
            std::vector<cv::Mat> ch;
            cv::split(hsv, ch);
            out[3] = float(cv::countNonZero(ch[2] > 245)) / float(crop.rows * crop.cols);
        } else {
            out[2] = 0;
            out[3] = float(cv::countNonZero(grey > 245)) / float(crop.rows * crop.cols);
        }
        return CVIS_OK;
    });
}
