"""Marginal transfer's random-feature solver on Dask arrays: per-block sums, the solve here.

Needs the ``dask`` extra. ``MarginalTransferClassifier(solver="rf", loss="squared_hinge")`` and
``PoolingClassifier(solver="rf", loss="squared_hinge")`` fit a Dask ``X`` without gathering
it: one pass for the task embeddings (per block: feature sums and row counts of each task
present), then the primal Newton method of
:func:`~shiftlearn.generalization._solvers.linear_squared_hinge_newton` on the second-stage
features, which it reaches through :class:`DaskRFDesign`: each Newton step is one pass for the
gradient and the Hessian (per block: ``Z_b^T r_b`` and ``Z_b^T diag(2 c_b) Z_b`` over the
block's active rows, ``2Q`` and ``(2Q)^2`` numbers) and one pass for ``Z d`` (one value per
row), the features of a block built where the block lives. ``decision_function`` /
``predict`` of a Dask ``X`` embed each test task in one pass and return a lazy Dask array.

Contract: squared hinge only (the hinge, the epsilon-insensitive loss, the regressors, the
exact and Nyström solvers are refused with the fix); ``O(M)`` numbers in memory, never the
``M x 2Q`` features; the same model as numpy input with the same ``random_state`` (decision
values to ~1e-6 with float32 features, 1e-10 with float64); 1 + 2 x (Newton steps) passes over
``X`` per one-vs-rest class. Design notes: ``docs/dev/generalization.md``.
"""

from __future__ import annotations

import numpy as np

from .._constraints import check_params
from .._dask import compute_per_block, dask_rows, to_memory
from .._validation import check_y_domain
from ..kernels import bandwidth_rows, rff_sum
from ._embedding import rff_product_features, task_rows
from ._marginal_checks import bandwidth_specs, check_rf_memory, labeled_training_rows

__all__ = ["DaskRFDesign", "decision_dask", "fit_rf_dask"]


def _as_dask_X(X, est):
    return dask_rows(X, estimator=type(est).__name__, check_blocks=True)


# ------------------------------------------------------------------------ per-block work
def _embed_block(xb, tb, W, n_tasks):
    """Feature sums (float64) and row counts of each task in one block."""
    width = xb.shape[1] if W is None else 2 * W.shape[1]
    sums, counts = np.zeros((n_tasks, width)), np.zeros(n_tasks)
    for t, rows in enumerate(task_rows(tb, n_tasks)):
        if rows.size == 0:
            continue
        counts[t] = rows.size
        sums[t] = (xb[rows].sum(axis=0, dtype=np.float64) if W is None else
                   rff_sum(xb[rows], W))
    return sums, counts


def _embeddings(Xd, task, n_tasks, W, dtype):
    """Task embeddings of a Dask ``X`` (``rff_embeddings`` of numpy input): one pass."""
    import dask

    W = dask.delayed(None if W is None else np.asarray(W, dtype=dtype), pure=True)
    parts = compute_per_block(Xd, _embed_block, W, n_tasks, per_block=(task,))
    sums = np.sum([p[0] for p in parts], axis=0)
    counts = np.sum([p[1] for p in parts], axis=0)
    return sums / np.maximum(counts, 1)[:, None]


def _features(xb, tb, p, dtype):
    return rff_product_features(xb, tb, p["ZP"], p["V_x"], p["V_p"], sigma_x=p["sigma_x"],
                                sigma_p=p["sigma_p"],
                                out=np.empty((xb.shape[0], 2 * p["V_x"].shape[1]), dtype=dtype),
                                dtype=dtype)


def _max_sq_norm_block(xb, tb, p, dtype):
    Z = _features(xb, tb, p, dtype)
    return float(np.max(np.einsum("ij,ij->i", Z, Z), initial=0.0))


def _step_block(xb, tb, act, r, s, p, dtype):
    """``Z_I^T r`` and ``Z_I^T diag(s^2) Z_I`` of one block (float64), ``I`` = its active
    rows (local indices)."""
    Za = _features(xb, tb, p, dtype)[act]
    g = (Za.T @ r.astype(dtype)).astype(np.float64)
    H = None
    if s is not None:
        Zs = Za * s.astype(dtype)[:, None]
        H = (Zs.T @ Zs).astype(np.float64)
    return g, H


def _matvec_block(xb, tb, p, dtype, d):
    return (_features(xb, tb, p, dtype) @ d.astype(dtype)).astype(np.float64)


def _decision_block(xb, tb, p, dtype, model, n_out):
    Z = _features(xb, tb[:, 0], p, dtype)
    out = model.decision_function(Z) if hasattr(model, "decision_function") else \
        model.predict(Z)
    return np.asarray(out, dtype=np.float64).reshape(xb.shape[0], n_out)


class DaskRFDesign:
    """The second-stage features of a Dask ``X`` as the rows of the Newton method
    (:class:`~shiftlearn.generalization._solvers.DenseDesign`'s interface): every call is one
    pass over the blocks, each building its features where it lives."""

    def __init__(self, Xd, task: np.ndarray, params: dict, dtype):
        import dask

        self.Xd, self.task, self.params, self.dtype = Xd, task, params, np.dtype(dtype)
        self._starts = np.cumsum((0,) + Xd.chunks[0])
        self._p = dask.delayed(params, pure=True)         # one key, shipped once per worker
        self._H = None
        self.n_rows = Xd.shape[0]
        self.n_columns = 2 * params["V_x"].shape[1]

    def _map(self, fn, *args, parts=()):
        """``fn(block, task_b, *parts_b, params, dtype, *args)`` for every block."""
        return compute_per_block(self.Xd, fn, self._p, self.dtype, *args,
                                 per_block=(self.task, *parts))

    def max_sq_norm(self) -> float:
        return float(max(self._map(_max_sq_norm_block), default=0.0))

    def as_float64(self) -> DaskRFDesign:
        return DaskRFDesign(self.Xd, self.task, self.params, np.float64)

    def gradient_part(self, act: np.ndarray, r: np.ndarray, s: np.ndarray | None = None):
        """``Z_I^T r``; with ``s`` the Hessian of the step comes from the same pass."""
        b = np.searchsorted(act, self._starts)      # block i holds act[b[i]:b[i + 1]]

        def part(a, rebase=False):
            return lambda i: a[b[i]:b[i + 1]] - (self._starts[i] if rebase else 0)

        parts = self._map(_step_block, parts=(part(act, rebase=True), part(r),
                                              None if s is None else part(s)))
        g = np.sum([p[0] for p in parts], axis=0)
        self._H = (act, np.sum([p[1] for p in parts], axis=0)) if s is not None else None
        return g

    def hessian(self, act: np.ndarray, s: np.ndarray) -> np.ndarray:
        if self._H is not None and self._H[0] is act:
            H = self._H[1]
        else:
            self.gradient_part(act, np.zeros(act.shape[0]), s)
            H = self._H[1]
        self._H = None
        return H

    def matvec(self, d: np.ndarray) -> np.ndarray:
        return np.concatenate(self._map(_matvec_block, d))


# ----------------------------------------------------------------------------------- fit
def _refusal(est) -> str | None:
    name = type(est).__name__
    if est._task_kind == "regression":
        return (f"{name} cannot fit a Dask array: its epsilon-insensitive loss is solved by "
                "liblinear, which needs every row in memory. Compute X (X.compute()) if it "
                "fits, or use MarginalTransferClassifier(solver='rf', loss='squared_hinge').")
    if est.solver not in ("rf", "auto"):
        return (f"{name}(solver={est.solver!r}) cannot fit a Dask array (its kernel has one "
                "row per training row); use solver='rf' with loss='squared_hinge'.")
    obstacle = est._rf_obstacle()
    if obstacle is not None:
        return f"{obstacle}; a Dask array needs the random-feature solver."
    if est._loss() != "squared_hinge":
        return (f"{name}(loss={est._loss()!r}) cannot fit a Dask array: the hinge loss is "
                "solved by liblinear, which needs every row in memory. Use "
                "loss='squared_hinge' (the primal Newton method works on sums over row blocks; "
                "the authors' code's loss) or compute X (X.compute()) if it fits.")
    return None


def fit_rf_dask(est, X, y, sample_domain, dtype):
    """``est.fit(X, y, sample_domain)`` for a Dask ``X`` (see the module docstring); ``dtype``:
    the precision of the random-feature projections, the estimator's (float32)."""
    check_params(est)
    est._bandwidths = bandwidth_specs(est)   # the former sigma_* names, with a warning
    why = _refusal(est)
    if why is not None:
        raise ValueError(why)
    est._check_rf_sampling()
    Xd = _as_dask_X(X, est)
    n, d = Xd.shape
    # the Newton system and one block's features (here and in a worker) must fit
    check_rf_memory(type(est).__name__, max(Xd.chunks[0], default=0), d, int(est.n_features),
                    int(est._param("n_features_emb", 100)))
    y, sample_domain = to_memory(y, sample_domain)
    y, sd = check_y_domain(est._training_y(y), sample_domain, n, task=est._task_kind,
                           allow_unlabeled_source=True, require_source=False)
    keep = labeled_training_rows(y, sd, est._task_kind, type(est).__name__)
    if not keep.all():
        Xd, y, sd = Xd[keep], y[keep], sd[keep]
    ids, task, counts = est._training_tasks(sd)
    est.n_features_in_ = d
    if hasattr(est, "feature_names_in_"):                 # from an earlier fit on a DataFrame
        del est.feature_names_in_
    est.domains_, est.n_tasks_ = ids, ids.shape[0]
    M = Xd.shape[0]
    Y = est._encode_targets(y)
    c = est.C * est._weights(task, counts)
    rng = np.random.default_rng(est.random_state)
    est.solver_ = "rf"
    # the bandwidth rows numpy input reads (its rows are sorted by task), in its order
    order = np.argsort(task, kind="stable")
    idx = bandwidth_rows(M)
    rows = Xd[order if idx is None else order[idx]].compute()
    est._set_bandwidths(rows)          # <= 1,000 rows: the median rules read them all, in order

    ke = est._param("kernel_emb", "rbf")
    pooling = est._pooling()
    seed = est._draw_rf(d, rng, pooling, ke)
    if not pooling:
        est._set_embeddings(_embeddings(Xd, task, est.n_tasks_, est.W_, dtype))
    est.linear_model_ = est._linear_model(seed, "rf")
    design = DaskRFDesign(Xd, task, _params(est, est.ZP_), dtype)
    est.linear_model_.fit(design, est._linear_target(Y), sample_weight=c / est.C)
    est.n_iter_ = int(np.max(est.linear_model_.n_iter_))
    return est


def _params(est, ZP) -> dict:
    return {"ZP": ZP, "V_x": est.V_x_, "V_p": est.V_p_, "sigma_x": est.sigma_x_,
            "sigma_p": est.sigma_p_ or 1.0}


# ------------------------------------------------------------------------------- predict
def decision_dask(est, X, sample_domain, dtype):
    """Lazy ``(n, n_outputs)`` decision values of a Dask ``X``: each test task embedded in one
    pass (computed), the features and the linear model applied block by block (lazy), in the
    precision ``dtype`` the model was fitted with."""
    import dask.array as da
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "solver_")
    name = type(est).__name__
    if est.solver_ != "rf":
        raise ValueError(f"{name} was fitted with solver={est.solver_!r}: predicting a Dask "
                         "array needs a model fitted with solver='rf' (compute X, "
                         "X.compute(), to predict in memory).")
    Xd = _as_dask_X(X, est)
    if Xd.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xd.shape[1]} features, but {name} is expecting "
                         f"{est.n_features_in_} features as input.")
    task, ids, n_test = est._test_tasks(Xd.shape[0], to_memory(sample_domain))
    ZP = None if est._pooling() else _embeddings(Xd, task, n_test, est.W_, dtype)
    n_out = int(np.atleast_2d(est.linear_model_.coef_).shape[0])
    td = da.from_array(task[:, None], chunks=(Xd.chunks[0], 1))
    return da.map_blocks(_decision_block, Xd, td, _params(est, ZP), dtype,
                         est.linear_model_, n_out, dtype=np.float64,
                         chunks=(Xd.chunks[0], (n_out,)), meta=np.empty((0, 0)))
