"""InferenceSession.generate (onyx::Generator): greedy decoding over a decoder's key/value cache,
the same tokens as ONNX Runtime's loop (tests/models/ort_generate.py) on the example decoders."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import onyx
from conftest import EXAMPLE_MODELS, REPO

DECODER = EXAMPLE_MODELS / "tiny_decoder.onnx"
GQA_DECODER = EXAMPLE_MODELS / "tiny_decoder_gqa.onnx"


def ort_tokens(model, prompt, new_tokens):
    pytest.importorskip("onnxruntime")
    out = subprocess.run([sys.executable, str(REPO / "tests" / "models" / "ort_generate.py"), str(model), "--prompt-ids",
                          ",".join(map(str, prompt)), "--max-new-tokens", str(new_tokens)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tokens"]


@pytest.mark.parametrize("model", [DECODER, GQA_DECODER], ids=["mha", "gqa"])
def test_tokens_as_onnxruntime(model):
    s = onyx.InferenceSession(str(model))
    r = s.generate([3, 1, 4, 1, 5], max_new_tokens=20)
    assert r["tokens"] == ort_tokens(model, [3, 1, 4, 1, 5], 20)
    assert r["prompt_tokens"] == 5
    assert len(r["step_ms"]) == 19
    assert r["time_to_first_token_ms"] > 0 and r["decode_tokens_per_s"] > 0
    assert r["cache_copy_bytes"] == 0
    assert len(r["cache"]) == 4 and r["cache"][0] == ("past_key_values.0.key", "present.0.key")


def test_shared_buffer_is_written_in_place():
    s = onyx.InferenceSession(str(GQA_DECODER))
    plain = s.generate([9, 8, 7], max_new_tokens=10)
    shared = s.generate([9, 8, 7], max_new_tokens=10, share_buffer=True, max_length=64)
    assert shared["tokens"] == plain["tokens"]
    assert shared["cache_copy_bytes"] == 0


def test_stops_at_an_end_token():
    s = onyx.InferenceSession(str(DECODER))
    first = s.generate([1, 2, 3], max_new_tokens=8)["tokens"]
    r = s.generate([1, 2, 3], max_new_tokens=8, eos_token_ids=[first[2]])
    assert r["tokens"] == first[: first.index(first[2]) + 1]


def test_wrong_uses_are_errors():
    with pytest.raises(onyx.InvalidArgument, match="none the generator fills"):
        onyx.InferenceSession(str(EXAMPLE_MODELS / "tiny_cnn.onnx")).generate([1], max_new_tokens=2)
    s = onyx.InferenceSession(str(DECODER))
    with pytest.raises(onyx.InvalidArgument, match="prompt is empty"):
        s.generate([], max_new_tokens=2)
    with pytest.raises(onyx.InvalidArgument, match="generate with share_buffer"):
        s.generate([1, 2], max_new_tokens=2, share_buffer=True)
