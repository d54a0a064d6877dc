"""The selection study with the whole catalog: every adapter of ``ADAPTERS``, ours and skada's.

The protocol of ``selection_study.py`` (whose functions this script imports: the tasks, the
seeded subsample of at most ``--max-rows`` rows per domain, the classifiers, the searches, the
target accuracies, the choice under a criterion), with every method of
:data:`shiftlearn.model_selection.ADAPTERS` as a candidate and an eighth criterion, MaNo
(``MaNoScorer``, the normalised 4-norm of the target rows' class probabilities):

* candidates, ours: no adaptation and every label of ``ADAPTERS`` (subspace, mapping,
  reweighting, self-labeling, label-shift and OT labelers), each over the study grid
  :data:`CATALOG_GRIDS`: ``selection_study.py``'s grids for the methods it already had (2-8
  points, so that those rows repeat the study), ``DEFAULT_GRIDS`` for the others (1-4 points;
  TJM cut to 4);
* peers: skada 0.6's implementation of the same method where skada has one, each in
  ``skada.make_da_pipeline(<adapter>, <the same classifier>)`` over a grid of 1-4 points
  (:func:`catalog_peers`; skada's gamma of KLIEP and MMD-LS is ``1 / (2 m)`` and ``1 / m``,
  ``m`` the median squared distance of the task's rows; skada's JDOT and DASVM use a plain
  logistic regression);
* criteria: ``selection_study.py``'s seven (source CV, cluster split, IW, PE, DEV, circular,
  MMD) + MaNo, and the ORACLE (target accuracy, reference only);
* N/A, not failure: a candidate the classifier cannot use. The reweighting adapters hand their
  weights to the classifier's ``sample_weight`` and 1NN takes none; JDOT refits its classifier
  with sample weights; DASVM needs ``decision_function``. Each is refused by the library's own
  check, whose message is recorded as the reason (the same check ``DomainAdaptationClassifier``
  and ``AdaptationSelector`` run before fitting; this script imports it from
  ``shiftlearn.compose._pipeline`` for that reason only). skada's implementation of a method
  is N/A where ours is, for the same reason;
* ``auto``: the best of ALL ours (no adaptation included, first on ties) under a criterion;
  each single method: the best of its own grid under the same criterion;
* two rules fixed before the run that kept the criteria per fold (``docs/dev/
  model_selection.md``): R1, the selector's ``margin="se"`` (adapt only on a lead over no
  adaptation beyond the best's standard error over the folds), and R2, the smallest sum of
  ranks under circular validation and MMD; each single method under the same rule.
* beside the best single method (chosen after the fact, with every task's target labels),
  the single method chosen without the task (for each task, the best mean over the other
  tasks under the same criterion), each against ``auto`` with a paired bootstrap interval
  over the tasks (``docs/dev/model_selection.md``, written before it was computed).

One search per method and task (so each method has its own time and its own failure record),
every search of a task sharing one ``FitMemory``. A time limit per method and task
(``--time-limit``, 300 s by default: its search, cluster split and refits together): a method
stopped by it is listed with the task and left out of that task (its means then count fewer
tasks and are not compared). skada's ``MultiLinearMongeAlignmentAdapter`` needed it: its
barycenter iterations on Office's 800 features ran past 6 minutes on one task; a size rule
(:data:`MAX_FEATURES`) skips it above 300 features rather than spend the limit on each of the
12 Office tasks.

Run: ``python benchmarks/model_selection/selection_catalog.py`` (parts in
``results/_selection_catalog_parts_r<max rows>.json``, one key per task and classifier, so an
interrupted run resumes; each candidate's criteria are kept as the mean over the folds and
the value on each fold; ``--report`` rebuilds the tables from the
parts; ``--tasks`` keeps the tasks whose name contains one of the given strings;
``--quick``: the toy and two Office tasks, both classifiers, a few methods, into
``selection_catalog_quick``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))      # selection_study
import selection_study as study  # noqa: E402
from _common import (  # noqa: E402
    PartsFile,
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)

from shiftlearn import DomainAdaptationClassifier  # noqa: E402
from shiftlearn.adaptation import FitMemory  # noqa: E402
from shiftlearn.compose._pipeline import (  # noqa: E402 - the library's own N/A checks
    check_labeler_reach,
    check_weights_reach,
)
from shiftlearn.model_selection import (  # noqa: E402
    ADAPTERS,
    DEFAULT_GRIDS,
    ClusterSplit,
    MaNoScorer,
    SourceAccuracyScorer,
    SourceKFold,
    candidate_grid,
    default_methods,
    make_adapter,
)

OURS = ("none", *ADAPTERS)
#: the study grid: selection_study.py's for its methods, DEFAULT_GRIDS (1-4 points) otherwise
CATALOG_GRIDS = {**{m: DEFAULT_GRIDS.get(m, {}) for m in ADAPTERS}, **study.OUR_GRIDS,
                 "TJM": {"kernel": ["linear", "rbf"], "mu": [1.0], "n_components": [30, 10]}}
CRITERIA = (*study.CRITERIA, "MaNo")
#: skada's implementation of our method (peer label -> our label)
PEER_OF = {"skada CORAL": "CORAL", "skada SA": "SA", "skada TCA": "TCA", "skada JDOT": "JDOT",
           "skada KMM": "KMM", "skada LinOT": "LinOT", "skada OTLabelProp": "OTLabelProp",
           "skada MMD-LS": "MMD-LS", "skada MultiLinOT": "MultiLinOT", "skada DASVM": "DASVM",
           "skada TJM": "TJM", "skada JCPOT": "JCPOT", "skada KLIEP": "KLIEP",
           "skada NearestNeighborRW": "NearestNeighborRW",
           "skada DiscriminatorRW": "DiscriminatorRW", "skada GaussianRW": "GaussianRW",
           "skada KDERW": "KDERW", "skada EMD": "EMD", "skada Sinkhorn": "Sinkhorn",
           "skada ClassRegOT": "ClassRegOT"}
PEERS = tuple(PEER_OF)
#: size rule: methods skipped above this many features (they ran past the time limit there)
MAX_FEATURES = {"skada MultiLinOT": 300}
#: --quick: a few methods of each kind (subspace, mapping, reweighting, labelers)
QUICK_METHODS = ("none", "TCA", "CORAL", "SA", "LinOT", "KMM", "GaussianRW", "JDOT",
                 "OTLabelProp", "DASVM")
#: selection_study.py's peers, relabeled as the catalog names them
_STUDY_PEERS = {"skada CORAL": "skada CORAL", "SA": "skada SA", "JDOT": "skada JDOT",
                "KMM": "skada KMM", "LinOT": "skada LinOT", "OTLabelProp": "skada OTLabelProp",
                "skada TCA": "skada TCA"}


def scorers() -> dict:
    return {**study.scorers(), "MaNo": MaNoScorer()}


def na_reason(method: str, clf) -> str | None:
    """Why ``clf`` cannot be the classifier of ``method`` (the library's own message), or
    ``None`` when it can."""
    if method == "none":
        return None
    adapter = make_adapter(method)
    try:
        check_weights_reach(adapter, clf)
        check_labeler_reach(adapter, clf)
    except ValueError as exc:
        return str(exc)
    return None


def _median_sq_distance(X, n: int = 500) -> float:
    Z = X[np.random.default_rng(0).choice(X.shape[0], min(n, X.shape[0]), replace=False)]
    sq = (Z ** 2).sum(1)
    d = sq[:, None] + sq[None, :] - 2 * Z @ Z.T
    return float(np.median(d[np.triu_indices_from(d, 1)]))


def catalog_peers(clf_name: str, X) -> list[tuple[str, object, dict]]:
    """``(label, skada estimator, grid)`` for each peer: selection_study.py's seven, relabeled,
    and skada's other implementations of our methods."""
    import skada
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KernelDensity

    def pipe(adapter):
        return skada.make_da_pipeline(adapter, *study.classifier_steps(clf_name))

    m = _median_sq_distance(X)
    gammas = [1 / (2 * m), 1 / m]
    out = [(_STUDY_PEERS[label], est, grid) for label, est, grid in
           study.peer_candidates(clf_name)]
    out += [
        ("skada MMD-LS", pipe(skada.MMDLSConSMappingAdapter(gamma=gammas[0])),
         {"mmdlsconsmappingadapter__gamma": gammas}),
        ("skada MultiLinOT", pipe(skada.MultiLinearMongeAlignmentAdapter()),
         {"multilinearmongealignmentadapter__reg": [1e-8, 1e-2, 1.0]}),
        ("skada DASVM", skada.DASVMClassifier(LogisticRegression(max_iter=1000)),
         {"k": [1, 3, 10]}),
        ("skada TJM", pipe(skada.TransferJointMatchingAdapter()),
         {"transferjointmatchingadapter__kernel": ["linear", "rbf"],
          "transferjointmatchingadapter__n_components": [30, 10]}),
        ("skada JCPOT", pipe(skada.JCPOTLabelPropAdapter()),
         {"jcpotlabelpropadapter__reg": [0.05, 0.1, 0.5]}),
        ("skada KLIEP", pipe(skada.KLIEPReweightAdapter(gamma=gammas[0], random_state=0)),
         {"kliepreweightadapter__gamma": gammas}),
        ("skada NearestNeighborRW", pipe(skada.NearestNeighborReweightAdapter()),
         {"nearestneighborreweightadapter__laplace_smoothing": [False, True]}),
        ("skada DiscriminatorRW", pipe(skada.DiscriminatorReweightAdapter()), {}),
        ("skada GaussianRW", pipe(skada.GaussianReweightAdapter()),
         {"gaussianreweightadapter__reg": ["auto", 0.1]}),
        ("skada KDERW", pipe(skada.DensityReweightAdapter()),
         {"densityreweightadapter__weight_estimator": [KernelDensity(bandwidth="scott")]}),
        ("skada EMD", pipe(skada.OTMappingAdapter()), {}),
        ("skada Sinkhorn", pipe(skada.EntropicOTMappingAdapter()),
         {"entropicotmappingadapter__reg_e": [0.1, 1.0, 10.0]}),
        ("skada ClassRegOT", pipe(skada.ClassRegularizerOTMappingAdapter()),
         {"classregularizerotmappingadapter__reg_e": [0.1, 1.0],
          "classregularizerotmappingadapter__reg_cl": [0.1, 1.0]}),
    ]
    return out


def _criteria(cvr, clus, sc, stat: str = "mean") -> dict:
    """Each criterion over the folds, one per candidate: its ``mean``, or (``stat="folds"``)
    the list of its value on each fold, in the folds' order."""
    if stat == "folds":
        def per_fold(res, key):
            k = sum(1 for name in res if name.startswith("split") and name.endswith(key))
            return [[float(res[f"split{i}{key}"][j]) for i in range(k)]
                    for j in range(len(res["params"]))]
        return {**{c: per_fold(cvr, f"_test_{c}") for c in sc},
                "cluster": per_fold(clus, "_test_score")}
    return {**{c: list(map(float, cvr[f"{stat}_test_{c}"])) for c in sc},
            "cluster": list(map(float, clus[f"{stat}_test_score"]))}


class TimeLimit(BaseException):
    """Raised by the alarm of :func:`time_limit`; a ``BaseException`` so that neither
    ``GridSearchCV`` (``error_score``) nor the study's refits take it for one failed fit."""


@contextmanager
def time_limit(seconds: float | None):
    """Stop the body after ``seconds`` (SIGALRM, POSIX; checked between Python steps, so a
    long LAPACK call ends first). ``None`` or 0: no limit."""
    if not seconds:
        yield
        return

    def _raise(signum, frame):
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _error(exc: Exception) -> str:
    """The error in one line: for a search whose every fit failed, the fits' own error (the
    last line of scikit-learn's message), not its preamble."""
    msg = str(exc).strip()
    if "fits failed" in msg:
        return msg.splitlines()[-1][:300]
    return f"{type(exc).__name__}: {msg}"[:300]


def _say(name, s, t, clf_name, m, res) -> None:
    """A progress line per method (for a log: one line, flushed)."""
    fail = (" FAILED" if m in res["errors"] else
            " STOPPED (time limit)" if m in res["timeouts"] else "")
    print(f"  {name}:{s}->{t}|{clf_name} {m}: {res['seconds_method'][m]:.1f} s{fail}",
          flush=True)


def run_task(name, s, t, clf_name, max_rows: int, methods, peers, memory=None,
             limit: float | None = None, seed: int = 0) -> dict:
    """One task and classifier: every method of ``methods`` (ours) and ``peers`` (skada's),
    searched one by one, on the rows of ``study.study_rows`` with ``seed``; ``ours`` holds
    every candidate of ours in one list (as in selection_study.py), ``na`` the methods the
    classifier cannot use and why."""
    X, y, sd, yt = study.study_rows(name, s, t, max_rows, seed)
    clf = study.classifiers()[clf_name]()
    sc = scorers()
    t0 = time.perf_counter()
    ours = {"labels": [], "params": [], "criteria": {c: [] for c in CRITERIA},
            "criteria_folds": {c: [] for c in CRITERIA}, "target": []}
    res = {"n": int(X.shape[0]), "ours": ours, "peers": {}, "na": {}, "errors": {},
           "timeouts": {}, "skipped": {}, "seconds_method": {}}
    kfold, cluster = SourceKFold(3, random_state=0), ClusterSplit(test_size=0.3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in methods:
            why = na_reason(m, clf)
            if why is not None:
                res["na"][m] = why
                continue
            t1 = time.perf_counter()
            est = DomainAdaptationClassifier(None, clf, memory=memory)
            grid = candidate_grid([m], grids=CATALOG_GRIDS)
            try:
                with time_limit(limit):
                    cvr = study._search(est, grid, X, y, sd, kfold, sc, False)
                    clus = study._search(est, grid, X, y, sd, cluster, SourceAccuracyScorer(),
                                         False)
                    crit = _criteria(cvr, clus, sc)
                    crit_folds = _criteria(cvr, clus, sc, "folds")
                    target = study._target_accuracies(est, cvr["params"], X, y, sd, yt, False)
            except TimeLimit:
                res["timeouts"][m] = limit
                continue
            except Exception as exc:  # noqa: BLE001 - a method that cannot run is reported
                res["errors"][m] = _error(exc)
                continue
            finally:
                res["seconds_method"][m] = time.perf_counter() - t1
                _say(name, s, t, clf_name, m, res)
            ours["labels"] += [m] * len(target)
            ours["params"] += [repr({k: v for k, v in p.items() if k != "adapter"})
                               for p in cvr["params"]]
            for c in CRITERIA:
                ours["criteria"][c] += crit[c]
                ours["criteria_folds"][c] += crit_folds[c]
            ours["target"] += target
        res["seconds_ours"] = time.perf_counter() - t0
        for label, pipe, pgrid in catalog_peers(clf_name, X):
            if label not in peers:
                continue
            if PEER_OF[label] in res["na"]:
                res["na"][label] = f"as ours ({PEER_OF[label]} with {clf_name})"
                continue
            if X.shape[1] > MAX_FEATURES.get(label, np.inf):
                res["skipped"][label] = (f"{X.shape[1]} features > {MAX_FEATURES[label]} "
                                         "(size rule)")
                continue
            t1 = time.perf_counter()
            try:
                with time_limit(limit):
                    pr = study._search(pipe, pgrid, X, y, sd, kfold, sc, True)
                    pc = study._search(pipe, pgrid, X, y, sd, cluster, SourceAccuracyScorer(),
                                       True)
                    target = study._target_accuracies(pipe, pr["params"], X, y, sd, yt, True)
                res["peers"][label] = {"params": [repr(p) for p in pr["params"]],
                                       "criteria": _criteria(pr, pc, sc), "target": target}
            except TimeLimit:
                res["timeouts"][label] = limit
            except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported
                res["errors"][label] = _error(exc)
            res["seconds_method"][label] = time.perf_counter() - t1
            _say(name, s, t, clf_name, label, res)
    res["seconds"] = time.perf_counter() - t0
    return res


# ----------------------------------------------------------------------------------- tables
AUTO, RAW = "auto (ours, incl. no adaptation)", "source only (no adaptation)"


def _verdict(table: list[dict], crit: str, n_tasks: int) -> dict:
    """``auto`` against every single method computed on every task, under ``crit``."""
    auto = next(r for r in table if r["method"] == AUTO)
    singles = [r for r in table if r["method"] != AUTO and np.isfinite(r[crit])]
    full = [r for r in singles if crit + " n" not in r]
    best = max(full, key=lambda r: r[crit])
    return {"criterion": crit, "auto": auto[crit], "best single": best["method"],
            "best single %": best[crit], "margin": auto[crit] - best[crit],
            "beats all by >= 1": bool(auto[crit] - best[crit] >= 1.0),
            "at least all": bool(auto[crit] >= best[crit]),
            "not within 1 point": [r["method"] for r in full if auto[crit] - r[crit] < 1.0],
            "partial (fewer tasks, not compared)": [r["method"] for r in singles
                                                    if crit + " n" in r]}


#: the methods SKADA-Bench ranks above training on the source among shallow methods (its
#: average ranks under target-free selection; JPCA, which we lack, left out): an outside list
SKADA_BENCH_ABOVE_SOURCE = ("LinOT", "CORAL", "DASVM", "NearestNeighborRW", "SA",
                            "DiscriminatorRW", "EMD", "MMD-LS")

#: the pools of :func:`_pool_table`: the default of ``adapt --method auto`` at this size, it
#: with SKADA-Bench's two best-ranked shallow maps, SKADA-Bench's methods above source only
#: without and with the default, and every method of the catalog
POOLS = {"default (adapt --method auto)": (*default_methods(400), ),
         "default + LinOT + SA": (*default_methods(400), "LinOT", "SA"),
         "SKADA-Bench above source only": SKADA_BENCH_ABOVE_SOURCE,
         "default + SKADA-Bench above source only": (*default_methods(400),
                                                     *SKADA_BENCH_ABOVE_SOURCE),
         "whole catalog": None}


def _pool_table(parts: dict, keys: list[str]) -> list[dict]:
    """Mean target accuracy (%) of ``auto`` restricted to each pool of :data:`POOLS` (plus no
    adaptation), under each criterion, over the parts ``keys``."""
    rows = []
    for pool, members in POOLS.items():
        row = {"pool": pool}
        for crit in (*CRITERIA, "oracle"):
            vals = []
            for k in keys:
                o = parts[k]["ours"]
                idx = [i for i, lab in enumerate(o["labels"])
                       if lab == "none" or members is None or lab in members]
                vals.append(study._pick(o["criteria"], o["target"], crit, idx))
            row[crit] = 100 * float(np.nanmean(vals))
        rows.append(row)
    return rows


# ----------------------------------------------------------- two rules, fixed before the rerun
#: the rules of docs/dev/model_selection.md ("Two selection rules on the catalog"): R1 is the
#: selector's ``margin="se"`` under each criterion; R2 the rank consensus of these two criteria
CONSENSUS = ("circular", "MMD")
R1, R2 = "R1: margin se", "R2: circular + MMD ranks"


def _finite(v) -> np.ndarray:
    v = np.asarray(v, float)
    return np.where(np.isfinite(v), v, -np.inf)


def _choose_margin(o: dict, crit: str, idx=None) -> int | None:
    """R1: the index ``AdaptationSelector(margin="se")`` would choose under ``crit`` among
    ``idx`` (no adaptation included): the best candidate, or no adaptation when the best's
    lead over it is at most the best's standard deviation over the folds / sqrt(folds) (the
    deviation as ``GridSearchCV``'s ``std_test_score``, which the selector reads)."""
    idx = np.arange(len(o["labels"])) if idx is None else np.asarray(idx)
    v = _finite(o["criteria"][crit])
    if not np.isfinite(v[idx]).any():
        return None
    best = int(idx[int(np.argmax(v[idx]))])             # ties: first (no adaptation first)
    if "none" not in o["labels"]:                       # a peer's grid: the plain choice
        return best
    none = o["labels"].index("none")
    if best != none and none in idx and np.isfinite(v[none]):
        folds = o["criteria_folds"][crit][best]
        margin = float(np.std(folds)) / np.sqrt(len(folds))
        if v[best] - v[none] <= margin:
            return none
    return best


def _choose_consensus(o: dict, idx=None) -> int | None:
    """R2: the index among ``idx`` with the smallest sum of its ranks under the criteria of
    :data:`CONSENSUS` (1 = best; ties share the mean rank; a non-finite estimate ranks last),
    first on ties."""
    from scipy.stats import rankdata

    idx = np.arange(len(o["labels"])) if idx is None else np.asarray(idx)
    if idx.size == 0:
        return None
    total = np.zeros(idx.size)
    for c in CONSENSUS:
        total += rankdata(-_finite(o["criteria"][c])[idx], method="average")
    return int(idx[int(np.argmin(total))])


def _rule_picks(o: dict, crits, idx=None) -> dict:
    """The index each rule chooses among ``idx``: R1 under each of ``crits``, and R2."""
    return {**{f"{R1}, {c}": _choose_margin(o, c, idx) for c in crits},
            R2: _choose_consensus(o, idx)}


def _rule_rows(parts: dict, keys: list[str], methods) -> tuple[list[dict], list[dict]]:
    """Mean target accuracy (%) of ``auto``, of each single method of ``methods`` and of
    each of skada's (over its own grid) under R1 (each criterion) and R2, and the per-task
    lines of ``auto``; a method missing on some tasks has its task count (``"<rule> n"``)."""
    crits = [c for c in CRITERIA if c != "cluster"]
    acc = {}
    lines = []
    for k in keys:
        o = parts[k]["ours"]
        tg = o["target"]
        raw = tg[o["labels"].index("none")]
        line = {"task": k.rsplit("|", 1)[0], "raw": 100 * raw}
        for m in ("auto", *methods[1:]):
            idx = None if m == "auto" else [i for i, lab in enumerate(o["labels"]) if lab == m]
            if idx is not None and not idx:
                continue
            for col, i in _rule_picks(o, crits, idx).items():
                val = float("nan") if i is None else 100 * tg[i]
                acc.setdefault(m, {}).setdefault(col, []).append(val)
                if m == "auto":
                    line[col] = val
        for p, pr in parts[k]["peers"].items():      # skada's: the same rules over its grid
            if "criteria" not in pr:
                continue
            po = {"labels": [p] * len(pr["target"]), "criteria": pr["criteria"]}
            for col, i in _rule_picks(po, crits).items():
                acc.setdefault(p, {}).setdefault(col, []).append(
                    float("nan") if i is None else 100 * pr["target"][i])
        lines.append(line)
    rows = []
    for m, cols in acc.items():
        row = {"method": AUTO if m == "auto" else m}
        for col, v in cols.items():
            v = np.asarray(v, float)
            row[col] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
            if v.size < len(keys) or not np.isfinite(v).all():
                row[col + " n"] = int(np.isfinite(v).sum())
        rows.append(row)
    return rows, lines


def _rule_section(parts: dict, keys: list[str], methods, clf: str, table: list[dict],
                  best_plain: str) -> tuple[list[str], dict]:
    """The report's lines on the two rules for one classifier, and their data."""
    if not all("criteria_folds" in parts[k]["ours"] for k in keys):
        return (["### two selection rules", "", "Not computed: these parts predate the "
                 "per-fold criteria (rerun the catalog to compute them).", ""], {})
    rows, lines = _rule_rows(parts, keys, methods)
    n = len(keys)
    cols = [c for c in rows[0] if c != "method" and not c.endswith(" n")]
    auto = rows[0]
    verdicts = []
    for col in cols:
        full = [r for r in rows[1:] if col in r and col + " n" not in r]
        best = max(full, key=lambda r: r[col])
        below = [t["task"] for t in lines if t[col] - t["raw"] < -1.0]
        verdicts.append({"rule": col, "auto %": auto[col], "best single method": best["method"],
                         "its %": best[col], "auto - best single": auto[col] - best[col],
                         "tasks > 1 point below no adaptation": len(below),
                         "meets the issue's target": "yes" if auto[col] - best[col] >= 1.0
                         and not below else "no"})
    plain = next(r for r in table if r["method"] == AUTO)
    plain_below = {c: sum(_plain_gap(parts[k]["ours"], c) < -1.0 for k in keys)
                   for c in CRITERIA}
    head = [f"### two selection rules, fixed before this run ({clf})", "",
            "R1: `AdaptationSelector(margin=\"se\")` under each criterion (adapt only when the "
            "best candidate leads no adaptation by more than its standard deviation over the "
            "folds / sqrt(folds); the cluster criterion's one split leaves it the plain "
            "choice, so it is not repeated). R2: the smallest sum of a candidate's ranks under "
            f"{' and '.join(CONSENSUS)}. Each single method, ours and skada's, is chosen over "
            "its own grid by the same rule (R1 is then the plain choice: no adaptation is not "
            "in that grid). Both rules were written with the earlier runs of this study in "
            "view (which criteria are strong on these tasks), so these 19 tasks are not a "
            "clean test of R2 (docs/dev/model_selection.md).", "",
            "Plain `auto` for reference (mean %, tasks more than 1 point below no "
            "adaptation): " + "; ".join(f"{c} {plain[c]:.2f}% ({plain_below[c]})"
                                       for c in dict.fromkeys((best_plain, *CONSENSUS)))
            + ".",
            "", markdown_table(verdicts), "",
            f"Every single method under each rule ({clf}; mean target accuracy %):", "",
            markdown_table([{c: (f"{r[c]:.2f} ({r[c + ' n']}/{n} tasks)" if c + " n" in r
                                 else r.get(c, "")) for c in ["method", *cols]}
                            for r in rows], ["method", *cols]), "",
            f"`auto` over the pools above under the rules ({clf}; mean target accuracy %, "
            "in brackets the tasks more than 1 point below no adaptation):", "",
            markdown_table(_pool_rule_table(parts, keys)), "",
            f"Per task, `auto` under each rule ({clf}):", "",
            markdown_table(lines, ["task", "raw", *cols]), ""]
    return head, {"rows": rows, "per_task": lines, "verdicts": verdicts}


def _pool_rule_table(parts: dict, keys: list[str]) -> list[dict]:
    """``auto`` over each pool of :data:`POOLS` under circular validation and MMD, plain and
    with R1, and under R2: mean target accuracy (%) and the tasks more than a point below no
    adaptation."""
    rows = []
    for pool, members in POOLS.items():
        row = {"pool": pool}
        picks = {}
        for k in keys:
            o = parts[k]["ours"]
            idx = [i for i, lab in enumerate(o["labels"])
                   if lab == "none" or members is None or lab in members]
            raw = o["target"][o["labels"].index("none")]
            for c in CONSENSUS:
                picks.setdefault(c, []).append((study._pick(o["criteria"], o["target"], c, idx),
                                                raw))
                picks.setdefault(f"{c}, R1", []).append(
                    (o["target"][_choose_margin(o, c, idx)], raw))
            picks.setdefault("R2", []).append((o["target"][_choose_consensus(o, idx)], raw))
        for col, v in picks.items():
            acc, raw = (100 * np.asarray(a, float) for a in zip(*v, strict=True))
            row[col] = f"{acc.mean():.2f} ({int(np.sum(acc - raw < -1.0))})"
        rows.append(row)
    return rows


def _task_accuracies(parts: dict, keys: list[str], methods, peers, values: dict) -> dict:
    """Per criterion of :data:`CRITERIA` and rule R2: every method's target accuracy (%) on
    each task of ``keys`` (``auto``, source only, each of ``methods`` and of ``peers`` over
    its own grid; NaN where it was not computed), in the report's order. ``values``: the
    per-task choices under the criteria, as ``study.summarise`` made them; R2's are made
    here."""
    order = [AUTO, RAW, *methods[1:], *peers]
    out = {c: {m: 100 * np.asarray(values[m][c], float) for m in order} for c in CRITERIA}
    r2 = out[R2] = {m: np.full(len(keys), np.nan) for m in order}
    for j, k in enumerate(keys):
        o = parts[k]["ours"]
        tg = np.asarray(o["target"], float)
        r2[RAW][j] = 100 * tg[o["labels"].index("none")]
        for m in ("auto", *methods[1:]):
            idx = None if m == "auto" else [i for i, lab in enumerate(o["labels"]) if lab == m]
            if idx is not None and not idx:
                continue
            i = _choose_consensus(o, idx)
            r2[AUTO if m == "auto" else m][j] = np.nan if i is None else 100 * tg[i]
        for p in peers:
            pr = parts[k]["peers"].get(p, {})
            if "criteria" in pr:
                i = _choose_consensus({"labels": [p] * len(pr["target"]),
                                       "criteria": pr["criteria"]})
                r2[p][j] = np.nan if i is None else 100 * pr["target"][i]
    return out


def leave_one_task_out(acc: dict) -> tuple[np.ndarray, list[str]]:
    """The single method chosen without the task: for each task, the method (among those of
    ``acc``, a ``{method: per-task accuracies}`` of one criterion, ``auto`` left out, computed
    on every task) with the highest mean over the *other* tasks, first on ties; its accuracy
    on that task, and its name."""
    full = {m: v for m, v in acc.items() if m != AUTO and np.isfinite(v).all()}
    names = list(full)
    table = np.array([full[m] for m in names])               # methods x tasks
    n = table.shape[1]
    others = (table.sum(axis=1, keepdims=True) - table) / (n - 1)
    pick = np.argmax(others, axis=0)                          # ties: first in order
    return table[pick, np.arange(n)], [names[i] for i in pick]


def paired_interval(diff: np.ndarray, n_resamples: int = 10_000, seed: int = 0
                    ) -> tuple[float, float]:
    """The 95% percentile interval of the mean of ``diff`` (one value per task) under a
    bootstrap over the tasks."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(n_resamples, diff.size))
    lo, hi = np.percentile(diff[idx].mean(axis=1), [2.5, 97.5])
    return float(lo), float(hi)


def _loto_section(parts: dict, keys: list[str], methods, peers, clf: str, values: dict
                  ) -> tuple[list[str], list[dict]]:
    """The report's comparison of ``auto`` with the best single method after the fact and
    with the single method chosen without the task (``docs/dev/model_selection.md``), under
    each criterion and R2; the conclusion fixed beforehand, under ``auto``'s best of them.
    Nothing with fewer than two tasks."""
    rows = []
    if len(keys) < 2:
        return [], []
    for c, acc in _task_accuracies(parts, keys, methods, peers, values).items():
        auto = acc[AUTO]
        if not np.isfinite(auto).all():
            continue
        full = {m: v for m, v in acc.items() if m != AUTO and np.isfinite(v).all()}
        post = max(full, key=lambda m: full[m].mean())           # first on ties
        loto, picks = leave_one_task_out(acc)
        rows.append({"criterion": c, "auto %": float(auto.mean()), "best single": post,
                     "best single %": float(full[post].mean()),
                     "auto - best single": float((auto - full[post]).mean()),
                     "interval, best single": paired_interval(auto - full[post]),
                     "chosen without the task %": float(loto.mean()),
                     "auto - chosen without the task": float((auto - loto).mean()),
                     "interval, chosen without the task": paired_interval(auto - loto),
                     "chosen": {m: picks.count(m) for m in dict.fromkeys(picks)}})
    if not rows:
        return [], []

    def iv(t):
        return f"[{t[0]:+.2f}, {t[1]:+.2f}]"

    table = [{"criterion": r["criterion"], "auto %": r["auto %"],
              "best single (after the fact)": r["best single"], "its %": r["best single %"],
              "auto - it (95% interval)": f"{r['auto - best single']:+.2f} "
                                          f"{iv(r['interval, best single'])}",
              "single method chosen without the task %": r["chosen without the task %"],
              "auto - that (95% interval)": f"{r['auto - chosen without the task']:+.2f} "
                                           f"{iv(r['interval, chosen without the task'])}",
              "what it chose (tasks)": ", ".join(f"{m} {n}" for m, n in r["chosen"].items())}
             for r in rows]
    b = max(rows, key=lambda r: r["auto %"])                      # auto's best; first on ties
    lo, hi = b["interval, chosen without the task"]
    if b["auto - chosen without the task"] >= 1.0 and lo > 0:
        said = (f"Under {b['criterion']} (`auto`'s best here), `auto` beats choosing one "
                f"method from the other tasks: {b['auto - chosen without the task']:+.2f} "
                f"points {iv((lo, hi))}.")
    else:
        said = (f"Under {b['criterion']} (`auto`'s best here), `auto` does not beat choosing "
                f"one method from the other tasks by a point with an interval above 0: "
                f"{b['auto - chosen without the task']:+.2f} points {iv((lo, hi))}.")
    plo, phi = b["interval, best single"]
    if plo <= 0 <= phi:
        said += (f" The {len(keys)} tasks cannot tell `auto` from the best single method "
                 f"after the fact ({b['best single']}): {b['auto - best single']:+.2f} points "
                 f"{iv((plo, phi))}.")
    lines = [f"### `auto` against a single method chosen without the task ({clf})", "",
             "The best single method above is chosen after the fact, with every task's "
             "target labels. Here, for each task, the single method (among those computed on "
             "every task) with the best mean over the *other* tasks under the same criterion "
             "is scored on it. Intervals: 95%, a paired bootstrap over the tasks of `auto` "
             "minus each (10,000 resamples, seed 0). Written before it was computed: "
             "docs/dev/model_selection.md.", "", markdown_table(table), "", said, ""]
    return lines, rows


def _plain_gap(o: dict, crit: str) -> float:
    """Plain ``auto`` under ``crit`` minus no adaptation, in points."""
    return 100 * (study._pick(o["criteria"], o["target"], crit)
                  - o["target"][o["labels"].index("none")])


def report(parts: dict, machine: dict, seconds: float | None, name: str, methods, peers,
           rows_seed: int = 0) -> None:
    body = ["\n\n".join(p.strip() for p in __doc__.split("\n\n")[1:4]), ""]
    if rows_seed:
        body += [f"**A replication on other rows**: the subsample of each domain's rows is "
                 f"seeded by {rows_seed} instead of 0 and the toy's data are drawn anew "
                 f"(seeds {3 * rows_seed} to {3 * rows_seed + 2}). Domains of at most "
                 "`--max-rows` rows (DSLR, Webcam) are the same rows, so DSLR<->Webcam repeat "
                 "the main run's tasks. What it was run to check was written before it ran "
                 "(docs/dev/model_selection.md).", ""]
    # a method added to the library after the parts were made has no row: say so, not "nan"
    measured = {lab for part in parts.values() for lab in part["ours"]["labels"]}
    measured |= {m for part in parts.values() for m in part["na"]}
    later = [m for m in methods[1:] if m not in measured]
    methods = tuple(m for m in methods if m == "none" or m in measured)
    if later:
        body += [f"Not in this run (added to `ADAPTERS` after its parts were made): "
                 f"{', '.join(later)}.", ""]
    data = {"not_in_this_run": later}
    for clf in study.classifiers():
        table, per_task, info = study.summarise(parts, clf, ours=methods, peers=peers,
                                                criteria=CRITERIA)
        n = info["tasks"]
        if not n:
            continue
        keys = sorted(k for k in parts if k.endswith(f"|{clf}"))
        na = {}
        errors = {}
        stopped = {}
        secs = {}
        for k in keys:
            for m, why in parts[k]["na"].items():
                na.setdefault(m, why)
            for m, why in parts[k]["errors"].items():
                errors.setdefault(m, []).append(f"{k.rsplit('|', 1)[0]}: {why}")
            for m, lim in parts[k].get("timeouts", {}).items():
                stopped.setdefault(m, []).append(f"{k.rsplit('|', 1)[0]} ({lim:.0f} s)")
            for m, why in parts[k].get("skipped", {}).items():
                stopped.setdefault(m, []).append(f"{k.rsplit('|', 1)[0]} ({why})")
            for m, s in parts[k]["seconds_method"].items():
                secs.setdefault(m, []).append(s)
        table = [r for r in table if r["method"] not in na]
        cols = ["method", *CRITERIA, "oracle"]

        def cell(r, c, n=n):
            v = r.get(c, "")
            return f"{v:.2f} ({r[c + ' n']}/{n} tasks)" if c + " n" in r else v

        body += [f"## classifier: {clf} ({n} tasks), mean target accuracy %", "",
                 markdown_table([{c: cell(r, c) for c in cols} for r in table], cols), "",
                 "A cell with a task count is the mean over the tasks where the method and "
                 "criterion could be computed: not comparable with the full means, and left "
                 "out of the comparison below.", ""]
        verdicts = [_verdict(table, c, n) for c in CRITERIA]
        best = max(CRITERIA, key=lambda c: table[0][c])
        vb = next(v for v in verdicts if v["criterion"] == best)
        body += [f"Best target-free criterion for `auto`: **{best}** ({table[0][best]:.2f}% "
                 f"vs {table[1][best]:.2f}% source only).", "",
                 f"### `auto` against every single method under the same criterion ({clf})", "",
                 markdown_table([{"criterion": v["criterion"], "auto %": v["auto"],
                                  "best single method": v["best single"],
                                  "its %": v["best single %"],
                                  "auto - best single": v["margin"],
                                  "auto >= every single": "yes" if v["at least all"]
                                  else "no",
                                  "auto >= every single + 1": "yes" if v["beats all by >= 1"]
                                  else "no"} for v in verdicts]),
                 "", "Single methods: each of ours and skada's, and source only, over the "
                 "tasks where it ran (N/A methods left out; those that failed on a task are "
                 "left out of this comparison and listed under failures).", ""]
        if vb["beats all by >= 1"]:
            body += [f"Under {best}, `auto` beats every single method computed on all {n} "
                     f"tasks by at least 1 point (margin {vb['margin']:+.2f}).", ""]
        else:
            body += [f"Under {best}, `auto` does **not** beat every single method by 1 point: "
                     f"within 1 point or above it: {', '.join(vb['not within 1 point'])} "
                     f"(best single: {vb['best single']}, {vb['best single %']:.2f}% against "
                     f"{vb['auto']:.2f}%, margin {vb['margin']:+.2f}).", ""]
        lines = [{"task": t["task"], "raw": 100 * t["raw"],
                  **{c: 100 * t[c] for c in (*CRITERIA, "oracle")},
                  "auto - raw (best criterion)": 100 * (t[best] - t["raw"])} for t in per_task]
        body += [f"### per task, `auto` under each criterion ({clf})", "",
                 markdown_table(lines, ["task", "raw", *CRITERIA, "oracle",
                                        "auto - raw (best criterion)"]), ""]
        gaps = np.array([t[best] - t["raw"] for t in per_task]) * 100
        below = [t["task"] for t, g in zip(per_task, gaps, strict=True) if g < -1.0]
        body += [f"`auto` under {best} minus no adaptation: mean {gaps.mean():+.2f} points, "
                 f"worst {gaps.min():+.2f} ({per_task[int(np.argmin(gaps))]['task']}); "
                 f"{len(below)} of {len(per_task)} tasks more than 1 point below no adaptation"
                 + (f": {', '.join(below)}." if below else "."), ""]
        pools = _pool_table(parts, keys)
        body += [f"### `auto` over five pools ({clf}; mean target accuracy %)", "",
                 "The default pool of `shiftlearn adapt --method auto` on tables of this size "
                 "(`default_methods`), that pool with the two linear maps SKADA-Bench ranks "
                 "first among shallow methods (LinOT 1st, SA 5th: an outside ranking, not "
                 "these tasks' labels), the methods SKADA-Bench ranks above source only "
                 f"({', '.join(SKADA_BENCH_ABOVE_SOURCE)}; those the classifier cannot serve "
                 "drop out) alone and with the default, and the whole catalog (the `auto` row "
                 "above), each choosing among its candidates and no adaptation under each "
                 "criterion.", "",
                 markdown_table(pools, ["pool", *CRITERIA, "oracle"]), ""]
        rule_lines, rules = _rule_section(parts, keys, methods, clf, table, best)
        body += rule_lines
        loto_lines, loto = _loto_section(parts, keys, methods, peers, clf, info["values"])
        body += loto_lines
        timing = [{"method": m, "tasks": len(v), "mean s / task": float(np.mean(v)),
                   "max s": float(np.max(v))} for m, v in secs.items()]
        task_s = [parts[k]["seconds"] for k in keys]
        body += [f"### time per method ({clf}; search + cluster split + refits, one thread)",
                 "", markdown_table(timing), "",
                 f"Per task: mean {np.mean(task_s):.0f} s, max {np.max(task_s):.0f} s.", ""]
        if na:
            body += [f"### N/A with {clf} (not failures: the classifier cannot serve them)", "",
                     markdown_table([{"method": m, "why": why.replace("|", "/")}
                                     for m, why in na.items()]), ""]
        if stopped:
            body += [f"### stopped by the time limit or skipped by the size rule ({clf}; left "
                     "out of those tasks' means)",
                     "", *[f"* {m}: {', '.join(v)}" for m, v in stopped.items()], ""]
        if errors:
            body += [f"### failures ({clf})", "",
                     *[f"* {m}: {'; '.join(v)}" for m, v in errors.items()], ""]
        data[clf] = {"table": table, "per_task": per_task, "best_criterion": best,
                     "pools": pools, "rules": rules, "without_the_task": loto,
                     "verdicts": verdicts, "na": na, "errors": errors, "stopped": stopped,
                     "seconds_per_method": {m: list(v) for m, v in secs.items()},
                     "seconds_per_task": dict(zip(keys, task_s, strict=True)),
                     "auto_minus_raw": {"mean": float(gaps.mean()), "min": float(gaps.min()),
                                        "tasks_below_1_point": below}}
    if seconds is not None:
        body.append(f"Wall time of this run: {seconds / 60:.1f} min.")
    write_results(name, "Selection without target labels: the whole catalog"
                  + (f", on other rows (seed {rows_seed})" if rows_seed else ""),
                  "\n".join(body), data, machine)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the toy and two Office tasks, a few methods (selection_catalog_quick)")
    ap.add_argument("--classifiers", nargs="+", default=list(study.classifiers()),
                    choices=list(study.classifiers()))
    ap.add_argument("--tasks", nargs="+", default=None,
                    help="keep the tasks whose name (e.g. office_caltech:amazon->dslr) "
                         "contains one of these strings")
    ap.add_argument("--max-rows", type=int, default=400,
                    help="rows per domain, every method (default 400)")
    ap.add_argument("--time-limit", type=float, default=300,
                    help="seconds per method and task (search + refits; default 300, 0: "
                         "none); a method stopped by it is reported, left out of that task")
    ap.add_argument("--rows-seed", type=int, default=0,
                    help="the seed of the subsample of rows (and of the toy's data); not 0: "
                         "a replication on other rows, written to selection_catalog_rows<N>")
    ap.add_argument("--report", action="store_true", help="only rebuild the tables")
    ap.add_argument("--reverse", action="store_true",
                    help="run the tasks last to first (a second process shares the parts)")
    args = ap.parse_args(argv)
    methods = QUICK_METHODS if args.quick else OURS
    peers = tuple(p for p in PEERS if PEER_OF[p] in methods)
    name = "selection_catalog_quick" if args.quick else "selection_catalog"
    if args.rows_seed:
        name += f"_rows{args.rows_seed}"
    machine = header("Selection without target labels: the whole catalog")
    store = PartsFile(results_dir(__file__) / f"_{name}_parts_r{args.max_rows}.json")
    t0 = time.perf_counter()
    # imported before any timed region: the time limit's alarm must never interrupt an import
    # (a half-imported torch, through POT's backends, crashed the process)
    import ot  # noqa: F401
    import skada  # noqa: F401
    with threadpool_limits(limits=1):
        if not args.report:
            order = study.tasks(args.quick)
            if args.tasks:
                order = [o for o in order if any(f in f"{o[0]}:{o[1]}->{o[2]}"
                                                 for f in args.tasks)]
            for tname, s, t in track(order[::-1] if args.reverse else order, "tasks"):
                memory = FitMemory(max_bytes=3 << 30)
                for clf in args.classifiers:
                    key = f"{tname}:{s}->{t}|{clf}"
                    if key in store:
                        continue
                    r = run_task(tname, s, t, clf, args.max_rows, methods, peers, memory,
                                 args.time_limit, args.rows_seed)
                    store.save(key, r)
                    slow = sorted(r["seconds_method"].items(), key=lambda kv: -kv[1])[:3]
                    print(f"{key}: {r['seconds']:.0f} s (ours {r['seconds_ours']:.0f} s; "
                          f"slowest: {', '.join(f'{m} {v:.0f} s' for m, v in slow)})",
                          flush=True)
    report(store.load(), machine, None if args.report else time.perf_counter() - t0, name,
           methods, peers, args.rows_seed)


if __name__ == "__main__":
    main()
