"""CORAL: the map, skada parity, the rows' domains through the classifier, scorers and selector."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _tolerances import EPS, dot_atol
from sklearn import config_context
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from shiftlearn.adaptation import CORAL, TCA, coral_covariance
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.datasets import make_sca_toy
from shiftlearn.model_selection import (
    AdaptationSelector,
    MMDScorer,
    SourceAccuracyScorer,
    fit_source_cv,
)


def _toy(seed=0):
    return make_sca_toy(n_per_cluster=30, random_state=seed, return_target_labels=True)


def _shifted(n=300, d=4, seed=0):
    """Source and target Gaussians with other means and covariances."""
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    Xt = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 3.0
    X = np.vstack([Xs, Xt])
    y = np.r_[rng.integers(0, 2, n), -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    return X, y, sd


@pytest.mark.parametrize("shrinkage", ["auto", 0.3, 1.0, None])
def test_equal_to_skada_up_to_the_target_mean(shrinkage):
    skada = pytest.importorskip("skada")
    X, y, sd = _shifted()
    ours = CORAL(shrinkage=shrinkage).fit_transform(X, y, sd)
    theirs = skada.CORALAdapter(reg=shrinkage).fit_transform(X, y, sample_domain=sd)
    np.testing.assert_allclose(ours - X[sd < 0].mean(axis=0), theirs, atol=1e-10)


@pytest.mark.parametrize("logreg", [False, True])
def test_same_target_predictions_as_skada(logreg):
    skada = pytest.importorskip("skada")
    X, y, sd, yt = _toy()
    steps = [StandardScaler(), LogisticRegression()] if logreg else [KNeighborsClassifier(1)]
    clf = make_pipeline(*steps) if logreg else steps[0]
    ours = DomainAdaptationClassifier(CORAL(), clf).fit(X, y, sd).predict(X[sd < 0])
    with config_context(enable_metadata_routing=True):     # skada's pipelines route domains
        pipe = skada.make_da_pipeline(skada.CORALAdapter(), *steps)
        pipe.fit(X, y, sample_domain=sd)
        theirs = pipe.predict(X[sd < 0], sample_domain=sd[sd < 0])
    np.testing.assert_array_equal(ours, theirs)
    assert (ours == yt).mean() > 0.9            # the toy is a linear shift: CORAL undoes it


def test_source_moments_become_the_target_moments():
    X, y, sd = _shifted()
    Z = CORAL(shrinkage=None).fit_transform(X, y, sd)
    np.testing.assert_array_equal(Z[sd < 0], X[sd < 0])          # target rows as they are
    np.testing.assert_allclose(Z[sd > 0].mean(axis=0), X[sd < 0].mean(axis=0), atol=1e-10)
    np.testing.assert_allclose(np.cov(Z[sd > 0].T), np.cov(X[sd < 0].T), atol=1e-9)
    # shrinkage 1: only the total variance is matched
    Z1 = CORAL(shrinkage=1.0).fit_transform(X, y, sd)
    assert np.trace(np.cov(Z1[sd > 0].T)) == pytest.approx(np.trace(np.cov(X[sd < 0].T)))


def test_transform_maps_only_the_source_rows():
    X, y, sd = _shifted()
    c = CORAL().fit(X, y, sd)
    np.testing.assert_array_equal(c.transform(X), X)                # no domains: target rows
    np.testing.assert_allclose(c.transform(X, sample_domain=sd), c.fit_transform(X, y, sd))
    assert not np.allclose(c.transform(X[sd > 0], sample_domain=1), X[sd > 0])


def test_coral_covariance_auto_is_scikit_learns_lda_shrinkage():
    from sklearn.discriminant_analysis import _cov

    X = _shifted()[0]
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    # two implementations of the same Ledoit-Wolf estimate: the covariance's own round-off,
    # gamma_n |Xc|^T |Xc| / n, absolute (off-diagonal entries cancel), and the shrinkage
    # scalars' (sums of n d^2 terms) relative; an unshrunk covariance is off by percents
    np.testing.assert_allclose(coral_covariance(X, "auto"), _cov(X, "auto"),
                               rtol=4 * n * d * EPS, atol=dot_atol(Xc.T, Xc, c=8) / n)


def test_singular_covariance_is_refused_with_the_fix():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 20))                     # fewer rows than features
    sd = np.r_[np.ones(5, int), -np.ones(5, int)]
    with pytest.raises(ValueError, match="singular.*shrinkage='auto'"):
        CORAL(shrinkage=None).fit(X, None, sd)
    assert CORAL().fit(X, None, sd).matrix_.shape == (20, 20)      # Ledoit-Wolf fits
    with pytest.raises(ValueError, match="at least 2 target rows"):
        CORAL().fit(X, None, np.r_[np.ones(9, int), -1])


def test_no_target_rows_warns_and_is_the_identity():
    X, y, sd = _shifted()
    with pytest.warns(UserWarning, match="no target rows"):
        c = CORAL().fit(X[sd > 0], y[sd > 0])
    # (x - m) I + m: two roundings of |x| + |m| (any non-identity map moves rows by O(1))
    atol = 4 * EPS * np.max(np.abs(X[:5]) + np.abs(c.mean_source_))
    np.testing.assert_allclose(c.transform(X[:5], sample_domain=1), X[:5], rtol=0, atol=atol)


def test_classifier_passes_the_rows_domains():
    """Held-out source rows must be mapped as source rows: without the domains they are read
    as target rows (the identity) and scored against a classifier trained on mapped rows."""
    X, y, sd, yt = _toy()
    clf = DomainAdaptationClassifier(CORAL()).fit(X, y, sd)
    src = sd > 0
    assert clf.score(X[src], y[src], sample_domain=sd[src]) == 1.0        # 1NN, its own rows
    assert clf.score(X[src], y[src]) < 0.6                                 # read as target
    assert SourceAccuracyScorer()(clf, X, y) == 1.0                        # labeled = source
    np.testing.assert_allclose(clf.transform(X, sample_domain=sd),
                               clf.adapter_.transform(X, sample_domain=sd))
    # adapters that embed both domains alike ignore the domains
    tca = DomainAdaptationClassifier(TCA(n_components=2)).fit(X, y, sd)
    np.testing.assert_array_equal(tca.predict(X, sample_domain=sd), tca.predict(X))
    assert SourceAccuracyScorer()(tca, X, y) == tca.score(X, y)


def test_source_cv_scores_coral_as_source_rows():
    X, y, sd, _ = _toy()
    search = fit_source_cv(CORAL(), {"shrinkage": ["auto", 1.0]}, X, y, sd, cv=3)
    assert search.best_score_ > 0.9                   # 1NN on the toy's source classes


def test_selector_chooses_coral_on_a_linear_shift():
    X, y, sd, yt = _toy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = AdaptationSelector(methods=["TCA", "CORAL"], scoring=MMDScorer(), cv=3,
                                 grids={"TCA": {"n_components": [2]}}).fit(X, y, sd)
    assert sel.choice_ == "CORAL"
    assert (sel.predict(X[sd < 0]) == yt).mean() > 0.9
    assert "CORAL" in sel.report()


@pytest.mark.parametrize("routing", [False, True])
def test_plain_grid_search_scores_held_out_source_rows_as_source(routing):
    """GridSearchCV's default scoring calls score(X_fold, y_fold): with metadata routing on, the
    fold's sample_domain reaches score; off, a fold that holds unlabeled rows is read with the
    library's rule (labeled rows are source rows). Either way a plain search over CORAL equals
    the library's source CV."""
    from sklearn.model_selection import GridSearchCV

    from shiftlearn.model_selection import SourceKFold

    X, y, sd, _ = _toy()
    grid = {"adapter__shrinkage": ["auto", 1.0]}
    plain = GridSearchCV(DomainAdaptationClassifier(CORAL()), grid, cv=SourceKFold(3))
    with config_context(enable_metadata_routing=routing):
        if routing:
            plain.fit(X, y, sample_domain=sd)
        else:
            plain.fit(X, y, groups=sd, sample_domain=sd)
    ours = fit_source_cv(CORAL(), {"shrinkage": ["auto", 1.0]}, X, y, sd, cv=3)
    np.testing.assert_allclose(plain.cv_results_["mean_test_score"],
                               ours.cv_results_["mean_test_score"])
    assert plain.best_score_ > 0.9


def test_da_pipeline_passes_the_rows_domains():
    from shiftlearn.compose import make_da_pipeline

    X, y, sd, yt = _toy()
    pipe = make_da_pipeline(CORAL(), KNeighborsClassifier(1)).fit(X, y, sample_domain=sd)
    clf = DomainAdaptationClassifier(CORAL()).fit(X, y, sd)
    src = sd > 0
    np.testing.assert_array_equal(pipe.predict(X[~src]), clf.predict(X[~src]))
    np.testing.assert_array_equal(pipe.predict(X[src], sample_domain=sd[src]),
                                  clf.predict(X[src], sample_domain=sd[src]))
    np.testing.assert_allclose(pipe[:-1].transform(X, sample_domain=sd),
                               clf.transform(X, sample_domain=sd))
    assert pipe.score(X[src], y[src], sample_domain=sd[src]) == 1.0
    assert pipe.score(X, y) == 1.0                       # a fold: labeled rows are source rows
    assert pipe.score(X[src], y[src]) < 0.6              # read as target rows
    assert SourceAccuracyScorer()(pipe, X, y) == 1.0


def test_features_beyond_memory_are_refused_up_front(monkeypatch):
    from shiftlearn import _resources

    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 10_000)
    X, y, sd = _shifted(d=20)
    with pytest.raises(ValueError, match="CORAL.fit on 20 features.*PCA"):
        CORAL().fit(X, y, sd)


def test_command_line_method_coral(tmp_path):
    """``shiftlearn adapt --method CORAL``: the report's adapted space maps each source file as
    a source domain (its MMD to the target falls), and ``--param shrinkage=None`` is None."""
    import json

    import pandas as pd

    from shiftlearn import cli
    from shiftlearn.cli.adapt import parse_params

    assert parse_params(["shrinkage=None", "shrinkage2=null", "kernel=linear", "k=3"]) == {
        "shrinkage": None, "shrinkage2": None, "kernel": "linear", "k": 3}
    # lower-case none stays text: it is an option value (SCA's class_scatter_normalization)
    assert parse_params(["class_scatter_normalization=none"]) == {
        "class_scatter_normalization": "none"}
    X, y, sd, yt = _toy()
    pd.DataFrame(X[sd > 0], columns=["a", "b"]).assign(label=y[sd > 0]).to_csv(
        tmp_path / "s.csv", index=False)
    pd.DataFrame(X[sd < 0], columns=["a", "b"]).to_csv(tmp_path / "t.csv", index=False)
    rep = tmp_path / "r.json"
    argv = ["adapt", str(tmp_path / "s.csv"), "--target", str(tmp_path / "t.csv"),
            "--label-column", "label", "--method", "CORAL", "--permutations", "20",
            "--report", str(rep), "--quiet"]
    assert cli.main(argv + ["--param", "shrinkage=None"]) == 0
    data = json.loads(rep.read_text())
    assert data["params"] == {"shrinkage": None, "memory": None}
    assert data["shift_adapted"][0]["mmd2_unbiased"] < 0.1 * data["shift_raw"][0]["mmd2_unbiased"]
