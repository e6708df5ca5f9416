#!/usr/bin/env python3
"""Greedy generation at full size, onyx beside ONNX Runtime: time to first token (the prefill) and
decode tokens/s of `onyx generate` and of ONNX Runtime's loop (tests/models/ort_generate.py) on the
same decoders, prompt and threads.

    .cache/ort-venv/bin/python bench/generate_bench.py [--threads 1,2] [--runs 4] [--repeat 1]
                                                       [--profile] [--models a,b]

Models (made once by tests/models/make_transformer_models.py --size full, cached in
.cache/bench-decoders with a stamp of the generator and the versions; random weights):
  gpt2_full_opt         GPT-2, 12 layers, hidden 768, 12 heads, FFN 3072, vocab 50257; fp32, ORT's
                        optimizer (com.microsoft Attention with past and present)
  llama_full            Llama, 12 layers, hidden 768, 12 heads, 4 KV heads, FFN 2048, vocab 32000;
                        fp32, GroupQueryAttention as ORT's Llama tool makes it
  llama_full_int4       llama_full by MatMulNBitsQuantizer (4 bits, block 32, symmetric; the
                        quantizer's default accuracy level: none, fp32 compute)
  llama_full_int4_acc4  the same with accuracy_level=4 (int8 compute)

Each model runs at each thread count with a --prompt-len token prompt (random ids below 32000 from
--seed) and --new-tokens new tokens, --runs times in one process (medians over the runs after the
first): onyx generate, ONNX Runtime's loop, and for GroupQueryAttention models onyx generate
--share-buffer. --repeat N makes N rounds, each running every runtime once in turn: the table gives
each runtime's best round (a busy machine only slows a run down) and, as the ratio, the median over
rounds of each round's onyx / ORT ratio (a slow spell of a shared machine falls on both sides of a
round). The tokens of every onyx run must be ORT's; a mismatch is reported.

--profile also writes one prefill step's inputs and one decode step's (past length prompt + new
tokens / 2) under .cache/bench-decoders/NAME/steps and times them per op type: onyx bench --profile
(its Chrome trace) beside ONNX Runtime's profiler (SessionOptions.enable_profiling), ms per run.
"""
import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(REPO, "tests", "models", "make_transformer_models.py")
ORT_GENERATE = os.path.join(REPO, "tests", "models", "ort_generate.py")
HF_PY = os.path.join(REPO, ".cache", "hf-venv", "bin", "python")
ORT_PY = os.path.join(REPO, ".cache", "ort-venv", "bin", "python")
MODELS = ["gpt2_full_opt", "llama_full", "llama_full_int4", "llama_full_int4_acc4"]
PROMPT_VOCAB = 32000  # the smaller of the two vocabularies: one prompt for every model


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# the models
# ---------------------------------------------------------------------------------------------

def stamp():
    with open(GEN, "rb") as f:
        gen = hashlib.sha256(f.read()).hexdigest()[:16]
    hf = subprocess.run([HF_PY, "-c", "import torch, transformers; print(torch.__version__, transformers.__version__)"],
                        capture_output=True, text=True, check=True).stdout.strip()
    import onnxruntime
    return f"size full; torch, transformers {hf}; onnxruntime {onnxruntime.__version__}; generator {gen}"


def make_models(out):
    want = stamp()
    done = os.path.join(out, ".complete")
    if os.path.exists(done) and open(done).read().strip() == want:
        return
    log(f"making the full-size decoders in {out} (a few minutes) ...")
    t0 = time.time()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "make.log"), "w") as lf:
        for py, stage in ((HF_PY, "export"), (ORT_PY, "finish")):
            r = subprocess.run([py, "-W", "ignore", GEN, stage, out, "--size", "full"], stdout=lf, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                sys.exit(f"make_transformer_models.py {stage} --size full failed: see {out}/make.log")
    import shutil
    shutil.rmtree(os.path.join(out, "export"), ignore_errors=True)
    with open(done, "w") as f:
        f.write(want + "\n")
    log(f"made in {time.time() - t0:.0f} s")


def is_gqa(model_dir):
    with open(os.path.join(model_dir, "meta.json")) as f:
        return any(k.endswith(":GroupQueryAttention") for k in json.load(f)["histogram"])


# ---------------------------------------------------------------------------------------------
# generation timings
# ---------------------------------------------------------------------------------------------

def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(a, model, prompt, threads, who):
    """One process of `who` (ort, onyx, onyx-sb): its medians over --runs generations."""
    ids = ",".join(map(str, prompt))
    common = ["--prompt-ids", ids, "--max-new-tokens", str(a.new_tokens), "--threads", str(threads), "--runs", str(a.runs)]
    if who == "ort":
        cmd = [sys.executable, ORT_GENERATE, model] + common
    else:
        cmd = [a.onyx, "generate", model] + common + ["--json"] + (["--share-buffer"] if who == "onyx-sb" else [])
    r = run_json(cmd)
    return {"ttft_ms": r["time_to_first_token_ms"], "tps": r["decode_tokens_per_s"], "tokens": r["tokens"]}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def timing_table(a, prompt):
    """Per model and thread count, --repeat rounds, each running every runtime once in turn (so a
    slow spell of the machine falls on both sides of a round): the best time of each runtime, and
    the median over rounds of each round's onyx / ORT ratio."""
    rows, notes = [], []
    for name in a.models:
        d = os.path.join(a.dir, name)
        model = os.path.join(d, "model.onnx")
        whos = ["ort", "onyx"] + (["onyx-sb"] if is_gqa(d) else [])
        for t in a.threads:
            rounds = {who: [] for who in whos}
            for k in range(a.repeat):
                for who in whos:
                    t0 = time.time()
                    r = measure(a, model, prompt, t, who)
                    rounds[who].append(r)
                    log(f"{name} t={t} round {k + 1} {who}: ttft {r['ttft_ms']:.1f} ms, {r['tps']:.2f} tok/s "
                        f"({time.time() - t0:.0f} s)")
                    if who != "ort" and r["tokens"] != rounds["ort"][k]["tokens"]:
                        same = next((i for i, (x, y) in enumerate(zip(r["tokens"], rounds["ort"][k]["tokens"])) if x != y), None)
                        notes.append(f"TOKENS DIFFER: {name} t={t} {who} from token {same}: "
                                     f"onyx {r['tokens']} ORT {rounds['ort'][k]['tokens']}")
            res = {}
            for who in whos:
                rs = rounds[who]
                res[who] = {"ttft_ms": min(r["ttft_ms"] for r in rs), "tps": max(r["tps"] for r in rs), "tokens": rs[0]["tokens"],
                            "same": all(r["tokens"] == rounds["ort"][0]["tokens"] for r in rs)}
                if who != "ort":  # paired: this runtime against ORT's run of the same round
                    res[who]["ttft_x"] = median([o["ttft_ms"] / r["ttft_ms"] for o, r in zip(rounds["ort"], rs)])
                    res[who]["tps_x"] = median([r["tps"] / o["tps"] for o, r in zip(rounds["ort"], rs)])
            rows.append((name, t, res))
    return rows, notes


def print_table(a, rows, notes):
    print(f"prompt {a.prompt_len} tokens (seed {a.seed}), {a.new_tokens} new tokens, --runs {a.runs} "
          f"(medians after the first), {a.repeat} round(s); times: the best round; x = onyx speed / ORT speed "
          f"(> 1: onyx faster), the median over rounds of each round's ratio")
    print(f"{'model':22} {'thr':>3} | {'TTFT ms onyx':>12} {'ORT':>8} {'x':>5} | {'decode tok/s onyx':>17} {'ORT':>7} "
          f"{'x':>5} | {'share-buffer TTFT':>17} {'tok/s':>7} {'x':>5} | tokens")
    for name, t, r in rows:
        o, ort = r["onyx"], r["ort"]
        line = (f"{name:22} {t:>3} | {o['ttft_ms']:12.1f} {ort['ttft_ms']:8.1f} {o['ttft_x']:5.2f} | "
                f"{o['tps']:17.2f} {ort['tps']:7.2f} {o['tps_x']:5.2f} | ")
        if "onyx-sb" in r:
            sb = r["onyx-sb"]
            line += f"{sb['ttft_ms']:17.1f} {sb['tps']:7.2f} {sb['tps_x']:5.2f} | "
        else:
            line += f"{'-':>17} {'-':>7} {'-':>5} | "
        line += "same" if all(r[w]["same"] for w in r) else "DIFFER"
        print(line)
    by = {(n, t): r for n, t, r in rows}
    for q in ("llama_full_int4", "llama_full_int4_acc4"):
        for t in a.threads:
            if (q, t) in by and ("llama_full", t) in by:
                qr, fr = by[(q, t)], by[("llama_full", t)]
                print(f"4-bit vs fp32 decode, {q} / llama_full, {t} thread(s): onyx "
                      f"{qr['onyx']['tps'] / fr['onyx']['tps']:.2f}x ({qr['onyx']['tps']:.2f} vs {fr['onyx']['tps']:.2f} tok/s)"
                      f", ORT {qr['ort']['tps'] / fr['ort']['tps']:.2f}x")
    for n in notes:
        print(n)


# ---------------------------------------------------------------------------------------------
# per-op-type profiles of one prefill step and one decode step
# ---------------------------------------------------------------------------------------------

def step_inputs(model_path, prompt, past_len):
    """The feeds of one step of the generation loop (ort_generate.py's): the prompt with an empty
    cache (past_len 0), or one token after past_len positions of cache (random values)."""
    import onnxruntime as ort
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    np_type = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32,
               "tensor(float16)": np.float16}
    rng = np.random.default_rng(7)
    ids = list(prompt) if past_len == 0 else [prompt[-1]]
    feeds = []
    for i in s.get_inputs():
        dt = np_type[i.type]
        if i.name == "input_ids":
            v = np.array([ids], dt)
        elif i.name == "attention_mask":
            v = np.ones([1, past_len + len(ids)], dt)
        elif i.name == "position_ids":
            v = np.arange(past_len, past_len + len(ids), dtype=dt)[None, :]
        elif "past" in i.name:
            five = len(i.shape) == 5  # GPT-2's [2, batch, heads, past, head]
            shape = [d if isinstance(d, int) else 1 for d in i.shape]
            shape[3 if five else 2] = past_len
            v = (rng.standard_normal(shape) * 0.5).astype(dt)
        else:
            raise RuntimeError(f"{model_path}: no value for input {i.name}")
        feeds.append((i.name, v))
    return feeds


def save_inputs(d, feeds):
    import onnx
    from onnx import numpy_helper
    os.makedirs(d, exist_ok=True)
    for j, (n, v) in enumerate(feeds):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(d, f"input_{j}.pb"))


def onyx_profile(a, model, inputs_dir, threads, runs):
    with tempfile.TemporaryDirectory() as td:
        trace = os.path.join(td, "trace.json")
        subprocess.run([a.onyx, "bench", model, "--inputs", inputs_dir, "--threads", str(threads), "--runs", str(runs),
                        "--warmup", "2", "--profile", trace, "--profile-runs", str(runs), "--no-progress"],
                       check=True, capture_output=True)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
    per = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and "op_type" in e.get("args", {}):
            per[e["args"]["op_type"]] += e["dur"] / 1000.0 / runs
    return per


def ort_profile(model, feeds, threads, runs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    with tempfile.TemporaryDirectory() as td:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(td, "ort")
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        fd = dict(feeds)
        for _ in range(2):
            s.run(None, fd)
        # Only the profiled runs after the warm-up: the trace's Node events of the last `runs` runs.
        for _ in range(runs):
            s.run(None, fd)
        path = s.end_profiling()
        with open(path) as f:
            events = json.load(f)
    node = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    model_runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    if len(model_runs) >= runs:
        start = sorted(e["ts"] for e in model_runs)[-runs]
        node = [e for e in node if e["ts"] >= start]
    per = collections.Counter()
    for e in node:
        per[e["args"]["op_name"]] += e["dur"] / 1000.0 / runs
    return per


def profiles(a, prompt):
    for name in a.models:
        d = os.path.join(a.dir, name)
        model = os.path.join(d, "model.onnx")
        past = a.prompt_len + a.new_tokens // 2
        for kind, past_len, runs in (("prefill", 0, 3), ("decode", past, 20)):
            feeds = step_inputs(model, prompt, past_len)
            sd = os.path.join(d, "steps", kind)
            save_inputs(sd, feeds)
            for t in a.profile_threads:
                on = onyx_profile(a, model, sd, t, runs)
                ox = ort_profile(model, feeds, t, runs)
                print(f"\n{name} {kind} (past {past_len}), {t} thread(s): ms per run in nodes, by op type "
                      f"(onyx {sum(on.values()):.2f}, ORT {sum(ox.values()):.2f})")
                print(f"  {'op type':34} {'onyx':>9} {'ORT':>9} {'onyx-ORT':>9}")
                for op in sorted(set(on) | set(ox), key=lambda k: -max(on.get(k, 0), ox.get(k, 0)))[:a.top]:
                    print(f"  {op:34} {on.get(op, 0):9.3f} {ox.get(op, 0):9.3f} {on.get(op, 0) - ox.get(op, 0):+9.3f}")
                print(f"  inputs: {sd}; onyx: onyx bench {model} --inputs {sd} --threads {t} --per-node")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=os.path.join(REPO, ".cache", "bench-decoders"))
    ap.add_argument("--onyx", default=os.path.join(REPO, "build", "bin", "onyx"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=6, help="generations per process; medians after the first")
    ap.add_argument("--repeat", type=int, default=1, help="rounds per case, each running every runtime once in turn")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-timing", action="store_true", help="only --profile")
    ap.add_argument("--profile", action="store_true", help="per-op-type profiles of a prefill and a decode step")
    ap.add_argument("--profile-threads", default="1")
    ap.add_argument("--top", type=int, default=8, help="op types shown per profile")
    a = ap.parse_args()
    a.models = [m for m in a.models.split(",") if m]
    a.threads = [int(t) for t in a.threads.split(",")]
    a.profile_threads = [int(t) for t in a.profile_threads.split(",")]
    make_models(a.dir)
    prompt = np.random.default_rng(a.seed).integers(0, PROMPT_VOCAB, size=a.prompt_len).tolist()
    load = os.getloadavg()[0]
    if load > 0.5:
        log(f"warning: load average {load:.2f} before timing: the machine is not quiet")
    if not a.no_timing:
        t0 = time.time()
        rows, notes = timing_table(a, prompt)
        print_table(a, rows, notes)
        print(f"({time.time() - t0:.0f} s; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after)")
    if a.profile:
        profiles(a, prompt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
