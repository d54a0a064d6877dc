"""Transfer Component Analysis (Pan, Tsang, Kwok and Yang 2011), exact kernel version.

Problem (Pan et al.'s unsupervised TCA)::

    min_W  tr(W^T W) + mu tr(W^T K L K W)   s.t.  W^T K H K W = I_k

with ``K`` the (uncentred) kernel of all training rows, ``L = l l^T`` the MMD matrix
(:func:`~shiftlearn.kernels.mmd_vector`), ``H = I - 11^T/n``. Its solution is the ``k``
leading eigenvectors of the symmetric-definite pencil ``K H K w = lambda (I + mu K l l^T K) w``.
The RF-TCA paper writes the same problem with ``gamma tr(W^T W)`` on the regulariser and
``tr(W^T K L K W)`` unweighted: its ``gamma`` is ``1 / mu`` (same eigenvectors, eigenvalues
scaled by ``gamma``); pass ``mu = 1 / gamma`` for the paper's value.

Because ``M = I + mu u u^T`` (``u = K l``) is identity plus rank one, ``M^{-1/2}`` is closed form
and the pencil reduces to the standard problem ``G^T G v = lambda v`` with
``G = H K M^{-1/2}``; the leading ``v`` are found by Lanczos (ARPACK) with ``O(n^2)``
matrix-vector products, no ``n x n`` inverse and no ``O(n^3)`` product. ``w = M^{-1/2} v``. The
dense reference path (``eigen_solver="dense"``) solves the same pencil with
``scipy.linalg.eigh``; both go through :func:`shiftlearn._linalg.leading_eigh`.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import LinearOperator

from .._array_api import from_numpy, is_foreign_array, to_numpy
from .._constraints import BandwidthSpec, Interval, StrOptions
from .._linalg import (
    ARPACK_TOL,
    leading_eigh,
    leading_eigh_array_api,
    lowrank_inv_sqrt_weights,
)
from .._resources import check_dense_memory
from ..kernels import BANDWIDTH_RULES, KERNELS, mmd_vector
from ._base import (
    BaseSubspaceTransformer,
    check_kernel_varies,
    clip_n_components,
    resolve_tca_mu,
    zero_kernel_error,
)
from ._memory import FitMemory

__all__ = ["TCA", "tca_components", "tca_components_factored"]


def tca_components(
    K: np.ndarray,
    ell: np.ndarray,
    n_components: int,
    mu: float = 1.0,
    *,
    eigen_solver: str = "auto",
    tol: float = ARPACK_TOL,
    random_state=0,
    overwrite_K: bool = False,
    reg_diagonal: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leading TCA eigenpairs of ``K H K w = lambda (I + mu K l l^T K) w``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Uncentred training kernel.
    ell : ndarray of shape (n,) or (n, r)
        MMD vector (``1/n_s`` source, ``-1/n_t`` target), or ``r`` columns whose outer
        products sum to the MMD matrix, ``L = ell ell^T`` (JDA's marginal and per-class
        vectors, :class:`~shiftlearn.adaptation.JDA`); the denominator is then
        ``I + mu K ell ell^T K``, identity plus rank ``r``.
    n_components : int
    mu : float
        Weight of the MMD term (Pan et al.); ``mu = 1 / gamma`` of the RF-TCA paper.
    eigen_solver : {"auto", "arpack", "dense"}
        ``"arpack"``: Lanczos on the reduced standard problem (``O(n^2)`` per iteration);
        ``"dense"``: ``scipy.linalg.eigh`` on the explicit pencil (``O(n^3)``);
        ``"auto"``: dense when ``n <= 400`` or ``n_components > n / 5``, else arpack.
    tol : float
        ARPACK relative tolerance of the eigenvalues (:data:`shiftlearn._linalg.ARPACK_TOL`;
        0 = machine precision).
    random_state : int
        Seed of ARPACK's start vector (results are deterministic).
    overwrite_K : bool
        Allow ``K`` to be overwritten (saves one n×n copy).
    reg_diagonal : ndarray of shape (n,) or None
        Positive diagonal ``g`` replacing the identity of the regulariser, so that the
        denominator is ``diag(g) + mu K L K`` (TJM's reweighting matrix,
        :class:`~shiftlearn.adaptation.TJM`); ``None`` is the identity. The Lanczos route
        scales the columns of ``H K`` and the rows of ``K ell`` by ``g^{-1/2}``
        (``B = diag(g)^{-1/2} (I + mu v v^T)^{-1/2}``, ``v = g^{-1/2} K ell``, has
        ``B B^T = (diag(g) + mu K L K)^{-1}``), at no extra cost.

    Returns
    -------
    eigenvalues : ndarray of shape (k,), descending
    W : ndarray of shape (n, k), normalised ``W^T (diag(g) + mu K l l^T K) W = I``.
    KW : ndarray of shape (n, k)
        The training embedding ``K W``.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rbf_kernel
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> ell = np.r_[np.full(15, 1 / 15), np.full(15, -1 / 15)]
    >>> w, W, KW = tca_components(rbf_kernel(X, sigma=1.0), ell, 3)
    >>> bool(np.all(np.diff(w) <= 0))
    True
    """
    n = K.shape[0]
    eigen_solver = resolve_tca_solver(eigen_solver, n, n_components)
    if ell.ndim == 2 and ell.shape[1] == 1:
        ell = ell[:, 0]                # one MMD vector: TCA's rank-one path, bit for bit
    u = K @ ell
    col_mean = K.mean(axis=0)
    if eigen_solver == "dense":
        HK = K - col_mean[None, :]
        A = HK.T @ HK
        M = mu * (np.outer(u, u) if u.ndim == 1 else u @ u.T)
        M.flat[:: n + 1] += 1.0 if reg_diagonal is None else reg_diagonal
        w, W = leading_eigh(A, n_components, M, overwrite=True, owner="TCA")
        return w, W, HK @ W + (col_mean @ W)[None, :]
    G = K if overwrite_K else K.copy()
    G -= col_mean[None, :]             # H K
    if reg_diagonal is not None:       # H K diag(g)^{-1/2} and g^{-1/2} K ell
        r = 1.0 / np.sqrt(reg_diagonal)
        G *= r[None, :]
        u = u * (r if u.ndim == 1 else r[:, None])
    if u.ndim == 1:
        # M^{-1/2} = I + alpha u u^T  for  M = I + mu u u^T
        uu = float(u @ u)
        alpha = float(lowrank_inv_sqrt_weights(uu, mu)[0])
        Gu = G @ u                     # G = H K M^{-1/2} = H K + alpha (H K u) u^T
        if alpha:
            scipy.linalg.blas.dger(alpha, u, Gu, a=G.T, overwrite_a=True)
    else:
        # u u^T = F F^T with orthogonal columns F = P S (thin SVD), so
        # M^{-1/2} = I + F diag(a) F^T and G = H K + (H K F) diag(a) F^T
        P, S, _ = np.linalg.svd(u, full_matrices=False)
        u = P * S
        a = lowrank_inv_sqrt_weights(S**2, mu)
        G += ((G @ u) * a[None, :]) @ u.T
        alpha = a

    def matvec(v):
        v = np.asarray(v).ravel()
        return G.T @ (G @ v)

    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    w, V = leading_eigh(op, n_components, solver="arpack", tol=tol, random_state=random_state,
                        owner="TCA")
    if u.ndim == 1:
        W = V + alpha * np.outer(u, u @ V)  # w = M^{-1/2} v
    else:
        W = V + u @ (alpha[:, None] * (u.T @ V))
    if reg_diagonal is not None:
        W *= r[:, None]                # w = diag(g)^{-1/2} M'^{-1/2} v
    # K W = H K W + 1 (col_mean^T W) and H K W = H K M^{-1/2} V = G V
    return w, W, G @ V + (col_mean @ W)[None, :]


def tca_components_factored(F: np.ndarray, ell: np.ndarray, n_components: int,
                            mu: float = 1.0, *, svd: tuple | None = None
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`tca_components` for a kernel given by a factor, ``K = F F^T`` (the linear
    kernel: ``F = X``), without forming ``K``.

    For a nonzero eigenvalue, ``lambda w = K H K w - lambda mu K L K w`` puts ``w`` in the
    range of ``K``, spanned by ``U`` of the thin SVD ``F = U diag(s) V^T``; with ``w = U c``
    the problem becomes the ``r x r`` pencil
    ``S H' S c = lambda (I + mu S (U^T ell)(U^T ell)^T S) c`` with ``S = diag(s^2)`` and
    ``H' = U^T H U = I - (U^T 1)(U^T 1)^T / n``, and ``w^T (I + mu K L K) w = c^T B' c``: the
    same eigenpairs as the ``n x n`` problem, ``n_components <= r = min(n, d)``.
    ``O(n d^2 + d^3)`` time, ``O(n d)`` memory, instead of ``O(n^2 d + n^3)`` and ``O(n^2)``.

    ``svd``: ``(U, s)`` of ``np.linalg.svd(F, full_matrices=False)``, when the caller solves
    several problems on the same rows (JDA's rounds change ``ell`` only).

    Returns ``(eigenvalues, W, K W)`` as :func:`tca_components`.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import linear_kernel
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> ell = np.r_[np.full(20, 1 / 20), np.full(20, -1 / 20)]
    >>> w, W, KW = tca_components_factored(X, ell, 2)
    >>> w0, W0, KW0 = tca_components(linear_kernel(X), ell, 2, eigen_solver="dense")
    >>> bool(np.allclose(w, w0) and np.allclose(np.abs(KW), np.abs(KW0)))
    True
    """
    n = F.shape[0]
    U, sv = np.linalg.svd(F, full_matrices=False)[:2] if svd is None else svd
    r = sv.shape[0]
    if n_components > r:
        raise ValueError(f"tca_components_factored: n_components={n_components} exceeds the "
                         f"factor's rank bound {r}; use tca_components on the kernel.")
    s2 = sv ** 2
    one = U.sum(axis=0)                                  # U^T 1
    A = -np.outer(one, one) / n
    A.flat[:: r + 1] += 1.0
    A = s2[:, None] * A * s2[None, :]                    # S H' S
    g = U.T @ ell                                        # U^T ell, (r,) or (r, m)
    sg = s2[:, None] * (g[:, None] if g.ndim == 1 else g)
    B = mu * (sg @ sg.T)
    B.flat[:: r + 1] += 1.0
    w, C = leading_eigh(A, n_components, B, overwrite=True, owner="TCA")
    return w, U @ C, U @ (s2[:, None] * C)


#: bytes of one row block of the rank-one update of the array-API route (no n x n temporary)
_XP_BLOCK_BYTES = 2**28


def tca_components_array_api(K, ell, n_components: int, mu: float = 1.0, *,
                             eigen_solver: str = "auto", random_state=0,
                             overwrite_K: bool = True):
    """:func:`tca_components` for a kernel of another array-API namespace (torch, CuPy, ...),
    on its device and in its dtype; with ``overwrite_K`` (default) ``K`` becomes ``G``.

    The same reduced standard problem ``G^T G v = lambda v`` with ``G = H K M^{-1/2}`` (the
    closed-form ``M^{-1/2} = I + F diag(a) F^T``, ``F = K ell`` orthogonalised by a thin SVD
    when ``ell`` has several columns, applied in row blocks), solved by
    ``xp.linalg.eigh`` of ``G^T G`` (``"dense"``, ``O(n^3)``) or by block subspace iteration
    with Rayleigh-Ritz on ``v -> G^T (G v)`` (``"arpack"``: ARPACK is CPU-only, this is its
    counterpart, ``O(n^2 k)`` per iteration; :func:`shiftlearn._linalg.leading_eigh_array_api`).
    ``"auto"`` chooses as :func:`resolve_tca_solver`. ``ell``: one MMD vector, or ``r``
    columns (JDA's marginal and class vectors).

    Returns ``(eigenvalues, W, K W)`` as :func:`tca_components`, arrays of ``K``'s namespace.
    """
    import array_api_compat

    xp = array_api_compat.array_namespace(K)
    n = K.shape[0]
    solver = resolve_tca_solver(eigen_solver, n, n_components)
    if ell.ndim == 1:
        ell = ell[:, None]
    F = K @ ell
    col_mean = xp.mean(K, axis=0)
    G = K if overwrite_K else xp.asarray(K, copy=True)
    G -= col_mean[None, :]                      # H K
    if F.shape[1] == 1:
        sq = np.array([float(xp.vecdot(F[:, 0], F[:, 0]))])
    else:                                       # F F^T with orthogonal columns
        P, S, _ = xp.linalg.svd(F, full_matrices=False)
        F = P * S[None, :]
        sq = to_numpy(S).astype(np.float64) ** 2
    a = from_numpy(lowrank_inv_sqrt_weights(sq, mu), K)
    GF = (G @ F) * a[None, :]
    step = max(1, _XP_BLOCK_BYTES // (n * 8))
    for s in range(0, n, step):                 # G += (G F) diag(a) F^T
        e = min(n, s + step)
        G[s:e, :] += GF[s:e, :] @ F.T
    if solver == "dense":
        w, V = leading_eigh_array_api(G.T @ G, n_components, solver="dense")
    else:
        def matmat(Q):
            return G.T @ (G @ Q)
        w, V = leading_eigh_array_api(None, n_components, solver="subspace", matmat=matmat,
                                      like=G, random_state=random_state, owner="TCA")
    W = V + F @ (a[:, None] * (F.T @ V))        # w = M^{-1/2} v
    return w, W, G @ V + (col_mean @ W)[None, :]


def resolve_tca_solver(eigen_solver: str, n: int, n_components: int) -> str:
    """The solver :func:`tca_components` uses: ``"auto"`` is ``"dense"`` when ``n <= 400`` or
    ``n_components > n / 5``, else ``"arpack"``; ARPACK cannot return ``n - 1`` or more pairs,
    so those go dense too."""
    if eigen_solver not in ("auto", "arpack", "dense"):
        raise ValueError(f"eigen_solver must be 'auto', 'arpack' or 'dense', got {eigen_solver!r}.")
    if eigen_solver == "auto":
        eigen_solver = "dense" if (n <= 400 or n_components > n / 5) else "arpack"
    if eigen_solver == "arpack" and n_components >= n - 1:
        eigen_solver = "dense"
    return eigen_solver


#: Peak numpy memory of ``TCA.fit`` in n x n float64 matrices, per solver (tracemalloc at
#: n = 1,500: 1.12 with ARPACK, which overwrites the kernel in place, and 6.04 dense: kernel,
#: H K, the two sides of the pencil and LAPACK's copies); ``tests/adaptation/test_tca.py``
#: checks them.
FIT_MATRICES = {"arpack": 1.2, "dense": 6.1}


class TCA(BaseSubspaceTransformer):
    """Transfer Component Analysis (Pan et al. 2011), exact kernel version.

    Learns ``k`` transfer components ``W`` (n_train × k) that keep the variance of the embedded
    data (``W^T K H K W = I``) while shrinking the MMD between the pooled source rows
    (``sample_domain > 0``) and the pooled target rows (``< 0``). Embedding of any row ``x``:
    ``z(x) = [k(x, x_1), ..., k(x, x_n)] W``.

    Parameters
    ----------
    n_components : int, default=30
        Number of transfer components ``k``.
    mu : float, default=1.0
        Weight of the MMD term ``mu tr(W^T K L K W)`` as in Pan et al. (larger = stronger
        alignment). The RF-TCA paper's regularisation weight ``gamma`` on ``tr(W^T W)`` is
        ``1 / mu`` (same components).
    kernel : {"rbf", "laplacian", "cauchy", "linear"} or callable, default="rbf"
        Kernel from :mod:`shiftlearn.kernels` (``kernel_matrix``); the shift-invariant ones
        (``"rbf"``, ``"laplacian"``, ``"cauchy"``) take ``bandwidth``.
    bandwidth : float or str (a rule of BANDWIDTH_RULES, "<f>*<rule>"), default="median"
        RBF bandwidth ``sigma`` (``exp(-d^2 / (2 sigma^2))``) or the rule applied to the pooled
        training rows (sources and targets).
    scaling : {"eigh", "constraint"}, default="eigh"
        Column scale of ``W`` (the eigenproblem fixes directions only). ``"eigh"`` keeps the
        solver's ``W^T (I + mu K L K) W = I``: component ``j`` has sum of squares (about its
        mean) ``lambda_j`` on the training rows, so leading components dominate distances
        (as in the reference MATLAB TCA code). ``"constraint"`` rescales by
        ``lambda^{-1/2}`` to Pan et al.'s ``W^T K H K W = I`` (every centred component of unit
        norm, i.e. whitened), which gives weak trailing components the same weight as the
        leading ones (usually worse for 1NN, see ``docs/adaptation.md``).
    eigen_solver : {"auto", "arpack", "dense"}, default="auto"
        See :func:`tca_components`; both solve the same symmetric-definite problem.
    memory : FitMemory or None, default=None
        Where fits on the same rows share work (:class:`~shiftlearn.adaptation.FitMemory`):
        the bandwidth, the kernel matrix (across ``mu``, ``scaling`` and ``n_components``) and
        the eigen-solve of each ``mu`` for the most components asked so far, of which a smaller
        ``n_components`` is a truncation. Same results (up to sign, to the solver's
        tolerance); ``None`` keeps nothing.

    Attributes
    ----------
    n_components_ : int
        Components used: ``n_components``, lowered with a
        :class:`~shiftlearn.adaptation._base.ComponentsClippedWarning` to ``n_train - 1`` (the
        rank of the centred kernel) on smaller data.
    sigma_ : float or None
        Resolved bandwidth (``None`` for non-RBF kernels).
    mu_ : float
        Effective MMD weight.
    eigenvalues_ : ndarray of shape ``(n_components_,)``
        Generalised eigenvalues, descending.
    components_ : ndarray of shape ``(n_train, n_components_)``
        ``W`` (already scaled).
    X_fit_ : ndarray of shape (n_train, n_features)
        Training rows (needed for the out-of-sample kernel).
    mmd_ : float
        ``l^T K l`` before projection (biased MMD² of the kernel).

    Notes
    -----
    Multiple source (or target) domains are pooled into one source (one target)
    sample (Pan et al.'s two-sample ``L``); with only one side present the MMD term vanishes and
    TCA reduces to kernel PCA with ``W^T W`` regularisation. The embedding is not re-centred
    (``K W`` for training rows, as Pan et al.); centring would only translate every row.

    Cost: ``n`` training rows of ``d`` columns, ``k`` components: the kernel ``O(n^2 d)``;
    the solve ``O(n^2 k)`` per Lanczos iteration (ARPACK) or ``O(n^3)`` (dense); ``transform``
    of ``m`` rows ``O(m n (d + k))``. The kernel has ``n x n`` entries whatever ``d`` is, so
    ``d >> n`` costs only the kernel's ``O(n^2 d)``. With the linear kernel and fewer
    columns than rows the fit works in the span of the columns instead
    (:func:`tca_components_factored`: ``O(n d^2 + d^3)``, no ``n x n`` matrix, the same
    eigenpairs; ``eigen_solver`` and ``memory`` are then not used), and ``n_components`` is
    clipped to ``d``, the rank of that kernel. For ``n`` in the tens of
    thousands with another kernel use :class:`~shiftlearn.adaptation.RFTCA`
    (``O(n N d + n N^2 + N^3)``).

    Memory: the fit needs ``n_train x n_train`` float64 matrices (about ``1.2`` of them with
    ARPACK, ``6.1`` with the dense solver, :data:`FIT_MATRICES`; one more with ``memory``,
    which keeps the kernel). A fit that would exceed the
    physical memory (or :data:`~shiftlearn._resources.MEMORY_BUDGET`) is refused before
    anything is allocated, with a ``ValueError`` that names the GiB and points to
    :class:`~shiftlearn.adaptation.RFTCA` (memory independent of ``n``). ``transform`` forms the
    out-of-sample kernel in row blocks of about 64 MB.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.adaptation import TCA
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 1.0])
    >>> sd = np.r_[np.ones(40, int), -2 * np.ones(40, int)]
    >>> Z = TCA(n_components=2).fit(X, sample_domain=sd).transform(X)
    >>> Z.shape
    (80, 2)
    """

    _component_columns = ("components_",)
    _array_api_support = True
    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, None, closed="left")],
        "kernel": [StrOptions(set(KERNELS)), callable],
        "bandwidth": [BandwidthSpec(BANDWIDTH_RULES)],
        "scaling": [StrOptions({"eigh", "constraint"})],
        "eigen_solver": [StrOptions({"auto", "arpack", "dense"})],
        "memory": [FitMemory, None],
    }

    def __init__(self, n_components=30, mu=1.0, kernel="rbf", bandwidth="median",
                 scaling="eigh", eigen_solver="auto", memory=None):
        self.n_components = n_components
        self.mu = mu
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.scaling = scaling
        self.eigen_solver = eigen_solver
        self.memory = memory

    def _effective_mu(self) -> float:
        return resolve_tca_mu(self.mu)

    def _fit_kernel(self, X, sample_domain, owner: str, extra_matrices: float,
                    alternative: str):
        """The first steps of TCA's fit, shared with JDA's: ``n_components`` clipped, the
        solver, the memory check (:data:`FIT_MATRICES` of the solver plus ``extra_matrices``),
        the bandwidth and the training kernel (from ``memory`` when it is kept there).

        Returns ``(k, solver, K, kept, data)``: ``kept`` says the kernel lives in ``memory``
        (so it must not be overwritten), ``data`` is the memory's fingerprint of the rows and
        domains (``None`` without memory or for a callable kernel)."""
        n = X.shape[0]
        # KHK has rank <= n - 1 (H removes the constant direction)
        k = clip_n_components(self.n_components, n - 1,
                              f"the centred kernel of {n} training rows has rank <= {n - 1}",
                              owner)
        solver = resolve_tca_solver(self.eigen_solver, n, k)
        mem = self.memory
        check_dense_memory(n, n, FIT_MATRICES[solver] + extra_matrices,
                           f"{owner}.fit on {n} rows (eigen_solver={solver!r})", alternative)
        rows = self._rows_key(X)
        self.sigma_ = self._resolve_sigma(X, self.kernel, rows)
        kpart = self._kernel_key()
        data = kkey = None
        if mem is not None and kpart is not None:
            data = mem.fingerprint(rows, sample_domain)
            kkey = ("kernel", rows, *kpart)    # the rows' kernel: any domains, any labels
        K = None if kkey is None else mem.get(kkey)
        if K is None:
            K = self._kernel(X)
            kept = kkey is not None and mem.put(kkey, K)
        else:
            kept = True
        check_kernel_varies(K, owner)        # H K = 0: every row has the same kernel row
        return k, solver, K, kept, data

    def _factored_k(self, X, owner: str) -> int | None:
        """``n_components`` (clipped) when the fit takes the factored route: the linear kernel
        of fewer columns than rows (``K = X X^T``, :func:`tca_components_factored`); ``None``
        otherwise (the kernel route). The centred linear kernel has rank ``<= d``, so more
        components than columns are clipped to ``d``, as more than ``n - 1`` are on any
        kernel: the solver's vectors beyond the rank span a null space, not components."""
        n, d = X.shape
        if self.kernel != "linear" or d >= n:
            return None
        k = clip_n_components(self.n_components, d,
                              f"the linear kernel of {d} features has rank <= {d}", owner)
        self.sigma_ = None
        if np.ptp(X, axis=0).max() == 0:        # every row the same: H K = 0
            raise zero_kernel_error(owner)
        return k

    def _scaled(self, w, W, KW):
        """``W`` and ``K W`` in the column scale of ``scaling`` (``"constraint"``: times
        ``lambda^{-1/2}``, eigenvalues floored at ``1e-12`` of the largest)."""
        if self.scaling == "constraint" and is_foreign_array(w):
            import array_api_compat

            xp = array_api_compat.array_namespace(w)
            scale = 1.0 / xp.sqrt(xp.clip(w, min=1e-12 * max(float(w[0]), 1e-300)))
            return W * scale[None, :], KW * scale[None, :]
        if self.scaling == "constraint":
            scale = 1.0 / np.sqrt(np.maximum(w, 1e-12 * max(float(w[0]), 1e-300)))
            W = W * scale[None, :]
            KW *= scale[None, :]
        return W, KW

    def _set_solution(self, mu, w, W, KW, X, k):
        """Keep the fitted state (the end of every fit of TCA and JDA); returns ``K W``, the
        training embedding."""
        self.mu_ = mu
        self.eigenvalues_ = w
        self.components_ = W
        self.X_fit_ = X
        self.n_components_ = k
        return KW

    def _kernel_array_api(self, X, owner: str):
        """``(k, K)``: ``n_components`` clipped and the training kernel, on ``X``'s device
        (the array-API counterpart of :meth:`_fit_kernel`; ``memory`` is not used)."""
        n = X.shape[0]
        k = clip_n_components(self.n_components, n - 1,
                              f"the centred kernel of {n} training rows has rank <= {n - 1}",
                              owner)
        self.sigma_ = self._resolve_sigma(X, self.kernel)
        K = self._kernel(X)
        check_kernel_varies(K, owner)
        return k, K

    def _fit_array_api(self, X, sample_domain):
        """The fit for arrays of another namespace: the kernel, the solve and the fitted
        arrays stay on ``X``'s device, in its dtype (``memory`` is not used)."""
        import array_api_compat

        xp = array_api_compat.array_namespace(X)
        mu = self._effective_mu()
        k, K = self._kernel_array_api(X, "TCA")
        ell = from_numpy(mmd_vector(sample_domain), X)
        self.mmd_ = float(xp.vecdot(ell, K @ ell))
        w, W, KW = tca_components_array_api(K, ell, k, mu, eigen_solver=self.eigen_solver)
        W, KW = self._scaled(w, W, KW)
        return self._set_solution(mu, w, W, KW, X, k)

    def _fit(self, X, y, sample_domain):
        if is_foreign_array(X):
            return self._fit_array_api(X, sample_domain)
        mu = self._effective_mu()
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        k = self._factored_k(X, "TCA")
        if k is not None:                   # linear kernel, n > d: in the span of the columns
            ell = mmd_vector(sample_domain)
            g = X.T @ ell
            self.mmd_ = float(g @ g)
            w, W, KW = tca_components_factored(X, ell, k, mu)
            W, KW = self._scaled(w, W, KW)
            return self._set_solution(mu, w, W, KW, X, k)
        mem = self.memory
        k, solver, K, kept, data = self._fit_kernel(
            X, sample_domain, "TCA", mem is not None,
            "RFTCA (random-feature TCA, the same problem with random Fourier features)")
        skey = (None if data is None
                else ("tca-solve", data, *self._kernel_key(), mu, self.eigen_solver))
        ell = mmd_vector(sample_domain)
        self.mmd_ = float(ell @ K @ ell)

        def solve(k):                       # a kernel kept in memory must not be overwritten
            return tca_components(K, ell, k, mu, overwrite_K=not kept,
                                  eigen_solver=resolve_tca_solver(self.eigen_solver, n, k))

        w, W, KW = solve(k) if mem is None else mem.nested_solve(skey, k, solve, family="TCA",
                                                                 limit=n - 1)
        K = None                            # free it before the scaling (unless remembered)
        W, KW = self._scaled(w, W, KW)
        return self._set_solution(mu, w, W, KW, X, k)

    def _transform(self, X):
        X = self._like_fitted(X, self.X_fit_)
        return self._embed_blocks(X, lambda Kt: Kt @ self.components_, self.components_.shape[1])

