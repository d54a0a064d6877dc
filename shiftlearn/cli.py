"""The ``shiftlearn`` command line."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _cmd_datasets(args: argparse.Namespace) -> int:
    from .datasets import FILES, DataFileError, fetch_file, get_data_home

    home = get_data_home(args.data_home)
    print(f"data home: {home}")
    bad = 0
    for name, specs in FILES.items():
        for spec in specs:
            try:
                fetch_file(spec, args.data_home, download=args.download)
                status = "ok (sha256 verified)"
            except DataFileError as exc:
                status = f"FAILED: {exc}"
                bad += 1
            print(f"  {name:15s} {spec.relpath():55s} {status}")
    return 1 if bad else 0


def _one_nn_accuracy(Xs, ys, Xt, yt) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    return float(np.mean(KNeighborsClassifier(n_neighbors=1).fit(Xs, ys).predict(Xt) == yt))


def _cmd_demo(args: argparse.Namespace) -> int:
    from .datasets import load_office_caltech

    ds = load_office_caltech(args.data_home)
    print("shiftlearn demo: Office+Caltech10 SURF, 1-nearest-neighbour on the target domain")
    print(f"{'task':22s} {'raw 1NN':>8s}")
    accs = []
    t0 = time.perf_counter()
    for s, t in ds.tasks:
        Xs, ys = ds.get(s)
        Xt, yt = ds.get(t)
        acc = 100 * _one_nn_accuracy(Xs, ys, Xt, yt)
        accs.append(acc)
        print(f"{s + ' -> ' + t:22s} {acc:8.2f}")
    print(f"{'mean':22s} {np.mean(accs):8.2f}   ({time.perf_counter() - t0:.1f} s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shiftlearn", description=__doc__)
    p.add_argument("--data-home", default=None, help="folder of the data sets "
                   "(default: $SHIFTLEARN_DATA, then the user cache)")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("datasets", help="list the data sets and verify their checksums")
    d.add_argument("--download", action="store_true", help="download missing files")
    d.set_defaults(func=_cmd_datasets)
    m = sub.add_parser("demo", help="a small end-to-end run on a real data set")
    m.set_defaults(func=_cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
