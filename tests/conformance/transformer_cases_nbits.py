"""Cases of make_transformer_tests.py: com.microsoft MatMulNBits (block-quantized weights).

The weights are quantized here the way onnxruntime.quantization's MatMulNBitsQuantizer lays them
out (B [N, k_blocks, blob], values low bits first; scales [N * k_blocks]; uint8 zero points packed
per row of N), and one case takes its node and initializers from that quantizer itself.

What ONNX Runtime 1.32's CPU EP does, and these cases pin down:
- accuracy_level 4 with constant 4- or 8-bit weights (2-bit in blocks of 32 to 128), uint8 or no
  zero points and no g_idx quantizes A to int8 per block of min(block_size, 256) values (scale
  max|a| / 127) and multiplies in integers; other levels, and level 4 otherwise, compute in fp32.
- With g_idx it ignores uint8 zero points (takes 2^(bits-1)); onyx applies them as the operator
  defines, so that case has a numpy reference instead of ONNX Runtime's output.
"""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from transformer_common import Case, randn


def quantize(w, bits, block, zero_point=True):
    """w [K, N] -> (B uint8 [N, kb, blob], scales [N, kb], q [N, kb, block], zp int [N, kb],
    packed uint8 zero points [N, ceil(kb * bits / 8)])."""
    K, N = w.shape
    kb = (K + block - 1) // block
    wp = np.zeros((kb * block, N), np.float32)
    wp[:K] = w
    wb = wp.T.reshape(N, kb, block)
    qmax = (1 << bits) - 1
    if zero_point:
        lo = np.minimum(wb.min(-1), 0)
        hi = np.maximum(wb.max(-1), 0)
        sc = (hi - lo) / qmax
        sc[sc == 0] = 1
        zp = np.clip(np.round(-lo / sc), 0, qmax).astype(np.int64)
    else:
        sc = np.abs(wb).max(-1) / (1 << (bits - 1))
        sc[sc == 0] = 1
        zp = np.full((N, kb), 1 << (bits - 1), np.int64)
    q = np.clip(np.round(wb / sc[..., None]) + zp[..., None], 0, qmax).astype(np.int64)
    per = 8 // bits
    b = np.zeros((N, kb, block // per), np.int64)
    for i in range(per):
        b |= q[..., i::per] << (bits * i)
    zb = (kb * bits + 7) // 8
    zz = np.zeros((N, zb * per), np.int64)
    zz[:, :kb] = zp
    zpk = np.zeros((N, zb), np.int64)
    for i in range(per):
        zpk |= zz[:, i::per] << (bits * i)
    return b.astype(np.uint8), sc.astype(np.float32), q, zp, zpk.astype(np.uint8)


def nbits_case(name, rng, K, N, a_shape, bits=4, block=32, zp="u8", bias=False, level=0, dtype=np.float32,
               g_idx=None, b_feed=False, scales_2d=False, reference=None):
    w = randn(rng, (K, N), scale=0.1)
    b, sc, q, z, zpk = quantize(w, bits, block, zp is not None)
    a = randn(rng, a_shape, dtype)
    kb = sc.shape[1]
    inputs = [("A", a, True), ("B", b, b_feed), ("scales", (sc if scales_2d else sc.reshape(-1)).astype(dtype), False)]
    if zp == "u8":
        inputs.append(("zero_points", zpk.reshape(-1), False))
    elif zp == "float":
        inputs.append(("zero_points", (z + rng.uniform(-0.5, 0.5, z.shape)).reshape(-1).astype(dtype), False))
    else:
        inputs.append(None)
    inputs.append(("g_idx", g_idx, False) if g_idx is not None else None)
    inputs.append(("bias", randn(rng, (N,), dtype), False) if bias else None)
    attrs = dict(K=K, N=N, bits=bits, block_size=block, accuracy_level=level)
    ref = reference(K, N, bits, block, kb) if reference else None
    return Case(f"test_matmulnbits_{name}", "MatMulNBits", inputs, attrs=attrs, reference=ref)


def gidx_u8_reference(K, N, bits, block, kb):
    """Y = A W + bias with W[k, n] = (q[n, k] - zp[n, g_idx[k]]) scale[n, g_idx[k]], in float64."""

    def ref(v):
        a = v["A"].astype(np.float64)
        b, g = v["B"], v["g_idx"]
        per = 8 // bits
        q = np.zeros((N, kb, block), np.int64)
        for i in range(per):
            q[..., i::per] = (b.astype(np.int64) >> (bits * i)) & ((1 << bits) - 1)
        q = q.reshape(N, kb * block)[:, :K]
        zb = (kb * bits + 7) // 8
        zpk = v["zero_points"].reshape(N, zb).astype(np.int64)
        zp = np.zeros((N, zb * per), np.int64)
        for i in range(per):
            zp[:, i::per] = (zpk >> (bits * i)) & ((1 << bits) - 1)
        zp = zp[:, :kb]
        sc = v["scales"].reshape(N, kb).astype(np.float64)
        w = (q - zp[:, g]) * sc[:, g]
        y = a @ w.T
        if "bias" in v:
            y = y + v["bias"]
        return [y.astype(np.float32)]

    return ref


def ort_quantizer_case(rng):
    """A MatMul model quantized by ONNX Runtime's own MatMulNBitsQuantizer: its node, verbatim."""
    # It needs onnx_ir, which ONNX Runtime's wheel does not require (scripts/ort_venv.sh pins it).
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    K, N = 96, 40
    w = randn(rng, (K, N), scale=0.2)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "W"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [3, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, N])],
        [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    quant = MatMulNBitsQuantizer(model, block_size=32, is_symmetric=False, accuracy_level=4)
    quant.process()
    qmodel = quant.model.model
    nodes = [n for n in qmodel.graph.node if n.op_type == "MatMulNBits"]
    if len(nodes) != 1:
        raise SystemExit(f"MatMulNBitsQuantizer wrote {len(nodes)} MatMulNBits nodes")
    node = nodes[0]
    inits = {t.name: numpy_helper.to_array(t) for t in qmodel.graph.initializer}
    inputs = [("A", randn(rng, (3, K)), True)]
    for name in list(node.input)[1:]:
        inputs.append((name, inits[name], False) if name else None)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return Case("test_matmulnbits_ort_quantizer", "MatMulNBits", inputs, attrs=attrs)


def cases(rng):
    # fp32 compute (accuracy_level 0): the matrix-vector kernels (up to 4 rows) and the GEMM.
    yield nbits_case("4b_b32_m1_rank1", rng, 64, 24, (64,), block=32)
    yield nbits_case("4b_b16_rank3_nozp_bias", rng, 100, 40, (2, 3, 100), block=16, zp=None, bias=True)
    yield nbits_case("4b_b64_m5_gemm", rng, 256, 70, (5, 256), block=64)
    yield nbits_case("4b_b128_m2_k300", rng, 300, 33, (2, 300), block=128, scales_2d=True)
    yield nbits_case("4b_b256_m9_bias", rng, 512, 48, (9, 512), block=256, bias=True)
    yield nbits_case("4b_b32_m40_gemm", rng, 200, 100, (40, 200), block=32, bias=True)
    yield nbits_case("8b_b32_m1", rng, 96, 20, (1, 96), bits=8, block=32)
    yield nbits_case("8b_b128_m6_nozp", rng, 200, 50, (6, 200), bits=8, block=128, zp=None)
    yield nbits_case("8b_b16_m3_bias", rng, 40, 35, (3, 40), bits=8, block=16, bias=True)
    yield nbits_case("2b_b16_m3", rng, 64, 20, (3, 64), bits=2, block=16)
    yield nbits_case("2b_b32_m7_nozp", rng, 90, 36, (7, 90), bits=2, block=32, zp=None)
    yield nbits_case("4b_floatzp_m3", rng, 128, 24, (3, 128), block=32, zp="float")
    yield nbits_case("4b_floatzp_m8_bias", rng, 150, 30, (8, 150), block=64, zp="float", bias=True)
    # B (weights) a graph input: packed at run time; accuracy_level 4 then computes in fp32.
    yield nbits_case("4b_b_input", rng, 80, 20, (2, 80), block=16, b_feed=True)
    yield nbits_case("4b_b_input_level4", rng, 128, 20, (3, 128), block=32, b_feed=True, level=4)
    # g_idx (act-order).
    yield nbits_case("4b_gidx_nozp", rng, 128, 16, (2, 128), block=32, zp=None, g_idx=rng.integers(0, 4, 128).astype(np.int32))
    yield nbits_case("4b_gidx_floatzp_m6", rng, 100, 24, (6, 100), block=16, zp="float",
                     g_idx=rng.integers(0, 7, 100).astype(np.int32), bias=True)
    yield nbits_case("4b_gidx_u8zp_ref", rng, 96, 20, (3, 96), block=32, g_idx=rng.integers(0, 3, 96).astype(np.int32),
                     reference=gidx_u8_reference)
    # float16 A (ONNX Runtime computes in fp32 and rounds the result).
    yield nbits_case("4b_fp16_m2_bias", rng, 64, 16, (2, 64), block=32, dtype=np.float16, bias=True)
    yield nbits_case("8b_fp16_m5", rng, 48, 12, (5, 48), bits=8, block=16, dtype=np.float16)
    yield nbits_case("4b_fp16_level4", rng, 96, 16, (3, 96), block=32, dtype=np.float16, level=4)
    # accuracy_level 4: A quantized to int8 per block, integer dot products.
    yield nbits_case("4b_level4_b16_m1", rng, 80, 40, (1, 80), block=16, level=4)
    yield nbits_case("4b_level4_b32_m7", rng, 300, 70, (7, 300), block=32, level=4, bias=True)
    yield nbits_case("4b_level4_b64_rank3", rng, 256, 33, (2, 3, 256), block=64, level=4, zp=None)
    yield nbits_case("4b_level4_b128_m4", rng, 384, 64, (4, 384), block=128, level=4)
    yield nbits_case("4b_level4_b256_m2", rng, 700, 20, (2, 700), block=256, level=4)
    yield nbits_case("4b_level4_b512_m3", rng, 1100, 16, (3, 1100), block=512, level=4)
    yield nbits_case("8b_level4_b32_m5", rng, 160, 36, (5, 160), bits=8, block=32, level=4)
    yield nbits_case("8b_level4_b128_m1_nozp", rng, 256, 24, (1, 256), bits=8, block=128, level=4, zp=None)
    yield nbits_case("2b_level4_b64_m3", rng, 200, 24, (3, 200), bits=2, block=64, level=4)
    yield nbits_case("2b_level4_b16_fp32", rng, 64, 24, (2, 64), bits=2, block=16, level=4)
    yield nbits_case("4b_level4_floatzp_fp32", rng, 64, 24, (2, 64), block=32, level=4, zp="float")
    yield nbits_case("4b_level1_m2", rng, 64, 24, (2, 64), block=32, level=1)
    yield ort_quantizer_case(rng)
