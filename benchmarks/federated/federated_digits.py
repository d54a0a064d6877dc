"""Deep FedRF-TCA on digits: the paper's kind of experiment, 5 seeds, mean ± std.

Domains (``shiftlearn.federated._data``): MNIST (2,000) and USPS (1,800), the 16 x 16 subset
of the data home, and scikit-learn's 1,797 UCI digits enlarged to 16 x 16. Clients = domains:
the two other domains are the sources, every direction with USPS or MNIST as the target. The
model is the job's (``job_config({"dataset": "digits"})``: CNN extractor -> L2 -> shared-Omega
random features -> W -> FCNN 2 x 100), trained for the job's rounds x local Adam steps.

Rows of the table (every one the same model, the same number of Adam steps per party):

* ``source only``: one party, pooled sources, lambda = 0 (``train_central``);
* ``FedAvg``: federated, lambda = 0, the whole model averaged (``algorithm="fedavg"``);
* ``FedRF-TCA``: federated, lambda chosen *without target labels* by leave-one-source-domain-out
  (each source in turn is the pseudo-target of a one-source federation of the other; ``--stage
  loso``; the candidates are ``LAMS``);
* ``centralized``: one party, pooled sources + target, the same objective with that lambda;
* ``oracle``: FedRF-TCA with the lambda of ``LAMS`` that is best on the target labels
  (mean over seeds; reference only).

Variants (same lambda): 30 % message loss (``NetworkConditions(loss=0.3)``), the paper's message
subsets II / III, hard voting (D-B3), and a T_C sweep (classifier + extractor averaging every T_C
rounds, ``SWEEP_ROUNDS`` rounds) against FedAvg averaging every T_C rounds. Bytes per round are
read off the simulator's traffic of the trained runs, and measured again with a quarter of the
rows per client (``--stage bytes``). Every run is a unit of a resumable checkpoint
(``results/_federated_digits_parts.json``); ``--stage report`` writes the tables. ::

    OMP_NUM_THREADS=1 python benchmarks/federated/federated_digits.py --stage all
    # or one process per target on two cores (the checkpoint is shared):
    OMP_NUM_THREADS=1 python benchmarks/federated/federated_digits.py --stage table --targets usps

Internals on purpose: the federated simulation harness (``_data``, ``_jobs``, ``_deep``), which
``shiftlearn.federated`` does not export. PyTorch is imported by the stages, not at module level,
so ``tests/house/test_benchmarks.py`` imports this script without the deep extra.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import (  # noqa: E402
    PartsFile,
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)

from shiftlearn.federated import NetworkConditions, run_iterative  # noqa: E402
from shiftlearn.federated._data import DIGIT_DOMAINS, digit_domains, load_all  # noqa: E402
from shiftlearn.federated.jobs import iterative_config, job_config, resolve_sigma  # noqa: E402

TARGETS = ("usps", "mnist")
LAMS = (0.1, 0.3, 1.0)
PROJECTED_LAMS = (0.3, 1.0)
SEEDS = (0, 1, 2, 3, 4)
LOSO_SEEDS = (0,)
SWEEP_TC = (1, 10, 50, 200)
SWEEP_ROUNDS = 200
SWEEP_SEEDS = (0, 1, 2)
K_CLASSES = 10


def _parts_file() -> PartsFile:
    return PartsFile(results_dir(__file__) / "_federated_digits_parts.json")


def _job(target: str) -> dict:
    return job_config({"dataset": "digits", "target": target})


def _config(target: str, seed: int, **over):
    job = _job(target)
    return replace(iterative_config(job, resolve_sigma(job, [])), seed=seed, **over)


_DATA: dict = {}


def _clients(target: str):
    if target not in _DATA:
        _DATA[target] = load_all(_job(target))
    parts = _DATA[target]
    return [(p.X, p.y) for p in parts[:-1]], parts[-1].X, parts[-1].y_true


def _score(pred: np.ndarray, y: np.ndarray) -> dict:
    return {"acc": float(np.mean(pred == y)),
            "pred_hist": np.bincount(pred, minlength=K_CLASSES).tolist(),
            "recall": [float(np.mean(pred[y == c] == c)) for c in range(K_CLASSES)]}


def _traffic(res) -> dict:
    per = res.traffic.per_round()
    total = [r["up_bytes"] + r["down_bytes"] for r in per]
    return {"bytes_per_round_mean": float(np.mean(total)), "bytes_total": int(sum(total)),
            "bytes_per_round_max": int(max(total))}


def _unit(store: PartsFile, key: str, fn, *args, **kw) -> dict:
    """``fn(*args, **kw)`` once: its result is kept in the checkpoint under ``key``."""
    done = store.load()
    if key in done:
        return done[key]
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    out["seconds"] = time.perf_counter() - t0
    store.save(key, out)
    print(f"{key}: {100 * out['acc']:.1f}% ({out['seconds']:.0f} s)", flush=True)
    return out


def run_central(target: str, seed: int, lam: float) -> dict:
    from shiftlearn.federated._deep import predict_deep, train_central

    src, Xt, yt = _clients(target)
    cfg = _config(target, seed, lam=lam)
    model = train_central(src, Xt, cfg, K_CLASSES, lam=lam)
    return _score(predict_deep(cfg, model, Xt, K_CLASSES), yt)


def run_fed(target: str, seed: int, lam: float, *, loss: float = 0.0, **over) -> dict:
    src, Xt, yt = _clients(target)
    cfg = _config(target, seed, lam=lam, **over)
    cond = NetworkConditions(loss=loss, seed=seed) if loss else None
    res = run_iterative(src, Xt, cfg, n_classes=K_CLASSES, conditions=cond)
    out = _score(res.predict(Xt, cfg), yt)
    out.update(_traffic(res))
    out["classifier_averages"] = sum(bool(h["C_from"]) for h in res.history)
    if cfg.vote:
        out["voters"] = sorted(res.vote_C)
    return out


def run_loso(source: str, pseudo_target: str, seed: int, lam: float,
             mmd: str = "kernel") -> dict:
    """One-source federation ``source -> pseudo_target`` (both labeled source domains of a
    real task; the pseudo-target's labels score, the real target is not used)."""
    dom = digit_domains()
    Xs, ys = dom[source]
    Xt, yt = dom[pseudo_target]
    cfg = _config("usps", seed, lam=lam, mmd=mmd)
    res = run_iterative([(Xs, ys)], Xt, cfg, n_classes=K_CLASSES)
    return _score(res.predict(Xt, cfg), yt)


def loso_pairs(target: str) -> list[tuple[str, str]]:
    a, b = [d for d in DIGIT_DOMAINS if d != target]
    return [(a, b), (b, a)]


#: LOSO candidates: (MMD term, lambda); the projected term (the paper's) is a candidate too
CANDIDATES = [("kernel", g) for g in LAMS] + [("projected", g) for g in PROJECTED_LAMS]


def _loso_key(s: str, t: str, mmd: str, lam: float, seed: int) -> str:
    return f"loso|{s}>{t}|{mmd}|{lam}|{seed}"


def chosen_lam(store: PartsFile, target: str) -> tuple[float, dict]:
    """LOSO choice for ``target`` (mean pseudo-target accuracy over pairs and seeds) among
    :data:`CANDIDATES`; returns the chosen lambda of the ``kernel`` term (the model's) and the
    scores ``{(mmd, lam): acc}``. A choice of the projected term is reported, not used: the
    job's term is fixed in ``DATASET_DEFAULTS``."""
    done = store.load()
    score = {}
    for mmd, lam in CANDIDATES:
        keys = [_loso_key(s, t, mmd, lam, seed) for s, t in loso_pairs(target)
                for seed in LOSO_SEEDS]
        if all(k in done for k in keys):
            score[(mmd, lam)] = float(np.mean([done[k]["acc"] for k in keys]))
    kernel = {lam: v for (mmd, lam), v in score.items() if mmd == "kernel"}
    if not kernel:
        raise RuntimeError("run --stage loso first")
    return max(kernel, key=kernel.get), score


def stage_loso(store, targets=TARGETS):
    for target in track(targets, "leave-one-source-out: targets"):
        for s, t in loso_pairs(target):
            for mmd, lam in CANDIDATES:
                for seed in LOSO_SEEDS:
                    _unit(store, _loso_key(s, t, mmd, lam, seed), run_loso, s, t, seed, lam,
                          mmd)


def stage_table(store, seeds, targets=TARGETS):
    for seed in track(seeds, "table: seeds"):
        for target in targets:
            lam, _ = chosen_lam(store, target)
            _unit(store, f"{target}|{seed}|so", run_central, target, seed, 0.0)
            _unit(store, f"{target}|{seed}|fedavg", run_fed, target, seed, 0.0,
                  algorithm="fedavg")
            for g in LAMS:
                _unit(store, f"{target}|{seed}|fed|{g}", run_fed, target, seed, g)
            _unit(store, f"{target}|{seed}|central|{lam}", run_central, target, seed, lam)


def stage_variants(store, seeds, targets=TARGETS):
    for seed in track(seeds, "variants: seeds"):
        for target in targets:
            lam, _ = chosen_lam(store, target)
            _unit(store, f"{target}|{seed}|loss30|{lam}", run_fed, target, seed, lam, loss=0.3)
            for sub in ("II", "III"):
                _unit(store, f"{target}|{seed}|subsets{sub}|{lam}", run_fed, target, seed, lam,
                      subsets=sub)
            _unit(store, f"{target}|{seed}|vote|{lam}", run_fed, target, seed, lam, vote=True)


def stage_sweep(store, seeds, targets=TARGETS):
    for seed in track(seeds, "T_C sweep: seeds"):
        for target in targets:
            lam, _ = chosen_lam(store, target)
            for tc in SWEEP_TC:
                _unit(store, f"{target}|{seed}|sweep|fed|{tc}", run_fed, target, seed, lam,
                      classifier_every=tc, n_rounds=SWEEP_ROUNDS)
                _unit(store, f"{target}|{seed}|sweep|fedavg|{tc}", run_fed, target, seed, 0.0,
                      algorithm="fedavg", classifier_every=tc, n_rounds=SWEEP_ROUNDS)


def _bytes_run(src, Xt, frac: float) -> dict:
    rng = np.random.default_rng(0)
    rows = [rng.permutation(len(X))[:int(frac * len(X))] for X, _ in src]
    s = [(X[r], y[r]) for (X, y), r in zip(src, rows, strict=True)]
    t = Xt[:int(frac * len(Xt))]
    out = {"acc": float("nan"), "rows": [len(r) for r in rows] + [len(t)]}
    for algo, lam in (("fedrftca", 0.3), ("fedavg", 0.0)):
        cfg = _config("usps", 0, lam=lam, algorithm=algo, n_rounds=5, client_sampling="all")
        res = run_iterative(s, t, cfg, n_classes=K_CLASSES)
        out[algo] = [(r["up_bytes"], r["down_bytes"]) for r in res.traffic.per_round()]
    return out


def stage_bytes(store):
    """Bytes per round with all rows vs a quarter of every client's rows (5 rounds)."""
    src, Xt, _ = _clients("usps")
    for frac in (1.0, 0.25):
        _unit(store, f"bytes|{frac}", _bytes_run, src, Xt, frac)


# ------------------------------------------------------------------------------------ report
def _ms(values) -> str:
    v = 100 * np.asarray(values, dtype=float)
    return f"{v.mean():.1f} ± {v.std():.1f}"


def _per_seed(done, key_of, seeds, targets=TARGETS):
    """{target: [acc per seed]} and the mean over targets per seed (None if incomplete)."""
    out = {}
    for t in targets:
        keys = [key_of(t, s) for s in seeds]
        if not all(k in done for k in keys):
            return None
        out[t] = [done[k]["acc"] for k in keys]
    out["mean"] = list(np.mean([out[t] for t in targets], axis=0))
    return out


def report(store, seeds, machine):
    from shiftlearn.federated._deep import resolve_device

    done = store.load()
    lam = {t: chosen_lam(store, t) for t in TARGETS}
    oracle = {}
    for t in TARGETS:
        means = {g: np.mean([done[f"{t}|{s}|fed|{g}"]["acc"] for s in seeds]) for g in LAMS
                 if all(f"{t}|{s}|fed|{g}" in done for s in seeds)}
        oracle[t] = max(means, key=means.get) if means else None
    rows_def = [
        ("source only", lambda t, s: f"{t}|{s}|so"),
        ("FedAvg", lambda t, s: f"{t}|{s}|fedavg"),
        ("FedRF-TCA", lambda t, s: f"{t}|{s}|fed|{lam[t][0]}"),
        ("centralized", lambda t, s: f"{t}|{s}|central|{lam[t][0]}"),
        ("oracle", lambda t, s: f"{t}|{s}|fed|{oracle[t]}"),
        ("FedRF-TCA, 30 % message loss", lambda t, s: f"{t}|{s}|loss30|{lam[t][0]}"),
        ("FedRF-TCA, subsets II (A/A/B)", lambda t, s: f"{t}|{s}|subsetsII|{lam[t][0]}"),
        ("FedRF-TCA, subsets III (A/B/C)", lambda t, s: f"{t}|{s}|subsetsIII|{lam[t][0]}"),
        ("FedRF-TCA, hard voting (D-B3)", lambda t, s: f"{t}|{s}|vote|{lam[t][0]}"),
    ]
    table, per = [], {}
    for name, key_of in rows_def:
        ps = _per_seed(done, key_of, seeds)
        if ps is None:
            continue
        per[name] = ps
        row = {"row": name}
        for t in TARGETS:
            row[f"-> {t}"] = _ms(ps[t])
        row["mean of directions"] = _ms(ps["mean"])
        table.append(row)
    gaps = []
    for a, b in (("FedRF-TCA", "FedAvg"), ("FedRF-TCA", "source only"),
                 ("FedRF-TCA", "centralized"), ("FedRF-TCA, 30 % message loss", "FedRF-TCA"),
                 ("FedRF-TCA, subsets III (A/B/C)", "FedRF-TCA")):
        if a in per and b in per:
            d = 100 * np.subtract(per[a]["mean"], per[b]["mean"])
            gaps.append({"paired difference (mean of directions, points)": f"{a} - {b}",
                         "mean ± std over seeds": f"{d.mean():+.1f} ± {d.std():.1f}",
                         "per seed": " / ".join(f"{x:+.1f}" for x in d)})
    lam_rows = []
    for t in TARGETS:
        best, score = lam[t]
        lam_rows.append({"target": t, "LOSO pairs": ", ".join(f"{a}->{b}"
                                                               for a, b in loso_pairs(t)),
                         **{f"{m} lam={g:g}": f"{100 * v:.1f}" for (m, g), v in score.items()},
                         "chosen (kernel)": f"{best:g}",
                         "oracle (target labels)": f"{oracle[t]:g}"})
    grid_rows = []
    for t in TARGETS:
        row = {"target": t}
        for g in LAMS:
            ps = _per_seed(done, lambda t2, s, g=g: f"{t2}|{s}|fed|{g}", seeds, (t,))
            row[f"lam={g:g}"] = _ms(ps[t]) if ps else "-"
        grid_rows.append(row)
    # why ->usps does not gain: predicted class proportions vs the true ones
    diag = []
    yt = {t: _clients(t)[2] for t in TARGETS}
    for t in TARGETS:
        true = np.bincount(yt[t], minlength=K_CLASSES) / len(yt[t])
        for name, key_of in rows_def[:3]:
            keys = [key_of(t, s) for s in seeds if key_of(t, s) in done]
            if not keys:
                continue
            hist = np.mean([np.asarray(done[k]["pred_hist"]) / len(yt[t]) for k in keys], 0)
            rec = np.mean([done[k]["recall"] for k in keys], axis=0)
            diag.append({"target": t, "row": name,
                         "TV(predicted, true class proportions)":
                             f"{0.5 * np.abs(hist - true).sum():.3f}",
                         "recall of digit 0 / 1": f"{100 * rec[0]:.0f} / {100 * rec[1]:.0f}",
                         "min recall (digit)": f"{100 * rec.min():.0f} ({int(rec.argmin())})"})
    sweep = []
    sweep_seeds = sorted({int(k.split("|")[1]) for k in done if "|sweep|" in k})
    for tc in SWEEP_TC:
        row = {"T_C": tc}
        for algo in ("fed", "fedavg"):
            ps = _per_seed(done, lambda t, s, tc=tc, a=algo: f"{t}|{s}|sweep|{a}|{tc}",
                           sweep_seeds)
            name = "FedRF-TCA" if algo == "fed" else "FedAvg"
            row[name] = _ms(ps["mean"]) if ps else "-"
            if ps:
                for t in TARGETS:
                    row[f"{name} -> {t}"] = _ms(ps[t])
                b = [done[f"{t}|{s}|sweep|{algo}|{tc}"]["bytes_per_round_mean"]
                     for t in TARGETS for s in sweep_seeds]
                row[f"{name} MB/round"] = f"{np.mean(b) / 1e6:.2f}"
        sweep.append(row)
    byte_rows = []
    for name, key_of in rows_def[1:3]:
        b = [done[key_of(t, s)]["bytes_per_round_mean"] for t in TARGETS for s in seeds
             if key_of(t, s) in done]
        if b:
            byte_rows.append({"run": name, "bytes per round (mean over rounds, runs)":
                              f"{np.mean(b):,.0f}", "MB": f"{np.mean(b) / 1e6:.2f}"})
    scaling = {k: done[k] for k in ("bytes|1.0", "bytes|0.25") if k in done}
    secs = {name: np.mean([done[key_of(t, s)]["seconds"] for t in TARGETS for s in seeds
                           if key_of(t, s) in done]) for name, key_of in rows_def[:4]}
    cfg = _config("usps", 0)
    body = [
        f"device: {resolve_device(cfg.device).upper()} (no GPU in this run); torch "
        f"{__import__('torch').__version__}, 1 thread.",
        f"Model: extractor `{cfg.extractor}`, classifier `{cfg.classifier}`, N = "
        f"{cfg.n_features} (2N = {2 * cfg.n_features}), m = {cfg.n_components}, sigma = "
        f"{cfg.sigma:g} (on L2-normalised features), MMD term `{cfg.mmd}`, {cfg.n_rounds} "
        f"rounds x {cfg.local_steps} Adam steps (lr {cfg.lr:g}, batch {cfg.batch_size}), T_C = "
        f"{cfg.classifier_every}, sampling `{cfg.client_sampling}` (|S_t| ~ Unif{{0..K}}), K = 2 "
        f"sources (one client per domain). Seeds {list(seeds)} (the seed draws Omega, the "
        "initial model, the sampling, the mini-batches and the network faults). Accuracy (%) "
        "on the whole target domain, mean ± std over seeds.",
        "", markdown_table(table), "",
        "Mean seconds per run (wall, shared 2-core machine): "
        + ", ".join(f"{k} {v:.0f} s" for k, v in secs.items() if np.isfinite(v)) + ".",
        "", "### Paired differences", "", markdown_table(gaps) if gaps else "-", "",
        "### lambda: leave-one-source-domain-out choice (no target labels) and the grid", "",
        markdown_table(lam_rows), "", markdown_table(grid_rows), "",
        "### Class proportions on the target (the diagnosis of a direction without gain)", "",
        markdown_table(diag) if diag else "-", "",
        f"### T_C sweep ({SWEEP_ROUNDS} rounds, seeds {sweep_seeds}; FedAvg averages the whole "
        "model every T_C rounds)", "", markdown_table(sweep), "",
        "### Bytes per round (measured on the trained runs' messages, float64)", "",
        markdown_table(byte_rows) if byte_rows else "-", "",
        "Same 5 rounds with every row vs a quarter of every client's rows (up, down bytes per "
        "round): " + "; ".join(
            f"{k}: rows {v['rows']}, FedRF-TCA {v['fedrftca']}, FedAvg {v['fedavg']}"
            for k, v in scaling.items()),
    ]
    write_results("federated_digits", "Deep FedRF-TCA on digits (MNIST, USPS, UCI)",
                  "\n".join(body), {"units": done, "lam": {t: lam[t][0] for t in TARGETS},
                                    "oracle_lam": oracle}, machine)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", default="all",
                    choices=["loso", "table", "variants", "sweep", "bytes", "report", "all"])
    ap.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    ap.add_argument("--sweep-seeds", nargs="+", type=int, default=list(SWEEP_SEEDS))
    ap.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS,
                    help="targets to run (one process per target runs them in parallel; the "
                    "checkpoint is shared)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    logging.getLogger("shiftlearn.federated").setLevel(logging.ERROR)
    machine = header("Deep FedRF-TCA on digits")
    store = _parts_file()
    stages = (["loso", "table", "variants", "bytes", "sweep", "report"] if args.stage == "all"
              else [args.stage])
    for st in track(stages, "stages"):
        if st == "loso":
            stage_loso(store, args.targets)
        elif st == "table":
            stage_table(store, args.seeds, args.targets)
        elif st == "variants":
            stage_variants(store, args.seeds, args.targets)
        elif st == "sweep":
            stage_sweep(store, args.sweep_seeds, args.targets)
        elif st == "bytes":
            stage_bytes(store)
        else:
            report(store, args.seeds, machine)


if __name__ == "__main__":
    main()
