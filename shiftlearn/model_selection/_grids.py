"""Default hyper-parameter grids and the source-CV estimator used by the command line.

``shiftlearn demo subspace --tuned`` and ``shiftlearn adapt --tune`` choose an adapter's
hyper-parameters by 5-fold cross-validation on the source labels only (the papers' protocol)
over :data:`DEFAULT_GRIDS`. They live here, not in the command line, so that scripts and
benchmarks can reproduce a command's numbers.

Design decisions
----------------
* The grids are small on purpose: the 12 Office+Caltech tasks with TCA and SCA take a few
  minutes on 2 cores. ``whiten=False`` is fixed for SCA-type methods: 5-fold source CV
  rejected whitening on every one of the 12 Office+Caltech tasks (docs/adaptation.md).
* Keys a given adapter lacks are dropped, so one grid can serve an estimator subclass with
  fewer parameters; when no key applies the plain (unsearched) classifier is returned.
"""

from __future__ import annotations

__all__ = ["DEFAULT_GRIDS", "source_cv_estimator"]

#: ``method label -> grid`` searched by 5-fold source CV (keys the estimator lacks are dropped).
DEFAULT_GRIDS: dict[str, dict[str, list]] = {
    "TCA": {"kernel": ["linear", "rbf"], "n_components": [10, 20, 30, 50]},
    "SCA": {"kernel": ["linear", "rbf"], "beta": [0.1, 0.5, 0.9], "whiten": [False],
            "n_components": [10, 20, 30, 50]},
    "uSCA": {"kernel": ["linear", "rbf"], "delta": [0.1, 1.0, 10.0], "whiten": [False],
             "n_components": [10, 20, 30, 50]},
    "RF-TCA": {"n_components": [10, 20, 30, 50]},
    "RF-SCA": {"beta": [0.1, 0.5, 0.9], "whiten": [False], "n_components": [10, 20, 30, 50]},
}


def source_cv_estimator(adapter, grid: dict, classifier=None, *, cv: int = 5,
                        verbose: int = 0):
    """An adapter + classifier whose hyper-parameters are chosen by CV on the source labels.

    Parameters
    ----------
    adapter : estimator
        A shiftlearn adapter (``TCA()``, ``SCA()``, ...), not fitted.
    grid : dict
        ``parameter -> list of values`` of the adapter; keys it does not have are dropped.
    classifier : estimator, optional
        Trained on the adapted source rows; 1-nearest-neighbour when None (the papers' choice).
    cv : int, default=5
        Folds of the source-CV search.
    verbose : int, default=0
        Passed to :class:`~shiftlearn.model_selection.SourceCVSearch`.

    Returns
    -------
    estimator
        ``SourceCVSearch(DomainAdaptationClassifier(adapter, classifier), ...)`` over the keys
        of ``grid`` the adapter has, or the bare ``DomainAdaptationClassifier`` when none
        applies. Not fitted.

    Examples
    --------
    >>> from shiftlearn.adaptation import TCA
    >>> est = source_cv_estimator(TCA(), DEFAULT_GRIDS["TCA"])
    >>> type(est).__name__, sorted(est.param_grid)
    ('SourceCVSearch', ['adapter__kernel', 'adapter__n_components'])
    >>> type(source_cv_estimator(TCA(), {"no_such_key": [1]})).__name__
    'DomainAdaptationClassifier'
    """
    from sklearn.neighbors import KNeighborsClassifier

    from ..adaptation import DomainAdaptationClassifier
    from ._source_cv import SourceCVSearch

    names = adapter.get_params()
    param_grid = {f"adapter__{k}": v for k, v in grid.items() if k in names}
    est = DomainAdaptationClassifier(adapter, classifier or KNeighborsClassifier(n_neighbors=1))
    return SourceCVSearch(est, param_grid, cv=cv, verbose=verbose) if param_grid else est
