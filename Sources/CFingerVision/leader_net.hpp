// LEADER's network run by oneDNN (Debian's libdnnl2) instead of OpenCV dnn: the same graph file
// (scripts/leader-cv46.py's rewrite, read with Debian's libonnx), the same arithmetic (or its
// convolutions in bfloat16: Precision), three to four times faster on one core (Docs/finger-print.md, "Speed"). C++ only, never seen by Swift.
#ifndef CVISION_LEADER_NET_HPP
#define CVISION_LEADER_NET_HPP

#include <cstddef>
#include <memory>

#include <opencv2/core.hpp>

namespace cvis {

/// One network: its weights (copied out of the model file, so the file's pages can be dropped),
/// its fused op list and, until forget(), the oneDNN convolutions prepared for the input size of
/// its last pass and that pass's activation buffers. Not safe to run from two threads at once
/// (print_learned.cpp lends one to each extraction).
class LeaderNet {
public:
    /// How the convolutions multiply. `f32`: the original model's arithmetic (its maps to < 1e-5).
    /// `bf16`: sources and weights rounded to bfloat16, sums and outputs in f32, on CPUs that
    /// multiply bfloat16 natively (AVX512-BF16, AMX): ~20 % of a four-print verify, for maps that
    /// differ by ~1e-2 and the same accuracy on the shared sets (Docs/finger-print.md, "Speed").
    enum class Precision { f32, bf16 };

    /// Whether this CPU multiplies bfloat16 natively (what Precision::bf16 needs).
    static bool nativeBf16();

    /// Reads the ONNX graph in `bytes`; throws std::runtime_error when it is not the graph
    /// leader-cv46.py writes (an op or a pattern this runner does not know), or for bf16 on a CPU
    /// without it.
    LeaderNet(const void *bytes, size_t size, Precision precision);
    ~LeaderNet();
    LeaderNet(const LeaderNet &) = delete;
    LeaderNet &operator=(const LeaderNet &) = delete;

    /// Runs the network on `input` (H × W, CV_32F, raw 0–255 grey, sides multiples of 32) with
    /// as many threads as OpenCV may use (cv::getNumThreads: the daemon sets 1); returns the
    /// [1, 5, H, W] maps (probability, direction components, type, blurred probability).
    cv::Mat run(const cv::Mat &input);

    /// Drops what a run keeps for the next: the convolutions prepared for its input size (their
    /// kernels and the weights in the layouts they chose; the next run prepares them again, ~35 ms
    /// on one core) and the activation buffers (the next run maps and faults them in again).
    void forget();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace cvis

#endif
