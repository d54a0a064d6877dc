"""How far apart are domains? Pairwise MMD² with permutation tests, Holm-corrected, in words.

:func:`analyse_shift` takes named domains (arrays, optionally labels) and returns a
:class:`ShiftAnalysis`: the matrix of unbiased MMD² between every pair of domains, each pair's
permutation-test p-value and its Holm-corrected value, the per-class (class-conditional) shift
where labels are given, the class proportions per domain, and one plain-language sentence
(:func:`describe`). ``shiftlearn shift`` prints it and draws it (heat-map, 2-D maps).

Each domain is subsampled to at most ``max_rows`` rows (seeded), so no kernel is larger than
``2 * max_rows`` rows; one median bandwidth for every pair, on features z-scored over all
domains pooled (``standardize=True``); p-values Holm-corrected per family; "close" means no
detectable difference at level ``alpha``, not equality. Cost per pair, with ``m <= max_rows``
rows per domain: ``O(m^2 d)`` for the kernel and ``O(m^2)`` per permutation. Design notes:
``docs/dev/report.md``.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> doms = {"a": rng.normal(size=(40, 2)), "b": rng.normal(size=(35, 2)),
...         "c": rng.normal(size=(30, 2)) + 3}
>>> res = analyse_shift(doms, permutations=100, random_state=0)
>>> res.sentence
'a and b are close; c differs from all others.'
>>> res.mmd2.shape
(3, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["ShiftAnalysis", "analyse_shift", "describe", "domain_map", "enough_permutations",
           "holm", "row_map"]


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order.

    ``p_(i)`` sorted ascending becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``; reject at
    level ``alpha`` where the adjusted value is ``<= alpha``. NaN entries are left out of the
    family and stay NaN.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    >>> holm([0.5, float("nan")]).tolist()
    [0.5, nan]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out


@dataclass
class ShiftAnalysis:
    """Result of :func:`analyse_shift` (``to_dict()`` gives plain JSON types).

    ``mmd2``, ``p_value`` and ``p_holm`` are ``k x k`` symmetric matrices over ``names``
    (diagonal 0, 1 and 1; the p-values are NaN without permutations). ``pairs`` lists each pair
    once. ``per_class`` has one entry per (class, pair) tested; ``class_share[d][c]`` is the
    share of class ``c`` among domain ``d``'s labeled rows.
    """

    names: list[str]
    sizes: list[int]
    used: list[int]
    sigma: float
    mmd2: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray
    pairs: list[dict]
    sentence: str
    alpha: float
    permutations: int
    max_rows: int
    standardized: bool
    seed: int
    permutations_used: dict = field(default_factory=dict)
    classes: list[str] = field(default_factory=list)
    per_class: list[dict] = field(default_factory=list)
    class_share: dict = field(default_factory=dict)

    def differ(self) -> np.ndarray:
        """Boolean ``k x k``: the pair differs at ``alpha`` after Holm's correction."""
        return np.nan_to_num(self.p_holm, nan=1.0) <= self.alpha

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("mmd2", "p_value", "p_holm"):
            d[key] = [[_num(v) for v in row] for row in np.asarray(getattr(self, key))]
        d["pairs"] = [{k: _num(v) for k, v in p.items()} for p in self.pairs]
        d["per_class"] = [{k: _num(v) for k, v in p.items()} for p in self.per_class]
        return d


def _num(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None                                # JSON has no NaN
    return v


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def describe(names: list[str], mmd2: np.ndarray, p_holm: np.ndarray | None, alpha: float) -> str:
    """One plain-language sentence about which domains are close and which differ.

    Examples
    --------
    >>> import numpy as np
    >>> D = np.array([[0, .01, .5], [.01, 0, .6], [.5, .6, 0]])
    >>> P = np.array([[1, .4, .001], [.4, 1, .001], [.001, .001, 1]])
    >>> describe(["webcam", "dslr", "amazon"], D, P, 0.05)
    'webcam and dslr are close; amazon differs from all others.'
    >>> describe(["webcam", "dslr", "amazon"], D, np.where(P > 0.1, 0.01, P), 0.05)
    'Every pair differs (Holm-corrected p <= 0.05); the closest are webcam and dslr \
(MMD² 0.01), and amazon is the farthest from the others (mean MMD² 0.55).'
    """
    k = len(names)
    D = np.asarray(mmd2, dtype=float)
    off = ~np.eye(k, dtype=bool)
    far = int(np.argmax(np.where(off, D, 0).sum(axis=1)))
    far_mean = float(D[far][off[far]].mean())
    iu = np.triu_indices(k, 1)
    j = int(np.argmin(D[iu]))
    ca, cb = int(iu[0][j]), int(iu[1][j])
    if p_holm is None or not np.isfinite(np.asarray(p_holm, float)[iu]).any():
        if k == 2:
            return (f"{names[0]} and {names[1]}: MMD² {D[0, 1]:.3g} (no permutation test, so "
                    "no statement on whether they differ).")
        return (f"Closest: {names[ca]} and {names[cb]} (MMD² {D[ca, cb]:.3g}); farthest from the "
                f"others: {names[far]} (mean MMD² {far_mean:.3g}); no permutation tests, so no "
                "statement on which pairs differ.")
    close = np.asarray(p_holm, float) > alpha
    np.fill_diagonal(close, False)
    if k == 2:
        if close[0, 1]:
            return (f"{names[0]} and {names[1]} are close: no detectable difference "
                    f"(Holm-corrected p > {alpha:g}) with these sample sizes.")
        return f"{names[0]} and {names[1]} differ (p <= {alpha:g})."
    if not close.any():
        return (f"Every pair differs (Holm-corrected p <= {alpha:g}); the closest are "
                f"{names[ca]} and {names[cb]} (MMD² {D[ca, cb]:.3g}), and {names[far]} is the "
                f"farthest from the others (mean MMD² {far_mean:.3g}).")
    if close[off].all():
        return (f"No pair differs detectably (Holm-corrected p > {alpha:g} for all); the "
                "domains look alike with these sample sizes.")
    from scipy.sparse.csgraph import connected_components

    _, comp = connected_components(close.astype(int), directed=False)
    parts = []
    for c in np.unique(comp):
        members = np.flatnonzero(comp == c)
        if members.size < 2:
            continue
        group = [names[i] for i in members]
        if close[np.ix_(members, members)][~np.eye(members.size, dtype=bool)].all():
            parts.append(f"{_join(group)} are close")
        else:
            links = [f"{names[a]}–{names[b]}" for a in members for b in members
                     if a < b and close[a, b]]
            parts.append(f"close pairs: {', '.join(links)}")
    alone = [names[i] for i in range(k) if not close[i].any()]
    if len(alone) == 1:
        parts.append(f"{alone[0]} differs from all others")
    elif alone:
        parts.append(f"{_join(alone)} each differ from all others")
    return "; ".join(parts) + "."


# ---------------------------------------------------------------------------- the analysis
def _scaler(arrays: list[np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    pooled = np.vstack(arrays)
    mean = pooled.mean(axis=0)
    std = pooled.std(axis=0)
    std[std == 0] = 1.0
    return lambda X: (X - mean) / std


def _take(X: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    if X.shape[0] <= cap:
        return X
    return X[np.sort(rng.choice(X.shape[0], cap, replace=False))]


def _test(Xa, Xb, sigma: float, permutations: int, seed: int) -> tuple[float, float]:
    from ..kernels import mmd2, mmd_permutation_test

    if permutations == 0:
        return mmd2(Xa, Xb, bandwidth=sigma, unbiased=True), np.nan
    res = mmd_permutation_test(Xa, Xb, bandwidth=sigma, n_permutations=permutations,
                               random_state=seed)
    return res.statistic, res.p_value


def analyse_shift(domains: Mapping[str, np.ndarray], labels: Mapping[str, np.ndarray] | None
                  = None, *, permutations: int = 200, max_rows: int = 500, alpha: float = 0.05,
                  standardize: bool = True, random_state: int = 0,
                  on_test: Callable[[str], None] | None = None) -> ShiftAnalysis:
    """Pairwise MMD² between named domains, with Holm-corrected permutation tests.

    Parameters
    ----------
    domains : mapping name -> array (n_d, n_features)
        At least two domains with at least two rows each, the same features.
    labels : mapping name -> array (n_d,) or None
        Class labels as values (``None`` or missing entries: no per-class shift). A class is
        tested between two domains that both hold at least 2 rows of it.
    permutations : int, default 200
        Permutations of each test; 0 computes the MMD² only (no p-values). A family of ``m``
        tests gets at least ``ceil(2 m / alpha)`` (stated in ``permutations_used``): the
        smallest p-value a permutation test can give is ``1 / (permutations + 1)``, and Holm's
        correction multiplies it by ``m``, so fewer permutations could never reject.
    max_rows : int, default 500
        Seeded subsample cap per domain (and per class in a domain).
    alpha : float, default 0.05
        Level of the family-wise (Holm) decisions and the sentence.
    standardize : bool, default True
        z-score every feature with the statistics of all domains pooled.
    random_state : int, default 0
        Seed of the subsamples, the bandwidth's subsample and the permutations.
    on_test : callable or None
        Called with a short description before each test (progress).

    Returns
    -------
    ShiftAnalysis
    """
    from ..kernels import median_heuristic

    names = [str(n) for n in domains]
    arrays = [np.asarray(domains[n], dtype=float) for n in domains]
    if len(names) < 2:
        raise ValueError(f"{len(names)} domain given; the shift is measured between at least two "
                         "domains (one file per domain, or a --domain-column with two values "
                         "or more).")
    widths = {X.shape[1] for X in arrays}
    if len(widths) != 1:
        raise ValueError(f"The domains have different feature counts {sorted(widths)}; give "
                         "them the same feature columns.")
    small = [n for n, X in zip(names, arrays, strict=True) if X.shape[0] < 2]
    if small:
        raise ValueError(f"Domain(s) {small} have fewer than 2 rows; the MMD between domains "
                         "needs at least 2 rows in each.")
    if not isinstance(max_rows, int) or max_rows < 2:
        raise ValueError(f"max_rows must be an integer >= 2, got {max_rows!r}.")
    rng = np.random.default_rng(random_state)
    if standardize:
        scale = _scaler(arrays)
        arrays = [scale(X) for X in arrays]
    idx = [np.arange(X.shape[0]) if X.shape[0] <= max_rows else
           np.sort(rng.choice(X.shape[0], max_rows, replace=False)) for X in arrays]
    subs = [X[i] for X, i in zip(arrays, idx, strict=True)]
    sigma = median_heuristic(np.vstack(subs), random_state=random_state)
    k = len(names)
    D = np.zeros((k, k))
    P = np.ones((k, k))
    pairs = []
    n_perm = enough_permutations(permutations, k * (k - 1) // 2, alpha)
    for a in range(k):
        for b in range(a + 1, k):
            if on_test is not None:
                on_test(f"{names[a]} vs {names[b]}")
            stat, p = _test(subs[a], subs[b], sigma, n_perm, random_state)
            D[a, b] = D[b, a] = stat
            P[a, b] = P[b, a] = p
            pairs.append({"a": names[a], "b": names[b], "n_a": subs[a].shape[0],
                          "n_b": subs[b].shape[0], "mmd2": float(stat), "p_value": float(p)})
    adj = holm([p["p_value"] for p in pairs])
    H = np.ones((k, k)) if permutations else np.full((k, k), np.nan)
    if not permutations:
        P[:] = np.nan
    for pair, h in zip(pairs, adj, strict=True):
        a, b = names.index(pair["a"]), names.index(pair["b"])
        pair["p_holm"] = float(h)
        pair["differ"] = bool(h <= alpha) if permutations else None
        H[a, b] = H[b, a] = h
    res = ShiftAnalysis(names=names, sizes=[int(X.shape[0]) for X in arrays],
                        used=[int(X.shape[0]) for X in subs], sigma=float(sigma), mmd2=D,
                        p_value=P, p_holm=H, pairs=pairs,
                        sentence=describe(names, D, H if permutations else None, alpha),
                        alpha=float(alpha), permutations=int(permutations),
                        max_rows=int(max_rows), standardized=bool(standardize),
                        seed=int(random_state), permutations_used={"pairs": n_perm})
    if labels is not None and any(labels.get(n) is not None for n in domains):
        _per_class(res, arrays, [labels.get(n) for n in domains], sigma, rng, on_test)
    return res


def enough_permutations(permutations: int, n_tests: int, alpha: float) -> int:
    """``permutations``, raised to ``ceil(2 n_tests / alpha)`` so that a family of ``n_tests``
    Holm-corrected tests can reject at ``alpha`` (0 stays 0: no tests).

    Examples
    --------
    >>> enough_permutations(200, 6, 0.05), enough_permutations(100, 9, 0.05)
    (240, 360)
    >>> enough_permutations(0, 9, 0.05)
    0
    """
    if permutations == 0 or n_tests == 0:
        return int(permutations)
    return int(max(permutations, int(np.ceil(2 * n_tests / alpha))))


def _per_class(res: ShiftAnalysis, arrays, ys, sigma, rng, on_test) -> None:
    present = [np.asarray(y, dtype=object) for y in ys if y is not None]
    classes = sorted({str(c) for y in present for c in y if c is not None},
                     key=lambda c: (len(c), c) if c.lstrip("-").isdigit() else (np.inf, c))
    res.classes = classes
    for name, y in zip(res.names, ys, strict=True):
        if y is None:
            continue
        ystr = np.array([None if c is None else str(c) for c in np.asarray(y, dtype=object)],
                        dtype=object)
        known = np.array([c is not None for c in ystr])
        n = max(int(known.sum()), 1)
        res.class_share[name] = {c: float(np.sum(ystr == c) / n) for c in classes}
        ys[res.names.index(name)] = ystr
    plan = []
    for c in classes:
        rows = {}
        for i, (X, y) in enumerate(zip(arrays, ys, strict=True)):
            if y is not None and np.sum(y == c) >= 2:
                rows[i] = _take(X[y == c], res.max_rows, rng)
        ids = sorted(rows)
        plan += [(c, rows, a, b) for ia, a in enumerate(ids) for b in ids[ia + 1:]]
    n_perm = enough_permutations(res.permutations, len(plan), res.alpha)
    res.permutations_used["per_class"] = n_perm
    tests = []
    for c, rows, a, b in plan:
        if on_test is not None:
            on_test(f"class {c}: {res.names[a]} vs {res.names[b]}")
        stat, p = _test(rows[a], rows[b], sigma, n_perm, res.seed)
        tests.append({"class": c, "a": res.names[a], "b": res.names[b],
                      "n_a": rows[a].shape[0], "n_b": rows[b].shape[0], "mmd2": float(stat),
                      "p_value": float(p)})
    for t, h in zip(tests, holm([t["p_value"] for t in tests]), strict=True):
        t["p_holm"] = float(h)
        t["differ"] = bool(h <= res.alpha) if res.permutations else None
    res.per_class = tests


# --------------------------------------------------------------------------- 2-D pictures
def domain_map(mmd2: np.ndarray) -> np.ndarray:
    """``k x 2`` coordinates of the domains whose distances approximate ``sqrt(MMD²)``.

    Classical (Torgerson) multidimensional scaling: the two leading eigenvectors of the
    double-centred ``-D² / 2``. Negative unbiased MMD² estimates count as 0, and negative
    eigenvalues (distances that no Euclidean picture has) are clipped to 0; scikit-learn's
    ``ClassicalMDS`` returns NaN coordinates there, hence these few lines.

    Examples
    --------
    >>> import numpy as np
    >>> xy = domain_map(np.array([[0, 1, 4], [1, 0, 1], [4, 1, 0]]))
    >>> round(float(np.linalg.norm(xy[0] - xy[2])), 6)
    2.0
    """
    from .._linalg import leading_eigh
    from ..kernels import center_kernel

    D2 = np.clip(np.asarray(mmd2, dtype=float), 0, None)
    D2 = (D2 + D2.T) / 2
    np.fill_diagonal(D2, 0.0)
    k = D2.shape[0]
    B = center_kernel(-0.5 * D2)                     # J (-D2 / 2) J, J = I - 11^T / k
    w, V = leading_eigh(B, min(2, k), overwrite=True, owner="domain_map")
    xy = V * np.sqrt(np.clip(w, 0, None))
    if xy.shape[1] < 2:
        xy = np.c_[xy, np.zeros(k)]
    return xy


def row_map(domains: Mapping[str, np.ndarray], *, max_rows: int = 500,
            standardize: bool = True, random_state: int = 0) -> dict[str, np.ndarray]:
    """A 2-D principal-component picture of the rows: ``name -> (n_used, 2)``.

    PCA of the pooled (seeded, capped) subsamples, with the same pooled z-scoring as
    :func:`analyse_shift`; one feature gives a second coordinate of zeros.
    """
    from sklearn.decomposition import PCA

    names = list(domains)
    arrays = [np.asarray(domains[n], dtype=float) for n in names]
    if standardize:
        scale = _scaler(arrays)
        arrays = [scale(X) for X in arrays]
    rng = np.random.default_rng(random_state)
    subs = [_take(X, max_rows, rng) for X in arrays]
    pooled = np.vstack(subs)
    dims = min(2, pooled.shape[1], pooled.shape[0])
    Z = PCA(n_components=dims, random_state=random_state).fit_transform(pooled)
    if Z.shape[1] < 2:
        Z = np.c_[Z, np.zeros((Z.shape[0], 2 - Z.shape[1]))]
    cuts = np.cumsum([s.shape[0] for s in subs])[:-1]
    return {str(n): z for n, z in zip(names, np.split(Z, cuts), strict=True)}
