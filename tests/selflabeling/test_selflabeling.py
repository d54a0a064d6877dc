"""The self-labeling family (shiftlearn.selflabeling): DASVM against the paper's rules written
here (the plain SVM without target rows, the rows of the margin band it moves), skada's
DASVMClassifier on the same rows, its gain on a shifted two-Gaussian task, and awkward input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

import shiftlearn
from shiftlearn.selflabeling import DASVM, class_scores


def _rotated(seed=0, n=60, sep=6.0, angle=1.1, n_classes=2, std=1.0):
    """Two (or three) Gaussian classes on the source; the target is the same classes rotated by
    ``angle`` about the origin, so the source SVM cuts off a corner of each target class."""
    rng = np.random.default_rng(seed)
    theta = np.arange(n_classes) * 2 * np.pi / n_classes
    mu = sep / 2 * np.c_[np.cos(theta), np.sin(theta)]
    ys = np.repeat(np.arange(n_classes), n)
    Xs = mu[ys] + rng.normal(0, std, (ys.size, 2))
    R = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    Xt = (mu[ys] + rng.normal(0, std, (ys.size, 2))) @ R.T
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(ys.size, int)]
    sd = np.r_[np.ones(ys.size, int), -2 * np.ones(ys.size, int)]
    return X, y, sd, ys


def _fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*args)


# ------------------------------------------------------------------ the paper's rules
def test_no_target_rows_is_the_plain_svm():
    X, y, sd, ys = _rotated(0)
    src = sd > 0
    svm = SVC(kernel="linear").fit(X[src], ys)
    for args in [(X[src], ys), (X[src], ys, sd[src])]:
        m = DASVM().fit(*args)
        assert m.n_iter_ == 1 and not m.semilabeled_.any() and not m.removed_.any()
        # the same fit on the same rows: bit for bit
        np.testing.assert_array_equal(m.decision_function(X), svm.decision_function(X))
        np.testing.assert_array_equal(m.predict(X), svm.predict(X))


def test_max_iter_one_is_the_source_svm_with_a_warning():
    X, y, sd, ys = _rotated(0)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        m = DASVM(max_iter=1).fit(X, y, sd)
    svm = SVC(kernel="linear").fit(X[sd > 0], ys)
    np.testing.assert_array_equal(m.decision_function(X), svm.decision_function(X))
    assert m.n_iter_ == 1


@pytest.mark.parametrize("k", [1, 3, 7])
def test_first_iteration_moves_the_rows_of_largest_decision_in_the_band(k):
    # H_up = the k target rows of largest f in [0, 1), H_low = the k of largest -f in (-1, 0);
    # as many source rows of each class leave: those farthest on their own side
    X, y, sd, ys = _rotated(1)
    src, tgt = np.flatnonzero(sd > 0), np.flatnonzero(sd < 0)
    svm = SVC(kernel="linear").fit(X[src], ys)
    f_t, f_s = svm.decision_function(X[tgt]), svm.decision_function(X[src])
    semi, removed, labels = set(), set(), {}
    for sign, c in [(1, 1), (-1, 0)]:
        band = np.flatnonzero((sign * f_t >= 0) & (sign * f_t < 1))
        if sign < 0:
            band = band[f_t[band] != 0]                   # f = 0 is predicted class 0 (f <= 0)
        top = band[np.argsort(-sign * f_t[band], kind="stable")[:k]]
        semi |= set(tgt[top])
        labels.update(dict.fromkeys(tgt[top], c))
        cls = np.flatnonzero(ys == c)
        removed |= set(src[cls[np.argsort(-sign * f_s[cls], kind="stable")[:top.size]]])
    assert len(semi) == 2 * k        # both sides of the band hold at least k rows here
    m = _fit(DASVM(k=k, max_iter=2), X, y, sd)
    assert set(np.flatnonzero(m.semilabeled_)) == semi
    assert set(np.flatnonzero(m.removed_)) == removed
    # the model is the SVM of the remaining source rows and the semilabeled rows
    rows = np.r_[np.setdiff1d(src, sorted(removed)), sorted(semi)]
    lab = np.r_[ys[np.setdiff1d(src, sorted(removed))], [labels[i] for i in sorted(semi)]]
    ref = SVC(kernel="linear").fit(X[rows], lab)
    np.testing.assert_array_equal(m.decision_function(X), ref.decision_function(X))


def test_multiclass_uses_one_vs_rest_margins():
    X, y, sd, ys = _rotated(0, n=30, angle=0.5, n_classes=3)
    m = _fit(DASVM(k=2, max_iter=2), X, y, sd)
    assert isinstance(m.estimator_, OneVsRestClassifier)
    assert m.decision_function(X).shape == (X.shape[0], 3)
    # the first move: per class c, the 2 target rows predicted c of largest f_c in [0, 1)
    tgt = np.flatnonzero(sd < 0)
    ovr = OneVsRestClassifier(SVC(kernel="linear")).fit(X[sd > 0], ys)
    S = ovr.decision_function(X[tgt])
    pred = S.argmax(1)
    s = S[np.arange(tgt.size), pred]
    semi = set()
    for c in range(3):
        band = np.flatnonzero((pred == c) & (s >= 0) & (s < 1))
        semi |= set(tgt[band[np.argsort(-s[band], kind="stable")[:2]]])
    assert set(np.flatnonzero(m.semilabeled_)) == semi


def test_class_scores():
    np.testing.assert_array_equal(class_scores(np.array([0.5, -2.0]), 2),
                                  [[-0.5, 0.5], [2.0, -2.0]])
    D = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(class_scores(D, 3), D)


def test_beats_the_source_svm_on_rotated_gaussians():
    # the target classes are the source classes rotated by 1.1 rad: the source SVM misses a
    # corner of each; DASVM follows the target clusters (mean accuracy 0.84 -> 0.88 over these
    # 8 seeds)
    gains = []
    for seed in range(8):
        X, y, sd, ys = _rotated(seed)
        src, tgt = sd > 0, sd < 0
        base = np.mean(SVC(kernel="linear").fit(X[src], ys).predict(X[tgt]) == ys)
        m = _fit(DASVM(), X, y, sd)
        gains.append(np.mean(m.predict(X[tgt]) == ys) - base)
        assert m.n_iter_ > 1 and m.semilabeled_.any()
    assert np.mean(gains) > 0.03 and min(gains) >= 0.0


def test_converges_and_stops_when_the_training_set_is_unchanged():
    X, y, sd, ys = _rotated(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = DASVM(max_iter=1000).fit(X, y, sd)
    # one more iteration from the fitted model adds nothing: no target row in the band on its
    # predicted side that is not semilabeled, no semilabeled row whose prediction changed
    tgt = np.flatnonzero(sd < 0)
    f = m.decision_function(X[tgt])
    free = ~m.semilabeled_[tgt]
    assert not np.any(free & (np.abs(f) < 1))
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        DASVM(max_iter=2).fit(X, y, sd)


# ------------------------------------------------------------------ skada on the same rows
@pytest.fixture(scope="module")
def skada_dasvm():
    from sklearn import config_context
    with config_context():          # importing skada switches routing on: keep it local
        pytest.importorskip("skada")
        from skada import DASVMClassifier
    return DASVMClassifier


def test_first_step_is_skadas(skada_dasvm):
    # same rows, same SVC, k = 1: the same target rows added and source rows removed
    for seed in range(3):
        X, y, sd, ys = _rotated(seed, n=40)
        n = ys.size
        theirs = skada_dasvm(SVC(kernel="linear"), k=1, save_indices=True).fit(X, y, sd)
        ours = _fit(DASVM(k=1, max_iter=2), X, y, sd)
        np.testing.assert_array_equal(theirs.indices_target_added[1], ours.semilabeled_[n:])
        np.testing.assert_array_equal(theirs.indices_source_deleted[1], ours.removed_[:n])


def test_skada_moves_one_row_per_class_whatever_k(skada_dasvm):
    # skada 0.6 picks the argmax of the same candidate set k times, so it adds one target row
    # per side (and removes one source row per side) for any k; the paper moves rho per class
    X, y, sd, ys = _rotated(1, n=40)
    n = ys.size
    theirs = skada_dasvm(SVC(kernel="linear"), k=3, save_indices=True).fit(X, y, sd)
    ours = _fit(DASVM(k=3, max_iter=2), X, y, sd)
    assert theirs.indices_target_added[1].sum() == 2
    assert ours.semilabeled_[n:].sum() == 6


def test_every_step_is_skadas_until_one_side_of_the_band_is_empty(skada_dasvm):
    # with k = 1 both move one target row per side and remove one source row per class while
    # both sides of the band hold target rows. When one side is empty, skada still takes a
    # second row (the argmax of its empty column falls on the other side) and removes a source
    # row of each class; the paper takes rho rows per side that has them, and ours removes as
    # many source rows of a class as rows were added with it. Here that happens after 10 moves or
    # more; the target predictions of the full runs still agree on >= 95% of the rows
    for seed in range(3):
        X, y, sd, ys = _rotated(seed, n=40)
        n, tgt = ys.size, sd < 0
        theirs = skada_dasvm(SVC(kernel="linear"), k=1, save_indices=True).fit(X, y, sd)
        # skada's indices: before the first move, after each move, then the final all-True
        prev, same = _fit(DASVM(k=1, max_iter=1), X, y, sd), 0
        for it in range(1, len(theirs.indices_target_added) - 1):
            f = prev.decision_function(X[n:])
            free = ~prev.semilabeled_[n:]
            if not (np.any(free & (f >= 0) & (f < 1)) and np.any(free & (f < 0) & (f > -1))):
                break                                      # one side of the band is empty
            ours = _fit(DASVM(k=1, max_iter=it + 1), X, y, sd)
            np.testing.assert_array_equal(theirs.indices_target_added[it], ours.semilabeled_[n:])
            np.testing.assert_array_equal(theirs.indices_source_deleted[it], ours.removed_[:n])
            prev, same = ours, same + 1
        assert same >= 10
        ours = _fit(DASVM(k=1, max_iter=1000), X, y, sd)
        assert np.mean(ours.predict(X[tgt]) == theirs.predict(X[tgt])) >= 0.95


def test_skadas_last_step_refits_on_every_target_row(skada_dasvm):
    # skada ends with a step the paper does not have: an SVC refitted on every target row
    # labeled by its last self-labeling model (its predict is that SVC's)
    X, y, sd, ys = _rotated(0, n=40)
    tgt = sd < 0
    theirs = skada_dasvm(SVC(kernel="linear"), k=1, save_estimators=True).fit(X, y, sd)
    refit = SVC(kernel="linear").fit(X[tgt], theirs.estimators[-2].predict(X[tgt]))
    np.testing.assert_array_equal(theirs.predict(X), refit.predict(X))


# ------------------------------------------------------------------ protocol and input
def test_labeler_protocol_and_export():
    assert DASVM._replaces_estimator is True
    assert "estimator" in DASVM().get_params()
    assert shiftlearn.DASVM is DASVM
    X, y, sd, ys = _rotated(0)
    m = _fit(DASVM(estimator=LogisticRegression()), X, y, sd)
    assert isinstance(m.estimator_, LogisticRegression)


def test_refuses_a_classifier_without_decision_function_before_fitting():
    # the hook DomainAdaptationClassifier calls on the classifier it hands a labeler
    with pytest.raises(ValueError, match="KNeighborsClassifier has none"):
        DASVM()._check_estimator(KNeighborsClassifier())
    DASVM()._check_estimator(None)
    DASVM()._check_estimator(SVC())


def test_predict_proba_only_when_the_estimator_has_it():
    X, y, sd, ys = _rotated(0)
    assert not hasattr(DASVM(), "predict_proba")
    assert not hasattr(_fit(DASVM(), X, y, sd), "predict_proba")
    m = _fit(DASVM(estimator=LogisticRegression()), X, y, sd)
    P = m.predict_proba(X)
    np.testing.assert_array_equal(P, m.estimator_.predict_proba(X))
    np.testing.assert_array_equal(m.classes_[P.argmax(1)], m.predict(X))


def test_labeled_target_rows_stay_and_string_labels():
    X, y, sd, ys = _rotated(3)
    labels = np.array(["a", "b"])
    y_str = np.where(y >= 0, labels[np.maximum(y, 0)], "")
    tgt = np.flatnonzero(sd < 0)
    y_str[tgt[:4]] = labels[ys[:4]]                        # four labeled target rows
    m = _fit(DASVM(), X, y_str, sd)
    assert set(m.predict(X)) <= {"a", "b"} and list(m.classes_) == ["a", "b"]
    assert not m.semilabeled_[tgt[:4]].any() and not m.removed_[tgt[:4]].any()
    # without sample_domain: labeled rows are sources, unlabeled rows targets (skada's rule)
    a = _fit(DASVM(), X, y, sd)
    b = _fit(DASVM(), X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_awkward_input_is_refused_with_the_fix():
    X, y, sd, ys = _rotated(0)
    one = np.where(y == 1, 0, y)
    with pytest.raises(ValueError, match="two classes"):
        DASVM().fit(X, one, sd)
    Xn = X.copy()
    Xn[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DASVM().fit(Xn, y, sd)
    with pytest.raises(ValueError, match="decision_function"):
        DASVM(estimator=KNeighborsClassifier()).fit(X, y, sd)
    with pytest.raises(ValueError, match="'k' parameter"):
        DASVM(k=0).fit(X, y, sd)
    with pytest.raises(ValueError, match="y to be passed"):
        DASVM().fit(X, None, sd)
    with pytest.raises(ValueError, match="class"):
        DASVM().fit(X[:1], y[:1])


def test_constant_column_and_one_target_row():
    X, y, sd, ys = _rotated(0)
    Xc = np.c_[X, np.ones(X.shape[0])]
    a = _fit(DASVM(), X, y, sd)
    b = _fit(DASVM(), Xc, y, sd)
    np.testing.assert_array_equal(a.predict(X), b.predict(Xc))
    keep = np.r_[np.flatnonzero(sd > 0), np.flatnonzero(sd < 0)[:1]]
    m = _fit(DASVM(), X[keep], y[keep], sd[keep])
    assert m.predict(X[keep]).shape == (keep.size,)


def test_score_skips_unlabeled_rows():
    X, y, sd, ys = _rotated(0)
    m = _fit(DASVM(), X, y, sd)
    src = sd > 0
    assert m.score(X, y, sd) == pytest.approx(np.mean(m.predict(X[src]) == ys))
