"""The exceptions onyx raises.

Every failure is an :class:`onyx.Error` (a ``RuntimeError``) whose message says what went wrong and
where (model, node, input), with ``code`` naming the onyx error code. The subclasses carry
onnxruntime's names, so a script written for onnxruntime catches what it expects:
``except onyx.InvalidArgument`` works as ``except onnxruntime...InvalidArgument`` does.
"""

from . import _onyx


class Error(RuntimeError):
    """Base of every onyx error. ``code`` is onyx's error code ("InvalidArgument", ...)."""

    code = "Error"


class Fail(Error):
    """onnxruntime's generic failure."""


class InvalidArgument(Fail):
    """A wrong input name, shape, dtype or option value."""

    code = "InvalidArgument"


class NoSuchFile(Fail):
    """The file system refused: a missing or unreadable file."""

    code = "IoError"


class NoModel(Fail):
    """onnxruntime's name, kept for scripts that catch it (onyx does not raise it)."""


class EngineError(Fail):
    """onnxruntime's name, kept for scripts that catch it (onyx does not raise it)."""


class RuntimeException(Fail):
    """A failure while running: an out-of-range index in the data, a kernel failure."""

    code = "RuntimeError"


class InvalidProtobuf(Fail):
    """The model file is malformed: truncated, corrupt, or not ONNX."""

    code = "InvalidModel"


class ModelLoaded(Fail):
    """onnxruntime's name, kept for scripts that catch it (onyx does not raise it)."""


class NotImplemented(Fail):  # noqa: A001 - onnxruntime's name
    """Valid ONNX that this onyx does not support (an op, a version, a type)."""

    code = "NotImplemented"


class InvalidGraph(Fail):
    """The graph is ill-formed: a cycle, an undefined value, a bad attribute or arity."""

    code = "InvalidGraph"


class EPFail(Fail):
    """An execution provider failed to register or to run."""

    code = "EpFailure"


class NotAvailable(EPFail):
    """An execution provider is not built, not loadable or not usable here."""

    code = "NotAvailable"


class Cancelled(Fail):
    """The run was stopped through RunOptions.terminate."""

    code = "Cancelled"


class OutOfMemory(RuntimeException, MemoryError):
    """A run would pass the session's memory limit."""

    code = "OutOfMemory"


class MissingInput(InvalidArgument, ValueError):
    """run() without a required input (a ValueError too, as onnxruntime raises)."""


# onyx::ErrorCode values (include/onyx/error.hpp), in order.
# (code: the class's onyx error code, so one raised from the Python side says the same.)
_BY_CODE = {
    0: InvalidArgument,
    1: InvalidProtobuf,
    2: InvalidGraph,
    3: NotImplemented,
    4: RuntimeException,
    5: NoSuchFile,
    6: EPFail,
    7: NotAvailable,
    8: Cancelled,
    9: OutOfMemory,
    31: MissingInput,  # (not an ErrorCode: the extension raises it for a feed without a required input)
}
_onyx._register_errors(_BY_CODE)
