#!/usr/bin/env python3
"""scikit-learn models exported by skl2onnx, run by onyx and by ONNX Runtime side by side.

    venv/bin/python bench/compare_sklearn.py build/bin/onyx [--keep DIR]

Needs the PyPI packages onnxruntime, onnx, numpy, scikit-learn and skl2onnx (in a venv). Each
model is trained on synthetic data (fixed seeds), exported (classifiers twice: with skl2onnx's
default trailing ZipMap, and with `zipmap=False`), run by ONNX Runtime in Python and by
`onyx run --inputs DIR --save DIR`; labels must be equal and scores agree within rtol 1e-5 /
atol 1e-6 (support vector machines: atol 1e-4 — onyx computes them in double, ONNX Runtime in
float). Prints one line per output and a count; exits 1 on any difference.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

warnings.filterwarnings("ignore")


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


def load_output(path, sequence):
    if not sequence:
        return numpy_helper.to_array(onnx.load_tensor(path))
    s = onnx.SequenceProto()
    s.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_list(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx")
    ap.add_argument("--keep", help="keep the models and data sets in this directory")
    a = ap.parse_args()
    from skl2onnx import to_onnx
    root = a.keep or tempfile.mkdtemp()
    ok = bad = 0
    for name, m, x, classifier in models():
        forms = [("zipmap", {}), ("tensor", {"zipmap": False})] if classifier else [("", None)]
        for form, options in forms:
            label = f"{name}_{form}" if form else name
            opts = {id(m.steps[-1][1] if hasattr(m, "steps") else m): options} if options else None
            model = to_onnx(m, x[:1], options=opts, target_opset={"": 17, "ai.onnx.ml": 3})
            d = os.path.join(root, label)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d + "/in")
            onnx.save(model, d + "/model.onnx")
            onnx.save_tensor(numpy_helper.from_array(x, model.graph.input[0].name), d + "/in/input_0.pb")
            so = ort.SessionOptions()
            so.log_severity_level = 3
            want = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
                None, {model.graph.input[0].name: x})
            r = subprocess.run([a.onyx, "run", d + "/model.onnx", "--inputs", d + "/in", "--save", d + "/out"],
                               capture_output=True, text=True, errors="replace")
            if r.returncode:
                print(f"{label}: onyx failed: {r.stderr.strip()[-300:]}")
                bad += 1
                continue
            atol = 1e-4 if "sv" in name else 1e-6
            for i, w in enumerate(want):
                good = same(load_output(f"{d}/out/output_{i}.pb", isinstance(w, list)), w, atol)
                ok += good
                bad += not good
                print(f"{label} output {i}: {'same' if good else 'DIFFERENT'}")
    print(f"{ok} outputs the same, {bad} different")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
