#!/usr/bin/env python3
"""Makes the corpus of quantized and reduced-precision models from the fp32 exports, with ONNX
Runtime's outputs as references.

Run with the ORT venv's python (scripts/ort_venv.sh makes .cache/ort-venv):

    .cache/ort-venv/bin/python tests/models/make_quant_corpus.py FP32_DIR OUT_DIR [--only A,B,...]
        [--force] [--no-negatives] [--list]

FP32_DIR holds tests/models/export_models.py's output (resnet50, mobilenet_v2, bert_like: model.onnx
and test_data_set_0). The variants are made from those models; MobileNetV2's and the encoder's first
get normalisation parameters under which their outputs depend on their input (condition_cnn,
condition_layernorm; OUT_DIR/_work keeps these fp32 sources). For each variant the script writes
OUT_DIR/VARIANT/model.onnx, test_data_set_0 (the fp32 model's inputs, as the variant's input types;
outputs recorded from ORT's CPU EP, or for bf16, which ORT does not run, the fp32 source's), meta.json,
and for some variants corrupt/model.onnx (one scale or weight x1.5: the tests' negative check).
OUT_DIR/corpus.json gathers the meta.json files. A variant whose meta.json exists (same recipe, same
ORT, same export) is kept. --only takes variant names or source model names. Everything is
deterministic (fixed seeds).

Per variant the script measures the spread of legitimate results (ORT's optimisation levels, 1 vs 2
threads; for fp16 and bf16 the fp32 model with every value rounded to that type), and fails when the
spread exceeds the tolerance of the variant's family and model, or when the corrupted model's ORT
output stays within it: the tolerance must cover the spread and still catch a wrong scale.
"""
import argparse
import collections
import copy
import glob
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import types

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Bump when a recipe changes: cached variants made by another recipe are rebuilt.
RECIPE_VERSION = 5

# The metric: per output, max |got - ref| / max |ref|; a variant's value is the largest over its
# outputs. Tolerances per family (docs/quantization.md gives the measurements behind them).
METRIC = "max |got - ref| / max |ref|, largest over the outputs"
TOLERANCES = {
    "int8-static": {"resnet50": 0.06, "mobilenet_v2": 0.15},
    "int8-qop": {"mobilenet_v2": 0.15},
    "int8-dynamic": {"bert_like": 0.1},
    "fp16": {"mobilenet_v2": 0.04, "bert_like": 0.01},
    "bf16": {"mobilenet_v2": 0.3, "bert_like": 0.08},
}
# A spread above tolerance / WARN_FRACTION draws a warning (the margin is thin).
WARN_FRACTION = 1.5
CALIBRATION_IMAGES = 4
CORRUPT_FACTOR = 1.5
ZERO_POINT_SHIFT = 4


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------- ONNX Runtime

def ort_session(model, opt_level="all", threads=1):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    src = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def ort_run(model, feeds, opt_level="all", threads=1):
    s = ort_session(model, opt_level, threads)
    names = [i.name for i in s.get_inputs()]
    return s.run(None, dict(zip(names, feeds)))


def metric(got, ref):
    """max |got - ref| / max |ref| per output, the largest over the outputs."""
    worst = 0.0
    for g, r in zip(got, ref):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        if g.shape != r.shape:
            return float("inf")
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        diff = float(np.max(np.abs(g - r))) if r.size else 0.0
        if not np.isfinite(diff):
            return float("inf")
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst


def mean_metric(got, ref):
    """mean |got - ref| / mean |ref|, the largest over the outputs (reported, not tested)."""
    worst = 0.0
    for g, r in zip(got, ref):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        den = float(np.mean(np.abs(r))) if r.size else 0.0
        num = float(np.mean(np.abs(g - r))) if r.size else 0.0
        worst = max(worst, num / den if den > 0 else num)
    return worst


# ---------------------------------------------------------------- graph helpers

def load(path):
    return onnx.load(path)


def init_map(model):
    return {t.name: t for t in model.graph.initializer}


def producers(model):
    return {o: n for n in model.graph.node for o in n.output}


def op_counts(model):
    c = collections.Counter()
    for n in model.graph.node:
        c[(n.domain + "::" if n.domain not in ("", "ai.onnx") else "") + n.op_type] += 1
    return dict(sorted(c.items()))


def replace_initializer(model, name, array, new_name):
    """Adds initializer new_name = array (same type as name's) and returns its name."""
    old = init_map(model)[name]
    t = numpy_helper.from_array(array.astype(numpy_helper.to_array(old).dtype), new_name)
    model.graph.initializer.append(t)
    return new_name


def separate_graph_outputs(model):
    """Where a graph output is also read by nodes, the producer writes an internal value and an
    Identity makes the output. onnxconverter-common's keep_io_types renames an output's producer
    but not its other readers, which leaves them reading the fp32 output (a type error)."""
    g = model.graph
    read = {i for n in g.node for i in n.input}
    for out in g.output:
        if out.name not in read:
            continue
        internal = out.name + "_internal"
        for n in g.node:
            n.input[:] = [internal if i == out.name else i for i in n.input]
            n.output[:] = [internal if o == out.name else o for o in n.output]
        g.node.append(helper.make_node("Identity", [internal], [out.name], name=out.name + "_identity"))
    return model


# ---------------------------------------------------------------- bf16

# Ops of the source models whose semantics do not change from opset 17 to 22 (the versions in
# between add types, bfloat16 among them: Conv, MaxPool and GlobalAveragePool take bf16 from 22).
OPSET22_SAFE = {
    "Add", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Div", "Equal", "Erf",
    "Expand", "Flatten", "Gather", "Gemm", "GlobalAveragePool", "Identity", "LayerNormalization",
    "MatMul", "MaxPool", "Mul", "Not", "Relu", "Reshape", "Shape", "Slice", "Softmax", "Sqrt", "Sub",
    "Tanh", "Transpose", "Unsqueeze", "Where",
}


def bf16_tensor(t):
    import ml_dtypes
    a = numpy_helper.to_array(t).astype(np.float32).astype(ml_dtypes.bfloat16)
    return numpy_helper.from_array(a, t.name)


def to_bfloat16(model):
    """float -> bfloat16 everywhere (initializers, Constant values, Cast targets, value types), with
    Casts at the float inputs and outputs so the model's interface stays float (as keep_io_types).
    The opset goes to 22, the first where Conv and the pooling ops take bfloat16."""
    m = copy.deepcopy(model)
    g = m.graph
    ops = {n.op_type for n in g.node if n.domain in ("", "ai.onnx")}
    if not ops <= OPSET22_SAFE:
        raise RuntimeError(f"bf16: ops not known to be opset-22 safe: {sorted(ops - OPSET22_SAFE)}")
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = max(o.version, 22)
    m.ir_version = max(m.ir_version, 10)
    F, B = TensorProto.FLOAT, TensorProto.BFLOAT16
    for i, t in enumerate(g.initializer):
        if t.data_type == F:
            g.initializer[i].CopyFrom(bf16_tensor(t))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == F:
                a.t.CopyFrom(bf16_tensor(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == F:
                a.i = B
    for v in list(g.value_info) + list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == F:
            v.type.tensor_type.elem_type = B
    # float interface: Cast in, Cast out
    casts_in, casts_out = [], []
    for v in g.input:
        if v.type.tensor_type.elem_type != B:
            continue
        v.type.tensor_type.elem_type = F
        inner = v.name + "_bf16"
        for n in g.node:
            n.input[:] = [inner if i == v.name else i for i in n.input]
        casts_in.append(helper.make_node("Cast", [v.name], [inner], to=B, name=v.name + "_to_bf16"))
    for v in g.output:
        if v.type.tensor_type.elem_type != B:
            continue
        v.type.tensor_type.elem_type = F
        inner = v.name + "_bf16"
        for n in g.node:
            n.input[:] = [inner if i == v.name else i for i in n.input]
            n.output[:] = [inner if o == v.name else o for o in n.output]
        casts_out.append(helper.make_node("Cast", [inner], [v.name], to=F, name=v.name + "_to_float"))
    nodes = casts_in + list(g.node) + casts_out
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    onnx.checker.check_model(m)
    return m


# Fused epilogues: a value an op of the first set writes and only one op of the second reads
# stays unrounded with fused=True, as where a runtime fuses the two.
FUSE_PRODUCERS = {"Conv", "MatMul", "Gemm", "Add", "Mul", "Div", "Erf"}
FUSE_CONSUMERS = {"Relu", "Clip", "Add", "Mul", "Div", "Erf", "Tanh"}


def storage_emulation(model, elem, fused=False):
    """The fp32 model computing as a runtime with fp16 or bf16 storage (elem) and fp32 arithmetic
    does: weights rounded to elem, and every float value a node writes rounded to elem (Cast to elem
    and back), except, with fused, a value passed from op to op as in a fused epilogue. ORT runs it
    (ORT_DISABLE_ALL keeps every Cast pair). ORT's own fp16 kernels round less: its CPU EP computes
    most fp16 ops in fp32 and drops the Casts between them, so the fp16 family's spread takes this
    emulation too; for bf16, which ORT does not run, it is the spread."""
    import ml_dtypes
    m = onnx.shape_inference.infer_shapes(copy.deepcopy(model))
    g = m.graph
    F, B = TensorProto.FLOAT, elem
    np_elem = ml_dtypes.bfloat16 if elem == TensorProto.BFLOAT16 else np.float16
    for i, t in enumerate(g.initializer):
        if t.data_type == F:
            a = numpy_helper.to_array(t).astype(np_elem).astype(np.float32)
            g.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    types = {v.name: v.type.tensor_type.elem_type for v in list(g.value_info) + list(g.output) + list(g.input)}
    outs = {o.name for o in g.output}
    readers = collections.defaultdict(list)
    for n in g.node:
        for i in n.input:
            readers[i].append(n)
    nodes = []
    for n in g.node:
        nodes.append(n)
        for k, o in enumerate(n.output):
            if types.get(o) != F:
                continue
            if fused and o not in outs and n.op_type in FUSE_PRODUCERS and len(readers[o]) == 1 \
                    and readers[o][0].op_type in FUSE_CONSUMERS:
                continue
            raw = o + "_unrounded"
            n.output[k] = raw
            mid = o + "_rounded"
            nodes.append(helper.make_node("Cast", [raw], [mid], to=B))
            nodes.append(helper.make_node("Cast", [mid], [o], to=F))
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    assert outs == {o.name for o in g.output}
    return m


# ---------------------------------------------------------------- corruption (the negative check)

def corrupt(model, family, zero_point_shift=0):
    """A copy of the model with one scale (int8) or one weight tensor (fp16/bf16) multiplied by
    CORRUPT_FACTOR, in the middle of the graph, or (int8, zero_point_shift) the zero point that goes
    with that scale moved by that many steps; returns (model, description)."""
    m = copy.deepcopy(model)
    g = m.graph
    inits = init_map(m)
    prod = producers(m)
    f = CORRUPT_FACTOR

    def scaled_copy(node, k, what):
        name = node.input[k]
        arr = numpy_helper.to_array(inits[name]).astype(np.float64) * f
        node.input[k] = replace_initializer(m, name, arr, name + "_corrupt")
        return f"{what} of {node.op_type} '{node.name}' ({name}) x{f}"

    def shifted_copy(node, k, what):
        name = node.input[k]
        arr = numpy_helper.to_array(inits[name])
        info = np.iinfo(arr.dtype)
        shifted = np.clip(arr.astype(np.int64) + zero_point_shift, info.min, info.max)
        node.input[k] = replace_initializer(m, name, shifted, name + "_corrupt")
        return f"{what} of {node.op_type} '{node.name}' ({name}) {zero_point_shift:+d}"

    if family == "int8-static":
        # a DequantizeLinear of an activation (its input written by a QuantizeLinear): the scale
        # (zero point) it reads differs from the one its QuantizeLinear wrote with
        dq = [n for n in g.node if n.op_type == "DequantizeLinear" and n.input[0] in prod
              and prod[n.input[0]].op_type == "QuantizeLinear" and n.input[1] in inits]
        n = dq[len(dq) // 2]
        if zero_point_shift:
            return m, shifted_copy(n, 2, "activation zero point")
        return m, scaled_copy(n, 1, "activation scale")
    if family == "int8-qop":
        qc = [n for n in g.node if n.op_type == "QLinearConv" and n.input[1] in inits]
        n = qc[len(qc) // 2]
        if zero_point_shift:
            return m, shifted_copy(n, 2, "input zero point (x_zero_point)")
        return m, scaled_copy(n, 1, "input scale (x_scale)")
    if family == "int8-dynamic":
        # the weight scale that multiplies the middle MatMulInteger's result: ORT writes
        # Mul(a_scale, w_scale) with a_scale from the DynamicQuantizeLinear of input A
        target = [n for n in g.node if n.op_type == "MatMulInteger"]
        target = target[len(target) // 2]
        if zero_point_shift:
            return m, shifted_copy(target, 3, "weight zero point")
        a_scale = prod[target.input[0]].output[1]
        n = next(n for n in g.node if n.op_type == "Mul" and a_scale in n.input
                 and any(i in inits for i in n.input))
        return m, scaled_copy(n, next(k for k, i in enumerate(n.input) if i in inits), "weight scale")
    # fp16 / bf16: one weight of the middle Conv/MatMul/Gemm
    mats = [n for n in g.node if n.op_type in ("Conv", "MatMul", "Gemm") and n.input[1] in inits]
    n = mats[len(mats) // 2]
    name = n.input[1]
    t = inits[name]
    if t.data_type == TensorProto.BFLOAT16:
        import ml_dtypes
        arr = (numpy_helper.to_array(t).astype(np.float32) * f).astype(ml_dtypes.bfloat16)
        new = numpy_helper.from_array(arr, name + "_corrupt")
        g.initializer.append(new)
        n.input[1] = new.name
    else:
        n.input[1] = replace_initializer(m, name, numpy_helper.to_array(t).astype(np.float64) * f, name + "_corrupt")
    return m, f"weight of {n.op_type} '{n.name}' ({name}) x{f}"


# ---------------------------------------------------------------- sources

def condition_cnn(model, seed=2000, images=8):
    """Every Conv's output renormalised with statistics from data, as a BatchNormalization with
    data-derived statistics (folded into the Conv, as the exporter folds the BN that follows each
    Conv of ResNet-50 and MobileNetV2): W' = W * g / std, b' = (b - mean) * g / std + beta, with
    g ~ U(0.75, 1.25), beta ~ 0.1 N(0, 1), the Convs taken in order. The exports' BN layers have
    random running statistics that do not match the activations: through MobileNetV2 the input's
    signal then fades (its small export's logits move by 2e-7 between two random images), so
    nothing before the last layers could be checked through its output."""
    m = copy.deepcopy(model)
    g = m.graph
    inits = init_map(m)
    convs = [n for n in g.node if n.op_type == "Conv"]
    params = []
    for n in convs:
        params += [i for i in n.input[1:] if i]
    # a copy where the Conv parameters are inputs and every Conv output is an output, batch free
    probe = copy.deepcopy(m)
    pg = probe.graph
    keep = [t for t in pg.initializer if t.name not in set(params)]
    for name in params:
        t = inits[name]
        pg.input.append(helper.make_tensor_value_info(name, t.data_type, list(t.dims)))
    del pg.initializer[:]
    pg.initializer.extend(keep)
    pg.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    for o in pg.output:
        o.type.tensor_type.shape.dim[0].dim_param = "N"
    for n in convs:
        pg.output.append(helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None))
    del pg.value_info[:]
    sess = ort_session(probe, "disable", 2)
    rng = np.random.default_rng(seed)
    shape = [d.dim_value for d in g.input[0].type.tensor_type.shape.dim]
    x = rng.uniform(-1, 1, [images] + shape[1:]).astype(np.float32)
    values = {name: numpy_helper.to_array(inits[name]).copy() for name in params}
    for n in convs:
        feeds = {g.input[0].name: x}
        feeds.update(values)
        y = sess.run([n.output[0]], feeds)[0].astype(np.float64)
        mean = y.mean(axis=(0, 2, 3))
        std = y.std(axis=(0, 2, 3)) + 1e-5
        c = len(mean)
        gamma = rng.uniform(0.75, 1.25, c)
        beta = rng.normal(0, 0.1, c)
        w = values[n.input[1]].astype(np.float64)
        values[n.input[1]] = (w * (gamma / std).reshape([c] + [1] * (w.ndim - 1))).astype(np.float32)
        if len(n.input) > 2 and n.input[2]:
            b = values[n.input[2]].astype(np.float64)
        else:
            raise RuntimeError(f"Conv {n.name} has no bias to take the folded normalisation")
        values[n.input[2]] = ((b - mean) * gamma / std + beta).astype(np.float32)
    for i, t in enumerate(g.initializer):
        if t.name in values:
            g.initializer[i].CopyFrom(numpy_helper.from_array(values[t.name], t.name))
    return m


def condition_layernorm(model, seed=4000):
    """Every LayerNormalization's scale drawn from U(0.75, 1.25) and its bias from 0.1 N(0, 1) (as
    export_models.py draws BatchNorm's), instead of the export's N(0, 0.02): with those, each layer's
    output is the small bias plus a signal scaled by 0.02 that the next normalisation flattens, and
    the full-size encoder's outputs do not depend on its input (they move by 2e-6 when the token ids
    are permuted), nor on any one layer's weights."""
    m = copy.deepcopy(model)
    inits = init_map(m)
    rng = np.random.default_rng(seed)
    for n in m.graph.node:
        if n.op_type != "LayerNormalization":
            continue
        c = int(np.prod(inits[n.input[1]].dims))
        for k, arr in ((1, rng.uniform(0.75, 1.25, c)), (2, rng.normal(0, 0.1, c))):
            t = inits[n.input[k]]
            t.CopyFrom(numpy_helper.from_array(arr.astype(np.float32).reshape(list(t.dims)), t.name))
    return m


def file_sha1(path):
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def source(ctx, name):
    """The fp32 model a variant is made from: the export, its CNNs conditioned (condition_cnn);
    returns (path, sha1 of the export)."""
    if name in ctx.sources:
        return ctx.sources[name]
    export = os.path.join(ctx.fp32, name, "model.onnx")
    sha = file_sha1(export)
    if name not in CONDITIONED:
        ctx.sources[name] = (export, sha)
        return ctx.sources[name]
    path = os.path.join(ctx.work, f"{name}_fp32.onnx")
    stamp = path + ".sha1"
    if not (os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == f"{sha} {RECIPE_VERSION}"):
        t0 = time.time()
        onnx.save(CONDITIONED[name](load(export)), path)
        with open(stamp, "w") as f:
            f.write(f"{sha} {RECIPE_VERSION}")
        log(f"{name}: conditioned in {time.time() - t0:.1f} s")
    ctx.sources[name] = (path, sha)
    return ctx.sources[name]


# MobileNetV2's and the encoder's exports lose their input (see condition_cnn and
# condition_layernorm); ResNet-50's keeps it (its logits move by 4% between two random images) and
# is used as exported.
CONDITIONED = {"mobilenet_v2": condition_cnn, "bert_like": condition_layernorm}


# ---------------------------------------------------------------- recipes

def quant_type(s):
    from onnxruntime.quantization import QuantType
    return {"u8": QuantType.QUInt8, "s8": QuantType.QInt8}[s]


def preprocessed(ctx, name):
    """quant_pre_process (shape inference, ORT's basic optimisations) of a source, made once."""
    src, sha = source(ctx, name)
    path = os.path.join(ctx.work, name + "_pre.onnx")
    stamp = path + ".sha1"
    if not (os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == f"{sha} {RECIPE_VERSION}"):
        from onnxruntime.quantization.shape_inference import quant_pre_process
        tmp = path + ".tmp.onnx"
        quant_pre_process(src, tmp)
        os.replace(tmp, path)
        with open(stamp, "w") as f:
            f.write(f"{sha} {RECIPE_VERSION}")
    return path


def make_static(ctx, v, out):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static
    r = v["recipe"]
    src = preprocessed(ctx, v["source"])
    m = onnx.load(src, load_external_data=False)
    inp = m.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]

    class Reader(CalibrationDataReader):
        """CALIBRATION_IMAGES images of uniform(-1, 1) values (as the test input), a fixed seed."""

        def __init__(self):
            rng = np.random.default_rng(1000)
            self.data = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(CALIBRATION_IMAGES)]
            self.i = 0

        def get_next(self):
            self.i += 1
            return {inp.name: self.data[self.i - 1]} if self.i <= len(self.data) else None

        def rewind(self):
            self.i = 0

    quantize_static(src, out, Reader(),
                    quant_format=QuantFormat.QOperator if r["format"] == "QOperator" else QuantFormat.QDQ,
                    per_channel=r["per_channel"], activation_type=quant_type(r["activations"]),
                    weight_type=quant_type(r["weights"]))


def make_dynamic(ctx, v, out):
    from onnxruntime.quantization import quantize_dynamic
    r = v["recipe"]
    quantize_dynamic(source(ctx, v["source"])[0], out, weight_type=quant_type(r["weights"]),
                     per_channel=r["per_channel"])


def make_fp16(ctx, v, out):
    from onnxconverter_common import float16
    r = v["recipe"]
    m = separate_graph_outputs(load(source(ctx, v["source"])[0]))
    kw = {}
    if r.get("op_block_list"):
        kw["op_block_list"] = list(float16.DEFAULT_OP_BLOCK_LIST) + r["op_block_list"]
    h = float16.convert_float_to_float16(m, keep_io_types=r["keep_io_types"], **kw)
    onnx.save(h, out)


def make_bf16(ctx, v, out):
    onnx.save(to_bfloat16(load(source(ctx, v["source"])[0])), out)


MAKERS = {"int8-static": make_static, "int8-qop": make_static, "int8-dynamic": make_dynamic,
          "fp16": make_fp16, "bf16": make_bf16}


def variants():
    v = []
    for src in ("resnet50", "mobilenet_v2"):
        for act in ("u8", "s8"):
            for pc in (False, True):
                # negatives: one corrupted model per activation type on MobileNetV2, one on ResNet-50
                neg = (src == "mobilenet_v2" and act == "u8" and pc) or (src == "mobilenet_v2" and act == "s8" and not pc) \
                    or (src == "resnet50" and act == "u8" and not pc)
                v.append(dict(name=f"{src}_qdq_{act}s8" + ("_pc" if pc else ""), source=src, family="int8-static",
                              negative=neg, recipe=dict(tool="onnxruntime.quantization.quantize_static",
                                                        preprocess="quant_pre_process", format="QDQ",
                                                        activations=act, weights="s8", per_channel=pc,
                                                        calibration=f"{CALIBRATION_IMAGES} uniform(-1,1) images, MinMax")))
    v.append(dict(name="mobilenet_v2_qop", source="mobilenet_v2", family="int8-qop", negative=True,
                  recipe=dict(tool="onnxruntime.quantization.quantize_static", preprocess="quant_pre_process",
                              format="QOperator", activations="u8", weights="s8", per_channel=True,
                              calibration=f"{CALIBRATION_IMAGES} uniform(-1,1) images, MinMax")))
    v.append(dict(name="bert_like_dyn", source="bert_like", family="int8-dynamic", negative=True,
                  recipe=dict(tool="onnxruntime.quantization.quantize_dynamic", weights="s8", per_channel=False)))
    conv = "onnxconverter_common.float16.convert_float_to_float16"
    for src, neg in (("mobilenet_v2", True), ("bert_like", False)):
        v.append(dict(name=f"{src}_fp16", source=src, family="fp16", negative=neg,
                      recipe=dict(tool=conv, keep_io_types=False)))
        v.append(dict(name=f"{src}_fp16_io", source=src, family="fp16", negative=False,
                      recipe=dict(tool=conv, keep_io_types=True)))
    v.append(dict(name="bert_like_fp16_mixed", source="bert_like", family="fp16", negative=True,
                  recipe=dict(tool=conv, keep_io_types=True,
                              op_block_list=["Softmax", "LayerNormalization", "Erf"])))
    for src, neg in (("mobilenet_v2", True), ("bert_like", False)):
        v.append(dict(name=f"{src}_bf16", source=src, family="bf16", negative=neg,
                      recipe=dict(tool="tests/models/make_quant_corpus.py to_bfloat16", keep_io_types=True,
                                  opset=22)))
    return v


# ---------------------------------------------------------------- the corpus

def read_inputs(d):
    return [onnx.load_tensor(p) for p in sorted(glob.glob(os.path.join(d, "test_data_set_0", "input_*.pb")))]


def feeds_for(model, tensors):
    """The fp32 inputs as the model's input types (fp16 where the model takes fp16)."""
    elem = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    feeds = []
    for i, t in zip(model.graph.input, tensors):
        a = numpy_helper.to_array(t)
        want = onnx.helper.tensor_dtype_to_np_dtype(elem[i.name])
        feeds.append((i.name, a.astype(want)))
    return feeds


def other_inputs(tensors):
    """Inputs unlike the test's: floats drawn anew, integers (token ids) permuted."""
    rng = np.random.default_rng(3000)
    out = []
    for t in tensors:
        a = numpy_helper.to_array(t)
        if a.dtype.kind == "f":
            out.append(rng.uniform(-1, 1, a.shape).astype(a.dtype))
        elif t.name == "attention_mask":
            out.append(a)
        else:
            out.append(rng.permutation(a.ravel()).reshape(a.shape))
    return out


def build(ctx, v, force):
    d = os.path.join(ctx.out, v["name"])
    meta_path = os.path.join(d, "meta.json")
    ort_version = ctx.ort.__version__
    src_path, src_sha = source(ctx, v["source"])
    if not force and os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("recipe_version") == RECIPE_VERSION and meta.get("onnxruntime") == ort_version \
                and meta.get("source_sha1") == src_sha \
                and (meta["negative"]["model"] or not (v["negative"] and ctx.negatives)):
            log(f"{v['name']}: present")
            if meta["tolerance"]["value"] != TOLERANCES[v["family"]][v["source"]]:
                meta["tolerance"] = dict(metric=METRIC, value=TOLERANCES[v["family"]][v["source"]])
                write_json(meta_path, meta)
            return meta, True
    t0 = time.time()
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    model_path = os.path.join(d, "model.onnx")
    with tempfile.TemporaryDirectory(dir=ctx.work) as tmp:
        tmp_model = os.path.join(tmp, "model.onnx")
        MAKERS[v["family"]](ctx, v, tmp_model)
        shutil.move(tmp_model, model_path)
    make_s = time.time() - t0
    model = load(model_path)
    src_dir = os.path.join(ctx.fp32, v["source"])
    src_model = load(src_path)
    in_tensors = read_inputs(src_dir)
    feeds = feeds_for(model, in_tensors)
    arrays = [a for _, a in feeds]
    for k, (name, a) in enumerate(feeds):
        onnx.save_tensor(numpy_helper.from_array(a, name), os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
    fp32_ref = ort_run(src_model, [numpy_helper.to_array(t) for t in in_tensors])
    tol = TOLERANCES[v["family"]][v["source"]]
    meta = dict(name=v["name"], family=v["family"], source=v["source"], source_sha1=src_sha,
                source_conditioned=v["source"] in CONDITIONED, recipe=v["recipe"],
                recipe_version=RECIPE_VERSION, onnxruntime=ort_version, onnx=onnx.__version__,
                tolerance=dict(metric=METRIC, value=tol))
    # the reference: ORT's CPU EP, all optimisations, 1 thread
    try:
        ref = ort_run(model, arrays, "all", 1)
        meta["reference"] = f"onnxruntime {ort_version} CPU EP on this model, ORT_ENABLE_ALL, 1 thread"
        runnable = True
    except Exception as e:  # noqa: BLE001 - ORT cannot run the model (bf16): the fp32 source's output
        msg = str(e).splitlines()[0][:300]
        ref = fp32_ref
        meta["reference"] = (f"onnxruntime {ort_version} CPU EP on the fp32 source model, ORT_ENABLE_ALL, 1 thread "
                             f"(ORT cannot run this model: {msg})")
        runnable = False
    out_names = [o.name for o in model.graph.output]
    for k, (name, y) in enumerate(zip(out_names, ref)):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(y), name),
                         os.path.join(d, "test_data_set_0", f"output_{k}.pb"))
    # the spread of legitimate results: ORT's optimisation levels and threads, fp16/bf16 storage
    spread = {}
    if runnable:
        for label, lvl, th in (("ORT_DISABLE_ALL, 1 thread", "disable", 1), ("ORT_ENABLE_BASIC, 1 thread", "basic", 1),
                               ("ORT_ENABLE_ALL, 2 threads", "all", 2)):
            spread[label] = metric(ort_run(model, arrays, lvl, th), ref)
    else:
        spread["fp32 ORT_DISABLE_ALL, 1 thread"] = metric(ort_run(src_model, arrays, "disable", 1), ref)
    if v["family"] in ("fp16", "bf16"):
        # the fp32 model with every value rounded to fp16/bf16 (a runtime that stores them), against the reference
        elem = TensorProto.FLOAT16 if v["family"] == "fp16" else TensorProto.BFLOAT16
        emu_in = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]
        for label, fused, lvl, th in (
                (f"{v['family']}-storage emulation, ORT_DISABLE_ALL, 1 thread", False, "disable", 1),
                (f"{v['family']}-storage emulation, fused epilogues, ORT_DISABLE_ALL, 1 thread", True, "disable", 1)):
            spread[label] = metric(ort_run(storage_emulation(src_model, elem, fused), emu_in, lvl, th), ref)
    meta["spread"] = spread
    meta["spread_max"] = max(spread.values())
    meta["vs_fp32"] = dict(max_rel=metric(ref, fp32_ref), mean_rel=mean_metric(ref, fp32_ref))
    # how much the fp32 source's outputs depend on its input: another input's against the test's
    meta["source_input_sensitivity"] = metric(ort_run(src_model, other_inputs(in_tensors)), fp32_ref)
    # the negative check: one scale (or weight) wrong, ORT's output against the reference
    bad, what = corrupt(model, v["family"])
    if runnable:
        bad_out = ort_run(bad, arrays, "all", 1)
        measured_on = "this model corrupted, ORT_ENABLE_ALL, 1 thread"
    else:
        bad_out = ort_run(storage_emulation(corrupt(src_model, "fp32")[0], TensorProto.BFLOAT16), arrays, "disable", 1)
        measured_on = "the bf16-storage emulation of the fp32 model with the same weight corrupted"
    meta["negative"] = dict(corruption=what, ort_metric=metric(bad_out, ref), ort_measured_on=measured_on, model=None)
    if v["family"].startswith("int8"):
        # reported, not tested: the same node's zero point a few steps off
        zp, zp_what = corrupt(model, v["family"], ZERO_POINT_SHIFT)
        meta["negative"]["zero_point"] = dict(corruption=zp_what, ort_metric=metric(ort_run(zp, arrays, "all", 1), ref))
    if v["negative"] and ctx.negatives:
        os.makedirs(os.path.join(d, "corrupt"))
        onnx.save(bad, os.path.join(d, "corrupt", "model.onnx"))
        meta["negative"]["model"] = "corrupt/model.onnx"
    meta["inputs"] = [dict(name=n, dtype=str(a.dtype), shape=list(a.shape)) for n, a in feeds]
    meta["outputs"] = [dict(name=n, dtype=str(np.asarray(y).dtype), shape=list(np.asarray(y).shape))
                       for n, y in zip(out_names, ref)]
    meta["ops"] = op_counts(model)
    meta["model_bytes"] = os.path.getsize(model_path)
    meta["make_seconds"] = round(make_s, 1)
    meta["total_seconds"] = round(time.time() - t0, 1)
    write_json(meta_path, meta)
    return meta, False


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def check(meta):
    """Errors (the tolerance does not cover ORT's spread, or does not catch the corruption) and warnings."""
    tol = meta["tolerance"]["value"]
    errors, warnings = [], []
    if meta["spread_max"] > tol:
        errors.append(f"the spread {meta['spread_max']:.3g} exceeds the tolerance {tol:g}")
    elif meta["spread_max"] * WARN_FRACTION > tol:
        warnings.append(f"the spread {meta['spread_max']:.3g} is above 1/{WARN_FRACTION:g} of the tolerance {tol:g}")
    if not meta["negative"]["ort_metric"] > tol:
        errors.append(f"the corrupted model ({meta['negative']['corruption']}) is within the tolerance: "
                      f"{meta['negative']['ort_metric']:.3g} <= {tol:g}")
    return errors, warnings


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fp32_dir", nargs="?")
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--only", default="", help="variant names or source model names, comma-separated")
    ap.add_argument("--force", action="store_true", help="remake variants already present")
    ap.add_argument("--no-negatives", action="store_true", help="do not save the corrupted models")
    ap.add_argument("--list", action="store_true", help="list the variants and exit")
    a = ap.parse_args()
    # the quantizer's advice and progress lines (it logs through the root logger)
    logging.getLogger().setLevel(logging.ERROR)
    vs = variants()
    if a.list:
        for v in vs:
            print(f"{v['name']:<24} {v['family']:<13} {v['source']}")
        return 0
    if not a.out_dir:
        ap.error("FP32_DIR and OUT_DIR are required")
    only = set(filter(None, a.only.split(",")))
    known = {v["name"] for v in vs} | {v["source"] for v in vs}
    if only - known:
        print(f"unknown variants or models: {', '.join(sorted(only - known))}", file=sys.stderr)
        return 2
    vs = [v for v in vs if not only or v["name"] in only or v["source"] in only]
    import onnxruntime
    ctx = types.SimpleNamespace()
    ctx.ort = onnxruntime
    ctx.fp32 = a.fp32_dir
    ctx.out = a.out_dir
    ctx.work = os.path.join(a.out_dir, "_work")
    ctx.negatives = not a.no_negatives
    ctx.sources = {}
    os.makedirs(ctx.work, exist_ok=True)
    failed = 0
    for v in vs:
        if not os.path.exists(os.path.join(ctx.fp32, v["source"], "model.onnx")):
            log(f"{v['name']}: no {v['source']} in {ctx.fp32}")
            failed += 1
            continue
        try:
            meta, cached = build(ctx, v, a.force)
        except Exception as e:  # noqa: BLE001 - report the variant and go on with the others
            log(f"{v['name']}: FAILED to make: {type(e).__name__}: {e}")
            failed += 1
            continue
        errors, warnings = check(meta)
        if not cached:
            log(f"{v['name']}: made in {meta['total_seconds']} s ({meta['model_bytes'] / 1e6:.1f} MB), "
                f"spread {meta['spread_max']:.3g}, corrupted {meta['negative']['ort_metric']:.3g}, "
                f"tolerance {meta['tolerance']['value']:g}; vs fp32 {meta['vs_fp32']['max_rel']:.3g}")
        for w in warnings:
            log(f"{v['name']}: warning: {w}")
        for e in errors:
            log(f"{v['name']}: ERROR: {e}")
        failed += bool(errors)
    corpus = {}
    for p in sorted(glob.glob(os.path.join(ctx.out, "*", "meta.json"))):
        with open(p) as f:
            m = json.load(f)
        corpus[m["name"]] = m
    with open(os.path.join(ctx.out, "corpus.json"), "w") as f:
        json.dump(dict(metric=METRIC, tolerances=TOLERANCES, variants=corpus), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
