"""shiftlearn.federated: FedRF-TCA (iterative, Feng et al.) and one-shot exact federated
RF-TCA, transport-neutral protocol messages, a fault-injecting simulator and Flower apps
(``shiftlearn.federated.flower``, needs the ``federated`` extra)."""

from ._data import ClientData, load_client_data, make_federated_blobs
from ._guard import Rejection, ReplyGuard
from ._iterative import (
    FedRFTCAConfig,
    IterativeClient,
    IterativeServer,
    predict,
    sample_clients,
    train_softmax,
)
from ._messages import (
    PROTOCOL,
    PROTOCOL_VERSION,
    MessageError,
    ModelBroadcast,
    ProtocolSpec,
    StatsReply,
    StatsRequest,
    TrainReply,
    TrainRequest,
    decode,
    encode,
    expected_sizes,
    message_nbytes,
)
from ._oneshot import (
    OneShotClient,
    OneShotConfig,
    OneShotServer,
    arrays_to_stats,
    stats_layout,
    stats_to_arrays,
)
from ._run import (
    IterativeResult,
    OneShotResult,
    run_iterative,
    run_oneshot,
    train_source_only,
)
from ._simulator import NetworkConditions, Simulator, Traffic

__all__ = [
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "ClientData",
    "FedRFTCAConfig",
    "IterativeClient",
    "IterativeResult",
    "IterativeServer",
    "MessageError",
    "ModelBroadcast",
    "NetworkConditions",
    "OneShotClient",
    "OneShotConfig",
    "OneShotResult",
    "OneShotServer",
    "ProtocolSpec",
    "Rejection",
    "ReplyGuard",
    "Simulator",
    "StatsReply",
    "StatsRequest",
    "Traffic",
    "TrainReply",
    "TrainRequest",
    "decode",
    "encode",
    "expected_sizes",
    "load_client_data",
    "make_federated_blobs",
    "message_nbytes",
    "predict",
    "arrays_to_stats",
    "run_iterative",
    "run_oneshot",
    "stats_layout",
    "stats_to_arrays",
    "sample_clients",
    "train_softmax",
    "train_source_only",
]
