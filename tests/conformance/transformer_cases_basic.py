"""Cases of make_transformer_tests.py: the element-wise and normalisation ops of ONNX Runtime's
transformers optimizer (Gelu, BiasGelu, FastGelu, QuickGelu, BiasAdd, BiasSplitGelu,
GemmFastGelu, FusedMatMul, SkipLayerNormalization, SkipSimplifiedLayerNormalization,
SimplifiedLayerNormalization, the contrib LayerNormalization-1), EmbedLayerNormalization, FusedConv
and NhwcConv."""
import math

import numpy as np
from transformer_common import Case, randn

# Sizes that are and are not multiples of a vector (8 or 16 floats), and one split over threads.
WIDTHS = (1, 7, 16, 37, 768)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu_cases(rng):
    for w in WIDTHS:
        x = randn(rng, [2, 3, w], scale=3.0)
        yield Case(f"test_ms_gelu_{w}", "Gelu", [("x", x, True)])
        yield Case(f"test_ms_quickgelu_{w}", "QuickGelu", [("x", x, True)])
        b = randn(rng, [w])
        yield Case(f"test_ms_biasgelu_{w}", "BiasGelu", [("x", x, True), ("b", b, False)])
        yield Case(f"test_ms_fastgelu_{w}", "FastGelu", [("x", x, True)])
        yield Case(f"test_ms_fastgelu_bias_{w}", "FastGelu", [("x", x, True), ("b", b, True)])
    x = randn(rng, [64, 3072], scale=4.0)  # big enough to be split over threads
    yield Case("test_ms_gelu_big", "Gelu", [("x", x, True)])
    yield Case("test_ms_fastgelu_bias_big", "FastGelu", [("x", x, True), ("b", randn(rng, [3072]), False)])
    yield Case("test_ms_biasgelu_big", "BiasGelu", [("x", x, True), ("b", randn(rng, [3072]), False)])
    yield Case("test_ms_quickgelu_alpha", "QuickGelu", [("x", randn(rng, [5, 33], scale=3.0), True)], attrs={"alpha": 1.3})
    yield Case("test_ms_gelu_rank1", "Gelu", [("x", randn(rng, [19]), True)])
    yield Case("test_ms_gelu_empty", "Gelu", [("x", np.zeros([0, 4], np.float32), True)])
    # Extremes: large magnitudes saturate, NaN propagates.
    ext = np.array([[-1e4, -30.0, -9.0, -1e-6, 0.0, 1e-6, 9.0, 30.0, 1e4, np.nan, np.inf, -np.inf]], np.float32)
    for op in ("Gelu", "FastGelu", "QuickGelu"):
        yield Case(f"test_ms_{op.lower()}_extremes", op, [("x", ext, True)])


def bias_add_ref(v):
    return [(v["x"] + v["bias"] + v["skip"]).astype(np.float32)]


def bias_split_gelu_ref(v):
    t = (v["x"] + v["bias"]).astype(np.float64)
    h = t.shape[-1] // 2
    left, right = t[..., :h], t[..., h:]
    return [(left * 0.5 * right * (1.0 + erf(right / math.sqrt(2.0)))).astype(np.float32)]


def cuda_only_cases(rng):
    """BiasAdd and BiasSplitGelu: ONNX Runtime runs them only on CUDA (GemmFastGelu too, in matmul_cases), so numpy gives the reference."""
    for c in (4, 37, 320):
        yield Case(f"test_ms_biasadd_{c}", "BiasAdd",
                   [("x", randn(rng, [2, 5, c]), True), ("bias", randn(rng, [c]), False), ("skip", randn(rng, [2, 5, c]), True)],
                   reference=bias_add_ref)
    for d in (2, 38, 2560):
        yield Case(f"test_ms_biassplitgelu_{d}", "BiasSplitGelu",
                   [("x", randn(rng, [2, 3, d]), True), ("bias", randn(rng, [d]), False)], reference=bias_split_gelu_ref)


def gemm_fast_gelu_ref(v):
    """FastGelu(X W + bias), in float64 (ONNX Runtime's CPU EP has no GemmFastGelu kernel)."""
    t = v["x"].astype(np.float64) @ v["w"].astype(np.float64)
    if "b" in v:
        t = t + v["b"]
    return [(0.5 * t * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * t ** 3)))).astype(np.float32)]


def matmul_cases(rng):
    for (sx, k, n) in (([3, 5], 7, 9), ([2, 4, 33], 33, 70), ([1, 16, 768], 768, 256), ([5], 5, 3)):
        x = randn(rng, sx)
        w = randn(rng, [sx[-1], n], scale=0.2)
        yield Case(f"test_ms_gemmfastgelu_{'x'.join(map(str, sx))}_{n}", "GemmFastGelu",
                   [("x", x, True), ("w", w, False), ("b", randn(rng, [n]), False)], reference=gemm_fast_gelu_ref)
        yield Case(f"test_ms_gemmfastgelu_nobias_{'x'.join(map(str, sx))}_{n}", "GemmFastGelu", [("x", x, True), ("w", w, True)],
                   reference=gemm_fast_gelu_ref)
    # FusedMatMul: alpha and every transpose flag; batch dims broadcast as in MatMul.
    for ta in (0, 1):
        for tb in (0, 1):
            a = randn(rng, [2, 3, 6, 5] if not ta else [2, 3, 5, 6])
            b = randn(rng, [3, 5, 4] if not tb else [3, 4, 5])
            yield Case(f"test_ms_fusedmatmul_t{ta}{tb}", "FusedMatMul", [("a", a, True), ("b", b, True)],
                       attrs={"alpha": 0.375, "transA": ta, "transB": tb})
    for tba in (0, 1):
        for tbb in (0, 1):
            for ta in (0, 1):
                for tb in (0, 1):
                    # transBatch moves the first dim behind the other batch dims.
                    a = randn(rng, [4, 3, 2, 5] if not ta else [4, 3, 5, 2])
                    b = randn(rng, [4, 3, 5, 6] if not tb else [4, 3, 6, 5])
                    if tba:
                        a = np.ascontiguousarray(np.moveaxis(a, 2, 0))
                    if tbb:
                        b = np.ascontiguousarray(np.moveaxis(b, 2, 0))
                    yield Case(f"test_ms_fusedmatmul_batch{tba}{tbb}_t{ta}{tb}", "FusedMatMul", [("a", a, True), ("b", b, True)],
                               attrs={"alpha": 1.5, "transA": ta, "transB": tb, "transBatchA": tba, "transBatchB": tbb})
    yield Case("test_ms_fusedmatmul_vec", "FusedMatMul", [("a", randn(rng, [7]), True), ("b", randn(rng, [2, 7, 3]), True)],
               attrs={"alpha": 2.0})
    yield Case("test_ms_fusedmatmul_big", "FusedMatMul", [("a", randn(rng, [128, 768]), True), ("b", randn(rng, [768, 768]), False)],
               attrs={"alpha": 0.125, "transB": 1})


def norm_cases(rng):
    for shape in ([2, 3, 8], [1, 5, 37], [2, 16, 768], [4, 33]):
        d = shape[-1]
        x, skip = randn(rng, shape, scale=2.0), randn(rng, shape)
        gamma, beta, bias = randn(rng, [d]), randn(rng, [d]), randn(rng, [d])
        tag = "x".join(map(str, shape))
        yield Case(f"test_ms_skiplayernorm_{tag}", "SkipLayerNormalization",
                   [("x", x, True), ("skip", skip, True), ("gamma", gamma, False), ("beta", beta, False), ("bias", bias, False)],
                   outputs=("y", "mean", "inv_std_var", "sum"), attrs={"epsilon": 1e-5})
        yield Case(f"test_ms_skiplayernorm_nobias_{tag}", "SkipLayerNormalization",
                   [("x", x, True), ("skip", skip, True), ("gamma", gamma, False), ("beta", beta, False)], attrs={"epsilon": 1e-12})
        yield Case(f"test_ms_skiplayernorm_nobeta_{tag}", "SkipLayerNormalization",
                   [("x", x, True), ("skip", skip, True), ("gamma", gamma, False), None, ("bias", bias, False)],
                   outputs=("y", "", "", "sum"))
        yield Case(f"test_ms_skipsimplifiedlayernorm_{tag}", "SkipSimplifiedLayerNormalization",
                   [("x", x, True), ("skip", skip, True), ("gamma", gamma, False), ("bias", bias, False)],
                   outputs=("y", "", "inv_std_var", "sum"), attrs={"epsilon": 1e-6})
        yield Case(f"test_ms_skipsimplifiedlayernorm_nobias_{tag}", "SkipSimplifiedLayerNormalization",
                   [("x", x, True), ("skip", skip, True), ("gamma", gamma, False)])
        yield Case(f"test_simplifiedlayernorm_{tag}", "SimplifiedLayerNormalization",
                   [("x", x, True), ("scale", gamma, False)], outputs=("y", "inv"), attrs={"epsilon": 1e-6}, domain="", opset=17)
        yield Case(f"test_layernorm_v1_{tag}", "LayerNormalization",
                   [("x", x, True), ("scale", gamma, False), ("b", beta, False)], outputs=("y", "mean", "inv"), domain="", opset=13)
    # The skip broadcast over the batch ([S, D] and [1, S, D] for [B, S, D]).
    x = randn(rng, [3, 4, 24])
    for tag, ss in (("2d", [4, 24]), ("1sd", [1, 4, 24])):
        yield Case(f"test_ms_skiplayernorm_skip{tag}", "SkipLayerNormalization",
                   [("x", x, True), ("skip", randn(rng, ss), True), ("gamma", randn(rng, [24]), False), ("beta", randn(rng, [24]), False)])
        yield Case(f"test_ms_skipsimplifiedlayernorm_skip{tag}", "SkipSimplifiedLayerNormalization",
                   [("x", x, True), ("skip", randn(rng, ss), True), ("gamma", randn(rng, [24]), False)])
    # SimplifiedLayerNormalization over the last two axes.
    yield Case("test_simplifiedlayernorm_axis1", "SimplifiedLayerNormalization",
               [("x", randn(rng, [2, 3, 5]), True), ("scale", randn(rng, [3, 5]), False)], outputs=("y", "inv"),
               attrs={"axis": 1}, domain="", opset=17)


def embed_cases(rng):
    V, P, G = 50, 32, 3
    for (B, S, D) in ((1, 5, 8), (2, 7, 37), (3, 16, 768)):
        ids = rng.integers(0, V, size=[B, S]).astype(np.int32)
        seg = rng.integers(0, G, size=[B, S]).astype(np.int32)
        mask = np.ones([B, S], np.int32)
        for b in range(B):
            mask[b, rng.integers(1, S + 1):] = 0
        we, pe, se = randn(rng, [V, D]), randn(rng, [P, D]), randn(rng, [G, D])
        gamma, beta = randn(rng, [D]), randn(rng, [D])
        tag = f"{B}x{S}x{D}"
        yield Case(f"test_ms_embedlayernorm_{tag}", "EmbedLayerNormalization",
                   [("ids", ids, True), ("seg", seg, True), ("we", we, False), ("pe", pe, False), ("se", se, False),
                    ("gamma", gamma, False), ("beta", beta, False), ("mask", mask, True)],
                   outputs=("y", "mask_index", "sum"), attrs={"epsilon": 1e-12})
        yield Case(f"test_ms_embedlayernorm_noseg_{tag}", "EmbedLayerNormalization",
                   [("ids", ids, True), None, ("we", we, False), ("pe", pe, False), None, ("gamma", gamma, False),
                    ("beta", beta, False)], outputs=("y", "mask_index"))
        pos = rng.integers(0, P, size=[B, S]).astype(np.int32)
        yield Case(f"test_ms_embedlayernorm_posids_{tag}", "EmbedLayerNormalization",
                   [("ids", ids, True), ("seg", seg, True), ("we", we, False), ("pe", pe, False), ("se", se, False),
                    ("gamma", gamma, False), ("beta", beta, False), ("mask", mask, True), ("pos", pos, True)],
                   outputs=("y", "mask_index", "sum"))


def conv_cases(rng):
    """FusedConv (ONNX Runtime's CPU kernel gives the reference) and NhwcConv (a CUDA-only op: its
    reference is ONNX Runtime's Conv on the channels-first forms of X and W)."""
    acts = [("relu", "Relu", None), ("tanh", "Tanh", None), ("sigmoid", "Sigmoid", None), ("leaky", "LeakyRelu", [0.2]),
            ("clip", "Clip", [-0.5, 0.7]), ("hardsigmoid", "HardSigmoid", [0.3, 0.4]), ("none", None, None)]
    for tag, act, params in acts:
        x, w = randn(rng, [2, 4, 9, 8]), randn(rng, [6, 4, 3, 3], scale=0.3)
        attrs = {"pads": [1, 1, 1, 1]}
        if act:
            attrs["activation"] = act
        if params:
            attrs["activation_params"] = params
        yield Case(f"test_ms_fusedconv_{tag}", "FusedConv", [("x", x, True), ("w", w, False), ("b", randn(rng, [6]), False)], attrs=attrs)
    for tag, act in (("relu", "Relu"), ("sigmoid", "Sigmoid")):
        yield Case(f"test_ms_fusedconv_sum_{tag}", "FusedConv",
                   [("x", randn(rng, [1, 3, 7, 7]), True), ("w", randn(rng, [5, 3, 3, 3], scale=0.3), False), ("b", randn(rng, [5]), False),
                    ("z", randn(rng, [1, 5, 4, 4]), True)], attrs={"activation": act, "strides": [2, 2], "pads": [1, 1, 1, 1]})
    yield Case("test_ms_fusedconv_group", "FusedConv", [("x", randn(rng, [1, 6, 6, 6]), True), ("w", randn(rng, [4, 3, 2, 2]), False)],
               attrs={"activation": "Relu", "group": 2, "dilations": [2, 2]})

    def nhwc_ref(v):
        import onnxruntime as ort
        from onnx import TensorProto, helper
        attrs = dict(nhwc_ref.attrs)
        node = helper.make_node("Conv", ["x", "w"] + (["b"] if "b" in v else []), ["y"], **attrs)
        ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in (["x", "w", "b"] if "b" in v else ["x", "w"])]
        g = helper.make_graph([node], "conv", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {"x": v["x"].transpose(0, 3, 1, 2).copy(), "w": v["w"].transpose(0, 3, 1, 2).copy()}
        if "b" in v:
            feeds["b"] = v["b"]
        return [s.run(None, feeds)[0].transpose(0, 2, 3, 1).copy()]

    for tag, xs, ws, attrs, bias in (
            ("3x3", [2, 8, 9, 4], [6, 3, 3, 4], {"pads": [1, 1, 1, 1]}, True),
            ("stride", [1, 11, 10, 3], [5, 3, 3, 3], {"strides": [2, 2], "pads": [0, 1, 1, 0]}, True),
            ("1x1", [2, 5, 5, 16], [24, 1, 1, 16], {}, False),
            ("group", [1, 7, 7, 6], [4, 3, 3, 3], {"group": 2, "dilations": [2, 1]}, True),
            ("depthwise", [1, 6, 6, 5], [5, 3, 3, 1], {"group": 5, "auto_pad": "SAME_UPPER"}, True),
            ("big", [1, 28, 28, 32], [64, 3, 3, 32], {"pads": [1, 1, 1, 1]}, True)):
        def ref(v, attrs=attrs):
            nhwc_ref.attrs = attrs
            return nhwc_ref(v)
        inputs = [("x", randn(rng, xs), True), ("w", randn(rng, ws, scale=0.3), False)]
        if bias:
            inputs.append(("b", randn(rng, [ws[0]]), False))
        yield Case(f"test_ms_nhwcconv_{tag}", "NhwcConv", inputs, attrs=attrs, reference=ref)


def cases(rng):
    for gen in (gelu_cases, cuda_only_cases, matmul_cases, norm_cases, embed_cases, conv_cases):
        yield from gen(rng)
