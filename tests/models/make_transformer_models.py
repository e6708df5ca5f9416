#!/usr/bin/env python3
"""Makes the transformer end-to-end models: small Hugging Face models with random weights, exported
by torch.onnx.export, rewritten by ONNX Runtime's own tools (the transformer optimizer, its fp16
conversion, the 4-bit MatMul quantizer), with the outputs ONNX Runtime computes as reference.

Two stages, each in the Python that has its packages (tests/models/transformer_models_data.sh runs
both):

    .cache/hf-venv/bin/python  make_transformer_models.py export OUT_DIR   # torch + transformers
    .cache/ort-venv/bin/python make_transformer_models.py finish OUT_DIR   # onnxruntime + onnx

`export` writes OUT_DIR/export/<base>/{model.onnx, meta.json, step_K/{input_J.pb, output_J.pb}}
(step_K/output_J.pb: what torch computes). `finish` writes, for each model NAME,
OUT_DIR/NAME/model.onnx and OUT_DIR/NAME/test_data_set_K/{input_J.pb, output_J.pb} (the ONNX
backend-test layout, inputs in the model's input order), the outputs from ONNX Runtime's CPU EP
(default graph optimisation level, one thread), and OUT_DIR/NAME/meta.json (what was done, the
com.microsoft op histogram, the distance from torch). Decoder models have two data sets: the prompt
(an empty past) and one decode step whose past is what torch returned for the prompt.

Models (all tiny, random weights, fixed seeds):
  bert_tiny_opt[_fp16]     BertModel; optimize_model(model_type="bert"); _fp16: its
                           convert_float_to_float16(keep_io_types=True)
  roberta_tiny_opt[_fp16]  RobertaModel; the same
  gpt2_tiny_opt[_fp16]     GPT2LMHeadModel with past (one [2, batch, heads, past, head_size] tensor
                           a layer, the form of ORT's GPT-2 tools); optimize_model(model_type="gpt2"):
                           com.microsoft Attention with past and present; _fp16: as above
  llama_tiny               LlamaForCausalLM (4 heads, 2 KV heads) with past; optimize_model(
                           model_type="gpt2", opt_level=0) as ORT's Llama tool does (RotaryEmbedding,
                           MultiHeadAttention, SimplifiedLayerNormalization), then its MultiHeadAttention
                           nodes made GroupQueryAttention with packed QKV and rotary inside (what that
                           tool's --use_gqa does; written here, as ORT's replace_mha_with_gqa needs torch
                           and packs only Q, K, V of one width)
  llama_tiny_int4          llama_tiny's MatMuls by MatMulNBitsQuantizer (4 bits, block 32, symmetric)
  llama_mha_tiny           LlamaForCausalLM with 4 KV heads; the same fusions, kept as they are
                           (RotaryEmbedding + MultiHeadAttention with past and present)

--size full (both stages; bench/generate_bench.py uses it) makes the decoders at a realistic size
instead, named with _full for _tiny: gpt2_full_opt (fp32 only; 12 layers, hidden 768, 12 heads, FFN
3072, vocab 50257, 1024 positions), llama_full (12 layers, hidden 768, 12 heads, 4 KV heads, FFN
2048, vocab 32000, 1024 positions), llama_full_int4 (the quantizer's default accuracy level) and
llama_full_int4_acc4 (accuracy_level=4). Random weights with std 0.02 (as Hugging Face initializes)
instead of 0.08, so that 12 layers keep their activations in range.
"""
import collections
import json
import os
import shutil
import sys
import time

import numpy as np

OPSET = 17
BATCH = 2
PROMPT = 8
VOCAB = 100
HIDDEN = 64
HEADS = 4
KV_HEADS = 2
LAYERS = 2
FFN = 128
MS = "com.microsoft"
# What only --size full changes (bert_tiny's and roberta_tiny's position tables keep their sizes).
GPT2_VOCAB = VOCAB
GPT2_FFN = FFN
MAX_POS = 64
WEIGHT_STD = 0.08
SIZE = "tiny"
SIZES = {"full": {"VOCAB": 32000, "HIDDEN": 768, "HEADS": 12, "KV_HEADS": 4, "LAYERS": 12, "FFN": 2048,
                  "GPT2_VOCAB": 50257, "GPT2_FFN": 3072, "MAX_POS": 1024, "WEIGHT_STD": 0.02}}
# The base models made at each size other than tiny.
SIZE_BASES = {"full": ["gpt2_tiny", "llama_tiny"]}


def set_size(size):
    """Sets the model dimensions of --size SIZE (tiny: the defaults above)."""
    global SIZE
    SIZE = size
    globals().update(SIZES.get(size, {}))


def sized(name):
    """A model's directory name at the current size: gpt2_tiny_opt at --size full is gpt2_full_opt."""
    return name if SIZE == "tiny" else name.replace("_tiny", "_" + SIZE)

# Bound of ONNX Runtime's optimized fp32 model against torch (relative to max |torch|, at least 1): a
# larger distance means a fusion changed what the model computes, and the reference would be wrong.
TORCH_TOL = 1e-3


def save_tensor(path, array, name):
    import onnx
    from onnx import numpy_helper
    onnx.save_tensor(numpy_helper.from_array(np.ascontiguousarray(array), name), path)


def load_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.load_tensor(path)
    return t.name, numpy_helper.to_array(t)


def load_dir(d, prefix):
    out, j = [], 0
    while os.path.exists(os.path.join(d, f"{prefix}_{j}.pb")):
        out.append(load_tensor(os.path.join(d, f"{prefix}_{j}.pb")))
        j += 1
    return out


# ---------------------------------------------------------------------------------------------
# stage 1: export (torch, transformers)
# ---------------------------------------------------------------------------------------------

def randomize(model, seed):
    """Fresh Hugging Face models have zero biases and unit norm weights: give every parameter a
    random part so that the bias, gamma and beta paths of the fused ops count."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name.lower() or ".ln_" in name:
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * WEIGHT_STD)


def export_onnx(model, args, path, input_names, output_names, dynamic_axes):
    import torch
    with torch.no_grad():
        torch.onnx.export(model, tuple(args), path, opset_version=OPSET, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes, do_constant_folding=True)


def run_torch(model, feeds):
    import torch
    with torch.no_grad():
        outs = model(*[torch.from_numpy(v) for _, v in feeds])
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    return [o.numpy() for o in outs]


def write_step(d, k, feeds, output_names, outputs):
    sd = os.path.join(d, f"step_{k}")
    os.makedirs(sd, exist_ok=True)
    for j, (name, value) in enumerate(feeds):
        save_tensor(os.path.join(sd, f"input_{j}.pb"), value, name)
    for j, (name, value) in enumerate(zip(output_names, outputs)):
        save_tensor(os.path.join(sd, f"output_{j}.pb"), value, name)


def encoder_feeds(rng, with_token_types, pad_id=0):
    ids = rng.integers(3, VOCAB, size=(BATCH, PROMPT), dtype=np.int64)
    mask = np.ones((BATCH, PROMPT), dtype=np.int64)
    mask[1, PROMPT - 3:] = 0  # the second sequence is padded at its end
    ids[1, PROMPT - 3:] = pad_id
    feeds = [("input_ids", ids), ("attention_mask", mask)]
    if with_token_types:
        types = np.zeros((BATCH, PROMPT), dtype=np.int64)
        types[:, PROMPT // 2:] = 1
        feeds.append(("token_type_ids", types))
    return feeds


def export_encoder(d, model, feeds, output_names):
    import torch
    names = [n for n, _ in feeds]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes.update({n: {0: "batch", 1: "sequence"} for n in output_names})
    if "pooler_output" in axes:
        axes["pooler_output"] = {0: "batch"}

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            o = self.m(**dict(zip(names, args)), return_dict=False)
            return tuple(o[:len(output_names)])

    w = Wrap(model).eval()  # (torch.onnx.export leaves a module in the mode it found it in)
    export_onnx(w, [torch.from_numpy(v) for _, v in feeds], os.path.join(d, "model.onnx"), names, output_names, axes)
    write_step(d, 0, feeds, output_names, run_torch(w, feeds))


def export_bert(d):
    import torch
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                     intermediate_size=FFN, max_position_embeddings=64, type_vocab_size=2)
    model = BertModel(cfg).eval()
    randomize(model, 10)
    export_encoder(d, model, encoder_feeds(np.random.default_rng(1), True), ["last_hidden_state", "pooler_output"])
    return {"model_type": "bert"}


def export_roberta(d):
    import torch
    from transformers import RobertaConfig, RobertaModel
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=FFN, max_position_embeddings=PROMPT + 58, type_vocab_size=1,
                        pad_token_id=1)
    model = RobertaModel(cfg, add_pooling_layer=False).eval()
    randomize(model, 11)
    export_encoder(d, model, encoder_feeds(np.random.default_rng(2), False, pad_id=1), ["last_hidden_state"])
    return {"model_type": "bert"}


def decoder_steps(d, wrap, rng, prompt_feeds, step_feeds, output_names, n_present):
    """Runs the prompt, then one decode step on torch's present; writes both steps."""
    outs = run_torch(wrap, prompt_feeds)
    write_step(d, 0, prompt_feeds, output_names, outs)
    past_names = [n for n, _ in prompt_feeds[-n_present:]]
    feeds1 = step_feeds + list(zip(past_names, outs[1:]))
    write_step(d, 1, feeds1, output_names, run_torch(wrap, feeds1))


def export_gpt2(d):
    """GPT-2 with its past as one [2, batch, heads, past, head_size] tensor a layer, the form of
    ONNX Runtime's GPT-2 tools (whose Attention fusion expects it): inputs input_ids, position_ids,
    attention_mask (float), past_0..; outputs logits, present_0..."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=GPT2_VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_inner=GPT2_FFN,
                     n_positions=MAX_POS)
    model = GPT2LMHeadModel(cfg).eval()
    randomize(model, 12)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, position_ids, attention_mask, *past):
            o = self.m(input_ids=input_ids, position_ids=position_ids, attention_mask=attention_mask,
                       past_key_values=tuple(past), use_cache=True, return_dict=False)
            return (o[0],) + tuple(torch.stack(p) for p in o[1])

    head = HIDDEN // HEADS
    past_names = [f"past_{i}" for i in range(LAYERS)]
    present_names = [f"present_{i}" for i in range(LAYERS)]
    names = ["input_ids", "position_ids", "attention_mask"] + past_names
    output_names = ["logits"] + present_names
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "position_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "total_sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {1: "batch", 3: "past_sequence"} for n in past_names})
    axes.update({n: {1: "batch", 3: "total_sequence"} for n in present_names})
    wrap = Wrap(model).eval()
    rng = np.random.default_rng(3)
    ids = rng.integers(0, GPT2_VOCAB, size=(BATCH, PROMPT), dtype=np.int64)
    pos = np.tile(np.arange(PROMPT, dtype=np.int64), (BATCH, 1))
    # Traced with a non-empty past (a trace through an empty one may fold its shapes away).
    trace = [torch.from_numpy(ids), torch.from_numpy(pos + 3), torch.ones(BATCH, PROMPT + 3)]
    trace += [torch.randn(2, BATCH, HEADS, 3, head) for _ in past_names]
    export_onnx(wrap, trace, os.path.join(d, "model.onnx"), names, output_names, axes)
    prompt = [("input_ids", ids), ("position_ids", pos), ("attention_mask", np.ones((BATCH, PROMPT), np.float32))]
    prompt += [(n, np.zeros((2, BATCH, HEADS, 0, head), np.float32)) for n in past_names]
    step = [("input_ids", rng.integers(0, GPT2_VOCAB, size=(BATCH, 1), dtype=np.int64)),
            ("position_ids", np.full((BATCH, 1), PROMPT, np.int64)),
            ("attention_mask", np.ones((BATCH, PROMPT + 1), np.float32))]
    decoder_steps(d, wrap, rng, prompt, step, output_names, LAYERS)
    return {"model_type": "gpt2"}


def export_llama(d, kv_heads=None, seed=13):
    """Llama (kv_heads KV heads) with its past as separate key and value tensors a layer (the names
    of ORT's Llama tool): inputs input_ids, attention_mask, position_ids,
    past_key_values.I.key/.value; outputs logits, present.I.key/.value."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    kv_heads = KV_HEADS if kv_heads is None else kv_heads
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                      num_key_value_heads=kv_heads, intermediate_size=FFN, max_position_embeddings=MAX_POS)
    model = LlamaForCausalLM(cfg).eval()
    randomize(model, seed)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, position_ids, *past):
            kv = tuple((past[2 * i], past[2 * i + 1]) for i in range(LAYERS))
            o = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                       past_key_values=kv, use_cache=True, return_dict=False)
            return (o[0],) + tuple(t for kv in o[1] for t in kv)

    head = HIDDEN // HEADS
    past_names = [f"past_key_values.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]
    present_names = [f"present.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]
    names = ["input_ids", "attention_mask", "position_ids"] + past_names
    output_names = ["logits"] + present_names
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "position_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "total_sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in past_names})
    axes.update({n: {0: "batch", 2: "total_sequence"} for n in present_names})
    wrap = Wrap(model).eval()
    rng = np.random.default_rng(4)
    ids = rng.integers(0, VOCAB, size=(BATCH, PROMPT), dtype=np.int64)
    pos = np.tile(np.arange(PROMPT, dtype=np.int64), (BATCH, 1))
    trace = [torch.from_numpy(ids), torch.ones(BATCH, PROMPT + 3, dtype=torch.int64), torch.from_numpy(pos + 3)]
    trace += [torch.randn(BATCH, kv_heads, 3, head) for _ in past_names]
    export_onnx(wrap, trace, os.path.join(d, "model.onnx"), names, output_names, axes)
    prompt = [("input_ids", ids), ("attention_mask", np.ones((BATCH, PROMPT), np.int64)), ("position_ids", pos)]
    prompt += [(n, np.zeros((BATCH, kv_heads, 0, head), np.float32)) for n in past_names]
    step = [("input_ids", rng.integers(0, VOCAB, size=(BATCH, 1), dtype=np.int64)),
            ("attention_mask", np.ones((BATCH, PROMPT + 1), np.int64)),
            ("position_ids", np.full((BATCH, 1), PROMPT, np.int64))]
    decoder_steps(d, wrap, rng, prompt, step, output_names, 2 * LAYERS)
    return {"model_type": "gpt2", "num_kv_heads": kv_heads}


def export_llama_mha(d):
    """Llama with as many KV heads as heads: ORT's fusions give RotaryEmbedding + MultiHeadAttention
    with past, which ONNX Runtime runs as they are (no GroupQueryAttention step)."""
    return export_llama(d, kv_heads=HEADS, seed=14)


EXPORTS = {"bert_tiny": export_bert, "roberta_tiny": export_roberta, "gpt2_tiny": export_gpt2,
           "llama_tiny": export_llama, "llama_mha_tiny": export_llama_mha}


def stage_export(out, only):
    import torch
    import transformers
    torch.set_num_threads(2)
    root = os.path.join(out, "export")
    print(f"export: torch {torch.__version__}, transformers {transformers.__version__}")
    for base, fn in EXPORTS.items():
        if only and base not in only:
            continue
        t0 = time.time()
        d = os.path.join(root, base)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        meta = fn(d)
        meta.update({"num_heads": HEADS, "hidden_size": HIDDEN, "torch": torch.__version__,
                     "transformers": transformers.__version__})
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{base}: exported in {time.time() - t0:.1f} s")
    return 0


# ---------------------------------------------------------------------------------------------
# stage 2: optimize, convert, quantize, reference outputs (onnxruntime, onnx)
# ---------------------------------------------------------------------------------------------

def ort_session(model_bytes, level=None, optimized_path=None, disabled=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    if level is not None:
        so.graph_optimization_level = level
    if optimized_path:
        so.optimized_model_filepath = optimized_path
    kw = {"disabled_optimizers": disabled} if disabled else {}
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"], **kw)


def ort_basic_pass(src, dst):
    """What optimize_model(opt_level=1) runs before its fusions (optimize_by_onnxruntime): ORT's basic
    graph optimisations on the CPU EP, ConstantSharing off. Done here because that function imports
    torch, which the ORT venv does not have."""
    import onnxruntime as ort
    ort_session(src, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, dst, ["ConstantSharing"])


def histogram(model):
    h = collections.Counter(f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
                            for n in model.graph.node)
    return dict(sorted(h.items(), key=lambda kv: (":" not in kv[0], kv[0])))


def make_gqa(onnx_model, kv_heads):
    """The MultiHeadAttention + RotaryEmbedding nodes of ORT's rotary attention fusion made
    GroupQueryAttention, as ORT's Llama tool (--use_gqa) does: seqlens_k = sum(attention_mask) - 1
    and total_sequence_length = attention_mask's width, shared by all layers; Q, K and V MatMuls of
    one input packed into one MatMul ([Q | K | V] columns); rotary inside the attention node. The
    shapes are those of that tool's subgraph: seqlens_k [batch, 1] (ReduceSum keeps its axis) and
    total_sequence_length [1]."""
    from onnx import TensorProto, helper, numpy_helper
    m = onnx_model
    g = m.model.graph
    m.add_initializer(numpy_helper.from_array(np.array([1], np.int64), "gqa_one"))
    g.node.extend([
        helper.make_node("ReduceSum", ["attention_mask", "gqa_one"], ["gqa_mask_sum"], name="gqa_ReduceSum"),
        helper.make_node("Sub", ["gqa_mask_sum", "gqa_one"], ["gqa_seqlens_k_int64"], name="gqa_Sub"),
        helper.make_node("Cast", ["gqa_seqlens_k_int64"], ["gqa_seqlens_k"], name="gqa_Cast_seqlens",
                         to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["gqa_mask_shape"], name="gqa_Shape"),
        helper.make_node("Gather", ["gqa_mask_shape", "gqa_one"], ["gqa_total_int64"], name="gqa_Gather", axis=0),
        helper.make_node("Cast", ["gqa_total_int64"], ["gqa_total_seq_len"], name="gqa_Cast_total",
                         to=TensorProto.INT32),
    ])
    count = 0
    for idx, mha in enumerate([n for n in g.node if n.op_type == "MultiHeadAttention"]):
        q_path = m.match_parent_path(mha, ["RotaryEmbedding", "MatMul"], [0, 0])
        k_path = m.match_parent_path(mha, ["RotaryEmbedding", "MatMul"], [1, 0])
        v_path = m.match_parent_path(mha, ["MatMul"], [2])
        if q_path is None or k_path is None or v_path is None:
            raise RuntimeError(f"{mha.name}: not RotaryEmbedding(MatMul) for Q and K, MatMul for V")
        (q_rot, q_mm), (k_rot, k_mm), (v_mm,) = q_path, k_path, v_path
        if not (q_mm.input[0] == k_mm.input[0] == v_mm.input[0]):
            raise RuntimeError(f"{mha.name}: Q, K and V MatMuls of different inputs")
        weights = [numpy_helper.to_array(m.get_initializer(n.input[1])) for n in (q_mm, k_mm, v_mm)]
        packed = numpy_helper.from_array(np.concatenate(weights, axis=1), f"QKV_Weight_{idx}")
        m.add_initializer(packed)
        mm = helper.make_node("MatMul", [q_mm.input[0], packed.name], [f"QKV_{idx}"], name=f"QKV_MatMul_{idx}")
        heads = next(a.i for a in mha.attribute if a.name == "num_heads")
        interleaved = next((a.i for a in q_rot.attribute if a.name == "interleaved"), 0)
        gqa = helper.make_node(
            "GroupQueryAttention",
            [mm.output[0], "", "", mha.input[6], mha.input[7], "gqa_seqlens_k", "gqa_total_seq_len",
             q_rot.input[2], q_rot.input[3]],
            list(mha.output), name=f"GroupQueryAttention_{idx}", domain=MS,
            num_heads=heads, kv_num_heads=kv_heads, do_rotary=1, rotary_interleaved=interleaved)
        for n in (q_mm, k_mm, v_mm, q_rot, k_rot, mha):
            g.node.remove(n)
        g.node.extend([mm, gqa])
        count += 1
    if count == 0:
        raise RuntimeError("no MultiHeadAttention to make GroupQueryAttention")
    m.prune_graph(allow_remove_graph_inputs=True)
    m.topological_sort()


def optimize(src, meta, work):
    """Runs ORT's transformer optimizer on the exported model; returns the OnnxModel."""
    from onnxruntime.transformers.optimizer import optimize_model
    if meta.get("num_kv_heads"):
        # ORT's Llama tool: fusions only (opt_level 0), then (grouped KV heads: its --use_gqa)
        # MultiHeadAttention -> GroupQueryAttention.
        opt = optimize_model(src, model_type=meta["model_type"], num_heads=meta["num_heads"],
                             hidden_size=meta["hidden_size"], opt_level=0)
        if meta["num_kv_heads"] != meta["num_heads"]:
            make_gqa(opt, meta["num_kv_heads"])
    else:
        # optimize_model's default for these model types (opt_level 1): ORT's basic pass, then fusions.
        basic = os.path.join(work, "basic.onnx")
        ort_basic_pass(src, basic)
        opt = optimize_model(basic, model_type=meta["model_type"], num_heads=meta["num_heads"],
                             hidden_size=meta["hidden_size"], opt_level=0)
    return opt


def max_scaled_diff(got, want):
    worst = 0.0
    for (_, g), (_, w) in zip(got, want):
        g, w = g.astype(np.float64), w.astype(np.float64)
        if g.shape != w.shape:
            return float("inf")
        if w.size:
            worst = max(worst, float(np.max(np.abs(g - w))) / max(1.0, float(np.max(np.abs(w)))))
    return worst


def write_model(out, name, model, steps, info):
    """Writes OUT/NAME: the model, each step's inputs (in the model's input order) and ORT's outputs."""
    from onnxruntime.transformers.onnx_model import OnnxModel
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    OnnxModel(model).save_model_to_file(path)  # as ORT's tools save (this adds the com.microsoft opset)
    sess = ort_session(path)
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    results = []
    for k, feeds in enumerate(steps):
        fd = dict(feeds)
        missing = [n for n in in_names if n not in fd]
        if missing:
            raise RuntimeError(f"{name}: no data for inputs {missing}")
        outs = sess.run(None, {n: fd[n] for n in in_names})
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd)
        for j, n in enumerate(in_names):
            save_tensor(os.path.join(sd, f"input_{j}.pb"), fd[n], n)
        for j, (n, v) in enumerate(zip(out_names, outs)):
            save_tensor(os.path.join(sd, f"output_{j}.pb"), v, n)
        results.append(list(zip(out_names, outs)))
    info = dict(info, histogram=histogram(model), inputs=in_names, outputs=out_names,
                size_bytes=os.path.getsize(path))
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(info, f, indent=1)
    if any("past" in n for n in in_names):
        # A decoder: tests/models/generate_test.sh runs `onyx generate` on it beside ONNX Runtime's
        # greedy loop, with each list of onyx options given (one shared cache buffer per layer too,
        # where GroupQueryAttention writes into the past buffer).
        variants = [[]]
        if any(k.endswith(":GroupQueryAttention") for k in info["histogram"]):
            variants.append(["--share-buffer"])
        with open(os.path.join(d, "generate.json"), "w") as f:
            json.dump({"prompt_ids": [5, 17, 42, 8, 99, 3], "variants": variants}, f, indent=1)
    return results, info


def ms_ops(hist):
    return {k: v for k, v in hist.items() if k.startswith(MS + ":")}


def finish_one(out, base, log):
    import onnx
    import onnxruntime
    src_dir = os.path.join(out, "export", base)
    with open(os.path.join(src_dir, "meta.json")) as f:
        meta = json.load(f)
    steps, torch_outs = [], []
    k = 0
    while os.path.isdir(os.path.join(src_dir, f"step_{k}")):
        steps.append(load_dir(os.path.join(src_dir, f"step_{k}"), "input"))
        torch_outs.append(load_dir(os.path.join(src_dir, f"step_{k}"), "output"))
        k += 1
    work = os.path.join(out, "work", base)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    opt = optimize(os.path.join(src_dir, "model.onnx"), meta, work)
    common = {"base": base, "export": {k: meta[k] for k in ("torch", "transformers")},
              "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__}
    errors = []

    def check_torch(name, results, required):
        d = max(max_scaled_diff(r, t) for r, t in zip(results, torch_outs))
        line = f"{name}: ORT vs torch {d:.2g}"
        if required and not d <= TORCH_TOL:
            errors.append(f"{name}: ONNX Runtime's outputs are {d:.3g} from torch's (> {TORCH_TOL:g}): "
                          "an optimisation changed the model")
        return d, line

    if base == "llama_tiny":
        variants = [("llama_tiny", "fp32"), ("llama_tiny_fp16", "fp16"), ("llama_tiny_int4", "int4")]
    elif base == "llama_mha_tiny":
        variants = [("llama_mha_tiny", "fp32")]
    else:
        stem = base + "_opt"
        variants = [(stem, "fp32"), (stem + "_fp16", "fp16")]
    if SIZE != "tiny":
        # The benchmark's decoders: fp32, and Llama's 4-bit at both accuracy levels.
        variants = [(sized(n), p) for n, p in variants if p != "fp16"]
        if base == "llama_tiny":
            variants.append((sized("llama_tiny_int4_acc4"), "int4_acc4"))
    fp32_model = opt.model
    if base.startswith("llama"):
        optimized_how = 'optimize_model(model_type="gpt2", opt_level=0)'
        if meta["num_kv_heads"] != meta["num_heads"]:
            optimized_how += " + MultiHeadAttention made GroupQueryAttention"
    else:
        optimized_how = f'optimize_model(model_type="{meta["model_type"]}")'
    for name, precision in variants:
        t0 = time.time()
        if precision == "fp32":
            model = fp32_model
            how = optimized_how
        elif precision == "fp16":
            from onnxruntime.transformers.onnx_model import OnnxModel
            m16 = OnnxModel(onnx.ModelProto.FromString(fp32_model.SerializeToString()))
            m16.convert_float_to_float16(keep_io_types=True)
            model = m16.model
            how = optimized_how + " + convert_float_to_float16(keep_io_types=True)"
        else:
            from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
            acc = {"accuracy_level": 4} if precision == "int4_acc4" else {}
            q = MatMulNBitsQuantizer(onnx.ModelProto.FromString(fp32_model.SerializeToString()), bits=4,
                                     block_size=32, is_symmetric=True, **acc)
            q.process()
            model = q.model.model
            how = optimized_how + " + MatMulNBitsQuantizer(bits=4, block_size=32, symmetric" + \
                "".join(f", {k}={v}" for k, v in acc.items()) + ")"
        info = dict(common, precision=precision, how=how)
        results, info = write_model(out, name, model, steps, info)
        dist, line = check_torch(name, results, precision == "fp32")
        info["ort_vs_torch"] = dist
        with open(os.path.join(out, name, "meta.json"), "w") as f:
            json.dump(info, f, indent=1)
        ms = ms_ops(info["histogram"])
        log.append(f"{name}: {precision}, {len(steps)} data set(s), {info['size_bytes'] / 1e6:.2f} MB, "
                   f"{time.time() - t0:.1f} s; {line}; com.microsoft ops {json.dumps(ms)}")
        log.append(f"    all ops: {json.dumps(info['histogram'])}")
    # The fusions this test is for must be there.
    want = {"bert_tiny": ["EmbedLayerNormalization", "Attention", "SkipLayerNormalization", ("BiasGelu", "FastGelu")],
            "roberta_tiny": ["Attention", "SkipLayerNormalization", ("BiasGelu", "FastGelu")],
            "gpt2_tiny": ["Attention", "SkipLayerNormalization", ("BiasGelu", "FastGelu")],
            "llama_tiny": ["GroupQueryAttention", "SkipSimplifiedLayerNormalization"],
            "llama_mha_tiny": ["RotaryEmbedding", "MultiHeadAttention", "SkipSimplifiedLayerNormalization"]}[base]
    hist = histogram(fp32_model)
    for op in want:
        alts = op if isinstance(op, tuple) else (op,)
        if not any(f"{MS}:{a}" in hist for a in alts):
            errors.append(f"{base}: ORT's optimizer made no com.microsoft {' or '.join(alts)}")
    shutil.rmtree(work, ignore_errors=True)
    return errors


def stage_finish(out, only):
    import onnxruntime
    print(f"finish: onnxruntime {onnxruntime.__version__}")
    bases = sorted(os.listdir(os.path.join(out, "export")))
    errors, log = [], []
    for base in EXPORTS:
        if (only and base not in only) or base not in bases:
            continue
        t0 = time.time()
        try:
            errors += finish_one(out, base, log)
        except Exception as e:  # noqa: BLE001 - report every model's failure, go on with the next
            import traceback
            traceback.print_exc()
            errors.append(f"{base}: {type(e).__name__}: {e}")
        print("\n".join(log))
        log.clear()
        print(f"{base}: done in {time.time() - t0:.1f} s")
    shutil.rmtree(os.path.join(out, "work"), ignore_errors=True)
    for e in errors:
        print("ERROR:", e)
    return 1 if errors else 0


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=["export", "finish"])
    ap.add_argument("out", nargs="?", default=".cache/transformer-models")
    ap.add_argument("--only", default="", help="comma-separated base models (" + ", ".join(EXPORTS) + ")")
    ap.add_argument("--size", choices=["tiny"] + sorted(SIZES), default="tiny",
                    help="tiny: the test models; full: the benchmark decoders (give it to both stages)")
    a = ap.parse_args()
    only = [s for s in a.only.split(",") if s]
    set_size(a.size)
    if a.size != "tiny":
        only = [b for b in (only or SIZE_BASES[a.size]) if b in SIZE_BASES[a.size]]
    if a.stage == "export":
        return stage_export(a.out, only)
    return stage_finish(a.out, only)


if __name__ == "__main__":
    sys.exit(main())
