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
EpRegistration = _onyx.EpRegistration
ProviderInfo = _onyx.ProviderInfo

__version__ = _onyx.version()
