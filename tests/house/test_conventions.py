"""Every promise of ``docs/conventions.md`` against the code: the tables are read from the page
itself, so a row added there without a case here (or a message reworded on one side only)
fails."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shiftlearn._validation import check_X_y_domain, check_y_domain, unlabeled_mask

DOC = (Path(__file__).resolve().parents[2] / "docs" / "conventions.md").read_text()


def _table(header: str) -> list[list[str]]:
    """The body rows of the markdown table whose header row starts with ``header``."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header}"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        rows.append(cells)
    return rows


# ------------------------------------------------------------------------------- X dtypes
@pytest.mark.parametrize("dtype,kept", [(np.float32, np.float32), (np.float64, np.float64),
                                        (np.float16, np.float64), (np.int64, np.float64),
                                        (np.int32, np.float64), (np.uint8, np.float64),
                                        (bool, np.float64)])
def test_float32_stays_float32_other_numeric_types_become_float64(dtype, kept):
    X = (np.arange(12).reshape(6, 2) % 3).astype(dtype)
    Xc, _, _ = check_X_y_domain(X, np.array([0, 1, 0, 1, -1, -1]))
    assert Xc.dtype == kept


# ------------------------------------------------------------------- the unlabeled table
_UNLABELED = {
    "integer": (np.array([0, 1, -1, -2]), {}, [0, 0, 1, 0]),
    "float containing NaN": (np.array([0.5, -1.0, np.nan]), {}, [0, 0, 1]),
    "float without NaN, all integral": (np.array([0.0, 1.0, -1.0, -2.0]), {}, [0, 0, 1, 0]),
    "float without NaN, not integral": (np.array([0.5, -1.0, 2.0]), {}, [0, 0, 0]),
    "string": (np.array(["a", "-1", "", " -1 ", "b"]), {}, [0, 1, 1, 1, 0]),
    "object": (np.array([None, np.nan, -1, "-1", "", "a", 2, pd.NA, pd.NaT], dtype=object),
               {}, [1, 1, 1, 1, 1, 0, 0, 1, 1]),
    "boolean": (np.array([True, False]), {}, [0, 0]),
    "dates": (np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"), {}, [0, 1]),
    "any, with": (np.array([-1.0, np.nan, 2.0]), {"task": "regression"}, [0, 1, 0]),
}


def test_every_row_of_the_unlabeled_table_has_a_case():
    rows = [re.sub(r"`", "", r[0]) for r in _table("`y` | unlabeled rows")]
    assert len(rows) == len(_UNLABELED)
    for row in rows:
        assert any(row.startswith(k) for k in _UNLABELED), row


@pytest.mark.parametrize("kind", list(_UNLABELED))
def test_unlabeled_table(kind):
    y, kw, want = _UNLABELED[kind]
    assert unlabeled_mask(y, **kw).astype(int).tolist() == want


def test_integer_minus_one_is_not_unlabeled_for_regression():
    assert not unlabeled_mask(np.array([-1, 2]), task="regression").any()


# ------------------------------------------------ class values, inference, scalar domains
def test_class_labels_are_compared_as_values():
    from shiftlearn.adaptation import TCA
    from shiftlearn.compose import DomainAdaptationClassifier

    y = np.array([1, 1.0, np.float64(1), 0, 0.0, np.int32(0)] * 5 + [None] * 6, dtype=object)
    yy, sd = check_y_domain(y, None, 36, task="classification")
    assert yy.dtype == np.int64 and np.unique(yy[sd > 0]).tolist() == [0, 1]
    X = np.random.default_rng(0).normal(size=(36, 3))
    clf = DomainAdaptationClassifier(TCA(n_components=2)).fit(X, y)
    assert clf.classes_.tolist() == [0, 1] and clf.classes_.dtype == np.int64


def test_sample_domain_inferred_and_scalar_broadcast():
    X = np.zeros((4, 2))
    assert check_X_y_domain(X, np.array([0, 1, -1, -1]))[2].tolist() == [1, 1, -2, -2]
    assert check_X_y_domain(X, np.array([0, 1, 0, 1]), 3)[2].tolist() == [3, 3, 3, 3]


def test_an_estimator_takes_a_scalar_sample_domain():
    from shiftlearn.adaptation import TCA

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), np.arange(30) % 2
    np.testing.assert_array_equal(TCA(n_components=2).fit(X, y, 1).transform(X),
                                  TCA(n_components=2).fit(X, y, np.ones(30, int)).transform(X))


# -------------------------------------------------------------- the validation error table
_X6 = np.arange(12.0).reshape(6, 2)
_Y6 = np.array([0, 1, 0, 1, -1, -1])
_SD6 = np.array([1, 1, 1, 1, -2, -2])

#: documented input -> calls that must raise the documented message
_ERRORS = {
    "`X` and `y` lengths differ": [lambda: check_X_y_domain(_X6, _Y6[:5])],
    "`sample_domain` length differs": [lambda: check_X_y_domain(_X6, _Y6, _SD6[:4])],
    "a value of `X` beyond `+-1e50` (the kernels' fourth powers would overflow)": [
        lambda: check_X_y_domain(np.where(_X6 == 3, 1e60, _X6), _Y6)],
    "NaN / inf in `X`": [lambda: check_X_y_domain(np.where(_X6 == 3, np.nan, _X6), _Y6),
                         lambda: check_X_y_domain(np.where(_X6 == 3, np.inf, _X6), _Y6)],
    "inf in `y`": [lambda: check_X_y_domain(_X6, np.r_[_Y6[:5], np.inf])],
    "no source rows": [lambda: check_X_y_domain(_X6, None, -np.ones(6, int)),
                       lambda: check_X_y_domain(_X6, _Y6, -np.ones(6, int))],
    "no target rows": [lambda: check_X_y_domain(_X6, _Y6 % 2, None, require_target=True)],
    "unlabeled row in a source domain": [lambda: check_X_y_domain(_X6, _Y6, np.ones(6, int))],
    "`-1` beside a single other class": [
        lambda: check_X_y_domain(_X6, np.array([1, -1, 1, -1, 1, -1]))],
    "labeled row in a target domain": [
        lambda: check_X_y_domain(_X6, _Y6 % 2, _SD6, allow_target_labels=False)],
    "a 0 in `sample_domain`": [lambda: check_X_y_domain(_X6, _Y6, np.r_[_SD6[:5], 0])],
    "non-integer domain ids": [
        lambda: check_X_y_domain(_X6, _Y6, _SD6 + 0.5),
        lambda: check_X_y_domain(_X6, _Y6, np.r_[_SD6[:5], np.nan]),
        lambda: check_X_y_domain(_X6, _Y6, _SD6.astype(str)),
        lambda: check_X_y_domain(_X6, _Y6, _SD6 > 0)],
    "wrong shapes": [lambda: check_X_y_domain(_X6[:, 0], _Y6),
                     lambda: check_X_y_domain(_X6, np.c_[_Y6, _Y6]),
                     lambda: check_X_y_domain(_X6, _Y6, np.c_[_SD6, _SD6])],
    "too small a domain": [lambda: check_X_y_domain(_X6, _Y6 % 2, np.r_[1, 1, 1, 1, 1, 5],
                                                    min_samples_per_domain=2)],
    "neither `y` nor `sample_domain`": [lambda: check_X_y_domain(_X6, None)],
}


def _documented_errors():
    out = {}
    for cell, message in _table("input | error message (start)"):
        key = next(k for k in _ERRORS if cell.startswith(k))
        out[key] = [m for m in re.findall(r"`([^`]*)`", message)]
    return out


def test_every_row_of_the_error_table_has_a_case():
    assert sorted(_documented_errors()) == sorted(_ERRORS)


@pytest.mark.parametrize("key", list(_ERRORS))
def test_validation_errors_start_as_documented(key):
    messages = _documented_errors()[key]
    for i, call in enumerate(_ERRORS[key]):
        with pytest.raises(ValueError) as err:
            call()
        # a row documents one message per call (or one for all): its fragments, in order
        doc = messages[min(i, len(messages) - 1)]
        pos = 0
        for fragment in (f.strip(" .") for f in doc.split("...")):
            if fragment:
                found = str(err.value).find(fragment, pos)
                assert found >= 0, (fragment, str(err.value))
                pos = found + len(fragment)


# ------------------------------------------------------------ sample_domain and routing
def _estimators():
    from test_inputs import _public_estimators

    return [e for e, _ in _public_estimators()]


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda e: type(e).__name__)
def test_every_method_that_takes_sample_domain_requests_it(estimator):
    """'shiftlearn's estimators request sample_domain in fit (and, where predictions depend on
    the domain, in predict)': every method whose signature takes it requests it, so a search
    with metadata routing on never raises UnsetMetadataPassedError for it."""
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):          # a router: it routes to its steps
        pytest.skip("a pipeline routes sample_domain to its steps (tested in test_pipeline)")
    routing = estimator.get_metadata_routing()
    for name in ("fit", "predict", "predict_proba", "decision_function", "transform",
                 "score"):
        method = getattr(estimator, name, None)
        if method is None or "sample_domain" not in inspect.signature(method).parameters:
            continue
        assert getattr(routing, name).requests.get("sample_domain") is True, name


@pytest.mark.parametrize("splitter", ["SourceKFold", "LeaveOneDomainOut", "ClusterSplit",
                                      "DomainAwareSplit"])
def test_domain_aware_splitters_request_sample_domain(splitter):
    from shiftlearn import model_selection

    cv = getattr(model_selection, splitter)()
    assert cv.get_metadata_routing().split.requests.get("sample_domain") is True


def test_selector_and_pipeline_behave_the_same_in_both_routing_modes():
    from sklearn import config_context
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn.adaptation import CORAL
    from shiftlearn.compose import make_da_pipeline
    from shiftlearn.datasets import make_sca_toy
    from shiftlearn.model_selection import AdaptationSelector

    X, y, sd = make_sca_toy(n_per_cluster=12, random_state=0)
    out = []
    for on in (False, True):
        with config_context(enable_metadata_routing=on):
            sel = AdaptationSelector(methods=["TCA", "CORAL"], grids={}, cv=2).fit(X, y, sd)
            pipe = make_da_pipeline(CORAL(), KNeighborsClassifier(1)).fit(X, y, sample_domain=sd)
            out.append((sel.summary_, sel.predict(X), pipe.predict(X, sample_domain=sd)))
    assert [r["score"] for r in out[0][0]] == [r["score"] for r in out[1][0]]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("estimator", _estimators(), ids=lambda e: type(e).__name__)
def test_every_estimator_refuses_minus_one_beside_a_single_class(estimator):
    """'-1 cannot be hit by accident ... every estimator refuses y' (regressors read -1 as a
    target value and RandomFourierFeatures takes no y: they are the documented exceptions)."""
    from sklearn.base import clone, is_regressor

    from shiftlearn.kernels import RandomFourierFeatures

    if is_regressor(estimator) or isinstance(estimator, RandomFourierFeatures):
        pytest.skip("no class labels")
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(ValueError, match=r"y holds the value -1 beside a single other class"):
        clone(estimator).fit(X, y)
