"""Cases of make_transformer_tests.py: com.microsoft GroupQueryAttention and RotaryEmbedding.

GroupQueryAttention's present_key / present_value are compared whole, so every case leaves each
present position defined: ONNX Runtime zero-fills what a batch entry does not write when present
is its own buffer, and where the past buffer already holds the whole sequence (present as long as
past) onyx keeps the past buffer's rows there (what sharing the buffer gives), so those cases pass
pasts whose rows beyond each entry's past length are zeros, as a generation loop's buffer is.
float16 cases keep keys and values below 2^-7, where a last-bit difference of float16 rounding
stays within the tolerances.
"""
import numpy as np

from transformer_common import Case, randn, uniform

OUTS = ("y", "present_key", "present_value")


def rope_cache(max_pos, rotary_dim, dtype=np.float32):
    inv = 1.0 / (10000 ** (np.arange(0, rotary_dim, 2) / rotary_dim))
    f = np.outer(np.arange(max_pos), inv)
    return np.cos(f).astype(dtype), np.sin(f).astype(dtype)


def gqa_case(rng, name, B, S, N, NK, H, seqlens, total, past=None, dtype=np.float32, packed=False, attrs=None,
             rotary_dim=0, max_pos=None, position_ids=None, bias_shape=None, head_sink=False, qk=False, zero_tail=False,
             total_const=False):
    small = dtype == np.float16
    kv = (lambda shape: uniform(rng, shape, -0.0078, 0.0078, dtype)) if small else (lambda shape: randn(rng, shape, dtype))
    q = (lambda shape: randn(rng, shape, dtype, 8.0)) if small else (lambda shape: randn(rng, shape, dtype))
    inputs = []
    if packed:
        qkv = np.concatenate([q((B, S, N * H)), kv((B, S, 2 * NK * H))], axis=2)
        inputs += [("query", qkv, True), None, None]
    else:
        inputs += [("query", q((B, S, N * H)), True), ("key", kv((B, S, NK * H)), True), ("value", kv((B, S, NK * H)), True)]
    if past is not None:
        pk, pv = kv((B, NK, past, H)), kv((B, NK, past, H))
        if zero_tail:  # rows past each entry's past length are zeros (a generation loop's buffer)
            for b in range(B):
                p = 0 if S == total else int(seqlens[b]) + 1 - S
                pk[b, :, p:] = 0
                pv[b, :, p:] = 0
        inputs += [("past_key", pk, True), ("past_value", pv, True)]
    else:
        inputs += [None, None]
    inputs.append(("seqlens_k", np.array(seqlens, np.int32), True))
    inputs.append(("total_sequence_length", np.array(total, np.int32), not total_const))
    a = {"num_heads": N, "kv_num_heads": NK}
    a.update(attrs or {})
    if rotary_dim:
        c, s = rope_cache(max_pos or total + 4, rotary_dim, dtype)
        inputs += [("cos_cache", c, False), ("sin_cache", s, False)]
        a.setdefault("do_rotary", 1)
    else:
        inputs += [None, None]
    inputs.append(("position_ids", np.array(position_ids, np.int64), True) if position_ids is not None else None)
    inputs.append(("attention_bias", randn(rng, bias_shape, dtype), True) if bias_shape else None)
    inputs.append(("head_sink", randn(rng, (N,), dtype), True) if head_sink else None)
    outs = OUTS + (("output_qk",) if qk else ())
    return Case(name, "GroupQueryAttention", inputs, outputs=outs, attrs=a)


def rotary_case(rng, name, x_shape, pos, half, attrs=None, dtype=np.float32, max_pos=24):
    f = rng.uniform(0, 6, (max_pos, half))
    inputs = [("input", randn(rng, x_shape, dtype), True), ("position_ids", np.array(pos, np.int64), True),
              ("cos_cache", np.cos(f).astype(dtype), False), ("sin_cache", np.sin(f).astype(dtype), False)]
    return Case(name, "RotaryEmbedding", inputs, attrs=attrs or {})


def cases(rng):
    g = lambda *a, **k: gqa_case(rng, *a, **k)  # noqa: E731
    # The first prompt (no past, an empty past), token generation, several new tokens after a past.
    yield g("test_gqa_prompt", 1, 16, 4, 2, 64, [15], 16)
    yield g("test_gqa_prompt_empty_past", 1, 12, 4, 2, 64, [11], 12, past=0)
    yield g("test_gqa_prompt_const_total", 1, 10, 4, 2, 64, [9], 10, total_const=True)
    yield g("test_gqa_decode", 1, 1, 8, 2, 64, [16], 17, past=16)
    yield g("test_gqa_decode_group1", 1, 1, 4, 4, 64, [20], 21, past=20)
    yield g("test_gqa_multi_token", 1, 4, 8, 2, 64, [15], 16, past=12)
    # The past buffer already holds the whole sequence (ONNX Runtime's shared past / present).
    yield g("test_gqa_decode_share_buffer", 1, 1, 8, 2, 64, [16], 17, past=32, zero_tail=True)
    yield g("test_gqa_prompt_share_buffer", 1, 6, 4, 2, 64, [5], 6, past=16, zero_tail=True)
    # Batches: a right-padded prompt, token generation with different lengths.
    yield g("test_gqa_batch2_padded_prompt", 2, 8, 4, 2, 64, [7, 4], 8)
    yield g("test_gqa_batch2_decode", 2, 1, 4, 2, 64, [10, 6], 11, past=10)
    yield g("test_gqa_batch2_decode_share_buffer", 2, 1, 4, 2, 64, [10, 6], 11, past=16, zero_tail=True)
    # Head counts and sizes.
    yield g("test_gqa_mha_h80", 1, 9, 4, 4, 80, [8], 9)
    yield g("test_gqa_group4_h128", 1, 5, 8, 2, 128, [20], 21, past=16)
    yield g("test_gqa_h8", 2, 7, 6, 3, 8, [6, 6], 7)
    yield g("test_gqa_h24_decode", 1, 1, 6, 2, 24, [9], 10, past=9)
    yield g("test_gqa_prefill_blocks", 1, 64, 8, 2, 64, [63], 64, rotary_dim=64)
    yield g("test_gqa_prefill_blocks_mha", 2, 40, 4, 4, 64, [39, 25], 40)
    # Rotary embedding of Q and K (halves and interleaved, partial, explicit positions).
    for il in (0, 1):
        yield g(f"test_gqa_rotary_prompt_il{il}", 1, 8, 4, 2, 64, [7], 8, rotary_dim=64, attrs={"rotary_interleaved": il})
        yield g(f"test_gqa_rotary_decode_il{il}", 2, 1, 4, 2, 64, [9, 5], 10, past=9, rotary_dim=64,
                attrs={"rotary_interleaved": il})
        yield g(f"test_gqa_rotary_multi_il{il}", 1, 3, 4, 2, 64, [11], 12, past=9, rotary_dim=64,
                attrs={"rotary_interleaved": il})
    yield g("test_gqa_rotary_partial", 1, 6, 4, 2, 64, [5], 6, rotary_dim=32)
    yield g("test_gqa_rotary_padded_prompt", 2, 6, 4, 2, 32, [5, 3], 6, rotary_dim=32)
    yield g("test_gqa_rotary_position_ids", 1, 5, 4, 2, 64, [4], 5, rotary_dim=64, max_pos=16,
            position_ids=[[3, 4, 5, 6, 7]])
    yield g("test_gqa_rotary_position_ids_decode", 2, 1, 4, 2, 64, [7, 4], 8, past=7, rotary_dim=64, max_pos=16,
            position_ids=[[11], [2]])
    yield g("test_gqa_packed_qkv", 1, 6, 4, 2, 64, [5], 6)
    yield g("test_gqa_packed_qkv_rotary_decode", 2, 1, 4, 2, 64, [6, 3], 7, past=6, packed=True, rotary_dim=64,
            attrs={"rotary_interleaved": 1})
    # Local window, softcap, scale, bias, sinks, the QK output.
    yield g("test_gqa_local_window", 1, 12, 4, 2, 64, [11], 12, attrs={"local_window_size": 4})
    yield g("test_gqa_local_window_decode", 1, 1, 4, 2, 64, [12], 13, past=12, attrs={"local_window_size": 5})
    yield g("test_gqa_local_window_padded", 2, 8, 4, 2, 64, [7, 3], 8, attrs={"local_window_size": 3})
    yield g("test_gqa_softcap", 1, 8, 4, 2, 64, [7], 8, attrs={"softcap": 2.0})
    yield g("test_gqa_softcap_decode", 1, 1, 4, 2, 64, [7], 8, past=7, attrs={"softcap": 1.5})
    yield g("test_gqa_scale", 1, 6, 4, 2, 64, [5], 6, attrs={"scale": 0.05})
    yield g("test_gqa_attention_bias", 1, 6, 4, 2, 64, [5], 6, bias_shape=(1, 4, 6, 6))
    yield g("test_gqa_attention_bias_bcast_decode", 2, 1, 4, 2, 64, [6, 4], 7, past=6, bias_shape=(2, 1, 1, 7))
    yield g("test_gqa_smooth_softmax", 1, 6, 4, 2, 64, [5], 6, attrs={"smooth_softmax": 1})
    yield g("test_gqa_head_sink", 1, 6, 4, 2, 64, [5], 6, head_sink=True)
    yield g("test_gqa_head_sink_decode", 1, 1, 4, 2, 64, [8], 9, past=8, head_sink=True)
    yield g("test_gqa_qk_output_scores", 1, 6, 4, 2, 64, [5], 6, qk=True, attrs={"qk_output": 1, "softcap": 3.0},
            bias_shape=(1, 4, 6, 6))
    yield g("test_gqa_qk_output_probs", 2, 1, 4, 2, 64, [6, 3], 7, past=6, qk=True, attrs={"qk_output": 2})
    yield g("test_gqa_qk_output_window", 1, 7, 4, 2, 64, [6], 7, qk=True, attrs={"qk_output": 1, "local_window_size": 3})
    # float16.
    yield g("test_gqa_fp16_prompt", 1, 8, 4, 2, 64, [7], 8, dtype=np.float16)
    yield g("test_gqa_fp16_decode_rotary", 2, 1, 8, 2, 64, [9, 6], 10, past=9, dtype=np.float16, rotary_dim=64)
    yield g("test_gqa_fp16_prefill_rotary_il", 1, 24, 4, 2, 64, [23], 24, dtype=np.float16, rotary_dim=64,
            attrs={"rotary_interleaved": 1})
    yield g("test_gqa_fp16_multi_token_share_buffer", 1, 3, 4, 2, 64, [8], 9, past=12, dtype=np.float16, zero_tail=True)

    # com.microsoft RotaryEmbedding.
    r = lambda *a, **k: rotary_case(rng, *a, **k)  # noqa: E731
    for il in (0, 1):
        yield r(f"test_ms_rotary_3d_il{il}", (2, 3, 4 * 16), rng.integers(0, 24, (2, 3)), 8, {"interleaved": il})
        yield r(f"test_ms_rotary_4d_il{il}", (2, 4, 3, 16), rng.integers(0, 24, (2, 3)), 8, {"interleaved": il})
        yield r(f"test_ms_rotary_partial_il{il}", (2, 3, 4 * 16), rng.integers(0, 24, (2, 3)), 4,
                {"interleaved": il, "num_heads": 4, "rotary_embedding_dim": 8})
    yield r("test_ms_rotary_offset", (2, 5, 3 * 8), [7], 4)
    yield r("test_ms_rotary_num_heads", (1, 4, 2 * 32), [[0, 3, 9, 20]], 16, {"num_heads": 2})
    yield r("test_ms_rotary_4d_partial", (1, 2, 5, 32), [[1, 2, 3, 4, 5]], 8, {"num_heads": 2, "rotary_embedding_dim": 16})
    yield r("test_ms_rotary_head6", (1, 3, 2 * 6), [1], 3)
    yield r("test_ms_rotary_fp16", (2, 3, 4 * 16), rng.integers(0, 24, (2, 3)), 8, {"interleaved": 1}, dtype=np.float16)
    yield r("test_ms_rotary_fp16_4d", (1, 2, 4, 16), [2], 8, dtype=np.float16)
