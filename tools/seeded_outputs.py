"""Seeded outputs of every public estimator, as sha256 hashes: a refactoring changes none.

Fits each public estimator of ``shiftlearn`` (adaptation, kernels' random features, boosting,
generalization, the model-selection searches, the maps, reweighting, labelers, label shift, the
few-label methods and the regression meta-estimators) with fixed seeds on small synthetic
data, NumPy input and, where an estimator has a Dask route, Dask input too, and writes
``{case: sha256 of the output array's bytes}`` as JSON. Run it before a change and after, and
compare::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tools/seeded_outputs.py before.json
    ... change the code ...
    .venv/bin/python tools/seeded_outputs.py after.json --compare before.json

One BLAS thread (set below, before NumPy loads) keeps the reductions in one order. The hashes
hold on one machine and one set of library versions; they are not published results. Runtime:
about half a minute on one core.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402


def _digest(a) -> str:
    if hasattr(a, "compute"):                       # a lazy Dask result
        a = a.compute()
    a = np.ascontiguousarray(np.asarray(a))
    head = f"{a.dtype.str}{a.shape}".encode()
    return hashlib.sha256(head + a.tobytes()).hexdigest()


def _adaptation_data(seed=0, n=40, d=5):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n, d))
    Xt = rng.normal(size=(n, d)) * 1.2 + 0.7
    X = np.vstack([Xs, Xt])
    y = np.r_[(Xs[:, 0] + 0.3 * Xs[:, 1] > 0).astype(int), -np.ones(n, int)]
    sd = np.r_[np.where(np.arange(n) % 2 == 0, 1, 2), -3 * np.ones(n, int)]
    return X, y, sd


def _task_data(seed=0, n_tasks=6, n=25, d=3):
    rng = np.random.default_rng(seed)
    X, y, t = [], [], []
    for k in range(n_tasks):
        Xk = rng.normal(size=(n, d)) + 0.4 * k
        X.append(Xk)
        y.append((Xk[:, 0] - 0.4 * k + 0.2 * rng.normal(size=n) > 0).astype(int))
        t.append(np.full(n, k + 1))
    return np.vstack(X), np.concatenate(y), np.concatenate(t)


def cases() -> dict[str, str]:
    from shiftlearn.adaptation import (
        CORAL,
        JDA,
        RFSCA,
        RFTCA,
        SCA,
        TCA,
        uSCA,
    )
    from shiftlearn.boosting import MultiTaskBoostingClassifier
    from shiftlearn.compose import DomainAdaptationClassifier, make_da_pipeline
    from shiftlearn.generalization import (
        MarginalTransferClassifier,
        MarginalTransferRegressor,
        PoolingClassifier,
        PoolingRegressor,
        TaskGroupSearchCV,
    )
    from shiftlearn.kernels import RandomFourierFeatures, mmd2
    from shiftlearn.model_selection import AdaptationSelector

    out: dict[str, str] = {}
    X, y, sd = _adaptation_data()
    Xte = X[sd < 0][:7]

    transformers = {
        "TCA": TCA(n_components=3),
        "TCA_linear": TCA(n_components=3, kernel="linear"),
        "JDA": JDA(n_components=3, n_iter=3),
        "SCA": SCA(n_components=3),
        "uSCA": uSCA(n_components=3),
        "RFTCA": RFTCA(n_components=3, n_features=64, random_state=0),
        "RFSCA": RFSCA(n_components=3, n_features=64, random_state=0),
        "CORAL": CORAL(),
        "CORAL_lw": CORAL(shrinkage="ledoit_wolf"),
        "RandomFourierFeatures": RandomFourierFeatures(n_features=32, random_state=0),
    }
    for name, est in transformers.items():
        if name == "RandomFourierFeatures":
            est.fit(X)
        else:
            est.fit(X, y, sd)
        out[f"{name}.transform"] = _digest(est.transform(Xte))

    for name, adapter in [("TCA", TCA(n_components=3)), ("CORAL", CORAL()),
                          ("RFSCA", RFSCA(n_components=3, n_features=64, random_state=0))]:
        clf = DomainAdaptationClassifier(adapter, KNeighborsClassifier(3)).fit(X, y, sd)
        out[f"DomainAdaptationClassifier[{name}].predict_proba"] = _digest(clf.predict_proba(Xte))
    pipe = make_da_pipeline(TCA(n_components=3), KNeighborsClassifier(3))
    pipe.fit(X, y, sample_domain=sd)
    out["make_da_pipeline[TCA].predict"] = _digest(pipe.predict(Xte))

    out["mmd2"] = _digest(np.array(mmd2(X[sd > 0], X[sd < 0])))

    # Dask input, for the estimators with a Dask route (labels as NumPy and as Dask)
    try:
        import dask
        import dask.array as da
    except ImportError:  # pragma: no cover
        da = None
    if da is not None:
        Xd = da.from_array(X, chunks=(30, 5))
        with dask.config.set(scheduler="synchronous"):
            for name, Est in [("RFTCA", RFTCA), ("RFSCA", RFSCA)]:
                for labels in ("numpy", "dask"):
                    yy, ss = ((da.from_array(y, chunks=25), da.from_array(sd, chunks=35))
                              if labels == "dask" else (y, sd))
                    est = Est(n_components=3, n_features=64, random_state=0).fit(Xd, yy, ss)
                    out[f"{name}.dask_{labels}.transform"] = _digest(
                        est.transform(da.from_array(Xte, chunks=4)))

    # boosting and domain generalization: tasks as domains
    Xg, yg, tg = _task_data()
    Xgt, tgt = Xg[:20] + 0.1, np.full(20, 99)
    yr = Xg[:, 0] + 0.5 * Xg[:, 1] ** 2
    boost = MultiTaskBoostingClassifier(20, learning_rate=0.3).fit(Xg, yg, tg)
    out["MultiTaskBoostingClassifier.decision_function"] = _digest(
        boost.decision_function(Xg[:20], tg[:20]))
    boost2 = MultiTaskBoostingClassifier(10, max_depth=2).fit(Xg, yg, tg)
    out["MultiTaskBoostingClassifier_depth2.predict_proba"] = _digest(
        boost2.predict_proba(Xg[:20], tg[:20]))

    for solver in ("exact", "rf"):
        kw = dict(solver=solver, random_state=0)
        if solver == "rf":
            kw["n_features"] = 64
        mtc = MarginalTransferClassifier(**kw).fit(Xg, yg, tg)
        out[f"MarginalTransferClassifier_{solver}.decision_function"] = _digest(
            mtc.decision_function(Xgt, tgt))
        mtr = MarginalTransferRegressor(**kw).fit(Xg, yr, tg)
        out[f"MarginalTransferRegressor_{solver}.predict"] = _digest(mtr.predict(Xgt, tgt))
        pc = PoolingClassifier(**kw).fit(Xg, yg, tg)
        out[f"PoolingClassifier_{solver}.decision_function"] = _digest(
            pc.decision_function(Xgt, tgt))
        pr = PoolingRegressor(**kw).fit(Xg, yr, tg)
        out[f"PoolingRegressor_{solver}.predict"] = _digest(pr.predict(Xgt, tgt))
    if da is not None:
        with dask.config.set(scheduler="synchronous"):
            Xgd = da.from_array(Xg, chunks=(40, 3))
            mtd = MarginalTransferClassifier(solver="rf", n_features=64, loss="squared_hinge",
                                             random_state=0)
            mtd.fit(Xgd, yg, tg)
            out["MarginalTransferClassifier_rf.dask.decision_function"] = _digest(
                mtd.decision_function(Xgt, tgt))

    search = TaskGroupSearchCV(MarginalTransferClassifier(solver="exact", random_state=0),
                               {"C": [0.1, 10.0]}, cv=2, random_state=0).fit(Xg, yg, tg)
    out["TaskGroupSearchCV.decision_function"] = _digest(search.decision_function(Xgt, tgt))
    out["TaskGroupSearchCV.best_score_"] = _digest(np.array(search.best_score_))

    sel = AdaptationSelector(methods=["TCA", "CORAL", "SCA"],
                             grids={"TCA": {"n_components": [1, 2]},
                                    "SCA": {"n_components": [2], "beta": [0.1, 0.9]}},
                             cv=2).fit(X, y, sd)
    out["AdaptationSelector.predict_proba"] = _digest(sel.predict_proba(Xte))
    out["AdaptationSelector.scores"] = _digest(np.array([r["score"] for r in sel.summary_]))
    out.update(_catalog_cases(X, y, sd, Xte))
    return out


def _catalog_cases(X, y, sd, Xte) -> dict[str, str]:
    """The families beyond the papers: maps, reweighting, labelers, label shift, a few labeled
    target rows, regression."""
    from sklearn.linear_model import LogisticRegression

    from shiftlearn.adaptation import TCA, TJM
    from shiftlearn.compose import DomainAdaptationClassifier, DomainAdaptationRegressor
    from shiftlearn.fewlabels import (
        FeatureAugmentation,
        LinInt,
        RegularTransferLC,
        RegularTransferLR,
        TrAdaBoost,
        TrAdaBoostR2,
    )
    from shiftlearn.labelshift import BBSE, JCPOT, MLLS, RLLS
    from shiftlearn.mapping import (
        EMD,
        MMDLS,
        SA,
        ClassRegOT,
        JDOTClassifier,
        JDOTRegressor,
        LinOT,
        MultiLinOT,
        OTLabelProp,
        Sinkhorn,
    )
    from shiftlearn.model_selection import AdaptationRegressorSelector
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
    from shiftlearn.selflabeling import DASVM

    out: dict[str, str] = {}
    maps = {"SA": SA(n_components=3), "LinOT": LinOT(), "EMD": EMD(), "Sinkhorn": Sinkhorn(),
            "ClassRegOT": ClassRegOT(), "TJM": TJM(n_components=3),
            "MultiLinOT": MultiLinOT(), "MMDLS": MMDLS()}
    for name, est in maps.items():
        est.fit(X, y, sd)
        out[f"{name}.transform"] = _digest(est.transform(Xte))
    weights = {"KMM": KMM(), "KLIEP": KLIEP(random_state=0), "uLSIF": uLSIF(random_state=0),
               "RuLSIF": RuLSIF(random_state=0), "DiscriminatorRW": DiscriminatorRW(
                   random_state=0), "NearestNeighborRW": NearestNeighborRW(),
               "KDERW": KDERW(), "GaussianRW": GaussianRW()}
    for name, est in weights.items():
        out[f"{name}.weights_"] = _digest(est.fit(X, y, sd).weights_)
    labelers = {"JDOTClassifier": JDOTClassifier(), "OTLabelProp": OTLabelProp(),
                "BBSE": BBSE(random_state=0), "RLLS": RLLS(random_state=0), "JCPOT": JCPOT(),
                "MLLS": MLLS(random_state=0)}
    for name, est in labelers.items():
        out[f"{name}.predict_proba"] = _digest(est.fit(X, y, sd).predict_proba(Xte))
    out["DASVM.predict"] = _digest(DASVM().fit(X, y, sd).predict(Xte))
    dac = DomainAdaptationClassifier(JDOTClassifier(), LogisticRegression()).fit(X, y, sd)
    out["DomainAdaptationClassifier[JDOT].predict_proba"] = _digest(dac.predict_proba(Xte))

    yr = np.where(sd > 0, X[:, 0] + 0.5 * X[:, 1] ** 2, np.nan)
    out["JDOTRegressor.predict"] = _digest(JDOTRegressor().fit(X, yr, sd).predict(Xte))
    dar = DomainAdaptationRegressor(TCA(n_components=3)).fit(X, yr, sd)
    out["DomainAdaptationRegressor[TCA].predict"] = _digest(dar.predict(Xte))
    ars = AdaptationRegressorSelector(methods=["TCA", "CORAL"], grids={}, cv=2)
    out["AdaptationRegressorSelector.predict"] = _digest(ars.fit(X, yr, sd).predict(Xte))

    # a few labeled target rows: every fifth target row keeps a label
    few = (sd < 0) & (np.arange(len(y)) % 5 == 0)
    yf = np.where(few, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int), y)
    yfr = np.where(few, X[:, 0] + 0.5 * X[:, 1] ** 2, yr)
    for name, est in {"FeatureAugmentation": FeatureAugmentation(),
                      "TrAdaBoost": TrAdaBoost(n_estimators=5, random_state=0),
                      "RegularTransferLC": RegularTransferLC(),
                      "LinInt": LinInt(random_state=0)}.items():
        out[f"{name}.predict"] = _digest(est.fit(X, yf, sd).predict(Xte))
    for name, est in {"TrAdaBoostR2": TrAdaBoostR2(n_estimators=5, random_state=0),
                      "RegularTransferLR": RegularTransferLR()}.items():
        out[f"{name}.predict"] = _digest(est.fit(X, yfr, sd).predict(Xte))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("output", help="the JSON file to write")
    ap.add_argument("--compare", help="a JSON file written before: report every case that moved")
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = cases()
    with open(args.output, "w") as f:
        json.dump(got, f, indent=1, sort_keys=True)
    print(f"{len(got)} cases -> {args.output}")
    if args.compare:
        with open(args.compare) as f:
            ref = json.load(f)
        moved = sorted(k for k in ref.keys() & got.keys() if ref[k] != got[k])
        gone, new = sorted(ref.keys() - got.keys()), sorted(got.keys() - ref.keys())
        for k in moved:
            print(f"DIFFERS: {k}")
        for k in gone:
            print(f"GONE: {k}")
        if new:
            print(f"{len(new)} new case(s), not compared: {', '.join(new)}")
        print("identical" if not moved and not gone else
              f"{len(moved)} of {len(ref)} cases differ, {len(gone)} gone")
        return 1 if moved or gone else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
