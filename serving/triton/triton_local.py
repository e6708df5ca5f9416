"""Runs Triton Inference Server on loopback with the onyx backend (and the Python backend), for the
triton_serving test and bench/triton_throughput.py (docs/serving.md).

The server comes from PyPI's nvidia-pytriton wheel in the venv that runs this module
(.cache/triton-venv, scripts/triton_venv.sh): its tritonserver binary, its libraries and its
Python backend. A backend directory is assembled beside the model repository: onyx/ links
libtriton_onyx.so, python/ links the wheel's Python backend and the stub for this Python."""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON_MODEL = pathlib.Path(__file__).resolve().parent / "ort_python_model" / "model.py"


class Unavailable(Exception):
    """What the server needs is missing (the test skips, saying this)."""


def pytriton_dir():
    try:
        import pytriton  # noqa: F401 - only its location is needed
    except ImportError as e:
        raise Unavailable(f"nvidia-pytriton is not installed in {sys.prefix} (scripts/triton_venv.sh): {e}")
    root = pathlib.Path(pytriton.__file__).resolve().parent
    server = root / "tritonserver" / "bin" / "tritonserver"
    if not server.exists():
        raise Unavailable(f"the pytriton wheel has no {server}")
    return root


def make_backend_dir(dst, backend_so):
    """dst/onyx/libtriton_onyx.so and dst/python/ (the wheel's Python backend, the stub for this
    interpreter's version)."""
    root = pytriton_dir() / "tritonserver"
    dst = pathlib.Path(dst)
    shutil.rmtree(dst, ignore_errors=True)
    (dst / "onyx").mkdir(parents=True)
    (dst / "onyx" / "libtriton_onyx.so").symlink_to(pathlib.Path(backend_so).resolve())
    (dst / "python").mkdir()
    for f in (root / "backends" / "python").iterdir():
        if f.is_file():
            (dst / "python" / f.name).symlink_to(f)
    stub = root / "python_backend_stubs" / f"{sys.version_info.major}.{sys.version_info.minor}" / "triton_python_backend_stub"
    if not stub.exists():
        raise Unavailable(f"the pytriton wheel has no Python backend stub for Python {sys.version_info.major}.{sys.version_info.minor}")
    (dst / "python" / "triton_python_backend_stub").symlink_to(stub)
    return dst


def onyx_config(name, max_batch_size=None, inputs=None, outputs=None, instances=1, kind="KIND_CPU", parameters=None,
                dynamic_batching=None):
    """config.pbtxt text for the onyx backend; None leaves a field to auto-completion."""
    lines = [f'name: "{name}"', 'backend: "onyx"']
    if max_batch_size is not None:
        lines.append(f"max_batch_size: {max_batch_size}")
    for kind_name, items in (("input", inputs), ("output", outputs)):
        if items:
            entries = [f'{{ name: "{n}" data_type: {t} dims: [ {", ".join(str(d) for d in dims)} ] }}' for n, t, dims in items]
            lines.append(f"{kind_name} [ {', '.join(entries)} ]")
    if dynamic_batching is not None:
        lines.append(f"dynamic_batching {{ max_queue_delay_microseconds: {dynamic_batching} }}")
    lines.append(f"instance_group [ {{ count: {instances} kind: {kind} }} ]")
    for k, v in (parameters or {}).items():
        lines.append(f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}')
    return "\n".join(lines) + "\n"


def python_ort_config(name, inputs, outputs, max_batch_size=0, instances=1, threads=0, dynamic_batching=None):
    """config.pbtxt text for the Python backend model running ONNX Runtime (model.py)."""
    text = onyx_config(name, max_batch_size, inputs, outputs, instances, "KIND_CPU", {"threads": threads}, dynamic_batching)
    return text.replace('backend: "onyx"', 'backend: "python"')


def add_model(repo, name, config_text, onnx_path, python_model=False):
    d = pathlib.Path(repo) / name
    shutil.rmtree(d, ignore_errors=True)
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(config_text)
    (d / "1" / "model.onnx").symlink_to(pathlib.Path(onnx_path).resolve())
    if python_model:
        shutil.copy(PYTHON_MODEL, d / "1" / "model.py")
    return d


def _die_with_parent():
    """In the server's child process before exec: the kernel kills it when the process that
    started it dies, even by SIGKILL (a test runner's timeout), so no server outlives its test."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """tritonserver on 127.0.0.1 (HTTP and gRPC on free ports, no metrics), models loaded
    explicitly. Use as a context manager: the server is stopped on every way out."""

    def __init__(self, repo, backends, models, log_path, startup_timeout=120):
        self.repo, self.backends, self.models = pathlib.Path(repo), pathlib.Path(backends), list(models)
        self.log_path, self.startup_timeout = pathlib.Path(log_path), startup_timeout
        self.proc = None
        self.http_port = self.grpc_port = None

    @property
    def http_url(self):
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self):
        return f"127.0.0.1:{self.grpc_port}"

    def env(self):
        root = pytriton_dir()
        env = dict(os.environ)
        # The server's bundled libraries; the libpython of this interpreter for the Python backend's
        # stub, which imports numpy and onnxruntime from this venv.
        libs = [str(root.parent / "nvidia_pytriton.libs")]
        libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
        if libdir and soname and (pathlib.Path(libdir) / soname).exists():
            libs.append(libdir)
        else:
            import ctypes
            try:
                ctypes.CDLL(soname or f"libpython{sys.version_info.major}.{sys.version_info.minor}.so.1.0")
            except OSError as e:
                raise Unavailable(f"the Python backend's stub needs the shared libpython of Python "
                                  f"{sys.version_info.major}.{sys.version_info.minor} ({e})")
        env["LD_LIBRARY_PATH"] = ":".join(libs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
        env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
        env["PATH"] = f"{pathlib.Path(sys.executable).parent}:{env.get('PATH', '')}"
        return env

    def start(self):
        server = pytriton_dir() / "tritonserver" / "bin" / "tritonserver"
        self.http_port, self.grpc_port = free_port(), free_port()
        while self.grpc_port == self.http_port:
            self.grpc_port = free_port()
        cmd = [str(server), f"--model-repository={self.repo}", f"--backend-directory={self.backends}",
               "--http-address=127.0.0.1", f"--http-port={self.http_port}",
               "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
               "--allow-metrics=false", "--allow-sagemaker=false", "--allow-vertex-ai=false",
               "--model-control-mode=explicit", "--exit-timeout-secs=30", "--log-info=true"]
        cmd += [f"--load-model={m}" for m in self.models]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True,
                                     preexec_fn=_die_with_parent)
        import tritonclient.http as http
        client = http.InferenceServerClient(self.http_url)
        deadline = time.time() + self.startup_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {self.proc.returncode} while starting:\n{self.log_tail()}")
            try:
                if client.is_server_ready():
                    return self
            except Exception:  # noqa: BLE001 - not listening yet
                pass
            time.sleep(0.2)
        raise RuntimeError(f"tritonserver not ready after {self.startup_timeout} s:\n{self.log_tail()}")

    def log_tail(self, lines=40):
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def log_text(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout=40):
        """SIGTERM, wait; SIGKILL the process group if it does not exit. Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # The Python backend's stubs are children in the same session: none may outlive it.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()
        return self.proc.returncode

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


# ONNX TensorProto element types -> numpy dtype names (the ones the test data sets use).
_PB_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
              10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


def read_tensor_pb(path):
    """Reads an ONNX TensorProto file (input_N.pb / output_N.pb of a test data set) into a numpy
    array: dims, data_type and raw_data or the typed repeated fields; no onnx package needed."""
    import numpy as np
    data = pathlib.Path(path).read_bytes()
    pos, dims, dtype, raw, floats, ints, name = 0, [], 1, None, [], [], ""

    def varint():
        nonlocal pos
        shift = value = 0
        while True:
            b = data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    def packed(field_type, reader, out):
        nonlocal pos
        if field_type == 2:
            end = varint() + pos
            while pos < end:
                out.append(reader())
        else:
            out.append(reader())

    def f32():
        nonlocal pos
        v = np.frombuffer(data[pos:pos + 4], "<f4")[0]
        pos += 4
        return v

    while pos < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if field == 1:
            packed(wire, varint, dims)
        elif field == 2:
            dtype = varint()
        elif field == 4:
            packed(wire, f32, floats)
        elif field in (5, 7):
            packed(wire, varint, ints)
        elif field in (8, 9):
            size = varint()
            chunk = data[pos:pos + size]
            pos += size
            if field == 9:
                raw = chunk
            else:
                name = chunk.decode()
        elif wire == 0:
            varint()
        elif wire == 2:
            pos += varint()
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"{path}: unsupported protobuf wire type {wire}")
    np_type = np.dtype(_PB_DTYPES[dtype])
    if raw is not None:
        array = np.frombuffer(raw, np_type.newbyteorder("<")).astype(np_type)
    elif floats:
        array = np.array(floats, np_type)
    else:
        # int64 fields are two's complement varints
        array = np.array([v - (1 << 64) if v >= 1 << 63 else v for v in ints]).astype(np_type)
    return name, array.reshape(dims)


def read_data_set(directory, prefix):
    """Every PREFIX_N.pb of a test data set directory, in order: [(name, array)]."""
    files = sorted(pathlib.Path(directory).glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
    return [read_tensor_pb(f) for f in files]


def measure(url, model, feeds, concurrency, seconds, warmup=0.5):
    """Closed-loop load as perf_analyzer makes it: `concurrency` clients (gRPC, one connection
    each) send `feeds` ([(name, array)]) to `model` back to back. Returns (inferences per second
    over `seconds` after `warmup`, median latency in ms, errors)."""
    import threading

    import numpy as np
    import tritonclient.grpc as grpc
    from tritonclient.utils import np_to_triton_dtype

    counts, latencies, errors = [0] * concurrency, [[] for _ in range(concurrency)], []
    t0 = time.time() + warmup + 0.2 * concurrency ** 0.5  # connections open before the window
    t1 = t0 + seconds

    def worker(k):
        try:
            client = grpc.InferenceServerClient(url)
            inputs = []
            for name, array in feeds:
                i = grpc.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
                i.set_data_from_numpy(array)
                inputs.append(i)
            while True:
                start = time.time()
                client.infer(model, inputs)
                end = time.time()
                if end > t1:
                    break
                if start >= t0:
                    counts[k] += 1
                    latencies[k].append(end - start)
            client.close()
        except Exception as e:  # noqa: BLE001 - reported to the caller
            errors.append(f"{model}: {e}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_latencies = [x for lat in latencies for x in lat]
    p50 = float(np.median(all_latencies)) * 1e3 if all_latencies else float("nan")
    return sum(counts) / seconds, p50, errors
