"""The ``shiftlearn`` command line.

Built-in subcommands: ``datasets`` (list the data sets, verify their checksums, download missing
files), ``demo`` (the main job: raw 1NN against the library's adapters on a real data set) and
``mmd`` (a two-sample MMD permutation test between domains). Subpackages add their own
subcommand with one line in :data:`COMMANDS`: ``"name": ("module:function", "help")``, where
the function is ``main(argv: list[str]) -> int`` and parses its own arguments.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
import time
from collections.abc import Callable

import numpy as np

# --------------------------------------------------------------------------------------------
# registry of subcommands contributed by subpackages (one line each)
# --------------------------------------------------------------------------------------------
#: ``name -> ("package.module:function", one-line help)``; ``function(argv) -> exit code``.
COMMANDS: dict[str, tuple[str, str]] = {
    "adapt": ("shiftlearn.adaptation._cli:main",
              "adapt your own labeled source file(s) to an unlabeled target file; report"),
    "boosting": ("shiftlearn.boosting._cli:main",
                 "multi-task boosting vs its baselines on the synthetic monotone-shift pair"),
    "marginal": ("shiftlearn.generalization._cli:main",
                 "marginal transfer vs pooling on rotated-ellipse DG tasks"),
    "splits": ("shiftlearn.model_selection._cli:main",
               "compare validation splits (random / leave-one-domain-out / cluster MMD)"),
    "federated": ("shiftlearn.federated._cli:main",
                  "federated RF-TCA: simulate, loopback Flower run, app files"),
}

#: Methods the demo compares with raw 1NN:
#: ``label -> ("module:Class", constructor kwargs, in the default run?)``. A method whose class
#: cannot be imported yet is listed as "not available" and skipped.
DEMO_METHODS: dict[str, tuple[str, dict, bool]] = {
    "TCA": ("shiftlearn.adaptation:TCA", {}, True),
    "SCA": ("shiftlearn.adaptation:SCA", {}, True),
    "RF-TCA": ("shiftlearn.adaptation:RFTCA", {"random_state": 0}, False),
    "RF-SCA": ("shiftlearn.adaptation:RFSCA", {"random_state": 0}, False),
}

#: ``demo --tuned`` and ``adapt --tune``: the grid each method's 5-fold source CV searches
#: (keys the estimator lacks are dropped); small enough for 12 Office+Caltech tasks in a few
#: minutes on 2 cores.
DEMO_GRIDS: dict[str, dict[str, list]] = {
    "TCA": {"kernel": ["linear", "rbf"], "n_components": [10, 20, 30, 50]},
    "SCA": {"kernel": ["linear", "rbf"], "beta": [0.1, 0.5, 0.9], "whiten": [False],
            "n_components": [10, 20, 30, 50]},
    "uSCA": {"kernel": ["linear", "rbf"], "delta": [0.1, 1.0, 10.0], "whiten": [False],
             "n_components": [10, 20, 30, 50]},
    "RF-TCA": {"n_components": [10, 20, 30, 50]},
    "RF-SCA": {"beta": [0.1, 0.5, 0.9], "whiten": [False], "n_components": [10, 20, 30, 50]},
}

DEMO_DATASETS = ("office_caltech", "mnist_usps", "msrc_voc")
_SHORT = {"amazon": "A", "caltech": "C", "dslr": "D", "webcam": "W", "mnist": "MNIST",
          "usps": "USPS", "msrc": "MSRC", "voc": "VOC"}


def register_command(name: str, target: str, help: str = "") -> None:
    """Add a subcommand at run time: ``target = "module:function"``, ``function(argv) -> int``."""
    if name in _BUILTIN:
        raise ValueError(f"{name!r} is a built-in shiftlearn subcommand.")
    if ":" not in target:
        raise ValueError(f"target must look like 'package.module:function', got {target!r}.")
    COMMANDS[name] = (target, help)


def _import_target(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _say(msg: str) -> None:
    print(msg, flush=True)


def _progress(msg: str) -> None:
    """A transient progress note on stderr (only when it is a terminal)."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K" + msg)
        sys.stderr.flush()


# --------------------------------------------------------------------------------------------
# shiftlearn datasets
# --------------------------------------------------------------------------------------------
def _fmt_size(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MB" if n_bytes >= 2**20 else f"{n_bytes / 1024:.0f} kB"


def _domain_summary(ds) -> str:
    sizes = [(d, ds.domains[d][0].shape[0]) for d in ds.domain_names]
    if len(sizes) > 6:
        total = sum(n for _, n in sizes)
        return (f"{len(sizes)} domains ({sizes[0][0]} .. {sizes[-1][0]}, "
                f"{min(n for _, n in sizes)}-{max(n for _, n in sizes)} rows each), "
                f"{total} rows")
    return ", ".join(f"{d} {n}" for d, n in sizes)


def _cmd_datasets(args: argparse.Namespace) -> int:
    from .datasets import FILES, LOADERS, DataFileError, fetch_file, get_data_home

    home = get_data_home(args.data_home)
    _say(f"data home: {home}")
    bad = 0
    for name, loader in LOADERS.items():
        ok = True
        lines = []
        for spec in FILES[name]:
            try:
                path = fetch_file(spec, args.data_home, download=args.download)
                status = f"{_fmt_size(path.stat().st_size):>8s}  ok (sha256 verified)"
            except DataFileError as exc:
                status = f"FAILED: {exc}"
                ok = False
                bad += 1
            lines.append(f"    {spec.relpath():52s} {status}")
        if ok:
            ds = loader(args.data_home, download=False)
            X0 = ds.domains[ds.domain_names[0]][0]
            _say(f"{name}: {ds.description}; {X0.shape[1]} features")
            _say(f"    domains: {_domain_summary(ds)}")
            _say(f"    preprocessing: {ds.preprocessing}; "
                 f"{len(ds.tasks)} customary tasks" if ds.tasks else
                 f"    preprocessing: {ds.preprocessing}; target: {ds.target_name}")
        else:
            _say(f"{name}:")
        for line in lines:
            _say(line)
    if bad:
        _say(f"{bad} file(s) missing or corrupt. Run `shiftlearn datasets --download` or point "
             "SHIFTLEARN_DATA (or --data-home) at a folder holding them.")
    return 1 if bad else 0


# --------------------------------------------------------------------------------------------
# shiftlearn demo
# --------------------------------------------------------------------------------------------
def _one_nn_accuracy(Xs, ys, Xt, yt) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    return float(np.mean(KNeighborsClassifier(n_neighbors=1).fit(Xs, ys).predict(Xt) == yt))


def available_demo_methods() -> dict[str, Callable | str]:
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
        kw = {k: v for k, v in kwargs.items() if k in params}  # e.g. random_state if accepted
        out[label] = (lambda cls=cls, kw=kw: cls(**kw))
    return out


def _parse_tasks(spec: str | None, ds) -> list[tuple[str, str]]:
    if spec in (None, "all"):
        return list(ds.tasks)
    if spec == "quick":  # the four smallest customary tasks
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


def _task_label(s: str, t: str) -> str:
    return f"{_SHORT.get(s, s)} -> {_SHORT.get(t, t)}"


def source_cv_estimator(adapter, grid: dict, classifier=None, *, cv: int = 5,
                        verbose: int = 0):
    """``DomainAdaptationClassifier(adapter, classifier)`` (1NN when ``classifier`` is None),
    wrapped in a ``cv``-fold :class:`~shiftlearn.model_selection.SourceCVSearch` over the keys
    of ``grid`` the adapter has; unwrapped when none of them applies. Not fitted."""
    from sklearn.neighbors import KNeighborsClassifier

    from .adaptation import DomainAdaptationClassifier
    from .model_selection import SourceCVSearch

    names = adapter.get_params()
    param_grid = {f"adapter__{k}": v for k, v in grid.items() if k in names}
    est = DomainAdaptationClassifier(adapter, classifier or KNeighborsClassifier(n_neighbors=1))
    return SourceCVSearch(est, param_grid, cv=cv, verbose=verbose) if param_grid else est


def _source_cv_accuracy(adapter, grid: dict, X, y, sd, y_true) -> float:
    """Target 1NN accuracy of ``adapter`` with its hyper-parameters picked by 5-fold source CV."""
    est = source_cv_estimator(adapter, grid).fit(X, y, sd)
    tgt = sd < 0
    return float(np.mean(est.predict(X[tgt]) == y_true[tgt]))


def _cmd_demo(args: argparse.Namespace) -> int:
    from .datasets import LOADERS

    ds = LOADERS[args.dataset](args.data_home)
    tasks = _parse_tasks(args.tasks, ds)
    methods = available_demo_methods()
    if args.methods == "all":
        wanted = ["raw", *methods]
    elif args.methods == "default":
        wanted = ["raw", *(m for m, spec in DEMO_METHODS.items() if spec[2])]
    else:
        wanted = [m.strip() for m in args.methods.split(",")]
    unknown = [m for m in wanted if m != "raw" and m not in methods]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; choose from raw, {', '.join(methods)}.")
    skipped = {m: methods[m] for m in wanted if m != "raw" and isinstance(methods[m], str)}
    run = [m for m in wanted if m not in skipped]

    _say(f"shiftlearn demo: {ds.description}; preprocessing {ds.preprocessing!r}")
    _say(f"{len(tasks)} task(s); 1-nearest-neighbour accuracy (%) on the unlabeled target domain, "
         "the labeled source as training set.")
    if args.tuned:
        _say("Adapters are fitted on source + unlabeled target rows; hyper-parameters chosen by "
             "5-fold CV on the SOURCE labels only (the papers' protocol; grids in "
             "shiftlearn.cli.DEMO_GRIDS); 1NN then runs in the learned space.")
    else:
        _say("Adapters are fitted on source + unlabeled target rows with their default "
             "hyper-parameters (nothing tuned on target labels); 1NN then runs in the learned "
             "space. --tuned chooses them by 5-fold CV on source labels.")
    for m, why in skipped.items():
        _say(f"  {m}: {why}; skipped")
    width = max(9, *(len(m) + 5 for m in run))
    head = f"{'task':16s}" + "".join(f"{(m if m == 'raw' else m) + ' 1NN':>{width}s}"
                                     for m in run)
    _say("")
    _say(head)
    _say("-" * len(head))
    accs = {m: [] for m in run}
    secs = dict.fromkeys(run, 0.0)
    failed = []
    for i, (s, t) in enumerate(tasks, 1):
        X, y, sd, y_true = ds.pack(s, t, return_masked_labels=True)
        src, tgt = sd > 0, sd < 0
        cells = []
        for m in run:
            _progress(f"[{i}/{len(tasks)}] {_task_label(s, t)}: {m} ...")
            t0 = time.perf_counter()
            try:
                if m == "raw":
                    acc = 100 * _one_nn_accuracy(X[src], y[src], X[tgt], y_true[tgt])
                elif args.tuned:
                    acc = 100 * _source_cv_accuracy(methods[m](), DEMO_GRIDS.get(m, {}),
                                                    X, y, sd, y_true)
                else:
                    Z = methods[m]().fit_transform(X, y, sd)
                    acc = 100 * _one_nn_accuracy(Z[src], y[src], Z[tgt], y_true[tgt])
            except Exception as exc:  # report and go on: one broken method must not hide others
                failed.append(f"{m} on {_task_label(s, t)}: {type(exc).__name__}: {exc}")
                acc = float("nan")
            secs[m] += time.perf_counter() - t0
            accs[m].append(acc)
            cells.append(f"{acc:{width}.2f}" if np.isfinite(acc) else f"{'error':>{width}s}")
        _progress("")
        _say(f"{_task_label(s, t):16s}" + "".join(cells))
    _say("-" * len(head))
    _say(f"{'mean':16s}" + "".join(f"{np.mean(accs[m]):{width}.2f}" for m in run))
    _say(f"{'time (s)':16s}" + "".join(f"{secs[m]:{width}.1f}" for m in run))
    if args.dataset == "office_caltech" and len(tasks) == 12:
        _say("Literature (1NN, 12 tasks): raw 31.37; SCA 45.16 (secondary source, see "
             "docs/datasets.md).")
    for f in failed:
        _say(f"FAILED: {f}")
    return 1 if failed else 0


# --------------------------------------------------------------------------------------------
# shiftlearn mmd
# --------------------------------------------------------------------------------------------
def _subsample(X: np.ndarray, max_rows: int | None, rng: np.random.Generator) -> np.ndarray:
    if max_rows is None or X.shape[0] <= max_rows:
        return X
    return X[np.sort(rng.choice(X.shape[0], max_rows, replace=False))]


def _cmd_mmd(args: argparse.Namespace) -> int:
    from .datasets import LOADERS
    from .kernels import mmd2, mmd_permutation_test

    ds = LOADERS[args.dataset](args.data_home)
    names = args.domains or ds.domain_names
    if len(names) < 2:
        raise ValueError("Name two (or more) domains to compare, or none for all pairs.")
    for d in names:
        ds.domain_id(d)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    if len(pairs) > args.max_pairs:
        raise ValueError(f"{len(pairs)} domain pairs; name the domains to compare "
                         f"(or raise --max-pairs, now {args.max_pairs}).")
    rng = np.random.default_rng(args.seed)
    per_domain = args.preprocessing == "per-domain"
    data = {d: _subsample(ds.get(d, preprocess=per_domain)[0], args.max_samples, rng)
            for d in names}

    def prepare(a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
        Xa, Xb = data[a], data[b]
        if args.preprocessing == "pooled" and ds.preprocess is not None:
            Z = ds.preprocess(np.vstack([Xa, Xb]))  # statistics of the pooled pair
            return Z[: Xa.shape[0]], Z[Xa.shape[0]:]
        return Xa, Xb
    bw = args.bandwidth
    try:
        bw = float(bw)
    except ValueError:
        pass
    prep = {"pooled": f"{ds.preprocessing}, statistics of each pooled pair",
            "per-domain": f"{ds.preprocessing}, each domain separately (removes per-feature "
                          "mean/scale differences before testing)",
            "none": "none"}[args.preprocessing] if ds.preprocess is not None else "none"
    _say(f"MMD two-sample test on {ds.name}: {ds.description}")
    _say(f"preprocessing: {prep}; kernel: Gaussian exp(-d^2 / (2 sigma^2)), bandwidth "
         f"{bw!r} on each pooled pair; {args.permutations} permutations, seed {args.seed}")
    _say("H0: both domains draw from one distribution; p = (1 + #{null >= observed}) / "
         f"(1 + {args.permutations}).")
    _say("")
    head = (f"{'domain A':>14s} {'domain B':>14s} {'n_A':>6s} {'n_B':>6s} {'sigma':>9s} "
            f"{'MMD2_u':>9s} {'MMD2_b':>9s} {'null q95':>9s} {'p-value':>8s}  "
            f"differ at {args.alpha:g}?")
    _say(head)
    _say("-" * len(head))
    for a, b in pairs:
        _progress(f"{a} vs {b} ...")
        Xa, Xb = prepare(a, b)
        res = mmd_permutation_test(Xa, Xb, bandwidth=bw, n_permutations=args.permutations,
                                   random_state=args.seed)
        biased = mmd2(Xa, Xb, bandwidth=res.sigma if res.sigma else bw)
        q95 = float(np.quantile(res.null_distribution, 0.95)) if args.permutations else np.nan
        _progress("")
        _say(f"{a:>14s} {b:>14s} {Xa.shape[0]:6d} {Xb.shape[0]:6d} {res.sigma:9.4g} "
             f"{res.statistic:9.4g} {biased:9.4g} {q95:9.4g} {res.p_value:8.4f}  "
             f"{'yes' if res.reject(args.alpha) else 'no'}")
    _say("")
    _say("MMD2_u: unbiased estimate (the test statistic); MMD2_b: biased (V-statistic); "
         "null q95: 95% quantile of the permutation null. The smallest attainable p is "
         f"1/{args.permutations + 1:d}.")
    return 0


# --------------------------------------------------------------------------------------------
# parser and entry point
# --------------------------------------------------------------------------------------------
_BUILTIN = ("datasets", "demo", "mmd")


def _common() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--data-home", default=argparse.SUPPRESS,
                   help="folder of the data sets (default: $SHIFTLEARN_DATA, then "
                        "~/.cache/shiftlearn)")
    return p


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    p = argparse.ArgumentParser(
        prog="shiftlearn", parents=[common],
        description="Learning under domain shift with kernel methods.",
        epilog="Run `shiftlearn <command> --help` for the options of a command.")
    sub = p.add_subparsers(dest="command", required=True, metavar="command")

    d = sub.add_parser("datasets", parents=[common],
                       help="list the data sets, verify their SHA-256, download missing files")
    d.add_argument("--download", action="store_true",
                   help="download missing files from their commit-pinned origin")
    d.set_defaults(func=_cmd_datasets)

    m = sub.add_parser("demo", parents=[common],
                       help="raw 1NN vs the library's adapters on a real data set (main demo)")
    m.add_argument("--dataset", choices=DEMO_DATASETS, default="office_caltech")
    m.add_argument("--tasks", default="all",
                   help="'all' (default), 'quick' (the 4 smallest tasks) or a comma list of "
                        "source:target, e.g. 'A:W,C:D' or 'mnist:usps'")
    m.add_argument("--methods", default="default",
                   help="'default' (raw, " + ", ".join(k for k, v in DEMO_METHODS.items() if v[2])
                        + "), 'all', or a comma list of raw, " + ", ".join(DEMO_METHODS))
    m.add_argument("--tuned", action="store_true",
                   help="choose each adapter's hyper-parameters by 5-fold CV on the source "
                        "labels (the papers' protocol; slower) instead of using the defaults")
    m.set_defaults(func=_cmd_demo)

    t = sub.add_parser("mmd", parents=[common],
                       help="MMD permutation test: do two domains of a data set differ?")
    t.add_argument("dataset", choices=("office_caltech", "mnist_usps", "msrc_voc",
                                       "parkinsons"))
    t.add_argument("domains", nargs="*",
                   help="domains to compare (two for one test; none = all pairs)")
    t.add_argument("--permutations", type=int, default=500)
    t.add_argument("--bandwidth", default="median",
                   help="sigma, or a rule: median (default), median_sq, mean, n_features")
    t.add_argument("--alpha", type=float, default=0.05)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--max-samples", type=int, default=None,
                   help="subsample each domain to at most this many rows (seeded)")
    t.add_argument("--max-pairs", type=int, default=10)
    t.add_argument("--preprocessing", choices=("pooled", "per-domain", "none"),
                   default="pooled",
                   help="the data set's customary preprocessing with the statistics of each "
                        "pooled pair (default), of each domain separately (as the demo and "
                        "pack() do; z-scoring per domain hides mean shifts), or none")
    t.set_defaults(func=_cmd_mmd)

    for name, (target, help_) in COMMANDS.items():
        e = sub.add_parser(name, help=help_, add_help=False, prefix_chars="\0")
        e.add_argument("argv", nargs=argparse.REMAINDER)
        e.set_defaults(func=None, target=target)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``shiftlearn`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    data_home = getattr(args, "data_home", None)
    args.data_home = data_home
    if args.func is None:  # a registered subcommand: hand it the rest of the command line
        if data_home is not None:
            os.environ["SHIFTLEARN_DATA"] = str(data_home)
        try:
            fn = _import_target(args.target)
        except (ImportError, AttributeError) as exc:
            print(f"shiftlearn {args.command}: cannot load {args.target} ({exc}); is the "
                  "optional extra it needs installed?", file=sys.stderr)
            return 2
        return int(fn(list(args.argv)) or 0)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"shiftlearn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
