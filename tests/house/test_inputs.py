"""Inputs a new user gives that used to be silently wrong: reordered DataFrame columns, scores
that counted unlabeled rows as errors, the class ``-1`` dropped, a splitter yielding fewer
splits than it announced, missing labels spelled by pandas, ``sample_domain`` lost by a search
with metadata routing off. Each test fails on the bug it guards against."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _tolerances import EPS
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from shiftlearn.model_selection import ClusterSplit


def _blobs(n_src=60, n_tgt=25, seed=0):
    """Two classes, one source and one target domain of unequal sizes, off-centre."""
    rng = np.random.default_rng(seed)
    ys = np.r_[np.zeros(n_src - n_src // 3, int), np.ones(n_src // 3, int)]
    yt = np.r_[np.zeros(n_tgt - n_tgt // 3, int), np.ones(n_tgt // 3, int)]
    Xs = rng.normal(size=(n_src, 3)) + 2.5 * ys[:, None] + 0.3
    Xt = rng.normal(size=(n_tgt, 3)) + 2.5 * yt[:, None] + 0.8
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(n_tgt, int)]
    sd = np.r_[np.ones(n_src, int), -2 * np.ones(n_tgt, int)]
    return X, y, sd, yt


# ---------------------------------------------------------------- ClusterSplit's split count
@pytest.mark.parametrize("n_splits", [1, 2, 3])
def test_cluster_split_yields_get_n_splits_splits(n_splits):
    """n_splits=2 yielded one split (the two-cluster holdout) while get_n_splits said 2."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(61, 3))
    y = (X[:, 0] > 0.3).astype(int)
    dom = np.repeat([1, 2], [40, 21])
    cv = ClusterSplit(n_splits=n_splits, random_state=0)
    folds = list(cv.split(X, y, dom))
    assert len(folds) == cv.get_n_splits(X, y, dom) == n_splits
    assert cv.mmd2_.shape == cv.mmd2_init_.shape == (n_splits,)
    for tr, va in folds:
        assert np.intersect1d(tr, va).size == 0 and tr.size + va.size == 61
    if n_splits > 1:        # K folds: every row validated exactly once
        counts = np.bincount(np.concatenate([va for _, va in folds]), minlength=61)
        assert np.all(counts == 1)
    if n_splits == 2:       # halves of each (class, domain) group: floor or ceil of n_g / 2
        va = folds[0][1]
        for c in (0, 1):
            for d in (1, 2):
                g = np.flatnonzero((y == c) & (dom == d))
                assert np.isin(g, va).sum() in (g.size // 2, (g.size + 1) // 2)


def test_cluster_split_two_folds_in_a_search():
    """GridSearchCV(cv=ClusterSplit(n_splits=2)) failed with scikit-learn's consistency error;
    also through the domain-adaptation path (target rows in every fold)."""
    X, y, sd, _ = _blobs()
    gs = GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]},
                      cv=ClusterSplit(n_splits=2, random_state=0))
    src = sd > 0
    gs.fit(X[src], y[src], groups=sd[src])
    assert "split1_test_score" in gs.cv_results_ and "split2_test_score" not in gs.cv_results_
    cv = ClusterSplit(n_splits=2, random_state=0)
    folds = list(cv.split(X, y, sd, sample_domain=sd))
    assert len(folds) == cv.get_n_splits(X, y, sd) == 2
    tgt = np.flatnonzero(sd < 0)
    for tr, va in folds:
        assert np.isin(tgt, tr).all() and np.isin(tgt, va).all()


# ------------------------------------------------------- the class -1 in a source domain
def _three_classes(seed=0):
    rng = np.random.default_rng(seed)
    y = np.tile([-1, 0, 1, 2], 15)
    X = rng.normal(size=(60, 3)) + y[:, None]
    return X, y


@pytest.mark.parametrize("sd", [np.ones(60, int), np.repeat([1, 2], 30), np.repeat([1, -2], 30)])
def test_boosting_refuses_minus_one_in_source_domains(sd):
    """-1 beside several classes in positive domains was dropped (classes_ lost it, no
    warning); the message is the one every estimator gives and names the source domains."""
    from shiftlearn.boosting import MultiTaskBoostingClassifier

    X, y = _three_classes()
    bad = np.unique(sd[(y == -1) & (sd > 0)]).tolist()
    with pytest.raises(ValueError, match=rf"Source domain\(s\) {re.escape(str(bad))} contain "
                                         "unlabeled rows.*re-encode"):
        MultiTaskBoostingClassifier(n_estimators=5).fit(X, y, sd)


def test_boosting_accepts_minus_one_in_target_domains_and_class_minus_two():
    """Valid input beside the refusal: -1 rows of a target domain are unlabeled, and the
    negative class -2 stays a class."""
    from shiftlearn.boosting import MultiTaskBoostingClassifier

    X, y = _three_classes()
    sd = np.where(y == -1, -3, np.repeat([1, 2], 30))
    clf = MultiTaskBoostingClassifier(n_estimators=5).fit(X, y, sd)
    assert clf.classes_.tolist() == [0, 1, 2] and clf.tasks_.tolist() == [1, 2]
    y2 = np.where(y == -1, -2, y)
    clf = MultiTaskBoostingClassifier(n_estimators=5).fit(X, y2, np.repeat([1, 2], 30))
    assert clf.classes_.tolist() == [-2, 0, 1, 2]


# --------------------------------------------------- DataFrame columns checked by every estimator
def _public_estimators():
    """Every public estimator and meta-estimator, with data it fits (rows of the toy frame)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn import adaptation as A
    from shiftlearn import compose as C
    from shiftlearn.boosting import MultiTaskBoostingClassifier
    from shiftlearn.fewlabels import (
        FeatureAugmentation,
        LinInt,
        RegularTransferLC,
        RegularTransferLR,
        TrAdaBoost,
        TrAdaBoostR2,
    )
    from shiftlearn.generalization import (
        MarginalTransferClassifier,
        MarginalTransferRegressor,
        PoolingClassifier,
        PoolingRegressor,
        TaskGroupSearchCV,
    )
    from shiftlearn.kernels import RandomFourierFeatures
    from shiftlearn.labelshift import BBSE, JCPOT, MLLS, RLLS
    from shiftlearn.mapping import (
        EMD,
        MMDLS,
        SA,
        ClassRegOT,
        JDOTClassifier,
        JDOTRegressor,
        LinOT,
        MultiLinOT,
        OTLabelProp,
        Sinkhorn,
    )
    from shiftlearn.model_selection import (
        AdaptationRegressorSelector,
        AdaptationSelector,
        FewLabelSelector,
        GeneralizationSelector,
    )
    from shiftlearn.reweighting import (
        KDERW,
        KLIEP,
        KMM,
        DiscriminatorRW,
        GaussianRW,
        NearestNeighborRW,
        RuLSIF,
        uLSIF,
    )
    from shiftlearn.selflabeling import DASVM

    da, dg, dgr, none = "da", "dg", "dg_regression", "unsupervised"
    few, few_regression = "few", "few_regression"
    return [
        (A.TCA(n_components=2), da), (A.JDA(n_components=2), da), (A.SCA(n_components=2), da),
        (A.uSCA(n_components=2), da), (A.CORAL(), da),
        (A.RFTCA(n_components=2, n_features=20, random_state=0), da),
        (A.RFSCA(n_components=2, n_features=20, random_state=0), da),
        (RandomFourierFeatures(n_features=5, random_state=0), none),
        (C.DomainAdaptationClassifier(A.TCA(n_components=2)), da),
        (C.DomainAdaptationClassifier(A.CORAL()), da),
        (C.make_da_pipeline(A.TCA(n_components=2), KNeighborsClassifier(1)), da),
        (C.LabeledOnly(KNeighborsClassifier(1)), da),
        (AdaptationSelector(methods=["TCA", "CORAL"], grids={}, cv=2), da),
        (MultiTaskBoostingClassifier(n_estimators=5), da),
        (MarginalTransferClassifier(random_state=0), dg),
        (PoolingClassifier(random_state=0), dg),
        (MarginalTransferRegressor(random_state=0), dgr),
        (PoolingRegressor(random_state=0), dgr),
        (TaskGroupSearchCV(MarginalTransferClassifier(random_state=0), {"C": [1.0]}, cv=2), dg),
        *[(M(), da) for M in (SA, LinOT, EMD, Sinkhorn, ClassRegOT, MultiLinOT, MMDLS)],
        (A.TJM(n_components=2), da),
        (JDOTClassifier(max_iter=3), da), (OTLabelProp(), da),
        (JDOTRegressor(max_iter=3), "da_regression"),
        (C.DomainAdaptationClassifier(JDOTClassifier(max_iter=3), LogisticRegression()), da),
        *[(R(), da) for R in (KMM, KLIEP, uLSIF, RuLSIF, DiscriminatorRW, NearestNeighborRW,
                              KDERW, GaussianRW)],
        *[(F(), few) for F in (FeatureAugmentation, TrAdaBoost, RegularTransferLC, LinInt)],
        *[(F(), few_regression) for F in (TrAdaBoostR2, RegularTransferLR)],
        (GeneralizationSelector(), dg),
        (DASVM(), da), *[(L(random_state=0), da) for L in (BBSE, RLLS, MLLS)], (JCPOT(), da),
        (C.DomainAdaptationRegressor(A.TCA(n_components=2)), "da_regression"),
        (AdaptationRegressorSelector(methods=["TCA", "CORAL"], grids={}, cv=2),
         "da_regression"),
        (FewLabelSelector(methods=["pooled", "FeatureAugmentation", "target-only"]), few),
    ]


def _frame(kind):
    pd = pytest.importorskip("pandas")
    X, y, sd, _ = _blobs()
    if kind in ("dg", "dg_regression"):          # two labeled training tasks
        y = np.r_[y[sd > 0][np.r_[0:60:2, 1:60:2]], np.arange(25) % 2]   # both classes
        sd = np.r_[np.repeat([1, 2], 30), np.full(25, 3)]
        if kind == "dg_regression":
            y = X[:, 0] + 0.1 * y
    if kind == "da_regression":                  # source values, NaN on the target rows
        y = np.where(y == -1, np.nan, X[:, 0] + 0.1 * y)
    if kind in ("few", "few_regression"):        # a few labeled target rows (both classes)
        y = np.where((sd < 0) & (np.arange(len(y)) % 5 == 0), np.arange(len(y)) % 2, y)
        if kind == "few_regression":
            y = np.where(y == -1, -1.0, X[:, 0] + 0.1 * y)
    return pd.DataFrame(X, columns=["a", "b", "c"]), y, sd


_METHODS = ("predict", "predict_proba", "decision_function", "transform", "score")


def test_every_public_estimator_is_in_the_feature_name_check():
    import inspect

    import shiftlearn
    from shiftlearn import adaptation, generalization, model_selection

    listed = {type(e).__name__ for e, _ in _public_estimators()}
    public = set()
    from shiftlearn import compose, fewlabels, labelshift, mapping, reweighting, selflabeling

    for mod in (shiftlearn, adaptation, compose, generalization, model_selection, mapping,
                reweighting, fewlabels, selflabeling, labelshift):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and hasattr(obj, "fit") and not inspect.isabstract(obj) \
                    and name not in ("BaseSubspaceTransformer", "BaseReweighting"):
                public.add(name)
    assert public <= listed, sorted(public - listed)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("estimator,kind", _public_estimators(),
                         ids=lambda e: type(e).__name__ if not isinstance(e, str) else e)
def test_reordered_or_renamed_columns_are_refused(estimator, kind):
    """The selector accepted the same columns in another order at predict (and returned other
    predictions); every estimator now checks feature_names_in_ as validate_data(reset=False)
    does, in every method that takes X."""
    df, y, sd = _frame(kind)
    est = clone(estimator)
    est.fit(df) if kind == "unsupervised" else est.fit(df, y, sample_domain=sd)
    assert est.feature_names_in_.tolist() == ["a", "b", "c"] and est.n_features_in_ == 3
    test = df.iloc[40:]          # labeled source rows and target rows
    kw = {"sample_domain": sd[40:]} if kind.startswith("dg") else {}
    tested = 0
    for name in _METHODS:
        if not hasattr(est, name):
            continue
        method = getattr(est, name)
        args = (y[40:],) if name == "score" else ()
        method(test, *args, **kw)                                     # same columns: fine
        for bad in (test[["c", "a", "b"]], test.rename(columns={"a": "z"})):
            with pytest.raises(ValueError, match="feature names"):
                method(bad, *args, **kw)
        tested += 1
    assert tested


# ------------------------------------------------------------- one scoring rule for y = -1 rows
def _da_scorers():
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn.adaptation import CORAL, TCA
    from shiftlearn.boosting import MultiTaskBoostingClassifier
    from shiftlearn.compose import DomainAdaptationClassifier, make_da_pipeline
    from shiftlearn.mapping import JDOTClassifier, OTLabelProp
    from shiftlearn.model_selection import AdaptationSelector

    return [AdaptationSelector(methods=["TCA", "CORAL"], grids={}, cv=2),
            JDOTClassifier(max_iter=3), OTLabelProp(),
            DomainAdaptationClassifier(TCA(n_components=2)),
            DomainAdaptationClassifier(CORAL()),
            make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1)),
            MultiTaskBoostingClassifier(n_estimators=5)]


@pytest.mark.parametrize("estimator", _da_scorers(), ids=lambda e: type(e).__name__)
def test_score_skips_unlabeled_rows(estimator):
    """AdaptationSelector.score counted y = -1 rows as errors (0.24 against 0.71 through
    DomainAdaptationClassifier on the same folds): every estimator that takes unlabeled rows
    scores the labeled rows only, the fold read as scoring_domains reads it."""
    X, y, sd, yt = _blobs()
    est = clone(estimator).fit(X, y, sample_domain=sd)
    va = np.r_[np.arange(40, 60), np.arange(60, 85)]          # held-out source + target rows
    labeled = va[y[va] != -1]
    full = est.score(X[va], y[va])      # boosting: one task (the labeled source), no domains
    pred = est.predict(X[labeled], sample_domain=sd[labeled])
    assert full == pytest.approx(np.mean(pred == y[labeled]), abs=0)
    for spelling in (np.where(y == -1, np.nan, y), np.where(y == -1, None, y).astype(object)):
        assert est.score(X[va], spelling[va]) == full


def test_selector_cross_val_score_equals_its_candidate():
    """cross_val_score of the selector and of the candidate it chose give the same fold
    scores (they were 0.24 against 0.71: the selector counted the target rows as errors)."""
    from sklearn.model_selection import cross_val_score

    from shiftlearn.compose import DomainAdaptationClassifier
    from shiftlearn.model_selection import AdaptationSelector, SourceKFold

    X, y, sd, _ = _blobs()
    sel = AdaptationSelector(methods=["none"], grids={}, cv=2)
    cv = SourceKFold(3, random_state=0)
    a = cross_val_score(sel, X, y, groups=sd, cv=cv, params={"sample_domain": sd})
    b = cross_val_score(DomainAdaptationClassifier(None), X, y, groups=sd, cv=cv,
                        params={"sample_domain": sd})
    np.testing.assert_array_equal(a, b)
    assert np.all(a > 0.8)


def test_marginal_scores_skip_unlabeled_rows_but_embed_them():
    from shiftlearn.generalization import MarginalTransferClassifier, MarginalTransferRegressor
    from shiftlearn.generalization._search import task_group_score

    df, y, sd = _frame("dg")
    X = df.to_numpy()
    clf = MarginalTransferClassifier(random_state=0).fit(X[sd < 3], y[sd < 3], sd[sd < 3])
    yt = np.where(np.arange(25) < 10, -1, y[sd == 3])         # 10 unlabeled rows of the task
    pred = clf.predict(X[sd == 3], sd[sd == 3])               # embedded from all 25 rows
    want = np.mean(pred[10:] == yt[10:])
    assert clf.score(X[sd == 3], yt, sd[sd == 3]) == pytest.approx(want, abs=0)
    assert task_group_score(clf, X[sd == 3], yt, sd[sd == 3]) == pytest.approx(want, abs=0)
    _, yr, _ = _frame("dg_regression")
    reg = MarginalTransferRegressor(random_state=0).fit(X[sd < 3], yr[sd < 3], sd[sd < 3])
    ytr = np.where(np.arange(25) < 10, np.nan, yr[sd == 3])
    p = reg.predict(X[sd == 3], sd[sd == 3])
    sse, sst = np.sum((p[10:] - ytr[10:]) ** 2), np.sum((ytr[10:] - ytr[10:].mean()) ** 2)
    r2 = 1 - sse / sst
    # both sums of n positive terms in another order: c n eps each, so r2 moves by
    # 2 c n eps sse / sst, absolute (r2 near 0 cancels; the unlabeled rows counted would
    # move it by far more)
    atol = 2 * 4 * (len(p) - 10) * EPS * sse / sst
    assert reg.score(X[sd == 3], ytr, sd[sd == 3]) == pytest.approx(r2, rel=0, abs=atol)


# ------------------------------------------- missing labels in every spelling pandas produces
def _label_spellings():
    pd = pytest.importorskip("pandas")
    b = [True, False] * 30
    s = ["yes", "no"] * 30
    i = [3, 7] * 30
    miss = 25
    return {
        "bool-None": (np.array(b + [None] * miss, dtype=object), [0, 1]),
        "bool-pd.NA": (np.array(b + [pd.NA] * miss, dtype=object), [0, 1]),
        "bool-nan": (np.array(b + [np.nan] * miss, dtype=object), [0, 1]),
        "bool-mixed-missing": (np.array(b + [None, np.nan, pd.NA, pd.NaT, None] * 5,
                                        dtype=object), [0, 1]),
        "nullable-boolean": (pd.array(b + [None] * miss, dtype="boolean"), [0, 1]),
        "nullable-boolean-series": (pd.Series(b + [pd.NA] * miss, dtype="boolean"), [0, 1]),
        "Int64": (pd.array(i + [None] * miss, dtype="Int64"), [3, 7]),
        "Float64": (pd.Series([float(v) for v in i] + [None] * miss, dtype="Float64"), [3, 7]),
        "string-NA": (pd.array(s + [None] * miss, dtype="string"), ["no", "yes"]),
        "category": (pd.Series(s + [None] * miss, dtype="category"), ["no", "yes"]),
        "object-str-NaT": (np.array(s + [pd.NaT, None, np.nan, pd.NA, ""] * 5, dtype=object),
                           ["no", "yes"]),
        "object-int-NA": (np.array(i + [pd.NA] * miss, dtype=object), [3, 7]),
        "object-bytes-None": (np.array([v.encode() for v in s] + [None] * miss, dtype=object),
                              ["no", "yes"]),
    }


@pytest.mark.parametrize("name", list(_label_spellings()))
def test_missing_labels_in_every_pandas_spelling_are_unlabeled(name):
    """Boolean labels with None/pd.NA ended in scikit-learn's 'Unknown label type: unknown'."""
    from shiftlearn._validation import check_y_domain
    from shiftlearn.adaptation import TCA
    from shiftlearn.boosting import MultiTaskBoostingClassifier
    from shiftlearn.compose import DomainAdaptationClassifier, make_da_pipeline

    y, classes = _label_spellings()[name]
    X, _, sd, _ = _blobs()
    yy, inferred = check_y_domain(y, None, 85, task="classification")
    np.testing.assert_array_equal(inferred, sd)
    for est in (DomainAdaptationClassifier(TCA(n_components=2)),
                MultiTaskBoostingClassifier(n_estimators=3),
                make_da_pipeline(TCA(n_components=2), LogisticRegression())):
        est.fit(X, y)
        assert est.classes_.tolist() == classes, type(est).__name__
        assert set(est.predict(X[sd < 0]).tolist()) <= set(classes)


def test_labels_of_several_types_are_refused_by_name():
    from shiftlearn.adaptation import TCA
    from shiftlearn.compose import DomainAdaptationClassifier

    X, _, _, _ = _blobs()
    y = np.array([1, "0"] * 30 + [None] * 25, dtype=object)
    with pytest.raises(ValueError, match=r"y mixes labels of several types \(int, str\)"):
        DomainAdaptationClassifier(TCA(n_components=2)).fit(X, y)


def test_nat_marks_unlabeled_dates_and_nan_is_not_the_minus_one_marker():
    from shiftlearn._validation import check_y_domain, unlabeled_mask

    d = np.array(["2020-01-01", "NaT", "2020-01-02"], dtype="datetime64[D]")
    assert unlabeled_mask(d).tolist() == [False, True, False]
    # NaN marks the unlabeled rows: one labeled class is not "-1 beside a single class"
    y, sd = check_y_domain(np.array([1.0, np.nan, 1.0]), None, 3, task="classification")
    assert sd.tolist() == [1, -2, 1]


# ---------------------------------------- boosting's score in a search with routing on or off
def test_boosting_score_in_cross_val_score_both_routing_modes():
    """With routing off, cross_val_score(..., params={'sample_domain': sd}) scored every row
    with the target's thresholds (silently other numbers) or gave NaN with a traceback; now
    score refuses without sample_domain and names the fix, and routing on gives the fold
    scores by hand."""
    from sklearn import config_context
    from sklearn.model_selection import KFold, cross_val_score

    from shiftlearn.boosting import MultiTaskBoostingClassifier

    X, y, sd, _ = _blobs()
    y = np.r_[y[sd > 0], np.zeros(17, int), np.ones(8, int)]         # labeled target rows
    cv = KFold(3, shuffle=True, random_state=0)
    with config_context(enable_metadata_routing=False), \
            pytest.raises(ValueError, match="enable_metadata_routing=True"):
        cross_val_score(MultiTaskBoostingClassifier(5), X, y, cv=cv,
                        params={"sample_domain": sd}, error_score="raise")
    with config_context(enable_metadata_routing=True):
        s = cross_val_score(MultiTaskBoostingClassifier(5), X, y, cv=cv,
                            params={"sample_domain": sd})
    by_hand = [MultiTaskBoostingClassifier(5).fit(X[tr], y[tr], sd[tr])
               .score(X[te], y[te], sd[te]) for tr, te in cv.split(X)]
    np.testing.assert_array_equal(s, by_hand)
    one_task = MultiTaskBoostingClassifier(5).fit(X[sd > 0], y[sd > 0])
    assert one_task.score(X[sd > 0], y[sd > 0]) == one_task.score(X[sd > 0], y[sd > 0], 1)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_marginal_transfer_score_takes_routed_sample_domain():
    """With routing on, cross_val_score(..., params={'sample_domain': sd}) raised scikit-learn's
    UnsetMetadataPassedError: score takes sample_domain (the test tasks) and now requests it,
    as fit and predict do."""
    from sklearn import config_context
    from sklearn.model_selection import GroupKFold, cross_val_score

    from shiftlearn.generalization import MarginalTransferClassifier, TaskGroupSearchCV

    df, y, sd = _frame("dg")
    X = df.to_numpy()
    cv = list(GroupKFold(3).split(X, y, sd))
    for est in (MarginalTransferClassifier(random_state=0),
                TaskGroupSearchCV(MarginalTransferClassifier(random_state=0), {"C": [1.0]},
                                  cv=2)):
        with config_context(enable_metadata_routing=True):
            s = cross_val_score(est, X, y, cv=cv, params={"sample_domain": sd})
        by_hand = [clone(est).fit(X[tr], y[tr], sd[tr]).score(X[te], y[te], sd[te])
                   for tr, te in cv]
        np.testing.assert_allclose(s, by_hand, rtol=0, atol=0)


@pytest.mark.parametrize("n_splits", [1, 2, 3])
def test_random_stratified_split_yields_get_n_splits_splits(n_splits):
    """The same slip as ClusterSplit's in its random counterpart: n_splits=2 yielded one."""
    from shiftlearn.model_selection import RandomStratifiedSplit

    y = np.repeat([0, 1], [13, 8])
    dom = np.tile([1, 2, 2], 7)
    cv = RandomStratifiedSplit(n_splits=n_splits, random_state=0)
    folds = list(cv.split(np.zeros((21, 1)), y, dom))
    assert len(folds) == cv.get_n_splits() == n_splits
    if n_splits > 1:
        counts = np.bincount(np.concatenate([va for _, va in folds]), minlength=21)
        assert np.all(counts == 1)


def test_splitters_read_nullable_labels():
    """A pandas boolean column with <NA> reached StratifiedKFold as an object array ('Got
    unknown'); the splitters read labels as fit does."""
    pd = pytest.importorskip("pandas")
    from sklearn.model_selection import cross_val_score

    from shiftlearn.compose import DomainAdaptationClassifier
    from shiftlearn.model_selection import RandomStratifiedSplit, SourceKFold

    X, y, sd, _ = _blobs()
    yb = pd.Series(np.where(y == -1, None, y == 1), dtype="boolean")
    s = cross_val_score(DomainAdaptationClassifier(None), X, yb, groups=sd, cv=SourceKFold(3),
                        error_score="raise")
    np.testing.assert_array_equal(
        s, cross_val_score(DomainAdaptationClassifier(None), X, y, groups=sd,
                           cv=SourceKFold(3)))
    src = sd > 0
    ys = pd.Series(np.where(y[src] == 1, "b", "a"), dtype="string")
    ys[:3] = pd.NA
    folds = list(RandomStratifiedSplit(random_state=0).split(X[src], ys, sd[src]))
    assert len(folds) == 1


def test_da_pipeline_refuses_minus_one_in_source_domains():
    """make_da_pipeline's LabeledOnly dropped a class -1 of source rows without a word, where
    DomainAdaptationClassifier refuses; both now give the same message."""
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn.adaptation import TCA
    from shiftlearn.compose import DomainAdaptationClassifier, LabeledOnly, make_da_pipeline

    X, y = _three_classes()
    sd = np.repeat([1, 2], 30)
    for est in (make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1)),
                LabeledOnly(KNeighborsClassifier(1)),
                DomainAdaptationClassifier(TCA(n_components=2))):
        with pytest.raises(ValueError, match=r"Source domain\(s\) \[1, 2\] contain unlabeled"):
            est.fit(X, y, sample_domain=sd)
    ok = make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1))
    ok.fit(X, y, sample_domain=np.where(y == -1, -3, sd))          # -1 rows in a target
    assert ok.classes_.tolist() == [0, 1, 2]


@pytest.mark.parametrize("scale", [1e51, 1e300, -1e120])
def test_extreme_feature_values_are_refused_by_name_in_every_fit(scale):
    """Features beyond 1e50 overflow the kernels' fourth powers: every estimator refuses them
    up front, naming the column, instead of a NaN deep inside (or a meaningless embedding)."""
    import pandas as pd

    from shiftlearn.adaptation import CORAL, TCA
    from shiftlearn.compose import DomainAdaptationClassifier
    from shiftlearn.generalization import MarginalTransferClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[5, 2] = scale
    df = pd.DataFrame(X, columns=["a", "b", "size"])
    sd = np.r_[np.ones(20, int), -2 * np.ones(20, int)]
    y = np.r_[rng.integers(0, 2, 20), -np.ones(20, int)]
    for est in (TCA(n_components=2), CORAL(), DomainAdaptationClassifier(TCA(n_components=2))):
        with pytest.raises(ValueError, match=r"column 'size' holds .*beyond \+-1e\+50.*rescale"):
            est.fit(df, y, sample_domain=sd)
    tasks = np.r_[np.ones(20, int), 2 * np.ones(20, int)]
    with pytest.raises(ValueError, match=r"column 2 holds"):
        MarginalTransferClassifier().fit(X, np.r_[y[:20], y[:20]], sample_domain=tasks)
    X[5, 2] = 1e50                                          # at the limit: accepted
    TCA(n_components=2).fit(X, y, sample_domain=sd)
