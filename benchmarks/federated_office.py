"""FedRF-TCA on Office+Caltech SURF, multi-source (three labeled clients -> the fourth).

Per task: source only, centralized RF-TCA (closed form) + softmax, the one-shot federated
RF-TCA (difference to the centralized W), the same objective as FedRF-TCA trained centrally on
the pooled sources, FedAvg (lambda = 0) and iterative FedRF-TCA; then a robustness grid in the
simulator (message loss 0/10/30/50 % x T_C in {1, 10, 50}, client dropout, stragglers +
duplicates + reordering). All hyper-parameters are fixed a priori (below); the target labels are
used only to report the final accuracy.

    python benchmarks/federated_office.py [--tasks amazon caltech dslr webcam] [--quick]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, markdown_table, write_results  # noqa: E402

from shiftlearn.adaptation import RFTCA  # noqa: E402
from shiftlearn.federated import (  # noqa: E402
    FedRFTCAConfig,
    NetworkConditions,
    OneShotConfig,
    predict,
    run_iterative,
    run_oneshot,
    train_softmax,
)
from shiftlearn.federated._data import agree_bandwidth, load_all, local_bandwidth  # noqa: E402
from shiftlearn.kernels import rff_map  # noqa: E402

N, M, MU, LAM, ROUNDS, STEPS, LR, BATCH = 250, 50, 1.0, 1.0, 100, 5, 0.01, 128
CLF_STEPS = ROUNDS * STEPS   # the centralized classifiers get as many Adam steps


def _acc(Z, W, C, y):
    return float(np.mean(predict(Z, W, C) == y))


def softmax_on(Hs, ys, Ht, yt, seed=0):
    scale = np.sqrt(np.mean(np.sum(Hs ** 2, axis=1)))   # source RMS norm (no target labels)
    C = train_softmax(Hs / scale, ys, 10, steps=CLF_STEPS, lr=LR, batch_size=BATCH, seed=seed)
    return _acc(Ht / scale, np.eye(Hs.shape[1]), C, yt)


def run_task(target: str, quick: bool, robust: bool) -> dict:
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
    row: dict = {"task": ",".join(p.name[0].upper() for p in src) + "->" + target[0].upper(),
                 "sigma": sigma}
    t0 = time.perf_counter()
    row["source_only"] = softmax_on(Zs, ys, Zt, yt)
    # centralized RF-TCA (closed form) on the pooled data, then the same softmax
    X = np.vstack([Xs, tgt.X])
    y = np.r_[ys, -np.ones(len(yt), int)]
    sd = np.concatenate([np.full(len(p.X), p.domain_id) for p in parts])
    ref = RFTCA(n_components=M, mu=MU, n_features=N, bandwidth=sigma, random_state=0).fit(
        X, y, sample_domain=sd)
    row["rftca_central"] = softmax_on(ref.transform(Xs), ys, ref.transform(tgt.X), yt)
    # one-shot federated RF-TCA: the same W?
    one = run_oneshot([(p.X, p.y, p.domain_id) for p in parts],
                      OneShotConfig(n_features=N, n_components=M, sigma=sigma, seed=0, mu=MU),
                      n_classes=10)
    sign = np.sign(np.sum(one.W * ref.components_, axis=0))
    row["oneshot_max_abs_dW"] = float(np.max(np.abs(one.W * sign - ref.components_)))
    row["oneshot_bytes_up_per_client"] = one.traffic.max_message_bytes("up")
    # the FedRF-TCA objective trained centrally: one client with all sources, every round
    pooled = run_iterative([(Xs, ys)], tgt.X, FedRFTCAConfig(**{**cfg.__dict__,
                                                              "sampling": "all"}))
    row["same_objective_central"] = _acc(Zt, pooled.W, pooled.C, yt)
    fedavg = run_iterative([(p.X, p.y) for p in src], tgt.X,
                           FedRFTCAConfig(**{**cfg.__dict__, "lam": 0.0}))
    row["fedavg_lam0"] = _acc(Zt, fedavg.W, fedavg.C, yt)
    it = run_iterative([(p.X, p.y) for p in src], tgt.X, cfg)
    row["fedrftca"] = _acc(Zt, it.W, it.C, yt)
    per_round = it.traffic.per_round()
    row["fedrftca_bytes_per_round"] = float(np.mean([r["up_bytes"] + r["down_bytes"]
                                                     for r in per_round]))
    row["main_s"] = time.perf_counter() - t0
    print(row, flush=True)
    # robustness grid
    rob = []
    if not robust:
        row["robustness"] = rob
        return row
    settings = [(loss, tc, 0.0, "") for tc in (1, 10, 50) for loss in (0.0, 0.1, 0.3, 0.5)]
    settings += [(0.0, 1, 0.1, ""), (0.0, 1, 0.3, ""), (0.1, 1, 0.1, "mixed")]
    for loss, tc, drop, extra in settings:
        kw = {"loss": loss, "dropout": drop, "seed": 1}
        if extra == "mixed":
            kw.update(straggler=0.1, duplicate=0.1, reorder=True)
        c = FedRFTCAConfig(**{**cfg.__dict__, "classifier_every": tc})
        t1 = time.perf_counter()
        r = run_iterative([(p.X, p.y) for p in src], tgt.X, c,
                          conditions=NetworkConditions(**kw))
        rob.append({"task": row["task"], "loss": loss, "T_C": tc, "dropout": drop,
                    "faults": extra or "-", "accuracy": _acc(Zt, r.W, r.C, yt),
                    "rejected": sum(r.rejections.values()),
                    "seconds": time.perf_counter() - t1})
        print(rob[-1], flush=True)
    row["robustness"] = rob
    return row


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", nargs="+", default=["amazon", "caltech", "dslr", "webcam"])
    ap.add_argument("--robust-tasks", nargs="+", default=["amazon", "webcam"])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    logging.getLogger("shiftlearn.federated").setLevel(logging.ERROR)
    machine = header("FedRF-TCA on Office+Caltech SURF (3 sources -> 1 target)")
    rows = []
    for t in args.tasks:
        rows.append(run_task(t, args.quick, t in args.robust_tasks))
        _write(rows, machine, args)


def _write(rows, machine, args):
    cols = ["task", "source_only", "rftca_central", "same_objective_central", "fedavg_lam0",
            "fedrftca"]
    main_rows = [{c: (100 * r[c] if isinstance(r[c], float) else r[c]) for c in cols}
                 for r in rows]
    if len(rows) > 1:
        main_rows.append({"task": "mean", **{c: 100 * float(np.mean([r[c] for r in rows]))
                                             for c in cols[1:]}})
    one = [{"task": r["task"], "max abs(W_oneshot - W_central)": f"{r['oneshot_max_abs_dW']:.1e}",
            "one-shot upload / client (bytes)": r["oneshot_bytes_up_per_client"],
            "iterative bytes / round (all clients)": int(r["fedrftca_bytes_per_round"]),
            "sigma": f"{r['sigma']:.2f}"} for r in rows]
    rob_rows = []
    robust_tasks = [r["task"] for r in rows if r["robustness"]]
    if not robust_tasks:
        write_results("federated_office", "FedRF-TCA on Office+Caltech SURF",
                      markdown_table(main_rows, floatfmt=".1f"), rows, machine)
        return
    for tc in (1, 10, 50):
        d = {"T_C": tc}
        for loss in (0.0, 0.1, 0.3, 0.5):
            accs = [x["accuracy"] for r in rows for x in r["robustness"]
                    if x["T_C"] == tc and x["loss"] == loss and x["dropout"] == 0]
            d[f"loss {int(loss * 100)}%"] = 100 * float(np.mean(accs))
        rob_rows.append(d)
    other = []
    for drop, faults, name in ((0.1, "-", "dropout 10%"), (0.3, "-", "dropout 30%"),
                               (0.1, "mixed", "loss 10% + dropout 10% + stragglers 10% + "
                                              "duplicates 10% + reordering")):
        accs = [x["accuracy"] for r in rows for x in r["robustness"]
                if x["dropout"] == drop and x["faults"] == faults]
        rej = [x["rejected"] for r in rows for x in r["robustness"]
               if x["dropout"] == drop and x["faults"] == faults]
        other.append({"setting (T_C = 1)": name, "accuracy": 100 * float(np.mean(accs)),
                      "rejected replies (total)": int(np.sum(rej))})
    lossless = rob_rows[0]["loss 0%"]
    body = (f"Settings (fixed a priori): N = {N} frequencies (2N = {2 * N}), m = {M}, "
            f"RF-TCA mu = {MU}, lambda = {LAM}, {ROUNDS if not args.quick else 20} rounds x "
            f"{STEPS} local Adam steps (lr {LR}, batch {BATCH}), |S_t| ~ Unif{{0..K}}, "
            "T_C = 1 unless stated; sigma = median of the clients' local median heuristics; "
            "softmax classifiers of the centralized columns get the same number of Adam "
            "steps. Accuracy on the whole target domain (%).\n\n"
            "## Accuracy (%)\n\n" + markdown_table(main_rows, floatfmt=".1f") +
            "\n\n## One-shot exact federated RF-TCA vs centralized RF-TCA\n\n"
            + markdown_table(one) +
            f"\n\n## Robustness (mean over {', '.join(robust_tasks)}, %), simulator\n\n"
            + markdown_table(rob_rows, floatfmt=".1f")
            + f"\n\nLossless (T_C = 1): {lossless:.1f}; 30% loss: "
              f"{rob_rows[0]['loss 30%']:.1f} (difference "
              f"{rob_rows[0]['loss 30%'] - lossless:+.1f} points).\n\n"
            + markdown_table(other, floatfmt=".1f"))
    write_results("federated_office", "FedRF-TCA on Office+Caltech SURF", body, rows, machine)


if __name__ == "__main__":
    main()
