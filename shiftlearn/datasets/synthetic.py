"""Seeded synthetic data sets from the papers, all returning ``(X, y, sample_domain)``."""

from __future__ import annotations

import numpy as np

__all__ = ["make_monotone_shift", "make_rotated_ellipses", "make_sca_toy"]


def make_sca_toy(n_per_cluster: int = 100, *, shift=(2.4, 1.2), spread: float = 0.55,
                 mask_target_labels: bool = True, return_target_labels: bool = False,
                 random_state=None):
    """The SCA paper's 2-D domain-adaptation toy: 3 classes, six Gaussian clusters.

    Each class has one source cluster (on the x-axis, 3 apart) and one target cluster, the
    source cluster moved by ``shift``, so that most target points lie nearer a source cluster of
    *another* class: raw 1NN on the target gets only the last class right, about 37% with the
    defaults (the paper: raw 28%, SCA 77%; the paper gives no cluster means, these are ours).

    Returns
    -------
    X : (6 * n_per_cluster, 2); y : labels 0..2, target rows -1 when masked;
    sample_domain : 1 (source) / -2 (target); [y_target_true]
    """
    rng = np.random.default_rng(random_state)
    means = np.array([[0.0, 0.0], [3.0, 0.0], [6.0, 0.0]])
    Xs = np.vstack([m + spread * rng.standard_normal((n_per_cluster, 2)) for m in means])
    Xt = np.vstack([m + np.asarray(shift) + spread * rng.standard_normal((n_per_cluster, 2))
                    for m in means])
    ys = np.repeat(np.arange(3), n_per_cluster)
    yt = ys.copy()
    X = np.vstack([Xs, Xt])
    y = np.concatenate([ys, np.full_like(yt, -1) if mask_target_labels else yt])
    sd = np.concatenate([np.ones(len(ys), dtype=np.int64), np.full(len(yt), -2, dtype=np.int64)])
    return (X, y, sd, yt) if return_target_labels else (X, y, sd)


def make_rotated_ellipses(n_tasks: int = 16, n_points: int = 16, *, minor: float = 0.2,
                          first_domain: int = 1, labels: tuple[int, int] = (0, 1),
                          point_sampling: str = "code", random_state=None):
    """Rotated-ellipse classification tasks (Blanchard et al., Algorithm 1).

    Each task draws an angle ``alpha ~ U[pi/4, 3pi/4]`` and samples ``n_points`` from an ellipse
    with semi-axes 1 and ``minor`` whose major axis is rotated counter-clockwise by ``alpha``
    from the horizontal (so every major axis is within 45 degrees of vertical). The label is
    the side of the major axis, as in Algorithm 1: points to the *right* of the major axis are
    class ``+1``, points to the left ``-1``. Every task has mean 0, so only second-order
    information about ``P_X`` tells the tasks apart.

    Because every major axis is within 45 degrees of vertical, "right of the major axis" and
    "right of the vertical axis" agree for most points: a classifier that ignores the task (the
    paper's pooling) can beat chance (``x_1 > 0 => +1`` errs on about 34% of the points, see
    ``benchmarks/generalization/marginal_ellipses.py`` for the pooled Bayes error).

    Parameters
    ----------
    n_tasks, n_points : int
        Number of tasks and points per task.
    minor : float, default=0.2
        Minor semi-axis (the authors' code: ``factor = 0.2``).
    first_domain : int, default=1
        Task ids are ``first_domain, first_domain + 1, ...``.
    labels : (int, int), default=(0, 1)
        ``(negative, positive)`` returned class values. The default maps the paper's -1 -> 0,
        +1 -> 1 because ``y = -1`` means *unlabeled* in the library's convention; pass
        ``labels=(-1, 1)`` for the paper's values in plain-array code.
    point_sampling : {"code", "uniform"}, default="code"
        ``"code"``: as the authors' code (``u ~ U[-1, 1]``,
        ``v ~ U[-sqrt(1-u^2), sqrt(1-u^2)] * minor``, more mass near the tips), with exactly
        ``floor(n/2)`` points on the positive side. ``"uniform"``: uniform on the ellipse's
        area, as the paper's text says (class sizes then random).
    random_state : int, Generator or None

    Returns
    -------
    X : (n_tasks * n_points, 2); y : ``labels`` values; sample_domain : task ids
    ``first_domain, first_domain + 1, ...`` (positive: all labeled)

    Examples
    --------
    >>> import numpy as np
    >>> X, y, sd = make_rotated_ellipses(4, 100, labels=(-1, 1), random_state=0)
    >>> X.shape, np.unique(sd).tolist(), int(y.sum())
    ((400, 2), [1, 2, 3, 4], 0)
    """
    if n_tasks < 1 or n_points < 2:
        raise ValueError("Need n_tasks >= 1 and n_points >= 2.")
    if first_domain <= 0 < first_domain + n_tasks:
        raise ValueError(f"Task ids {first_domain}..{first_domain + n_tasks - 1} would include "
                         "the invalid domain id 0; use first_domain <= -n_tasks (targets) or "
                         ">= 1 (sources).")
    if point_sampling not in ("code", "uniform"):
        raise ValueError(f"point_sampling must be 'code' or 'uniform', got {point_sampling!r}.")
    rng = np.random.default_rng(random_state)
    Xs, ys, sds = [], [], []
    for i in range(n_tasks):
        alpha = rng.uniform(np.pi / 4, 3 * np.pi / 4)
        if point_sampling == "code":
            u = rng.uniform(-1, 1, n_points)
            v = np.abs(rng.uniform(-1, 1, n_points) * np.sqrt(1 - u**2)) * minor
            lab = np.where(np.arange(n_points) < n_points // 2, 1, -1)
            v *= -lab  # before rotation the right of the axis (+1) is v < 0
        else:  # uniform in the unit disc, then scaled: uniform on the ellipse's area
            r = np.sqrt(rng.uniform(0, 1, n_points))
            phi = rng.uniform(0, 2 * np.pi, n_points)
            u, v = r * np.cos(phi), r * np.sin(phi) * minor
            lab = np.where(v < 0, 1, -1)
        # rotate counter-clockwise by alpha: the axis direction (cos a, sin a) has sin a > 0,
        # so its right-hand normal (sin a, -cos a), the image of (0, -1), points to x_1 > 0
        R = np.array([[np.cos(alpha), -np.sin(alpha)], [np.sin(alpha), np.cos(alpha)]])
        Xs.append(np.column_stack([u, v]) @ R.T)
        ys.append(lab)
        sds.append(np.full(n_points, first_domain + i, dtype=np.int64))
    y = np.where(np.concatenate(ys) > 0, labels[1], labels[0]).astype(np.int64)
    return np.vstack(Xs), y, np.concatenate(sds)


def make_monotone_shift(n_source: int = 2000, n_target: int = 2000, *,
                        shift: str = "monotone", n_input: int = 6,
                        mask_target_labels: bool = False, random_state=None):
    """A source/target pair whose shift is a strictly increasing map of each feature.

    Latent ``z ~ N(0, I_6)``, ``y = sign(z0 + z1 - 0.5 z2 + 0.3 eps)`` in {0, 1}. Source
    ``x = z``. Target ``shift="monotone"``: ``x0 = 3 z0 + 2``, ``x1 = exp(0.8 z1)``,
    ``x2 = z2^3 + 0.5``, ``x3 = 0.2 z3 - 1``, others unchanged (per-feature monotone: boosting
    with per-task thresholds absorbs it exactly). ``shift="rotation"`` (the negative control,
    feature mixing): rotate the (z0, z1) plane by 0.7 rad, then the (z1, z2) plane by 0.6 rad.

    Returns
    -------
    X, y, sample_domain (source 1, target -2); target labels kept unless masked.
    """
    if n_input < 4:
        raise ValueError("n_input must be at least 4.")
    rng = np.random.default_rng(random_state)

    def draw(n):
        z = rng.standard_normal((n, n_input))
        y = (z[:, 0] + z[:, 1] - 0.5 * z[:, 2] + 0.3 * rng.standard_normal(n) > 0).astype(int)
        return z, y

    zs, ys = draw(n_source)
    zt, yt = draw(n_target)
    xt = zt.copy()
    if shift == "monotone":
        xt[:, 0] = 3 * zt[:, 0] + 2
        xt[:, 1] = np.exp(0.8 * zt[:, 1])
        xt[:, 2] = zt[:, 2] ** 3 + 0.5
        xt[:, 3] = 0.2 * zt[:, 3] - 1
    elif shift == "rotation":
        def rot(a, i, j, x):
            x = x.copy()
            c, s = np.cos(a), np.sin(a)
            x[:, i], x[:, j] = c * x[:, i] - s * x[:, j], s * x[:, i] + c * x[:, j]
            return x
        xt = rot(0.6, 1, 2, rot(0.7, 0, 1, zt))
    else:
        raise ValueError(f"shift must be 'monotone' or 'rotation', got {shift!r}.")
    X = np.vstack([zs, xt])
    y = np.concatenate([ys, np.full_like(yt, -1) if mask_target_labels else yt])
    sd = np.concatenate([np.ones(n_source, dtype=np.int64), np.full(n_target, -2, dtype=np.int64)])
    return X, y, sd
