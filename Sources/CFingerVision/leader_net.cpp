// LEADER through oneDNN: see leader_net.hpp and Docs/finger-print.md ("Speed").
//
// The graph is scripts/leader-cv46.py's rewrite. Two of its patterns become one op each, as they
// were in the original model: a LayerNorm over channels (the rewrite's 11 nodes: 1x1-conv mean,
// Concat, Sub, Mul, 1x1-conv mean, Add eps, Sqrt, Concat, Div, Mul gamma, Add beta) and a GELU
// (6 nodes: x * sigmoid(2a x + 2ab x^3), which is 0.5 x (1 + tanh(a (x + b x^3))), oneDNN's
// gelu_tanh). A GELU right after the convolution that alone feeds it runs as that convolution's
// post-op. Tensors are NHWC (oneDNN's fast convolutions on this layout need no reorders; the
// LayerNorm's channels are contiguous); the convolutions go to oneDNN, the rest are plain loops.
// The rewrite's Transposes (1,0,2,3, around the dilated convolutions) move no data: a tensor is
// only marked as seen transposed (Tensor::swapped).
#include "leader_net.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include <dnnl.hpp>
#include <onnx/onnx_pb.h>

// libdnnl's threads are OpenMP's (Debian builds it with DNNL_CPU_THREADING_RUNTIME OMP, libgomp).
// Declared here: Swift's clang does not see GCC's omp.h.
extern "C" void omp_set_num_threads(int threads);

namespace cvis {
namespace {

using dnnl::algorithm;
using dnnl::memory;

/// How a buffer goes back: munmap for the large ones (Buffer), delete[] for the rest.
struct Release {
    size_t mapped; // bytes, 0 for new[]
    void operator()(float *p) const {
        if (mapped) munmap(p, mapped);
        else delete[] p;
    }
};

/// Floats left uninitialised (every op writes all of its output before anything reads it), so a
/// buffer's pages are touched only as far as a pass uses them. One of 2 MiB or more is its own
/// mapping in transparent huge pages where the kernel has them (MADV_HUGEPAGE: the kernel's THP
/// mode "madvise" gives them only when asked, "always" anyway, "never" not): a pass's first touch
/// of its activations then faults once per 2 MiB instead of once per 4 KiB, ~40 ms of a print's
/// first pass.
struct Buffer {
    std::unique_ptr<float[], Release> p{nullptr, Release{0}};
    size_t capacity = 0;
    Buffer() = default;
    explicit Buffer(size_t n) : capacity(n) {
        constexpr size_t huge = size_t(2) << 20;
        if (n * sizeof(float) >= huge) {
            const size_t bytes = (n * sizeof(float) + huge - 1) / huge * huge;
            void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m != MAP_FAILED) {
                (void)madvise(m, bytes, MADV_HUGEPAGE); // a hint: without huge pages, small ones
                p = std::unique_ptr<float[], Release>(static_cast<float *>(m), Release{bytes});
                return;
            }
        }
        p = std::unique_ptr<float[], Release>(new float[n], Release{0});
    }
    Buffer(Buffer &&o) noexcept : p(std::move(o.p)), capacity(std::exchange(o.capacity, 0)) {}
    Buffer &operator=(Buffer &&o) noexcept {
        p = std::move(o.p);
        capacity = std::exchange(o.capacity, 0);
        return *this;
    }
    float *data() { return p.get(); }
    const float *data() const { return p.get(); }
    float &operator[](size_t i) { return p[i]; }
    const float &operator[](size_t i) const { return p[i]; }
    bool empty() const { return capacity == 0; }
};

/// Activation buffers, reused from op to op and, while a batch keeps them (print_learned.cpp),
/// from pass to pass: a fresh allocation is a fresh mapping, and its page faults cost a quarter of
/// a pass. A new buffer is made a quarter larger than asked, so that the next print of a batch,
/// a little larger, still fits (the headroom's pages are never touched unless used). Emptied by
/// LeaderNet::forget.
struct Pool {
    std::vector<Buffer> free;
    Buffer take(size_t n) {
        size_t best = free.size();
        for (size_t k = 0; k < free.size(); ++k)
            if (free[k].capacity >= n && (best == free.size() || free[k].capacity < free[best].capacity)) best = k;
        if (best == free.size()) return Buffer(n + n / 4);
        Buffer v = std::move(free[best]);
        free.erase(free.begin() + long(best));
        return v;
    }
    void give(Buffer &&v) {
        if (!v.empty()) free.push_back(std::move(v));
    }
};

/// An activation: dims N, C, H, W, stored NHWC in the first size() floats of `d` (which may be
/// longer: a reused buffer). `swapped`: the graph sees it transposed to [C, N, H, W] (a
/// Transpose 1,0,2,3 costs nothing until an op needs that layout; see Impl::plain).
struct Tensor {
    int n = 1, c = 1, h = 1, w = 1;
    bool swapped = false;
    Buffer d;
    size_t size() const { return size_t(n) * size_t(c) * size_t(h) * size_t(w); }
    void shape(Pool &pool, int n_, int c_, int h_, int w_) {
        n = n_, c = c_, h = h_, w = w_;
        swapped = false;
        d = pool.take(size());
    }
};

struct Weights {
    std::vector<int64_t> dims;
    std::vector<float> f;
    std::vector<int64_t> i;
};

enum class Kind { conv, layerNorm, gelu, sigmoid, add, mul, transpose, concat, slice, maxPool, avgPool, resize };

struct Op {
    Kind kind;
    std::vector<int> in; // tensor slots
    int out = 0;
    // conv
    const Weights *weights = nullptr, *bias = nullptr;
    const Weights *constant = nullptr; // add/mul with a constant; layerNorm: gamma (beta in bias)
    int group = 1, strides[2] = {1, 1}, dilations[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
    bool samePad = false, gelu = false;
    bool bf16 = false; // conv: source and weights in bfloat16 (LeaderNet::Precision), f32 sums and output
    float eps = 0;
    int axis = 1, start = 0, end = 0;
    // conv state: the primitive made for the input shape of this pass, and the weights in the
    // layout it chose (dropped by LeaderNet::forget after each pass)
    struct Prepared {
        long key;
        dnnl::convolution_forward prim;
        memory weights;
        memory::desc scratch;
        int oh, ow;
        std::optional<dnnl::reorder> toBf16; // the f32 source to bfloat16, for a bfloat16 convolution
        memory::desc bf16Source;
    };
    std::optional<Prepared> prepared;
};

int attrInt(const onnx::NodeProto &n, const char *name, int fallback) {
    for (const auto &a : n.attribute())
        if (a.name() == name) return int(a.i());
    return fallback;
}

std::vector<int> attrInts(const onnx::NodeProto &n, const char *name) {
    for (const auto &a : n.attribute())
        if (a.name() == name) return std::vector<int>(a.ints().begin(), a.ints().end());
    return {};
}

std::string attrString(const onnx::NodeProto &n, const char *name) {
    for (const auto &a : n.attribute())
        if (a.name() == name) return a.s();
    return {};
}

[[noreturn]] void unknown(const std::string &what) { throw std::runtime_error("learned extractor graph: " + what); }

} // namespace

struct LeaderNet::Impl {
    bool halfProducts = false; // Precision::bf16
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::map<std::string, Weights> weights;
    std::vector<Op> ops;
    int input = 0, output = 0, slots = 0;
    std::vector<int> lastUse; // per slot: the op after which it is freed
    Pool pool;

    void build(const onnx::ModelProto &model) {
        const auto &g = model.graph();
        for (const auto &t : g.initializer()) {
            Weights w;
            w.dims.assign(t.dims().begin(), t.dims().end());
            if (t.data_type() == onnx::TensorProto::FLOAT) {
                if (!t.raw_data().empty()) {
                    w.f.resize(t.raw_data().size() / 4);
                    std::memcpy(w.f.data(), t.raw_data().data(), w.f.size() * 4);
                } else {
                    w.f.assign(t.float_data().begin(), t.float_data().end());
                }
            } else if (t.data_type() == onnx::TensorProto::INT64) {
                if (!t.raw_data().empty()) {
                    w.i.resize(t.raw_data().size() / 8);
                    std::memcpy(w.i.data(), t.raw_data().data(), w.i.size() * 8);
                } else {
                    w.i.assign(t.int64_data().begin(), t.int64_data().end());
                }
            } else {
                unknown("initializer type " + std::to_string(t.data_type()));
            }
            weights[t.name()] = std::move(w);
        }
        std::map<std::string, int> slot;
        std::map<std::string, int> consumers;
        for (const auto &n : g.node())
            for (const auto &i : n.input()) consumers[i]++;
        auto slotOf = [&](const std::string &name) {
            auto it = slot.find(name);
            if (it == slot.end()) unknown("tensor " + name + " used before it is made");
            return it->second;
        };
        auto newSlot = [&](const std::string &name) { return slot[name] = slots++; };
        auto constant = [&](const std::string &name) -> const Weights * {
            auto it = weights.find(name);
            return it == weights.end() ? nullptr : &it->second;
        };
        if (g.input_size() != 1 || g.output_size() != 1) unknown("not one input and one output");
        input = newSlot(g.input(0).name());

        const int count = g.node_size();
        for (int k = 0; k < count; ++k) {
            const auto &n = g.node(k);
            const std::string &type = n.op_type();
            auto is = [&](int at, const char *t) { return k + at < count && g.node(k + at).op_type() == t; };
            Op op;
            if (type == "Conv" && n.input_size() > 1 && n.input(1).find("mean_w") != std::string::npos) {
                const char *pattern[] = {"Conv", "Concat", "Sub", "Mul", "Conv", "Add", "Sqrt", "Concat", "Div", "Mul", "Add"};
                for (int j = 0; j < 11; ++j)
                    if (!is(j, pattern[j])) unknown("a LayerNorm that is not the rewrite's 11 nodes");
                op.kind = Kind::layerNorm;
                op.in = {slotOf(n.input(0))};
                const Weights *eps = constant(g.node(k + 5).input(1));
                op.constant = constant(g.node(k + 9).input(1));
                op.bias = constant(g.node(k + 10).input(1));
                if (!eps || eps->f.size() != 1 || !op.constant || !op.bias) unknown("LayerNorm constants");
                op.eps = eps->f[0];
                op.out = newSlot(g.node(k + 10).output(0));
                k += 10;
            } else if (type == "Mul" && n.input(0) == n.input(1) && n.output(0).find("/x2_") != std::string::npos) {
                const char *pattern[] = {"Mul", "Mul", "Add", "Mul", "Sigmoid", "Mul"};
                for (int j = 0; j < 6; ++j)
                    if (!is(j, pattern[j])) unknown("a GELU that is not the rewrite's 6 nodes");
                const std::string &x = n.input(0);
                const int from = slotOf(x);
                // The convolution just made, feeding only this GELU (its three uses are inside it):
                // the GELU becomes its post-op.
                int inside = 0;
                for (int j = 0; j < 6; ++j)
                    for (const auto &i : g.node(k + j).input()) inside += i == x;
                if (!ops.empty() && ops.back().kind == Kind::conv && ops.back().out == from && consumers[x] == inside &&
                    !ops.back().gelu) {
                    ops.back().gelu = true;
                    slot[g.node(k + 5).output(0)] = from;
                    k += 5;
                    continue;
                }
                op.kind = Kind::gelu;
                op.in = {from};
                op.out = newSlot(g.node(k + 5).output(0));
                k += 5;
            } else if (type == "Conv") {
                op.kind = Kind::conv;
                op.in = {slotOf(n.input(0))};
                op.weights = constant(n.input(1));
                if (!op.weights || op.weights->dims.size() != 4 ||
                    int64_t(op.weights->f.size()) != op.weights->dims[0] * op.weights->dims[1] * op.weights->dims[2] * op.weights->dims[3])
                    unknown("Conv weights");
                if (n.input_size() > 2) {
                    op.bias = constant(n.input(2));
                    if (!op.bias || int64_t(op.bias->f.size()) != op.weights->dims[0]) unknown("Conv bias");
                }
                op.group = attrInt(n, "group", 1);
                auto s = attrInts(n, "strides"), d = attrInts(n, "dilations"), p = attrInts(n, "pads");
                if (s.size() == 2) op.strides[0] = s[0], op.strides[1] = s[1];
                if (d.size() == 2) op.dilations[0] = d[0], op.dilations[1] = d[1];
                if (p.size() == 4) std::copy(p.begin(), p.end(), op.pads);
                const std::string pad = attrString(n, "auto_pad");
                if (pad == "SAME_UPPER") op.samePad = true;
                else if (!pad.empty() && pad != "NOTSET") unknown("Conv auto_pad " + pad);
                op.out = newSlot(n.output(0));
            } else if (type == "Sigmoid") {
                op.kind = Kind::sigmoid, op.in = {slotOf(n.input(0))}, op.out = newSlot(n.output(0));
            } else if (type == "Add" || type == "Mul") {
                op.kind = type == "Add" ? Kind::add : Kind::mul;
                op.in = {slotOf(n.input(0))};
                if ((op.constant = constant(n.input(1))) == nullptr) op.in.push_back(slotOf(n.input(1)));
                op.out = newSlot(n.output(0));
            } else if (type == "Transpose") {
                if (attrInts(n, "perm") != std::vector<int>{1, 0, 2, 3}) unknown("Transpose other than 1,0,2,3");
                op.kind = Kind::transpose, op.in = {slotOf(n.input(0))}, op.out = newSlot(n.output(0));
            } else if (type == "Concat") {
                op.kind = Kind::concat;
                op.axis = attrInt(n, "axis", 1);
                if (op.axis != 0 && op.axis != 1) unknown("Concat axis");
                for (const auto &i : n.input()) op.in.push_back(slotOf(i));
                op.out = newSlot(n.output(0));
            } else if (type == "Slice") {
                const Weights *st = constant(n.input(1)), *en = constant(n.input(2)),
                              *ax = n.input_size() > 3 ? constant(n.input(3)) : nullptr;
                if (!st || !en || !ax || st->i.size() != 1 || en->i.size() != 1 || ax->i != std::vector<int64_t>{1})
                    unknown("Slice other than one range of channels");
                op.kind = Kind::slice, op.in = {slotOf(n.input(0))}, op.out = newSlot(n.output(0));
                op.start = int(st->i[0]);
                op.end = int(std::min<int64_t>(en->i[0], 1 << 20));
            } else if (type == "MaxPool" || type == "AveragePool") {
                if (attrInts(n, "kernel_shape") != std::vector<int>{2, 2} || attrInts(n, "strides") != std::vector<int>{2, 2})
                    unknown("pooling other than 2x2, stride 2");
                op.kind = type == "MaxPool" ? Kind::maxPool : Kind::avgPool;
                op.in = {slotOf(n.input(0))}, op.out = newSlot(n.output(0));
            } else if (type == "Resize") {
                if (attrString(n, "mode") != "nearest") unknown("Resize other than nearest");
                const Weights *scales = n.input_size() > 2 ? constant(n.input(2)) : nullptr;
                if (!scales || scales->f != std::vector<float>{1, 1, 2, 2}) unknown("Resize other than 2x");
                op.kind = Kind::resize, op.in = {slotOf(n.input(0))}, op.out = newSlot(n.output(0));
            } else {
                unknown("op " + type);
            }
            ops.push_back(std::move(op));
        }
        output = slotOf(g.output(0).name());
        lastUse.assign(size_t(slots), -1);
        for (int k = 0; k < int(ops.size()); ++k)
            for (int s : ops[size_t(k)].in) lastUse[size_t(s)] = k;
        // In bfloat16: every convolution but the first layers' (1–4 input channels at full
        // resolution: cheap, and they see the raw grey, where 8 bits of mantissa would cost most).
        if (halfProducts)
            for (Op &op : ops) op.bf16 = op.kind == Kind::conv && op.weights->dims[1] * op.group >= 8;
    }

    void conv(Op &op, const Tensor &x, Tensor &y) {
        const auto &wd = op.weights->dims;
        const int O = int(wd[0]), I = int(wd[1]), kh = int(wd[2]), kw = int(wd[3]), g = op.group;
        if (I * g != x.c || O % g) unknown("Conv channels");
        int pt = op.pads[0], pl = op.pads[1], pb = op.pads[2], pr = op.pads[3];
        if (op.samePad) {
            const int oh = (x.h + op.strides[0] - 1) / op.strides[0], ow = (x.w + op.strides[1] - 1) / op.strides[1];
            const int th = std::max((oh - 1) * op.strides[0] + (kh - 1) * op.dilations[0] + 1 - x.h, 0);
            const int tw = std::max((ow - 1) * op.strides[1] + (kw - 1) * op.dilations[1] + 1 - x.w, 0);
            pt = th / 2, pb = th - pt, pl = tw / 2, pr = tw - pl;
        }
        const long key = (long(x.n) * 8192 + x.h) * 8192 + x.w;
        if (!op.prepared || op.prepared->key != key) {
            const int oh = (x.h + pt + pb - ((kh - 1) * op.dilations[0] + 1)) / op.strides[0] + 1;
            const int ow = (x.w + pl + pr - ((kw - 1) * op.dilations[1] + 1)) / op.strides[1] + 1;
            const auto f32 = memory::data_type::f32;
            const auto in = op.bf16 ? memory::data_type::bf16 : f32;
            const memory::dims wdims = g > 1 ? memory::dims{g, O / g, I, kh, kw} : memory::dims{O, I, kh, kw};
            const memory::desc src({x.n, x.c, x.h, x.w}, in, memory::format_tag::nhwc);
            const memory::desc dst({x.n, O, oh, ow}, f32, memory::format_tag::nhwc);
            const memory::desc anyWeights(wdims, in, memory::format_tag::any);
            const memory::desc bias({O}, f32, memory::format_tag::a);
            const memory::dims strides{op.strides[0], op.strides[1]}, dil{op.dilations[0] - 1, op.dilations[1] - 1};
            const memory::dims padL{pt, pl}, padR{pb, pr};
            const auto desc = op.bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algorithm::convolution_direct,
                                                                        src, anyWeights, bias, dst, strides, dil, padL, padR)
                                      : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algorithm::convolution_direct,
                                                                        src, anyWeights, dst, strides, dil, padL, padR);
            dnnl::primitive_attr attr;
            // Scratch memory comes from the pass's pool, not one buffer per primitive for its life.
            attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
            if (op.gelu) {
                dnnl::post_ops post;
                post.append_eltwise(1.f, algorithm::eltwise_gelu_tanh, 0.f, 0.f);
                attr.set_post_ops(post);
            }
            const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
            // The weights in the layout the convolution chose: kept from the last shape when that
            // chose the same layout (it depends on the channels and kernel, rarely on the size).
            memory weights;
            if (op.prepared && op.prepared->weights.get_desc() == pd.weights_desc()) {
                weights = op.prepared->weights;
            } else {
                memory user({wdims, f32, g > 1 ? memory::format_tag::goihw : memory::format_tag::oihw}, engine,
                            const_cast<float *>(op.weights->f.data()));
                weights = memory(pd.weights_desc(), engine);
                dnnl::reorder(user, weights).execute(stream, user, weights);
                stream.wait();
            }
            op.prepared = Op::Prepared{key, dnnl::convolution_forward(pd), weights, pd.scratchpad_desc(), oh, ow, std::nullopt, src};
            if (op.bf16) {
                const memory::desc floats({x.n, x.c, x.h, x.w}, f32, memory::format_tag::nhwc);
                op.prepared->toBf16 = dnnl::reorder(dnnl::reorder::primitive_desc(engine, floats, engine, src));
            }
        }
        const Op::Prepared &ready = *op.prepared;
        y.shape(pool, x.n, O, ready.oh, ready.ow);
        const auto f32 = memory::data_type::f32;
        memory src({{x.n, x.c, x.h, x.w}, f32, memory::format_tag::nhwc}, engine, const_cast<float *>(x.d.data()));
        Buffer rounded; // the source in bfloat16 (two to a float)
        if (ready.toBf16) {
            rounded = pool.take(x.size() / 2 + 1);
            memory half(ready.bf16Source, engine, rounded.data());
            ready.toBf16->execute(stream, src, half);
            src = half;
        }
        memory dst({{y.n, y.c, y.h, y.w}, f32, memory::format_tag::nhwc}, engine, y.d.data());
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, ready.weights}, {DNNL_ARG_DST, dst}};
        Buffer scratch = pool.take(ready.scratch.get_size() / 4 + 1);
        args[DNNL_ARG_SCRATCHPAD] = memory(ready.scratch, engine, scratch.data());
        if (op.bias) args[DNNL_ARG_BIAS] = memory({{O}, f32, memory::format_tag::a}, engine, const_cast<float *>(op.bias->f.data()));
        ready.prim.execute(stream, args);
        stream.wait(); // the source may be freed next
        pool.give(std::move(scratch));
        pool.give(std::move(rounded));
    }

    /// In place, by oneDNN's vectorised kernels.
    void eltwise(Tensor &y, algorithm alg) {
        const memory::desc md({memory::dim(y.size())}, memory::data_type::f32, memory::format_tag::a);
        const dnnl::eltwise_forward::primitive_desc pd(
            dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, alg, md, 0.f, 0.f), engine);
        memory m(md, engine, y.d.data());
        dnnl::eltwise_forward(pd).execute(stream, {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}});
        stream.wait();
    }

    /// A copy of `x` to change in place, or `x` itself when op `k` is the last to read it.
    Tensor changeable(std::vector<Tensor> &t, int slot, int k) {
        Tensor &x = t[size_t(slot)];
        const auto &in = ops[size_t(k)].in;
        if (lastUse[size_t(slot)] == k && slot != output && slot != input && std::count(in.begin(), in.end(), slot) == 1)
            return std::move(x);
        Tensor y;
        y.shape(pool, x.n, x.c, x.h, x.w);
        y.swapped = x.swapped;
        std::memcpy(y.d.data(), x.d.data(), x.size() * 4);
        return y;
    }

    /// Gives a swapped tensor the layout the graph sees ([C, N, H, W] stored NHWC), in place.
    /// The rewrite's Transposes come in pairs around element-wise ops and batch Concats (the
    /// dilated convolutions' batch-major layout), so in this graph it never runs; it is here for
    /// an op that needs the layout.
    void plain(Tensor &x) {
        if (!x.swapped) return;
        Tensor y;
        y.shape(pool, x.c, x.n, x.h, x.w);
        for (int n = 0; n < x.n; ++n)
            for (int h = 0; h < x.h; ++h)
                for (int w = 0; w < x.w; ++w) {
                    const float *s = &x.d[((size_t(n) * size_t(x.h) + size_t(h)) * size_t(x.w) + size_t(w)) * size_t(x.c)];
                    for (int c = 0; c < x.c; ++c)
                        y.d[((size_t(c) * size_t(y.h) + size_t(h)) * size_t(y.w) + size_t(w)) * size_t(y.c) + size_t(n)] = s[c];
                }
        pool.give(std::move(x.d));
        x = std::move(y);
    }

    void step(int k, std::vector<Tensor> &t) {
        Op &op = ops[size_t(k)];
        // A swapped tensor stays so through element-wise ops and Concats of swapped tensors (a
        // batch Concat of [C, 1, H, W] tensors is a channel Concat of what they are stored as).
        // Every other op gets its inputs in the graph's layout.
        bool keepsSwapped = op.kind == Kind::transpose || op.kind == Kind::gelu || op.kind == Kind::sigmoid;
        if (op.kind == Kind::concat || ((op.kind == Kind::add || op.kind == Kind::mul) && (!op.constant || op.constant->f.size() == 1))) {
            keepsSwapped = true;
            for (int s : op.in) keepsSwapped = keepsSwapped && t[size_t(s)].swapped == t[size_t(op.in[0])].swapped;
        }
        if (!keepsSwapped)
            for (int s : op.in) plain(t[size_t(s)]);
        const Tensor &x = t[size_t(op.in[0])];
        const bool swapped = x.swapped;
        Tensor y;
        switch (op.kind) {
        case Kind::conv:
            conv(op, x, y);
            break;
        case Kind::gelu:
        case Kind::sigmoid:
            y = changeable(t, op.in[0], k);
            eltwise(y, op.kind == Kind::gelu ? algorithm::eltwise_gelu_tanh : algorithm::eltwise_logistic);
            break;
        case Kind::layerNorm: {
            // Over each pixel's channels: NHWC is a [pixels, C] matrix, oneDNN's layer norm.
            y = changeable(t, op.in[0], k);
            const int C = y.c;
            if (op.constant->f.size() != size_t(C) || op.bias->f.size() != size_t(C)) unknown("LayerNorm channels");
            const auto f32 = memory::data_type::f32;
            const memory::desc md({memory::dim(y.size() / size_t(C)), C}, f32, memory::format_tag::ab);
            const dnnl::layer_normalization_forward::primitive_desc pd(
                dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, op.eps,
                                                        dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
                engine);
            memory data(md, engine, y.d.data()), mean(pd.mean_desc(), engine), variance(pd.variance_desc(), engine);
            memory scale({{C}, f32, memory::format_tag::a}, engine, const_cast<float *>(op.constant->f.data()));
            memory shift({{C}, f32, memory::format_tag::a}, engine, const_cast<float *>(op.bias->f.data()));
            dnnl::layer_normalization_forward(pd).execute(stream, {{DNNL_ARG_SRC, data}, {DNNL_ARG_DST, data}, {DNNL_ARG_MEAN, mean},
                                                                   {DNNL_ARG_VARIANCE, variance}, {DNNL_ARG_SCALE, scale},
                                                                   {DNNL_ARG_SHIFT, shift}});
            stream.wait();
            break;
        }
        case Kind::add:
        case Kind::mul: {
            y = changeable(t, op.in[0], k);
            const bool add = op.kind == Kind::add;
            float *d = y.d.data();
            const size_t size = y.size();
            if (op.constant) {
                const auto &b = op.constant->f;
                if (b.size() != 1 && b.size() != size_t(y.c)) unknown("a constant of another shape");
                const size_t C = b.size(); // 1 (any layout) or the channels (y is not swapped)
                for (size_t p = 0; p < size; p += C)
                    for (size_t c = 0; c < C; ++c) d[p + c] = add ? d[p + c] + b[c] : d[p + c] * b[c];
            } else {
                const Tensor &b = t[size_t(op.in[1])];
                if (b.n != y.n || b.c != y.c || b.h != y.h || b.w != y.w) unknown("operands of different shapes");
                const float *e = b.d.data();
                if (add) for (size_t p = 0; p < size; ++p) d[p] += e[p];
                else for (size_t p = 0; p < size; ++p) d[p] *= e[p];
            }
            break;
        }
        case Kind::transpose: // [N, C, H, W] -> [C, N, H, W]: the same floats, seen the other way
            y = changeable(t, op.in[0], k);
            y.swapped = !y.swapped;
            break;
        case Kind::concat:
            // Along the stored N (axis 0 of a plain tensor, 1 of a swapped one) or the stored C.
            if ((op.axis == 0) != swapped) {
                int n = 0;
                for (int s : op.in) {
                    const Tensor &a = t[size_t(s)];
                    if (a.c != x.c || a.h != x.h || a.w != x.w) unknown("Concat of different shapes");
                    n += a.n;
                }
                y.shape(pool, n, x.c, x.h, x.w);
                size_t at = 0;
                for (int s : op.in) {
                    const Tensor &a = t[size_t(s)];
                    std::memcpy(y.d.data() + at, a.d.data(), a.size() * 4);
                    at += a.size();
                }
            } else {
                int c = 0;
                for (int s : op.in) {
                    const Tensor &a = t[size_t(s)];
                    if (a.n != x.n || a.h != x.h || a.w != x.w) unknown("Concat of different shapes");
                    c += a.c;
                }
                y.shape(pool, x.n, c, x.h, x.w);
                const size_t pixels = size_t(x.n) * size_t(x.h) * size_t(x.w);
                size_t offset = 0;
                for (int s : op.in) {
                    const Tensor &a = t[size_t(s)];
                    const size_t C = size_t(a.c);
                    const float *from = a.d.data();
                    float *to = y.d.data() + offset;
                    for (size_t p = 0; p < pixels; ++p)
                        for (size_t i = 0; i < C; ++i) to[p * size_t(c) + i] = from[p * C + i];
                    offset += C;
                }
            }
            y.swapped = swapped;
            break;
        case Kind::slice: {
            const int s = std::clamp(op.start, 0, x.c), e = std::clamp(op.end, s, x.c);
            y.shape(pool, x.n, e - s, x.h, x.w);
            const size_t pixels = size_t(x.n) * size_t(x.h) * size_t(x.w);
            for (size_t p = 0; p < pixels; ++p)
                std::memcpy(&y.d[p * size_t(y.c)], &x.d[p * size_t(x.c) + size_t(s)], size_t(y.c) * 4);
            break;
        }
        case Kind::maxPool:
        case Kind::avgPool: {
            // 2x2, stride 2, SAME_UPPER on even sides (the input's sides are multiples of 32).
            if (x.h % 2 || x.w % 2) unknown("pooling an odd side");
            y.shape(pool, x.n, x.c, x.h / 2, x.w / 2);
            const size_t C = size_t(x.c), row = size_t(x.w) * C;
            for (int n = 0; n < y.n; ++n)
                for (int h = 0; h < y.h; ++h)
                    for (int w = 0; w < y.w; ++w) {
                        const float *a = &x.d[((size_t(n) * size_t(x.h) + 2 * size_t(h)) * size_t(x.w) + 2 * size_t(w)) * C];
                        float *o = &y.d[((size_t(n) * size_t(y.h) + size_t(h)) * size_t(y.w) + size_t(w)) * C];
                        for (size_t c = 0; c < C; ++c)
                            o[c] = op.kind == Kind::maxPool
                                       ? std::max(std::max(a[c], a[C + c]), std::max(a[row + c], a[row + C + c]))
                                       : (a[c] + a[C + c] + a[row + c] + a[row + C + c]) * 0.25f;
                    }
            break;
        }
        case Kind::resize: // nearest, 2x
            y.shape(pool, x.n, x.c, x.h * 2, x.w * 2);
            for (int n = 0; n < y.n; ++n)
                for (int h = 0; h < y.h; ++h)
                    for (int w = 0; w < y.w; ++w)
                        std::memcpy(&y.d[((size_t(n) * size_t(y.h) + size_t(h)) * size_t(y.w) + size_t(w)) * size_t(y.c)],
                                    &x.d[((size_t(n) * size_t(x.h) + size_t(h / 2)) * size_t(x.w) + size_t(w / 2)) * size_t(x.c)],
                                    size_t(x.c) * 4);
            break;
        }
        t[size_t(op.out)] = std::move(y);
    }
};

bool LeaderNet::nativeBf16() {
    // The ISA values are masks: each includes the bits of those it extends.
    const auto isa = unsigned(dnnl::get_effective_cpu_isa()), bf16 = unsigned(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
}

LeaderNet::LeaderNet(const void *bytes, size_t size, Precision precision) : impl_(std::make_unique<Impl>()) {
    if (precision == Precision::bf16 && !nativeBf16()) throw std::runtime_error("learned extractor: this CPU has no bfloat16 products");
    impl_->halfProducts = precision == Precision::bf16;
    // Each network keeps its own prepared convolutions; oneDNN's process-wide cache of them would
    // keep their kernels after the daemon frees an idle network (print_learned.cpp).
    dnnl::set_primitive_cache_capacity(0);
    onnx::ModelProto model;
    if (size > size_t(INT32_MAX) || !model.ParseFromArray(bytes, int(size))) throw std::runtime_error("learned extractor: not an ONNX model");
    impl_->build(model);
}

LeaderNet::~LeaderNet() = default;

void LeaderNet::forget() {
    for (Op &op : impl_->ops) op.prepared.reset();
    impl_->pool.free.clear();
    impl_->pool.free.shrink_to_fit();
}

cv::Mat LeaderNet::run(const cv::Mat &input) {
    if (input.type() != CV_32F || input.dims != 2 || input.rows % 32 || input.cols % 32 || input.empty())
        throw std::runtime_error("learned extractor: input not H x W float, sides multiples of 32");
    omp_set_num_threads(std::max(1, cv::getNumThreads()));
    Impl &m = *impl_;
    std::vector<Tensor> t(size_t(m.slots));
    Tensor &in = t[size_t(m.input)];
    in.shape(m.pool, 1, 1, input.rows, input.cols);
    for (int y = 0; y < input.rows; ++y) std::memcpy(&in.d[size_t(y) * size_t(input.cols)], input.ptr<float>(y), size_t(input.cols) * 4);
    for (int k = 0; k < int(m.ops.size()); ++k) {
        m.step(k, t);
        for (int s : m.ops[size_t(k)].in)
            if (m.lastUse[size_t(s)] == k && s != m.output) m.pool.give(std::move(t[size_t(s)].d));
    }
    m.stream.wait();
    m.plain(t[size_t(m.output)]);
    const Tensor &out = t[size_t(m.output)];
    if (out.n != 1 || out.c != 5 || out.h != input.rows || out.w != input.cols) throw std::runtime_error("learned extractor: unexpected output shape");
    int shape[] = {1, 5, out.h, out.w};
    cv::Mat maps(4, shape, CV_32F);
    float *dst = maps.ptr<float>();
    const size_t plane = size_t(out.h) * size_t(out.w);
    for (size_t p = 0; p < plane; ++p)
        for (size_t c = 0; c < 5; ++c) dst[c * plane + p] = out.d[p * 5 + c];
    return maps;
}

} // namespace cvis
