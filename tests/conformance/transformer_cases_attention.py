"""Cases of make_transformer_tests.py: com.microsoft Attention (the BERT / GPT-2 form: one input
projected by packed Q, K, V weights, past as one [2, B, N, P, H] tensor) and MultiHeadAttention
(projected Q, K, V; past_key / past_value; cross attention)."""
import numpy as np
from transformer_common import Case, randn


def attention_case(rng, name, B, S, hidden, heads, P=0, mask=None, unidirectional=0, bias=True, attn_bias=None,
                   sizes=None, scale=None, mask_filter=None, in_hidden=None, present=None, mask_feed=True):
    in_hidden = in_hidden or hidden
    dq, dk, dv = sizes or (hidden, hidden, hidden)
    x = randn(rng, [B, S, in_hidden])
    w = randn(rng, [in_hidden, dq + dk + dv], scale=1.0 / np.sqrt(in_hidden))  # Q, K, V of unit scale
    inputs = [("x", x, True), ("w", w, False), ("bias", randn(rng, [dq + dk + dv]), False) if bias else None]
    inputs.append(("mask", mask, mask_feed) if mask is not None else None)
    if P:
        inputs.append(("past", randn(rng, [2, B, heads, P, dq // heads]), True))
    else:
        inputs.append(None)
    inputs.append(("attn_bias", attn_bias, True) if attn_bias is not None else None)
    attrs = {"num_heads": heads}
    if unidirectional:
        attrs["unidirectional"] = 1
    if sizes:
        attrs["qkv_hidden_sizes"] = list(sizes)
    if scale is not None:
        attrs["scale"] = scale
    if mask_filter is not None:
        attrs["mask_filter_value"] = mask_filter
    want_present = P > 0 if present is None else present
    return Case(name, "Attention", inputs, outputs=("y", "present") if want_present else ("y",), attrs=attrs)


def lengths_mask(rng, B, T, with_start=False):
    ends = rng.integers(1, T + 1, size=[B]).astype(np.int32)
    if not with_start:
        return ends
    starts = np.array([rng.integers(0, e) for e in ends], np.int32)
    return np.concatenate([ends, starts])


def raw_mask(rng, shape):
    m = (rng.random(size=shape) > 0.3).astype(np.int32)
    m[..., 0] = 1  # every row sees at least one key
    return m


def attention_cases(rng):
    B, S, Hd, N = 2, 5, 16, 2
    yield attention_case(rng, "test_ms_attention_plain", B, S, Hd, N)
    yield attention_case(rng, "test_ms_attention_nobias", B, S, Hd, N, bias=False)
    yield attention_case(rng, "test_ms_attention_causal", B, S, Hd, N, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_mask_lengths", B, S, Hd, N, mask=lengths_mask(rng, B, S))
    yield attention_case(rng, "test_ms_attention_mask_start_end", B, S, Hd, N, mask=lengths_mask(rng, B, S, True))
    yield attention_case(rng, "test_ms_attention_mask_2d", B, S, Hd, N, mask=raw_mask(rng, [B, S]))
    yield attention_case(rng, "test_ms_attention_mask_2d_causal", B, S, Hd, N, mask=raw_mask(rng, [B, S]), unidirectional=1)
    yield attention_case(rng, "test_ms_attention_mask_3d", B, S, Hd, N, mask=raw_mask(rng, [B, S, S]))
    yield attention_case(rng, "test_ms_attention_mask_filter", B, S, Hd, N, mask=raw_mask(rng, [B, S]), mask_filter=-1e9)
    yield attention_case(rng, "test_ms_attention_scale", B, S, Hd, N, scale=0.2)
    yield attention_case(rng, "test_ms_attention_in_hidden", B, S, Hd, N, in_hidden=24)
    yield attention_case(rng, "test_ms_attention_sizes", B, S, 16, 2, sizes=(16, 16, 24))
    yield attention_case(rng, "test_ms_attention_bias4d", B, S, Hd, N, attn_bias=randn(rng, [B, N, S, S]))
    yield attention_case(rng, "test_ms_attention_bias4d_b1", B, S, Hd, N, attn_bias=randn(rng, [1, N, S, S]))
    yield attention_case(rng, "test_ms_attention_present", B, S, Hd, N, present=True, unidirectional=1)
    # GPT-2's decoding: past, causal, a 2-D mask over past and new tokens.
    P = 7
    yield attention_case(rng, "test_ms_attention_past", B, 1, Hd, N, P=P, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_past_prompt", B, 3, Hd, N, P=P, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_past_mask", B, 1, Hd, N, P=P, unidirectional=1, mask=raw_mask(rng, [B, P + 1]))
    yield attention_case(rng, "test_ms_attention_past_noncausal", B, 2, Hd, N, P=P)
    yield attention_case(rng, "test_ms_attention_empty_past", B, 4, Hd, N, P=0, present=True, unidirectional=1)
    # Larger: split over threads (BERT-base's sizes).
    yield attention_case(rng, "test_ms_attention_bert", 1, 128, 768, 12, mask=raw_mask(rng, [1, 128]))
    yield attention_case(rng, "test_ms_attention_gpt2_prompt", 1, 64, 768, 12, unidirectional=1, present=True)
    yield attention_case(rng, "test_ms_attention_gpt2_step", 2, 1, 768, 12, P=63, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_odd_head", 1, 9, 15, 3)


def mha_case(rng, name, B, S, D, N, L=None, Dv=None, P=0, bias=False, kpm=None, attn_bias=None, scale=None, cross_bnsh=False,
             outputs=None, unidirectional=0):
    L = S if L is None else L
    Dv = Dv or D
    H, Hv = D // N, Dv // N
    inputs = [("q", randn(rng, [B, S, D]), True)]
    if cross_bnsh:
        inputs += [("k", randn(rng, [B, N, L, H]), True), ("v", randn(rng, [B, N, L, Hv]), True)]
    else:
        inputs += [("k", randn(rng, [B, L, D]), True), ("v", randn(rng, [B, L, Dv]), True)]
    inputs.append(("bias", randn(rng, [D + D + Dv]), False) if bias else None)
    inputs.append(("kpm", kpm, True) if kpm is not None else None)
    inputs.append(("attn_bias", attn_bias, True) if attn_bias is not None else None)
    if P:
        inputs += [("past_k", randn(rng, [B, N, P, H]), True), ("past_v", randn(rng, [B, N, P, Hv]), True)]
    attrs = {"num_heads": N}
    if scale is not None:
        attrs["scale"] = scale
    if unidirectional:
        attrs["unidirectional"] = 1
    outs = outputs or (("y", "present_k", "present_v") if P else ("y",))
    return Case(name, "MultiHeadAttention", inputs, outputs=outs, attrs=attrs)


def mha_cases(rng):
    B, S, D, N = 2, 5, 16, 2
    yield mha_case(rng, "test_ms_mha_plain", B, S, D, N)
    yield mha_case(rng, "test_ms_mha_bias", B, S, D, N, bias=True)
    yield mha_case(rng, "test_ms_mha_cross", B, S, D, N, L=7, Dv=24)
    yield mha_case(rng, "test_ms_mha_cross_bias", B, S, D, N, L=7, bias=True)
    yield mha_case(rng, "test_ms_mha_kpm_lengths", B, S, D, N, L=6, kpm=lengths_mask(rng, B, 6))
    yield mha_case(rng, "test_ms_mha_kpm_2d", B, S, D, N, L=6, kpm=raw_mask(rng, [B, 6]))
    yield mha_case(rng, "test_ms_mha_attn_bias", B, S, D, N, attn_bias=randn(rng, [B, N, S, S]))
    yield mha_case(rng, "test_ms_mha_attn_bias_b1", B, S, D, N, attn_bias=randn(rng, [1, N, S, S]))
    yield mha_case(rng, "test_ms_mha_scale", B, S, D, N, scale=0.3)
    yield mha_case(rng, "test_ms_mha_causal", B, S, D, N, unidirectional=1)
    yield mha_case(rng, "test_ms_mha_past", B, 1, D, N, P=6)
    yield mha_case(rng, "test_ms_mha_past_causal", B, 3, D, N, P=6, unidirectional=1)
    yield mha_case(rng, "test_ms_mha_past_kpm", B, 1, D, N, P=6, kpm=raw_mask(rng, [B, 7]))
    yield mha_case(rng, "test_ms_mha_past_bias", B, 2, D, N, P=4, bias=True)
    yield mha_case(rng, "test_ms_mha_cross_bnsh", B, S, D, N, L=7, cross_bnsh=True)
    yield mha_case(rng, "test_ms_mha_present_only", B, S, D, N, outputs=("y", "present_k", "present_v"))
    yield mha_case(rng, "test_ms_mha_large", 1, 128, 768, 12, kpm=raw_mask(rng, [1, 128]))
    yield mha_case(rng, "test_ms_mha_large_step", 2, 1, 768, 12, P=100, bias=True)


def masking_cases():
    """Rows that padding hides every key of, and a mask_filter_value near the scores, with and
    without causality: ORT adds mask_filter_value where padding hides a key and leaves the keys after
    a row's position out of its softmax. (An rng of their own: the cases above keep their data.)"""
    rng = np.random.default_rng(2026)
    B, S, Hd, N = 2, 6, 16, 2
    left = np.ones([B, S], np.int32)
    left[0, :3] = 0  # left padding: rows 0-2 of batch 0 see padded keys only
    yield attention_case(rng, "test_ms_attention_left_padding_causal", B, S, Hd, N, mask=left, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_left_padding", B, S, Hd, N, mask=left)
    yield attention_case(rng, "test_ms_attention_mask_filter_small_causal", B, S, Hd, N, mask=raw_mask(rng, [B, S]),
                         mask_filter=-2.0, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_causal_mask_filter_small", B, S, Hd, N, mask_filter=-2.0, unidirectional=1)
    yield attention_case(rng, "test_ms_attention_lengths_causal_past", B, 3, Hd, N, P=4, mask=lengths_mask(rng, B, 7, True),
                         unidirectional=1)
    long = np.ones([B, 80], np.int32)  # 80 query rows: two blocks of them in the CPU kernel
    long[0, 70:] = 0
    long[1, :5] = 0
    yield attention_case(rng, "test_ms_attention_long_padding_causal", B, 80, Hd, N, mask=long, unidirectional=1)
    yield mha_case(rng, "test_ms_mha_left_padding_causal", B, S, Hd, N, kpm=left, unidirectional=1)
    middle = np.ones([B, S], np.int32)
    middle[0, 2:4] = 0
    yield mha_case(rng, "test_ms_mha_padding_causal_bias", B, S, Hd, N, kpm=middle, attn_bias=randn(rng, [1, N, S, S]),
                   unidirectional=1)


def cases(rng):
    yield from attention_cases(rng)
    yield from mha_cases(rng)
    yield from masking_cases()
