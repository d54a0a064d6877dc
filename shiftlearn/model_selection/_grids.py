"""Default hyper-parameter grids and the source-CV search used by the command line.

``shiftlearn demo subspace --tuned`` and ``shiftlearn adapt --tune`` choose an adapter's
hyper-parameters by 5-fold cross-validation on the source labels only (the papers' protocol)
over :data:`DEFAULT_GRIDS`. They live here, not in the command line, so that scripts and
benchmarks can reproduce a command's numbers.

Keys a given adapter lacks are dropped, so one grid can serve an estimator subclass with fewer
parameters; when no key applies the plain (unsearched) classifier is returned. The search is
scikit-learn's ``GridSearchCV`` with :class:`SourceKFold` and a shared
:class:`~shiftlearn.adaptation.FitMemory` (:func:`fit_source_cv`). Why these grids:
``docs/dev/model_selection.md``.
"""

from __future__ import annotations

__all__ = ["DEFAULT_GRIDS", "fit_source_cv"]

#: ``method label -> grid`` searched by 5-fold source CV (keys the estimator lacks are dropped).
DEFAULT_GRIDS: dict[str, dict[str, list]] = {
    "TCA": {"kernel": ["linear", "rbf"], "n_components": [10, 20, 30, 50]},
    "JDA": {"kernel": ["linear"], "mu": [1.0, 10.0], "n_components": [20, 50, 100]},
    "TJM": {"kernel": ["linear", "rbf"], "mu": [1.0, 10.0], "n_components": [20, 50]},
    "SCA": {"kernel": ["linear", "rbf"], "beta": [0.1, 0.5, 0.9], "whiten": [False],
            "n_components": [10, 20, 30, 50]},
    "uSCA": {"kernel": ["linear", "rbf"], "delta": [0.1, 1.0, 10.0], "whiten": [False],
             "n_components": [10, 20, 30, 50]},
    "RF-TCA": {"n_components": [10, 20, 30, 50]},
    "RF-SCA": {"beta": [0.1, 0.5, 0.9], "whiten": [False], "n_components": [10, 20, 30, 50]},
    "CORAL": {"shrinkage": ["auto", 1.0]},
    "SA": {"n_components": [10, 20, 50, 100]},
    "LinOT": {"reg": [1e-8, 1e-2, 1.0]},
    "MultiLinOT": {"reg": [1e-8, 1e-2, 1.0]},
    "MMD-LS": {"prior_weight": [1e-3, 1e-1], "bandwidth": ["median", "0.5*median"]},
    "EMD": {},
    "Sinkhorn": {"reg_e": [0.1, 1.0, 10.0]},
    "ClassRegOT": {"reg_e": [0.1, 1.0], "reg_cl": [0.1, 1.0]},
    "KMM": {"bandwidth": ["median", "median_sq"]},
    "KLIEP": {"bandwidth": ["median", "median_sq"]},
    "uLSIF": {"bandwidth": ["median", "median_sq"]},      # reg and sigma: its own LOO
    "RuLSIF": {"alpha": [0.1, 0.5], "reg": [0.01, 0.1]},
    "DiscriminatorRW": {"calibration": ["sigmoid", None]},
    "NearestNeighborRW": {"laplace_smoothing": [False, True]},
    "KDERW": {"bandwidth": ["scott", "median"]},
    "GaussianRW": {"shrinkage": ["auto", 0.1]},
    "DASVM": {"k": [1, 3, 10]},
    "BBSE": {"confusion": ["hard", "soft"]},
    "RLLS": {"reg": ["auto", 0.0]},
    "MLLS": {"calibration": ["bcts", None]},
    "JCPOT": {"reg_e": [0.05, 0.1, 0.5]},
    "JDOT": {"alpha": [0.1, 1.0, 10.0]},
    "OTLabelProp": {"reg_e": [0.0, 1.0]},
}


def fit_source_cv(adapter, grid: dict, X, y, sample_domain=None, classifier=None, *,
                  cv: int = 5, verbose: int = 0, random_state: int = 0,
                  memory=None):
    """An adapter + classifier fitted with its hyper-parameters chosen by CV on the source labels.

    One plain ``GridSearchCV`` over ``DomainAdaptationClassifier(adapter, classifier)`` with
    the domain-aware splitter :class:`~shiftlearn.model_selection.SourceKFold` (held-out
    labeled source rows; every target row in training) and a
    :class:`~shiftlearn.adaptation.FitMemory` shared by every candidate and fold (kernels,
    factorisations and eigen-solves are reused; the choice is that of the search without it,
    to the solvers' tolerance). Ties go to the first setting in grid order (as
    ``GridSearchCV``), so the smallest ``n_components`` of a tie. The memory is emptied once
    the search is done.

    Parameters
    ----------
    adapter : estimator
        A shiftlearn adapter (``TCA()``, ``SCA()``, ...), not fitted.
    grid : dict
        ``parameter -> list of values`` of the adapter; keys it does not have are dropped.
    X, y, sample_domain : arrays
        As for ``DomainAdaptationClassifier.fit`` (``y = -1`` on unlabeled rows).
    classifier : estimator, optional
        Trained on the adapted source rows; 1-nearest-neighbour when None (the papers' choice).
    cv : int, default=5
        Folds of the source CV.
    verbose : int, default=0
        Passed to ``GridSearchCV``.
    random_state : int, default=0
        Seed of the folds.
    memory : FitMemory, optional
        The store shared by the candidates (emptied at the end); a new ``FitMemory()`` (1 GiB)
        when None. ``GridSearchCV`` runs every fold of one candidate before the next
        candidate, so reuse needs the pieces of all ``cv`` folds at once: pass a larger one
        (``FitMemory(max_bytes=...)``) when they exceed 1 GiB (exact methods on thousands of
        rows), else the pieces are evicted before they are used again (same results, no
        saving).

    Returns
    -------
    estimator
        The fitted ``GridSearchCV`` (``best_params_``, ``best_score_``, ``cv_results_``,
        ``best_estimator_`` refitted on all rows) over the keys of ``grid`` the adapter has,
        or the fitted bare ``DomainAdaptationClassifier`` when none applies.

    Examples
    --------
    >>> from shiftlearn.adaptation import TCA
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    >>> est = fit_source_cv(TCA(), {"n_components": [1, 2]}, X, y, sd, cv=3)
    >>> type(est).__name__, sorted(est.best_params_)
    ('GridSearchCV', ['adapter__n_components'])
    >>> type(fit_source_cv(TCA(n_components=2), {"no_such_key": [1]}, X, y, sd)).__name__
    'DomainAdaptationClassifier'
    """
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsClassifier

    from .._validation import check_X_y_domain
    from ..adaptation import FitMemory
    from ..compose import DomainAdaptationClassifier
    from ._scorers import SourceAccuracyScorer
    from ._splitters import SourceKFold

    names = adapter.get_params()
    param_grid = {f"adapter__{k}": list(v) for k, v in grid.items() if k in names}
    clf = KNeighborsClassifier(n_neighbors=1) if classifier is None else classifier
    if not param_grid:
        return DomainAdaptationClassifier(adapter, clf).fit(X, y, sample_domain)
    X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification")
    if memory is None:
        memory = FitMemory()
    elif not isinstance(memory, FitMemory):
        raise TypeError(f"memory must be a FitMemory or None, got {memory!r}; pass "
                        "FitMemory(max_bytes=...) for a larger budget.")
    search = GridSearchCV(DomainAdaptationClassifier(adapter, clf, memory=memory), param_grid,
                          scoring=SourceAccuracyScorer(),
                          cv=SourceKFold(cv, random_state=random_state), verbose=verbose)
    try:
        with config_context(enable_metadata_routing=False):   # domains as groups, as always
            search.fit(X, y, groups=sd, sample_domain=sd)
    finally:
        memory.clear()
    return search
