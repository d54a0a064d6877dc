"""FewLabelSelector: the choice among the few-labels methods on the labeled target rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn.model_selection import (
    SINGLE_LABEL_DEFAULT,
    FewLabelSelector,
    make_few_label_candidate,
    nested_estimate,
)
from shiftlearn.model_selection._fewlabels import few_label_folds


def _task(n=60, m_per_class=3, flip=False, seed=0, sep=3.0):
    """Two Gaussian classes; target shifted; ``flip``: the source's labels are the opposite
    of the target's (so only the target labels can teach the target concept)."""
    rng = np.random.default_rng(seed)
    ys = np.tile([0, 1], n // 2)
    yt = np.tile([0, 1], n // 2)
    Xs = rng.normal(size=(n, 2)) + sep * ys[:, None]
    Xt = rng.normal(size=(n, 2)) + sep * yt[:, None] + [0.5, 0.0]
    if flip:
        ys = 1 - ys
    X = np.vstack([Xs, Xt])
    y_true = np.r_[ys, yt]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    y = y_true.copy()
    keep = np.r_[np.zeros(n, bool), np.zeros(n, bool)]
    for c in (0, 1):
        keep[n + np.flatnonzero(yt == c)[:m_per_class]] = True
    y[(sd < 0) & ~keep] = -1
    return X, y, sd, y_true


def test_target_only_wins_when_the_source_labels_are_reversed():
    X, y, sd, y_true = _task(flip=True, m_per_class=4)
    sel = FewLabelSelector(methods=["source-only", "pooled", "target-only"]).fit(X, y, sd)
    res = dict(zip(sel.cv_results_["method"], sel.cv_results_["mean_test_score"],
                   strict=True))
    assert sel.best_method_ == "target-only"
    assert res["source-only"] < 0.2 < 0.8 < res["target-only"]
    tgt = (sd < 0) & (y == -1)
    assert sel.score(X[tgt], y_true[tgt]) > 0.8


def test_source_wins_when_the_target_labels_are_noise_free_but_few():
    # no shift in the concept: the pooled model (many rows) is at least as good as target only
    X, y, sd, _ = _task(m_per_class=2, sep=4.0)
    sel = FewLabelSelector(methods=["pooled", "target-only"]).fit(X, y, sd)
    assert sel.best_method_ == "pooled"


def test_leave_one_out_with_one_label_per_class():
    X, y, sd, _ = _task(m_per_class=1)
    sel = FewLabelSelector(methods=["pooled", "source-only"], single_label="cv").fit(X, y, sd)
    assert sel.split_rule_.startswith("leave-one-out over the 2 labeled target rows")
    assert sel.n_repeats_ == 1
    assert sel.estimate_.rows == 2
    assert not sel.single_label_default_ and all(sel.cv_results_["scored"])


def test_one_label_per_class_fits_the_default_without_a_choice():
    X, y, sd, _ = _task(m_per_class=1)
    methods = ["pooled", "pooled-weighted", "target-only"]
    sel = FewLabelSelector(methods=methods).fit(X, y, sd)
    assert sel.single_label_default_ and sel.best_method_ == SINGLE_LABEL_DEFAULT
    res = sel.cv_results_
    assert res["scored"] == [False, True, False]
    assert np.isnan(res["mean_test_score"][0]) and np.isnan(res["mean_test_score"][2])
    assert res["fit_time"][0] == 0.0 and res["fit_time"][2] == 0.0    # never fitted
    # its estimate is its own leave-one-out score, as the cross-validated choice scores it
    cv = FewLabelSelector(methods=methods, single_label="cv").fit(X, y, sd)
    assert sel.estimate_.accuracy == cv.cv_results_["mean_test_score"][1]
    ref = make_few_label_candidate(SINGLE_LABEL_DEFAULT).fit(X, y, sd)
    tgt = y == -1
    np.testing.assert_array_equal(sel.predict(X[tgt]), ref.predict(X[tgt]))
    assert res["rank_test_score"] == [3, 1, 3]                    # unscored: tied last
    # without it among the candidates, the first of them
    first = FewLabelSelector(methods=["source-only", "pooled"]).fit(X, y, sd)
    assert first.best_method_ == "source-only" and first.single_label_default_


def test_a_one_label_default_that_fails_gives_way_to_the_next_candidate():
    # 1-NN takes no sample_weight, which pooled-weighted needs: the next candidate is fitted
    X, y, sd, _ = _task(m_per_class=1)
    sel = FewLabelSelector(methods=["pooled", "pooled-weighted", "target-only"],
                           estimator=KNeighborsClassifier(1)).fit(X, y, sd)
    res = sel.cv_results_
    assert sel.single_label_default_ and sel.best_method_ == "pooled"
    assert "sample_weight" in res["error"][1] and res["scored"] == [True, True, False]
    assert np.isfinite(res["mean_test_score"][0]) and np.isnan(res["mean_test_score"][2])


def test_two_labels_per_class_choose_whatever_single_label_says():
    X, y, sd, _ = _task(m_per_class=2)
    methods = ["pooled", "pooled-weighted", "target-only"]
    a = FewLabelSelector(methods=methods).fit(X, y, sd)
    b = FewLabelSelector(methods=methods, single_label="cv").fit(X, y, sd)
    assert not a.single_label_default_ and a.best_method_ == b.best_method_
    assert a.cv_results_["mean_test_score"] == b.cv_results_["mean_test_score"]


def test_stratified_repeated_when_every_class_has_two():
    X, y, sd, _ = _task(m_per_class=3)
    sel = FewLabelSelector(methods=["pooled"]).fit(X, y, sd)
    # 6 rows: 3-fold (the smallest class has 3), ceil(30 / 6) = 5 repeats
    assert sel.split_rule_ == ("stratified 3-fold, repeated 5 times over the 6 labeled target "
                               "rows")
    assert sel.n_repeats_ == 5


def test_each_repeat_holds_out_every_labeled_row_once():
    y = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    folds, r, _ = few_label_folds(y, n_splits=5, n_repeats=3, random_state=0)
    per = len(folds) // r
    assert per == 2                                  # the smallest class has 2 rows
    for rep in range(r):
        rows = np.sort(np.concatenate(folds[rep * per:(rep + 1) * per]))
        assert rows.tolist() == list(range(y.size))
        for f in folds[rep * per:(rep + 1) * per]:   # stratified: each class in each fold
            assert set(y[f].tolist()) == {0, 1, 2}


def test_no_validation_label_reaches_the_training():
    # target labels are coin flips independent of X: a 1-NN on the labeled target rows scores
    # about 1/2 on held-out rows, and exactly 1 if a held-out row's label were in training
    rng = np.random.default_rng(1)
    n = 40
    X = rng.normal(size=(2 * n, 3))
    sd = np.r_[np.ones(n, int), -np.ones(n, int)]
    y = np.r_[np.tile([0, 1], n // 2), rng.permutation(np.tile([0, 1], n // 2))]
    sel = FewLabelSelector(methods=["target-only"], estimator=KNeighborsClassifier(1),
                           n_repeats=2).fit(X, y, sd)
    assert sel.cv_results_["mean_test_score"][0] < 0.75
    # with every target label, the in-sample accuracy of the same 1-NN is 1: the test above
    # could fail
    assert sel.best_estimator_.predict(X[sd < 0]).tolist() == y[sd < 0].tolist()


def test_ties_go_to_the_earlier_method():
    X, y, sd, _ = _task(m_per_class=3, sep=8.0)
    a = FewLabelSelector(methods=["source-only", "pooled"]).fit(X, y, sd)
    b = FewLabelSelector(methods=["pooled", "source-only"]).fit(X, y, sd)
    assert a.cv_results_["mean_test_score"] == [1.0, 1.0]
    assert (a.best_method_, b.best_method_) == ("source-only", "pooled")


def test_a_failing_candidate_is_reported_and_not_chosen():
    X, y, sd, _ = _task(m_per_class=3)
    # TrAdaBoost weighs its learner's rows; 1-NN takes no sample_weight
    sel = FewLabelSelector(methods=["TrAdaBoost", "pooled"],
                           estimator=KNeighborsClassifier(1)).fit(X, y, sd)
    i = sel.cv_results_["method"].index("TrAdaBoost")
    assert sel.cv_results_["error"][i]
    assert np.isnan(sel.cv_results_["mean_test_score"][i])
    assert sel.best_method_ == "pooled"


def test_estimate_is_the_winners_and_labels_keep_their_type():
    X, y, sd, y_true = _task(m_per_class=3)
    names = np.array(["neg", "pos"], dtype=object)
    y_s = np.where(y >= 0, names[np.clip(y, 0, 1)], -1).astype(object)
    sel = FewLabelSelector(methods=["pooled", "FeatureAugmentation"]).fit(X, y_s, sd)
    i = sel.cv_results_["method"].index(sel.best_method_)
    assert sel.estimate_.accuracy == sel.cv_results_["mean_test_score"][i]
    assert sel.estimate_.se == sel.cv_results_["se_test_score"][i]
    assert set(sel.predict(X[sd < 0]).tolist()) <= {"neg", "pos"}
    p = sel.predict_proba(X[sd < 0])
    assert p.shape == (60, 2) and np.allclose(p.sum(axis=1), 1)


def test_n_jobs_does_not_change_the_result():
    X, y, sd, _ = _task(m_per_class=3)
    a = FewLabelSelector(methods=["pooled", "LinInt", "CORAL"]).fit(X, y, sd)
    b = FewLabelSelector(methods=["pooled", "LinInt", "CORAL"], n_jobs=2).fit(X, y, sd)
    assert a.cv_results_["mean_test_score"] == b.cv_results_["mean_test_score"]
    assert a.best_method_ == b.best_method_


def test_every_default_candidate_fits():
    X, y, sd, _ = _task(m_per_class=3)
    sel = FewLabelSelector(methods="all").fit(X, y, sd)
    assert not any(sel.cv_results_["error"]), sel.cv_results_["error"]
    assert np.all(np.isfinite(sel.cv_results_["mean_test_score"]))


def test_nested_estimate_scores_every_labeled_row_once():
    X, y, sd, _ = _task(m_per_class=4, sep=5.0)
    est = nested_estimate(FewLabelSelector(methods=["pooled", "target-only"]), X, y, sd)
    assert est.rows == 8
    assert est.accuracy > 0.8


def test_no_labeled_target_row_names_the_unlabeled_selector():
    X, y, sd, _ = _task()
    y[sd < 0] = -1
    with pytest.raises(ValueError, match="AdaptationSelector"):
        FewLabelSelector().fit(X, y, sd)
    with pytest.raises(ValueError, match="sample_domain was not given"):
        FewLabelSelector().fit(X, np.where(sd < 0, 0, y))


def test_a_target_class_unseen_in_the_source_is_refused():
    X, y, sd, _ = _task(m_per_class=2)
    y[np.flatnonzero(y >= 0)[-1]] = 7
    with pytest.raises(ValueError, match=r"class\(es\) \[7\] that no source row has"):
        FewLabelSelector().fit(X, y, sd)


def test_other_refusals():
    X, y, sd, _ = _task(m_per_class=2)
    with pytest.raises(ValueError, match="unknown"):
        FewLabelSelector(methods=["pooled", "nope"]).fit(X, y, sd)
    with pytest.raises(ValueError, match="(?i)no source row"):
        FewLabelSelector().fit(X[sd < 0], y[sd < 0], sd[sd < 0])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        FewLabelSelector().fit(Xn, y, sd)


def test_margin_keeps_the_earlier_candidate_within_it():
    X, y, sd, _ = _task(flip=True, m_per_class=4)
    methods = ["source-only", "target-only"]
    # a margin of 1 (all of the accuracy scale) keeps the first candidate whatever the scores
    assert FewLabelSelector(methods=methods, margin=1.0).fit(X, y, sd).best_method_ == \
        "source-only"
    # one standard error: target-only's lead (about 1.0 against 0.0) is far beyond it
    sel = FewLabelSelector(methods=methods, margin="se").fit(X, y, sd)
    assert sel.best_method_ == "target-only"
    i = sel.cv_results_["method"].index("target-only")
    assert sel.margin_ == sel.cv_results_["se_test_score"][i]


def test_row_scores_are_what_the_mean_and_se_are_made_of():
    X, y, sd, y_true = _task(m_per_class=3)
    sel = FewLabelSelector(methods=["pooled", "target-only", "TrAdaBoost"],
                           estimator=KNeighborsClassifier(1)).fit(X, y, sd)
    res = sel.cv_results_
    lab = np.flatnonzero((sd < 0) & (y >= 0))
    for i, name in enumerate(res["method"]):
        rows = np.asarray(res["row_test_scores"][i])
        assert rows.shape == (lab.size,)
        if res["error"][i]:                        # failed: no row score either
            assert name == "TrAdaBoost" and np.isnan(rows).all()
            continue
        assert ((rows >= 0) & (rows <= 1)).all()
        # each row's mean over the repeats is a multiple of 1 / n_repeats
        assert np.allclose(rows * sel.n_repeats_, np.round(rows * sel.n_repeats_))
        assert rows.mean() == pytest.approx(res["mean_test_score"][i], rel=1e-12)
        assert rows.std(ddof=1) / np.sqrt(lab.size) == pytest.approx(res["se_test_score"][i],
                                                                     rel=1e-12)


def test_an_adapter_is_fitted_once_and_the_choice_is_unchanged(monkeypatch):
    # the adapter sees the source labels only, the same in every fold: one fit serves all
    from shiftlearn.adaptation import CORAL
    from shiftlearn.model_selection import _fewlabels

    X, y, sd, y_true = _task(m_per_class=3)
    fits = []
    real = CORAL.fit

    def counted(self, *args, **kwargs):
        fits.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CORAL, "fit", counted)
    sel = FewLabelSelector(methods=["pooled", "CORAL"]).fit(X, y, sd)
    assert len(fits) == 1            # folds (3 x 5 repeats) and the refit share it
    # the same scores as each fold fitting its own adapter
    monkeypatch.setattr(_fewlabels, "_Prefit", lambda adapter: None)
    fits.clear()
    ref = FewLabelSelector(methods=["pooled", "CORAL"]).fit(X, y, sd)
    assert len(fits) == 1 + len(few_label_folds(y[(sd < 0) & (y >= 0)])[0])
    assert ref.cv_results_["row_test_scores"] == sel.cv_results_["row_test_scores"]
    assert ref.best_method_ == sel.best_method_
    tgt = sd < 0
    np.testing.assert_array_equal(ref.predict(X[tgt]), sel.predict(X[tgt]))
