"""One adaptation run for a regression target: the work of ``shiftlearn adapt`` when the label
column holds numbers to predict (and of :func:`adapt_regression` from Python).

:func:`run_regression` fits (or chooses, ``method="auto"``) a
:class:`~shiftlearn.compose.DomainAdaptationRegressor`, predicts the target rows and builds
the report dict: the candidates' validation errors, the chosen model's errors on held-out
labeled source rows (RMSE and MAE, in the label's units), a summary of the predicted values
against the source values, and the target errors when target values are given (evaluation
only). Design notes: ``docs/dev/model_selection.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

__all__ = ["DEFAULT_REGRESSION_SELECT", "REGRESSION_SELECT", "REGRESSORS", "RegressionReport",
           "RegressionResult", "adapt_regression", "check_regression_options",
           "make_regressor", "regression_candidates", "run_regression"]

#: estimator names for a regression target (the names of the classification estimators where
#: a counterpart exists; anything else is the path of a regressor saved with skops)
REGRESSORS = ("ridge", "svm", "hgb", "rf", "1nn")
#: ``select`` name -> criterion of :mod:`shiftlearn.model_selection` for a regression target
#: (validated on ``SourceKFold(5)``); ``source-cv`` and ``lodo`` are splitters scored by
#: ``source_mse``
REGRESSION_SELECT = {"source_mse": "SourceMSEScorer", "iw_mse": "ImportanceWeightedMSEScorer",
                     "reverse_mse": "ReverseValidationMSEScorer"}
#: the criterion of ``method="auto"`` for a regression target (the regression study's best:
#: ``benchmarks/model_selection/results/regression_study.md``)
DEFAULT_REGRESSION_SELECT = "source_mse"
#: classification criteria -> their regression counterpart, for the error message
_COUNTERPART = {"iw": "iw_mse", "circular": "reverse_mse"}


def make_regressor(name, seed: int = 0):
    """The unfitted regressor of an estimator name (:data:`REGRESSORS`): ``ridge``
    (standardised ridge regression, the default), ``svm`` (standardised RBF SVR), ``hgb``,
    ``rf`` (seeded by ``seed``), ``1nn``; or the path of an unfitted regressor saved with
    skops, or a scikit-learn regressor (cloned). Raises ``ValueError`` for a classifier name
    or object."""
    from sklearn.base import clone, is_regressor

    if not isinstance(name, str):
        if not is_regressor(name):
            raise ValueError(f"estimator={type(name).__name__}: not a regressor, and the target "
                             f"is a regression target; give a regressor or one of "
                             f"{', '.join(REGRESSORS)}.")
        return clone(name)
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Ridge
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    made = {"ridge": lambda: make_pipeline(StandardScaler(), Ridge()),
            "svm": lambda: make_pipeline(StandardScaler(), SVR()),
            "hgb": lambda: HistGradientBoostingRegressor(random_state=seed),
            "rf": lambda: RandomForestRegressor(random_state=seed),
            "1nn": lambda: KNeighborsRegressor(n_neighbors=1)}
    if name in made:
        return made[name]()
    if name == "logreg" or not (Path(name).exists() or name.endswith(".skops")):
        raise ValueError(f"--estimator {name}: no regressor of that name (the label column is a "
                         f"regression target); choose one of {', '.join(REGRESSORS)}, or give "
                         "the path of an unfitted scikit-learn regressor saved with skops.")
    from ._model_file import load_estimator

    est = load_estimator(name)
    if not is_regressor(est):
        raise ValueError(f"--estimator {name}: holds a {type(est).__name__}, which is not a "
                         "regressor, and the label column is a regression target; save a "
                         "regressor, or add --task classification.")
    return clone(est)


def regression_candidates(text, n_rows: int) -> list[str]:
    """The adapters ``method="auto"`` compares with no adaptation for a regression target:
    ``"sized"`` (:func:`~shiftlearn.model_selection.default_regression_methods`), ``"all"``
    (every adapter of :data:`~shiftlearn.model_selection.REGRESSION_METHODS` but the
    optimal-transport plans) or a comma-separated list of them."""
    from ..model_selection import REGRESSION_METHODS, default_regression_methods

    if text == "sized":
        return default_regression_methods(n_rows)
    if text == "all":
        return [m for m in REGRESSION_METHODS if m not in ("EMD", "Sinkhorn")]
    items = [m.strip() for m in text.split(",")] if isinstance(text, str) else list(text)
    items = [m for m in items if m and m != "none"]
    bad = [m for m in items if m not in REGRESSION_METHODS]
    if bad or not items:
        raise ValueError(f"--candidates {text!r}: {', '.join(bad) or 'no method'} cannot be "
                         "compared on a regression target; choose among "
                         f"{', '.join(REGRESSION_METHODS)} (JDA, SCA, RF-SCA and ClassRegOT "
                         "need classes), or sized, or all.")
    return items


def check_regression_options(opts, n_sources: int) -> None:
    """Refuse options that do not apply to a regression target, before any work."""
    from ..model_selection import REGRESSION_METHODS

    if opts.method not in ("auto", "raw", *REGRESSION_METHODS):
        raise ValueError(f"--method {opts.method}: it needs classes, and the label column is a "
                         "regression target; choose auto, raw or one of "
                         f"{', '.join(REGRESSION_METHODS)} (or add --task classification).")
    sel = opts.select
    if sel is not None and sel not in ("source-cv", "lodo", *REGRESSION_SELECT):
        alt = _COUNTERPART.get(sel)
        raise ValueError(f"--select {sel} scores classifiers; for a regression target choose "
                         f"source-cv, lodo, {', '.join(REGRESSION_SELECT)}"
                         + (f" (its counterpart: {alt})" if alt else "") + ".")
    if opts.method != "auto" and sel not in (None, "source-cv"):
        raise ValueError(f"--select {sel} chooses among methods and applies to --method auto; "
                         "drop it or use --method auto.")
    if opts.method == "raw" and (opts.params or opts.tune):
        raise ValueError("--param and --tune need an adapter; choose a --method other than "
                         "raw.")
    if opts.method == "auto":
        if opts.params:
            raise ValueError("--param sets the parameters of one method; with --method auto "
                             "every method keeps its defaults (or its grid with --tune).")
        regression_candidates(opts.candidates, 0)
        if sel == "lodo" and n_sources < 2:
            raise ValueError("--select lodo leaves one source file out at a time and needs at "
                             f"least two source files, got {n_sources}; choose --select "
                             "source-cv.")


def _criterion(opts, n_lab: int):
    from .. import model_selection
    from ..model_selection import LeaveOneDomainOut, SourceKFold, SourceMSEScorer

    sel = opts.select
    k = min(5, n_lab)
    if sel == "lodo":
        return (LeaveOneDomainOut(), SourceMSEScorer(),
                "leave one source file out (squared error on the held-out source)")
    if sel in (None, "source-cv", "source_mse"):
        return (SourceKFold(k, random_state=opts.seed), SourceMSEScorer(),
                f"{k}-fold CV on the source values (squared error on the held-out source "
                "rows)")
    scorer = getattr(model_selection, REGRESSION_SELECT[sel])()
    return (SourceKFold(k, random_state=opts.seed), scorer,
            f"{REGRESSION_SELECT[sel]} (target-value free) on {k} source folds with every "
            "target row")


def _rmse(err) -> float | None:
    return None if len(err) == 0 else float(np.sqrt(np.mean(np.square(err))))


def _errors(truth, pred) -> dict:
    err = np.asarray(pred, float) - np.asarray(truth, float)
    return {"rmse": _rmse(err), "mae": float(np.mean(np.abs(err))), "rows": int(len(err))}


def _summary(v) -> dict:
    v = np.asarray(v, dtype=float)
    q = np.percentile(v, [0, 25, 50, 75, 100])
    return {"min": float(q[0]), "q25": float(q[1]), "median": float(q[2]), "q75": float(q[3]),
            "max": float(q[4]), "mean": float(v.mean()), "std": float(v.std())}


def _source_errors(model, X, y, sd, seed: int) -> dict | None:
    """RMSE and MAE of ``model``'s configuration on held-out labeled source rows (5-fold
    ``SourceKFold``, fewer folds for fewer rows), each row predicted as a source row."""
    from sklearn.base import clone

    from ..model_selection import SourceKFold

    lab = np.flatnonzero(sd > 0)
    if lab.size < 2:
        return None
    k = min(5, lab.size)
    pred = np.full(len(y), np.nan)
    for tr, va in SourceKFold(k, target_in_test=False, random_state=seed).split(
            X, y, groups=sd):
        m = clone(model).fit(X[tr], y[tr], sd[tr])
        pred[va] = m.predict(X[va], sd[va])
    out = _errors(y[lab], pred[lab])
    out["folds"] = k
    return out


def _tune(opts, adapter, method, est, X, y, sd):
    """A named method with ``--tune``: its default grid searched by 5-fold source CV."""
    from sklearn.model_selection import GridSearchCV

    from ..compose import DomainAdaptationRegressor
    from ..model_selection import DEFAULT_GRIDS, SourceKFold, SourceMSEScorer

    grid = {f"adapter__{k}": list(v) for k, v in DEFAULT_GRIDS.get(method, {}).items()
            if k in adapter.get_params()}
    if not grid:
        return DomainAdaptationRegressor(adapter, est).fit(X, y, sd), {}
    search = GridSearchCV(DomainAdaptationRegressor(adapter, est), grid,
                          scoring=SourceMSEScorer(), cv=SourceKFold(5, random_state=opts.seed),
                          error_score=np.nan, refit=True)
    search.fit(X, y, groups=sd, sample_domain=sd)
    return search.best_estimator_, {k.removeprefix("adapter__"): v
                                    for k, v in search.best_params_.items()}


def _plain(params: dict) -> dict:
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in params.items()}


def run_regression(opts, X: np.ndarray, y: np.ndarray, sd: np.ndarray,
                   y_target: np.ndarray | None = None, *, names, files, label_column,
                   label_name, notes, command: str, t_start: float | None = None,
                   on_selection=None, on_predictions=None) -> RegressionResult:
    """Choose or fit, predict the target rows (``sd < 0``), build the report.

    ``opts``: ``method``, ``select``, ``candidates``, ``tune``, ``margin``, ``params``,
    ``n_jobs``, ``seed``, ``search``, ``_estimator`` (an unfitted regressor) and
    ``_estimator_name``. ``y``: the source values, NaN on the target rows. ``y_target``: the
    target values if known (NaN where missing), only for the report's errors.
    ``on_selection(dict)`` and ``on_predictions(model, predictions, method)`` are called as
    the command's progress lines need them. Cost: the candidates' fits (``method="auto"``),
    then ``2 k`` more fits of the chosen configuration and of no adaptation for the source
    errors (``k <= 5`` folds).
    """
    from .. import __version__
    from ..compose import DomainAdaptationRegressor
    from ..model_selection import AdaptationRegressorSelector, make_adapter

    t0 = time.perf_counter() if t_start is None else t_start
    est = opts._estimator
    src, tgt = sd > 0, sd < 0
    n_lab = int(src.sum())
    selection = None
    params: dict = {}
    if opts.method == "auto":
        if n_lab < 4:
            raise ValueError(f"{n_lab} labeled source row(s): --method auto validates every "
                             "candidate on held-out source rows and needs at least 4; give "
                             "more labeled rows, or use --method raw (no adaptation) or a "
                             "named method.")
        cv, scoring, words = _criterion(opts, n_lab)
        methods = regression_candidates(opts.candidates, len(X))
        sel = AdaptationRegressorSelector(
            methods=["none", *methods], regressor=est, scoring=scoring,
            cv=cv,
            grids=None if opts.tune else {}, random_state=opts.seed, n_jobs=opts.n_jobs,
            margin=opts.margin or 0.0, search=opts.search).fit(X, y, sd)
        model, method = sel.best_estimator_, sel.choice_
        params = _plain(next(r["params"] for r in sel.summary_ if r["chosen"]))
        rows = []
        for r in sel.summary_:
            s = r["score"]
            rows.append({"method": r["method"], "score": None if not np.isfinite(s) else s,
                         "rmse": None if not np.isfinite(s) or s > 0 else float(np.sqrt(-s)),
                         "std": float(r["std"]) if np.isfinite(r["std"]) else None,
                         "params": _plain(r["params"]), "chosen": bool(r["chosen"])})
        selection = {"criterion": opts.select or "source-cv", "how": words,
                     "candidates": rows, "choice": method, "margin": float(sel.margin_)}
        if on_selection is not None:
            on_selection(selection)
    elif opts.method == "raw":
        model, method = DomainAdaptationRegressor(None, est).fit(X, y, sd), "none"
    else:
        adapter = make_adapter(opts.method, opts.seed, **dict(opts.params or {}))
        if opts.tune:
            model, params = _tune(opts, adapter, opts.method, est, X, y, sd)
        else:
            model, params = DomainAdaptationRegressor(adapter, est).fit(X, y, sd), \
                _plain(dict(opts.params or {}))
        method = opts.method
    pred = model.predict(X[tgt])
    fit_seconds = time.perf_counter() - t0
    if on_predictions is not None:
        on_predictions(model, pred, method)
    raw = DomainAdaptationRegressor(None, est)
    source_chosen = _source_errors(model, X, y, sd, opts.seed)
    source_raw = (source_chosen if method == "none"
                  else _source_errors(raw, X, y, sd, opts.seed))
    target_errors = None
    if y_target is not None:
        known = ~np.isnan(np.asarray(y_target, float))
        if known.any():
            raw_pred = pred if method == "none" else raw.fit(X, y, sd).predict(X[tgt])
            target_errors = {"chosen": _errors(y_target[known], pred[known]),
                             "none": _errors(y_target[known], raw_pred[known])}
    K = int(np.unique(sd[src]).size)
    rep = {
        "task": "regression", "method": opts.method, "choice": method, "params": params,
        "estimator": opts._estimator_name, "label_column": label_column,
        "label_name": label_name,
        "domains": [{"name": n, "file": f, "rows": int(np.sum(sd == d)),
                     "role": "source" if d > 0 else "target"}
                    for n, f, d in zip(names, files, [*sorted(np.unique(sd[src])),
                                                      int(sd[tgt][0])], strict=True)],
        "n_sources": K, "n_features": int(X.shape[1]), "selection": selection,
        "source_errors": {"chosen": source_chosen, "none": source_raw},
        "source_values": _summary(y[src]), "predicted_values": _summary(pred),
        "target_errors": target_errors, "notes": list(notes), "warnings": [],
        "command": command, "version": __version__, "seed": opts.seed,
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "seconds": {"fit": fit_seconds, "total": time.perf_counter() - t0},
    }
    return RegressionResult(model, pred, RegressionReport(rep))


class RegressionReport(dict):
    """The report of one regression run: the dict ``shiftlearn adapt --report x.json``
    writes for a regression target, with the Markdown and HTML renderers."""

    def markdown(self) -> str:
        from ._report_regression import markdown

        return markdown(self)

    def html(self) -> str:
        from ._report_regression import figures, html

        return html(self, figures(self))

    def write(self, path: str | Path, kind: str | None = None) -> Path:
        """Write the report to ``path`` as ``kind`` (``"html"``, ``"md"`` or ``"json"``;
        default: from the extension). Raises ``ValueError`` for another extension."""
        from ._report import write_formats
        from ._report_regression import figures, html, markdown

        path = Path(path)
        if kind is None:
            kind = {".html": "html", ".htm": "html", ".md": "md",
                    ".json": "json"}.get(path.suffix.lower())
        if kind not in ("html", "md", "json"):
            raise ValueError(f"{path}: unknown report format {kind or path.suffix!r}; end the "
                             "name in .html, .md or .json.")
        write_formats(self, {kind: path}, markdown, html,
                      figures(self) if kind == "html" else None)
        return path


@dataclass
class RegressionResult:
    """What :func:`adapt_regression` returns: the fitted ``pipeline`` (a
    :class:`~shiftlearn.compose.DomainAdaptationRegressor`), the target rows'
    ``predictions`` and the ``report`` (:class:`RegressionReport`)."""

    pipeline: object
    predictions: np.ndarray
    report: RegressionReport

    def predict(self, X) -> np.ndarray:
        """The values the pipeline predicts for ``X`` (rows of the target's domain)."""
        return self.pipeline.predict(np.asarray(X, dtype=float))


def adapt_regression(X_source, y_source, X_target, *, source_domains=None, y_target=None,
                     method: str = "auto", estimator="ridge", select: str | None = None,
                     candidates="sized", tune: bool = False, margin=0.0,
                     params: dict | None = None, n_jobs: int = -1, random_state: int = 0,
                     search: str = "grid") -> RegressionResult:
    """Adapt labeled source rows to unlabeled target rows for a regression target: what
    ``shiftlearn adapt`` does when the label column holds numbers to predict.

    Parameters are those of :func:`~shiftlearn.workflow.adapt`, with regression defaults:
    ``estimator="ridge"`` (:data:`REGRESSORS`, a path, or a regressor), ``select`` one of
    ``"source-cv"``, ``"lodo"``, :data:`REGRESSION_SELECT` (None:
    :data:`DEFAULT_REGRESSION_SELECT`), ``candidates`` as :func:`regression_candidates`.
    ``y_source`` holds the source values (all finite); ``y_target`` the target values if
    known (NaN where missing), only for the report's errors.

    Returns
    -------
    RegressionResult

    Raises
    ------
    ValueError
        Inconsistent options, non-numeric or missing source values, mismatched shapes.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.workflow import adapt_regression
    >>> rng = np.random.default_rng(0)
    >>> Xs, Xt = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 0.5
    >>> res = adapt_regression(Xs, Xs @ [1.0, 2.0], Xt, method="CORAL")
    >>> res.report["choice"], res.predictions.shape
    ('CORAL', (60,))
    """
    t_start = time.perf_counter()
    Xs, Xt = np.asarray(X_source, dtype=float), np.asarray(X_target, dtype=float)
    if Xs.ndim != 2 or Xt.ndim != 2:
        raise ValueError(f"X_source and X_target must be 2-D (rows x features), got shapes "
                         f"{Xs.shape} and {Xt.shape}.")
    if Xs.shape[1] != Xt.shape[1]:
        raise ValueError(f"X_target has {Xt.shape[1]} features but X_source has "
                         f"{Xs.shape[1]}.")
    try:
        ys = np.asarray(y_source, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y_source must hold numbers (a regression target).") from None
    if ys.shape != (len(Xs),) or not np.isfinite(ys).all():
        raise ValueError(f"y_source must hold one finite value per source row ({len(Xs)}); "
                         "a source row without a value cannot be trained on: drop it.")
    yt = None if y_target is None else np.asarray(y_target, dtype=np.float64)
    if yt is not None and yt.shape != (len(Xt),):
        raise ValueError(f"y_target has {yt.size} values for {len(Xt)} target rows.")
    if source_domains is None:
        dom, values = np.ones(len(Xs), dtype=np.int64), [None]
    else:
        values, inv = np.unique(np.asarray(source_domains), return_inverse=True)
        dom = inv.astype(np.int64) + 1
    K = len(values)
    est = make_regressor(estimator, random_state)
    opts = SimpleNamespace(method=method, select=select, candidates=candidates, tune=tune,
                           margin=margin, params=dict(params or {}), n_jobs=n_jobs,
                           seed=random_state, search=search, _estimator=est,
                           _estimator_name=estimator if isinstance(estimator, str)
                           else type(est).__name__)
    check_regression_options(opts, K)
    if opts.select is None and method == "auto":
        opts.select = DEFAULT_REGRESSION_SELECT
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, np.full(len(Xt), np.nan)]
    sd = np.r_[dom, np.full(len(Xt), -(K + 1))]
    names = (["source"] if K == 1 else [f"source {v}" for v in values]) + ["target"]
    return run_regression(opts, X, y, sd, yt, names=names, files=["(array)"] * (K + 1),
                          label_column="y_source", label_name=None, notes=[],
                          command="shiftlearn.workflow.adapt_regression(...)",
                          t_start=t_start)
