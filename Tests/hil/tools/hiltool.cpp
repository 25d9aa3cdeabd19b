// hiltool: host-side helper of the hardware-in-the-loop harness (Tests/hil).
//   hiltool frames OUT FOURCC W H REPEAT SCALE INPUT...   images and/or videos -> raw frames for
//       the vivid output device (FOURCC: YUYV, GREY, NV12, RGB3), each source frame placed at the
//       centre of a WxH mid-grey canvas (scaled by SCALE) and written REPEAT times; OUT.png is the
//       first canvas (BGR) for comparisons.
//   hiltool pattern OUT.png W H     a smooth colour test pattern (no face) for the capture check
//   hiltool compare A.png B.png [grey]   mean absolute difference (0-255) of two images; exit 0
//
// Uses only OpenCV (libopencv-dev, installed by scripts/setup.sh); videos are decoded by OpenCV's
// FFmpeg backend, like the daemon's replay cameras.
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static cv::Mat canvas(const cv::Mat& src, int w, int h, double scale) {
    cv::Mat img = src, out(h, w, CV_8UC3, cv::Scalar(128, 128, 128));
    if (img.channels() == 1) cv::cvtColor(img, img, cv::COLOR_GRAY2BGR);
    if (scale != 1.0) cv::resize(img, img, cv::Size(), scale, scale, scale > 1 ? cv::INTER_CUBIC : cv::INTER_AREA);
    int cw = std::min(img.cols, w), ch = std::min(img.rows, h);
    cv::Rect from((img.cols - cw) / 2, (img.rows - ch) / 2, cw, ch), to((w - cw) / 2, (h - ch) / 2, cw, ch);
    img(from).copyTo(out(to));
    return out;
}

static std::vector<unsigned char> convert(const cv::Mat& bgr, const std::string& fourcc) {
    int w = bgr.cols, h = bgr.rows;
    std::vector<unsigned char> out;
    if (fourcc == "GREY") {
        cv::Mat g; cv::cvtColor(bgr, g, cv::COLOR_BGR2GRAY);
        out.assign(g.data, g.data + w * h);
    } else if (fourcc == "RGB3") {
        cv::Mat c; cv::cvtColor(bgr, c, cv::COLOR_BGR2RGB);
        out.assign(c.data, c.data + w * h * 3);
    } else if (fourcc == "YUYV" || fourcc == "NV12") {
        // BT.601 limited range (Y 16-235, Cb/Cr 16-240), as cameras and vivid deliver
        cv::Mat ycc; cv::cvtColor(bgr, ycc, cv::COLOR_BGR2YCrCb);  // full-range Y, Cr, Cb
        std::vector<cv::Mat> p; cv::split(ycc, p);
        cv::Mat Y, U, V;
        p[0].convertTo(Y, CV_32F, 219.0 / 255.0, 16);
        p[2].convertTo(U, CV_32F, 224.0 / 255.0, 128 - 128 * 224.0 / 255.0);
        p[1].convertTo(V, CV_32F, 224.0 / 255.0, 128 - 128 * 224.0 / 255.0);
        auto px = [](const cv::Mat& m, int y, int x) { return (unsigned char)cv::saturate_cast<uchar>(m.at<float>(y, x)); };
        if (fourcc == "YUYV") {
            out.resize(w * h * 2);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x += 2) {
                    unsigned char* d = &out[(y * w + x) * 2];
                    d[0] = px(Y, y, x);
                    d[1] = (unsigned char)cv::saturate_cast<uchar>((U.at<float>(y, x) + U.at<float>(y, x + 1)) / 2);
                    d[2] = px(Y, y, x + 1);
                    d[3] = (unsigned char)cv::saturate_cast<uchar>((V.at<float>(y, x) + V.at<float>(y, x + 1)) / 2);
                }
        } else {
            out.resize(w * h * 3 / 2);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) out[y * w + x] = px(Y, y, x);
            unsigned char* uv = &out[w * h];
            for (int y = 0; y < h; y += 2)
                for (int x = 0; x < w; x += 2) {
                    float u = 0, v = 0;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) { u += U.at<float>(y + dy, x + dx); v += V.at<float>(y + dy, x + dx); }
                    uv[(y / 2) * w + x] = cv::saturate_cast<uchar>(u / 4);
                    uv[(y / 2) * w + x + 1] = cv::saturate_cast<uchar>(v / 4);
                }
        }
    } else {
        fprintf(stderr, "hiltool: unknown fourcc %s (YUYV, GREY, NV12, RGB3)\n", fourcc.c_str());
        exit(2);
    }
    return out;
}

static bool isImage(const std::string& p) {
    std::string l = p;
    for (auto& c : l) c = tolower(c);
    for (const char* e : {".jpg", ".jpeg", ".png", ".pgm", ".ppm", ".bmp"})
        if (l.size() > strlen(e) && l.compare(l.size() - strlen(e), strlen(e), e) == 0) return true;
    return false;
}

int main(int argc, char** argv) {
    std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "frames" && argc >= 8) {
        std::string out = argv[2], fourcc = argv[3];
        int w = atoi(argv[4]), h = atoi(argv[5]), repeat = atoi(argv[6]);
        double scale = atof(argv[7]);
        FILE* f = fopen(out.c_str(), "wb");
        if (!f) { perror(out.c_str()); return 1; }
        int n = 0;
        auto emit = [&](const cv::Mat& src) {
            cv::Mat c = canvas(src, w, h, scale);
            if (n == 0) cv::imwrite(out + ".png", c);
            auto raw = convert(c, fourcc);
            for (int i = 0; i < repeat; i++) fwrite(raw.data(), 1, raw.size(), f);
            n++;
        };
        for (int i = 8; i < argc; i++) {
            if (isImage(argv[i])) {
                cv::Mat m = cv::imread(argv[i], cv::IMREAD_COLOR);
                if (m.empty()) { fprintf(stderr, "hiltool: cannot read %s\n", argv[i]); return 1; }
                emit(m);
            } else {
                cv::VideoCapture v(argv[i]);
                if (!v.isOpened()) { fprintf(stderr, "hiltool: cannot open video %s\n", argv[i]); return 1; }
                cv::Mat m;
                while (v.read(m)) emit(m);
            }
        }
        fclose(f);
        printf("%s: %d source frames x %d, %s %dx%d\n", out.c_str(), n, repeat, fourcc.c_str(), w, h);
        return n > 0 ? 0 : 1;
    }
    if (cmd == "pattern" && argc == 5) {
        int w = atoi(argv[3]), h = atoi(argv[4]);
        cv::Mat m(h, w, CV_8UC3);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                m.at<cv::Vec3b>(y, x) = cv::Vec3b(255 * x / w, 255 * y / h, 255 - 255 * (x + y) / (w + h));
        cv::rectangle(m, cv::Rect(w / 8, h / 8, w / 4, h / 4), cv::Scalar(20, 20, 20), cv::FILLED);
        cv::rectangle(m, cv::Rect(w * 5 / 8, h * 5 / 8, w / 4, h / 4), cv::Scalar(235, 235, 235), cv::FILLED);
        return cv::imwrite(argv[2], m) ? 0 : 1;
    }
    if (cmd == "compare" && argc >= 4) {
        bool grey = argc > 4 && std::string(argv[4]) == "grey";
        cv::Mat a = cv::imread(argv[2], grey ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
        cv::Mat b = cv::imread(argv[3], grey ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
        if (a.empty() || b.empty()) { fprintf(stderr, "hiltool: cannot read images\n"); return 1; }
        if (a.size() != b.size()) { printf("size %dx%d vs %dx%d\n", a.cols, a.rows, b.cols, b.rows); return 1; }
        cv::Mat d; cv::absdiff(a, b, d);
        cv::Scalar s = cv::mean(d);
        double mean = (s[0] + s[1] + s[2]) / (grey ? 1 : 3);
        printf("%.2f\n", mean);
        return 0;
    }
    fprintf(stderr, "usage: hiltool frames OUT FOURCC W H REPEAT SCALE INPUT... | pattern OUT.png W H | compare A B [grey]\n");
    return 2;
}
