"""Why the earlier synthetic blobs gave 19 % on the README's federated command (the quick
start 2 %), and the synthetic blobs before and after the fix, each FedRF-TCA number beside
its baselines.

1. The diagnosis on the former generator (``legacy_blobs``, read from the repository's history
   at the commit before the fix: a full clone), data seed 0, the README job's settings (N = 50,
   m = 5, 50 rounds x 5 Adam steps, lr 0.01, lambda = 1, bandwidth = median of the clients'
   median heuristics): the same job without faults, with lambda = 0, the same model trained
   centrally on the pooled sources (lambda = 0 and lambda = 1), centralized RF-TCA + the same
   softmax, linear TCA + logistic regression, logistic regression on the raw features, on
   per-domain centred features, and trained on the target's own labels (ORACLE, reference only);
   the geometry (target shift vs class distance); how many data seeds of 0-99 pose an
   ill-defined problem (a target class mean nearer another class's source mean than its own).
2. The README command and the docs' quick start on the former and on the fixed generator.
3. 20 data seeds of the fixed generator: source only, FedAvg (lambda = 0), FedRF-TCA on a
   perfect network and under the README's faults (30 % loss, 10 % dropout).
4. The same 20 seeds for larger target shifts (``target_shift`` 0.4 ... 1.2 x the class
   separation; from 0.5 on some seeds pose an ill-defined problem).

    OMP_NUM_THREADS=1 python benchmarks/federated/federated_synthetic.py

Internals on purpose: the federated simulation harness (``_data``: the blobs, client data and
bandwidth agreement; ``_jobs``: the CLI's job configuration), which ``shiftlearn.federated``
does not export (the CLI runs on the same functions). ``tests/house/test_benchmarks.py``
imports this script, so a rename fails the test suite.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import (  # noqa: E402
    function_from_git,
    header,
    markdown_table,
    progress,
    track,
    write_results,
)

from shiftlearn.adaptation import RFTCA, TCA  # noqa: E402
from shiftlearn.federated import (  # noqa: E402
    FedRFTCAConfig,
    NetworkConditions,
    predict,
    run_iterative,
    train_softmax,
    train_source_only,
)
from shiftlearn.federated._data import (  # noqa: E402
    ClientData,
    agree_bandwidth,
    local_bandwidth,
    make_federated_blobs,
)
from shiftlearn.federated.jobs import iterative_config, job_config  # noqa: E402
from shiftlearn.kernels import rff_map  # noqa: E402

README_NET = NetworkConditions(loss=0.3, dropout=0.1, seed=0)
SEEDS = range(20)
SHIFTS = (0.4, 0.6, 0.8, 1.0, 1.2)
#: the former generator: the library's make_federated_blobs before the fix
LEGACY_BLOBS = ("8cd2467", "shiftlearn/federated/_data.py")


def legacy_blobs(n_clients=4, n_per_client=120, n_input=5, n_classes=3, seed=0):
    """The earlier ``make_federated_blobs``, read from the history (:data:`LEGACY_BLOBS`), for
    the diagnosis only."""
    former = function_from_git(*LEGACY_BLOBS, "make_federated_blobs",
                               {"np": np, "ClientData": ClientData})
    return former(n_clients, n_per_client, n_input, n_classes, seed)


def _pooled(parts):
    src = parts[:-1]
    return (np.vstack([p.X for p in src]), np.concatenate([p.y for p in src]), parts[-1])


def _acc(res_or_wc, cfg, t):
    W, C = (res_or_wc.W, res_or_wc.C) if hasattr(res_or_wc, "W") else res_or_wc
    return float(np.mean(predict(rff_map(t.X, cfg.omega(t.X.shape[1])), W, C) == t.y_true))


def readme_cfg(parts, **kw):
    sigma = agree_bandwidth([local_bandwidth(p.X) for p in parts])
    return iterative_config(job_config({"protocol": "iterative", "rounds": 50, **kw}), sigma)


def fed(parts, cfg, cond=None):
    return _acc(run_iterative([(p.X, p.y) for p in parts[:-1]], parts[-1].X, cfg,
                              conditions=cond), cfg, parts[-1])


def src_only(parts, cfg):
    return _acc(train_source_only([(p.X, p.y) for p in parts[:-1]], cfg), cfg, parts[-1])


def ill_posed(parts) -> bool:
    Xs, ys, t = _pooled(parts)
    k = t.n_classes
    ms = np.array([Xs[ys == c].mean(0) for c in range(k)])
    mt = np.array([t.X[t.y_true == c].mean(0) for c in range(k)])
    d = ((mt[:, None] - ms[None]) ** 2).sum(-1)
    return bool(np.any(d.argmin(1) != np.arange(k)))


def diagnosis() -> list[dict]:
    parts = legacy_blobs(seed=0)
    Xs, ys, t = _pooled(parts)
    cfg = readme_cfg(parts)
    readme = run_iterative([(p.X, p.y) for p in parts[:-1]], t.X, cfg, conditions=README_NET)
    src = ClientData(0, Xs, None, -1, 3, ys)
    clean = run_iterative([(p.X, p.y) for p in parts[:-1]], t.X, cfg)
    confusion = np.zeros((3, 3), int)
    np.add.at(confusion, (t.y_true, clean.predict(t.X, cfg)), 1)
    rows = [("FedRF-TCA, README job (30 % loss, 10 % dropout)", _acc(readme, cfg, t)),
            ("the same model on the pooled *sources* (labels and accuracy check)",
             _acc(readme, cfg, src)),
            ("FedRF-TCA, perfect network", _acc(clean, cfg, t)),
            ("FedAvg: the same job with lambda = 0", fed(parts, FedRFTCAConfig(
                **{**cfg.__dict__, "lam": 0.0}))),
            ("source only: same model, pooled sources, lambda = 0", src_only(parts, cfg))]
    one = FedRFTCAConfig(**{**cfg.__dict__, "client_sampling": "all"})
    central = run_iterative([(Xs, ys)], t.X, one)
    rows.append(("same objective (lambda = 1) trained centrally", _acc(central, cfg, t)))
    X = np.vstack([Xs, t.X])
    y = np.r_[ys, -np.ones(len(t.X), int)]
    sd = np.r_[np.concatenate([np.full(len(p.X), p.client_id) for p in parts[:-1]]),
               np.full(len(t.X), t.domain_id)]
    rf = RFTCA(n_components=cfg.n_components, n_features=cfg.n_features,
               bandwidth=cfg.sigma, random_state=0).fit(X, y, sample_domain=sd)
    Hs, Ht = rf.transform(Xs), rf.transform(t.X)
    scale = np.sqrt(np.mean(np.sum(Hs ** 2, axis=1)))
    C = train_softmax(Hs / scale, ys, 3, steps=cfg.n_rounds * cfg.local_steps, lr=cfg.lr)
    rows.append(("centralized RF-TCA (same N, m, sigma) + the same softmax",
                 float(np.mean(predict(Ht / scale, np.eye(cfg.n_components), C) == t.y_true))))
    lin = TCA(n_components=4, kernel="linear").fit(X, y, sample_domain=sd)
    H = lin.transform(X)
    lr = LogisticRegression(max_iter=3000)
    rows.append(("linear TCA (m = 4) + logistic regression",
                 lr.fit(H[:len(Xs)], ys).score(H[len(Xs):], t.y_true)))
    rows.append(("logistic regression on the raw features (source only)",
                 lr.fit(Xs, ys).score(t.X, t.y_true)))
    Xc = np.vstack([p.X - p.X.mean(0) for p in parts[:-1]])
    rows.append(("logistic regression, every domain centred on its own mean",
                 lr.fit(Xc, ys).score(t.X - t.X.mean(0), t.y_true)))
    rows.append(("ORACLE: logistic regression trained on the target's labels",
                 lr.fit(t.X, t.y_true).score(t.X, t.y_true)))
    col = "accuracy (%), target unless stated"
    out = [{"model (legacy generator, data seed 0)": k, col: 100 * v} for k, v in rows]
    rng = np.random.default_rng([0, 11])
    centers = rng.normal(scale=2.0, size=(3, 5))
    shift = np.random.default_rng([0, 12, 4]).normal(scale=1.2, size=5)
    closest = min(np.linalg.norm(centers[a] - centers[b]) for a in range(3) for b in range(a))
    out.append({"model (legacy generator, data seed 0)":
                f"geometry: target shift length {np.linalg.norm(shift):.2f}, closest class "
                f"centres {closest:.2f} apart, sigma {cfg.sigma:.2f}",
                col: ""})
    out.append({"model (legacy generator, data seed 0)":
                "FedRF-TCA, perfect network: confusion (row = true class, column = predicted) "
                + str(confusion.tolist()), col: ""})
    return out


def quick_start(gen) -> tuple[float, float]:
    parts = gen(n_clients=4, n_per_client=100, seed=0)
    cfg = FedRFTCAConfig(n_features=50, n_components=5, sigma=3.0, n_rounds=20, lam=1.0)
    return fed(parts, cfg, NetworkConditions(loss=0.3, dropout=0.1, seed=0)), src_only(parts,
                                                                                      cfg)


@progress()
def main():
    machine = header("Federated synthetic blobs: diagnosis and baselines")
    t0 = time.perf_counter()
    diag = diagnosis()
    counts = {name: sum(ill_posed(gen(seed=s)) for s in range(100))
              for name, gen in (("legacy", legacy_blobs), ("fixed", make_federated_blobs))}
    before_after = []
    for name, gen in (("legacy", legacy_blobs), ("fixed", make_federated_blobs)):
        parts = gen(seed=0)
        cfg = readme_cfg(parts)
        qs = quick_start(gen)
        before_after.append({"generator": name,
                             "README job: FedRF-TCA (%)": 100 * fed(parts, cfg, README_NET),
                             "README job: source only (%)": 100 * src_only(parts, cfg),
                             "quick start: FedRF-TCA (%)": 100 * qs[0],
                             "quick start: source only (%)": 100 * qs[1],
                             "chance (%)": 100 / 3,
                             "ill-posed data seeds of 0-99": counts[name]})
    per_seed = []
    for s in track(SEEDS, "seeds"):
        parts = make_federated_blobs(seed=s)
        cfg = readme_cfg(parts)
        per_seed.append({"data seed": s, "source only": 100 * src_only(parts, cfg),
                         "FedAvg (lambda = 0)": 100 * fed(parts, FedRFTCAConfig(
                             **{**cfg.__dict__, "lam": 0.0})),
                         "FedRF-TCA": 100 * fed(parts, cfg),
                         "FedRF-TCA, 30 % loss + 10 % dropout": 100 * fed(parts, cfg,
                                                                          README_NET)})
    cols = list(per_seed[0])[1:]
    arr = np.array([[r[c] for c in cols] for r in per_seed])
    summary = [{"": "mean ± sd over 20 data seeds",
                **{c: f"{m:.1f} ± {sd:.1f}" for c, m, sd in
                   zip(cols, arr.mean(0), arr.std(0, ddof=1), strict=True)}},
               {"": "minus source only (points), mean ± sd",
                **{c: f"{np.mean(arr[:, i] - arr[:, 0]):+.1f} ± "
                      f"{np.std(arr[:, i] - arr[:, 0], ddof=1):.1f}"
                   for i, c in enumerate(cols)}},
               {"": "min", **{c: f"{v:.1f}" for c, v in zip(cols, arr.min(0), strict=True)}},
               {"": "seeds below source only",
                **{c: str(int(np.sum(arr[:, i] < arr[:, 0]))) for i, c in enumerate(cols)}}]
    sweep = []
    for ts in track(SHIFTS, "target shifts"):
        r = []
        for s in SEEDS:
            parts = make_federated_blobs(seed=s, target_shift=ts)
            cfg = readme_cfg(parts)
            r.append((src_only(parts, cfg), fed(parts, cfg), fed(parts, cfg, README_NET),
                      ill_posed(parts)))
        a = 100 * np.array(r, dtype=float)
        d = a[:, 1] - a[:, 0]
        sweep.append({"target_shift": ts, "source only": f"{a[:, 0].mean():.1f}",
                      "FedRF-TCA": f"{a[:, 1].mean():.1f}",
                      "FedRF-TCA, README faults": f"{a[:, 2].mean():.1f}",
                      "FedRF-TCA - source only": f"{d.mean():+.1f} ± {d.std(ddof=1):.1f}",
                      "seeds FedRF-TCA < source only": int(np.sum(d < 0)),
                      "min FedRF-TCA": f"{a[:, 1].min():.1f}",
                      "ill-posed seeds": int(a[:, 3].sum() / 100)})
    wall = time.perf_counter() - t0
    body = "\n\n".join([
        "Settings: the README job (`shiftlearn federated simulate --set protocol=iterative "
        "rounds=50 --loss 0.3 --dropout 0.1`: N = 50, m = 5, 50 rounds x 5 Adam steps, lr 0.01, "
        "lambda = 1, full batch, |S_t| ~ Unif{0..K}, sigma = median of the clients' median "
        "heuristics, 3 sources + 1 target, 120 rows each, 3 classes) and the quick start of "
        "docs/federated.md (100 rows, sigma = 3, 20 rounds). 'source only' = the same model "
        "(same Omega, initial W, Adam steps) trained on the pooled sources with lambda = 0 "
        "(`train_source_only`). Accuracy on the whole target (%).",
        "## 1. Diagnosis on the former generator, data seed 0",
        markdown_table(diag, floatfmt=".1f"),
        "## 2. Before / after the fix (data seed 0)",
        markdown_table(before_after, floatfmt=".1f"),
        "## 3. Fixed generator, 20 data seeds (README job settings)",
        markdown_table(summary),
        markdown_table(per_seed, floatfmt=".1f"),
        "## 4. Larger target shifts (20 data seeds each, README job settings, %)",
        markdown_table(sweep),
        f"Wall time {wall:.0f} s."])
    print(body)
    write_results("federated_synthetic", "Federated synthetic blobs", body,
                  {"diagnosis": diag, "before_after": before_after, "per_seed": per_seed,
                   "shift_sweep": sweep},
                  machine)


if __name__ == "__main__":
    main()
