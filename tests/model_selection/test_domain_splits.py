"""Domain-aware splitters on scikit-learn's machinery (issue #15, item 1): labeled source rows
are split, target rows join every fold; domains reach the splitter by metadata routing
(``sample_domain``) or, with routing off, as ``groups``."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.model_selection import GridSearchCV, LeaveOneGroupOut, cross_validate

from shiftlearn import SCA, DomainAdaptationClassifier
from shiftlearn.datasets import make_sca_toy
from shiftlearn.model_selection import (
    ClusterSplit,
    DomainAwareSplit,
    LeaveOneDomainOut,
    SourceKFold,
    split_domains,
)


def _three_domains(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(70, 3))
    y = np.r_[rng.integers(0, 2, 20), rng.integers(0, 2, 30), np.full(20, -1)]
    sd = np.r_[np.full(20, 1), np.full(30, 2), np.full(20, -3)]
    return X, y, sd


def test_split_domains_sources_of_every_kind():
    y = np.array([0, 1, -1, 1, -1])
    sd = np.array([1, 2, -3, -3, -3])           # a labeled target row is not a source row
    src, rest = split_domains(y, sample_domain=sd)
    assert src.tolist() == [0, 1] and rest.tolist() == [2, 3, 4]
    src2, _ = split_domains(y, groups=sd)
    assert src2.tolist() == src.tolist()
    src3, rest3 = split_domains(y)             # inferred: labeled = source
    assert src3.tolist() == [0, 1, 3] and rest3.tolist() == [2, 4]
    with pytest.raises(ValueError, match="re-encode"):
        split_domains(np.array([1, -1, 1, -1]))


@pytest.mark.parametrize("target_in_test", [True, False])
def test_source_kfold_partitions_the_labeled_sources(target_in_test):
    X, y, sd = _three_domains()
    folds = list(SourceKFold(5, target_in_test=target_in_test).split(X, y, sample_domain=sd))
    assert len(folds) == 5
    val_src = np.concatenate([va[sd[va] > 0] for _, va in folds])
    assert sorted(val_src.tolist()) == list(range(50))      # each source row validated once
    tgt = np.flatnonzero(sd < 0)
    for tr, va in folds:
        assert np.isin(tgt, tr).all()                        # targets always in training
        assert np.isin(tgt, va).all() == target_in_test
        assert not set(tr[sd[tr] > 0]) & set(va[sd[va] > 0])


def test_leave_one_domain_out_holds_out_sources_only():
    X, y, sd = _three_domains()
    cv = LeaveOneDomainOut()
    folds = list(cv.split(X, y, sample_domain=sd))
    assert cv.get_n_splits(X, y, sample_domain=sd) == 2 == len(folds)
    held = [sorted(set(sd[va][sd[va] > 0].tolist())) for _, va in folds]
    assert held == [[1], [2]]
    # groups holding negative ids is the same DA mode (routing off)
    assert [va.tolist() for _, va in cv.split(X, y, groups=sd)] == [va.tolist() for _, va in
                                                                     folds]
    # the DG use is unchanged: every domain held out once
    assert len(list(cv.split(X[:50], y[:50], groups=sd[:50]))) == 2
    with pytest.raises(ValueError, match="at least 2 labeled source domains"):
        list(cv.split(X[20:], y[20:], sample_domain=sd[20:]))


def test_cluster_split_da_mode_clusters_the_sources_only():
    X, y, sd = _three_domains()
    cv = ClusterSplit(test_size=0.25, random_state=0)
    (tr, va), = cv.split(X, y, sample_domain=sd)
    tgt = np.flatnonzero(sd < 0)
    assert np.isin(tgt, tr).all() and np.isin(tgt, va).all()
    n_val_src = int((sd[va] > 0).sum())
    assert n_val_src in (12, 13, 14) and cv.labels_.shape == (50,)


def test_generic_wrapper_with_leave_one_group_out():
    X, y, sd = _three_domains()
    folds = list(DomainAwareSplit(LeaveOneGroupOut()).split(X, y, sample_domain=sd))
    assert len(folds) == 2


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_receives_the_domains(routing):
    X, y, sd, yt = make_sca_toy(n_per_cluster=15, random_state=0, return_target_labels=True)
    est = DomainAdaptationClassifier(SCA(n_components=2))
    grid = {"adapter__beta": [0.1, 0.9]}
    with config_context(enable_metadata_routing=routing):
        if routing:
            est.set_fit_request(sample_domain=True)
            search = GridSearchCV(est, grid, cv=SourceKFold(3)).fit(X, y, sample_domain=sd)
        else:
            search = GridSearchCV(est, grid, cv=SourceKFold(3)).fit(X, y, groups=sd,
                                                                     sample_domain=sd)
    # the held-out score is the accuracy on the held-out SOURCE rows (targets are unlabeled)
    assert 0.0 <= search.best_score_ <= 1.0 and search.best_params_["adapter__beta"] in (0.1,
                                                                                        0.9)
    assert -1 not in search.predict(X[sd < 0])


def test_cross_validate_scores_are_source_accuracies():
    X, y, sd = make_sca_toy(n_per_cluster=15, random_state=0)
    res = cross_validate(DomainAdaptationClassifier(SCA(n_components=2)), X, y,
                         groups=sd, params={"sample_domain": sd}, cv=SourceKFold(3))
    assert res["test_score"].shape == (3,) and np.all(res["test_score"] > 0.5)
