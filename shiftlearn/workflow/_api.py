"""The Python entry point of ``shiftlearn adapt``: :func:`adapt`.

It validates arrays or DataFrames as the command validates its files, then runs the command's
work: the choice without target labels (:func:`~shiftlearn.workflow.run_adaptation`), the
regression run (:func:`~shiftlearn.workflow.adapt_regression`), or, when some target rows
carry a label, the few-label run (:func:`~shiftlearn.workflow.run_few_labels`). It lives
apart from ``_adapt`` so that it can call the few-label run, which builds on ``_adapt``.
"""

from __future__ import annotations

import time
import warnings
from types import SimpleNamespace

import numpy as np

from ._adapt import (
    ESTIMATORS,
    AdaptationResult,
    _features,
    check_options,
    default_select,
    make_estimator,
    run_adaptation,
)
from ._fewlabels import FEW_ONLY, run_few_labels

__all__ = ["adapt"]


def adapt(X_source, y_source, X_target, *, source_domains=None, y_target=None,
          y_target_labeled=None,
          method: str = "auto", estimator="1nn", select: str | None = None,
          candidates="sized", tune: bool = False, margin=None, params: dict | None = None,
          permutations: int = 200, n_jobs: int = -1, random_state: int = 0,
          search: str = "grid"
          ) -> AdaptationResult:
    """Adapt labeled source rows to unlabeled target rows: what ``shiftlearn adapt`` does.

    The same choice, fit, predictions and report as the command on the same rows and
    options: ``method="auto"`` compares no adaptation (kept on ties) with every adapter by a
    target-label-free criterion; the report measures the shift before and after adaptation
    (MMD permutation tests, Holm-corrected) and can be written as the command's HTML page.

    Parameters
    ----------
    X_source : array-like or DataFrame of shape (n_source, n_features)
        The labeled source rows.
    y_source : array-like of shape (n_source,)
        Their labels (compared as values: ``1`` and ``1.0`` are one class).
    X_target : array-like or DataFrame of shape (n_target, n_features)
        The unlabeled target rows. With DataFrames on both sides the columns are matched by
        name.
    source_domains : array-like of shape (n_source,), default=None
        The source domain of each source row (any values; one domain when None), as the
        command's source files.
    y_target : array-like of shape (n_target,), default=None
        The target labels, if known (missing ones as None/NaN): only for the report's accuracy,
        never for choosing or fitting.
    y_target_labeled : array-like of shape (n_target,), default=None
        Labels of the few target rows that have one (None/NaN for the others), to learn
        from, as the command does when the target file's label column is filled for a few
        rows: the few-label methods (``method="auto"`` compares them, or name one, e.g.
        ``"FeatureAugmentation"``) are chosen by cross-validation over those rows, and
        ``predictions`` covers every target row. ``estimator="1nn"`` (the default) is read as
        ``"logreg"`` there; ``select``, ``tune``, ``params`` and ``search="halving"`` belong
        to the choice without target labels and are refused. Classification only; not with
        ``y_target``.
    method : str, default="auto"
        ``"auto"``, ``"raw"`` (no adaptation) or an adapter of :data:`METHODS`.
    estimator : str or classifier, default="1nn"
        A name of :data:`ESTIMATORS`, the path of an unfitted classifier saved with skops, or
        an unfitted scikit-learn classifier.
    select : str, default=None
        The criterion of ``method="auto"`` (:data:`SELECT`); None: :func:`default_select`.
    candidates : str or list of str, default="sized"
        The adapters ``"auto"`` compares (:func:`candidate_methods`).
    tune : bool, default=False
        Search the hyper-parameters on the default grids.
    margin : float, "se" or None, default=None
        ``"auto"`` adapts only when the best adapter's estimate beats no adaptation's by more:
        a number, or ``"se"`` (the best adapter's standard error over the folds). ``None``:
        ``"se"`` without labeled target rows, 0 with them.
    params : dict, default=None
        Hyper-parameters of a named ``method``.
    permutations : int, default=200
        Permutations of each MMD test of the report (0 skips them).
    n_jobs : int, default=-1
        Threads of the candidates' fits and scorings (the choice does not depend on it).
    random_state : int, default=0
        Seed of every random choice (folds, adapters, tests).
    search : {"grid", "halving"}, default="grid"
        How ``method="auto"`` searches its candidates: every candidate on every row, or
        successive halving (:class:`~shiftlearn.model_selection.AdaptationSelector`'s
        ``search``).

    Returns
    -------
    AdaptationResult
        ``pipeline``, ``classes``, ``predictions`` (the target rows' labels), ``confidence``
        and ``report`` (:class:`AdaptationReport`; ``report.write("report.html")``).

    Raises
    ------
    ValueError
        Inconsistent options, unknown names, mismatched columns, a single class.

    Notes
    -----
    Cost: that of the command, dominated by the candidates' fits (an exact kernel adapter is
    O(n^2 d + n^3) in the n rows; ``candidates="sized"`` switches to the random-feature
    adapters above 2,000 rows). Warnings raised during the run are kept in
    ``report["warnings"]`` as the command keeps them.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn import adapt
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 30)
    >>> Xs = rng.normal(size=(60, 3)) + 3 * y[:, None]
    >>> Xt = rng.normal(size=(60, 3)) + 3 * y[:, None] + [1.0, -1.0, 0.0]
    >>> res = adapt(Xs, y, Xt, method="CORAL", permutations=0)
    >>> res.report["method"], float(np.mean(res.predictions == y)) > 0.9
    ('CORAL', True)

    Numbers with fractions in ``y_source`` are a regression target: the run is then
    :func:`adapt_regression`'s (its :class:`RegressionResult`), with ``estimator="1nn"`` (the
    default) read as ``"ridge"`` and ``permutations`` unused.
    """
    few = y_target_labeled is not None
    if few and y_target is not None:
        raise ValueError("y_target holds labels for the report's accuracy only, and "
                         "y_target_labeled trains on them; give one of the two.")
    if _regression_target(y_source):
        if few:
            raise ValueError("y_target_labeled: the few-label methods are classifiers, and "
                             "y_source is a regression target (numbers with fractions).")
        from ._adapt_regression import adapt_regression

        return adapt_regression(
            X_source, y_source, X_target, source_domains=source_domains, y_target=y_target,
            method=method, estimator="ridge" if estimator == "1nn" else estimator,
            select=select, candidates=candidates, tune=tune, margin=margin, params=params,
            n_jobs=n_jobs, random_state=random_state, search=search)
    from ..io import encode_labels
    from ._report import warning_lines

    t_start = time.perf_counter()
    Xs, names_s = _features(X_source, "X_source")
    Xt, names_t = _features(X_target, "X_target")
    if names_s and names_t and names_s != names_t:
        if sorted(names_s) != sorted(names_t) or len(set(names_s)) != len(names_s):
            missing = [n for n in names_s if n not in names_t]
            extra = [n for n in names_t if n not in names_s]
            raise ValueError(f"X_target's columns differ from X_source's: missing {missing}, "
                             f"extra {extra}; give both the same feature columns.")
        Xt = Xt[:, [names_t.index(n) for n in names_s]]
    if Xs.shape[1] != Xt.shape[1]:
        raise ValueError(f"X_target has {Xt.shape[1]} features but X_source has "
                         f"{Xs.shape[1]}.")
    if len(Xt) < 2 or len(Xs) < 2:
        raise ValueError(f"{len(Xs)} source and {len(Xt)} target rows; adaptation needs at "
                         "least 2 of each.")
    ys = np.asarray(y_source)
    if len(ys) != len(Xs):
        raise ValueError(f"y_source has {len(ys)} labels for {len(Xs)} source rows.")
    y_tgt, tgt_name = (y_target_labeled, "y_target_labeled") if few else (y_target, "y_target")
    arrays = [ys] + ([np.asarray(y_tgt, dtype=object)] if y_tgt is not None else [])
    classes, code_list = encode_labels(arrays, what="labels",
                                       names=["y_source", tgt_name][:len(arrays)])
    codes = code_list[0].astype(np.int64)
    if (codes < 0).any():
        raise ValueError("y_source has missing labels; give a label for every source row.")
    if np.unique(codes).size < 2:
        raise ValueError("The source rows have a single class; adaptation for classification "
                         "needs at least two.")
    tgt_codes = code_list[1].astype(np.int64) if y_tgt is not None else None
    if tgt_codes is not None and len(tgt_codes) != len(Xt):
        raise ValueError(f"{tgt_name} has {len(tgt_codes)} labels for {len(Xt)} target rows.")
    if source_domains is None:
        dom, values = np.ones(len(Xs), dtype=np.int64), [None]
    else:
        values, inv = np.unique(np.asarray(source_domains), return_inverse=True)
        if len(inv) != len(Xs):
            raise ValueError(f"source_domains has {len(inv)} values for {len(Xs)} source rows.")
        dom = inv.astype(np.int64) + 1
    K = len(values)
    if not (margin is None or margin == "se"
            or (isinstance(margin, int | float) and margin >= 0)):
        raise ValueError(f"margin must be 'se', a number >= 0 or None, got {margin!r}.")
    if search not in ("grid", "halving"):
        raise ValueError(f"search must be 'grid' or 'halving', got {search!r}.")
    if few or method in FEW_ONLY:
        return _adapt_few_labels(
            Xs, Xt, codes, classes, tgt_codes, dom, values, method=method, estimator=estimator,
            select=select, candidates=candidates, tune=tune, margin=margin, params=params,
            permutations=permutations, n_jobs=n_jobs, random_state=random_state,
            search=search, t_start=t_start)
    est = make_estimator(estimator, random_state)
    opts = SimpleNamespace(method=method, select=select, candidates=candidates, tune=tune,
                           margin=margin, params=dict(params or {}), permutations=permutations,
                           n_jobs=n_jobs, seed=random_state, search=search, _estimator=est,
                           _estimator_name=estimator if isinstance(estimator, str)
                           and estimator in ESTIMATORS else type(est).__name__)
    check_options(opts, K)
    if opts.select is None:
        opts.select = (default_select(opts._estimator_name, est) if method == "auto"
                       else "source-cv")
    X, y, sd, names = _stacked(Xs, Xt, codes, dom, values)
    given = {"method": method, "estimator": opts._estimator_name, "select": opts.select,
             "candidates": candidates, "tune": tune, "margin": margin, "params": params,
             "permutations": permutations, "random_state": random_state, "search": search}
    command = "shiftlearn.adapt(X_source, y_source, X_target, " + ", ".join(
        f"{k}={v!r}" for k, v in given.items()) + ")"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_adaptation(opts, X, y, sd, codes, np.asarray(classes), tgt_codes,
                             names=names, files=["(array)"] * len(names),
                             label_column="y_source", label_name=None, notes=[],
                             command=command, t_start=t_start)
    res.report["warnings"] = warning_lines(caught)
    return res


def _stacked(Xs, Xt, codes, dom, values):
    """The rows as the command's runs take them: ``X`` (source rows, then target rows), ``y``
    (``-1`` on the target rows), ``sample_domain`` (source domains ``1..K``, the target
    ``-(K + 1)``) and the domains' names."""
    K = len(values)
    names = (["source"] if K == 1 else [f"source {v}" for v in values]) + ["target"]
    X = np.vstack([Xs, Xt])
    y = np.r_[codes, -np.ones(len(Xt), dtype=np.int64)]
    sd = np.r_[dom, np.full(len(Xt), -(K + 1))]
    return X, y, sd, names


def _adapt_few_labels(Xs, Xt, codes, classes, tgt_codes, dom, values, *, method, estimator,
                      select, candidates, tune, margin, params, permutations, n_jobs,
                      random_state, search, t_start) -> AdaptationResult:
    """:func:`adapt` with labeled target rows: the checks of the command's few-label run,
    then :func:`~shiftlearn.workflow.run_few_labels`; ``predictions`` of every target row."""
    from ._report import warning_lines

    if tgt_codes is None or not np.any(tgt_codes >= 0):
        raise ValueError(f"method={method!r} learns from labeled target rows, and none was "
                         "given: pass y_target_labeled (a label for the target rows you "
                         "know, None/NaN for the others), or choose a method for an "
                         "unlabeled target (e.g. 'auto' or 'CORAL').")
    unseen = sorted(set(tgt_codes[tgt_codes >= 0].tolist()) - set(codes.tolist()))
    if unseen:
        raise ValueError(f"y_target_labeled has class(es) {[classes[c] for c in unseen]} that "
                         "no source row has: the methods that learn from the source could "
                         "never predict them. Add source rows of those classes, or leave those "
                         "labels out.")
    bad = [f for f, on in (("select", select is not None), ("tune", tune),
                           ("params", bool(params)), ("search='halving'", search == "halving"))
           if on]
    if bad:
        raise ValueError(f"{', '.join(bad)}: options of the choice without target labels; "
                         "with labeled target rows the methods are compared by "
                         "cross-validation over those rows, with their defaults.")
    name = "logreg" if estimator == "1nn" else estimator
    est = make_estimator(name, random_state)
    opts = SimpleNamespace(method=method, candidates=candidates, margin=margin,
                           permutations=permutations, n_jobs=n_jobs, seed=random_state,
                           _estimator=est, _estimator_name=name if isinstance(name, str)
                           and name in ESTIMATORS else type(est).__name__)
    X, y, sd, names = _stacked(Xs, Xt, codes, dom, values)
    given = {"method": method, "estimator": opts._estimator_name, "candidates": candidates,
             "margin": margin, "permutations": permutations, "random_state": random_state}
    command = "shiftlearn.adapt(X_source, y_source, X_target, y_target_labeled=..., " + \
        ", ".join(f"{k}={v!r}" for k, v in given.items()) + ")"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_few_labels(opts, X, y, sd, codes, np.asarray(classes), tgt_codes,
                             names=names, files=["(array)"] * len(names),
                             label_column="y_source", label_name=None, notes=[],
                             command=command, t_start=t_start)
        # every target row: the run predicted the unlabeled ones (what the command writes);
        # the labeled ones are predicted here
        unl, lab = tgt_codes < 0, tgt_codes >= 0
        pred = np.asarray(classes)[np.zeros(len(Xt), dtype=np.int64)]
        pred[unl] = res.predictions
        pred[lab] = res.predict(Xt[lab])
        res.predictions = pred
        if res.confidence is not None:
            conf = np.empty(len(Xt))
            conf[unl] = res.confidence
            conf[lab] = np.asarray(res.pipeline.predict_proba(Xt[lab])).max(axis=1)
            res.confidence = conf
    res.report["warnings"] = warning_lines(caught)
    return res


def _regression_target(y) -> bool:
    """Does ``y`` hold numbers that are not all whole (a regression target for :func:`adapt`)?"""
    a = np.asarray(y)
    if a.dtype.kind != "f":
        return False
    v = a[np.isfinite(a)]
    return bool(np.any(v != np.round(v)))
