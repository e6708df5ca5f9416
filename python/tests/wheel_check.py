"""Checks an installed onyx wheel from a venv that has nothing but it and numpy (./dev python).

Usage: python wheel_check.py EXAMPLES_MODELS_DIR

The package must import from the venv (not from the repo), carry libonyx and the EP modules it was
built with (each loadable from inside the package), and run the example model to the outputs
recorded beside it (examples/models/tiny_cnn_test_data, from onnxruntime).
"""

import os
import sys

import numpy as np

import onyx


def varint(buf, i):
    """The varint at buf[i:] and the position after it."""
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def read_tensor(path):
    """A float TensorProto (dims, data_type 1, raw_data) read without the onnx package."""
    data = open(path, "rb").read()
    dims, raw, dtype, i = [], b"", None, 0
    while i < len(data):
        key, i = varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(data, i)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wire == 2:
            n, i = varint(data, i)
            chunk = data[i:i + n]
            i += n
            if field == 9:
                raw = chunk
            elif field == 1:  # packed dims
                j = 0
                while j < len(chunk):
                    v, j = varint(chunk, j)
                    dims.append(v)
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"{path}: unexpected wire type {wire}")
    if dtype != 1:
        raise ValueError(f"{path}: not a float tensor")
    return np.frombuffer(raw, dtype="<f4").reshape(dims)


def main():
    models = os.path.abspath(sys.argv[1])
    package = os.path.dirname(onyx.__file__)
    here = os.path.abspath(sys.prefix)
    assert package.startswith(here), f"onyx imported from {package}, not from the venv {here}"
    files = sorted(os.listdir(package))
    assert any(f.startswith("libonyx.so") for f in files), f"no libonyx in the package: {files}"
    modules = [f for f in files if f.startswith("libonyx_ep_")]
    for p in onyx.providers():
        if f"libonyx_ep_{p.name}.so" in modules:
            assert p.loadable or "driver" in p.reason or "device" in p.reason, f"{p.name}: {p.reason}"
            if p.module:
                assert os.path.dirname(p.module) == package, f"{p.name} loaded from {p.module}"
    session = onyx.InferenceSession(os.path.join(models, "tiny_cnn.onnx"), providers=["CPUExecutionProvider"])
    x = read_tensor(os.path.join(models, "tiny_cnn_test_data", "input_0.pb"))
    want = read_tensor(os.path.join(models, "tiny_cnn_test_data", "output_0.pb"))
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    err = float(np.max(np.abs(got - want)))
    assert err < 1e-4, f"tiny_cnn: max abs difference {err} from the recorded output"
    usable = [p.name for p in onyx.providers() if p.usable]
    print(f"wheel check: onyx {onyx.__version__} from {package}; modules {modules}; usable {usable}; "
          f"tiny_cnn max abs diff {err:.2e}")


if __name__ == "__main__":
    main()
