"""Domain-aware pipelines (issue #14): the final estimator never learns the unlabeled marker."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from shiftlearn import SCA, TCA, DomainAdaptationClassifier, LabeledOnly, make_da_pipeline
from shiftlearn.boosting import MultiTaskBoostingClassifier
from shiftlearn.datasets import make_monotone_shift, make_sca_toy


@pytest.fixture
def toy():
    return make_sca_toy(n_per_cluster=20, random_state=0, return_target_labels=True)


def test_plain_pipeline_warns_and_learns_the_marker(toy):
    # the bug this guards against: a plain Pipeline trains the classifier on the target rows
    X, y, sd, yt = toy
    with pytest.warns(UserWarning, match=r"make_da_pipeline"):
        pipe = make_pipeline(TCA(n_components=2), KNeighborsClassifier(1)).fit(X, y)
    assert np.all(pipe.predict(X[sd < 0]) == -1)


def test_da_pipeline_equals_domain_adaptation_classifier(toy):
    X, y, sd, yt = toy
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe = make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1))
        pred = pipe.fit(X, y, sample_domain=sd).predict(X[sd < 0])
    ref = DomainAdaptationClassifier(TCA(n_components=2)).fit(X, y, sd).predict(X[sd < 0])
    assert -1 not in pred and np.array_equal(pred, ref)
    assert isinstance(pipe.steps[-1][1], LabeledOnly)
    # sample_domain inferred from y gives the same model here (one source, one target)
    pred2 = make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1)).fit(X, y).predict(
        X[sd < 0])
    assert np.array_equal(pred, pred2)


def test_da_pipeline_with_plain_transformers_and_score(toy):
    X, y, sd, yt = toy
    pipe = make_da_pipeline(StandardScaler(), SCA(n_components=2), LogisticRegression())
    pipe.fit(X, y, sample_domain=sd)
    assert set(pipe.predict(X[sd < 0]).tolist()) <= {0, 1, 2}
    assert pipe.predict_proba(X[sd < 0]).shape == (60, 3)
    # score skips unlabeled rows instead of counting -1 as a wrong class
    y_eval = y.copy()
    y_eval[sd < 0] = -1
    assert pipe.score(X, y_eval) == pipe.score(X[sd > 0], y[sd > 0])


def test_skada_pipeline_gives_the_same_predictions(toy):
    skada = pytest.importorskip("skada")
    X, y, sd, yt = toy
    ours = make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1)).fit(
        X, y, sample_domain=sd).predict(X[sd < 0])
    # skada's pipelines need scikit-learn's metadata routing (skada switches it on when imported;
    # the test suite resets it per test)
    with warnings.catch_warnings(), sklearn.config_context(enable_metadata_routing=True):
        warnings.simplefilter("error", UserWarning)     # no false alarm inside skada
        theirs = skada.make_da_pipeline(TCA(n_components=2), KNeighborsClassifier(1)).fit(
            X, y, sample_domain=sd).predict(X[sd < 0])
    assert np.array_equal(ours, theirs)


def test_domain_aware_final_step_gets_sample_domain():
    X, y, sd = make_monotone_shift(300, 300, random_state=0)
    lab = (sd > 0) | (np.arange(sd.size) % 10 == 0)
    y = np.where(lab, y, -1)
    pipe = make_da_pipeline(StandardScaler(), MultiTaskBoostingClassifier(n_estimators=20))
    assert not isinstance(pipe.steps[-1][1], LabeledOnly)
    pipe.fit(X, y, sample_domain=sd)
    assert set(pipe.predict(X[sd < 0], sample_domain=sd[sd < 0]).tolist()) <= {0, 1}


def test_labeled_only_slices_sample_weight_and_refuses_all_unlabeled():
    X = np.array([[0.0], [1.0], [0.2], [0.8], [5.0]])
    y = np.array([0, 1, 0, 1, -1])
    w = np.array([1.0, 1.0, 2.0, 2.0, 100.0])
    est = LabeledOnly(LogisticRegression()).fit(X, y, sample_weight=w)
    ref = LogisticRegression().fit(X[:4], y[:4], sample_weight=w[:4])
    assert np.allclose(est.estimator_.coef_, ref.coef_)
    assert est.classes_.tolist() == [0, 1]
    with pytest.raises(ValueError, match="No labeled row"):
        LabeledOnly(LogisticRegression()).fit(X, np.full(5, -1))
    with pytest.raises(ValueError, match="re-encode"):
        LabeledOnly(LogisticRegression()).fit(X, np.array([1, -1, 1, -1, 1]))


def test_make_da_pipeline_memory_is_a_fit_memory(tmp_path):
    """``memory`` of make_da_pipeline is the library's FitMemory, handed to the adapters that
    take one (a step's own memory kept); a joblib cache still works, with a FutureWarning."""
    from shiftlearn.adaptation import FitMemory

    X, y, sd = make_sca_toy(n_per_cluster=15, random_state=0)
    mem, own = FitMemory(), FitMemory()
    sca, tca = SCA(n_components=2), TCA(n_components=2, memory=own)
    pipe = make_da_pipeline(sca, tca, KNeighborsClassifier(1), memory=mem)
    assert sca.memory is mem and tca.memory is own and pipe.memory is None
    first = pipe.fit(X, y, sample_domain=sd).predict(X[sd < 0])
    assert mem.misses > 0 and mem.hits == 0
    again = pipe.fit(X, y, sample_domain=sd).predict(X[sd < 0])
    assert mem.hits > 0
    plain = make_da_pipeline(SCA(n_components=2), TCA(n_components=2), KNeighborsClassifier(1))
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, plain.fit(X, y, sample_domain=sd).predict(X[sd < 0]))
    with pytest.warns(FutureWarning, match="memory is a FitMemory.*DomainAwarePipeline"):
        cached = make_da_pipeline(SCA(n_components=2), KNeighborsClassifier(1),
                                  memory=str(tmp_path))
    assert cached.memory == str(tmp_path) and cached[0].memory is None
    cached.fit(X, y, sample_domain=sd)
    assert any(tmp_path.iterdir())                     # scikit-learn's cache was written
