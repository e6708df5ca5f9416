#!/usr/bin/env python3
"""Greedy decoding with ONNX Runtime: the reference for `onyx generate` (tests/models/generate_test.sh).

    python ort_generate.py MODEL --prompt-ids 1,2,3 [--max-new-tokens N] [--threads T] [--runs R]

Run with the ONNX Runtime venv (.cache/ort-venv). The loop is the one onyx::Generator runs
(include/onyx/generate.hpp): input_ids, attention_mask (ones over past and new tokens), position_ids
(past length onwards), and the cache inputs (every input named past...: empty at the prompt, then
the present outputs of the previous step, paired by layer number and key/value); the next token is
the argmax of the last row of the logits (the first of equal ones). The cache stays in ONNX
Runtime's memory between steps (OrtValues through IOBinding), as an ORT user would keep it. Prints
one JSON object: the tokens, time to first token and decode tokens/s (medians over the runs after
the first when --runs > 1).
"""
import argparse
import json
import re
import time

import numpy as np
import onnxruntime as ort

NP = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32, "tensor(float16)": np.float16,
      "tensor(bool)": np.bool_}


def cache_key(name):
    n = name.lower().replace("past_key_values", "").replace("key_values", "")
    m = re.search(r"\d+", n)
    part = "key" if "key" in n else "value" if "value" in n else ""
    return (int(m.group()), part) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    prompt = [int(x) for x in a.prompt_ids.split(",")]
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    ins = {i.name: i for i in s.get_inputs()}
    outs = [o.name for o in s.get_outputs()]
    presents = {cache_key(o): o for o in outs if "present" in o.lower()}
    logits = next((o for o in outs if o.lower() == "logits"), None) or next(o for o in outs if "present" not in o.lower())
    pasts = {}
    for n, i in ins.items():
        if "past" in n.lower():
            shape = [1 if k == (0 if len(i.shape) == 4 else 1) else (2 if len(i.shape) == 5 and k == 0 else d) for k, d in enumerate(i.shape)]
            shape[2 if len(i.shape) == 4 else 3] = 0
            pasts[n] = (presents[cache_key(n)], shape, NP[i.type])

    def generate():
        tokens, step_ms = [], []
        binding = s.io_binding()
        cache = {n: ort.OrtValue.ortvalue_from_numpy(np.zeros(shape, dt)) for n, (_, shape, dt) in pasts.items()}
        ids, past, ttft = list(prompt), 0, 0.0
        for step in range(a.max_new_tokens):
            t0 = time.perf_counter()
            binding.clear_binding_inputs()
            binding.clear_binding_outputs()
            binding.bind_cpu_input("input_ids", np.array([ids], NP[ins["input_ids"].type]))
            if "attention_mask" in ins:
                binding.bind_cpu_input("attention_mask", np.ones([1, past + len(ids)], NP[ins["attention_mask"].type]))
            if "position_ids" in ins:
                binding.bind_cpu_input("position_ids", np.arange(past, past + len(ids), dtype=NP[ins["position_ids"].type])[None, :])
            for n, v in cache.items():
                binding.bind_ortvalue_input(n, v)
            for o in outs:
                binding.bind_output(o, "cpu")
            s.run_with_iobinding(binding)
            got = dict(zip(outs, binding.get_outputs()))
            token = int(np.argmax(got[logits].numpy()[0, -1]))
            cache = {n: got[present] for n, (present, _, _) in pasts.items()}
            past += len(ids)
            ids = [token]
            tokens.append(token)
            ms = (time.perf_counter() - t0) * 1000
            if step == 0:
                ttft = ms
            else:
                step_ms.append(ms)
        return tokens, ttft, (1000.0 * len(step_ms) / sum(step_ms)) if step_ms else 0.0

    results = [generate() for _ in range(a.runs)]
    timed = results[1:] if len(results) > 1 else results
    med = lambda v: sorted(v)[len(v) // 2]
    print(json.dumps({"tokens": results[-1][0], "time_to_first_token_ms": med([r[1] for r in timed]),
                      "decode_tokens_per_s": med([r[2] for r in timed]), "runs": a.runs, "threads": a.threads}))


if __name__ == "__main__":
    main()
