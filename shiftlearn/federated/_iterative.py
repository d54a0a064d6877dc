"""Iterative FedRF-TCA (Feng et al., Alg. 2-5) on precomputed features, transport-neutral.

Every client maps its (fixed, precomputed) features through the shared random Fourier features
``z(x) = N^{-1/2} [cos(Omega^T x); sin(Omega^T x)]`` (``Omega`` from the shared integer seed, never
sent), then a bias-free adaptive layer ``W`` (2N x m) and a softmax classifier ``C`` ((m+1) x k,
last row = bias). Sources minimise ``CE + lam * MMD``, the target ``lam * MMD`` only, by local
Adam steps; the server averages ``W`` every round and ``C`` every ``T_C`` rounds.

The paper's open points, as implemented (design notes: ``docs/dev/federated.md``):

* **MMD term.** Source i: ``||W^T (mu_i - mu_T)||^2``; target: the *mean* over the sampled
  sources of the same pairwise terms (the public code sums the source means, which is not a
  mean difference for K > 1). ``mu`` are full local mean embeddings: with fixed features they are
  exact and cheap; mini-batches (``batch_size``) are used for the cross-entropy only.
* **Staleness.** A client uses the latest counterpart embedding it has received; in a
  request/reply transport that is the previous round's (one round stale), and older if
  messages were lost. Round 1 trains without the MMD term (nothing received yet).
* **Client sampling.** ``|S_t| ~ Unif{0..K}`` then ``S_t`` without replacement
  (``client_sampling="paper"``);
  ``"code"`` = ``Unif{0..K-1}`` (public code), ``"all"`` = every source every round. Every
  source trains every round (Alg. 2): those outside ``S_t`` on CE only, uploading nothing but
  their 2N-vector.
* **Aggregation.** Unweighted mean of the ``W`` of the sampled sources that answered plus the
  target's (Alg. 4); the unweighted mean of their classifiers when a classifier average is
  *due*: it becomes due at ``t % T_C == 0`` and stays due (requests carry ``send_C``) until an
  average actually happens, i.e. until at least one sampled source's classifier arrives (the
  paper skips the average when ``S_t`` is empty; on a lossy network that would silently drop
  it, and with large ``T_C`` the global classifier could stay at its zero initialisation).
  The averaged models are downloaded by the contributors with their next request
  (piggy-backed), the classifier also by the target; a download stays pending until the
  client answers a request that carried it (a lost request is repeated, never skipped).
  ``S_t`` empty: ``W`` = the target's, no classifier average. Late, duplicated or malformed
  replies are rejected (:class:`~shiftlearn.federated.ReplyGuard`), and so is a reply with
  a value no honest client can send (:meth:`IterativeServer.value_bounds`): the averages then
  stay bounded, and an honest run is unchanged (a mean of bounded values is bounded).
* **Initialisation.** ``W`` from ``default_rng([seed, 1])`` (entries ``N(0, 1/m)``) on every
  client, so no download is needed in round 1; ``C = 0``.
* **Variants.** ``algorithm="fedavg"``: the same model without the MMD term, every
  part (``W``, ``C`` and the deep model's extractor ``G``) averaged over the sampled sources on
  the classifier's schedule (every ``T_C`` rounds), the target idle (it only sends its mean).
  ``subsets="II"`` / ``"III"``: the paper's nested message subsets (its Table III): ``A = S_t``
  exchange the embeddings; the classifiers come from a random ``B ⊆ A`` (II), or the ``W`` from
  ``B ⊆ A`` and the classifiers from ``C ⊆ B`` (III), each nested subset of size
  ``Unif{0..|parent|}``; a ``W`` from outside its subset is discarded by the server as if lost
  (its bytes are counted). ``vote=True`` (the paper's D-B3): classifiers are never averaged;
  in the last round every source is asked for its classifier (``send_C``), the server keeps
  the latest classifier of every source (``vote_C``) and the target predicts by majority vote.
  With a deep model ``send_C`` also asks for the extractor ``G``, which is averaged on the
  classifier's schedule over the sampled sources **and the target**
  (:mod:`~shiftlearn.federated._deep`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernels import check_rff_sampling, rff_map, rff_weights
from ._guard import ReplyGuard, admit_request
from ._messages import ProtocolSpec, TrainReply, TrainRequest, encode

__all__ = [
    "FedRFTCAConfig",
    "IterativeClient",
    "IterativeServer",
    "local_objective",
    "predict",
    "sample_clients",
    "train_softmax",
]

SAMPLING = ("paper", "code", "all")

# Adam (b1 = 0.9, b2 = 0.999, the numpy clients' and torch's defaults) moves a parameter by at
# most lr * ADAM_STEP_BOUND per step: with a_i = (1 - b1) b1^(t-i), b_i = (1 - b2) b2^(t-i),
# Cauchy-Schwarz gives |m_hat| / sqrt(v_hat) <= sqrt(sum a_i^2 / b_i) sqrt(1 - b2^t) / (1 - b1^t)
# <= (1 - b1) / sqrt((1 - b2) (1 - b1^2 / b2)) (the last factor is below 1 for every t), about
# 7.27; eps only shrinks the step.
ADAM_STEP_BOUND = 0.1 / float(np.sqrt(0.001 * (1.0 - 0.81 / 0.999)))
# slack on the bounds for float32 (deep model) and fast-trigonometry round-off
BOUND_RTOL = 1e-3
ALGORITHMS = ("fedrftca", "fedavg")
SUBSETS = ("I", "II", "III")


@dataclass(frozen=True)
class FedRFTCAConfig:
    """Hyper-parameters of the iterative protocol (shared by all parties).

    Parameters
    ----------
    n_features : int
        Random frequencies ``N`` (vectors have ``2N`` entries).
    n_components : int
        Output dimension ``m`` of the adaptive layer.
    sigma : float
        Gaussian kernel bandwidth, agreed before the run.
    seed : int
        Shared seed of ``Omega`` (and of ``W``'s initialisation and the server's sampling).
    n_rounds, local_steps : int
        Communication rounds and local Adam steps per round.
    lr, lam : float
        Adam step size; MMD trade-off ``lambda`` (public code: 1).
    classifier_every : int
        ``T_C``: classifier averaging every ``T_C`` rounds.
    batch_size : int or None
        Mini-batch of the cross-entropy; ``None`` = full local batch.
    client_sampling : {"paper", "code", "all"}
        Which sources train in a round (:func:`sample_clients`).
    train_W : bool
        ``False`` freezes the adaptive layer at its initial value (e.g. the one-shot RF-TCA
        ``W`` passed as ``W0``), so only the classifier is trained and averaged.
    sampling : {"gaussian", "orthogonal"}
        How ``Omega`` is drawn from the seed (:func:`~shiftlearn.kernels.rff_weights`).
    extractor : {"none", "mlp", "cnn"}
        Feature extractor trained by every client; ``"none"`` with a linear
        classifier is the numpy model above, anything else the PyTorch model of
        :mod:`~shiftlearn.federated._deep` (needs the ``deep`` extra).
    classifier : {"linear", "fcnn"}
        Softmax on ``W^T z``, or the paper's FCNN (two hidden layers of 100 units).
    device : str
        ``"auto"`` (CUDA when present, else CPU), ``"cpu"`` or ``"cuda[:i]"`` (deep model).
    algorithm : {"fedrftca", "fedavg"}
        ``"fedavg"``: the same model without the MMD term, averaged whole every ``T_C`` rounds.
    subsets : {"I", "II", "III"}
        The paper's message-loss settings (nested subsets per message type, Table III).
    vote : bool
        Hard voting across the source classifiers instead of classifier averaging (D-B3).
    mmd : {"projected", "kernel"}
        Deep model only: the MMD term between a batch's mean random features and the
        counterpart's, ``||W^T (mu - mu')||^2`` (the paper's eq. 11) or ``||mu - mu'||^2``
        over all 2N random features (the Gaussian-kernel MMD² estimate; see
        :mod:`~shiftlearn.federated._deep` for why). The numpy model (fixed features) always
        uses the projected term: there ``||mu - mu'||^2`` is a constant.
    """

    n_features: int = 250
    n_components: int = 50
    sigma: float = 1.0
    seed: int = 0
    n_rounds: int = 100
    local_steps: int = 5
    lr: float = 0.01
    lam: float = 1.0
    classifier_every: int = 1
    batch_size: int | None = None
    client_sampling: str = "paper"
    train_W: bool = True
    sampling: str = "gaussian"
    extractor: str = "none"
    classifier: str = "linear"
    device: str = "auto"
    algorithm: str = "fedrftca"
    subsets: str = "I"
    vote: bool = False
    mmd: str = "projected"

    def __post_init__(self):
        for name in ("n_features", "n_components", "n_rounds", "local_steps",
                     "classifier_every"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}.")
        if not (self.sigma > 0 and np.isfinite(self.sigma)):
            raise ValueError(f"sigma must be a positive finite float, got {self.sigma!r}.")
        if self.lr <= 0 or self.lam < 0:
            raise ValueError("lr must be > 0 and lam >= 0.")
        if self.client_sampling not in SAMPLING:
            raise ValueError(f"client_sampling must be one of {SAMPLING}, got "
                             f"{self.client_sampling!r}.")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be None or >= 1, got {self.batch_size}.")
        check_rff_sampling(self.sampling, "sampling")
        for name, allowed in (("extractor", ("none", "mlp", "cnn")),
                              ("classifier", ("linear", "fcnn")), ("algorithm", ALGORITHMS),
                              ("subsets", SUBSETS), ("mmd", ("projected", "kernel"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got "
                                 f"{getattr(self, name)!r}.")
        if not (self.device == "auto" or self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:i]', got {self.device!r}.")
        if self.vote and self.algorithm == "fedavg":
            raise ValueError("vote=True replaces FedRF-TCA's classifier average; with "
                             "algorithm='fedavg' use vote=False.")

    @property
    def deep(self) -> bool:
        """True when the model needs PyTorch (an extractor or the FCNN classifier)."""
        return self.extractor != "none" or self.classifier != "linear"

    def omega(self, n_input: int) -> np.ndarray:
        """The shared frequencies, identical on every machine for the same seed."""
        return rff_weights(n_input, self.n_features, self.sigma, random_state=self.seed,
                           sampling=self.sampling)

    def initial_W(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 1])
        return rng.standard_normal((2 * self.n_features, self.n_components)) / np.sqrt(
            self.n_components)


def sample_clients(rng: np.random.Generator, source_ids, how: str = "paper") -> list[int]:
    """``S_t``: ``|S_t| ~ Unif{0..K}`` (paper), ``Unif{0..K-1}`` (code) or all sources.

    Examples
    --------
    >>> import numpy as np
    >>> sample_clients(np.random.default_rng(0), [1, 2, 3], "all")
    [1, 2, 3]
    """
    ids = list(source_ids)
    if how == "all":
        return ids
    K = len(ids)
    size = int(rng.integers(0, K + 1 if how == "paper" else K))
    return sorted(int(i) for i in rng.choice(ids, size=size, replace=False))


def predict(Z: np.ndarray, W: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Class index ``argmax((Z W) C[:-1] + C[-1])``."""
    return np.argmax((Z @ W) @ C[:-1] + C[-1], axis=1)


def _softmax_grad(H, Y, C):
    """Mean cross-entropy of softmax(H C[:-1] + C[-1]) and its gradients (dC, dH)."""
    logits = H @ C[:-1] + C[-1]
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    n = H.shape[0]
    loss = -float(np.mean(np.log(P[Y.astype(bool)] + 1e-300)))
    G = (P - Y) / n
    dC = np.vstack([H.T @ G, G.sum(axis=0, keepdims=True)])
    return loss, dC, G @ C[:-1].T


def local_objective(Z: np.ndarray, Y: np.ndarray | None, W: np.ndarray, C: np.ndarray,
                    V: np.ndarray | None, lam: float) -> tuple[float, np.ndarray, np.ndarray]:
    """A client's local loss and its gradients (the quantity its Adam steps descend).

    ``loss = CE(softmax((Z W) C[:-1] + C[-1]), Y) + lam / s * sum_j ||W^T v_j||^2``; the
    cross-entropy term is absent for the target (``Y`` is None), the MMD term when ``V`` is
    None. ``V`` (s x 2N) holds the mean-embedding differences ``mu_local - mu_counterpart_j``
    (one row for a source, one per sampled source for the target), treated as constants.

    Parameters
    ----------
    Z : ndarray of shape (n, 2N)
        Random features of the (mini-)batch.
    Y : ndarray of shape (n, k) or None
        One-hot labels.
    W : ndarray of shape (2N, m)
    C : ndarray of shape (m + 1, k)
    V : ndarray of shape (s, 2N) or None
    lam : float

    Returns
    -------
    loss : float
    dW : ndarray of shape (2N, m)
    dC : ndarray of shape (m + 1, k)
    """
    loss, dW, dC = 0.0, np.zeros_like(W), np.zeros_like(C)
    if Y is not None:
        loss, dC, dH = _softmax_grad(Z @ W, Y, C)
        dW += Z.T @ dH
    if V is not None and lam > 0:
        P = V @ W
        loss += lam * float(np.sum(P * P)) / V.shape[0]
        dW += (2.0 * lam / V.shape[0]) * (V.T @ P)
    return loss, dW, dC


@dataclass
class _Adam:
    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: dict = field(default_factory=dict)
    v: dict = field(default_factory=dict)

    def step(self, params: dict, grads: dict) -> None:
        self.t += 1
        for k, g in grads.items():
            m = self.m.setdefault(k, np.zeros_like(g))
            v = self.v.setdefault(k, np.zeros_like(g))
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            mh = m / (1 - self.b1 ** self.t)
            vh = v / (1 - self.b2 ** self.t)
            params[k] -= self.lr * mh / (np.sqrt(vh) + self.eps)


def train_softmax(H: np.ndarray, y: np.ndarray, n_classes: int, *, steps: int = 500,
                  lr: float = 0.01, batch_size: int | None = None, seed: int = 0,
                  groups: np.ndarray | None = None) -> np.ndarray:
    """Softmax classifier ``C`` ((m+1) x k) on fixed features ``H`` by the same Adam steps the
    clients use (the "same classifier" of the centralized baselines).

    ``groups`` (one id per row, e.g. the source domain): mini-batches are drawn so that every
    group carries the same total weight (rows of a group of size n_g with probability
    ``1 / (G n_g)``), as an unweighted average over clients weighs them; None = every row
    equally likely (pooled).
    """
    Y = np.eye(n_classes)[y]
    C = np.zeros((H.shape[1] + 1, n_classes))
    params = {"C": C}
    opt = _Adam(lr)
    rng = np.random.default_rng(seed)
    p = None
    if groups is not None:
        _, inv, counts = np.unique(groups, return_inverse=True, return_counts=True)
        p = 1.0 / (len(counts) * counts[inv])
    for _ in range(steps):
        if batch_size and batch_size < H.shape[0]:
            idx = rng.choice(H.shape[0], batch_size, replace=p is not None,
                             p=p)
        elif p is not None:
            idx = rng.choice(H.shape[0], H.shape[0], replace=True, p=p)
        else:
            idx = slice(None)
        _, dC, _ = _softmax_grad(H[idx], Y[idx], params["C"])
        opt.step(params, {"C": dC})
    return params["C"]


class IterativeClient:
    """One FedRF-TCA client (source if ``y`` is given, else the target).

    ``handle(request)`` runs the local steps and returns the :class:`TrainReply`; a request
    for a round it has already served (replay, duplicate, straggler) returns ``None`` (logged).
    ``y`` holds class indices ``0..k-1``.
    """

    def __init__(self, client_id: int, X: np.ndarray, y: np.ndarray | None,
                 config: FedRFTCAConfig, n_classes: int, W0: np.ndarray | None = None):
        self.client_id = int(client_id)
        self.config = config
        self.is_source = y is not None
        X = np.asarray(X, dtype=np.float64)
        self.Z = rff_map(X, config.omega(X.shape[1]))
        self.mean = self.Z.mean(axis=0)
        self.Y = np.eye(n_classes)[np.asarray(y, dtype=int)] if self.is_source else None
        self.params = {"W": config.initial_W() if W0 is None else np.array(W0, dtype=float),
                       "C": np.zeros((config.n_components + 1, n_classes))}
        self.opt = _Adam(config.lr)
        self.ref_means: np.ndarray | None = None
        self.last_round = 0
        self.rejected: list[tuple[int, str]] = []

    def handle(self, req: TrainRequest) -> TrainReply | None:
        cfg = self.config
        if not admit_request(self, req):
            return None
        if req.W is not None:
            self.params["W"] = req.W.copy()
        if req.C is not None:
            self.params["C"] = req.C.copy()
        if req.ref_means is not None:
            self.ref_means = req.ref_means.copy()
        use_mmd = (cfg.algorithm != "fedavg" and cfg.lam > 0 and self.ref_means is not None
                   and (req.sampled or not self.is_source))
        rng = np.random.default_rng([cfg.seed, 2, self.client_id, req.round])
        n = self.Z.shape[0]
        V = self.mean[None, :] - self.ref_means if use_mmd else None
        for _ in range(cfg.local_steps):
            if self.is_source:
                idx = (rng.choice(n, cfg.batch_size, replace=False)
                       if cfg.batch_size and cfg.batch_size < n else slice(None))
                _, dW, dC = local_objective(self.Z[idx], self.Y[idx], self.params["W"],
                                            self.params["C"], V, cfg.lam)
                grads = {"W": dW, "C": dC} if cfg.train_W else {"C": dC}
            elif cfg.train_W:
                _, dW, _ = local_objective(self.Z, None, self.params["W"], self.params["C"],
                                           V, cfg.lam)
                grads = {"W": dW}
            else:
                break
            self.opt.step(self.params, grads)
        if cfg.algorithm == "fedavg":
            upload = self.is_source and req.send_C
        else:
            upload = req.sampled or not self.is_source
        send_C = (self.is_source and req.send_C
                  and (not cfg.vote or req.round >= cfg.n_rounds))
        return TrainReply(round=req.round, client_id=self.client_id,
                          mean=self.mean, W=self.params["W"] if upload else None,
                          C=self.params["C"] if send_C else None)

    # ---- persistence (Flower runs each message in a fresh process) ------------------------
    def get_state(self) -> tuple[dict[str, np.ndarray], dict]:
        arrays = {"W": self.params["W"], "C": self.params["C"]}
        for k in self.opt.m:
            arrays[f"adam_m_{k}"] = self.opt.m[k]
            arrays[f"adam_v_{k}"] = self.opt.v[k]
        if self.ref_means is not None:
            arrays["ref_means"] = self.ref_means
        return arrays, {"last_round": self.last_round, "adam_t": self.opt.t}

    def set_state(self, arrays: dict, scalars: dict) -> None:
        self.params = {"W": np.array(arrays["W"]), "C": np.array(arrays["C"])}
        self.opt.t = int(scalars["adam_t"])
        self.opt.m = {k[7:]: np.array(v) for k, v in arrays.items() if k.startswith("adam_m_")}
        self.opt.v = {k[7:]: np.array(v) for k, v in arrays.items() if k.startswith("adam_v_")}
        self.ref_means = np.array(arrays["ref_means"]) if "ref_means" in arrays else None
        self.last_round = int(scalars["last_round"])


class IterativeServer:
    """Server of the iterative protocol: sampling, request building, guarded aggregation.

    Use ``requests = start_round()``, feed each incoming ``(arrays, meta)`` to ``receive``,
    then ``finish_round()``. The global model is ``W``, ``C`` (and ``G`` for a deep model);
    with ``vote=True``, ``vote_C`` holds the latest classifier of every source.

    ``init``: the initial global parts (``{"W", "C"[, "G"]}``; the deep model's seeded
    initialisation, :func:`~shiftlearn.federated._deep.initial_parts`); ``spec``: the protocol
    shapes (the deep model's :func:`~shiftlearn.federated._deep.model_spec`).
    """

    def __init__(self, config: FedRFTCAConfig, source_ids, target_id: int, n_classes: int,
                 W0: np.ndarray | None = None, *, init: dict | None = None,
                 spec: ProtocolSpec | None = None):
        self.config = config
        self.source_ids = [int(i) for i in source_ids]
        self.target_id = int(target_id)
        if self.target_id in self.source_ids:
            raise ValueError("target_id must differ from the source ids.")
        self.spec = spec or ProtocolSpec(config.n_features, config.n_components, n_classes,
                                         len(self.source_ids) + 1)
        self.guard = ReplyGuard(self.spec, frozenset(self.source_ids + [self.target_id]))
        init = dict(init or {})
        self.W = (np.array(init["W"], dtype=float) if "W" in init else
                  config.initial_W() if W0 is None else np.array(W0, dtype=float))
        self.C = (np.array(init["C"], dtype=float) if "C" in init else
                  np.zeros((config.n_components + 1, n_classes)))
        self.G = np.array(init["G"], dtype=float) if "G" in init else None
        self._start_max = {k: float(np.max(np.abs(v))) if v.size else 0.0
                           for k, v in (("W", self.W), ("C", self.C), ("G", self.G))
                           if v is not None}
        self.round = 0
        self.means: dict[int, np.ndarray] = {}
        self.pending_W: set[int] = set()
        self.pending_C: set[int] = set()
        self.pending_G: set[int] = set()
        self.classifier_due = False
        self.rng = np.random.default_rng([config.seed, 3])
        self.subset_rng = np.random.default_rng([config.seed, 5])
        self.sampled: list[int] = []
        self.W_set: list[int] = []
        self.C_set: list[int] = []
        self.vote_C: dict[int, np.ndarray] = {}
        self.replies: dict[int, TrainReply] = {}
        self.history: list[dict] = []

    def _nested(self, ids: list[int]) -> list[int]:
        size = int(self.subset_rng.integers(0, len(ids) + 1))
        return sorted(int(i) for i in self.subset_rng.choice(ids, size=size, replace=False))

    def start_round(self) -> dict[int, TrainRequest]:
        cfg = self.config
        self.round += 1
        if self.round % cfg.classifier_every == 0:
            self.classifier_due = True
        self.sampled = sample_clients(self.rng, self.source_ids, cfg.client_sampling)
        self.W_set, self.C_set = list(self.sampled), list(self.sampled)
        if cfg.subsets == "II":
            self.C_set = self._nested(self.sampled)
        elif cfg.subsets == "III":
            self.W_set = self._nested(self.sampled)
            self.C_set = self._nested(self.W_set)
        final_vote = cfg.vote and self.round >= cfg.n_rounds
        if final_vote:  # every source sends its classifier once, at the end
            self.classifier_due = True
            self.C_set = list(self.source_ids)
        deep_target = self.G is not None and cfg.algorithm != "fedavg"
        self.replies = {}
        reqs = {}
        t_mean = self.means.get(self.target_id)
        for cid in self.source_ids + [self.target_id]:
            if cid == self.target_id:
                known = [self.means[i] for i in self.sampled if i in self.means]
                ref = np.vstack(known) if known else None
                sampled = True
                send_C = bool(deep_target and self.classifier_due)
            else:
                sampled = cid in self.sampled
                ref = t_mean[None, :] if (sampled and t_mean is not None) else None
                send_C = bool(cid in self.C_set and self.classifier_due)
            reqs[cid] = TrainRequest(
                round=self.round, client_id=cid, sampled=sampled, send_C=send_C,
                W=self.W if cid in self.pending_W else None,
                C=self.C if cid in self.pending_C else None, ref_means=ref,
                G=self.G if cid in self.pending_G else None)
        return reqs

    def encoded_requests(self) -> dict[int, tuple[dict, dict]]:
        return {cid: encode(r) for cid, r in self.start_round().items()}

    def value_bounds(self) -> dict[str, float]:
        """The largest ``|entry|`` an honest reply can carry in the current round.

        A mean embedding: ``N^{-1/2}`` (every random feature is a cosine or a sine over
        ``sqrt(N)``). ``W``, ``C``, ``G``: their largest starting entry plus ``round *
        local_steps`` Adam steps of at most ``lr * ADAM_STEP_BOUND`` each (a client starts a
        round from its own parameters or a downloaded average, both within the previous
        round's bound). Each bound carries a relative slack :data:`BOUND_RTOL`.
        """
        cfg = self.config
        steps = self.round * cfg.local_steps * cfg.lr * ADAM_STEP_BOUND
        out = {"mean": 1.0 / float(np.sqrt(cfg.n_features))}
        out.update({k: v + steps for k, v in self._start_max.items()})
        return {k: v * (1.0 + BOUND_RTOL) for k, v in out.items()}

    def receive(self, arrays: dict, meta: dict, *, sender: int | None = None,
                node=None) -> bool:
        """Admit one reply (``sender``/``node``: the transport's identity of its origin, see
        :meth:`~shiftlearn.federated.ReplyGuard.admit`); ``True`` when it was kept."""
        msg = self.guard.admit(arrays, meta, kind="train_reply", round_=self.round,
                               commit=False, sender=sender, node=node)
        if msg is None:
            return False
        for name, bound in self.value_bounds().items():
            a = getattr(msg, name, None)
            peak = float(np.max(np.abs(a))) if a is not None and a.size else 0.0
            if peak > bound:
                self.guard.reject(self.round, msg.client_id, "out_of_bounds",
                                  f"max |{name}| = {peak:.4g} exceeds {bound:.4g}, the most an "
                                  f"honest client can send in round {self.round}")
                return False
        self.guard.commit(msg)
        self.replies[msg.client_id] = msg
        return True

    def finish_round(self) -> dict:
        cfg = self.config
        got = self.replies
        for cid, r in got.items():
            self.means[cid] = r.mean
        # a reply to this round's request proves that the request (and its download) arrived
        self.pending_W -= set(got)
        self.pending_C -= set(got)
        self.pending_G -= set(got)
        fedavg = cfg.algorithm == "fedavg"
        c_from = [cid for cid in self.C_set if cid in got and got[cid].C is not None]
        for cid in c_from:
            if cfg.vote:
                self.vote_C[cid] = got[cid].C
        averaged = bool(self.classifier_due and (
            c_from or (cfg.vote and any(got[c].G is not None for c in self.C_set if c in got))))
        if fedavg:
            w_from = c_from if averaged else []
        else:
            w_from = [cid for cid in self.W_set if cid in got and got[cid].W is not None]
            if self.target_id in got and got[self.target_id].W is not None:
                w_from.append(self.target_id)
        if w_from:
            self.W = np.mean([got[c].W for c in w_from], axis=0)
            self.pending_W |= set(w_from) | ({self.target_id} if fedavg else set())
        g_from: list[int] = []
        if averaged:
            if not cfg.vote:
                self.C = np.mean([got[c].C for c in c_from], axis=0)
                self.pending_C |= set(c_from) | {self.target_id}
            if self.G is not None:
                g_from = [c for c in self.C_set + [self.target_id]
                          if c in got and got[c].G is not None]
                if g_from:
                    self.G = np.mean([got[c].G for c in g_from], axis=0)
                    self.pending_G |= set(g_from) | {self.target_id}
            self.classifier_due = False
        info = {"round": self.round, "sampled": list(self.sampled), "replies": len(got),
                "W_from": w_from, "C_from": c_from if averaged else []}
        if self.G is not None:
            info["G_from"] = g_from
        if cfg.subsets != "I":
            info["W_set"], info["C_set"] = list(self.W_set), list(self.C_set)
        self.history.append(info)
        return info
