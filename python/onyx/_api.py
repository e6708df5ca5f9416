"""onnxruntime's Python API, run by onyx; and what onyx adds (placement, registration, providers)."""

from __future__ import annotations

import enum
import json
import os
import re
import sys
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _onyx
from ._errors import InvalidArgument, NotImplemented as _NotImplemented

# onyx's EP names and onnxruntime's, for every row of the EP table (docs/execution-providers.md).
_ORT_NAMES = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "tensorrt_rtx": "NvTensorRTRTXExecutionProvider",
    "directml": "DmlExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "qnn": "QNNExecutionProvider",
    "cann": "CANNExecutionProvider",
    "nnapi": "NnapiExecutionProvider",
    "tvm": "TvmExecutionProvider",
    "acl": "ACLExecutionProvider",
    "armnn": "ArmNNExecutionProvider",
    "migraphx": "MIGraphXExecutionProvider",
    "vitis_ai": "VitisAIExecutionProvider",
    "rknpu": "RknpuExecutionProvider",
    "webgpu": "WebGpuExecutionProvider",
    "azure": "AzureExecutionProvider",
    "onednn": "DnnlExecutionProvider",
    "xnnpack": "XnnpackExecutionProvider",
    "vulkan": "VulkanExecutionProvider",  # onyx's own (onnxruntime has no Vulkan EP)
}
_ONYX_NAMES = {v.lower(): k for k, v in _ORT_NAMES.items()}

# onnxruntime's option keys that onyx spells differently, per EP.
_OPTION_ALIASES = {
    "xnnpack": {"intra_op_num_threads": "threads"},
    "onednn": {"intra_op_num_threads": "threads"},
}


def _onyx_name(name: str) -> str:
    """onyx's name of an EP given by onnxruntime's name or onyx's ("CUDAExecutionProvider", "cuda")."""
    if not isinstance(name, str):
        raise InvalidArgument(f"a provider is a name or a (name, options) tuple, not {type(name).__name__}")
    low = name.lower()
    if low in _ONYX_NAMES:
        return _ONYX_NAMES[low]
    if low in _ORT_NAMES:
        return low
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return name  # a third-party EP plugin (docs/ep-sdk.md): onyx finds it by name, or says it cannot
    known = ", ".join(sorted(_ORT_NAMES.values()))
    raise InvalidArgument(f"unknown execution provider '{name}' (known: {known}, or onyx's short names)")


def _ort_name(onyx_name: str) -> str:
    return _ORT_NAMES.get(onyx_name, onyx_name)


def _option_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _requests(providers, provider_options, require: bool) -> List[Any]:
    """EpRequests from onnxruntime's providers / provider_options arguments."""
    if providers is None:
        if provider_options:
            raise InvalidArgument("provider_options given without providers")
        return []
    if isinstance(providers, (str, tuple)):
        providers = [providers]
    providers = list(providers)
    if provider_options is not None:
        provider_options = list(provider_options)
        if len(provider_options) != len(providers):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if any(isinstance(p, tuple) for p in providers):
            raise ValueError("Only one of 'providers' and 'provider_options' may contain (name, options) pairs.")
    out = []
    for i, p in enumerate(providers):
        if isinstance(p, tuple):
            if len(p) != 2 or not isinstance(p[1], dict):
                raise ValueError("a (name, options) provider must be a tuple of a name and a dict")
            name, options = p
        else:
            name, options = p, (provider_options[i] if provider_options is not None else {})
        onyx_name = _onyx_name(name)
        options = dict(options or {})
        error_on_failure = bool(options.pop("error_on_failure", require))
        aliases = _OPTION_ALIASES.get(onyx_name, {})
        pairs = [(aliases.get(str(k), str(k)), _option_value(v)) for k, v in options.items()]
        out.append(_onyx.EpRequest(onyx_name, pairs, error_on_failure))
    return out


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's optimization levels; onyx maps EXTENDED and LAYOUT to ALL."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for onnxruntime scripts: onyx runs nodes in order, with intra-op threads."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class SessionOptions:
    """onnxruntime's SessionOptions. Settings onyx has no use for are accepted and kept (see
    docs/python.md for which); the ones it cannot honour raise onyx.NotImplemented."""

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0  # accepted: onyx runs one node at a time, with intra-op threads
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self._log_severity_level: Optional[int] = None
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.enable_profiling = False
        self.profile_file_prefix = "onyx_profile"
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config: Dict[str, str] = {}
        self._dims: List[Tuple[str, int]] = []

    @property
    def log_severity_level(self) -> int:
        return 2 if self._log_severity_level is None else self._log_severity_level

    @log_severity_level.setter
    def log_severity_level(self, level: int) -> None:
        self._log_severity_level = int(level)

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise InvalidArgument(f"SessionOptions has no configuration entry '{key}'")
        return self._config[key]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        self._dims.append((str(dim_name), int(dim_value)))

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        raise _NotImplemented(
            "add_free_dimension_override_by_denotation: onyx does not read dimension denotations; "
            "use add_free_dimension_override_by_name with the dim's name")

    def register_custom_ops_library(self, library_path: str) -> None:
        raise _NotImplemented(f"register_custom_ops_library('{library_path}'): onyx loads no custom-op libraries yet")

    def add_initializer(self, name: str, value: Any) -> None:
        raise _NotImplemented(f"add_initializer('{name}'): onyx takes initializers from the model only")

    def add_external_initializers(self, names: Sequence[str], values: Sequence[Any]) -> None:
        raise _NotImplemented("add_external_initializers: onyx takes initializers from the model only")

    def _to_onyx(self) -> Dict[str, Any]:
        level = int(self.graph_optimization_level)
        opts: Dict[str, Any] = {
            "intra_op_num_threads": int(self.intra_op_num_threads),
            "optimization_level": 0 if level == 0 else 1 if level == 1 else 2,
            "dimension_overrides": list(self._dims),
        }
        c = self._config
        if "session.intra_op.allow_spinning" in c:
            opts["allow_spinning"] = c["session.intra_op.allow_spinning"] != "0"
        if c.get("session.disable_cpu_ep_fallback", "0") == "1":
            opts["cpu_fallback"] = False
        return opts


class RunOptions(_onyx.RunOptions):
    """onnxruntime's RunOptions. Setting ``terminate = True`` (from any thread) stops every run using
    these options with onyx.Cancelled; ``False`` lets them run again."""

    def __init__(self) -> None:
        super().__init__()
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.only_execute_path_to_fetches = False
        self._config: Dict[str, str] = {}

    @property
    def terminate(self) -> bool:
        return self._terminated()

    @terminate.setter
    def terminate(self, on: bool) -> None:
        self._set_terminate(bool(on))

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise InvalidArgument(f"RunOptions has no configuration entry '{key}'")
        return self._config[key]


class NodeArg:
    """An input or output: ``name``, ``type`` ("tensor(float)") and ``shape`` (ints, str for a
    named dim, None for an unknown one)."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, d: Dict[str, Any]) -> None:
        self.name: str = d["name"]
        self.type: str = d["type"]
        self.shape = d["shape"] if d["shape"] is not None else []

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """What the model file says about itself (onnxruntime's ModelMetadata)."""

    def __init__(self, d: Dict[str, Any]) -> None:
        self.producer_name: str = d["producer_name"]
        self.graph_name: str = d["graph_name"]
        self.domain: str = d["domain"]
        self.description: str = d["description"]
        self.graph_description: str = d["graph_description"]
        self.version: int = d["version"]
        self.custom_metadata_map: Dict[str, str] = d["custom_metadata_map"]
        # onyx's additions
        self.producer_version: str = d["producer_version"]
        self.ir_version: int = d["ir_version"]
        self.opsets: Dict[str, int] = {k or "ai.onnx": v for k, v in d["opsets"]}


def _check_host(device_type: str, what: str) -> None:
    if str(device_type).lower() != "cpu":
        raise InvalidArgument(
            f"{what}: device_type '{device_type}': onyx's Python API exchanges values in host memory "
            "(an EP copies them to its device and back); use 'cpu'")


class OrtValue:
    """A value in host memory (onnxruntime's OrtValue). One made from a numpy array shares its
    memory: no copy is made, and the array is kept alive."""

    __slots__ = ("_v",)

    def __init__(self, v: Any) -> None:
        if not isinstance(v, _onyx.Value):
            raise InvalidArgument("OrtValue: use OrtValue.ortvalue_from_numpy or ortvalue_from_shape_and_type")
        self._v = v

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type: str = "cpu", device_id: int = 0, vendor_id: int = -1) -> "OrtValue":
        _check_host(device_type, "ortvalue_from_numpy")
        return OrtValue(_onyx.Value.from_object(numpy_obj, None))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type: str = "cpu", device_id: int = 0,
                                     vendor_id: int = -1) -> "OrtValue":
        _check_host(device_type, "ortvalue_from_shape_and_type")
        return OrtValue(_onyx.Value.empty([int(d) for d in shape], element_type))

    def numpy(self):
        """The value as a numpy array sharing its memory (a list, dict or None for non-tensors)."""
        return self._v.to_python()

    def data_ptr(self) -> int:
        return self._v.data_ptr

    def device_name(self) -> str:
        return self._v.device

    def shape(self) -> List[int]:
        return list(self._v.shape)

    def data_type(self) -> str:
        return self._v.onnx_type

    def element_type(self):
        """The numpy type of the elements (onnxruntime returns the same)."""
        return self.numpy().dtype.type if self.is_tensor() else None

    def has_value(self) -> bool:
        return self._v.kind != "none"

    def is_tensor(self) -> bool:
        return self._v.kind == "tensor"

    def is_sparse_tensor(self) -> bool:
        return False

    def is_tensor_sequence(self) -> bool:
        return self._v.kind == "sequence"

    def update_inplace(self, np_arr) -> None:
        """Copies np_arr's elements into this value's memory (same shape and type)."""
        target = self.numpy()
        import numpy as np

        src = np.asarray(np_arr)
        if src.shape != target.shape or src.dtype != target.dtype:
            raise InvalidArgument(
                f"update_inplace: got {src.dtype}{list(src.shape)}, the value is {target.dtype}{list(target.shape)}")
        np.copyto(target, src)

    def __repr__(self) -> str:
        return f"OrtValue({self.data_type()}, shape={self.shape()}, device={self.device_name()})"


class IOBinding:
    """onnxruntime's IOBinding: inputs and outputs bound once and run many times. Host inputs are
    used in place; outputs bound to an OrtValue (or a buffer) are written there."""

    def __init__(self, session: "InferenceSession") -> None:
        self._session = session
        self._b = _onyx.Binding(session._sess)

    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        self._b.bind_input(name, arr_on_cpu)

    def bind_input(self, name: str, device_type: str, device_id: int, element_type, shape, buffer_ptr: int) -> None:
        _check_host(device_type, f"bind_input('{name}')")
        self._b.bind_pointer(name, element_type, [int(d) for d in shape], int(buffer_ptr))

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._b.bind_input(name, ortvalue._v)

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: bound values are in host memory."""

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0, element_type=None, shape=None,
                    buffer_ptr: Optional[int] = None) -> None:
        _check_host(device_type, f"bind_output('{name}')")
        if buffer_ptr is None:
            self._b.bind_output(name, None)
            return
        if element_type is None or shape is None:
            raise InvalidArgument(f"bind_output('{name}'): a buffer_ptr needs element_type and shape")
        self._b.bind_output_pointer(name, element_type, [int(d) for d in shape], int(buffer_ptr))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        self._b.bind_output(name, ortvalue._v)

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: outputs are in host memory when the run returns."""

    def get_outputs(self) -> List[OrtValue]:
        return [OrtValue(v) for v in self._b.outputs()]

    def get_outputs_as_ortvaluevector(self) -> List[OrtValue]:
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list:
        return [v.to_python() for v in self._b.outputs()]

    def clear_binding_inputs(self) -> None:
        self._b.clear_inputs()

    def clear_binding_outputs(self) -> None:
        self._b.clear_outputs()


class InferenceSession:
    """onnxruntime's InferenceSession, run by onyx.

    ``providers`` takes onnxruntime's names ("CUDAExecutionProvider"), onyx's ("cuda"), or
    ``(name, options)`` tuples; each node runs on the first that takes it, the CPU EP takes the rest.
    An EP that cannot register here is skipped with a warning (``session.registration()`` says
    why) unless its options say ``"error_on_failure": True`` or ``require_providers=True``.

    onyx's additions: ``strict=True`` makes creation fail when any node would run on the CPU EP;
    ``memory_limit`` (bytes) caps what a run may hold; ``environment_providers=False`` ignores the
    defaults set with onyx.init(); ``placement()`` and ``registration()`` say where each node runs
    and why.
    """

    def __init__(self, path_or_bytes, sess_options: Optional[SessionOptions] = None, providers=None,
                 provider_options=None, *, require_providers: bool = False, strict: bool = False,
                 memory_limit: int = 0, environment_providers: bool = True, disabled_optimizers=None,
                 **kwargs) -> None:
        if kwargs:
            raise TypeError(f"InferenceSession() got unexpected keyword arguments: {', '.join(kwargs)}")
        if disabled_optimizers:
            raise _NotImplemented("disabled_optimizers: onyx's optimizer is set with graph_optimization_level only")
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = ""
            self._model = bytes(path_or_bytes)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._model = self._model_path
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._extras = {"strict": strict, "memory_limit": int(memory_limit),
                        "environment_providers": environment_providers, "require_providers": require_providers}
        self._profile_start_ns = 0
        self._create(providers, provider_options)

    def _create(self, providers, provider_options) -> None:
        so = self._sess_options
        if so._log_severity_level is not None:
            _onyx.set_log_level(so._log_severity_level)
        opts = so._to_onyx()
        if self._extras["strict"]:
            opts["cpu_fallback"] = False
        if self._extras["memory_limit"]:
            opts["memory_limit"] = self._extras["memory_limit"]
        if not self._extras["environment_providers"]:
            opts["no_environment_providers"] = True
        if so.optimized_model_filepath:
            opts["optimized_model_file"] = os.fspath(so.optimized_model_filepath)
        requests = _requests(providers, provider_options, self._extras["require_providers"])
        self._sess = _onyx.Session(self._model, opts, requests)
        self._providers_arg = providers
        self._provider_options_arg = provider_options
        for r in self._sess.registration():
            if r.outcome == "skipped" and r.source == "session":
                warnings.warn(f"Specified provider '{_ort_name(r.name)}' was skipped: {r.reason}. "
                              f"Running on: {', '.join(self.get_providers())}", UserWarning, stacklevel=3)
        self._inputs = [NodeArg(d) for d in self._sess.inputs() if not d["has_default"]]
        self._overridable = [NodeArg(d) for d in self._sess.inputs() if d["has_default"]]
        self._outputs = [NodeArg(d) for d in self._sess.outputs()]
        if so.enable_profiling:
            self._sess.set_profiling(True)
            self._profile_start_ns = time.time_ns()

    # --- onnxruntime's API -------------------------------------------------------------------

    def run(self, output_names, input_feed: Dict[str, Any], run_options: Optional[RunOptions] = None) -> list:
        """Runs the model; returns the outputs named (all when output_names is None or empty), as
        numpy arrays that own onyx's buffers. Releases the GIL while running."""
        return self._sess.run(output_names, input_feed, run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values: Dict[str, OrtValue],
                            run_options: Optional[RunOptions] = None) -> List[OrtValue]:
        feed = {k: (v._v if isinstance(v, OrtValue) else v) for k, v in input_dict_ort_values.items()}
        return [OrtValue.ortvalue_from_numpy(a) if a is not None else None
                for a in self._sess.run(output_names, feed, run_options)]

    def io_binding(self) -> IOBinding:
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: Optional[RunOptions] = None) -> None:
        iobinding._b.run(run_options)

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        return list(self._overridable)

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._sess.metadata())

    def get_providers(self) -> List[str]:
        regs = [r for r in self._sess.registration() if r.outcome == "registered"]
        return [_ort_name(r.name) for r in sorted(regs, key=lambda r: r.priority)]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {_ort_name(r.name): dict(r.options) for r in self._sess.registration() if r.outcome == "registered"}

    def set_providers(self, providers=None, provider_options=None) -> None:
        """Recreates the session with other providers (same model and options)."""
        self._create(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_profiling_start_time_ns(self) -> int:
        return self._profile_start_ns

    def end_profiling(self) -> str:
        """Writes the node times recorded since the session started profiling as a Chrome trace
        (chrome://tracing, Perfetto) named <profile_file_prefix>_<date>_<time>.json; returns its path."""
        if not self._sess_options.enable_profiling:
            return ""
        events = []
        pid = os.getpid()
        for name, op, ep, start, duration, whole in self._sess.take_profile():
            if whole:
                events.append({"cat": "Session", "pid": pid, "tid": 0, "dur": round(duration, 3),
                               "ts": round(start, 3), "ph": "X", "name": "model_run", "args": {}})
            else:
                events.append({"cat": "Node", "pid": pid, "tid": 0, "dur": round(duration, 3), "ts": round(start, 3),
                               "ph": "X", "name": f"{name}_kernel_time",
                               "args": {"op_name": op, "provider": _ort_name(ep)}})
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{self._sess_options.profile_file_prefix}_{stamp}.json"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(events, f)
        self._sess.set_profiling(False)
        return path

    def disable_fallback(self) -> None:
        """Accepted for onnxruntime scripts (onyx never retries a session on other EPs)."""

    def enable_fallback(self) -> None:
        """Accepted for onnxruntime scripts (onyx never retries a session on other EPs)."""

    # --- onyx's additions --------------------------------------------------------------------

    def placement(self):
        """Where every node runs, every higher-priority EP's reason for declining it, and the copies
        between memories (onyx.Placement)."""
        return self._sess.placement()

    def generate(self, prompt_ids, max_new_tokens: int = 32, eos_token_ids=None, share_buffer: bool = False,
                 max_length: int = 0) -> dict:
        """Greedy generation with a decoder exported with its key/value cache (onyx::Generator,
        docs/transformers.md): the prompt's step, then one step per new token, each step's present
        outputs the next step's past inputs. Returns a dict: tokens (the new ones), prompt_tokens,
        time_to_first_token_ms, step_ms (each later step), decode_tokens_per_s, cache_copy_bytes
        and cache (the (past input, present output) pairs). share_buffer: one preallocated buffer of
        max_length positions per past input, written in place (GroupQueryAttention models)."""
        return self._sess.generate([int(t) for t in prompt_ids], int(max_new_tokens),
                                   [int(t) for t in (eos_token_ids or [])], bool(share_buffer), int(max_length))

    def registration(self) -> list:
        """Every requested EP: registered (priority, device, effective options), skipped (why), or a
        duplicate; the implicit CPU EP last."""
        return self._sess.registration()

    def plan_count(self) -> int:
        """Cached execution plans (one per input-shape signature seen)."""
        return self._sess.plan_count()


# --- module functions ------------------------------------------------------------------------

def providers() -> list:
    """Every EP of the table with what works here: built, loadable, usable, the reason for the first
    "no", its version and options (the same as `onyx providers`)."""
    return _onyx.list_providers()


def get_available_providers() -> List[str]:
    """onnxruntime's names of the EPs usable on this machine, CPU last."""
    usable = [p.name for p in _onyx.list_providers() if p.usable and p.name != "cpu"]
    return [_ort_name(n) for n in usable] + ["CPUExecutionProvider"]


def get_all_providers() -> List[str]:
    """onnxruntime's names of every EP onyx knows, usable here or not."""
    return [_ort_name(p.name) for p in _onyx.list_providers()]


def get_device() -> str:
    """"GPU" when the CUDA EP is usable here, else "CPU"."""
    return "GPU" if any(p.name == "cuda" and p.usable for p in _onyx.list_providers()) else "CPU"


def get_version_string() -> str:
    return _onyx.version()


def set_default_logger_severity(severity: int) -> None:
    """0 verbose, 1 info, 2 warning (default), 3 error, 4 off."""
    _onyx.set_log_level(int(severity))


def init(providers=None, provider_options=None) -> None:
    """Sets the environment's default EPs: every session created afterwards appends them (after its
    own) unless it passes environment_providers=False."""
    _onyx.set_environment_providers(_requests(providers, provider_options, False))


def explain(path_or_bytes, providers=None, provider_options=None, sess_options: Optional[SessionOptions] = None,
            file=None, **kwargs) -> str:
    """Prints (to ``file``, default stdout) and returns the table `onyx explain MODEL` prints: the EPs
    requested and what became of them, where each node runs and who declined it, and the copies."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = InferenceSession(path_or_bytes, sess_options, providers, provider_options, **kwargs)
    name = os.fspath(path_or_bytes) if isinstance(path_or_bytes, (str, os.PathLike)) else "<bytes>"
    text = s._sess.explain_text(name)
    (file or sys.stdout).write(text)
    return text
