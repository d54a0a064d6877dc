"""Sample weights end to end: a reweighting adapter's weights reach the final estimator's
``sample_weight`` in ``DomainAdaptationClassifier`` and ``make_da_pipeline``, with metadata
routing on and off; an estimator that takes no ``sample_weight`` is refused, never fed
silently."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from shiftlearn.compose import DomainAdaptationClassifier, LabeledOnly, make_da_pipeline
from shiftlearn.model_selection import SourceKFold
from shiftlearn.reweighting import GaussianRW


class SpyClassifier(ClassifierMixin, BaseEstimator):
    """Records the rows and the ``sample_weight`` its ``fit`` received (class-level log, so
    that clones made by meta-estimators report too)."""

    log: list = []

    def fit(self, X, y, sample_weight=None):
        SpyClassifier.log.append((np.asarray(X).copy(), np.asarray(y).copy(),
                                  None if sample_weight is None else
                                  np.asarray(sample_weight).copy()))
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(np.shape(X)[0], self.classes_[0])


class NoWeightClassifier(SpyClassifier):
    def fit(self, X, y):
        return super().fit(X, y)


def _shifted(seed=0, ns=80, nt=60):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(0.0, 1.0, (ns, 2))
    Xt = rng.normal([1.0, 0.5], 0.8, (nt, 2))
    X = np.r_[Xs, Xt]
    y = np.r_[(Xs[:, 0] + 0.3 * Xs[:, 1] ** 2 > 0.2).astype(int), -np.ones(nt, int)]
    sd = np.r_[np.ones(ns, int), -np.ones(nt, int)]
    return X, y, sd


@pytest.fixture(autouse=True)
def _empty_log():
    SpyClassifier.log.clear()
    yield
    SpyClassifier.log.clear()


@pytest.mark.parametrize("routing", [False, True])
def test_classifier_receives_the_adapters_weights(routing):
    X, y, sd = _shifted()
    with sklearn.config_context(enable_metadata_routing=routing):
        clf = DomainAdaptationClassifier(GaussianRW(), SpyClassifier()).fit(X, y, sd)
    (Xf, yf, wf), = SpyClassifier.log
    src = sd > 0
    np.testing.assert_array_equal(Xf, X[src])
    np.testing.assert_array_equal(yf, y[src])
    assert wf is not None
    np.testing.assert_array_equal(wf, clf.adapter_.weights_[src])
    # real weights, not uniform ones: the shift makes them vary by orders of magnitude
    assert wf.max() / wf.min() > 10.0
    # the rows are not moved
    np.testing.assert_array_equal(clf.transform(X), X)


@pytest.mark.parametrize("routing", [False, True])
def test_pipeline_passes_the_weights_of_the_labeled_rows(routing):
    X, y, sd = _shifted()
    with sklearn.config_context(enable_metadata_routing=routing):
        pipe = make_da_pipeline(StandardScaler(), GaussianRW(), SpyClassifier())
        pipe.fit(X, y, sample_domain=sd)
    (Xf, yf, wf), = SpyClassifier.log
    src = sd > 0
    w = pipe.named_steps["gaussianrw"].weights_
    assert w.shape == (X.shape[0],)
    np.testing.assert_array_equal(wf, w[src])      # the unlabeled target rows dropped
    np.testing.assert_array_equal(yf, y[src])
    np.testing.assert_allclose(Xf, StandardScaler().fit_transform(X)[src])


def test_pipeline_multiplies_a_given_sample_weight():
    X, y, sd = _shifted()
    pipe = make_da_pipeline(GaussianRW(), SpyClassifier())
    user = np.linspace(0.5, 2.0, X.shape[0])
    pipe.fit(X, y, sample_domain=sd, spyclassifier__sample_weight=user)
    (_, _, wf), = SpyClassifier.log
    src = sd > 0
    np.testing.assert_allclose(wf, (pipe.named_steps["gaussianrw"].weights_ * user)[src])
    with pytest.raises(ValueError, match="does not accept"):
        pipe.fit(X, y, sample_domain=sd, nostep__sample_weight=user)


def test_pipeline_fit_predict_and_transform_use_the_weights():
    X, y, sd = _shifted()
    pipe = make_da_pipeline(GaussianRW(), LogisticRegression())
    pred = pipe.fit_predict(X, y, sample_domain=sd)
    np.testing.assert_array_equal(pred, pipe.predict(X))
    ref = LogisticRegression().fit(X[sd > 0], y[sd > 0],
                                   sample_weight=pipe.named_steps["gaussianrw"].weights_[sd > 0])
    np.testing.assert_allclose(pipe.steps[-1][1].estimator_.coef_, ref.coef_)


def test_weights_change_the_fitted_model():
    X, y, sd = _shifted()
    weighted = DomainAdaptationClassifier(GaussianRW(), LogisticRegression()).fit(X, y, sd)
    plain = DomainAdaptationClassifier(None, LogisticRegression()).fit(X, y, sd)
    ref = LogisticRegression().fit(X[sd > 0], y[sd > 0],
                                   sample_weight=weighted.adapter_.weights_[sd > 0])
    np.testing.assert_allclose(weighted.estimator_.coef_, ref.coef_)
    assert not np.allclose(weighted.estimator_.coef_, plain.estimator_.coef_, atol=1e-3)


@pytest.mark.parametrize("estimator", [None, KNeighborsClassifier(3), NoWeightClassifier()])
def test_estimator_without_sample_weight_is_refused(estimator):
    X, y, sd = _shifted()
    with pytest.raises(ValueError, match="takes no sample_weight.*LogisticRegression"):
        DomainAdaptationClassifier(GaussianRW(), estimator).fit(X, y, sd)
    assert SpyClassifier.log == []
    with pytest.raises(ValueError, match="takes no sample_weight.*LogisticRegression"):
        make_da_pipeline(GaussianRW(), estimator or KNeighborsClassifier(1)).fit(
            X, y, sample_domain=sd)
    assert SpyClassifier.log == []


def test_refusal_comes_before_the_adapter_is_fitted():
    X, y, sd = _shifted()
    clf = DomainAdaptationClassifier(GaussianRW())
    with pytest.raises(ValueError, match="GaussianRW is a reweighting adapter"):
        clf.fit(X, y, sd)
    assert not hasattr(clf, "adapter_")


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_over_the_classifier_keeps_the_weights(routing):
    X, y, sd = _shifted()
    search = GridSearchCV(DomainAdaptationClassifier(GaussianRW(), SpyClassifier()),
                          {"adapter__shrinkage": ["auto", 0.5]}, cv=SourceKFold(3))
    with sklearn.config_context(enable_metadata_routing=routing):
        if routing:
            search.fit(X, y, sample_domain=sd, groups=sd)
        else:
            search.fit(X, y, groups=sd, sample_domain=sd)
    assert len(SpyClassifier.log) == 2 * 3 + 1
    assert all(w is not None and w.max() / w.min() > 2.0 for _, _, w in SpyClassifier.log)


def test_selector_refuses_reweighting_with_1nn_and_runs_with_logreg():
    from shiftlearn.model_selection import AdaptationSelector

    X, y, sd = _shifted()
    with pytest.raises(ValueError, match="GaussianRW: reweighting.*LogisticRegression"):
        AdaptationSelector(methods=["GaussianRW"], grids={}, cv=2).fit(X, y, sd)
    sel = AdaptationSelector(methods=["GaussianRW", "KMM"], classifier=LogisticRegression(),
                             grids={}, cv=2).fit(X, y, sd)
    assert {row["method"] for row in sel.summary_} == {"none", "GaussianRW", "KMM"}
    assert all(np.isfinite(row["score"]) for row in sel.summary_)
    from sklearn.pipeline import make_pipeline  # the command line's logreg

    sel = AdaptationSelector(methods=["GaussianRW"], grids={}, cv=2, classifier=make_pipeline(
        StandardScaler(), LogisticRegression())).fit(X, y, sd)
    assert all(np.isfinite(row["score"]) for row in sel.summary_)


@pytest.mark.parametrize("routing", [False, True])
def test_weights_reach_the_last_step_of_a_sklearn_pipeline(routing):
    """The command line's logreg is make_pipeline(StandardScaler(), LogisticRegression())."""
    from sklearn.pipeline import make_pipeline

    X, y, sd = _shifted()
    src = sd > 0
    with sklearn.config_context(enable_metadata_routing=routing):
        clf = DomainAdaptationClassifier(
            GaussianRW(), make_pipeline(StandardScaler(), SpyClassifier())).fit(X, y, sd)
        pipe = make_da_pipeline(GaussianRW(),
                                LabeledOnly(make_pipeline(StandardScaler(), SpyClassifier())))
        pipe.fit(X, y, sample_domain=sd)
    (_, _, w1), (_, _, w2) = SpyClassifier.log
    np.testing.assert_array_equal(w1, clf.adapter_.weights_[src])
    np.testing.assert_array_equal(w2, pipe.named_steps["gaussianrw"].weights_[src])
    with pytest.raises(ValueError, match="takes no sample_weight"):
        DomainAdaptationClassifier(GaussianRW(), make_pipeline(
            StandardScaler(), KNeighborsClassifier(1))).fit(X, y, sd)


def _csvs(tmp_path):
    X, y, sd = _shifted()
    cols = "a,b"
    np.savetxt(tmp_path / "src.csv", np.c_[X[sd > 0], y[sd > 0]], delimiter=",",
               header=cols + ",label", comments="", fmt="%.8g")
    np.savetxt(tmp_path / "tgt.csv", X[sd < 0], delimiter=",", header=cols, comments="",
               fmt="%.8g")
    return ["adapt", str(tmp_path / "src.csv"), "--target", str(tmp_path / "tgt.csv"),
            "--label-column", "label", "--permutations", "0"]


@pytest.mark.parametrize("method", ["KMM", "GaussianRW"])
def test_cli_adapt_reweights_with_logreg(tmp_path, capsys, method):
    from shiftlearn import cli

    out = tmp_path / "pred.csv"
    rc = cli.main([*_csvs(tmp_path), "--method", method, "--classifier", "logreg", "--out",
                   str(out)])
    assert rc in (0, None), capsys.readouterr().err
    assert len(out.read_text().strip().splitlines()) == 1 + 60


def test_cli_adapt_refuses_reweighting_with_1nn(tmp_path, capsys):
    from shiftlearn import cli

    rc = cli.main([*_csvs(tmp_path), "--method", "KMM", "--classifier", "1nn", "--out",
                   str(tmp_path / "pred.csv")])
    err = capsys.readouterr().err
    assert rc not in (0, None)
    assert "takes no sample_weight" in err and "--classifier logreg" in err
    assert not (tmp_path / "pred.csv").exists()
