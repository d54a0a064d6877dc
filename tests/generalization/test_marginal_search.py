"""TaskGroupSearchCV's grid re-centring (issue #19 item 5): the paper's "if any of the chosen
hyper-parameters was at the grid boundary, the grid was extended accordingly, i.e., the same
grid size has been used, however, the center of grid has been assigned to the previously
selected point" (§8.1).

A stub estimator and a scorer with a known optimum make every extension predictable; one test
runs the real marginal-transfer classifier.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import MarginalTransferClassifier, TaskGroupSearchCV


class Stub(ClassifierMixin, BaseEstimator):
    """Learns nothing; the scorer reads its parameters."""

    def __init__(self, a=1.0, b=1, sigma="median", kind="x", flag=False):
        self.a, self.b, self.sigma, self.kind, self.flag = a, b, sigma, kind, flag

    def fit(self, X, y, sample_domain=None):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X, sample_domain=None):
        return np.zeros(len(X), dtype=int)


def _factor(spec):
    return 1.0 if spec.strip() == "median" else float(spec.split("*")[0])


def scorer(target_a=7.0, target_b=20, target_f=8.0):
    def score(est, X, y, sd):
        return -(np.log(est.a / target_a) ** 2 + np.log(est.b / target_b) ** 2
                 + np.log(_factor(est.sigma) / target_f) ** 2)
    return score


@pytest.fixture(scope="module")
def data():
    return make_rotated_ellipses(6, 8, random_state=0)


def _search(grid, data, **kw):
    kw.setdefault("scoring", scorer())
    return TaskGroupSearchCV(Stub(), grid, cv=2, random_state=0, **kw).fit(*data)


def _evaluated(search, name):
    return [r["params"][name] for r in search.cv_results_]


def test_recentres_upwards_until_the_best_value_is_interior(data):
    s = _search({"a": [0.01, 0.1, 1.0]}, data, extend_grid=5)
    assert s.best_params_ == {"a": 10.0}
    assert [e["values"] for e in s.grid_extensions_] == [[0.1, 1.0, 10.0], [1.0, 10.0, 100.0]]
    assert [e["best"] for e in s.grid_extensions_] == [1.0, 10.0]
    assert _evaluated(s, "a") == [0.01, 0.1, 1.0, 10.0, 100.0]      # nothing scored twice
    assert [r["extension"] for r in s.cv_results_] == [0, 0, 0, 1, 2]
    assert s.best_on_edge_ == []


def test_recentres_downwards_and_keeps_the_grid_size_and_step(data):
    s = _search({"a": [1.0, 4.0, 16.0, 64.0]}, data, extend_grid=5,
                scoring=scorer(target_a=0.1))
    first = s.grid_extensions_[0]["values"]
    assert len(first) == 4 and first == [0.0625, 0.25, 1.0, 4.0]   # x4 steps, 2 new below
    assert s.best_params_["a"] == 0.0625                # nearest to 0.1 in log scale
    assert s.grid_extensions_[1]["values"] == [0.00390625, 0.015625, 0.0625, 0.25]
    assert s.best_on_edge_ == []


def test_no_extension_by_default_and_the_edge_is_reported(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        s = _search({"a": [0.01, 0.1, 1.0]}, data)
    assert s.best_params_ == {"a": 1.0} and s.grid_extensions_ == []
    assert s.best_on_edge_ == ["a"] and len(s.cv_results_) == 3
    # one round is not enough for a = 7 from [0.01, 1]: a warning says so
    with pytest.warns(UserWarning, match=r"after 1 re-centring\(s\) .* best value of a still "
                                         r"sits on the edge .*a=10.0.*raise extend_grid"):
        s1 = _search({"a": [0.01, 0.1, 1.0]}, data, extend_grid=1)
    assert s1.best_params_ == {"a": 10.0} and s1.best_on_edge_ == ["a"]
    # an interior optimum: nothing to extend, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        s2 = _search({"a": [1.0, 10.0, 100.0]}, data, extend_grid=3)
    assert s2.grid_extensions_ == [] and len(s2.cv_results_) == 3


def test_ints_and_floats_of_one_value_are_scored_once(data):
    s = _search({"a": [0.1, 1, 10], "b": [20]}, data, extend_grid=3)
    assert s.grid_extensions_[0]["values"] == [1.0, 10.0, 100.0]
    assert _evaluated(s, "a") == [0.1, 1, 10, 100.0]           # 1.0 and 10.0 not refitted


def test_two_value_grids_integers_and_bandwidth_specs(data):
    s = _search({"a": [1.0, 10.0]}, data, extend_grid=3)
    assert s.grid_extensions_[0]["values"] == [10.0, 100.0]          # even size: beyond the edge
    assert s.best_params_ == {"a": 10.0}
    si = _search({"b": [1, 2, 4]}, data, extend_grid=10)
    assert all(isinstance(v, int) for v in _evaluated(si, "b"))
    assert si.best_params_["b"] in (16, 32) and si.best_on_edge_ == []
    ss = _search({"sigma": ["0.5*median", "median", "2*median"]}, data, extend_grid=10)
    assert ss.grid_extensions_[0]["values"] == ["median", "2*median", "4*median"]
    assert ss.best_params_ == {"sigma": "8*median"}
    MarginalTransferClassifier(bandwidth_x=ss.grid_extensions_[-1]["values"][-1])  # a valid spec


def test_only_numeric_axes_move_and_the_others_stay(data):
    grid = {"a": [0.1, 1.0], "kind": ["x", "y"], "flag": [False, True], "b": [20]}
    s = _search(grid, data, extend_grid=2)
    params = s.cv_results_
    assert {r["params"]["kind"] for r in params} == {"x", "y"}
    assert {r["params"]["flag"] for r in params} == {False, True}
    assert {r["params"]["b"] for r in params} == {20}                # one value: no step
    assert {e["param"] for e in s.grid_extensions_} == {"a"}
    # mixed types are not a numeric axis
    assert _search({"a": [0.1, "median"]}, data, extend_grid=2,
                   scoring=lambda *a: 0.0).grid_extensions_ == []


def test_staged_search_extends_each_stage(data):
    s = _search([{"a": [0.01, 0.1, 1.0]}, {"b": [1, 2]}], data, staged=True, extend_grid=6)
    assert s.best_params_["a"] == 10.0 and s.best_params_["b"] in (16, 32)
    assert {e["stage"] for e in s.grid_extensions_} == {0, 1}
    assert all(r["params"]["a"] == 10.0 for r in s.cv_results_ if r["stage"] == 1)


def test_extension_with_the_marginal_classifier():
    X, y, sd = make_rotated_ellipses(8, 16, random_state=0)
    s = TaskGroupSearchCV(MarginalTransferClassifier(solver="exact", random_state=0),
                          {"C": [1e-4, 1e-3]}, cv=2, extend_grid=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        s.fit(X, y, sd)
    first = s.grid_extensions_[0]                      # whichever edge won, x10 beyond it
    assert first["values"] == ([0.001, 0.01] if first["best"] == 1e-3 else [1e-5, 1e-4])
    assert len(_evaluated(s, "C")) == len(set(_evaluated(s, "C"))) >= 3
    assert s.best_estimator_.C == s.best_params_["C"]
    from shiftlearn._constraints import InvalidParameterError
    with pytest.raises(InvalidParameterError, match="'extend_grid' parameter"):
        TaskGroupSearchCV(MarginalTransferClassifier(), {"C": [1.0]}, extend_grid=-1).fit(
            X, y, sd)


def test_recentring_reads_every_bandwidth_spec_through_the_one_parser():
    from shiftlearn.generalization._search import _format_scale, _recentre, _scale_axis

    kind, xs, step = _scale_axis(["0.5*median_sq", "median_sq", "2*median_sq"])
    assert kind == ("spec", "median_sq") and xs.tolist() == [0.5, 1.0, 2.0]
    assert _recentre(kind, 2.0, step, 3, upward=True) == ["median_sq", "2*median_sq",
                                                          "4*median_sq"]
    assert _format_scale(("spec", "mean"), 1.0) == "mean"
    assert _scale_axis(["median", "2*mean"]) is None            # two rules: not one scale
    assert _scale_axis(["median", "wide"]) is None
