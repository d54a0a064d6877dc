"""Kernel-mean embeddings of tasks and the marginal-transfer product kernel (plain functions).

Blanchard et al. (JMLR 2021), eqs. (8)-(12), (30)-(33). A *task* is the set of rows sharing a
task index ``t`` (``0 .. n_tasks - 1``). Everything kernel-related comes from
:mod:`shiftlearn.kernels` (``exp(-||a - b||^2 / (2 sigma^2))`` convention).

* exact: ``<Psi(P_i), Psi(P_j)> = mean_{a in i, b in j} k'(x_a, x_b)`` (V-statistic, the
  diagonal included, eq. 30), ``k_P = exp(-||Psi_i - Psi_j||^2 / (2 sigma_P^2))``, and
  ``k((P_i, x), (P_j, x')) = k_P(P_i, P_j) k_X(x, x')``.
* random features (App. A.6.1): ``Z_P = mean_a z'(x_a)`` (eq. 31), then one Gaussian RFF map of
  ``u = (Z_P / sigma_P, x / sigma_X)`` with unit bandwidth (eq. 33 in the equivalent scaled
  form of the note). The ``Z_P`` part of the projection is constant inside a task, so it is
  computed once per task and enters :func:`shiftlearn.kernels.rff_map` as an extra input
  column of ones (``O(n (d + 1) Q)`` per task instead of ``O(n (2L + d) Q)``).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from ..kernels import (
    DEFAULT_CHUNK_BYTES,
    domain_mean_matrix,
    kernel_matrix,
    rff_chunks,
    rff_map,
    rff_mean,
    sigma_from_sq_distances,
)

__all__ = [
    "embedding_sq_distances",
    "exact_embedding_gram",
    "gaussian_from_sq_distances",
    "product_kernel",
    "rff_embeddings",
    "rff_product_features",
    "TASK_KERNELS",
    "canonical_task_kernel",
    "task_kernel",
    "task_kernel_sigma",
    "task_rows",
    "landmark_embeddings",
]


#: target size (bytes) of one row chunk of the point kernel in :func:`exact_embedding_gram`
#: (the library's one chunk budget, :data:`shiftlearn.kernels.DEFAULT_CHUNK_BYTES`, 64 MB)
GRAM_CHUNK_BYTES = DEFAULT_CHUNK_BYTES


def exact_embedding_gram(X: np.ndarray, task: np.ndarray, n_tasks: int,
                         Y: np.ndarray | None = None, task_y: np.ndarray | None = None,
                         n_tasks_y: int | None = None, *, kernel: str = "rbf",
                         sigma: float | None = None, chunk_rows: int | None = None
                         ) -> np.ndarray:
    """Inner products of empirical kernel mean embeddings, eq. (30).

    ``G[i, j] = (1 / (n_i m_j)) sum_{a in task i of X} sum_{b in task j of Y} k'(x_a, y_b)``.
    ``Y=None`` uses ``X`` (the symmetric training matrix). Rows of ``X`` are processed in
    chunks of ``chunk_rows`` so the memory is ``O(chunk_rows * n_Y)``; ``None`` keeps a chunk
    of the kernel near :data:`GRAM_CHUNK_BYTES` (at most 2,048 rows), whatever ``n_Y``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [0.0], [1.0]]); t = np.array([0, 0, 1])
    >>> exact_embedding_gram(X, t, 2, kernel="linear")
    array([[0., 0.],
           [0., 1.]])
    """
    if Y is None:
        Y, task_y, n_tasks_y = X, task, n_tasks
    A_x = domain_mean_matrix(task, n_tasks)[0]       # A^T K A: mean kernel values of tasks
    if kernel == "linear":  # Psi(P) is the mean
        A_y = domain_mean_matrix(task_y, n_tasks_y)[0]
        return (A_x.T @ X) @ (A_y.T @ Y).T
    # K A_y (each row's mean kernel value per task of Y) by summing each task's contiguous
    # columns (Y sorted by task once): O(chunk n_Y) per chunk, not the O(chunk n_Y N_Y) of a
    # product with A_y (8,192 rows, 256 tasks: 0.45 s instead of 1.24 s)
    order = np.argsort(np.asarray(task_y), kind="stable")
    present, starts, counts = np.unique(np.asarray(task_y)[order], return_index=True,
                                        return_counts=True)
    Y = Y[order]
    G = np.zeros((n_tasks, n_tasks_y))
    if chunk_rows is None:
        chunk_rows = int(min(2048, max(1, GRAM_CHUNK_BYTES // (8 * max(1, Y.shape[0])))))
    for start in range(0, X.shape[0], chunk_rows):
        sl = slice(start, min(start + chunk_rows, X.shape[0]))
        S = np.add.reduceat(kernel_matrix(X[sl], Y, kernel=kernel, sigma=sigma), starts, axis=1)
        G[:, present] += A_x[sl].T @ (S / counts)
    return G


def landmark_embeddings(X: np.ndarray, task: np.ndarray, n_tasks: int, landmarks: np.ndarray,
                        chol: np.ndarray, *, kernel: str = "rbf", sigma: float | None = None
                        ) -> np.ndarray:
    """Nyström mean embeddings, shape ``(n_tasks, r)``: the task means of the features
    ``R^{-1} k'(landmarks, x)`` (``chol = R``, the pivoted Cholesky factor of the landmarks'
    kernel, :func:`~shiftlearn.generalization._solvers.landmark_factor`), so that
    ``Z_i . Z_j`` approximates ``<Psi(P_i), Psi(P_j)>`` of eq. (30) in ``O(n r)``; with every
    training row a landmark it is exact (to the factor's pivot tolerance).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [3.0]]); t = np.array([0, 0, 1])
    >>> Z = landmark_embeddings(X, t, 2, X, np.linalg.cholesky(X @ X.T + np.eye(3)),
    ...                         kernel="linear")
    >>> Z.shape
    (2, 3)
    """
    A = domain_mean_matrix(task, n_tasks)[0]
    Z = np.zeros((n_tasks, chol.shape[0]))
    rows = int(max(1, GRAM_CHUNK_BYTES // (8 * max(1, chol.shape[0]))))  # a 64 MB (r, rows)
    for start in range(0, X.shape[0], rows):
        sl = slice(start, min(start + rows, X.shape[0]))
        F = solve_triangular(chol, kernel_matrix(landmarks, X[sl], kernel=kernel, sigma=sigma),
                             lower=True, check_finite=False)      # (r, rows)
        Z += (F @ A[sl]).T
    return Z


def embedding_sq_distances(G_xy: np.ndarray, diag_x: np.ndarray, diag_y: np.ndarray
                           ) -> np.ndarray:
    """``||Psi_i - Psi_j||^2 = G_ii + G_jj - 2 G_ij`` (biased MMD^2), clipped at 0."""
    D = diag_x[:, None] + diag_y[None, :] - 2.0 * G_xy
    np.maximum(D, 0.0, out=D)
    return D


def gaussian_from_sq_distances(D2: np.ndarray, sigma: float) -> np.ndarray:
    """``exp(-D2 / (2 sigma^2))``: the Gaussian-like kernel on embeddings, eq. (11)."""
    return np.exp(-D2 / (2.0 * sigma**2))


#: the kernels ``K`` on embeddings, ``k_P(P, P') = K(Psi(P), Psi(P'))`` (eq. 10)
TASK_KERNELS = ("gaussian", "exponential", "polynomial", "indicator")


def canonical_task_kernel(kind: str, normalize: bool) -> str:
    """The kernel actually computed: the *normalised* exponential kernel is the Gaussian one
    (paper §6.1: ``exp(<v, v'>/s^2) / sqrt(exp(||v||^2/s^2) exp(||v'||^2/s^2)) =
    exp(-||v - v'||^2 / (2 s^2))``), so it is computed (and its bandwidth rule applied) as the
    Gaussian; the Gaussian and the indicator are normalised already."""
    return "gaussian" if kind == "exponential" and normalize else kind


def task_kernel(G: np.ndarray, diag_a: np.ndarray, diag_b: np.ndarray, *,
                kind: str = "gaussian", sigma: float | None = 1.0, degree: int = 2,
                normalize: bool = False, tau: float = 0.0,
                same: np.ndarray | None = None) -> np.ndarray:
    """``k_P`` between two sets of tasks from their embeddings' inner products.

    ``G[i, j] = <Psi_i, Psi_j>`` (eq. 30), ``diag_a[i] = ||Psi_i||^2``, ``diag_b[j] =
    ||Psi_j||^2``. ``K`` is one of (``s`` = ``sigma``):

    * ``"gaussian"``, eq. (11): ``exp(-||Psi_i - Psi_j||^2 / (2 s^2))``;
    * ``"exponential"``, eq. (12) with ``G(t) = exp(t / s^2)``: ``exp(<Psi_i, Psi_j> / s^2)``;
    * ``"polynomial"``, eq. (12) with ``G(t) = (1 + t / s^2)^degree``;
    * ``"indicator"``, §5.2: ``1`` if the tasks are the same (``same[i, j]``), else ``0``.

    ``normalize=True`` applies the normalised kernel of §6.1,
    ``K*(v, v') = K(v, v') / sqrt(K(v, v) K(v', v'))`` (it changes the exponential and
    polynomial kernels only). Finally ``k_P = tau + (1 - tau) K`` (§5.2): ``tau = 1`` is
    pooling (``k_P = 1``), ``tau = 0`` is ``K`` itself; with ``kind="indicator"`` this is the
    paper's family ``k_P = 1`` on the same task, ``tau`` otherwise (``tau = 0``: one
    independent machine per task). Overflow of the unnormalised exponential or polynomial
    kernel is a ``ValueError`` that names the fix.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.array([[1.0, 0.5], [0.5, 2.0]]); d = np.diag(G)
    >>> np.round(task_kernel(G, d, d, sigma=1.0), 4)          # exp(-(1 + 2 - 1) / 2)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    >>> bool(np.allclose(task_kernel(G, d, d, kind="exponential", normalize=True),
    ...                  task_kernel(G, d, d)))
    True
    >>> task_kernel(G, d, d, kind="indicator", tau=0.3, same=np.eye(2, dtype=bool))
    array([[1. , 0.3],
           [0.3, 1. ]])
    """
    kind = canonical_task_kernel(kind, normalize)
    if kind == "gaussian":
        K = gaussian_from_sq_distances(embedding_sq_distances(G, diag_a, diag_b), sigma)
    elif kind == "indicator":
        if same is None:
            raise ValueError("The indicator kernel needs same[i, j] (same task or not).")
        K = np.asarray(same, dtype=np.float64)
    elif kind == "exponential":
        E = np.asarray(G, dtype=np.float64) / sigma**2
        top = float(np.max(E, initial=0.0))
        if not top <= 700.0:
            raise ValueError(
                f"kernel_p='exponential' overflows: <Psi_i, Psi_j> / sigma_p^2 reaches "
                f"{top:.3g} (exp overflows float64 above 709). Use normalize_p=True (the "
                "normalised exponential kernel is the Gaussian one), a larger sigma_p, or "
                "rescale X.")
        K = np.exp(E)
    elif kind == "polynomial":
        B = 1.0 + np.asarray(G, dtype=np.float64) / sigma**2
        if normalize:
            B = B / np.sqrt(np.outer(1.0 + diag_a / sigma**2, 1.0 + diag_b / sigma**2))
        with np.errstate(over="ignore"):
            K = B**degree
        if not np.all(np.isfinite(K)):
            raise ValueError(
                f"kernel_p='polynomial' overflows float64 ((1 + <Psi_i, Psi_j> / sigma_p^2)^"
                f"{degree}): use normalize_p=True, a larger sigma_p, a lower degree_p, or "
                "rescale X.")
    else:
        raise ValueError(f"kind must be one of {TASK_KERNELS}, got {kind!r}.")
    if tau:
        K = tau + (1.0 - tau) * K
    return K


def task_kernel_sigma(G: np.ndarray, D2: np.ndarray, kind: str) -> float:
    """The ``"median"`` rule of ``sigma_P`` for a task kernel on the training tasks' ``G``
    (embedding inner products) and ``D2`` (squared embedding distances): the argument of the
    kernel is 1 at the median pair of distinct tasks. Gaussian: the median embedding distance
    (:func:`shiftlearn.kernels.sigma_from_sq_distances`); exponential and polynomial: ``sqrt(median
    |<Psi_i, Psi_j>|)`` over pairs ``i < j`` (with one task: ``sqrt(||Psi||^2)``); 1.0 when
    degenerate (zero or non-finite) and for the indicator, which has no bandwidth.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.array([[4.0, 1.0, 9.0], [1.0, 1.0, 4.0], [9.0, 4.0, 9.0]])
    >>> task_kernel_sigma(G, None, "exponential")             # sqrt(median(1, 9, 4))
    2.0
    """
    if kind == "gaussian":
        return sigma_from_sq_distances(D2)
    if kind == "indicator":
        return 1.0
    n = G.shape[0]
    vals = np.abs(G[np.triu_indices(n, k=1)]) if n >= 2 else np.abs(np.diag(G))
    m = float(np.median(vals)) if vals.size else 0.0
    return float(np.sqrt(m)) if np.isfinite(m) and m > 0 else 1.0


def product_kernel(X: np.ndarray, task: np.ndarray, KP: np.ndarray, Y: np.ndarray | None = None,
                   task_y: np.ndarray | None = None, *, kernel: str = "rbf",
                   sigma: float | None = None, chunk_rows: int = 2048) -> np.ndarray:
    """``K[a, b] = KP[task[a], task_y[b]] * k_X(x_a, y_b)`` (eq. 8), built row-chunk by chunk.

    ``KP`` is the task-level kernel matrix (all ones for pooling).
    """
    if Y is None:
        Y, task_y = X, task
    K = kernel_matrix(X, Y, kernel=kernel, sigma=sigma)
    for start in range(0, X.shape[0], chunk_rows):
        sl = slice(start, min(start + chunk_rows, X.shape[0]))
        K[sl] *= KP[task[sl]][:, task_y]
    return K


def task_rows(task: np.ndarray, n_tasks: int | None = None) -> list[np.ndarray]:
    """Row indices of each task ``0 .. n_tasks - 1`` in one stable sort (``O(M log M)``, not
    one ``task == t`` scan per task).

    Examples
    --------
    >>> import numpy as np
    >>> [r.tolist() for r in task_rows(np.array([1, 0, 1, 0]))]
    [[1, 3], [0, 2]]
    """
    task = np.asarray(task)
    if n_tasks is None:
        n_tasks = int(task.max()) + 1 if task.size else 0
    order = np.argsort(task, kind="stable")
    bounds = np.searchsorted(task[order], np.arange(n_tasks + 1))
    return [order[bounds[t]:bounds[t + 1]] for t in range(n_tasks)]


def rff_embeddings(X: np.ndarray, task: np.ndarray, n_tasks: int, W: np.ndarray | None, *,
                   dtype=np.float64) -> np.ndarray:
    """Random-feature mean embeddings ``Z_P`` (eq. 31), shape ``(n_tasks, 2L)``, float64.

    ``W=None`` means a linear embedding kernel: ``Z_P`` is the task mean of ``X`` (exact).
    ``dtype=np.float32`` evaluates the projections and cos/sin in single precision (about 10x
    faster cos/sin; absolute error per feature ~1e-6, far below the Monte-Carlo error
    ``~1/sqrt(L)`` of the random features); the means are accumulated in float64.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [2.0], [5.0]]); t = np.array([0, 0, 1])
    >>> rff_embeddings(X, t, 2, None)
    array([[1.],
           [5.]])
    """
    rows = task_rows(task, n_tasks)
    if W is None:
        return np.vstack([X[r].mean(axis=0) for r in rows])
    W = np.asarray(W, dtype=dtype)            # rff_mean: features in W's dtype, float64 sums
    return np.vstack([rff_mean(X[r], W) for r in rows])


def rff_product_features(X: np.ndarray, task: np.ndarray, ZP: np.ndarray | None, V_x: np.ndarray,
                         V_p: np.ndarray | None, *, sigma_x: float, sigma_p: float,
                         out: np.ndarray | None = None, chunk_size: int | None = None,
                         dtype=np.float64) -> np.ndarray:
    """Second-stage random features ``z(u)`` of ``u = (Z_P[task] / sigma_P, x / sigma_X)``.

    ``V_x`` (``(d, Q)``) and ``V_p`` (``(2L, Q)``) are the two row blocks of the ``N(0, 1)``
    frequency matrix of eq. (33). ``ZP=None`` / ``V_p=None`` is pooling (``k_P = 1``): the
    features are plain RFF of ``x`` with bandwidth ``sigma_X``. Returns ``(n, 2Q)`` in float64
    (``out`` if given). ``dtype=np.float32`` evaluates the row projections and cos/sin in
    single precision (see :func:`rff_embeddings`); the task offsets ``Z_P V_p / sigma_P`` are
    always computed in float64.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(6, 2)); t = np.repeat([0, 1], 3)
    >>> Z = rff_product_features(X, t, None, rng.normal(size=(2, 5)), None, sigma_x=1.0,
    ...                          sigma_p=1.0)
    >>> Z.shape, bool(np.allclose((Z ** 2).sum(axis=1), 1.0))
    ((6, 10), True)
    """
    Q = V_x.shape[1]
    if out is None:
        out = np.empty((X.shape[0], 2 * Q))
    Xs = np.asarray(X / sigma_x, dtype=dtype)
    if ZP is None or V_p is None:
        for sl, Z in rff_chunks(Xs, np.asarray(V_x, dtype=dtype), chunk_size):
            out[sl] = Z
        return out
    offsets = (ZP / sigma_p) @ V_p  # (n_tasks, Q): the task part of the projection
    step = chunk_size or 65536
    for t, idx in enumerate(task_rows(task, offsets.shape[0])):
        if idx.shape[0] == 0:
            continue
        Omega = np.vstack([V_x, offsets[t][None, :]]).astype(dtype)
        contiguous = idx[-1] - idx[0] + 1 == idx.shape[0]  # training rows are grouped by task
        for start in range(0, idx.shape[0], step):
            rows = idx[start:start + step]
            sel = slice(rows[0], rows[-1] + 1) if contiguous else rows  # views, no gather
            Xa = np.empty((rows.shape[0], Xs.shape[1] + 1), dtype=dtype)
            Xa[:, :-1] = Xs[sel]
            Xa[:, -1] = 1.0
            out[sel] = rff_map(Xa, Omega)
    return out
