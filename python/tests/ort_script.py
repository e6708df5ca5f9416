"""A script written for onnxruntime, as users write them. test_ort_parity.py runs it unchanged
twice: with onnxruntime, and with `onnxruntime` bound to onyx (sys.modules["onnxruntime"] = onyx),
then compares what every API call returned.

Usage: python ort_script.py MODEL RESULT.pickle [TEST_DATA_DIR]
"""

import pickle
import sys

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument

_NUMPY = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def make_feed(session, data_dir):
    if data_dir:
        import glob
        import os

        from onnx import TensorProto, numpy_helper

        names = [i.name for i in session.get_inputs()]
        feed = {}
        for k, path in enumerate(sorted(glob.glob(os.path.join(data_dir, "input_*.pb")))):
            t = TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            feed[t.name or names[k]] = numpy_helper.to_array(t)
        return feed
    rng = np.random.default_rng(7)
    feed = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        dtype = _NUMPY[i.type]
        if np.issubdtype(dtype, np.integer):
            feed[i.name] = rng.integers(0, 100, size=shape).astype(dtype)
        elif dtype == np.bool_:
            feed[i.name] = rng.random(shape) > 0.5
        else:
            feed[i.name] = rng.standard_normal(shape).astype(dtype)
    return feed


def error_kind(fn):
    """What a call raised, as the except clauses scripts write see it: which of them catch it."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - recorded, compared between the two runs
        from onnxruntime.capi import onnxruntime_pybind11_state as state

        runtime_classes = tuple(v for v in vars(state).values() if isinstance(v, type) and issubclass(v, Exception))
        return {"name": type(e).__name__, "ValueError": isinstance(e, ValueError),
                "InvalidArgument": isinstance(e, InvalidArgument), "Fail": isinstance(e, Fail),
                "runtime": isinstance(e, runtime_classes), "RuntimeError": isinstance(e, RuntimeError),
                "NoSuchFile": type(e).__name__ == "NoSuchFile" or isinstance(e, getattr(state, "NoSuchFile", ()))}
    return None


def main():
    model, result_path = sys.argv[1], sys.argv[2]
    data_dir = sys.argv[3] if len(sys.argv) > 3 else None
    r = {}

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    session = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])

    r["inputs"] = [(i.name, i.type, i.shape) for i in session.get_inputs()]
    r["outputs"] = [(o.name, o.type, o.shape) for o in session.get_outputs()]
    r["overridable"] = [(o.name, o.type, o.shape) for o in session.get_overridable_initializers()]
    meta = session.get_modelmeta()
    r["meta"] = (meta.producer_name, meta.graph_name, meta.domain, meta.description, meta.graph_description,
                 meta.version, dict(meta.custom_metadata_map))
    r["providers"] = session.get_providers()
    r["available_has_cpu"] = "CPUExecutionProvider" in ort.get_available_providers()

    feed = make_feed(session, data_dir)
    outputs = session.run(None, feed)
    r["run"] = outputs
    r["run_types"] = [type(o).__name__ for o in outputs]
    last = session.get_outputs()[-1].name
    r["run_one"] = session.run([last], feed)

    # Run options (a tag and a log level, as scripts set them).
    ro = ort.RunOptions()
    ro.log_severity_level = 3
    ro.logid = "parity"
    r["run_with_options"] = session.run(None, feed, ro)

    # IO binding: inputs bound from numpy, outputs allocated by the runtime and copied out.
    # (Not for string outputs: onnxruntime 1.32's copy_outputs_to_cpu crashes on them.)
    tensor_outputs = [o.name for o in session.get_outputs()
                      if o.type.startswith("tensor(") and o.type != "tensor(string)"]
    if tensor_outputs:
        binding = session.io_binding()
        for name, value in feed.items():
            binding.bind_cpu_input(name, value)
        for name in tensor_outputs:
            binding.bind_output(name)
        session.run_with_iobinding(binding)
        r["iobinding"] = binding.copy_outputs_to_cpu()
        r["iobinding_values"] = [v.numpy() for v in binding.get_outputs()]

    # OrtValues in and out.
    if all(isinstance(v, np.ndarray) for v in feed.values()) and tensor_outputs == [o.name for o in session.get_outputs()]:
        values = {k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in feed.items()}
        r["ortvalue_info"] = [(values[k].shape(), values[k].data_type(), values[k].device_name()) for k in feed]
        r["run_with_ort_values"] = [v.numpy() for v in session.run_with_ort_values(None, values)]

    # Errors a script may catch.
    r["error_unknown_output"] = error_kind(lambda: session.run(["no_such_output"], feed))
    first = session.get_inputs()[0]
    r["error_missing_input"] = error_kind(lambda: session.run(None, {k: v for k, v in feed.items() if k != first.name}))
    if first.type == "tensor(float)":
        wrong = dict(feed)
        wrong[first.name] = np.asarray(feed[first.name], dtype=np.float64)
        r["error_wrong_type"] = error_kind(lambda: session.run(None, wrong))
    r["error_missing_file"] = error_kind(lambda: ort.InferenceSession(model + ".missing", providers=["CPUExecutionProvider"]))

    with open(result_path, "wb") as f:
        pickle.dump(r, f)


if __name__ == "__main__":
    main()
