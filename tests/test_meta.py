"""DomainAdaptationClassifier, skada's make_da_pipeline, and SourceCVSearch."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn.adaptation import SCA, TCA, DomainAdaptationClassifier
from shiftlearn.adaptation._base import ComponentsClippedWarning
from shiftlearn.datasets import make_sca_toy
from shiftlearn.model_selection import SourceCVSearch


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


def test_meta_errors_and_path():
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
    clf = DomainAdaptationClassifier(SCA(beta=0.3))
    path = clf.fit_path(X, y, sd, [1, 3])
    direct = DomainAdaptationClassifier(SCA(n_components=1, beta=0.3)).fit(X, y, sd)
    np.testing.assert_allclose(np.abs(path[0].transform(X)), np.abs(direct.transform(X)),
                               atol=1e-8)
    np.testing.assert_array_equal(path[0].predict(X), direct.predict(X))
    # a k beyond what the data allow (3 classes at beta = 1: at most 2) is clipped, as a fit
    with pytest.warns(ComponentsClippedWarning):
        path = DomainAdaptationClassifier(SCA(beta=1.0)).fit_path(X, y, sd, [1, 5])
    with pytest.warns(ComponentsClippedWarning):
        direct = DomainAdaptationClassifier(SCA(n_components=5, beta=1.0)).fit(X, y, sd)
    assert path[1].adapter_.n_components_ == direct.adapter_.n_components_ == 2
    np.testing.assert_allclose(np.abs(path[1].transform(X)), np.abs(direct.transform(X)),
                               atol=1e-8)


def test_inside_skada_pipeline():
    skada = pytest.importorskip("skada")
    X, y, sd, yt = _toy()
    pipe = skada.make_da_pipeline(TCA(n_components=2, kernel="linear", mu=10.0),
                                  KNeighborsClassifier(1)).fit(X, y, sample_domain=sd)
    ours = DomainAdaptationClassifier(TCA(n_components=2, kernel="linear", mu=10.0)).fit(X, y, sd)
    np.testing.assert_array_equal(pipe.predict(X[sd < 0]), ours.predict(X[sd < 0]))


def test_source_cv_search_uses_source_labels_only():
    X, y, sd, yt = _toy(n=8)
    grid = {"adapter__beta": [0.2, 0.8], "adapter__n_components": [1, 2]}
    search = SourceCVSearch(DomainAdaptationClassifier(SCA(bandwidth=2.0)), grid, cv=5)
    search.fit(X, y, sd)
    res = search.cv_results_
    assert len(res["params"]) == 4 and "split4_test_score" in res
    assert search.best_params_ == res["params"][int(np.argmin(res["rank_test_score"]))]
    # the refit saw every row (targets included)
    assert search.best_estimator_.adapter_.X_fit_.shape[0] == len(X)
    # the path (one solve per setting) gives the same scores as fitting each k
    plain = SourceCVSearch(DomainAdaptationClassifier(SCA(bandwidth=2.0)), grid, cv=5,
                           use_path=False, refit=False).fit(X, y, sd)
    order = [plain.cv_results_["params"].index(p) for p in res["params"]]
    np.testing.assert_allclose(res["mean_test_score"],
                               plain.cv_results_["mean_test_score"][order])
    assert search.predict(X[sd < 0]).shape == ((sd < 0).sum(),)


def test_source_cv_search_errors_and_failed_settings():
    X, y, sd, _ = _toy(n=10)
    with pytest.raises(ValueError, match="'cv' parameter of SourceCVSearch"):
        SourceCVSearch(DomainAdaptationClassifier(TCA()), {}, cv=1).fit(X, y, sd)
    with pytest.raises(ValueError, match="cannot be split into cv=50 folds"):
        SourceCVSearch(DomainAdaptationClassifier(TCA()), {}, cv=50).fit(X, y, sd)
    # k = 5 is more than beta = 1 allows with 3 classes: clipped to 2 (warned), same scores
    grid = {"adapter__beta": [1.0], "adapter__n_components": [2, 5]}
    with pytest.warns(ComponentsClippedWarning):
        search = SourceCVSearch(DomainAdaptationClassifier(SCA()), grid, cv=3,
                                use_path=False).fit(X, y, sd)
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] == scores[1] and search.best_params_["adapter__n_components"] == 2
    # a setting that fails (a DG-only adapter given target rows) scores NaN and ranks last
    grid = {"adapter__setting": ["dg", "auto"], "adapter__n_components": [2]}
    search = SourceCVSearch(DomainAdaptationClassifier(SCA()), grid, cv=3).fit(X, y, sd)
    assert np.isnan(search.cv_results_["mean_test_score"][0])
    assert search.best_params_["adapter__setting"] == "auto"
    # every setting failing names the first failure
    with pytest.raises(ValueError, match=r"the first failure: ValueError: SCA\(setting='dg'\) "
                       "must not see target rows"):
        SourceCVSearch(DomainAdaptationClassifier(SCA()), {"adapter__setting": ["dg"]},
                       cv=3).fit(X, y, sd)


def test_source_cv_search_verbose_reports_progress_without_changing_results(capsys):
    X, y, sd = make_sca_toy(n_per_cluster=15, random_state=0)
    grid = {"adapter__n_components": [1, 2], "adapter__beta": [0.1, 0.9]}

    def search(verbose):
        return SourceCVSearch(DomainAdaptationClassifier(SCA()), grid, cv=3,
                              verbose=verbose).fit(X, y, sd)

    quiet = search(0)
    assert capsys.readouterr().err == ""
    loud = search(1)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("SourceCVSearch: 4 settings x 3 folds")
    assert [line.split(" done")[0] for line in err[1:]] == ["fold 1/3", "fold 2/3", "fold 3/3"]
    assert str(loud.best_params_) in err[-1]
    search(2)
    assert sum("fit 1/2" in line for line in capsys.readouterr().err.splitlines()) == 3
    np.testing.assert_array_equal(loud.cv_results_["mean_test_score"],
                                  quiet.cv_results_["mean_test_score"])
    assert loud.best_params_ == quiet.best_params_
