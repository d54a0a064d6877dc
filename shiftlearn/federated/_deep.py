"""Deep FedRF-TCA: the paper's client model with a trained feature extractor.

Every client holds the same architecture (:func:`build_model`)::

    x -> extractor G -> L2 row normalisation -> z = N^{-1/2} [cos(h Omega); sin(h Omega)]
      -> adaptive layer W (2N -> m, no bias) -> classifier C -> softmax

* ``extractor``: ``"none"`` (the input itself, no normalisation: the numpy model of
  :mod:`~shiftlearn.federated._iterative` when the classifier is linear), ``"mlp"`` (``p -> 256
  -> 128``, ReLU) or ``"cnn"`` (square grey images: two 3 x 3 convolutions with 16 and 32
  channels, each followed by ReLU and 2 x 2 max pooling, then a linear layer to 128 features
  and ReLU).
* ``Omega`` comes from :func:`~shiftlearn.kernels.rff_weights` with the shared seed, exactly as
  in the numpy protocol (never sent; a buffer, not a parameter).
* ``classifier``: ``"linear"`` (``m -> k``; sent as the ``(m + 1) x k`` matrix of the numpy
  protocol, last row = bias) or ``"fcnn"`` (the paper's ``m -> 100 -> 100 -> k`` with ReLU; sent
  as one flat vector).

The paper's open points for a trained extractor, as implemented:

* **Which parameters travel.** ``W`` every round (as in the paper); the classifier ``C`` *and
  the extractor ``G``* every ``T_C`` rounds, on the classifier's schedule (the request's
  ``send_C``). The paper's extractors are pretrained ResNet-50s kept local; a CNN trained from
  scratch must be shared, or the target's extractor (trained on the MMD term only) would never
  learn the classes. The extractor average takes the sampled sources' extractors **and the
  target's**: the target's MMD-only updates are part of the federated objective (without it
  they would be overwritten at every average). Bytes: ``G`` is counted in every message that
  carries it, like ``W`` and ``C``.
* **MMD term with a trained extractor.** Source ``i`` minimises ``CE + lam * ||W^T (mean_b z_i
  - mu_T)||^2`` on each mini-batch ``b``: the gradient flows through its own batch mean into
  ``G``, ``W``; the counterpart's message ``mu_T`` is a constant (the public code detaches
  every message too). The target minimises ``lam`` times the mean over the received source
  means of the same term (its loss has no cross-entropy).
* **The mean-embedding message** is the mean of ``z`` over the round's mini-batches (after each
  step's forward pass, detached): free to compute, and of a size independent of ``n`` (as the
  paper's per-mini-batch ``Sigma l``). Its rows are not re-encoded after the last step.
* **Numbers.** Training in float32 on ``device`` (``"auto"``: CUDA when available, else the
  CPU); every message carries float64 copies (the protocol's only dtype), so the federated
  bytes are twice what float32 would need, for every algorithm compared.
* **Initialisation.** Every party builds the model under ``torch.manual_seed(seed)``: all
  start from the same parameters, so round 1 needs no download (as in the numpy protocol).
* **Optimiser.** Adam (``lr``) per client, its moments kept across rounds (and across
  downloads, as the public code's single Adam).

Needs PyTorch: ``pip install "shiftlearn[deep]"``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels import rff_weights
from ._guard import admit_request
from ._messages import ProtocolSpec, TrainReply, TrainRequest

__all__ = ["CLASSIFIERS", "EXTRACTORS", "FEATURE_DIM", "DeepClient", "build_model",
           "initial_parts", "model_spec", "predict_deep", "require_torch", "resolve_device",
           "train_central"]

EXTRACTORS = ("none", "mlp", "cnn")
CLASSIFIERS = ("linear", "fcnn")
FEATURE_DIM = 128        # output of the mlp and cnn extractors
HIDDEN = 100             # the paper's FCNN: two hidden layers of 100 units


def require_torch():
    """The ``torch`` module, or an ``ImportError`` naming the extra that installs it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised where torch is missing
        raise ImportError(
            "the deep FedRF-TCA model (extractor=mlp|cnn or classifier=fcnn) needs PyTorch, "
            'which is not installed; install it with: pip install "shiftlearn[deep]"') from exc
    return torch


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"`` when a CUDA device is present, else ``"cpu"``."""
    torch = require_torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but no CUDA device is available; use "
                         "device='auto' or 'cpu'.")
    return device


def _image_side(n_input: int) -> int:
    side = int(round(np.sqrt(n_input)))
    if side * side != n_input or side < 4:
        raise ValueError(f"extractor='cnn' needs square grey images flattened row by row "
                         f"(n_input = side**2, side >= 4); got {n_input} input features. Use "
                         "extractor='mlp' for other data.")
    return side


def build_model(config, n_input: int, n_classes: int):
    """The client model of ``config`` (an ``nn.Module``), initialised from ``config.seed``.

    Attributes ``G`` (extractor or ``None``), ``W`` (``Linear(2N, m, bias=False)``), ``C``
    (classifier); methods ``embed(x)`` (random features ``z``), ``head(z)`` (logits).
    """
    torch = require_torch()
    nn = torch.nn
    F = torch.nn.functional
    N, m = int(config.n_features), int(config.n_components)

    class _CNN(nn.Module):
        def __init__(self, side: int):
            super().__init__()
            self.side = side
            self.c1 = nn.Conv2d(1, 16, 3, padding=1)
            self.c2 = nn.Conv2d(16, 32, 3, padding=1)
            self.fc = nn.Linear(32 * (side // 4) ** 2, FEATURE_DIM)

        def forward(self, x):
            x = x.view(-1, 1, self.side, self.side)
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            x = F.max_pool2d(F.relu(self.c2(x)), 2)
            return F.relu(self.fc(x.flatten(1)))

    class _Model(nn.Module):
        def __init__(self):
            super().__init__()
            if config.extractor == "cnn":
                self.G = _CNN(_image_side(n_input))
                p = FEATURE_DIM
            elif config.extractor == "mlp":
                self.G = nn.Sequential(nn.Linear(n_input, 256), nn.ReLU(),
                                       nn.Linear(256, FEATURE_DIM), nn.ReLU())
                p = FEATURE_DIM
            else:
                self.G = None
                p = n_input
            omega = rff_weights(p, N, float(config.sigma), random_state=int(config.seed),
                                sampling=config.sampling)
            self.register_buffer("omega", torch.as_tensor(omega, dtype=torch.float32))
            self.W = nn.Linear(2 * N, m, bias=False)
            if config.classifier == "fcnn":
                self.C = nn.Sequential(nn.Linear(m, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN),
                                       nn.ReLU(), nn.Linear(HIDDEN, n_classes))
            else:
                self.C = nn.Linear(m, n_classes)

        def embed(self, x):
            h = x if self.G is None else F.normalize(self.G(x), dim=1)
            P = h @ self.omega
            return torch.cat([torch.cos(P), torch.sin(P)], dim=1) * (1.0 / np.sqrt(N))

        def head(self, z):
            return self.C(self.W(z))

        def forward(self, x):
            return self.head(self.embed(x))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(config.seed))
        model = _Model()
    return model


# ---- parameters <-> protocol arrays ----------------------------------------------------------
def _params(module) -> list:
    return [] if module is None else list(module.parameters())


def get_part(model, name: str) -> np.ndarray:
    """``"W"`` (2N x m), ``"C"`` ((m+1) x k for a linear classifier, else flat) or ``"G"``
    (flat) as a float64 array."""
    if name == "W":
        return model.W.weight.detach().cpu().double().numpy().T.copy()
    if name == "C" and hasattr(model.C, "weight"):
        w = model.C.weight.detach().cpu().double().numpy()
        b = model.C.bias.detach().cpu().double().numpy()
        return np.vstack([w.T, b[None, :]])
    ps = _params(model.C if name == "C" else model.G)
    return np.concatenate([p.detach().cpu().double().numpy().ravel() for p in ps])


def set_part(model, name: str, value: np.ndarray) -> None:
    """Inverse of :func:`get_part` (copies ``value`` into the model's parameters)."""
    torch = require_torch()
    value = np.asarray(value, dtype=np.float64)
    with torch.no_grad():
        if name == "W":
            model.W.weight.copy_(torch.as_tensor(value.T.copy()))
            return
        if name == "C" and hasattr(model.C, "weight"):
            model.C.weight.copy_(torch.as_tensor(value[:-1].T.copy()))
            model.C.bias.copy_(torch.as_tensor(value[-1].copy()))
            return
        ps = _params(model.C if name == "C" else model.G)
        i = 0
        for p in ps:
            k = p.numel()
            p.copy_(torch.as_tensor(value[i:i + k].reshape(p.shape)))
            i += k


def parts_of(model) -> list[str]:
    return ["W", "C"] + (["G"] if model.G is not None else [])


def initial_parts(config, n_input: int, n_classes: int) -> dict[str, np.ndarray]:
    """``{"W", "C"[, "G"]}`` of the seeded initial model (what every party starts from)."""
    model = build_model(config, n_input, n_classes)
    return {k: get_part(model, k) for k in parts_of(model)}


def model_spec(config, n_input: int, n_classes: int, n_clients: int) -> ProtocolSpec:
    """The :class:`ProtocolSpec` of the deep model (flat classifier / extractor sizes)."""
    parts = initial_parts(config, n_input, n_classes)
    c = parts["C"]
    return ProtocolSpec(config.n_features, config.n_components, n_classes, n_clients,
                        classifier_size=c.size if c.ndim == 1 else 0,
                        extractor_size=parts["G"].size if "G" in parts else 0)


def load_parts(config, n_input: int, n_classes: int, parts: dict, device: str = "cpu"):
    """A model holding ``parts`` (``{"W", "C"[, "G"]}``)."""
    model = build_model(config, n_input, n_classes)
    for k, v in parts.items():
        set_part(model, k, v)
    return model.to(device)


def _batched_logits(model, X, device: str, batch: int = 2048):
    torch = require_torch()
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, X.shape[0], batch):
            xb = torch.as_tensor(np.asarray(X[i:i + batch]), dtype=torch.float32,
                                 device=device)
            out.append(model(xb).cpu().numpy())
    model.train()
    return np.vstack(out) if out else np.zeros((0, 0))


def predict_deep(config, parts: dict, X: np.ndarray, n_classes: int, *,
                 vote_classifiers: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """Class indices of rows ``X`` under the global model ``parts``.

    ``vote_classifiers``: hard voting (the paper's D-B3): every source classifier ``C_i`` is
    applied to the same features ``W^T z(G(x))`` and the majority class wins (ties: the
    smallest class index).
    """
    device = resolve_device(config.device)
    X = np.asarray(X, dtype=np.float64)
    model = load_parts(config, X.shape[1], n_classes, parts, device)
    if not vote_classifiers:
        return np.argmax(_batched_logits(model, X, device), axis=1)
    votes = np.zeros((X.shape[0], n_classes), dtype=np.int64)
    for C in vote_classifiers:
        set_part(model, "C", C)
        votes[np.arange(X.shape[0]), np.argmax(_batched_logits(model, X, device), axis=1)] += 1
    return np.argmax(votes, axis=1)


def _mmd(model, z, refs, kind: str):
    """``mean_j ||W^T (mean(z) - refs_j)||^2`` (``"projected"``) or ``mean_j ||mean(z) -
    refs_j||^2`` (``"kernel"``); ``refs``: s x 2N (constants, or a batch mean)."""
    v = z.mean(dim=0, keepdim=True) - refs
    if kind == "projected":
        v = model.W(v)
    return (v ** 2).sum(dim=1).mean()


class DeepClient:
    """One deep FedRF-TCA client (source if ``y`` is given, else the target); the interface of
    :class:`~shiftlearn.federated.IterativeClient` (``handle``, ``get_state``, ``set_state``).
    """

    def __init__(self, client_id: int, X: np.ndarray, y: np.ndarray | None, config,
                 n_classes: int):
        torch = require_torch()
        self.torch = torch
        self.client_id = int(client_id)
        self.config = config
        self.is_source = y is not None
        self.device = resolve_device(config.device)
        X = np.asarray(X, dtype=np.float64)
        self.n = X.shape[0]
        self.model = build_model(config, X.shape[1], n_classes).to(self.device)
        self.X = torch.as_tensor(X, dtype=torch.float32, device=self.device)
        self.y = (torch.as_tensor(np.asarray(y, dtype=np.int64), device=self.device)
                  if self.is_source else None)
        self.parts = parts_of(self.model)
        trainable = [p for k in self.parts if self.is_source or k != "C"
                     for p in self._module_params(k)]
        self.opt = torch.optim.Adam(trainable, lr=config.lr)
        self._trainable = trainable
        self.ref_means: np.ndarray | None = None
        self.last_round = 0
        self.rejected: list[tuple[int, str]] = []

    def _module_params(self, name: str) -> list:
        return _params({"W": self.model.W, "C": self.model.C, "G": self.model.G}[name])

    @property
    def params(self) -> dict[str, np.ndarray]:
        return {k: get_part(self.model, k) for k in self.parts}

    def handle(self, req: TrainRequest) -> TrainReply | None:
        torch, cfg = self.torch, self.config
        if not admit_request(self, req):
            return None
        for k in ("W", "C", "G"):
            v = getattr(req, k)
            if v is not None and k in self.parts:
                set_part(self.model, k, v)
        if req.ref_means is not None:
            self.ref_means = req.ref_means.copy()
        fedavg = cfg.algorithm == "fedavg"
        use_mmd = (not fedavg and cfg.lam > 0 and self.ref_means is not None
                   and (req.sampled or not self.is_source))
        train = self.is_source or (use_mmd and cfg.train_W)
        refs = (torch.as_tensor(self.ref_means, dtype=torch.float32, device=self.device)
                if use_mmd else None)
        rng = np.random.default_rng([cfg.seed, 2, self.client_id, req.round])
        bs = min(int(cfg.batch_size or self.n), self.n)
        zsum = torch.zeros(2 * cfg.n_features, device=self.device)
        rows = 0
        for _ in range(cfg.local_steps):
            idx = torch.as_tensor(rng.choice(self.n, bs, replace=False), device=self.device)
            with torch.set_grad_enabled(train):
                z = self.model.embed(self.X[idx])
                zsum += z.detach().sum(dim=0)
                rows += bs
                if not train:
                    continue
                loss = z.new_zeros(())
                if self.is_source:
                    loss = loss + torch.nn.functional.cross_entropy(self.model.head(z),
                                                                    self.y[idx])
                if use_mmd:
                    loss = loss + cfg.lam * _mmd(self.model, z, refs, cfg.mmd)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            if not cfg.train_W:
                self.model.W.weight.grad = None
            self.opt.step()
        mean = (zsum / rows).double().cpu().numpy()
        if fedavg:
            send_W = self.is_source and req.send_C
        else:
            send_W = req.sampled or not self.is_source
        send_C = self.is_source and req.send_C and (not cfg.vote or req.round >= cfg.n_rounds)
        send_G = "G" in self.parts and req.send_C and (self.is_source or not fedavg)
        return TrainReply(round=req.round, client_id=self.client_id, mean=mean,
                          W=get_part(self.model, "W") if send_W else None,
                          C=get_part(self.model, "C") if send_C else None,
                          G=get_part(self.model, "G") if send_G else None)

    # ---- persistence (Flower runs each message in a fresh process) ----------------------------
    def get_state(self) -> tuple[dict[str, np.ndarray], dict]:
        arrays = dict(self.params)
        state = self.opt.state
        t = 0
        if all(p in state for p in self._trainable) and self._trainable:
            t = int(state[self._trainable[0]]["step"])
            arrays["adam_m"] = np.concatenate([state[p]["exp_avg"].detach().cpu().double()
                                               .numpy().ravel() for p in self._trainable])
            arrays["adam_v"] = np.concatenate([state[p]["exp_avg_sq"].detach().cpu().double()
                                               .numpy().ravel() for p in self._trainable])
        if self.ref_means is not None:
            arrays["ref_means"] = self.ref_means
        return arrays, {"last_round": self.last_round, "adam_t": t}

    def set_state(self, arrays: dict, scalars: dict) -> None:
        torch = self.torch
        for k in self.parts:
            set_part(self.model, k, arrays[k])
        t = int(scalars["adam_t"])
        if t > 0:
            i = 0
            for p in self._trainable:
                k = p.numel()
                self.opt.state[p] = {
                    "step": torch.tensor(float(t)),
                    "exp_avg": torch.as_tensor(arrays["adam_m"][i:i + k].reshape(p.shape),
                                               dtype=p.dtype, device=p.device).clone(),
                    "exp_avg_sq": torch.as_tensor(arrays["adam_v"][i:i + k].reshape(p.shape),
                                                  dtype=p.dtype, device=p.device).clone()}
                i += k
        self.ref_means = np.array(arrays["ref_means"]) if "ref_means" in arrays else None
        self.last_round = int(scalars["last_round"])


def train_central(sources, X_target, config, n_classes: int, *, lam: float) -> dict:
    """The centralized baselines: one party trains the same model on pooled data.

    Each step draws ``batch_size`` rows from every source (so every source domain weighs the
    same, as in the unweighted federated average; the K sources together give as many rows per
    step as the federation's sources) and, when ``lam > 0``, ``batch_size`` target rows, and
    descends ``CE(sources) + lam * ||W^T (mean z_sources - mean z_target)||^2`` with the
    gradient through both means (the centralized objective of the federated run). ``lam = 0``
    is the source-only model (the target is not used). ``n_rounds * local_steps`` Adam steps,
    the number each federated client takes.

    Returns ``{"W", "C"[, "G"]}``.
    """
    torch = require_torch()
    device = resolve_device(config.device)
    Xs = [torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=torch.float32, device=device)
          for X, _ in sources]
    ys = [torch.as_tensor(np.asarray(y, dtype=np.int64), device=device) for _, y in sources]
    Xt = torch.as_tensor(np.asarray(X_target, dtype=np.float64), dtype=torch.float32,
                         device=device)
    model = build_model(config, Xs[0].shape[1], n_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    rng = np.random.default_rng([config.seed, 4])
    for _ in range(config.n_rounds * config.local_steps):
        xb, yb = [], []
        for X, y in zip(Xs, ys, strict=True):
            bs = min(int(config.batch_size or X.shape[0]), X.shape[0])
            idx = torch.as_tensor(rng.choice(X.shape[0], bs, replace=False), device=device)
            xb.append(X[idx])
            yb.append(y[idx])
        z = model.embed(torch.cat(xb))
        loss = torch.nn.functional.cross_entropy(model.head(z), torch.cat(yb))
        if lam > 0:
            bt = min(int(config.batch_size or Xt.shape[0]), Xt.shape[0])
            it = torch.as_tensor(rng.choice(Xt.shape[0], bt, replace=False), device=device)
            zt = model.embed(Xt[it])
            loss = loss + lam * _mmd(model, z, zt.mean(dim=0, keepdim=True), config.mmd)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {k: get_part(model, k) for k in parts_of(model)}
