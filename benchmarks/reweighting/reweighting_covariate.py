"""The reweighting methods on a covariate shift with a known density ratio, and their speed
against skada's on the same rows.

Quality. Source rows ``x ~ N(0, I_2)``, target rows ``x ~ N((1.5, 0), 0.6^2 I_2)``; the label is
``1[x_2 > x_1^2 / 2 - 1]`` with 5% of the labels flipped, the same rule in both domains
(covariate shift). Logistic regression is linear, so it cannot follow the parabola: fitted on
the source rows it fits the parabola's flat bottom, where the source rows are, while the
target rows lie on its rising side. The true ratio ``p_t(x) / p_s(x)`` is known in closed form;
the oracle is the logistic regression weighted by it. For each seed (``--seeds``), 500 labeled
source rows, 500 unlabeled target rows to estimate the weights from, and 5,000 labeled target
rows to measure the error; every method with its library defaults, through
``DomainAdaptationClassifier(method, LogisticRegression())``. Reported: the weights'
Pearson and Spearman correlations with the true ratio on the source rows, the target error,
and the gap closed, ``(err_source_only - err) / (err_source_only - err_oracle)`` (100% = the
oracle), means and standard deviations over seeds.

Speed. ``fit`` of ours (the weights of the training rows) against skada 0.6's adapter's
``fit_transform`` (the same weights) with the same kernel bandwidth, centres, classifier and
density estimate: ``KMMReweightAdapter`` (its default Frank-Wolfe solver),
``KLIEPReweightAdapter``, ``DiscriminatorReweightAdapter`` (``calibration=None`` on ours, as
skada does not calibrate), ``NearestNeighborReweightAdapter``, ``DensityReweightAdapter``
(``KernelDensity`` with our bandwidth), ``GaussianReweightAdapter``. Shapes: ``n >> d``
(2,000 + 2,000 rows, 10 columns) and ``d >> n`` (200 + 300 rows, 2,000 columns). Best of
``--repeat`` runs; one BLAS thread.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/reweighting/reweighting_covariate.py
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

METHODS = ("KMM", "KLIEP", "uLSIF", "RuLSIF", "DiscriminatorRW", "NearestNeighborRW", "KDERW",
           "GaussianRW")
MU_T, SD_T = np.array([1.5, 0.0]), 0.6
SHAPES = ((2000, 2000, 10), (200, 300, 2000))


def _labels(X, rng, flip=0.05):
    y = (X[:, 1] > X[:, 0] ** 2 / 2 - 1).astype(int)
    f = rng.random(X.shape[0]) < flip
    y[f] = 1 - y[f]
    return y


def true_ratio(X):
    """``N(x; mu_t, sd_t^2 I) / N(x; 0, I)`` in closed form."""
    d = X.shape[1]
    log_t = -0.5 * np.sum((X - MU_T) ** 2, axis=1) / SD_T ** 2 - d * np.log(SD_T)
    log_s = -0.5 * np.sum(X ** 2, axis=1)
    return np.exp(log_t - log_s)


def task(seed, ns=500, nt=500, n_test=5000):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(ns, 2))
    Xt = MU_T + SD_T * rng.normal(size=(nt, 2))
    Xtest = MU_T + SD_T * rng.normal(size=(n_test, 2))
    X = np.r_[Xs, Xt]
    y = np.r_[_labels(Xs, rng), -np.ones(nt, int)]
    sd = np.r_[np.ones(ns, int), -np.ones(nt, int)]
    return X, y, sd, Xtest, _labels(Xtest, rng)


def _spearman(a, b):
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def quality(seeds: int) -> list[dict]:
    from sklearn.linear_model import LogisticRegression

    from shiftlearn.compose import DomainAdaptationClassifier
    from shiftlearn.model_selection import make_adapter

    per = {m: {"pearson": [], "spearman": [], "err": []} for m in METHODS}
    base = {"source-only": [], "oracle": []}
    for seed in track(range(seeds), "seeds"):
        X, y, sd, Xtest, ytest = task(seed)
        src = sd > 0
        w_true = true_ratio(X[src])
        plain = LogisticRegression().fit(X[src], y[src])
        oracle = LogisticRegression().fit(X[src], y[src], sample_weight=w_true)
        base["source-only"].append(1 - plain.score(Xtest, ytest))
        base["oracle"].append(1 - oracle.score(Xtest, ytest))
        for m in METHODS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = DomainAdaptationClassifier(make_adapter(m, seed), LogisticRegression())
                clf.fit(X, y, sd)
            w = clf.adapter_.weights_[src]
            per[m]["pearson"].append(float(np.corrcoef(w, w_true)[0, 1]))
            per[m]["spearman"].append(_spearman(w, w_true))
            per[m]["err"].append(1 - clf.score(Xtest, ytest))
    e_src, e_or = np.mean(base["source-only"]), np.mean(base["oracle"])
    rows = [{"method": "source-only", "pearson": "", "spearman": "",
             "target error": f"{e_src:.4f} ± {np.std(base['source-only']):.4f}",
             "gap closed %": "0"},
            {"method": "oracle (true ratio)", "pearson": "1", "spearman": "1",
             "target error": f"{e_or:.4f} ± {np.std(base['oracle']):.4f}",
             "gap closed %": "100"}]
    for m in METHODS:
        r = per[m]
        err = np.asarray(r["err"])
        gaps = 100 * (np.asarray(base["source-only"]) - err) / (
            np.asarray(base["source-only"]) - np.asarray(base["oracle"]))
        rows.append({"method": m,
                     "pearson": f"{np.mean(r['pearson']):.3f} ± {np.std(r['pearson']):.3f}",
                     "spearman": f"{np.mean(r['spearman']):.3f} ± {np.std(r['spearman']):.3f}",
                     "target error": f"{err.mean():.4f} ± {err.std():.4f}",
                     "gap closed %": f"{100 * (e_src - err.mean()) / (e_src - e_or):.0f} "
                                     f"(per seed {np.median(gaps):.0f} median)"})
    return rows


def _speed_domains(ns, nt, d, seed=0):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(ns, d))
    Xt = rng.normal(size=(nt, d)) * 0.8 + 0.5 / np.sqrt(d) * np.sqrt(10)
    X = np.r_[Xs, Xt]
    y = np.r_[rng.integers(0, 2, ns), -np.ones(nt, int)]
    return X, y, np.r_[np.ones(ns, int), -np.ones(nt, int)]


def _best(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        if best > 5.0:
            break
    return best


def _fit_ours(factory, X, y, sd):
    return factory().fit(X, y, sd)


def _fit_skada(factory, X, y, sd):
    return factory().fit_transform(X, y, sample_domain=sd)


def speed(repeat: int) -> list[dict]:
    import skada
    from sklearn.neighbors import KernelDensity

    from shiftlearn.kernels import gamma_from_sigma, median_heuristic
    from shiftlearn.reweighting import (
        KDERW,
        KLIEP,
        KMM,
        DiscriminatorRW,
        GaussianRW,
        NearestNeighborRW,
        RuLSIF,
        uLSIF,
    )

    rows = []
    for ns, nt, d in SHAPES:
        X, y, sd = _speed_domains(ns, nt, d)
        sigma = median_heuristic(X)
        gamma = gamma_from_sigma(sigma)
        h = sigma / 2
        pairs = {
            "KMM": (partial(KMM, bandwidth=sigma), partial(skada.KMMReweightAdapter, gamma=gamma)),
            "KLIEP": (partial(KLIEP, bandwidth=sigma, random_state=0),
                      partial(skada.KLIEPReweightAdapter, gamma=gamma, random_state=0)),
            "uLSIF": (partial(uLSIF, bandwidth=sigma, random_state=0), None),
            "RuLSIF": (partial(RuLSIF, bandwidth=sigma, random_state=0), None),
            "DiscriminatorRW": (partial(DiscriminatorRW, calibration=None),
                                skada.DiscriminatorReweightAdapter),
            "NearestNeighborRW": (NearestNeighborRW, skada.NearestNeighborReweightAdapter),
            "KDERW": (partial(KDERW, bandwidth=h),
                      partial(skada.DensityReweightAdapter, KernelDensity(bandwidth=h))),
            "GaussianRW": (GaussianRW, skada.GaussianReweightAdapter),
        }
        for m in track(METHODS, f"speed {ns}+{nt}x{d}"):
            ours_f, theirs_f = pairs[m]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t_ours = _best(partial(_fit_ours, ours_f, X, y, sd), repeat)
                t_skada = (float("nan") if theirs_f is None else
                           _best(partial(_fit_skada, theirs_f, X, y, sd), repeat))
            rows.append({"shape (n_s + n_t) x d": f"({ns} + {nt}) x {d}", "method": m,
                         "ours s": t_ours,
                         "skada s": "—" if theirs_f is None else t_skada,
                         "skada / ours": "—" if theirs_f is None else f"{t_skada / t_ours:.1f}x"})
    return rows


@progress()
def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    title = "Reweighting: a covariate shift with a known ratio, and speed against skada"
    machine = header(title)
    t0 = time.perf_counter()
    q = quality(args.seeds)
    q_md = markdown_table(q, ["method", "pearson", "spearman", "target error", "gap closed %"])
    print(q_md)
    s = speed(args.repeat)
    s_md = markdown_table(s, ["shape (n_s + n_t) x d", "method", "ours s", "skada s",
                              "skada / ours"], floatfmt=".3f")
    print(s_md)
    total = time.perf_counter() - t0
    body = (f"## Quality: weights against the true ratio, logistic regression on the target "
            f"({args.seeds} seeds)\n\n{q_md}\n\n"
            "gap closed: `(err_source_only - err) / (err_source_only - err_oracle)` of the "
            "seed-mean errors (the median over seeds in brackets).\n\n"
            f"## Speed against skada (best of {args.repeat})\n\n{s_md}\n\n"
            f"Total: {total:.0f} s.")
    write_results("reweighting_covariate", title, body,
                  {"quality": q, "speed": s, "seeds": args.seeds, "total_s": total}, machine)


if __name__ == "__main__":
    main()
