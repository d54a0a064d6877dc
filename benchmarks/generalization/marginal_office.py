"""Office+Caltech10 domain generalization: three labeled domains -> the unseen fourth.

Marginal transfer vs pooling vs SCA in its DG mode (``SCA(beta=1, setting="dg")`` + 1NN, as in
the SCA paper). SURF 800-d, the data set's customary preprocessing (row sum, then per-domain
z-score). Every method is tuned by the same leave-one-domain-out CV over the three training
domains (TaskGroupSearchCV, cv = 3): the target domain is never used for tuning. Marginal
transfer and pooling: RF solver (L = 100, Q = 300), hinge loss one-vs-rest, no intercept;
each test domain is embedded from all its (unlabeled) rows. Search: pooling over (sigma_x, C),
then marginal transfer over (sigma_emb, sigma_p) at the pooling optimum.

    python benchmarks/generalization/marginal_office.py --targets amazon caltech  # parts
    python benchmarks/generalization/marginal_office.py --targets dslr webcam
    python benchmarks/generalization/marginal_office.py --combine  # writes the table

Grids are small for the 2-core budget: pooling (sigma_x in {1, 2} x median, C in {0.1, 1, 10}),
then marginal transfer (sigma_emb in {1, 2} x median, sigma_p in {1, 4} x median); SCA-DG
(delta in {0.1, 1}, k in {5, 9}).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import (  # noqa: E402
    header,
    markdown_table,
    progress,
    results_dir,
    timer,
    track,
    write_results,
)
from _marginal_common import tune_pair  # noqa: E402
from sklearn.base import BaseEstimator, clone  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from shiftlearn.datasets import load_office_caltech  # noqa: E402
from shiftlearn.generalization import (  # noqa: E402
    MarginalTransferClassifier,
    PoolingClassifier,
    TaskGroupSearchCV,
)

STAGE_XC = {"sigma_x": ["median", "2*median"], "C": [0.1, 1.0, 10.0]}
STAGE_EMB = {"sigma_emb": ["median", "2*median"], "sigma_p": ["median", "4*median"]}
SCA_GRID = {"estimator__adapter__delta": [0.1, 1.0], "estimator__adapter__n_components": [5, 9]}
#: one JSON per target; beside the results, or in ``$SHIFTLEARN_BENCH_RESULTS`` (a scratch run)
PARTS = results_dir(__file__) / "_marginal_office"


class DomainIgnoringClassifier(BaseEstimator):
    """Adapter so a DG transformer pipeline fits ``TaskGroupSearchCV``: ``fit(X, y, sd)``,
    ``predict(X, sd)`` (the domain ids are not needed once SCA is fitted)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y, sample_domain):
        self.estimator_ = clone(self.estimator).fit(X, y, sample_domain)
        return self

    def predict(self, X, sample_domain=None):
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        return tags


def sca_dg():
    from shiftlearn.adaptation import SCA
    from shiftlearn.compose import DomainAdaptationClassifier
    return DomainIgnoringClassifier(DomainAdaptationClassifier(SCA(beta=1.0, setting="dg"),
                                                               KNeighborsClassifier(1)))


@progress()
def main(argv=None):
    import argparse
    import json

    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", nargs="*", default=None)
    ap.add_argument("--combine", action="store_true")
    args = ap.parse_args(argv)
    machine = header("Office+Caltech10 DG: marginal transfer vs pooling vs SCA-DG")
    ds = load_office_caltech()
    names = ds.domain_names
    if args.combine:
        rows = [json.loads((PARTS / f"{t}.json").read_text()) for t in names
                if (PARTS / f"{t}.json").exists()]
        return combine(rows, machine)
    try:
        sca_dg()
        have_sca = True
    except ImportError:
        have_sca = False
    for tgt in track(args.targets or names, "targets"):
        srcs = [d for d in names if d != tgt]
        X, y, sd, yt = ds.pack(srcs, tgt, return_masked_labels=True)
        test = sd < 0
        Xs, ys, sds = X[~test], y[~test], sd[~test]
        Xt, ytt, sdt = X[test], yt[test], sd[test]
        kw = dict(solver="rf", n_features=300, random_state=0)
        with warnings.catch_warnings(), timer() as t:
            warnings.simplefilter("ignore")
            mt, pool, ms, ps = tune_pair(
                MarginalTransferClassifier(n_features_emb=100, **kw), PoolingClassifier(**kw),
                Xs, ys, sds, stage_xc=STAGE_XC, stage_emb=STAGE_EMB, cv=3, random_state=0,
                restage=False)
        row = {"target": tgt, "sources": "+".join(srcs),
               "marginal transfer": float(100 * np.mean(mt.predict(Xt, sdt) == ytt)),
               "pooling": float(100 * np.mean(pool.predict(Xt, sdt) == ytt)),
               "mt_params": ms.best_params_, "pool_params": ps.best_params_,
               "mt_pool_seconds": t()}
        print(row, flush=True)
        if have_sca:
            with timer() as t:
                s = TaskGroupSearchCV(sca_dg(), SCA_GRID, cv=3, random_state=0).fit(Xs, ys, sds)
            row["SCA-DG"] = float(100 * np.mean(s.predict(Xt, sdt) == ytt))
            row["sca_params"] = s.best_params_
            row["sca_seconds"] = t()
            print({k: row[k] for k in ("target", "SCA-DG", "sca_params")}, flush=True)
        PARTS.mkdir(parents=True, exist_ok=True)
        (PARTS / f"{tgt}.json").write_text(json.dumps(row, indent=1, default=float))


def combine(rows, machine):
    have_sca = all("SCA-DG" in r for r in rows)
    cols = ["sources", "target", "marginal transfer", "pooling"] + (["SCA-DG"] if have_sca
                                                                    else [])
    mean = {"sources": "mean", "target": ""}
    for c in cols[2:]:
        mean[c] = float(np.mean([r[c] for r in rows]))
    body = ("Target accuracy (%); every method tuned by leave-one-domain-out CV on the three "
            "source domains only (grids in the script's docstring). "
            + ("" if have_sca else "SCA not available. ") + "\n\n"
            + markdown_table(rows + [mean], cols))
    write_results("marginal_office", "Office+Caltech10 DG: marginal transfer vs pooling vs "
                  "SCA-DG", body, {"rows": rows}, machine)


if __name__ == "__main__":
    main()
