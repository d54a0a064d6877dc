"""Raw-feature 1-nearest-neighbour baselines on the real data sets, per preprocessing.

Writes ``benchmarks/datasets/results/datasets_raw_1nn.md`` and ``.json``. The default
preprocessing of each loader is the one whose raw 1NN reproduces the literature's values
(31.37% mean over the 12 Office+Caltech SURF tasks; 65.94% MNIST→USPS, 44.70% USPS→MNIST); the
other options are shown to justify that choice.

Run: ``python benchmarks/datasets/datasets_raw_1nn.py`` (with ``SHIFTLEARN_DATA`` set); ~10 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, write_results  # noqa: E402

from shiftlearn.datasets import load_mnist_usps, load_msrc_voc, load_office_caltech  # noqa: E402

SHORT = {"amazon": "A", "caltech": "C", "dslr": "D", "webcam": "W", "mnist": "MNIST",
         "usps": "USPS", "msrc": "MSRC", "voc": "VOC"}
# literature values of raw 1NN with the customary preprocessing (see docs/datasets.md)
LITERATURE = {("office_caltech", "mean"): 31.37, ("mnist_usps", "mnist->usps"): 65.94,
              ("mnist_usps", "usps->mnist"): 44.70}
SETTINGS = [
    ("office_caltech", load_office_caltech, ["sum_zscore", "l2", "none"]),
    ("mnist_usps", load_mnist_usps, ["l2", "none"]),
    ("msrc_voc", load_msrc_voc, ["l2", "sum_zscore", "none"]),
]


def one_nn(Xs, ys, Xt, yt) -> float:
    return 100 * float(np.mean(KNeighborsClassifier(n_neighbors=1).fit(Xs, ys).predict(Xt) == yt))


def main() -> None:
    machine = header("Raw-feature 1NN baselines")
    results = {}
    parts = []
    t_all = time.perf_counter()
    for name, loader, preps in SETTINGS:
        per_prep = {}
        tasks = None
        for prep in preps:
            ds = loader(preprocessing=prep)
            tasks = ds.tasks
            per_prep[prep] = {f"{s}->{t}": one_nn(*ds.get(s), *ds.get(t)) for s, t in tasks}
            per_prep[prep]["mean"] = float(np.mean(list(per_prep[prep].values())))
        results[name] = per_prep
        rows = []
        for key in [f"{s}->{t}" for s, t in tasks] + ["mean"]:
            label = key if key == "mean" else " → ".join(SHORT[d] for d in key.split("->"))
            row = {"task": label}
            for i, prep in enumerate(preps):
                row[f"{prep}{' (default)' if i == 0 else ''}"] = per_prep[prep][key]
            lit = LITERATURE.get((name, key))
            row["literature"] = f"{lit:.2f}" if lit is not None else "–"
            rows.append(row)
        parts.append(f"## {name}\n\n" + markdown_table(rows))
        print(parts[-1] + "\n")
    elapsed = time.perf_counter() - t_all
    checks = [(name, key, lit, results[name][SETTINGS_DEFAULT[name]][key])
              for (name, key), lit in LITERATURE.items()]
    check_rows = [{"data set": n, "task": k, "literature": lit, "measured": round(v, 2),
                   "match": "yes" if round(v, 2) == lit else "NO"} for n, k, lit, v in checks]
    body = ("Accuracy (%) of 1NN trained on the labeled source domain, tested on the target, "
            "raw features after each preprocessing (each domain preprocessed separately, as "
            "`DomainDataset.pack` does). The first column of each table is the loader's "
            "default.\n\n## Literature check (default preprocessing)\n\n"
            + markdown_table(check_rows) + "\n\n" + "\n\n".join(parts)
            + f"\n\nTotal time: {elapsed:.1f} s.")
    print(markdown_table(check_rows))
    write_results("datasets_raw_1nn", "Raw-feature 1NN baselines", body,
                  {"accuracy": results, "literature_check": check_rows, "seconds": elapsed},
                  machine)


SETTINGS_DEFAULT = {name: preps[0] for name, _, preps in SETTINGS}

if __name__ == "__main__":
    main()
