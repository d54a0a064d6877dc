"""How well does a selection criterion select? Gap closed, rank correlation, and the splits
paper's mix-up and worst-domain validation baselines.

A model-selection study has, for each task, ``m`` candidates (hyper-parameter settings,
methods), each with a **validation score** (what the criterion saw: a source-CV accuracy, a
target-label-free scorer, ...) and a **target score** (its accuracy on the target labels, known
to the study only). The functions here turn those two vectors into the numbers a study reports.

Definitions (decided here for the whole library)
-------------------------------------------------
* **selected**: the candidate with the highest validation score (NaN scores, e.g. failed fits,
  are skipped; ties go to the first, as ``GridSearchCV``).
* **oracle**: the best target score over the candidates (``max``; ``min`` when lower is
  better).
* **random**: the *mean* target score over the candidates, i.e. the expected target score of a
  candidate picked uniformly at random (not one random draw, which would add noise).
* **gap closed** ``= (selected - random) / (oracle - random)``: 1 when the criterion picks the
  oracle's candidate, 0 when it does no better than chance, negative when worse. Undefined
  (NaN, with a warning) when every candidate has the same target score. The splits paper
  normalises the same way per data set, with its random *split*'s selection as the zero
  (``baseline=``).
* **rank correlation**: Spearman's rho between validation and target scores over the
  candidates (``scipy.stats.spearmanr``, ties by average ranks), the splits paper's statistic
  (Sec. 5.4).

The two validation baselines of Napoli & White (``../shared/papers/004_splits.md``) are scorers
with the protocol of :mod:`shiftlearn.model_selection._scorers` (``scorer(estimator, X_val,
y_val, sample_domain=None)``); they read only the labeled *source* rows of the fold.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import stats
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.utils import check_random_state

from .._constraints import Interval
from ._scorers import _call, _domain_kw, _DomainScorer, _Fold

__all__ = ["MixupValidationScorer", "RankCorrelation", "WorstDomainScorer", "gap_closed",
           "rank_correlation", "selected_index", "selection_summary"]


def _vector(values, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of scores, one per "
                         f"candidate; got shape {v.shape}.")
    return v


def selected_index(validation_scores) -> int:
    """Index of the candidate a criterion selects: the highest validation score, NaN skipped,
    ties to the first.

    Examples
    --------
    >>> selected_index([0.5, float("nan"), 0.7, 0.7])
    2
    """
    v = _vector(validation_scores, "validation_scores")
    if np.all(np.isnan(v)):
        raise ValueError("Every validation score is NaN (every candidate failed): nothing to "
                         "select. Check the search's error_score / the failing fits.")
    return int(np.nanargmax(v))


def gap_closed(target_scores, validation_scores=None, *, selected: int | None = None,
               baseline: float | None = None, greater_is_better: bool = True) -> float:
    """Fraction of the random -> oracle gap closed by a selection (see the module docstring).

    Parameters
    ----------
    target_scores : sequence of float, one per candidate
        The candidates' scores on the target (labels known to the study only).
    validation_scores : sequence of float, optional
        The criterion's scores; the selected candidate is their argmax (:func:`selected_index`).
    selected : int, optional
        Or the selected candidate's index directly (exactly one of the two).
    baseline : float, optional
        The zero of the scale; default the mean target score over the candidates ("random").
    greater_is_better : bool, default=True
        ``False`` for losses (RMSE): the oracle is then the minimum.

    Returns
    -------
    float
        1 = oracle, 0 = random, < 0 worse than random; NaN (with a warning) when oracle equals
        the baseline.

    Examples
    --------
    >>> gap_closed([0.4, 0.6, 0.8], [0.1, 0.9, 0.2])      # picks 0.6; random 0.6, oracle 0.8
    0.0
    >>> gap_closed([0.4, 0.6, 0.8], selected=2)
    1.0
    >>> round(gap_closed([10.0, 12.0, 14.0], selected=0, greater_is_better=False), 6)   # RMSE
    1.0
    """
    t = _vector(target_scores, "target_scores")
    if np.any(np.isnan(t)):
        raise ValueError("target_scores contains NaN: give every candidate's target score "
                         "(drop the candidates that failed from both vectors).")
    if (validation_scores is None) == (selected is None):
        raise ValueError("Give exactly one of validation_scores (the selected candidate is "
                         "their argmax) and selected (its index).")
    if validation_scores is not None:
        v = _vector(validation_scores, "validation_scores")
        if v.shape != t.shape:
            raise ValueError(f"validation_scores has {v.size} entries but target_scores has "
                             f"{t.size}: one of each per candidate.")
        selected = selected_index(v)
    if not -t.size <= int(selected) < t.size:
        raise ValueError(f"selected={selected} is not a candidate index (there are {t.size}).")
    oracle = float(t.max() if greater_is_better else t.min())
    random = float(t.mean()) if baseline is None else float(baseline)
    if oracle == random:
        warnings.warn("gap_closed: the oracle equals the baseline (every candidate has the "
                      "same target score): there is no gap to close; returning NaN.",
                      RuntimeWarning, stacklevel=2)
        return float("nan")
    return float((t[int(selected)] - random) / (oracle - random))


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rank correlation between validation and target scores."""

    rho: float
    p_value: float
    n: int            # candidates used (pairs with a NaN are dropped)


def rank_correlation(validation_scores, target_scores) -> RankCorrelation:
    """Spearman's rho between a criterion's validation scores and the target scores.

    Pairs in which either score is NaN are dropped (``n`` counts the rest). ``rho`` is NaN,
    with a warning, when fewer than 3 pairs remain or either vector is constant (no ranking to
    compare).

    Examples
    --------
    >>> r = rank_correlation([0.1, 0.2, 0.3, 0.4], [0.5, 0.7, 0.6, 0.9])
    >>> round(r.rho, 2), r.n
    (0.8, 4)
    """
    v = _vector(validation_scores, "validation_scores")
    t = _vector(target_scores, "target_scores")
    if v.shape != t.shape:
        raise ValueError(f"validation_scores has {v.size} entries but target_scores has "
                         f"{t.size}: one of each per candidate.")
    keep = ~(np.isnan(v) | np.isnan(t))
    v, t = v[keep], t[keep]
    if v.size < 3 or np.ptp(v) == 0 or np.ptp(t) == 0:
        warnings.warn(f"rank_correlation: undefined with {v.size} usable pair(s) or a constant "
                      "vector (no ranking to compare); returning NaN.", RuntimeWarning,
                      stacklevel=2)
        return RankCorrelation(float("nan"), float("nan"), int(v.size))
    res = stats.spearmanr(v, t)
    return RankCorrelation(float(res.statistic), float(res.pvalue), int(v.size))


def selection_summary(validation_scores, target_scores, *, greater_is_better: bool = True
                      ) -> dict:
    """Everything a study reports for one task and one criterion, as a dict.

    Keys: ``selected`` (index), ``selected_target``, ``oracle``, ``random`` (mean target
    score), ``gap_closed``, ``spearman``, ``n_candidates``.

    Examples
    --------
    >>> s = selection_summary([0.9, 0.5, 0.7], [0.2, 0.5, 0.8])
    >>> s["selected"], s["selected_target"], s["oracle"], round(s["gap_closed"], 6)
    (0, 0.2, 0.8, -1.0)
    """
    t = _vector(target_scores, "target_scores")
    v = _vector(validation_scores, "validation_scores")
    sel = selected_index(v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gap = gap_closed(t, v, greater_is_better=greater_is_better)
        rho = rank_correlation(v, t).rho
    return {"selected": sel, "selected_target": float(t[sel]),
            "oracle": float(t.max() if greater_is_better else t.min()),
            "random": float(t.mean()), "gap_closed": gap, "spearman": rho,
            "n_candidates": int(t.size)}


# --------------------------------------------------------------------------- baselines
class WorstDomainScorer(_DomainScorer):
    """Worst-domain validation (Napoli & White, Appendix D, Table 8): the lowest per-domain
    accuracy over the source domains of the validation fold.

    ``score = min_d acc_d``, ``acc_d`` the class-balanced accuracy (the paper's validation
    accuracies are class-balanced, Sec. 5.1) on the labeled rows of source domain ``d``. Target
    rows are ignored. With a single source domain it is that domain's accuracy.

    Parameters
    ----------
    balanced : bool, default=True
        Class-balanced accuracy (``False``: plain accuracy).

    Notes
    -----
    Needs the domain of each row: pass ``sample_domain`` (metadata routing on, or a direct
    call); without it a ``ValueError`` says so, since the labeled rows alone cannot be split
    into domains.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> X = np.zeros((6, 1)); y = np.array([0, 0, 0, 1, 1, 0]); sd = np.array([1, 1, 1, 2, 2, 2])
    >>> clf = DummyClassifier(strategy="constant", constant=0).fit(X, y)
    >>> WorstDomainScorer(balanced=False)(clf, X, y, sample_domain=sd)   # domain 2: 1 of 3
    0.3333333333333333
    """

    _needs_target = False
    _parameter_constraints: dict = {"balanced": ["boolean"]}

    def __init__(self, balanced=True):
        self.balanced = balanced

    def __call__(self, estimator, X, y=None, sample_domain=None, **kwargs) -> float:
        if sample_domain is None:
            raise ValueError("WorstDomainScorer needs sample_domain (the domain of each row): "
                             "switch metadata routing on (sklearn.set_config("
                             "enable_metadata_routing=True); the scorer requests it) or call "
                             "it with sample_domain=.")
        return super().__call__(estimator, X, y, sample_domain, **kwargs)

    def _score(self, estimator, fold: _Fold) -> float:
        pred = np.asarray(_call(estimator, "predict", fold, fold.src))
        y, sd = fold.y[fold.src], fold.sd[fold.src]
        metric = balanced_accuracy_score if self.balanced else accuracy_score
        with warnings.catch_warnings():      # a domain with one class: balanced = recall
            warnings.simplefilter("ignore", UserWarning)
            return float(min(metric(y[sd == d], pred[sd == d]) for d in np.unique(sd)))


class MixupValidationScorer(_DomainScorer):
    """Mix-up validation (Napoli & White, Sec. 5.1, baseline 4, after Lu et al. 2023): the
    accuracy on mixed-up labeled source rows of the validation fold.

    Each labeled source row ``i`` is paired with a random labeled source row ``j`` of *another*
    source domain (any other row when the fold has one source domain or no ``sample_domain``),
    mixed with ``lam ~ Beta(alpha, alpha)``, ``x = lam x_i + (1 - lam) x_j``, and scored with
    the mixed label: ``lam [pred == y_i] + (1 - lam) [pred == y_j]``. The score is the mean.
    Target rows are ignored.

    The paper gives no mix-up parameters ("[?]" in the notes); these follow DomainBed's
    ``Mixup`` algorithm, which the paper's experiments run on: inter-domain pairs,
    ``alpha = 0.2``, the label mixed with the same ``lam``.

    Parameters
    ----------
    alpha : float, default=0.2
    random_state : int, RandomState or None, default=0
        Pairs and ``lam`` (fixed by default: every candidate sees the same mixed rows).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> clf = LogisticRegression().fit(X, y)
    >>> bool(0.5 < MixupValidationScorer()(clf, X, y) <= 1.0)
    True
    """

    _needs_target = False
    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, alpha=0.2, random_state=0):
        self.alpha = alpha
        self.random_state = random_state

    def _score(self, estimator, fold: _Fold) -> float:
        src = fold.src
        if src.size < 2:
            raise ValueError("MixupValidationScorer needs at least 2 labeled source rows in the "
                             "validation fold.")
        rng = check_random_state(self.random_state)
        sd = fold.sd[src]
        partner = np.empty(src.size, dtype=np.int64)
        for i in range(src.size):
            pool = np.flatnonzero(sd != sd[i])
            if pool.size == 0:
                pool = np.delete(np.arange(src.size), i)
            partner[i] = pool[rng.randint(pool.size)]
        lam = rng.beta(self.alpha, self.alpha, size=src.size)
        Xs = fold.Xa[src]
        mix = lam[:, None] * Xs + (1 - lam[:, None]) * Xs[partner]
        if hasattr(fold.X, "columns"):
            mix = type(fold.X)(mix, columns=fold.X.columns)
        y = fold.y[src]
        pred = np.asarray(estimator.predict(mix, **_domain_kw(estimator, "predict", sd)))
        return float(np.mean(lam * (pred == y) + (1 - lam) * (pred == y[partner])))
