"""The default ``AdaptationSelector`` with and without shared work (``memory``), same run.

Issue #15 item 1: selection runs on scikit-learn's machinery (one ``GridSearchCV`` over no
adaptation + TCA/JDA/SCA/uSCA/RF-TCA/RF-SCA/CORAL on ``DEFAULT_GRIDS``, 81 candidates (73 before
CORAL, 75 before JDA) x 5 folds of
``SourceKFold``), and every candidate x fold used to refit from scratch. With
``memory="auto"`` (the default) one :class:`~shiftlearn.adaptation.FitMemory` per ``fit`` is
shared by every candidate: kernels, SCA's factorisation, random-feature statistics, and one
eigen-solve per setting for the largest ``n_components``.

For each case (the SCA toy, ``n_per_cluster=50``; Office+Caltech SURF webcam->dslr) the script
times ``AdaptationSelector(memory=None)`` and ``AdaptationSelector()`` (each in a fresh
subprocess, alternating, ``--rounds`` times, minimum kept) and checks that the choice, the
summary and ``cv_results_`` (every row's params, mean, std and per-fold scores) are the same.
With ``--baseline DIR`` it also runs ``AdaptationSelector()`` of the library in ``DIR`` (e.g.
``git archive <commit> shiftlearn | tar -x -C /tmp/old``) in the same session: before vs after.

    OMP_NUM_THREADS=1 python benchmarks/model_selection/splits_selector_speed.py --baseline /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

CASES = ("toy", "webcam->dslr")


def _data(case):
    if case == "toy":
        from shiftlearn.datasets import make_sca_toy

        return make_sca_toy(n_per_cluster=50, random_state=0)
    from shiftlearn.datasets import load_office_caltech

    return load_office_caltech().pack(*case.split("->"))


def worker(case: str, memory: str) -> dict:
    """One selection with the ``shiftlearn`` on ``sys.path``; JSON-ready."""
    import warnings

    import numpy as np

    import shiftlearn
    from shiftlearn.model_selection import AdaptationSelector

    warnings.simplefilter("ignore")
    X, y, sd = _data(case)
    kw = {} if memory == "default" else {"memory": None if memory == "none" else "auto"}
    t0 = time.perf_counter()
    sel = AdaptationSelector(**kw).fit(X, y, sd)
    seconds = time.perf_counter() - t0
    res = sel.search_.cv_results_
    splits = sorted(k for k in res if k.startswith("split") and k.endswith("_test_score"))
    return {"library": str(Path(shiftlearn.__file__).parents[1]), "seconds": seconds,
            "choice": sel.choice_, "report": sel.report(),
            "params": [str(p) for p in res["params"]],
            "scores": {k: np.asarray(res[k], dtype=float).tolist()
                       for k in ["mean_test_score", "std_test_score", *splits]}}


def run(case: str, memory: str, src: Path | None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, str(HERE), "--worker", case, memory], env=env,
                         check=True, capture_output=True, text=True, cwd=str(HERE.parents[2]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def same(a: dict, b: dict) -> tuple[bool, float]:
    """Same choice, report, params in the same order; the largest score difference."""
    import numpy as np

    equal = a["choice"] == b["choice"] and a["report"] == b["report"] \
        and a["params"] == b["params"] and a["scores"].keys() == b["scores"].keys()
    diff = max(float(np.nanmax(np.abs(np.subtract(a["scores"][k], b["scores"][k]))))
               for k in a["scores"]) if equal else float("nan")
    return equal, diff


@progress()
def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--baseline", type=Path, default=None,
                   help="folder holding another tree's shiftlearn package (before vs after)")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    machine = header("AdaptationSelector with and without memory (default grids, 5 folds)")
    machine["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "unset")
    runs = [("this tree, memory=None", "none", None), ("this tree, memory='auto'", "auto", None)]
    if args.baseline:
        runs.insert(0, ("baseline, default", "default", args.baseline))
    rows, data = [], {}
    for case in track(args.cases, "cases"):
        best: dict = {}
        for _ in range(args.rounds):
            for label, memory, src in runs:
                r = run(case, memory, src)
                print(f"{case:14s} {label:26s} {r['seconds']:7.1f} s  choice {r['choice']}",
                      flush=True)
                if label not in best or r["seconds"] < best[label]["seconds"]:
                    best[label] = r
        ref = best["this tree, memory=None"]
        for label, r in best.items():
            equal, diff = same(r, ref)
            rows.append({"case": case, "run": label, "seconds": r["seconds"],
                         "speed-up": ref["seconds"] / r["seconds"], "choice": r["choice"],
                         "same as memory=None": "yes" if equal else "NO",
                         "max score diff": f"{diff:.1e}" if equal else "-"})
        data[case] = best
        print(ref["report"])
    cols = ["case", "run", "seconds", "speed-up", "choice", "same as memory=None",
            "max score diff"]
    print(markdown_table(rows, cols))
    body = (f"Wall time of `AdaptationSelector().fit` (default methods and grids, 5-fold "
            f"`SourceKFold`, 1NN), each run in a fresh process, minimum of {args.rounds} "
            "alternating round(s). `same as memory=None`: the same choice, report, "
            "`cv_results_` rows in the same order, and per-fold scores within `max score "
            "diff`.\n\n" + markdown_table(rows, cols)
            + "\n\nThe reports (the same in every run of a case):\n\n"
            + "\n\n".join(f"{c}:\n\n```\n{data[c]['this tree, memory=None']['report']}\n```"
                          for c in data))
    write_results("splits_selector_speed", "AdaptationSelector with and without memory", body,
                  {"rows": rows, "runs": data,
                   "baseline": str(args.baseline) if args.baseline else None}, machine)


if __name__ == "__main__":
    main()
