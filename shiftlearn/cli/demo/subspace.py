"""``shiftlearn demo subspace``: raw 1NN against the library's subspace adapters.

For each task (source domain -> target domain) of a real data set, the 1-nearest-neighbour
accuracy on the unlabeled target: on the raw features, then in the space each adapter (TCA,
SCA, RF-TCA, RF-SCA) learns from the labeled source and the unlabeled target rows.

Without ``--tuned`` every adapter keeps its default hyper-parameters; ``--tuned`` picks them
by 5-fold CV on the source labels over :data:`shiftlearn.model_selection.DEFAULT_GRIDS`. A
method that fails on one task is reported (``error`` in its cell, exit status 1) without hiding
the others.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import time
from collections.abc import Callable

import numpy as np

from ..._progress import task

#: Methods compared with raw 1NN: ``label -> ("module:Class", constructor kwargs, in the
#: default run?)``. ``random_state`` is set to ``--seed`` where the class accepts it.
DEMO_METHODS: dict[str, tuple[str, dict, bool]] = {
    "TCA": ("shiftlearn.adaptation:TCA", {}, True),
    "SCA": ("shiftlearn.adaptation:SCA", {}, True),
    "RF-TCA": ("shiftlearn.adaptation:RFTCA", {}, False),
    "RF-SCA": ("shiftlearn.adaptation:RFSCA", {}, False),
}

DATASETS = ("office_caltech", "mnist_usps", "msrc_voc")
_SHORT = {"amazon": "A", "caltech": "C", "dslr": "D", "webcam": "W", "mnist": "MNIST",
          "usps": "USPS", "msrc": "MSRC", "voc": "VOC"}


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    default = ", ".join(k for k, v in DEMO_METHODS.items() if v[2])
    p = subparsers.add_parser(
        "subspace", parents=parents,
        help="raw 1NN vs TCA/SCA on a real data set (the main demo)",
        description="1-nearest-neighbour accuracy on the unlabeled target domain of each task "
                    "of a real data set: raw features against the spaces the library's "
                    "adapters learn from the labeled source and the unlabeled target.")
    p.add_argument("--dataset", choices=DATASETS, default="office_caltech",
                   help="data set (default: %(default)s)")
    p.add_argument("--tasks", default="all",
                   help="'all' (default), 'quick' (the 4 smallest tasks) or a comma list of "
                        "source:target, e.g. 'A:W,C:D' or 'mnist:usps'")
    p.add_argument("--methods", default="default",
                   help=f"'default' (raw, {default}), 'all', or a comma list of raw, "
                        + ", ".join(DEMO_METHODS))
    p.add_argument("--tuned", action="store_true",
                   help="choose each adapter's hyper-parameters by 5-fold CV on the source "
                        "labels (the papers' protocol; slower) instead of using the defaults")
    return p


def _import_target(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def available_demo_methods(seed: int = 0) -> dict[str, Callable | str]:
    """``label -> estimator factory`` for importable methods, ``label -> reason`` otherwise."""
    out: dict[str, Callable | str] = {}
    for label, (target, kwargs, _) in DEMO_METHODS.items():
        try:
            cls = _import_target(target)
        except (ImportError, AttributeError) as exc:
            out[label] = f"not available ({exc})"
            continue
        try:
            params = inspect.signature(cls).parameters
        except (TypeError, ValueError):
            params = {}
        kw = {k: v for k, v in kwargs.items() if k in params}
        if "random_state" in params:
            kw["random_state"] = seed
        out[label] = (lambda cls=cls, kw=kw: cls(**kw))
    return out


def parse_tasks(spec: str | None, ds) -> list[tuple[str, str]]:
    """``"all"``, ``"quick"`` (the four smallest tasks) or ``"A:W,amazon:dslr"`` -> tasks."""
    if spec in (None, "all"):
        return list(ds.tasks)
    if spec == "quick":
        def size(t):
            return sum(ds.domains[d][0].shape[0] for d in t)
        return sorted(ds.tasks, key=size)[:4]
    tasks = []
    inverse = {v.lower(): k for k, v in _SHORT.items()}
    for item in spec.split(","):
        parts = item.replace("->", ":").split(":")
        if len(parts) != 2:
            raise ValueError(f"Bad task {item!r}: write source:target, e.g. amazon:webcam or A:W.")
        s, t = (inverse.get(p.strip().lower(), p.strip().lower()) for p in parts)
        for d in (s, t):
            ds.domain_id(d)  # clear error for unknown names
        tasks.append((s, t))
    return tasks


def _label(s: str, t: str) -> str:
    return f"{_SHORT.get(s, s)} -> {_SHORT.get(t, t)}"


def _one_nn_accuracy(Xs, ys, Xt, yt) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    return float(np.mean(KNeighborsClassifier(n_neighbors=1).fit(Xs, ys).predict(Xt) == yt))


def _source_cv_accuracy(adapter, grid: dict, X, y, sd, y_true) -> float:
    """Target 1NN accuracy of ``adapter`` with its hyper-parameters picked by 5-fold source CV."""
    from ...model_selection import fit_source_cv

    est = fit_source_cv(adapter, grid, X, y, sd)
    tgt = sd < 0
    return float(np.mean(est.predict(X[tgt]) == y_true[tgt]))


def _methods_to_run(spec: str, methods: dict) -> list[str]:
    if spec == "all":
        wanted = ["raw", *methods]
    elif spec == "default":
        wanted = ["raw", *(m for m, v in DEMO_METHODS.items() if v[2])]
    else:
        wanted = [m.strip() for m in spec.split(",")]
    unknown = [m for m in wanted if m != "raw" and m not in methods]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; choose from raw, {', '.join(methods)}.")
    return wanted


def run(args: argparse.Namespace) -> int:
    from ...datasets import LOADERS
    from ...model_selection import DEFAULT_GRIDS

    methods = available_demo_methods(args.seed)
    wanted = _methods_to_run(args.methods, methods)
    ds = LOADERS[args.dataset](args.data_home)
    tasks = parse_tasks(args.tasks, ds)
    skipped = {m: methods[m] for m in wanted if m != "raw" and isinstance(methods[m], str)}
    todo = [m for m in wanted if m not in skipped]

    print(f"shiftlearn demo subspace: {ds.description}; preprocessing {ds.preprocessing!r}")
    print(f"{len(tasks)} task(s); 1-nearest-neighbour accuracy (%) on the unlabeled target "
          "domain, the labeled source as training set.")
    if args.tuned:
        print("Adapters are fitted on source + unlabeled target rows; hyper-parameters chosen "
              "by 5-fold CV on the SOURCE labels only (the papers' protocol; grids in "
              "shiftlearn.model_selection.DEFAULT_GRIDS); 1NN then runs in the learned space.")
    else:
        print("Adapters are fitted on source + unlabeled target rows with their default "
              "hyper-parameters (nothing tuned on target labels); 1NN then runs in the "
              "learned space. --tuned chooses them by 5-fold CV on source labels.")
    for m, why in skipped.items():
        print(f"  {m}: {why}; skipped")
    width = max(9, *(len(m) + 5 for m in todo))
    head = f"{'task':16s}" + "".join(f"{m + ' 1NN':>{width}s}" for m in todo)
    print("")
    print(head)
    print("-" * len(head))
    accs: dict[str, list[float]] = {m: [] for m in todo}
    secs = dict.fromkeys(todo, 0.0)
    failed = []
    with task(f"{ds.name}: tasks x methods", len(tasks) * len(todo)) as advance:
        for s, t in tasks:
            X, y, sd, y_true = ds.pack(s, t, return_masked_labels=True)
            src, tgt = sd > 0, sd < 0
            cells = []
            for m in todo:
                advance(0, description=f"{_label(s, t)}: {m}")
                t0 = time.perf_counter()
                try:
                    if m == "raw":
                        acc = 100 * _one_nn_accuracy(X[src], y[src], X[tgt], y_true[tgt])
                    elif args.tuned:
                        acc = 100 * _source_cv_accuracy(methods[m](), DEFAULT_GRIDS.get(m, {}),
                                                        X, y, sd, y_true)
                    else:
                        Z = methods[m]().fit_transform(X, y, sd)
                        acc = 100 * _one_nn_accuracy(Z[src], y[src], Z[tgt], y_true[tgt])
                except Exception as exc:  # report and go on: one broken method must not hide others
                    failed.append(f"{m} on {_label(s, t)}: {type(exc).__name__}: {exc}")
                    acc = float("nan")
                secs[m] += time.perf_counter() - t0
                accs[m].append(acc)
                cells.append(f"{acc:{width}.2f}" if np.isfinite(acc) else f"{'error':>{width}s}")
                advance()
            print(f"{_label(s, t):16s}" + "".join(cells), flush=True)
    print("-" * len(head))
    print(f"{'mean':16s}" + "".join(f"{np.mean(accs[m]):{width}.2f}" for m in todo))
    print(f"{'time (s)':16s}" + "".join(f"{secs[m]:{width}.1f}" for m in todo))
    if args.dataset == "office_caltech" and len(tasks) == 12:
        print("Literature (1NN, 12 tasks): raw 31.37; SCA 45.16 (secondary source, see "
              "docs/datasets.md).")
    for f in failed:
        print(f"FAILED: {f}")
    return 1 if failed else 0
