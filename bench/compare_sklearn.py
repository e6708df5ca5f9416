#!/usr/bin/env python3
"""scikit-learn models exported by skl2onnx, run by onyx and by ONNX Runtime side by side.

    venv/bin/python bench/compare_sklearn.py build/bin/onyx [--keep DIR]

Needs the PyPI packages onnxruntime, onnx, numpy, scikit-learn and skl2onnx (in a venv), and
onyx's Python module (docs/python.md). The first argument, onyx's binary, locates the module:
the package the build assembles beside it (build/python for build/bin/onyx) when there is one,
else the `onyx` that Python imports (installed, or on PYTHONPATH); its extension must be built
for the Python running this script. Each model is trained on synthetic data (fixed seeds),
exported (classifiers twice: with skl2onnx's default trailing ZipMap, and with
`zipmap=False`), and run in this process by ONNX Runtime and by onyx the same way (a session
made from the model's bytes, one `run` on the same numpy input); labels must be equal and
scores agree within rtol 1e-5 / atol 1e-6 (support vector machines: atol 1e-4 — onyx computes
them in double, ONNX Runtime in float). Prints one line per output and a count; exits 1 on any
difference. `--keep DIR` writes each model and its input (DIR/NAME/model.onnx, in/input_0.pb).
"""
import argparse
import os
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from onyx_module import import_onyx

warnings.filterwarnings("ignore")


def run(rt, model_bytes, name, x):
    """The outputs of one run of runtime module `rt` (onnxruntime or onyx) on input `name` = x."""
    so = rt.SessionOptions()
    so.log_severity_level = 3
    return rt.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"]).run(None, {name: x})


def models():
    from sklearn.datasets import make_classification, make_regression
    from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                                  GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge, RidgeClassifier, SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, Normalizer, StandardScaler
    from sklearn.svm import SVC, SVR, NuSVR, OneClassSVM
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    X, y = make_regression(200, 8, random_state=0)
    X = X.astype(np.float32)
    X3, y3 = make_regression(200, 8, n_targets=3, random_state=1)
    X3 = X3.astype(np.float32)
    regressors = [
        ("decision_tree", DecisionTreeRegressor(max_depth=6), X, y),
        ("random_forest", RandomForestRegressor(20, max_depth=6, random_state=0), X, y),
        ("random_forest_3_targets", RandomForestRegressor(10, max_depth=5, random_state=0), X3, y3),
        ("gradient_boosting", GradientBoostingRegressor(n_estimators=30, random_state=0), X, y),
        ("extra_trees", ExtraTreesRegressor(10, max_depth=5, random_state=0), X, y),
        ("linear", LinearRegression(), X, y),
        ("scaler_ridge", make_pipeline(StandardScaler(), Ridge()), X, y),
        ("minmax_ridge", make_pipeline(MinMaxScaler(), Ridge()), X, y),
        ("normalizer_linear", make_pipeline(Normalizer(), LinearRegression()), X, y),
    ]
    for kernel in ["linear", "rbf", "poly", "sigmoid"]:
        regressors += [(f"svr_{kernel}", SVR(kernel=kernel), X[:, :5], y), (f"nusvr_{kernel}", NuSVR(kernel=kernel), X[:, :5], y),
                       (f"one_class_svm_{kernel}", OneClassSVM(kernel=kernel), X[:, :5], None)]
    for name, m, xs, ys in regressors:
        m.fit(xs) if ys is None else m.fit(xs, ys)
        yield name, m, xs[:40], False

    rng = np.random.RandomState(0)
    for classes in (2, 3):
        Xc, yc = make_classification(300, 6, n_informative=4, n_classes=classes, random_state=0)
        Xc = Xc.astype(np.float32)
        for labels in ("int", "str"):
            yl = yc if labels == "int" else np.array([f"c{v}" for v in yc])
            classifiers = [
                ("decision_tree", DecisionTreeClassifier(max_depth=4, random_state=0)),
                ("random_forest", RandomForestClassifier(8, max_depth=4, random_state=0)),
                ("extra_trees", ExtraTreesClassifier(8, max_depth=4, random_state=0)),
                ("gradient_boosting", GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0)),
                ("logistic", LogisticRegression()),
                ("ridge", RidgeClassifier()),
                ("sgd", SGDClassifier(random_state=0)),
            ]
            for kernel in ["linear", "rbf", "poly", "sigmoid"]:
                classifiers += [(f"svc_{kernel}", SVC(kernel=kernel, random_state=0)),
                                (f"svc_{kernel}_probabilities", SVC(kernel=kernel, probability=True, random_state=0))]
            for name, m in classifiers:
                m.fit(Xc, yl)
                yield f"{name}_{classes}_classes_{labels}", m, Xc[:40], True
        Xn = Xc.copy()
        Xn[rng.rand(*Xn.shape) < 0.1] = np.nan
        m = make_pipeline(SimpleImputer(), LogisticRegression()).fit(Xn, yc)
        yield f"imputer_logistic_{classes}_classes", m, Xn[:40], True


def same(got, want, atol):
    if isinstance(want, list):  # ZipMap: a list of dicts
        if not isinstance(got, list) or len(got) != len(want):
            return False
        for g, w in zip(got, want):
            g = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in g.items()}
            if set(g) != set(w) or any(abs(g[k] - w[k]) > atol + 1e-5 * abs(w[k]) for k in w):
                return False
        return True
    if want.dtype.kind in "OUSiub":
        return got.shape == want.shape and np.array_equal(got, want)
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=atol, equal_nan=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx")
    ap.add_argument("--keep", help="write the models and their inputs into this directory")
    a = ap.parse_args()
    onyx = import_onyx(a.onyx)
    from skl2onnx import to_onnx
    ok = bad = 0
    for name, m, x, classifier in models():
        forms = [("zipmap", {}), ("tensor", {"zipmap": False})] if classifier else [("", None)]
        for form, options in forms:
            label = f"{name}_{form}" if form else name
            opts = {id(m.steps[-1][1] if hasattr(m, "steps") else m): options} if options else None
            model = to_onnx(m, x[:1], options=opts, target_opset={"": 17, "ai.onnx.ml": 3})
            if a.keep:
                d = os.path.join(a.keep, label)
                os.makedirs(os.path.join(d, "in"), exist_ok=True)
                onnx.save(model, os.path.join(d, "model.onnx"))
                onnx.save_tensor(numpy_helper.from_array(x, model.graph.input[0].name), os.path.join(d, "in", "input_0.pb"))
            data, input_name = model.SerializeToString(), model.graph.input[0].name
            want = run(ort, data, input_name, x)
            try:
                got = run(onyx, data, input_name, x)
            except Exception as e:  # noqa: BLE001 - any onyx failure is a difference, reported
                print(f"{label}: onyx failed: {str(e).strip()[-300:]}")
                bad += 1
                continue
            if len(got) != len(want):
                print(f"{label}: onyx gave {len(got)} outputs, ONNX Runtime {len(want)}")
                bad += 1
                continue
            atol = 1e-4 if "sv" in name else 1e-6
            for i, (g, w) in enumerate(zip(got, want)):
                good = same(g, w, atol)
                ok += good
                bad += not good
                print(f"{label} output {i}: {'same' if good else 'DIFFERENT'}")
    print(f"{ok} outputs the same, {bad} different")
    sys.exit(1 if bad else 0)

if __name__ == "__main__":
    main()
