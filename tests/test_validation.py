"""Input validation (``shiftlearn._validation``) and the domain helpers (``shiftlearn.domains``)."""

import numpy as np
import pytest

from shiftlearn._validation import (
    check_labels_beside_dask,
    check_sample_domain,
    check_X,
    check_X_y_domain,
    check_y_shape,
    infer_sample_domain,
    unlabeled_mask,
)
from shiftlearn.domains import pack_domains, split_by_domain, split_source_target


@pytest.fixture
def Xy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    y = np.array([0, 1, 0, -1, -1, -1])
    sd = np.array([1, 1, 1, -2, -2, -2])
    return X, y, sd


# ------------------------------------------------------------------------- bad input -------
def test_lengths_differ_X_y(Xy):
    X, y, sd = Xy
    with pytest.raises(ValueError, match=r"X has 6 rows but y has 5"):
        check_X_y_domain(X, y[:5], sd)


def test_lengths_differ_sample_domain(Xy):
    X, y, sd = Xy
    with pytest.raises(ValueError, match=r"sample_domain has 4 entries but X has 6 rows"):
        check_X_y_domain(X, y, sd[:4])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_X(Xy, bad):
    X, y, sd = Xy
    X = X.copy()
    X[2, 1] = bad
    with pytest.raises(ValueError, match=r"(?i)(nan|infinity)"):
        check_X_y_domain(X, y, sd)


def test_inf_in_y(Xy):
    X, _, sd = Xy
    y = np.array([0.5, np.inf, 1.0, np.nan, np.nan, np.nan])
    with pytest.raises(ValueError, match="y contains inf"):
        check_X_y_domain(X, y, sd)


def test_no_source_rows(Xy):
    X, y, _ = Xy
    with pytest.raises(ValueError, match="No source rows"):
        check_X_y_domain(X, np.full(6, -1), -np.ones(6, dtype=int))


def test_no_source_allowed_when_not_required(Xy):
    X, _, _ = Xy
    _, _, sd = check_X_y_domain(X, np.full(6, -1), np.full(6, -3), require_source=False)
    assert set(sd.tolist()) == {-3}


def test_no_target_rows_when_required(Xy):
    X, y, _ = Xy
    with pytest.raises(ValueError, match="No target rows"):
        check_X_y_domain(X, np.zeros(6, dtype=int), np.ones(6, dtype=int), require_target=True)


def test_labeled_row_in_declared_unlabeled_target(Xy):
    X, y, sd = Xy
    y = y.copy()
    y[4] = 1  # a labeled row in target domain -2
    with pytest.raises(ValueError, match=r"Target domain\(s\) \[-2\] are declared unlabeled"):
        check_X_y_domain(X, y, sd, allow_target_labels=False)
    # ... which is fine (semi-supervised DA) by default
    _, y2, _ = check_X_y_domain(X, y, sd)
    assert y2[4] == 1


def test_unlabeled_row_in_source(Xy):
    X, y, sd = Xy
    y = y.copy()
    y[0] = -1
    with pytest.raises(ValueError, match=r"Source domain\(s\) \[1\] contain unlabeled rows"):
        check_X_y_domain(X, y, sd)
    check_X_y_domain(X, y, sd, allow_unlabeled_source=True)


def test_sample_domain_zero(Xy):
    X, y, sd = Xy
    sd = sd.copy()
    sd[0] = 0
    with pytest.raises(ValueError, match="sample_domain contains 0"):
        check_X_y_domain(X, y, sd)


@pytest.mark.parametrize("sd", [np.array([1, 1, 1.5, -2, -2, -2]),
                                np.array([1, 1, 1, -2, np.nan, -2]),
                                np.array(["a", "a", "a", "b", "b", "b"]),
                                np.array([True] * 3 + [False] * 3)])
def test_non_integer_domain_ids(Xy, sd):
    X, y, _ = Xy
    with pytest.raises(ValueError, match="integer domain ids"):
        check_X_y_domain(X, y, sd)


def test_integral_float_domain_ids_accepted(Xy):
    X, y, sd = Xy
    _, _, out = check_X_y_domain(X, y, sd.astype(float))
    assert out.dtype == np.int64 and out.tolist() == sd.tolist()


def test_wrong_shapes(Xy):
    X, y, sd = Xy
    with pytest.raises(ValueError, match="2D array"):
        check_X_y_domain(X[:, 0], y, sd)
    with pytest.raises(ValueError, match="y must be 1-D"):
        check_X_y_domain(X, np.zeros((6, 2)), sd)
    with pytest.raises(ValueError, match="sample_domain must be 1-D"):
        check_X_y_domain(X, y, np.ones((3, 2), dtype=int))
    with pytest.raises(ValueError, match="0 sample"):
        check_X_y_domain(np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=int))


def test_column_vectors_are_flattened(Xy):
    X, y, sd = Xy
    _, y2, sd2 = check_X_y_domain(X, y[:, None], sd[:, None])
    assert y2.shape == (6,) and sd2.shape == (6,)


def test_scalar_sample_domain_broadcast(Xy):
    X, _, _ = Xy
    _, _, sd = check_X_y_domain(X, np.arange(6), 4)
    assert sd.tolist() == [4] * 6


def test_without_y_sample_domain_required(Xy):
    X, _, sd = Xy
    with pytest.raises(ValueError, match="sample_domain is required"):
        check_X_y_domain(X, None)
    _, y, out = check_X_y_domain(X, None, sd)
    assert y is None and out.tolist() == sd.tolist()


def test_min_samples_per_domain(Xy):
    X, y, sd = Xy
    sd = sd.copy()
    sd[0] = 5
    with pytest.raises(ValueError, match=r"Domain\(s\) \[5\] have fewer than 2 rows"):
        check_X_y_domain(X, y, sd, min_samples_per_domain=2)


def test_no_labeled_row(Xy):
    X, _, sd = Xy
    with pytest.raises(ValueError, match="no labeled row|contain unlabeled"):
        check_X_y_domain(X, np.full(6, -1), sd)


# --------------------------------------------------------------------- dtype / casting -------
def test_float32_kept_other_types_become_float64(Xy):
    X, y, sd = Xy
    X32, _, _ = check_X_y_domain(X.astype(np.float32), y, sd)
    assert X32.dtype == np.float32
    Xi, _, _ = check_X_y_domain(np.arange(12).reshape(6, 2), y, sd)
    assert Xi.dtype == np.float64
    assert check_X(X.astype(np.float32)).dtype == np.float32


def test_classification_float_labels_cast_to_int(Xy):
    X, _, sd = Xy
    y = np.array([0.0, 1.0, 2.0, np.nan, np.nan, np.nan])
    _, y2, _ = check_X_y_domain(X, y, sd, task="classification")
    assert y2.dtype.kind == "i" and y2.tolist() == [0, 1, 2, -1, -1, -1]


# ------------------------------------------------------- inference of sample_domain -------
CASES = {
    "int_classes": np.array([0, 1, 2, 1, -1, -1, -1, 0]),
    "float_regression_nan": np.array([0.3, -1.0, 2.5, 1.7, np.nan, np.nan, 0.1, np.nan]),
    "float_integral_classes": np.array([0.0, 1.0, 1.0, -1.0, -1.0, 2.0, 0.0, -1.0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_inference_rule(name):
    y = CASES[name]
    X = np.random.default_rng(1).normal(size=(y.shape[0], 2))
    _, _, sd = check_X_y_domain(X, y, allow_unlabeled_source=False)
    if name == "float_regression_nan":
        expected = np.where(np.isnan(y), -2, 1)  # -1.0 is a real target value here
    else:
        expected = np.where(y == -1, -2, 1)
    assert sd.tolist() == expected.tolist()
    assert infer_sample_domain(y).tolist() == expected.tolist()


@pytest.mark.parametrize("name", list(CASES))
def test_inference_matches_skada(name):
    sk = pytest.importorskip("skada.utils")
    y = CASES[name]
    X = np.random.default_rng(1).normal(size=(y.shape[0], 2))
    _, _, ours = check_X_y_domain(X, y)
    _, _, theirs = sk.check_X_y_domain(X, y)
    assert ours.tolist() == np.asarray(theirs).astype(int).tolist()


def test_unlabeled_mask_kinds():
    assert unlabeled_mask(np.array([1, -1, 0])).tolist() == [False, True, False]
    assert unlabeled_mask(np.array([0.5, -1.0, 1.5])).tolist() == [False, False, False]
    assert unlabeled_mask(np.array([1, None, 2.0, np.nan, -1], dtype=object)).tolist() == \
        [False, True, False, True, True]
    assert unlabeled_mask(np.array(["a", "b"])).tolist() == [False, False]


# ------------------------------------------------------------------------ helpers -------
def test_pack_and_split_round_trip():
    rng = np.random.default_rng(0)
    A, B, C = rng.normal(size=(3, 2)), rng.normal(size=(2, 2)), rng.normal(size=(4, 2))
    X, y, sd = pack_domains([(A, np.array([0, 1, 0])), (B, np.array([1, 1]))], [C])
    assert sd.tolist() == [1, 1, 1, 2, 2, -3, -3, -3, -3]
    assert y[-4:].tolist() == [-1] * 4
    parts = split_by_domain(X, y, sd)
    assert list(parts) == [1, 2, -3]
    np.testing.assert_array_equal(parts[2][0], B)
    Xs, ys, Xt, yt = split_source_target(X, y, sd)
    np.testing.assert_array_equal(Xt, C)
    assert Xs.shape == (5, 2) and ys.tolist() == [0, 1, 0, 1, 1]


def test_pack_regression_and_semi_supervised_target():
    A, C = np.zeros((2, 1)), np.ones((3, 1))
    X, y, sd = pack_domains([(A, np.array([0.5, 1.5]))], [C], regression=True)
    assert np.isnan(y[2:]).all() and y.dtype == np.float64
    X, y, sd = pack_domains([(A, np.array([0, 1]))], [(C, np.array([1, 0, 1]))])
    assert y.tolist() == [0, 1, 1, 0, 1] and sd.tolist() == [1, 1, -2, -2, -2]
    with pytest.raises(ValueError, match="at least one domain"):
        pack_domains([], [])


def test_check_sample_domain_direct():
    assert check_sample_domain([2, -1, 2], 3).dtype == np.int64
    with pytest.raises(ValueError, match="one domain id per row"):
        check_sample_domain([1, -1], 3)


# ------------------------------------------------------- the unlabeled convention (#14) -------
PM1 = np.array([1, -1, 1, -1, 1, -1, 1, -1])


def _pm1_data():
    X = np.random.default_rng(0).normal(size=(PM1.size, 3))
    return X, PM1.copy()


@pytest.mark.parametrize("labels", [PM1, PM1.astype(float), PM1.astype(str), PM1.astype(object)])
def test_labels_minus_one_plus_one_refused_without_sample_domain(labels):
    X, _ = _pm1_data()
    with pytest.raises(ValueError, match=r"-1 beside a single other class.*re-encode"):
        check_X_y_domain(X, labels, task="classification")


def test_labels_minus_one_plus_one_refused_when_in_source_domains():
    X, y = _pm1_data()
    with pytest.raises(ValueError, match=r"in source domains"):
        check_X_y_domain(X, y, np.ones(y.size, int), task="classification",
                         allow_unlabeled_source=True)


def test_minus_one_only_on_targets_with_sample_domain_is_accepted():
    # the same values, but sample_domain says the -1 rows are an unlabeled target: unambiguous
    X, y = _pm1_data()
    sd = np.where(y == -1, -2, 1)
    _, y2, sd2 = check_X_y_domain(X, y, sd, task="classification")
    assert sd2.tolist() == sd.tolist() and unlabeled_mask(y2).sum() == 4


def test_minus_one_beside_two_classes_is_the_marker():
    X = np.zeros((6, 2))
    y = np.array([0, 1, 0, -1, -1, -1])
    _, _, sd = check_X_y_domain(X, y)
    assert sd.tolist() == [1, 1, 1, -2, -2, -2]


def test_other_negative_class_stays_labeled():
    X = np.zeros((6, 2))
    y = np.array([0, -2, 0, -2, -1, -1])
    _, y2, sd = check_X_y_domain(X, y, task="classification")
    assert sd.tolist() == [1, 1, 1, 1, -2, -2] and sorted(set(y2[:4].tolist())) == [-2, 0]


def test_string_masks_are_unlabeled():
    y = np.array(["cat", "dog", "-1", "", " -1 ", "cat"])
    assert unlabeled_mask(y).tolist() == [False, False, True, True, True, False]
    obj = np.array(["cat", None, np.nan, "", "dog", -1], dtype=object)
    assert unlabeled_mask(obj).tolist() == [False, True, True, True, False, True]
    _, y2, sd = check_X_y_domain(np.zeros((6, 2)), obj, task="classification")
    assert sd.tolist() == [1, -2, -2, -2, 1, -2] and y2.dtype.kind == "U"


def test_object_integer_labels_compared_as_values():
    obj = np.array([1, 1.0, 2, None], dtype=object)
    _, y2, sd = check_X_y_domain(np.zeros((4, 2)), obj, task="classification")
    assert y2.tolist() == [1, 1, 2, -1] and sd.tolist() == [1, 1, 1, -2]


def test_regression_minus_one_is_a_value():
    y = np.array([3.0, -1.0, 2.0, -1.0])
    assert not unlabeled_mask(y, task="regression").any()
    _, _, sd = check_X_y_domain(np.zeros((4, 2)), y, task="regression")
    assert (sd > 0).all()
    y[0] = np.nan
    assert unlabeled_mask(y, task="regression").tolist() == [True, False, False, False]


def test_booleans_are_classes():
    y = np.array([True, False, True])
    assert not unlabeled_mask(y).any()


def test_unlabeled_source_message_explains_the_marker(Xy):
    X, y, sd = Xy
    y = y.copy()
    y[0] = -1
    with pytest.raises(ValueError, match=r"-1 means 'unlabeled'.*LabelEncoder"):
        check_X_y_domain(X, y, sd)


def test_y_shape_flattens_a_column_and_refuses_other_shapes():
    from sklearn.exceptions import DataConversionWarning

    assert check_y_shape((0, 1, -1), 3).tolist() == [0, 1, -1]
    with pytest.warns(DataConversionWarning):
        assert check_y_shape(np.array([[0], [1]]), 2).tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"y must be 1-D, got an array of shape \(2, 2\)"):
        check_y_shape(np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="X has 3 rows but y has 2 entries"):
        check_y_shape([0, 1], 3)


def test_labels_beside_dask_checks_what_is_in_memory_only():
    da = pytest.importorskip("dask.array")
    y, sd = check_labels_beside_dask([0, 1, -1], [1.0, 1.0, -2.0], 3)
    assert y.tolist() == [0, 1, -1] and sd.dtype == np.int64 and sd.tolist() == [1, 1, -2]
    assert check_labels_beside_dask(None, None, 3) == (None, None)
    with pytest.raises(ValueError, match="sample_domain contains 0"):
        check_labels_beside_dask(None, [1, 0, -1], 3)
    with pytest.raises(ValueError, match="X has 3 rows but y has 2 entries"):
        check_labels_beside_dask([0, 1], None, 3)
    # Dask labels pass through unread: their fit checks them block by block
    yd, sdd = da.from_array(np.array([0, 1]), chunks=1), da.from_array(np.array([0, 0]), chunks=1)
    assert check_labels_beside_dask(yd, sdd, 3) == (yd, sdd)
