"""The exception classes under the module path onnxruntime scripts import them from
(``from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument``)."""

from onyx._errors import (  # noqa: F401  (absolute: the same classes under any alias of onyx)
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    NotImplemented,
    RuntimeException,
)
