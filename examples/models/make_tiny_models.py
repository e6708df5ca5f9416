#!/usr/bin/env python3
"""Makes the small example models that ship with onyx, with reference outputs.

Run with Debian's python3 (python3-onnx, python3-numpy, python3-torch):
    /usr/bin/python3 examples/models/make_tiny_models.py [NAME...]
Writes <name>.onnx and <name>_test_data/{input_0,output_0}.pb beside this script, for every model
or only those named.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name, inputs, outputs):
    # Debian's onnx (1.12) stops at opset 17: newer models are checked only by a newer onnx.
    if max(o.version for o in model.opset_import) <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))
    d = os.path.join(HERE, name + "_test_data")
    os.makedirs(d, exist_ok=True)
    for i, (n, v) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(d, f"input_{i}.pb"))
    for i, (n, v) in enumerate(outputs):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(d, f"output_{i}.pb"))


def tiny_normalize():
    """y = Transpose(Relu((x - mean) * inv_std) * gamma + beta): per-feature normalisation."""
    rng = np.random.default_rng(7)
    f = 6
    mean = rng.standard_normal(f).astype(np.float32)
    inv_std = (1.0 / (0.5 + rng.random(f))).astype(np.float32)
    gamma = rng.standard_normal(f).astype(np.float32)
    beta = rng.standard_normal(f).astype(np.float32)
    nodes = [
        helper.make_node("Sub", ["x", "mean"], ["c"], name="center"),
        helper.make_node("Mul", ["c", "inv_std"], ["n"], name="scale"),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "gamma"], ["g"], name="gain"),
        helper.make_node("Add", ["g", "beta"], ["b"], name="shift"),
        helper.make_node("Transpose", ["b"], ["y"], perm=[1, 0], name="features_first"),
    ]
    graph = helper.make_graph(
        nodes, "tiny_normalize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", f])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [f, "batch"])],
        [numpy_helper.from_array(a, n) for n, a in
         [("mean", mean), ("inv_std", inv_std), ("gamma", gamma), ("beta", beta)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onyx-examples")
    model.ir_version = 8
    x = rng.standard_normal((4, f)).astype(np.float32)
    y = (np.maximum((x - mean) * inv_std, 0) * gamma + beta).T.copy()
    save(model, "tiny_normalize", [("x", x)], [("y", y)])


def tiny_ml():
    """A scikit-learn style pipeline in ai.onnx.ml: picks feature 2 of each row, thresholds it at
    0.5 and names the outcome: y = LabelEncoder(Cast(Binarizer(ArrayFeatureExtractor(x, [2])))),
    "low" or "high" per row."""
    ml = "ai.onnx.ml"
    nodes = [
        helper.make_node("ArrayFeatureExtractor", ["x", "column"], ["picked"], name="pick", domain=ml),
        helper.make_node("Binarizer", ["picked"], ["above"], name="threshold", domain=ml, threshold=0.5),
        helper.make_node("Cast", ["above"], ["flag"], name="to_int", to=TensorProto.INT64),
        helper.make_node("LabelEncoder", ["flag"], ["y"], name="name_it", domain=ml, keys_int64s=[0, 1],
                         values_strings=["low", "high"], default_string="?"),
    ]
    graph = helper.make_graph(
        nodes, "tiny_ml",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, ["batch", 1])],
        [numpy_helper.from_array(np.array([2], dtype=np.int64), "column")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ml, 2)],
                              producer_name="onyx-examples")
    model.ir_version = 8
    x = np.array([[0.1, 0.2, 0.9, 0.0], [0.5, 0.5, 0.5, 0.5], [1.0, 0.0, 0.2, 3.0]], dtype=np.float32)
    y = np.where(x[:, 2:3] > 0.5, "high", "low").astype(object)
    save(model, "tiny_ml", [("x", x)], [("y", y)])


def tiny_classifier():
    """A classifier as scikit-learn converters export it by default: LinearClassifier (three
    classes, softmax scores) whose scores ZipMap turns into one map per row, label -> probability.
    No test data: its second output is a sequence of maps (docs/ml-domain.md reads it)."""
    ml = "ai.onnx.ml"
    nodes = [
        helper.make_node("LinearClassifier", ["x"], ["label", "scores"], name="linear", domain=ml,
                         coefficients=[1.0, 0.0, 0.0, 1.0, -1.0, -1.0], intercepts=[0.0, 0.0, 0.0],
                         classlabels_strings=["cat", "dog", "eel"], post_transform="SOFTMAX"),
        helper.make_node("ZipMap", ["scores"], ["probabilities"], name="zip", domain=ml,
                         classlabels_strings=["cat", "dog", "eel"]),
    ]
    prob_type = onnx.TypeProto()
    prob_map = prob_type.sequence_type.elem_type.map_type
    prob_map.key_type = TensorProto.STRING
    prob_map.value_type.tensor_type.elem_type = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "tiny_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2])],
        [helper.make_tensor_value_info("label", TensorProto.STRING, ["batch"]),
         helper.make_value_info("probabilities", prob_type)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ml, 1)],
                              producer_name="onyx-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "tiny_classifier.onnx"))


def decode_image():
    """Image bytes to a normalised NCHW float tensor: ImageDecoder (RGB), Cast, Div by 255,
    Transpose to channels first, Unsqueeze a batch axis. The test image is a 4 x 3 binary PPM."""
    nodes = [
        helper.make_node("ImageDecoder", ["image_bytes"], ["hwc"], name="decode", pixel_format="RGB"),
        helper.make_node("Cast", ["hwc"], ["hwc_float"], name="to_float", to=TensorProto.FLOAT),
        helper.make_node("Div", ["hwc_float", "scale"], ["scaled"], name="scale"),
        helper.make_node("Transpose", ["scaled"], ["chw"], name="channels_first", perm=[2, 0, 1]),
        helper.make_node("Unsqueeze", ["chw", "batch_axis"], ["image"], name="add_batch"),
    ]
    graph = helper.make_graph(
        nodes, "decode_image",
        [helper.make_tensor_value_info("image_bytes", TensorProto.UINT8, ["bytes"])],
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [numpy_helper.from_array(np.array(255.0, np.float32), "scale"),
         numpy_helper.from_array(np.array([0], np.int64), "batch_axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="onyx-examples")
    model.ir_version = 9
    rgb = np.arange(4 * 3 * 3, dtype=np.uint8).reshape(3, 4, 3) * 7
    ppm = np.frombuffer(b"P6\n4 3\n255\n" + rgb.tobytes(), np.uint8)
    y = (rgb.astype(np.float32) / np.float32(255)).transpose(2, 0, 1)[np.newaxis]
    save(model, "decode_image", [("image_bytes", ppm)], [("image", y)])


def tiny_cnn():
    """A small image classifier (Conv, ReLU, MaxPool, GlobalAveragePool, Gemm, Softmax) from torch."""
    import torch
    torch.manual_seed(0)

    class TinyCnn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Sequential(
                torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1))
            self.classifier = torch.nn.Linear(16, 10)

        def forward(self, x):
            return torch.softmax(self.classifier(torch.flatten(self.features(x), 1)), dim=1)

    model = TinyCnn().eval()
    x = torch.rand(1, 3, 32, 32)
    path = os.path.join(HERE, "tiny_cnn.onnx")
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["image"], output_names=["probabilities"],
                      dynamic_axes={"image": {0: "batch"}, "probabilities": {0: "batch"}})
    with torch.no_grad():
        y = model(x).numpy()
    d = os.path.join(HERE, "tiny_cnn_test_data")
    os.makedirs(d, exist_ok=True)
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "image"), os.path.join(d, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(y, "probabilities"), os.path.join(d, "output_0.pb"))


def tiny_qdq():
    """A small CNN in the QDQ form that ONNX Runtime's static quantizer writes (QuantizeLinear ->
    DequantizeLinear around every op, uint8 activations, int8 weights per output channel, int32
    biases at x_scale * w_scale): Conv 3x3, MaxPool, Conv 1x1, GlobalAveragePool. The optimizer's
    QDQ fusion makes it QLinearConv, an 8-bit MaxPool, QLinearConv and QLinearGlobalAveragePool
    (docs/optimizer.md). No test data: its reference is the same model at the basic level."""
    rng = np.random.default_rng(11)
    u8 = lambda v: np.array(v, np.uint8)
    f32 = lambda v: np.array(v, np.float32)
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(value, name))
        return name

    def q(x, scale, zp, name):
        nodes.append(helper.make_node("QuantizeLinear", [x, const(name + "_scale", f32(scale)), const(name + "_zp", u8(zp))],
                                      [name + "_q"], name=name + "_quantize"))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name + "_dq"],
                                      name=name + "_dequantize"))
        return name + "_dq"

    def conv(x, x_scale, cin, cout, k, name):
        w_scale = rng.uniform(0.002, 0.01, cout).astype(np.float32)
        w = rng.integers(-127, 128, (cout, cin, k, k)).astype(np.int8)
        b = rng.integers(-2000, 2000, cout).astype(np.int32)
        nodes.append(helper.make_node("DequantizeLinear", [const(name + "_w", w), const(name + "_w_scale", w_scale),
                                                           const(name + "_w_zp", np.zeros(cout, np.int8))],
                                      [name + "_w_dq"], name=name + "_w_dequantize", axis=0))
        nodes.append(helper.make_node("DequantizeLinear", [const(name + "_b", b), const(name + "_b_scale", f32(x_scale * w_scale)),
                                                           const(name + "_b_zp", np.zeros(cout, np.int32))],
                                      [name + "_b_dq"], name=name + "_b_dequantize", axis=0))
        nodes.append(helper.make_node("Conv", [x, name + "_w_dq", name + "_b_dq"], [name + "_y"], name=name,
                                      pads=[k // 2] * 4))
        return name + "_y"

    x = q("image", 1 / 255, 0, "image")
    y = q(conv(x, 1 / 255, 3, 8, 3, "conv1"), 0.05, 128, "conv1")
    nodes.append(helper.make_node("MaxPool", [y], ["pool_y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
    y = q("pool_y", 0.05, 128, "pool")
    y = q(conv(y, 0.05, 8, 8, 1, "conv2"), 0.1, 128, "conv2")
    nodes.append(helper.make_node("GlobalAveragePool", [y], ["gap_y"], name="gap"))
    y = q("gap_y", 0.02, 128, "gap")
    nodes.append(helper.make_node("Flatten", [y], ["features"], name="flatten"))
    graph = helper.make_graph(
        nodes, "tiny_qdq", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onyx-examples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, "tiny_qdq.onnx"))


def tiny_half():
    """A small float16 CNN: Conv 3x3, Relu, Conv 1x1, GlobalAveragePool, Flatten. The CPU EP runs it
    as float32 between one Cast in and one out (its option half_in_float, docs/execution-providers.md).
    No test data."""
    rng = np.random.default_rng(12)
    h = lambda shape: (rng.standard_normal(shape) * 0.3).astype(np.float16)
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        helper.make_node("GlobalAveragePool", ["c2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["features"], name="flatten"),
    ]
    graph = helper.make_graph(
        nodes, "tiny_half", [helper.make_tensor_value_info("image", TensorProto.FLOAT16, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT16, [1, 8])],
        [numpy_helper.from_array(a, n) for n, a in [("w1", h((8, 3, 3, 3))), ("b1", h(8)), ("w2", h((8, 8, 1, 1)))]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onyx-examples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, "tiny_half.onnx"))


def save_decoder_inputs(name, prompt, past_shape, with_positions):
    """<name>_test_data/input_K.pb: a prompt step (empty past) in the model's input order, for the
    tests that feed example models their test data (no outputs: the decoders' reference is ONNX
    Runtime's greedy loop, tests/models/generate_test.sh)."""
    d = os.path.join(HERE, name + "_test_data")
    os.makedirs(d, exist_ok=True)
    ids = np.array([prompt], np.int64)
    inputs = [("input_ids", ids), ("attention_mask", np.ones_like(ids))]
    if with_positions:
        inputs.append(("position_ids", np.arange(len(prompt), dtype=np.int64)[None, :]))
    for l in range(2):
        for part in ("key", "value"):
            inputs.append((f"past_key_values.{l}.{part}", np.zeros(past_shape, np.float32)))
    for i, (n, v) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(d, f"input_{i}.pb"))


def tiny_decoder():
    """A 2-layer decoder language model in the form Hugging Face exports have (input_ids,
    attention_mask, position_ids, past_key_values.N.key / .value -> logits, present.N.key / .value)
    built from ONNX Runtime's com.microsoft ops: per layer LayerNormalization, Q/K/V projections,
    RotaryEmbedding on Q and K, causal MultiHeadAttention over the past and new keys, the output
    projection, and a FastGelu MLP; vocabulary 48, hidden 32, 4 heads of 8. For `onyx generate`
    and onyx::Generator (docs/transformers.md). Test data: a prompt's inputs only
    (tests/models/generate_test.sh compares its tokens with ONNX Runtime's)."""
    rng = np.random.default_rng(13)
    V, D, N, L, F, MAXPOS = 48, 32, 4, 2, 64, 256
    H = D // N
    w = lambda *shape, s=0.3: (rng.standard_normal(shape) * s).astype(np.float32)
    inv = 1.0 / (10000 ** (np.arange(0, H, 2, dtype=np.float64) / H))
    ang = np.arange(MAXPOS)[:, None] * inv[None, :]
    inits = {"wte": w(V, D, s=1.0), "lm_head": w(D, V), "cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32),
             "lnf_g": 1 + w(D, s=0.1), "lnf_b": w(D, s=0.1)}
    nodes = [
        helper.make_node("Gather", ["wte", "input_ids"], ["h0"], name="embed"),
        helper.make_node("Cast", ["attention_mask"], ["mask32"], name="mask_to_int32", to=TensorProto.INT32),
    ]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total_sequence"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "sequence"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", V])]
    h = "h0"
    for l in range(L):
        p = f"l{l}_"
        for n, a in [("ln_g", 1 + w(D, s=0.1)), ("ln_b", w(D, s=0.1)), ("wq", w(D, D)), ("wk", w(D, D)), ("wv", w(D, D)), ("wo", w(D, D)),
                     ("w1", w(D, F)), ("b1", w(F, s=0.1)), ("w2", w(F, D)), ("ln2_g", 1 + w(D, s=0.1)), ("ln2_b", w(D, s=0.1))]:
            inits[p + n] = a
        pk, pv = f"past_key_values.{l}.key", f"past_key_values.{l}.value"
        inputs += [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", N, "past_sequence", H]) for x in (pk, pv)]
        outputs += [helper.make_tensor_value_info(f"present.{l}.{x}", TensorProto.FLOAT, ["batch", N, "total_sequence", H]) for x in ("key", "value")]
        nodes += [
            helper.make_node("LayerNormalization", [h, p + "ln_g", p + "ln_b"], [p + "x"], name=p + "ln", axis=-1, epsilon=1e-5),
            helper.make_node("MatMul", [p + "x", p + "wq"], [p + "q0"], name=p + "q"),
            helper.make_node("MatMul", [p + "x", p + "wk"], [p + "k0"], name=p + "k"),
            helper.make_node("MatMul", [p + "x", p + "wv"], [p + "v"], name=p + "v"),
            helper.make_node("RotaryEmbedding", [p + "q0", "position_ids", "cos", "sin"], [p + "q"], name=p + "rope_q", domain="com.microsoft",
                             num_heads=N),
            helper.make_node("RotaryEmbedding", [p + "k0", "position_ids", "cos", "sin"], [p + "k"], name=p + "rope_k", domain="com.microsoft",
                             num_heads=N),
            helper.make_node("MultiHeadAttention", [p + "q", p + "k", p + "v", "", "mask32", "", pk, pv],
                             [p + "att", f"present.{l}.key", f"present.{l}.value"], name=p + "attention", domain="com.microsoft",
                             num_heads=N, unidirectional=1),
            helper.make_node("MatMul", [p + "att", p + "wo"], [p + "o"], name=p + "o"),
            helper.make_node("Add", [h, p + "o"], [p + "h1"], name=p + "residual1"),
            helper.make_node("LayerNormalization", [p + "h1", p + "ln2_g", p + "ln2_b"], [p + "x2"], name=p + "ln2", axis=-1, epsilon=1e-5),
            helper.make_node("MatMul", [p + "x2", p + "w1"], [p + "f0"], name=p + "fc1"),
            helper.make_node("FastGelu", [p + "f0", p + "b1"], [p + "f1"], name=p + "gelu", domain="com.microsoft"),
            helper.make_node("MatMul", [p + "f1", p + "w2"], [p + "f2"], name=p + "fc2"),
            helper.make_node("Add", [p + "h1", p + "f2"], [p + "h2"], name=p + "residual2"),
        ]
        h = p + "h2"
    nodes += [
        helper.make_node("LayerNormalization", [h, "lnf_g", "lnf_b"], ["hf"], name="ln_f", axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["hf", "lm_head"], ["logits"], name="lm_head"),
    ]
    graph = helper.make_graph(nodes, "tiny_decoder", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="onyx-examples")
    model.ir_version = 8
    onnx.save(model, os.path.join(HERE, "tiny_decoder.onnx"))
    save_decoder_inputs("tiny_decoder", [1, 2, 3, 4, 5], [1, N, 0, H], True)


def tiny_decoder_gqa():
    """tiny_decoder's shape in the form ONNX Runtime's LLM builders write: per layer
    SimplifiedLayerNormalization (RMS), Q/K/V projections, com.microsoft GroupQueryAttention (4 query
    heads of 16 over 2 key/value heads, rotary inside, seqlens_k and total_sequence_length computed from
    attention_mask), the output projection and a gated MLP; past_key_values.N.key / .value
    [batch, 2, past, 16]. Its attention writes into the past buffer, so `onyx generate --share-buffer`
    runs it with one preallocated buffer per layer. Test data: a prompt's inputs only."""
    rng = np.random.default_rng(14)
    V, D, N, NKV, L, F, MAXPOS = 48, 64, 4, 2, 2, 96, 256  # heads of 16: ONNX Runtime's rotary GQA needs a multiple of 16
    H = D // N
    w = lambda *shape, s=0.3: (rng.standard_normal(shape) * s).astype(np.float32)
    inv = 1.0 / (10000 ** (np.arange(0, H, 2, dtype=np.float64) / H))
    ang = np.arange(MAXPOS)[:, None] * inv[None, :]
    inits = {"wte": w(V, D, s=1.0), "lm_head": w(D, V), "cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32),
             "norm_f": 1 + w(D, s=0.1), "one": np.array([1], np.int64), "axis1": np.array([1], np.int64)}
    nodes = [
        helper.make_node("Gather", ["wte", "input_ids"], ["h0"], name="embed"),
        helper.make_node("ReduceSum", ["attention_mask", "axis1"], ["mask_sum"], name="mask_sum", keepdims=0),
        helper.make_node("Sub", ["mask_sum", "one"], ["seqlens64"], name="seqlens_minus_one"),
        helper.make_node("Cast", ["seqlens64"], ["seqlens_k"], name="seqlens_k", to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"], name="mask_shape"),
        helper.make_node("Gather", ["mask_shape", "one"], ["total64"], name="total_len", axis=0),
        helper.make_node("Cast", ["total64"], ["total_len1"], name="total_len_int32", to=TensorProto.INT32),
        helper.make_node("Squeeze", ["total_len1"], ["total_sequence_length"], name="total_len_scalar"),
    ]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total_sequence"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", V])]
    h = "h0"
    for l in range(L):
        p = f"l{l}_"
        for n, a in [("norm1", 1 + w(D, s=0.1)), ("wq", w(D, D)), ("wk", w(D, NKV * H)), ("wv", w(D, NKV * H)), ("wo", w(D, D)),
                     ("wg", w(D, F)), ("wu", w(D, F)), ("wd", w(F, D)), ("norm2", 1 + w(D, s=0.1))]:
            inits[p + n] = a
        pk, pv = f"past_key_values.{l}.key", f"past_key_values.{l}.value"
        inputs += [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", NKV, "past_sequence", H]) for x in (pk, pv)]
        outputs += [helper.make_tensor_value_info(f"present.{l}.{x}", TensorProto.FLOAT, ["batch", NKV, "total_sequence", H])
                    for x in ("key", "value")]
        nodes += [
            helper.make_node("SimplifiedLayerNormalization", [h, p + "norm1"], [p + "x"], name=p + "norm1", axis=-1, epsilon=1e-6),
            helper.make_node("MatMul", [p + "x", p + "wq"], [p + "q"], name=p + "q"),
            helper.make_node("MatMul", [p + "x", p + "wk"], [p + "k"], name=p + "k"),
            helper.make_node("MatMul", [p + "x", p + "wv"], [p + "v"], name=p + "v"),
            helper.make_node("GroupQueryAttention", [p + "q", p + "k", p + "v", pk, pv, "seqlens_k", "total_sequence_length", "cos", "sin"],
                             [p + "att", f"present.{l}.key", f"present.{l}.value"], name=p + "attention", domain="com.microsoft",
                             num_heads=N, kv_num_heads=NKV, do_rotary=1),
            helper.make_node("MatMul", [p + "att", p + "wo"], [p + "o"], name=p + "o"),
            helper.make_node("SkipSimplifiedLayerNormalization", [p + "o", h, p + "norm2"], [p + "x2", "", "", p + "h1"], name=p + "norm2",
                             domain="com.microsoft", epsilon=1e-6),
            helper.make_node("MatMul", [p + "x2", p + "wg"], [p + "g"], name=p + "gate"),
            helper.make_node("Sigmoid", [p + "g"], [p + "gs"], name=p + "gate_sigmoid"),
            helper.make_node("Mul", [p + "g", p + "gs"], [p + "silu"], name=p + "silu"),
            helper.make_node("MatMul", [p + "x2", p + "wu"], [p + "u"], name=p + "up"),
            helper.make_node("Mul", [p + "silu", p + "u"], [p + "gu"], name=p + "gated"),
            helper.make_node("MatMul", [p + "gu", p + "wd"], [p + "d"], name=p + "down"),
            helper.make_node("Add", [p + "h1", p + "d"], [p + "h2"], name=p + "residual"),
        ]
        h = p + "h2"
    nodes += [
        helper.make_node("SimplifiedLayerNormalization", [h, "norm_f"], ["hf"], name="norm_f", axis=-1, epsilon=1e-6),
        helper.make_node("MatMul", ["hf", "lm_head"], ["logits"], name="lm_head"),
    ]
    graph = helper.make_graph(nodes, "tiny_decoder_gqa", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="onyx-examples")
    model.ir_version = 8
    onnx.save(model, os.path.join(HERE, "tiny_decoder_gqa.onnx"))
    save_decoder_inputs("tiny_decoder_gqa", [1, 2, 3, 4, 5], [1, NKV, 0, H], False)


def tiny_custom():
    """A custom operator: com.example::ScaledTanh (y = alpha * tanh(x), attribute alpha), which
    docs/custom-ops.md registers with onyx::register_custom_op, followed by an Add."""
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    one = np.array(1.0, dtype=np.float32)
    nodes = [
        helper.make_node("ScaledTanh", ["x"], ["t"], name="scaled_tanh", domain="com.example", alpha=2.0),
        helper.make_node("Add", ["t", "one"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "tiny_custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [numpy_helper.from_array(one, "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
                              producer_name="onyx-examples")
    model.ir_version = 8
    onnx.save(model, os.path.join(HERE, "tiny_custom.onnx"))
    d = os.path.join(HERE, "tiny_custom_test_data")
    os.makedirs(d, exist_ok=True)
    onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(d, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array((2.0 * np.tanh(x) + one).astype(np.float32), "y"), os.path.join(d, "output_0.pb"))


MODELS = [tiny_normalize, tiny_ml, tiny_classifier, decode_image, tiny_cnn, tiny_qdq, tiny_half, tiny_decoder, tiny_decoder_gqa,
          tiny_custom]

if __name__ == "__main__":
    names = sys.argv[1:] or [m.__name__ for m in MODELS]
    unknown = set(names) - {m.__name__ for m in MODELS}
    if unknown:
        sys.exit(f"unknown models: {', '.join(sorted(unknown))}")
    for m in MODELS:
        if m.__name__ in names:
            m()
