#!/usr/bin/env python3
"""Exports test models from PyTorch (random weights, opset 17) with torch's outputs as reference.

Run with Debian's python3 (python3-torch, python3-torchvision, python3-onnx):

    /usr/bin/python3 tests/models/export_models.py OUT_DIR [--size full|small] [--only NAME,...]

For each model NAME it writes OUT_DIR/NAME/model.onnx and OUT_DIR/NAME/test_data_set_0/
{input_K.pb, output_K.pb} (the ONNX backend-test layout). --size small keeps the same graphs with
smaller inputs and fewer layers, for CI.
"""
import argparse
import inspect
import os
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

torch.manual_seed(0)
torch.set_num_threads(2)


def save_case(out_dir, name, model, inputs, input_names, output_names, dynamic_axes=None):
    d = os.path.join(out_dir, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    t0 = time.time()
    args = dict(opset_version=17, input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes,
                do_constant_folding=True)
    # The TorchScript exporter where torch has both (newer torch defaults to the dynamo one, which
    # gives other graphs); the default one where that fails.
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        try:
            torch.onnx.export(model, tuple(inputs), path, dynamo=False, **args)
        except Exception as e:  # noqa: BLE001 - any failure of the old exporter: try the default
            print(f"{name}: torch.onnx.export(dynamo=False) failed ({type(e).__name__}: {e}); default exporter")
            torch.onnx.export(model, tuple(inputs), path, **args)
    else:
        torch.onnx.export(model, tuple(inputs), path, **args)
    with torch.no_grad():
        outs = model(*inputs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    for i, (n, x) in enumerate(zip(input_names, inputs)):
        onnx.save_tensor(numpy_helper.from_array(x.detach().numpy(), n), os.path.join(data, f"input_{i}.pb"))
    for i, (n, y) in enumerate(zip(output_names, outs)):
        onnx.save_tensor(numpy_helper.from_array(y.detach().numpy(), n), os.path.join(data, f"output_{i}.pb"))
    print(f"{name}: exported in {time.time() - t0:.1f} s, {os.path.getsize(path) / 1e6:.1f} MB")


def randomize_batchnorm(model):
    # Fresh BN layers are the identity; give them real statistics so folding is exercised.
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


def vision(out_dir, name, ctor, res):
    import torchvision
    model = getattr(torchvision.models, ctor)(weights=None)
    randomize_batchnorm(model)
    model.eval()
    x = torch.rand(1, 3, res, res) * 2 - 1
    save_case(out_dir, name, model, [x], ["input"], ["logits"])


class BertLike(torch.nn.Module):
    """BERT-base-shaped encoder: embeddings, post-norm GELU transformer layers, tanh pooler."""

    def __init__(self, layers, hidden, heads, ffn, vocab=30522, positions=512):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, hidden)
        self.pos = torch.nn.Embedding(positions, hidden)
        self.typ = torch.nn.Embedding(2, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.layers = torch.nn.ModuleList([
            torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, activation="gelu", batch_first=True)
            for _ in range(layers)])
        self.pool = torch.nn.Linear(hidden, hidden)
        # Independent N(0, 0.02) weights everywhere (the exporter would merge identical tensors).
        g = torch.Generator().manual_seed(2)
        for p in self.parameters():
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        pos = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        h = self.norm(self.tok(input_ids) + self.pos(pos) + self.typ(torch.zeros_like(input_ids)))
        pad = attention_mask == 0
        for layer in self.layers:
            h = layer(h, src_key_padding_mask=pad)
        return h, torch.tanh(self.pool(h[:, 0]))


def bert(out_dir, name, layers, seq):
    model = BertLike(layers, 768, 12, 3072)
    model.eval()
    ids = torch.randint(0, 30522, (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, seq - seq // 8:] = 0  # some padding, so the mask path is exercised
    # Exporting with grad enabled avoids the fused inference fast path, which has no ONNX export.
    with torch.enable_grad():
        save_case(out_dir, name, model, [ids, mask], ["input_ids", "attention_mask"],
                  ["last_hidden_state", "pooler_output"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    small = a.size == "small"
    cases = {
        "resnet50": lambda: vision(a.out_dir, "resnet50", "resnet50", 64 if small else 224),
        "mobilenet_v2": lambda: vision(a.out_dir, "mobilenet_v2", "mobilenet_v2", 64 if small else 224),
        "bert_like": lambda: bert(a.out_dir, "bert_like", 2 if small else 12, 32 if small else 128),
    }
    for n, f in cases.items():
        if not only or n in only:
            f()


if __name__ == "__main__":
    main()
