"""FedRF-TCA on Office+Caltech SURF, multi-source (three labeled clients -> the fourth).

Per task: source only, centralized RF-TCA (closed form) + softmax, the one-shot federated
RF-TCA (difference to the centralized W), the same objective as FedRF-TCA trained centrally on
the pooled sources, FedAvg (lambda = 0) and iterative FedRF-TCA, plus a diagnosis of why the
MMD term hardly changes anything on fixed features:

* leave-one-source-domain-out (LOSO) selection of FedRF-TCA's lambda and of RF-TCA's mu: each
  of the three sources in turn plays the unlabeled target for the two others and is scored
  with its own labels (no target label is touched);
* for every lambda of the grid, the target accuracy (reported as a labelled ORACLE, never used
  to choose), the source/target mean discrepancy left in the learned features
  ``||W^T (mu_i - mu_T)||^2`` relative to ``mean ||W^T z||^2``, and the Gaussian-kernel MMD^2
  between the learned source and target features (does aligning the means align the
  distributions?);
* the size of the domain shift in the random-feature mean embeddings
  (``||mu_i - mu_T||^2``) against the class separation (mean ``||mu_a - mu_b||^2`` between class
  means of the sources).

The robustness grid is ``federated_robustness.py``. The fixed hyper-parameters are below;
the target labels are used only to report accuracy.

    OMP_NUM_THREADS=1 python benchmarks/federated/federated_office.py [--tasks amazon dslr]

Internals on purpose: the federated simulation harness (``_data``: the Office+Caltech client
partitions and the bandwidth agreement), which ``shiftlearn.federated`` does not export (the CLI
runs on the same functions). ``tests/house/test_benchmarks.py`` imports this script, so a
rename fails the test suite.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

from shiftlearn.adaptation import RFTCA  # noqa: E402
from shiftlearn.federated import (  # noqa: E402
    FedRFTCAConfig,
    OneShotConfig,
    predict,
    run_iterative,
    run_oneshot,
    train_softmax,
)
from shiftlearn.federated._data import agree_bandwidth, load_all, local_bandwidth  # noqa: E402
from shiftlearn.kernels import mmd2, rff_map  # noqa: E402

N, M, MU, LAM, ROUNDS, STEPS, LR, BATCH = 250, 50, 1.0, 1.0, 100, 5, 0.01, 128
CLF_STEPS = ROUNDS * STEPS   # the centralized classifiers get as many Adam steps
LAMS = (0.0, 1.0, 10.0, 100.0, 1000.0, 10000.0)
MUS = (1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0)
M_GRID = (50, 100, 200)        # RF-TCA output dimension (diagnostic)
BUDGETS = (20, 50, 100, 200)   # rounds (x STEPS local steps; source only: as many steps)


def _acc(Z, W, C, y):
    return float(np.mean(predict(Z, W, C) == y))


def softmax_on(Hs, ys, Ht, yt, seed=0, steps=CLF_STEPS, groups=None):
    scale = np.sqrt(np.mean(np.sum(Hs ** 2, axis=1)))   # source RMS norm (no target labels)
    C = train_softmax(Hs / scale, ys, 10, steps=steps, lr=LR, batch_size=BATCH, seed=seed,
                      groups=groups)
    return _acc(Ht / scale, np.eye(Hs.shape[1]), C, yt)


def _task_name(src, target):
    return ",".join(p.name[0].upper() for p in src) + "->" + target[0].upper()


def fed_run(src, X_t, cfg):
    """Iterative FedRF-TCA in the simulator (perfect network); returns the result."""
    return run_iterative([(p.X, p.y) for p in src], X_t, cfg)


def rftca_acc(src, X_t, y_t, mu, sigma, steps=CLF_STEPS, m=M):
    """Centralized RF-TCA (sources labeled, X_t unlabeled) + the shared softmax."""
    Xs = np.vstack([p.X for p in src])
    ys = np.concatenate([p.y for p in src])
    X = np.vstack([Xs, X_t])
    y = np.r_[ys, -np.ones(len(X_t), int)]
    sd = np.r_[np.concatenate([np.full(len(p.X), i + 1) for i, p in enumerate(src)]),
               np.full(len(X_t), -(len(src) + 1))]
    ref = RFTCA(n_components=m, mu=mu, n_features=N, bandwidth=sigma, random_state=0).fit(
        X, y, sample_domain=sd)
    return softmax_on(ref.transform(Xs), ys, ref.transform(X_t), y_t, steps=steps), ref


def loso(src, score) -> float:
    """Mean over the sources j of ``score(other sources, X_j, y_j)`` (source labels only)."""
    return float(np.mean([score([p for i, p in enumerate(src) if i != j], src[j].X, src[j].y)
                          for j in range(len(src))]))


def shift_vs_classes(src, tgt, om) -> dict:
    Zs = [rff_map(p.X, om) for p in src]
    mt = rff_map(tgt.X, om).mean(axis=0)
    shift = [float(np.sum((z.mean(axis=0) - mt) ** 2)) for z in Zs]
    Z, y = np.vstack(Zs), np.concatenate([p.y for p in src])
    cm = np.array([Z[y == c].mean(axis=0) for c in np.unique(y)])
    d = [float(np.sum((cm[a] - cm[b]) ** 2)) for a in range(len(cm)) for b in range(a)]
    return {"mean_shift_sq": float(np.mean(shift)), "class_sep_sq": float(np.mean(d))}


def learned_space(src, tgt, om, W) -> dict:
    """Mean discrepancy left after ``W`` (relative) and Gaussian MMD^2 of the learned features."""
    Hs = [rff_map(p.X, om) @ W for p in src]
    Ht = rff_map(tgt.X, om) @ W
    scale = float(np.mean(np.sum(np.vstack(Hs + [Ht]) ** 2, axis=1)))
    rel = float(np.mean([np.sum((h.mean(axis=0) - Ht.mean(axis=0)) ** 2) for h in Hs])) / scale
    return {"mean_disc_rel": rel, "gauss_mmd2": mmd2(np.vstack(Hs), Ht)}


def run_task(target: str, quick: bool) -> dict:
    parts = load_all({"dataset": "office_caltech", "target": target})
    sigma = agree_bandwidth([local_bandwidth(p.X) for p in parts])
    src, tgt = parts[:-1], parts[-1]
    rounds = 20 if quick else ROUNDS
    cfg = FedRFTCAConfig(n_features=N, n_components=M, sigma=sigma, n_rounds=rounds,
                         local_steps=STEPS, lr=LR, lam=LAM, batch_size=BATCH)
    om = cfg.omega(tgt.X.shape[1])
    Xs = np.vstack([p.X for p in src])
    ys = np.concatenate([p.y for p in src])
    Zs, Zt = rff_map(Xs, om), rff_map(tgt.X, om)
    yt = tgt.y_true
    row: dict = {"task": _task_name(src, target), "sigma": sigma}
    t0 = time.perf_counter()
    steps = rounds * STEPS
    row["source_only"] = softmax_on(Zs, ys, Zt, yt, steps=steps)
    row["rftca_central"], ref = rftca_acc(src, tgt.X, yt, MU, sigma, steps)
    # domain-balanced pooling: every source domain carries the same weight, as in the
    # unweighted federated averages (pooled rows weigh domains by their size)
    g = np.concatenate([np.full(len(p.X), i) for i, p in enumerate(src)])
    row["source_only_balanced"] = softmax_on(Zs, ys, Zt, yt, steps=steps, groups=g)
    row["rftca_central_balanced"] = softmax_on(ref.transform(Xs), ys, ref.transform(tgt.X),
                                               yt, steps=steps, groups=g)
    # one-shot federated RF-TCA: the same W?
    one = run_oneshot([(p.X, p.y, p.domain_id) for p in parts],
                      OneShotConfig(n_features=N, n_components=M, sigma=sigma, seed=0, mu=MU),
                      n_classes=10)
    sign = np.sign(np.sum(one.W * ref.components_, axis=0))
    row["oneshot_max_abs_dW"] = float(np.max(np.abs(one.W * sign - ref.components_)))
    row["oneshot_bytes_up_per_client"] = one.traffic.max_message_bytes("up")
    # the FedRF-TCA objective trained centrally: one client with all sources, every round
    pooled = run_iterative([(Xs, ys)], tgt.X, FedRFTCAConfig(**{**cfg.__dict__,
                                                              "client_sampling": "all"}))
    row["same_objective_central"] = _acc(Zt, pooled.W, pooled.C, yt)
    it = fed_run(src, tgt.X, cfg)
    row["fedrftca"] = _acc(Zt, it.W, it.C, yt)
    # apples to apples with centralized RF-TCA: the one-shot (= centralized) RF-TCA W, scaled
    # to unit source RMS norm as softmax_on does (the one-shot server has that scalar from the
    # summed second moments), then (a) frozen, only the classifier trained federatedly;
    # (b) used as the initial W of FedRF-TCA (the public code's commented-out option)
    W0 = one.W / np.sqrt(np.mean(np.sum((Zs @ one.W) ** 2, axis=1)))
    frozen = run_iterative([(p.X, p.y) for p in src], tgt.X, FedRFTCAConfig(
        **{**cfg.__dict__, "lam": 0.0, "train_W": False}), W0=W0)
    row["oneshot_W_fed_classifier"] = _acc(Zt, frozen.W, frozen.C, yt)
    warm = run_iterative([(p.X, p.y) for p in src], tgt.X, cfg, W0=W0)
    row["fedrftca_init_rftca"] = _acc(Zt, warm.W, warm.C, yt)
    per_round = it.traffic.per_round()
    row["fedrftca_bytes_per_round"] = float(np.mean([r["up_bytes"] + r["down_bytes"]
                                                     for r in per_round]))
    row.update(shift_vs_classes(src, tgt, om))
    # lambda: LOSO selection (source labels only) + per-lambda diagnostics
    sweep = []
    for lam in LAMS:
        c = FedRFTCAConfig(**{**cfg.__dict__, "lam": lam})
        r = it if lam == LAM else fed_run(src, tgt.X, c)

        def score(s, X, y, c=c):
            res = fed_run(s, X, c)
            return _acc(rff_map(X, om), res.W, res.C, y)

        sweep.append({"lam": lam, "loso": loso(src, score),
                      "target_ORACLE": _acc(Zt, r.W, r.C, yt),
                      **learned_space(src, tgt, om, r.W)})
        print(row["task"], sweep[-1], flush=True)
    row["lam_sweep"] = sweep
    best = max(sweep, key=lambda d: (d["loso"], -d["lam"]))
    row["lam_loso"] = best["lam"]
    row["fedrftca_lam_loso"] = best["target_ORACLE"]   # chosen without target labels
    row["fedavg_lam0"] = sweep[0]["target_ORACLE"]
    row["lam_oracle"] = max(sweep, key=lambda d: d["target_ORACLE"])["lam"]
    row["fedrftca_ORACLE"] = max(d["target_ORACLE"] for d in sweep)
    # mu of centralized RF-TCA: LOSO selection
    mus = []
    for mu in MUS:
        def score_mu(s, X, y, mu=mu):
            return rftca_acc(s, X, y, mu, sigma, steps)[0]

        mus.append({"mu": mu, "loso": loso(src, score_mu),
                    "target_ORACLE": (row["rftca_central"] if mu == MU
                                      else rftca_acc(src, tgt.X, yt, mu, sigma, steps)[0])})
        print(row["task"], mus[-1], flush=True)
    row["mu_sweep"] = mus
    bm = max(mus, key=lambda d: (d["loso"], d["mu"]))
    row["mu_loso"] = bm["mu"]
    row["rftca_mu_loso"] = bm["target_ORACLE"]
    row["rftca_ORACLE"] = max(d["target_ORACLE"] for d in mus)
    # RF-TCA's output dimension m (mu fixed): does the unsupervised projection lose classes?
    ms = []
    for m in M_GRID:
        def score_m(s, X, y, m=m):
            return rftca_acc(s, X, y, MU, sigma, steps, m)[0]

        ms.append({"m": m, "loso": loso(src, score_m),
                   "target_ORACLE": (row["rftca_central"] if m == M
                                     else rftca_acc(src, tgt.X, yt, MU, sigma, steps, m)[0])})
        print(row["task"], ms[-1], flush=True)
    row["m_sweep"] = ms
    # training budget (rounds; source only gets rounds x STEPS Adam steps): LOSO + ORACLE

    def src_only(s, X, y, steps):
        return softmax_on(rff_map(np.vstack([p.X for p in s]), om),
                          np.concatenate([p.y for p in s]), rff_map(X, om), y, steps=steps)

    budget = []
    for R in BUDGETS:
        c = FedRFTCAConfig(**{**cfg.__dict__, "n_rounds": R})

        def score(s, X, y, c=c):
            res = fed_run(s, X, c)
            return _acc(rff_map(X, om), res.W, res.C, y)

        r = it if R == cfg.n_rounds else fed_run(src, tgt.X, c)
        budget.append({"rounds": R, "fed_loso": loso(src, score),
                       "fed_target_ORACLE": _acc(Zt, r.W, r.C, yt),
                       "src_only_loso": loso(src, lambda s, X, y, R=R: src_only(
                           s, X, y, R * STEPS)),
                       "src_only_target_ORACLE": src_only(src, tgt.X, yt, R * STEPS)})
        print(row["task"], budget[-1], flush=True)
    row["budget_sweep"] = budget
    row["source_only_loso"] = next(b["src_only_loso"] for b in budget
                                   if b["rounds"] == cfg.n_rounds)
    row["seconds"] = time.perf_counter() - t0
    print({k: v for k, v in row.items() if not k.endswith("sweep")}, flush=True)
    return row


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", nargs="+", default=["amazon", "caltech", "dslr", "webcam"])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    logging.getLogger("shiftlearn.federated").setLevel(logging.ERROR)
    machine = header("FedRF-TCA on Office+Caltech SURF (3 sources -> 1 target)")
    rows = []
    for t in track(args.tasks, "targets"):
        rows.append(run_task(t, args.quick))
        _write(rows, machine, args)


def _mean_row(rows, cols, scale=100.0):
    return {"task": "mean", **{c: scale * float(np.mean([r[c] for r in rows]))
                               for c in cols}}


def _write(rows, machine, args):
    cols = ["task", "source_only", "source_only_balanced", "rftca_central",
            "rftca_central_balanced", "oneshot_W_fed_classifier", "rftca_mu_loso",
            "same_objective_central", "fedavg_lam0", "fedrftca", "fedrftca_lam_loso",
            "fedrftca_init_rftca"]
    main_rows = [{c: (100 * r[c] if isinstance(r[c], float) else r[c]) for c in cols}
                 for r in rows]
    if len(rows) > 1:
        main_rows.append(_mean_row(rows, cols[1:]))
    for r, d in zip(rows, main_rows, strict=False):
        d["lambda (LOSO)"] = f"{r['lam_loso']:g}"
        d["mu (LOSO)"] = f"{r['mu_loso']:g}"
    oracle = [{"task": r["task"], "FedRF-TCA best lambda ORACLE": 100 * r["fedrftca_ORACLE"],
               "lambda ORACLE": f"{r['lam_oracle']:g}",
               "RF-TCA best mu ORACLE": 100 * r["rftca_ORACLE"]} for r in rows]
    one = [{"task": r["task"], "max abs(W_oneshot - W_central)": f"{r['oneshot_max_abs_dW']:.1e}",
            "one-shot upload / client (bytes)": r["oneshot_bytes_up_per_client"],
            "iterative bytes / round (all clients)": int(r["fedrftca_bytes_per_round"]),
            "sigma": f"{r['sigma']:.2f}"} for r in rows]
    sweep_rows = []
    for lam in LAMS:
        ds = [d for r in rows for d in r["lam_sweep"] if d["lam"] == lam]
        sweep_rows.append({"lambda": f"{lam:g}",
                           "LOSO acc (%)": 100 * float(np.mean([d["loso"] for d in ds])),
                           "target acc ORACLE (%)": 100 * float(np.mean(
                               [d["target_ORACLE"] for d in ds])),
                           "rel. mean discrepancy in W-space": "{:.1e}".format(
                               float(np.mean([d["mean_disc_rel"] for d in ds]))),
                           "Gaussian MMD^2 in W-space": "{:.4f}".format(
                               float(np.mean([d["gauss_mmd2"] for d in ds])))})
    mu_rows = []
    for mu in MUS:
        ds = [d for r in rows for d in r["mu_sweep"] if d["mu"] == mu]
        mu_rows.append({"mu": f"{mu:g}", "LOSO acc (%)": 100 * float(np.mean(
            [d["loso"] for d in ds])), "target acc ORACLE (%)": 100 * float(np.mean(
                [d["target_ORACLE"] for d in ds]))})
    m_rows = []
    for m in M_GRID:
        ds = [d for r in rows for d in r["m_sweep"] if d["m"] == m]
        m_rows.append({"m": m, "LOSO acc (%)": 100 * float(np.mean([d["loso"] for d in ds])),
                       "target acc ORACLE (%)": 100 * float(np.mean(
                           [d["target_ORACLE"] for d in ds]))})
    budget_rows = []
    for R in BUDGETS:
        ds = [d for r in rows for d in r["budget_sweep"] if d["rounds"] == R]
        budget_rows.append({f"rounds (source only: x{STEPS} steps)": R, **{
            k: 100 * float(np.mean([d[k] for d in ds]))
            for k in ("fed_loso", "fed_target_ORACLE", "src_only_loso",
                      "src_only_target_ORACLE")}})
    shift = [{"task": r["task"], "mean ‖mu_i - mu_T‖² (domains)": f"{r['mean_shift_sq']:.2e}",
              "mean ‖mu_a - mu_b‖² (class means)": f"{r['class_sep_sq']:.2e}",
              "source only LOSO (%)": 100 * r["source_only_loso"]} for r in rows]
    body = (f"Settings (fixed a priori): N = {N} frequencies (2N = {2 * N}), m = {M}, "
            f"RF-TCA mu = {MU}, lambda = {LAM} (public code), "
            f"{ROUNDS if not args.quick else 20} rounds x "
            f"{STEPS} local Adam steps (lr {LR}, batch {BATCH}), |S_t| ~ Unif{{0..K}}, "
            "T_C = 1; sigma = median of the clients' local median heuristics; "
            "softmax classifiers of the centralized columns get the same number of Adam "
            "steps. Accuracy on the whole target domain (%). Columns *_loso: the "
            "hyper-parameter chosen by leave-one-source-domain-out on the sources only "
            f"(lambda in {list(LAMS)}, mu in {list(MUS)}); ORACLE = best on the target labels, "
            "shown only to bound what tuning could give, never used.\n\n"
            "## Accuracy (%)\n\n" + markdown_table(main_rows, floatfmt=".1f") +
            "\n\n## ORACLE (target-tuned, for reference only)\n\n"
            + markdown_table(oracle, floatfmt=".1f") +
            "\n\n## What the MMD term does (mean over tasks)\n\n"
            + markdown_table(sweep_rows, floatfmt=".1f") +
            f"\n\nTraining budget (FedRF-TCA lambda = {LAM:g}; mean over tasks; LOSO = "
            "source-only validation, ORACLE = target):\n\n"
            + markdown_table(budget_rows, floatfmt=".1f") +
            "\n\nRF-TCA mu (mean over tasks):\n\n" + markdown_table(mu_rows, floatfmt=".1f")
            + f"\n\nRF-TCA output dimension m (mu = {MU:g}; mean over tasks):\n\n"
            + markdown_table(m_rows, floatfmt=".1f")
            + "\n\nDomain shift vs class separation in the random-feature mean embeddings:"
              "\n\n" + markdown_table(shift, floatfmt=".1f") +
            "\n\n## One-shot exact federated RF-TCA vs centralized RF-TCA\n\n"
            + markdown_table(one))
    write_results("federated_office", "FedRF-TCA on Office+Caltech SURF", body, rows, machine)


if __name__ == "__main__":
    main()
