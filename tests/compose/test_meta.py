"""DomainAdaptationClassifier, skada's make_da_pipeline, and the source-CV search
(``fit_source_cv``: GridSearchCV + SourceKFold + a shared FitMemory)."""

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn.adaptation import SCA, TCA, FitMemory
from shiftlearn.adaptation._base import ComponentsClippedWarning
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.datasets import make_sca_toy
from shiftlearn.model_selection import SourceKFold, fit_source_cv


def _toy(n=20, seed=0):
    X, y, sd, yt = make_sca_toy(n_per_cluster=n, random_state=seed, return_target_labels=True)
    return X, y, sd, yt


def test_meta_estimator_fits_adapter_on_all_rows_classifier_on_sources():
    X, y, sd, yt = _toy()
    clf = DomainAdaptationClassifier(TCA(n_components=2, kernel="linear", mu=10.0)).fit(X, y, sd)
    assert clf.adapter_.X_fit_.shape[0] == X.shape[0]          # targets seen by the adapter
    assert clf.adapter_.mmd_ > 0
    assert isinstance(clf.estimator_, KNeighborsClassifier)
    assert clf.estimator_.n_samples_fit_ == int((sd > 0).sum())  # classifier: sources only
    pred = clf.predict(X[sd < 0])
    assert pred.shape == yt.shape and set(np.unique(pred)) <= {0, 1, 2}
    # aligning the domains helps on this toy (raw 1NN is about 1/3)
    raw = KNeighborsClassifier(1).fit(X[sd > 0], y[sd > 0]).score(X[sd < 0], yt)
    assert clf.score(X[sd < 0], yt) > raw + 0.15
    # any classifier; score skips unlabeled rows
    clf2 = DomainAdaptationClassifier(SCA(n_components=2), LogisticRegression()).fit(X, y, sd)
    assert clf2.predict_proba(X[:3]).shape == (3, 3)
    assert 0 <= clf2.score(X, y) <= 1


def test_meta_errors():
    X, y, sd, _ = _toy()
    with pytest.raises(ValueError, match="source rows"):
        DomainAdaptationClassifier(TCA(n_components=2)).fit(X[sd < 0], y[sd < 0], sd[sd < 0])
    with pytest.raises(ValueError, match="requires y to be passed"):
        DomainAdaptationClassifier(TCA(n_components=2)).fit(X, None, sd)
    with pytest.raises(ValueError, match="'adapter' parameter"):
        DomainAdaptationClassifier(KNeighborsClassifier()).fit(X, y, sd)
    # one labeled class: the classifier would predict it everywhere
    one = np.where(y == 2, 0, y)
    one[(sd > 0) & (one == 1)] = 0
    with pytest.raises(ValueError, match="one class only .* at least 2 classes"):
        DomainAdaptationClassifier(TCA(n_components=2)).fit(X, one, sd)
    with pytest.raises(ValueError, match="Unknown label type"):
        DomainAdaptationClassifier(TCA(n_components=2)).fit(X, np.linspace(0, 1, len(y)))


def test_inside_skada_pipeline():
    skada = pytest.importorskip("skada")
    X, y, sd, yt = _toy()
    # skada's pipelines route sample_domain: routing on here, not left to the side effect of
    # skada's first import (which a test that imported skada earlier in this worker used up)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = skada.make_da_pipeline(TCA(n_components=2, kernel="linear", mu=10.0),
                                      KNeighborsClassifier(1)).fit(X, y, sample_domain=sd)
    ours = DomainAdaptationClassifier(TCA(n_components=2, kernel="linear", mu=10.0)).fit(X, y, sd)
    np.testing.assert_array_equal(pipe.predict(X[sd < 0]), ours.predict(X[sd < 0]))


def test_fit_source_cv_uses_source_labels_only_and_equals_a_plain_search():
    X, y, sd, yt = _toy(n=8)
    grid = {"beta": [0.2, 0.8], "n_components": [1, 2]}
    search = fit_source_cv(SCA(bandwidth=2.0), grid, X, y, sd, cv=5)
    res = search.cv_results_
    assert len(res["params"]) == 4 and "split4_test_score" in res
    assert search.best_params_ == res["params"][int(np.argmin(res["rank_test_score"]))]
    # the refit saw every row (targets included)
    assert search.best_estimator_.adapter_.X_fit_.shape[0] == len(X)
    # the shared memory changes nothing: a plain search (every fit from scratch) agrees
    plain = GridSearchCV(DomainAdaptationClassifier(SCA(bandwidth=2.0), KNeighborsClassifier(1)),
                         {f"adapter__{k}": v for k, v in grid.items()}, cv=SourceKFold(5))
    plain.fit(X, y, groups=sd, sample_domain=sd)
    for key in ("mean_test_score", "split0_test_score", "split4_test_score"):
        np.testing.assert_array_equal(res[key], plain.cv_results_[key])
    assert search.best_params_ == plain.best_params_
    assert search.predict(X[sd < 0]).shape == ((sd < 0).sum(),)
    # a memory of the caller's (its budget) is the one used, and emptied at the end
    mem = FitMemory(max_bytes=1 << 20)
    again = fit_source_cv(SCA(bandwidth=2.0), grid, X, y, sd, cv=5, memory=mem)
    np.testing.assert_array_equal(again.cv_results_["mean_test_score"], res["mean_test_score"])
    assert mem.hits > 0 and mem.nbytes == 0
    with pytest.raises(TypeError, match="memory must be a FitMemory or None, got 'big'"):
        fit_source_cv(SCA(bandwidth=2.0), grid, X, y, sd, cv=5, memory="big")
    # the held-out (validation) rows of every fold are labeled source rows + the targets
    for train, val in SourceKFold(5).split(X, y, groups=sd):
        assert np.all(sd[train][y[train] == -1] < 0) and set(np.flatnonzero(sd < 0)) <= set(val)


def test_fit_source_cv_errors_clipping_and_failed_settings():
    X, y, sd, _ = _toy(n=10)
    with pytest.raises(ValueError, match="cannot be split into 50 folds"):
        fit_source_cv(TCA(), {"mu": [1.0]}, X, y, sd, cv=50)
    # k = 5 is more than beta = 1 allows with 3 classes: clipped to 2 (warned), same scores;
    # ties go to the first setting in grid order
    grid = {"beta": [1.0], "n_components": [2, 5]}
    with pytest.warns(ComponentsClippedWarning):
        search = fit_source_cv(SCA(), grid, X, y, sd, cv=3)
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] == scores[1] and search.best_params_["adapter__n_components"] == 2
    # a setting that fails (a DG-only adapter given target rows) scores NaN and ranks last
    with pytest.warns(FitFailedWarning, match="3 fits failed out of a total of 6"):
        search = fit_source_cv(SCA(), {"setting": ["dg", "auto"], "n_components": [2]}, X, y,
                               sd, cv=3)
    assert np.isnan(search.cv_results_["mean_test_score"][0])
    assert search.best_params_["adapter__setting"] == "auto"
    # every setting failing names the failure
    with pytest.raises(ValueError, match=r"(?s)All the 3 fits failed.*SCA\(setting='dg'\) "
                       "must not see target rows"):
        fit_source_cv(SCA(), {"setting": ["dg"]}, X, y, sd, cv=3)
    # no key of the grid applies: the plain classifier, fitted
    clf = fit_source_cv(TCA(n_components=2), {"nope": [1]}, X, y, sd)
    assert isinstance(clf, DomainAdaptationClassifier) and hasattr(clf, "estimator_")


def test_the_former_adaptation_names_say_where_they_moved():
    import shiftlearn.adaptation as adaptation

    for name in ("DomainAdaptationClassifier", "DomainAwarePipeline", "LabeledOnly",
                 "make_da_pipeline"):
        with pytest.raises(AttributeError, match=f"from shiftlearn.compose import {name}"):
            getattr(adaptation, name)
    with pytest.raises(AttributeError, match="has no attribute 'NotAName'"):
        adaptation.NotAName  # noqa: B018
