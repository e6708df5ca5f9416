"""onyx: an ONNX inference runtime built around execution providers.

``import onyx as onnxruntime`` runs scripts written for onnxruntime: InferenceSession,
SessionOptions, RunOptions, IOBinding, OrtValue, get_available_providers, ... (docs/python.md).
onyx adds ``session.placement()`` / ``session.registration()`` (where each node runs and why),
``onyx.providers()`` (what works on this machine and why not), ``onyx.explain()`` and
``onyx.init(providers=...)`` (environment-wide default EPs).
"""

from . import _onyx
from ._errors import (  # noqa: F401
    Cancelled,
    EngineError,
    EPFail,
    Error,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    MissingInput,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    NotAvailable,
    NotImplemented,
    OutOfMemory,
    RuntimeException,
)
from ._api import (  # noqa: F401
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    InferenceSession,
    IOBinding,
    ModelMetadata,
    NodeArg,
    OrtValue,
    RunOptions,
    SessionOptions,
    explain,
    get_all_providers,
    get_available_providers,
    get_device,
    get_version_string,
    init,
    providers,
    set_default_logger_severity,
)

Placement = _onyx.Placement


def register_custom_op(domain, name, compute, infer=None, since_version=1):
    """Registers a custom operator (domain, name) for every session of the process, run on the CPU
    EP (docs/custom-ops.md). compute(*inputs) gets numpy arrays (None for an omitted optional
    input) and returns an array, or a list of arrays, one per output. infer(input_types) gets one
    (dtype, shape) pair per input -- shape a tuple with None for a dim not known yet, or None when
    the rank is not known -- and returns one (dtype, shape) pair per output; without it every
    output has input 0's type and shape. Both are called with the GIL held. Raises
    InvalidArgument for one of onyx's own domains or an op already registered."""
    _onyx.register_custom_op(domain, name, infer, compute, since_version)
    _CUSTOM_OPS.append((infer, compute))  # alive as long as the op (the extension borrows them)


_CUSTOM_OPS = []

EpRegistration = _onyx.EpRegistration
ProviderInfo = _onyx.ProviderInfo

__version__ = _onyx.version()
