"""One onnxruntime script (ort_script.py), run unchanged with onnxruntime and with onyx bound to the
name `onnxruntime`, on the example models and the exported models of the end-to-end test: every
API call must return the same (outputs within 1e-4)."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPT = HERE / "ort_script.py"
# Run the script as it is, with `import onnxruntime` resolving to onyx.
AS_ONYX = ("import runpy, sys, onyx; sys.modules['onnxruntime'] = onyx; sys.argv = sys.argv[1:]; "
           "runpy.run_path(sys.argv[0], run_name='__main__')")

ort = pytest.importorskip("onnxruntime")


def _models():
    out = []
    examples = REPO / "examples" / "models"
    for m in sorted(examples.glob("*.onnx")):
        data = examples / f"{m.stem}_test_data"
        if m.stem == "tiny_custom":  # a custom op onnxruntime does not have (docs/custom-ops.md)
            continue
        out.append(pytest.param(m, data if data.is_dir() else None, id=m.stem))
    # The exported models (torchvision MobileNetV2 and ResNet-50, a BERT-like encoder) that the
    # e2e_models test makes in the build folder.
    e2e = Path(os.environ.get("ONYX_E2E_MODELS", REPO / "build" / "e2e-models"))
    for name in ("mobilenet_v2", "resnet50", "bert_like"):
        m = e2e / name / "model.onnx"
        data = e2e / name / "test_data_set_0"
        out.append(pytest.param(m, data if data.is_dir() else None, id=name))
    return out


def _run(model, data, tmp_path, onyx_side):
    result = tmp_path / ("onyx.pickle" if onyx_side else "ort.pickle")
    args = [str(SCRIPT), str(model), str(result)] + ([str(data)] if data else [])
    cmd = [sys.executable, "-c", AS_ONYX] + args if onyx_side else [sys.executable] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if not onyx_side and p.returncode != 0 and "NOT_IMPLEMENTED" in p.stderr:
        # e.g. ImageDecoder, which onnxruntime has no kernel for: nothing to compare with.
        pytest.skip("onnxruntime cannot run this model: " + p.stderr.strip().splitlines()[-1][-200:])
    assert p.returncode == 0, f"{'onyx' if onyx_side else 'onnxruntime'} run failed:\n{p.stderr[-3000:]}"
    with open(result, "rb") as f:
        return pickle.load(f)


def _same(a, b, where):
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{where}: onnxruntime gave an array, onyx {type(b).__name__}"
        assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} vs onyx's {b.dtype}"
        assert a.shape == b.shape, f"{where}: shape {a.shape} vs onyx's {b.shape}"
        if a.dtype.kind in "fc":
            err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
            scale = max(1.0, float(np.max(np.abs(a.astype(np.float64)))) if a.size else 1.0)
            assert err <= 1e-4 * scale, f"{where}: max abs difference {err} (scale {scale})"
        else:
            assert np.array_equal(a, b), f"{where}: values differ"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: {a!r} vs onyx's {b!r}"
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: {a!r} vs onyx's {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(a)), f"{where}: {a} vs onyx's {b}"
    else:
        assert a == b, f"{where}: onnxruntime {a!r}, onyx {b!r}"


@pytest.mark.parametrize("model,data", _models())
def test_same_script_same_results(model, data, tmp_path):
    if not model.exists():
        pytest.skip(f"{model} is made by the e2e_models test (ctest -R e2e_models), which has not run")
    want = _run(model, data, tmp_path, onyx_side=False)
    got = _run(model, data, tmp_path, onyx_side=True)
    assert set(want) == set(got), f"calls made: {sorted(want)} vs onyx's {sorted(got)}"
    for key in want:
        if key.startswith("error_"):
            # Every except clause that catches onnxruntime's exception catches onyx's.
            assert (want[key] is None) == (got[key] is None), f"{key}: onnxruntime {want[key]}, onyx {got[key]}"
            if want[key]:
                missed = [k for k, v in want[key].items() if k != "name" and v and not got[key][k]]
                assert not missed, f"{key}: onnxruntime raised {want[key]['name']}, onyx {got[key]['name']}, " \
                                   f"which `except {', '.join(missed)}` does not catch"
        else:
            _same(want[key], got[key], key)
