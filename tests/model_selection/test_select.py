"""AdaptationSelector (issue #15 item 3): no adaptation is always a candidate, the choice and
every candidate's validation estimate are reported, and the search is plain GridSearchCV."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn import DomainAdaptationClassifier
from shiftlearn.datasets import make_sca_toy
from shiftlearn.model_selection._select import AdaptationSelector, candidate_grid, make_adapter

SMALL = {"TCA": {"n_components": [1, 2]}, "SCA": {"n_components": [1, 2], "beta": [0.1, 0.9]}}


@pytest.fixture
def toy():
    return make_sca_toy(n_per_cluster=15, random_state=0, return_target_labels=True)


def test_no_adaptation_is_the_raw_classifier(toy):
    X, y, sd, yt = toy
    raw = DomainAdaptationClassifier(None, KNeighborsClassifier(1)).fit(X, y, sd)
    ref = KNeighborsClassifier(1).fit(X[sd > 0], y[sd > 0])
    assert np.array_equal(raw.predict(X[sd < 0]), ref.predict(X[sd < 0]))
    assert np.array_equal(raw.transform(X[:3]), X[:3])


def test_none_is_always_a_candidate_and_ties_keep_it(toy):
    X, y, sd, yt = toy
    sel = AdaptationSelector(methods=["TCA", "SCA"], grids=SMALL, cv=3).fit(X, y, sd)
    assert [r["method"] for r in sel.summary_] == ["none", "TCA", "SCA"]
    assert sum(r["chosen"] for r in sel.summary_) == 1
    best = max(r["score"] for r in sel.summary_)
    chosen = next(r for r in sel.summary_ if r["chosen"])
    assert chosen["score"] == best
    if sel.summary_[0]["score"] == best:         # a tie with no adaptation keeps the raw model
        assert sel.choice_ == "none" and "do not adapt" in sel.report()
    else:
        assert sel.choice_ != "none" and f"adapt with {sel.choice_}" in sel.report()
    assert isinstance(sel.search_, GridSearchCV)
    assert -1 not in sel.predict(X[sd < 0])


def test_report_says_do_not_adapt_when_raw_wins(toy):
    X, y, sd, yt = toy
    # a scorer that prefers the raw features: negative number of adapted dimensions
    def prefers_raw(est, X_val, y_val):
        return 1.0 if est.adapter_ is None else 0.0
    sel = AdaptationSelector(methods=["TCA"], grids=SMALL, cv=3, scoring=prefers_raw)
    sel.fit(X, y, sd)
    assert sel.choice_ == "none"
    assert "Decision: do not adapt" in sel.report()


def test_margin_keeps_no_adaptation_unless_the_lead_exceeds_it(toy):
    X, y, sd, yt = toy
    calls = {"n": 0}

    def lead(est, X_val, y_val):
        # no adaptation 0.50 in every fold; the adapter 0.60 or 0.70 by fold: lead 0.15,
        # std 0.05, standard error 0.05 / sqrt(2)
        if est.adapter_ is None:
            return 0.5
        calls["n"] += 1
        return 0.6 if calls["n"] % 2 else 0.7

    kw = dict(methods=["TCA"], grids={"TCA": {"n_components": [1]}}, cv=2, scoring=lead)
    for margin, choice in [(0.0, "TCA"), (0.14, "TCA"), (0.16, "none"), (0.2, "none"),
                           ("se", "TCA")]:
        calls["n"] = 0
        sel = AdaptationSelector(margin=margin, **kw).fit(X, y, sd)
        assert sel.choice_ == choice, margin
        row = sel.summary_[1]
        assert row["score"] == pytest.approx(0.65) and row["std"] == pytest.approx(0.05)
    assert sel.margin_ == pytest.approx(0.05 / np.sqrt(2))       # "se" resolved
    calls["n"] = 0
    sel = AdaptationSelector(margin=0.2, **kw).fit(X, y, sd)
    assert "beats the raw features by more than 0.2000" in sel.report()
    with pytest.raises(ValueError, match="margin"):
        AdaptationSelector(margin=-1.0, **kw).fit(X, y, sd)
    with pytest.raises(ValueError, match="margin"):
        AdaptationSelector(margin="sd", **kw).fit(X, y, sd)


def test_candidate_grid_and_make_adapter_errors():
    grid = candidate_grid(["none", "SCA"], grids={"SCA": {"beta": [0.5], "nope": [1]}})
    assert grid[0] == {"adapter": [None]} and grid[1]["adapter__beta"] == [0.5]
    assert "adapter__nope" not in grid[1]
    with pytest.raises(ValueError, match="Unknown method 'PCA'"):
        make_adapter("PCA")
    with pytest.raises(ValueError, match="no parameter"):
        make_adapter("TCA", nope=1)
    with pytest.raises(ValueError, match="Unknown method"):
        AdaptationSelector(methods=["PCA"]).fit(np.zeros((6, 2)), np.array([0, 1, 0, 1, -1, -1]))


# ------------------------------------------------------- seconds per candidate, n_jobs ------
def test_candidate_times_are_measured_where_each_candidate_is_fitted(toy, monkeypatch):
    """A TCA fit made 20 ms slower shows up in TCA's seconds only, with its number of fits;
    the sums are those of ``cv_results_`` (mean per fold times the folds)."""
    import time

    from shiftlearn.adaptation import TCA

    fit = TCA.fit_transform                 # what DomainAdaptationClassifier calls

    def slow_fit(self, *args, **kwargs):
        time.sleep(0.02)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(TCA, "fit_transform", slow_fit)
    X, y, sd, _ = toy
    sel = AdaptationSelector(methods=["TCA", "CORAL"], grids=SMALL, cv=3).fit(X, y, sd)
    times = {t["method"]: t for t in sel.candidate_times_}
    assert [t["method"] for t in sel.candidate_times_] == [r["method"] for r in sel.summary_]
    assert [times[m]["n_fits"] for m in ("none", "TCA", "CORAL")] == [3, 6, 3]
    assert times["TCA"]["fit_time"] >= 6 * 0.02
    # the others carry none of the 6 x 20 ms (a margin for a loaded machine)
    assert times["none"]["fit_time"] < 6 * 0.02 and times["CORAL"]["fit_time"] < 6 * 0.02
    assert all(t["score_time"] > 0 for t in sel.candidate_times_)
    res = sel.search_.cv_results_
    assert sum(t["fit_time"] for t in sel.candidate_times_) == pytest.approx(
        3 * np.sum(res["mean_fit_time"]))
    assert sum(t["score_time"] for t in sel.candidate_times_) == pytest.approx(
        3 * np.sum(res["mean_score_time"]))
    assert 0 < sel.refit_time_ < 5


def test_n_jobs_two_gives_the_choice_and_scores_of_one():
    """Candidates and folds in two threads: the same estimates, summary and predictions as
    one job, with the memory shared (and with a target-label-free criterion that refits)."""
    from shiftlearn.model_selection import CircularValidation

    X, y, sd = make_sca_toy(n_per_cluster=12, random_state=3)
    grids = {**SMALL, "CORAL": {"shrinkage": ["auto", 1.0]}}
    out = {}
    for n_jobs in (1, 2):
        out[n_jobs] = AdaptationSelector(methods=["TCA", "SCA", "CORAL"], grids=grids, cv=3,
                                         scoring=CircularValidation(),
                                         n_jobs=n_jobs).fit(X, y, sd)
    one, two = out[1], out[2]
    np.testing.assert_array_equal(one.search_.cv_results_["mean_test_score"],
                                  two.search_.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(one.search_.cv_results_["rank_test_score"],
                                  two.search_.cv_results_["rank_test_score"])
    assert one.summary_ == two.summary_ and one.choice_ == two.choice_
    assert np.array_equal(one.predict(X[sd < 0]), two.predict(X[sd < 0]))


def test_n_jobs_runs_threads_sharing_the_memory_without_oversubscribing(toy):
    """n_jobs=2 runs the fits in threads of this process (so one FitMemory, guarded by its
    lock, serves every worker) and limits BLAS to cpu_count // 2 threads meanwhile."""
    import os
    import threading

    from joblib import cpu_count
    from threadpoolctl import threadpool_info, threadpool_limits

    from shiftlearn.adaptation import FitMemory
    from shiftlearn.model_selection import SourceAccuracyScorer

    seen = []
    inner = SourceAccuracyScorer()

    def scorer(estimator, X, y, **kw):
        seen.append((os.getpid(), threading.get_ident(),
                     max(lib["num_threads"] for lib in threadpool_info())))
        return inner(estimator, X, y, **kw)

    X, y, sd, _ = toy
    memory = FitMemory()
    with threadpool_limits(limits=max(2, cpu_count())):
        AdaptationSelector(methods=["TCA"], grids=SMALL, cv=3, scoring=scorer, n_jobs=2,
                           memory=memory).fit(X, y, sd)
    assert len(seen) == 9 and {pid for pid, _, _ in seen} == {os.getpid()}
    assert len({thread for _, thread, _ in seen}) >= 2
    assert max(n for _, _, n in seen) <= max(1, cpu_count() // 2)
    assert len(memory) > 0                    # the workers wrote to the caller's memory


def test_a_process_backend_gets_empty_memories_and_the_same_choice(toy):
    """Under loky (a caller's ``joblib.parallel_config``) each worker unpickles an empty copy
    of the memory: the caller's stays empty, the estimates and the choice are those of one
    job with the shared memory."""
    from joblib import parallel_config

    from shiftlearn.adaptation import FitMemory

    X, y, sd, _ = toy
    one = AdaptationSelector(methods=["TCA", "SCA"], grids=SMALL, cv=3).fit(X, y, sd)
    memory = FitMemory()
    with parallel_config(backend="loky", inner_max_num_threads=1):
        two = AdaptationSelector(methods=["TCA", "SCA"], grids=SMALL, cv=3, n_jobs=2,
                                 memory=memory).fit(X, y, sd)
    assert len(memory) == 0
    np.testing.assert_array_equal(one.search_.cv_results_["mean_test_score"],
                                  two.search_.cv_results_["mean_test_score"])
    assert one.summary_ == two.summary_ and one.choice_ == two.choice_


def test_a_dask_cluster_spreads_the_search_with_the_same_choice(toy):
    """joblib's Dask backend (a ``distributed.Client`` on a ``LocalCluster``) runs the
    candidates and folds on the cluster's workers: the estimates and the choice are those of
    one job."""
    import warnings

    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, y, sd, _ = toy
    one = AdaptationSelector(methods=["TCA", "SCA"], grids=SMALL, cv=3).fit(X, y, sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # distributed's port/resource notices
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client, parallel_config(backend="dask"):
            two = AdaptationSelector(methods=["TCA", "SCA"], grids=SMALL, cv=3,
                                     n_jobs=-1).fit(X, y, sd)
            ran = client.run_on_scheduler(
                lambda dask_scheduler: len(dask_scheduler.task_prefixes))
    assert ran > 0                                   # the cluster ran the search's tasks
    np.testing.assert_array_equal(one.search_.cv_results_["mean_test_score"],
                                  two.search_.cv_results_["mean_test_score"])
    assert one.summary_ == two.summary_ and one.choice_ == two.choice_


def test_successive_halving_scores_the_winner_and_no_adaptation_on_every_row(toy):
    """``search="halving"`` does less work (rows x fits) than the grid; the last round's
    best and no adaptation get exactly the full grid's estimates (same folds, every row), and
    the choice between them follows the margin rule."""
    X, y, sd, _ = toy
    grids = {"TCA": {"n_components": [1, 2, 3]}, "SCA": {"n_components": [1, 2, 3],
                                                         "beta": [0.1, 0.5, 0.9]}}
    full = AdaptationSelector(methods=["TCA", "SCA"], grids=grids, cv=3).fit(X, y, sd)
    half = AdaptationSelector(methods=["TCA", "SCA"], grids=grids, cv=3,
                              search="halving").fit(X, y, sd)
    # work in rows x fits: the rounds on subsamples, then two candidates on every row
    work_full = len(full.search_.cv_results_["params"]) * 3 * X.shape[0]
    work_half = (int(np.sum(half.search_.cv_results_["n_resources"])) + 2 * X.shape[0]) * 3
    assert work_half < work_full
    assert len(set(half.search_.cv_results_["n_resources"])) >= 2      # more than one round
    by = {r["method"]: r for r in full.summary_}
    chosen = next(r for r in half.summary_ if r["chosen"])
    for r in half.summary_:
        if r["method"] == "none" or r["chosen"] or r["rows"] == X.shape[0]:
            assert r["rows"] == X.shape[0]
    assert half.summary_[0]["score"] == by["none"]["score"]
    # the winner's estimate is the full grid's estimate of the same setting
    res = full.search_.cv_results_
    key = {f"adapter__{k}": v for k, v in chosen["params"].items()}
    for p, m in zip(res["params"], res["mean_test_score"], strict=True):
        if _method_name(p) == chosen["method"] and all(p.get(k) == v for k, v in key.items()):
            assert m == chosen["score"]
            break
    else:
        assert chosen["method"] == "none"
    assert half.predict(X[sd < 0]).shape == (int(np.sum(sd < 0)),)


def _method_name(params) -> str:
    from shiftlearn.model_selection import method_label as _method_of

    return _method_of(params["adapter"])
