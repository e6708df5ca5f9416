"""Cases of make_transformer_tests.py: com.microsoft DynamicQuantizeLSTM.

The op is an LSTM whose W [num_directions, input_size, 4*hidden_size] and R [num_directions,
hidden_size, 4*hidden_size] (the transposes of ai.onnx LSTM's) are 8-bit, with W_scale /
W_zero_point / R_scale / R_zero_point of shape [num_directions] (per tensor) or
[num_directions, 4*hidden_size] (per column). Two cases take their node and initializers from
onnxruntime.quantization.quantize_dynamic run on a float LSTM (it writes int8 weights, symmetric,
per tensor or per channel); the others write the node directly for the variations: directions,
optional inputs, sequence_lens, int8 / uint8 weights with zero points, clip, input_forget,
activations, and which outputs are asked for.

What ONNX Runtime 1.32's CPU EP does, and these cases pin down:
- X is quantized to uint8 once (DynamicQuantizeLinear's scale and zero point) over its first
  max(sequence_lens) steps, and at each step the hidden rows of the whole batch are quantized
  together (with one thread, as the generator runs it);
- a row whose sequence has ended enters the next steps' quantization as zeros when Y is an
  output, and with its last hidden state when it is not (the `_noy` cases), so Y's presence
  changes Y_h and Y_c;
- only the first zero point of each direction is used: per-column zero points must be 0 (int8)
  or all equal (uint8);
- activation alpha / beta defaults are 0 except LeakyRelu (0.01), HardSigmoid (0.2, 0.5), Elu (1).
"""

import logging
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from transformer_common import Case, randn


def quantize_weight(w, kind, per_column):
    """w float [D, K, N] -> (q, scale, zero_point): kind "s8" (symmetric int8, zero point 0),
    "s8zp" (int8 with a zero point; per tensor only), "u8" (uint8 over the range with 0 in it;
    per tensor) or "u8c" (uint8, zero point 128 everywhere). Scales and zero points are
    [D] or, per column, [D, N]."""
    d = w.shape[0]
    axes = (1,) if per_column else (1, 2)
    if kind == "s8":
        sc = np.abs(w).max(axis=axes) / 127.0
        zp = np.zeros_like(sc, dtype=np.int64)
        lo, hi, dt = -127, 127, np.int8
    elif kind == "u8c":
        sc = np.abs(w).max(axis=axes) / 127.0
        zp = np.full(sc.shape, 128, np.int64)
        lo, hi, dt = 0, 255, np.uint8
    else:
        lo, hi, dt = (-128, 127, np.int8) if kind == "s8zp" else (0, 255, np.uint8)
        wmin = np.minimum(w.min(axis=axes), 0)
        wmax = np.maximum(w.max(axis=axes), 0)
        sc = (wmax - wmin) / (hi - lo)
        zp = np.clip(np.round(lo - wmin / sc), lo, hi).astype(np.int64)
    sc = np.where(sc == 0, 1.0, sc).astype(np.float32)
    shape = (d, 1, -1) if per_column else (d, 1, 1)
    q = np.clip(np.round(w / sc.reshape(shape)) + zp.reshape(shape), lo, hi).astype(dt)
    return q, sc, zp.astype(dt)


def dq_case(name, rng, S, B, I, H, direction="forward", kind="s8", per_column=False, bias=True, lens=None, h0=False,
            c0=False, peep=False, outputs=("y", "y_h", "y_c"), weights_feed=False, attrs=None, x_scale=1.0):
    d = 2 if direction == "bidirectional" else 1
    x = randn(rng, [S, B, I], scale=x_scale)
    w = randn(rng, [d, I, 4 * H], scale=1.0 / np.sqrt(I))
    r = randn(rng, [d, H, 4 * H], scale=1.0 / np.sqrt(H))
    wq, ws, wz = quantize_weight(w, kind, per_column)
    rq, rs, rz = quantize_weight(r, kind, per_column)
    inputs = [("x", x, True), ("W", wq, weights_feed), ("R", rq, weights_feed)]
    inputs.append(("B", randn(rng, [d, 8 * H], scale=0.3), False) if bias else None)
    inputs.append(("sequence_lens", np.array(lens, np.int32), True) if lens is not None else None)
    inputs.append(("initial_h", randn(rng, [d, B, H], scale=0.5), True) if h0 else None)
    inputs.append(("initial_c", randn(rng, [d, B, H], scale=0.5), True) if c0 else None)
    inputs.append(("P", randn(rng, [d, 3 * H], scale=0.5), False) if peep else None)
    inputs += [("W_scale", ws, False), ("W_zero_point", wz, False), ("R_scale", rs, False), ("R_zero_point", rz, False)]
    a = {"hidden_size": H, "direction": direction}
    a.update(attrs or {})
    return Case(name, "DynamicQuantizeLSTM", inputs, outputs=outputs, attrs=a)


def quantizer_case(name, rng, S, B, I, H, direction, per_channel, lens):
    """The node and initializers onnxruntime.quantization.quantize_dynamic writes for a float
    LSTM (X, sequence_lens, initial_h and initial_c fed)."""
    from onnxruntime.quantization import quantize_dynamic

    d = 2 if direction == "bidirectional" else 1
    w = randn(rng, [d, 4 * H, I], scale=1.0 / np.sqrt(I))
    r = randn(rng, [d, 4 * H, H], scale=1.0 / np.sqrt(H))
    b = randn(rng, [d, 8 * H], scale=0.3)
    feeds = {
        "x": randn(rng, [S, B, I]),
        "sequence_lens": np.array(lens, np.int32),
        "initial_h": randn(rng, [d, B, H], scale=0.5),
        "initial_c": randn(rng, [d, B, H], scale=0.5),
    }
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "sequence_lens", "initial_h", "initial_c"],
                            ["y", "y_h", "y_c"], hidden_size=H, direction=direction)
    elem = {np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float32): TensorProto.FLOAT}
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(k, elem[v.dtype], list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("y", "y_h", "y_c")],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
        onnx.save(model, src)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer's advice to pre-process the model first
        try:
            quantize_dynamic(src, dst, per_channel=per_channel)
        finally:
            root.setLevel(level)
        q = onnx.load(dst)
    nodes = [n for n in q.graph.node if n.op_type == "DynamicQuantizeLSTM"]
    if len(nodes) != 1:
        raise RuntimeError(f"{name}: the quantizer wrote {[n.op_type for n in q.graph.node]}")
    qn = nodes[0]
    inits = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
    inputs = []
    for nm in qn.input:
        if not nm:
            inputs.append(None)
        elif nm in feeds:
            inputs.append((nm, feeds[nm], True))
        else:
            inputs.append((nm, inits[nm], False))
    attrs = {a.name: helper.get_attribute_value(a) for a in qn.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    return Case(name, "DynamicQuantizeLSTM", inputs, outputs=list(qn.output), attrs=attrs)


def cases(rng):
    # What the quantizer writes: per tensor (bidirectional) and per channel (forward).
    yield quantizer_case("test_dqlstm_quantizer_per_tensor", rng, 6, 2, 16, 32, "bidirectional", False, [6, 4])
    yield quantizer_case("test_dqlstm_quantizer_per_channel", rng, 5, 3, 3, 7, "forward", True, [5, 5, 2])

    # Sizes: hidden 1, 7, 32, 64; input 3, 16, 50; seq 1..10; batch 1..4.
    yield dq_case("test_dqlstm_h1_single_step", rng, 1, 1, 3, 1)
    yield dq_case("test_dqlstm_h1_seq10", rng, 10, 2, 3, 1)
    yield dq_case("test_dqlstm_h7_nobias", rng, 4, 2, 16, 7, bias=False)
    yield dq_case("test_dqlstm_h32_i50", rng, 8, 3, 50, 32)
    yield dq_case("test_dqlstm_h64_i16_b4", rng, 10, 4, 16, 64, h0=True, c0=True)
    yield dq_case("test_dqlstm_per_column", rng, 6, 3, 16, 32, per_column=True)
    yield dq_case("test_dqlstm_input_scale_large", rng, 5, 2, 16, 7, x_scale=6.0)

    # Directions, initial states, peepholes.
    yield dq_case("test_dqlstm_reverse", rng, 7, 3, 16, 7)
    yield dq_case("test_dqlstm_reverse_states", rng, 10, 3, 50, 32, direction="reverse", h0=True, c0=True)
    yield dq_case("test_dqlstm_bidirectional", rng, 5, 2, 3, 7, direction="bidirectional")
    yield dq_case("test_dqlstm_bidirectional_all_inputs", rng, 7, 4, 16, 64, direction="bidirectional", per_column=True,
                  h0=True, c0=True, peep=True)
    yield dq_case("test_dqlstm_peephole", rng, 6, 2, 3, 32, peep=True, h0=True, c0=True)
    yield dq_case("test_dqlstm_initial_h_only", rng, 4, 3, 16, 7, h0=True)
    yield dq_case("test_dqlstm_initial_c_only", rng, 4, 3, 16, 7, c0=True)

    # sequence_lens: shorter sequences in the batch (an empty one too), with and without Y.
    yield dq_case("test_dqlstm_seqlens_forward", rng, 8, 4, 16, 32, lens=[8, 3, 5, 1], h0=True, c0=True)
    yield dq_case("test_dqlstm_seqlens_reverse", rng, 8, 4, 16, 32, direction="reverse", lens=[2, 8, 5, 6], h0=True)
    yield dq_case("test_dqlstm_seqlens_bidirectional", rng, 9, 4, 50, 7, direction="bidirectional", lens=[6, 9, 1, 4],
                  h0=True, c0=True, peep=True)
    yield dq_case("test_dqlstm_seqlens_shorter_than_seq", rng, 10, 3, 16, 32, direction="bidirectional", lens=[7, 3, 5])
    yield dq_case("test_dqlstm_seqlens_empty_entry", rng, 6, 3, 16, 7, lens=[6, 0, 3], h0=True, c0=True)
    yield dq_case("test_dqlstm_seqlens_all_empty", rng, 4, 2, 3, 7, lens=[0, 0], h0=True, c0=True)
    yield dq_case("test_dqlstm_seqlens_forward_noy", rng, 8, 4, 16, 32, lens=[8, 2, 5, 1], outputs=("", "y_h", "y_c"))
    yield dq_case("test_dqlstm_seqlens_bidirectional_noy", rng, 8, 4, 16, 32, direction="bidirectional",
                  lens=[8, 2, 5, 3], h0=True, outputs=("", "y_h", "y_c"))
    yield dq_case("test_dqlstm_seqlens_reverse_yh_only", rng, 7, 3, 3, 7, direction="reverse", lens=[7, 4, 2],
                  outputs=("", "y_h"))

    # Weight types and zero points.
    yield dq_case("test_dqlstm_uint8", rng, 6, 2, 16, 32, kind="u8")
    yield dq_case("test_dqlstm_uint8_bidirectional", rng, 5, 3, 50, 7, direction="bidirectional", kind="u8", h0=True)
    yield dq_case("test_dqlstm_uint8_per_column", rng, 6, 2, 16, 32, kind="u8c", per_column=True)
    yield dq_case("test_dqlstm_int8_zero_point", rng, 6, 2, 16, 32, kind="s8zp")
    yield dq_case("test_dqlstm_int8_zero_point_bidirectional", rng, 5, 2, 3, 7, direction="bidirectional", kind="s8zp")
    yield dq_case("test_dqlstm_weights_fed", rng, 5, 3, 16, 7, direction="bidirectional", weights_feed=True,
                  per_column=True)

    # Attributes.
    yield dq_case("test_dqlstm_clip", rng, 6, 3, 16, 32, attrs={"clip": 0.7}, x_scale=3.0)
    yield dq_case("test_dqlstm_input_forget", rng, 6, 3, 16, 32, attrs={"input_forget": 1}, peep=True)
    yield dq_case("test_dqlstm_clip_input_forget_bidirectional", rng, 5, 2, 16, 7, direction="bidirectional",
                  attrs={"clip": 1.5, "input_forget": 1})
    yield dq_case("test_dqlstm_activations", rng, 5, 2, 16, 7,
                  attrs={"activations": ["HardSigmoid", "Softsign", "LeakyRelu"], "activation_alpha": [0.3, 0.2],
                         "activation_beta": [0.4]})
    yield dq_case("test_dqlstm_activations_bidirectional", rng, 5, 2, 3, 7, direction="bidirectional",
                  attrs={"activations": ["sigmoid", "tanh", "tanh", "Sigmoid", "Relu", "ScaledTanh"],
                         "activation_alpha": [0.9], "activation_beta": [1.3]})
    yield dq_case("test_dqlstm_activations_defaults", rng, 4, 2, 3, 7,
                  attrs={"activations": ["HardSigmoid", "Elu", "Tanh"]})

    # Outputs asked for.
    yield dq_case("test_dqlstm_y_only", rng, 5, 2, 16, 7, direction="bidirectional", outputs=("y",))
    yield dq_case("test_dqlstm_yc_only", rng, 5, 2, 16, 7, lens=[5, 3], outputs=("", "", "y_c"))
