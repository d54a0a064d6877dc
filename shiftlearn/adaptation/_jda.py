"""Joint Distribution Adaptation (Long, Wang, Ding, Sun and Yu, ICCV 2013), exact kernel version.

TCA (:mod:`shiftlearn.adaptation._tca`) aligns the marginal distributions only. JDA adds one
MMD term per class between the source rows of that class and the target rows *predicted* in it,
and iterates: embed, label the target rows with a 1-nearest-neighbour classifier trained on the
embedded source rows, rebuild the per-class terms, solve again. Each solve is TCA's problem with
the MMD matrix ``L = sum_j l_j l_j^T`` over the marginal vector ``l_0`` and the class vectors
``l_c`` (``1/n_s^c`` on the labeled source rows of class ``c``, ``-1/n_t^c`` on the target
rows predicted ``c``, 0 elsewhere)::

    K H K w = lambda (I + mu K L K) w

so :func:`~shiftlearn.adaptation.tca_components` solves it (``ell`` with ``1 + C`` columns: the
denominator is identity plus rank ``1 + C``, inverted in closed form).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.multiclass import type_of_target

from .._array_api import from_numpy, is_foreign_array, to_numpy
from .._constraints import Interval
from .._validation import unlabeled_mask
from ..kernels import mmd_vector
from ._tca import TCA, tca_components, tca_components_array_api, tca_components_factored

__all__ = ["JDA", "jda_vectors"]


def jda_vectors(sample_domain: np.ndarray, y: np.ndarray | None,
                target_labels: np.ndarray | None) -> np.ndarray:
    """JDA's MMD vectors as the columns of an ``(n, 1 + C')`` matrix: TCA's marginal vector
    (:func:`~shiftlearn.kernels.mmd_vector`), then one column per class ``c`` that has both
    labeled source rows and target rows labeled ``c`` in ``target_labels`` (``1/n_s^c`` on
    those source rows, ``-1/n_t^c`` on those target rows).

    ``target_labels`` holds one label per target row (``sample_domain < 0``, in row order), or
    is ``None`` (the first iteration: the marginal column only).

    Examples
    --------
    >>> sd = np.array([1, 1, 1, -2, -2])
    >>> jda_vectors(sd, np.array([0, 0, 1, -1, -1]), np.array([1, 0])).round(2).tolist()
    [[0.33, 0.5, 0.0], [0.33, 0.5, 0.0], [0.33, 0.0, 1.0], [-0.5, 0.0, -1.0], [-0.5, -1.0, 0.0]]
    """
    sd = np.asarray(sample_domain)
    cols = [mmd_vector(sd)]
    if target_labels is not None and y is not None:
        y, target_labels = np.asarray(y), np.asarray(target_labels)
        src = np.flatnonzero((sd > 0) & ~unlabeled_mask(y))
        tgt = np.flatnonzero(sd < 0)
        for c in np.unique(y[src]):
            s, t = src[y[src] == c], tgt[target_labels == c]
            if s.size and t.size:
                col = np.zeros(sd.shape[0])
                col[s] = 1.0 / s.size
                col[t] = -1.0 / t.size
                cols.append(col)
    return np.stack(cols, axis=1)


class JDA(TCA):
    """Joint Distribution Adaptation (Long et al., ICCV 2013): TCA plus per-class MMD terms on
    pseudo-labels, iterated.

    Learns ``k`` components ``W`` (n_train × k) as TCA does, with the MMD matrix extended by one
    term per class: the distance between the mean of the labeled source rows of class ``c`` and
    the mean of the target rows currently predicted ``c`` (a 1-nearest-neighbour classifier
    trained on the embedded source rows, as in the paper). ``n_iter`` rounds of "solve, then
    relabel the target rows". Embedding of any row ``x``: ``z(x) = [k(x, x_1), ..., k(x, x_n)] W``
    (as TCA).

    Parameters
    ----------
    n_components : int, default=30
        Number of components ``k``.
    mu : float, default=1.0
        Weight of the MMD terms, as TCA's ``mu``. The paper's regularisation weight
        ``lambda`` is ``1 / mu`` up to the scale of its MMD matrix (its code divides ``M`` by
        its Frobenius norm, this class does not); ``mu = 1`` reproduces the paper's digits
        results (``docs/adaptation.md``).
    kernel : {"linear", "rbf", "laplacian", "cauchy"} or callable, default="linear"
        As TCA's, but linear by default: the paper's experiments use the linear kernel (its
        "primal" JDA), and with the Gaussian kernel JDA's relabelling can lock onto a
        consistent wrong class map that circular validation cannot see.
    bandwidth, scaling, eigen_solver : as :class:`~shiftlearn.adaptation.TCA`.
    n_iter : int, default=10
        Relabelling rounds after the first (marginal-only, i.e. TCA) solve, so ``n_iter + 1``
        solves. The paper's released code runs ``T = 10`` solves, the first marginal-only,
        which is ``n_iter = 9`` here; the default keeps 10 rounds (the published runs used
        it). The loop stops early when the pseudo-labels no longer change (every later
        round would repeat the same solve); ``n_iter_`` says how many rounds ran.
    memory : FitMemory or None, default=None
        Shares the bandwidth and the kernel matrix with other fits on the same rows (TCA's and
        JDA's, under the same key); the solves depend on the pseudo-labels and are not kept.

    Attributes
    ----------
    n_components_, sigma_, mu_, eigenvalues_, components_, X_fit_, mmd_ : as TCA
        (``mmd_`` is the marginal MMD² before projection).
    target_labels_ : ndarray of shape (n_target_rows,)
        The pseudo-labels of the training target rows (in row order) that built the final
        solve's class terms; empty when no round ran (``n_iter=0``, no target rows or no
        labeled source rows).
    n_iter_ : int
        Relabelling rounds run (at most ``n_iter``).

    Notes
    -----
    * The MMD terms are Pan et al.'s unnormalised ones (``l^T K l`` is the biased MMD²), as in
      :class:`TCA`, so ``n_iter=0`` is TCA exactly (tested). Long et al.'s released code
      divides ``M`` by its Frobenius norm; that only rescales ``mu``.
    * A class with no target row predicted in it has no term (its class-conditional
      discrepancy cannot be measured); the released code keeps a source-only term, which pulls
      that class's source mean towards the origin.
    * Without labeled source rows, or without target rows, there is nothing to pseudo-label and
      JDA is TCA. Several source (target) domains are pooled, as in TCA.
    * The pseudo-labels come from 1NN in the embedding (the paper's classifier), whatever
      classifier is trained on the embedding afterwards.
    * ``truncate`` is refused: the components of a smaller ``n_components`` come from other
      pseudo-labels, so they are not a truncation.

    Cost: TCA's (:class:`TCA`) kernel once, then up to ``n_iter + 1`` of TCA's solves, each
    followed by a 1NN relabelling of the target rows in the ``k``-dimensional embedding
    (``O(n_s n_t k)``).

    Memory: as TCA, with two more ``n_train x n_train`` matrices (the kernel is kept across
    the rounds, and the update of the reduced problem for ``1 + C`` MMD columns makes a
    temporary).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.adaptation import JDA
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 1.0])
    >>> y = np.r_[(X[:40, 0] > 0).astype(int), -np.ones(40, int)]
    >>> sd = np.r_[np.ones(40, int), -2 * np.ones(40, int)]
    >>> jda = JDA(n_components=2).fit(X, y, sample_domain=sd)
    >>> jda.transform(X).shape, jda.target_labels_.shape
    ((80, 2), (40,))
    """

    _parameter_constraints: dict = {
        **TCA._parameter_constraints,
        "n_iter": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, n_components=30, mu=1.0, kernel="linear", bandwidth="median",
                 scaling="eigh", eigen_solver="auto", n_iter=10, memory=None):
        super().__init__(n_components=n_components, mu=mu, kernel=kernel, bandwidth=bandwidth,
                         scaling=scaling, eigen_solver=eigen_solver, memory=memory)
        self.n_iter = n_iter

    def truncate(self, k: int):
        """Refused: JDA's components for fewer components come from other pseudo-labels."""
        raise NotImplementedError(
            "JDA.truncate: the components of a smaller n_components are not a truncation (the "
            "pseudo-labels depend on the embedding); fit JDA(n_components=k) instead.")

    def _fit(self, X, y, sample_domain):
        mu = self._effective_mu()
        foreign = is_foreign_array(X)
        n = X.shape[0]
        factored = None if foreign else self._factored_k(np.asarray(X, dtype=np.float64), "JDA")
        if factored is not None:          # linear kernel, n > d: in the span of the columns
            X = np.asarray(X, dtype=np.float64)
            k, solver, K = factored, None, None
            svd = np.linalg.svd(X, full_matrices=False)[:2]   # the same rows every round
            ell = mmd_vector(sample_domain)
            g = X.T @ ell
            self.mmd_ = float(g @ g)
        elif foreign:       # kernel, solves and embedding on X's device; 1NN on the host
            import array_api_compat

            xp = array_api_compat.array_namespace(X)
            k, K = self._kernel_array_api(X, "JDA")
            solver = self.eigen_solver
            ell = from_numpy(mmd_vector(sample_domain), X)
            self.mmd_ = float(xp.vecdot(ell, K @ ell))
        else:
            X = np.asarray(X, dtype=np.float64)
            # two more n x n matrices than TCA: the kernel kept across the rounds, and the
            # temporary of tca_components' update for several MMD columns
            k, solver, K, _, _ = self._fit_kernel(
                X, sample_domain, "JDA", 2,
                "RFTCA (random-feature TCA; JDA's per-class terms are not built for it)")
            ell = mmd_vector(sample_domain)
            self.mmd_ = float(ell @ K @ ell)
        sd = sample_domain
        src = (sd > 0) & ~unlabeled_mask(y) if y is not None else np.zeros(n, dtype=bool)
        if src.any() and type_of_target(y[src]) not in ("binary", "multiclass"):
            raise ValueError(f"JDA needs class labels on the source rows (its per-class terms "
                             f"group rows by label), got {type_of_target(y[src])!r} labels; "
                             "for a continuous target use TCA.")
        tgt = sd < 0
        relabel = bool(src.any() and tgt.any())
        labels, rounds = None, 0
        while True:
            ells = jda_vectors(sd, y, labels)
            if factored is not None:
                w, W, KW = tca_components_factored(X, ells, k, mu, svd=svd)
            elif foreign:
                w, W, KW = tca_components_array_api(K, from_numpy(ells, X), k, mu,
                                                    eigen_solver=solver, overwrite_K=False)
            else:
                w, W, KW = tca_components(K, ells, k, mu, eigen_solver=solver)
            W, KW = self._scaled(w, W, KW)
            if not relabel or rounds == self.n_iter:
                break
            Z = to_numpy(KW)
            new = KNeighborsClassifier(n_neighbors=1).fit(Z[src], y[src]).predict(Z[tgt])
            if labels is not None and np.array_equal(new, labels):
                break                       # the same labels give the same solve
            labels, rounds = new, rounds + 1
        self.target_labels_ = (labels if labels is not None
                               else np.empty(0, dtype=y.dtype if y is not None else np.int64))
        self.n_iter_ = rounds
        return self._set_solution(mu, w, W, KW, X, k)
