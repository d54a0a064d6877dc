"""Input validation (``shiftlearn._validation``) and the domain helpers (``shiftlearn.domains``)."""

import numpy as np
import pytest

from shiftlearn._validation import (
    check_labels_beside_dask,
    check_magnitudes,
    check_sample_domain,
    check_X,
    check_X_y_domain,
    check_y_shape,
    infer_sample_domain,
    learns_labels,
    read_class_labels,
    require_y,
    scored_rows,
    scoring_domains,
    takes_sample_domain,
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


# ------------------------------------------------------------------------- edge cases
# Edges of shiftlearn._validation (issue #23, rows 3 and 8): another negative class beside the
# unlabeled marker, and "valid input is accepted" beside every "invalid input is refused".
#
# The data are unambiguous under the unlabeled convention: integer classes {0, 1, -2} with -1
# rows, never labels {-1, +1} (which the convention refuses on purpose).


def _three_classes_and_unlabeled():
    # classes 0, 1 and -2 (a negative class that is NOT the marker), then three -1 rows
    y = np.array([0, 1, -2, -2, 1, 0, -2, -1, -1, -1])
    X = np.arange(2 * y.size, dtype=float).reshape(y.size, 2)
    return X, y


# ------------------------------------------------------------------ row 3: only -1 is the marker
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_another_negative_class_is_labeled(dtype):
    _, y = _three_classes_and_unlabeled()
    y = y.astype(dtype)
    assert unlabeled_mask(y).tolist() == [False] * 7 + [True] * 3
    assert infer_sample_domain(y).tolist() == [1] * 7 + [-2] * 3


def test_class_minus_two_survives_validation_with_and_without_sample_domain():
    X, y = _three_classes_and_unlabeled()
    _, y2, sd = check_X_y_domain(X, y, task="classification")
    assert sd.tolist() == [1] * 7 + [-2] * 3
    assert sorted(set(y2[sd > 0].tolist())) == [-2, 0, 1]
    # the same rows with an explicit sample_domain (labeled rows in two sources)
    sd_in = np.array([1, 1, 1, 2, 2, 2, 2, -3, -3, -3])
    _, y3, sd3 = check_X_y_domain(X, y, sd_in, task="classification")
    assert sd3.tolist() == sd_in.tolist() and (y3 == -2).sum() == 3


def test_class_minus_two_in_a_source_is_not_an_unlabeled_source_row():
    """If -2 were read as unlabeled, this would raise 'Source domain(s) ... unlabeled rows'."""
    X, y = _three_classes_and_unlabeled()
    sd = np.array([1, 1, 1, 1, 1, 1, 1, -2, -2, -2])
    check_X_y_domain(X, y, sd, task="classification", allow_unlabeled_source=False)
    y_bad = y.copy()
    y_bad[0] = -1                       # a real unlabeled row in source 1 is still refused
    with pytest.raises(ValueError, match=r"Source domain\(s\) \[1\] contain unlabeled rows"):
        check_X_y_domain(X, y_bad, sd, allow_unlabeled_source=False)


def test_sca_keeps_the_negative_class():
    from shiftlearn.adaptation import SCA

    rng = np.random.default_rng(0)
    y = np.r_[np.repeat([0, 1, -2], 8), np.full(10, -1)]
    X = rng.normal(size=(y.size, 3)) + np.r_[np.repeat([0, 2, 4], 8), np.zeros(10)][:, None]
    sd = np.r_[np.ones(24, int), np.full(10, -2)]
    sca = SCA(n_components=2, beta=0.5, eigen_solver="dense").fit(X, y, sd)
    assert sca.classes_.tolist() == [-2, 0, 1]


# --------------------------------------------------- row 8: allow_target_labels, both sides
def _da(sd_target=-3):
    y = np.array([0, 1, 0, 1, 0, -1, -1, -1])
    sd = np.array([1, 1, 2, 2, 2, sd_target, sd_target, sd_target])
    return np.zeros((8, 2)), y, sd


def test_allow_target_labels_false_accepts_valid_input():
    """Labeled sources and unlabeled targets: exactly what the flag is for, accepted."""
    X, y, sd = _da()
    X2, y2, sd2 = check_X_y_domain(X, y, sd, allow_target_labels=False)
    assert y2.tolist() == y.tolist() and sd2.tolist() == sd.tolist()
    # several target domains, all unlabeled, also accepted
    sd_multi = sd.copy()
    sd_multi[-1] = -4
    check_X_y_domain(X, y, sd_multi, allow_target_labels=False)


def test_allow_target_labels_false_refuses_a_labeled_target_row_naming_the_target():
    X, y, sd = _da()
    y = y.copy()
    y[6] = 1                            # one labeled row in target domain -3
    with pytest.raises(ValueError, match=r"Target domain\(s\) \[-3\] are declared unlabeled") as e:
        check_X_y_domain(X, y, sd, allow_target_labels=False)
    msg = str(e.value)
    assert "[1]" not in msg and "[2]" not in msg and "[1, 2]" not in msg
    # two target domains, only one labeled: the message names only that one
    sd2 = sd.copy()
    sd2[5] = -4
    with pytest.raises(ValueError, match=r"Target domain\(s\) \[-3\] are"):
        check_X_y_domain(X, y, sd2, allow_target_labels=False)
    # the default accepts it (semi-supervised DA) and keeps the label
    _, y3, _ = check_X_y_domain(X, y, sd)
    assert y3[6] == 1


# --------------------------------------------------- boundaries of the other switches
def test_min_samples_per_domain_boundary():
    X, y, sd = _da()                    # domain sizes: 1 -> 2, 2 -> 3, -3 -> 3
    check_X_y_domain(X, y, sd, min_samples_per_domain=2)
    with pytest.raises(ValueError, match=r"Domain\(s\) \[1\] have fewer than 3 rows"):
        check_X_y_domain(X, y, sd, min_samples_per_domain=3)


def test_require_target_both_sides():
    X, y, sd = _da()
    check_X_y_domain(X, y, sd, require_target=True)
    with pytest.raises(ValueError, match="No target rows"):
        check_X_y_domain(X[:5], y[:5], sd[:5], require_target=True)
    check_X_y_domain(X[:5], y[:5], sd[:5])


def test_require_source_both_sides():
    X, y, sd = _da()
    with pytest.raises(ValueError, match="No source rows"):
        check_X_y_domain(X[5:], y[5:], sd[5:])
    _, _, sd2 = check_X_y_domain(X[5:], y[5:], sd[5:], require_source=False)
    assert sd2.tolist() == [-3, -3, -3]


def test_no_labeled_row_both_sides():
    X, y, sd = _da()
    with pytest.raises(ValueError, match="no labeled row"):
        check_X_y_domain(X, np.full(8, -1), sd, allow_unlabeled_source=True)
    # two labeled rows (two classes, so -1 is plainly the marker) are enough
    y1 = np.full(8, -1)
    y1[:2] = [0, 1]
    check_X_y_domain(X, y1, sd, allow_unlabeled_source=True)


# --------------------------------------------------- from the mutation run (tests/..., #23)
def test_check_X_records_in_fit_and_checks_afterwards():
    from sklearn.base import BaseEstimator

    from shiftlearn._validation import check_X

    class Est(BaseEstimator):
        pass

    est = Est()
    Xi = np.arange(6).reshape(3, 2)                      # integers become float64
    out = check_X(Xi, estimator=est, reset=True)
    assert out.dtype == np.float64 and est.n_features_in_ == 2
    check_X(np.zeros((4, 2)), estimator=est)             # default: check, do not record
    with pytest.raises(ValueError, match="features"):
        check_X(np.zeros((4, 3)), estimator=est)
    assert est.n_features_in_ == 2
    with pytest.raises(ValueError, match="NaN"):
        check_X(np.array([[np.nan, 1.0]]), estimator=est)
    # through check_X_y_domain: recorded in fit
    est2 = Est()
    check_X_y_domain(np.zeros((4, 5)), np.array([0, 1, 0, 1]), estimator=est2)
    assert est2.n_features_in_ == 5


def test_check_X_without_estimator_dtype_rows_and_name():
    from shiftlearn._validation import check_X

    assert check_X(np.arange(4).reshape(2, 2)).dtype == np.float64
    assert check_X(np.ones((2, 2), np.float32)).dtype == np.float32
    assert check_X(np.ones((1, 2))).shape == (1, 2)      # one row is enough by default
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        check_X(np.ones((1, 2)), ensure_min_samples=2)
    bad = np.array([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="Input X contains NaN"):
        check_X(bad)
    with pytest.raises(ValueError, match="Input Y contains NaN"):
        check_X(bad, name="Y")


def test_column_vector_y_warns_as_scikit_learn():
    from sklearn.exceptions import DataConversionWarning

    with pytest.warns(DataConversionWarning):
        _, y2, _ = check_X_y_domain(np.zeros((3, 2)), np.array([[0], [1], [0]]))
    assert y2.shape == (3,)


def test_regression_targets_keep_minus_one_and_report_the_regression_mask():
    from shiftlearn._validation import check_unlabeled_convention

    y = np.array([3.0, -1.0, 3.0])
    X = np.zeros((3, 2))
    _, y2, sd = check_X_y_domain(X, y, task="regression")       # -1.0 is a value: accepted
    assert sd.tolist() == [1, 1, 1]
    assert check_unlabeled_convention(y, task="regression").tolist() == [False, False, False]
    assert unlabeled_mask(np.array([1.0, None], dtype=object), task="regression").tolist() == [
        False, True]
    for y_int in (np.array([1, -1]), np.array([True, False])):
        m = unlabeled_mask(y_int, task="regression")
        assert m.dtype == bool and not m.any()


def test_regression_targets_of_plus_and_minus_one_are_accepted_with_sample_domain():
    # +-1 regression targets (e.g. a signed response) read as classes would be "-1 beside a
    # single class" and be refused; task="regression" must reach the convention check on the
    # sample_domain path too, where -1.0 rows sit in a source domain
    from shiftlearn._validation import check_unlabeled_convention

    y = np.array([-1.0, 1.0, -1.0, 1.0, 0.5, 0.25])
    X = np.zeros((6, 2))
    sd = np.array([1, 1, 2, 2, -3, -3])
    _, y2, sd2 = check_X_y_domain(X, y, sd, task="regression")
    assert y2.tolist() == y.tolist() and sd2.tolist() == sd.tolist()
    y_pm = np.array([-1.0, 1.0, -1.0, 1.0])
    _, _, sd3 = check_X_y_domain(np.zeros((4, 2)), y_pm, np.array([1, 1, -2, -2]),
                                 task="regression")
    assert sd3.tolist() == [1, 1, -2, -2]
    # the same labels as classes, -1 rows in a source domain: refused (the rule is not lost)
    with pytest.raises(ValueError, match="single other class"):
        check_X_y_domain(np.zeros((4, 2)), y_pm, np.array([1, 1, -2, -2]))
    assert not check_unlabeled_convention(y_pm, np.array([1, 1, 1, 1]),
                                          task="regression").any()


def test_mask_dtypes_and_scalars():
    for y in (np.array([0.5, 1.5]), np.array([True, False]), np.array([1, 2]),
              np.array(["a", ""]), np.array([1.0, np.nan])):
        assert unlabeled_mask(y).dtype == bool
    assert unlabeled_mask(np.int64(-1)).tolist() == [True]
    assert unlabeled_mask(np.float64(2.0)).shape == (1,)


def test_object_labels_missing_values_bytes_and_booleans():
    import pandas as pd

    obj = np.array(["a", pd.NA, b"-1", b"", True, False, None, b"x"], dtype=object)
    assert unlabeled_mask(obj).tolist() == [False, True, True, True, False, False, True, False]


def test_only_the_minus_one_marker_is_ambiguous():
    from shiftlearn._validation import check_unlabeled_convention

    # NaN / None / "" mark unlabeled rows unambiguously: one class beside them is fine
    for y in (np.array([2.0, 2.0, np.nan]), np.array(["cat", "", None], dtype=object),
              np.array(["cat", np.nan, np.nan], dtype=object)):
        check_unlabeled_convention(y)
    # -1 beside one class is refused, also as an object float or among mixed types
    for y in (np.array([1, -1, -1], dtype=object), np.array([1.0, -1.0, -1.0], dtype=object),
              np.array(["a", "a", -1], dtype=object)):
        with pytest.raises(ValueError, match="beside a single other class"):
            check_unlabeled_convention(y)
    # two classes beside -1: the marker, whatever the types
    assert check_unlabeled_convention(np.array(["a", 1, -1], dtype=object)).tolist() == [
        False, False, True]
    assert check_unlabeled_convention(np.array(["a", "b", -1], dtype=object)).tolist() == [
        False, False, True]
    # the message says where the -1 rows are
    with pytest.raises(ValueError, match=r"\(skada's convention\), which would leave one "
                                         r"class"):
        check_unlabeled_convention(np.array(["a", "a", -1], dtype=object))
    with pytest.raises(ValueError, match=r"\(skada's convention\) \(in source domains, which "
                                         r"must be labeled\), which would"):
        check_unlabeled_convention(np.array([1, -1, 1]), np.array([1, 1, -2]))
    with pytest.raises(ValueError, match=r"single other class \('a'\)"):
        check_unlabeled_convention(np.array(["a", "a", -1], dtype=object))
    with pytest.raises(ValueError, match=r"single other class \(1\)"):
        check_unlabeled_convention(np.array([1, -1, 1]))


def test_object_string_labels_are_kept_as_values():
    obj = np.array(["cat", None, "dog", "", "cat"], dtype=object)
    _, y2, sd = check_X_y_domain(np.zeros((5, 2)), obj, task="classification")
    assert y2.tolist() == ["cat", "", "dog", "", "cat"]
    assert sd.tolist() == [1, -2, 1, -2, 1]


# ----------------------------------------------------- feature magnitudes (check_magnitudes) --
def test_magnitude_limit_names_the_column_its_largest_value_and_the_default_name():
    X = np.zeros((4, 3))
    X[2, 1] = -3e60          # the column's largest magnitude, negative
    X[0, 1] = 2e55
    with pytest.raises(ValueError, match=r"^X: column 1 holds -3e\+60, beyond \+-1e\+50"):
        check_magnitudes(X)
    with pytest.raises(ValueError, match=r"^Z: column 1 holds"):
        check_magnitudes(X, "Z")


def test_magnitude_limit_reports_the_first_column_beyond_it_not_a_row():
    X = np.zeros((5, 4))
    X[1, 3] = 1e51
    X[4, 2] = 1e52           # row 4 < 5 rows; column 2 comes before column 3
    with pytest.raises(ValueError, match=r"column 2 holds 1e\+52"):
        check_magnitudes(X)


def test_magnitude_limit_itself_is_accepted_and_names_columns_by_feature_name():
    from shiftlearn._validation import MAX_MAGNITUDE

    check_magnitudes(np.full((2, 2), -MAX_MAGNITUDE))        # the limit itself is allowed
    X = np.array([[1.0, 2e51], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"column 'b' holds 2e\+51"):
        check_magnitudes(X, "X", np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"column 1 holds"):  # too few names: the index
        check_magnitudes(X, "X", np.array(["a"]))
    with pytest.raises(ValueError, match=r"column 1 holds"):
        check_magnitudes(X, "X", None)


def test_magnitude_check_skips_empty_and_float32_arrays():
    check_magnitudes(np.empty((0, 3)))
    check_magnitudes(np.full((2, 2), np.finfo(np.float32).max, dtype=np.float32))


def test_check_X_names_a_dataframe_column_beyond_the_limit():
    pd = pytest.importorskip("pandas")
    from sklearn.base import BaseEstimator

    df = pd.DataFrame({"age": [1.0, 2.0], "income": [3.0, 5e60]})
    with pytest.raises(ValueError, match=r"^X: column 'income' holds 5e\+60"):
        check_X(df, estimator=BaseEstimator(), reset=True)


def test_check_X_refuses_another_namespace_naming_the_estimator_or_the_function(monkeypatch):
    xps = pytest.importorskip("array_api_strict")
    import sklearn
    from sklearn.base import BaseEstimator

    class Probe(BaseEstimator):
        pass

    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    X = xps.asarray(np.ones((3, 2)))
    with sklearn.config_context(array_api_dispatch=True):
        with pytest.raises(ValueError, match=r"^Probe computes with NumPy only"):
            check_X(X, estimator=Probe(), reset=True)
        with pytest.raises(ValueError, match=r"^This function computes with NumPy only"):
            check_X(X)


# -------------------------------------------------------- labels as fit reads them ----------
def test_object_labels_are_read_by_their_labeled_values():
    obj = lambda *v: np.array(v, dtype=object)  # noqa: E731
    out = read_class_labels(obj(True, None, False, np.bool_(True)))
    assert out.dtype == np.int64 and out.tolist() == [1, -1, 0, 1]
    out = read_class_labels(obj(3, None, 7.0, np.nan))
    assert out.dtype == np.int64 and out.tolist() == [3, -1, 7, -1]
    out = read_class_labels(obj(0.5, None, 2))
    assert out.dtype == np.float64 and out[0] == 0.5 and np.isnan(out[1]) and out[2] == 2.0
    out = read_class_labels(obj(b"cat", None, "dog", ""))
    assert out.tolist() == ["cat", "", "dog", ""]
    assert read_class_labels(np.array([1.0, np.nan, 2.0])).tolist() == [1, -1, 2]


def test_object_labels_of_one_other_type_are_returned_unchanged():
    y = np.empty(3, dtype=object)
    y[:] = [(1,), (2,), None]        # tuples: not a label type, left to the caller
    assert read_class_labels(y) is y


def test_labels_of_several_types_are_refused_naming_the_types_and_examples():
    y = np.array([1, "a", None, 2, "b"], dtype=object)
    with pytest.raises(ValueError, match=r"several types \(int, str\), e\.g\. 1, 'a': give"):
        read_class_labels(y)


def test_dates_and_durations_are_unlabeled_where_NaT():
    d = np.array(["2024-01-01", "NaT", "2024-03-01"], dtype="datetime64[D]")
    t = np.array([1, "NaT", 3], dtype="timedelta64[s]")
    for y in (d, t):
        assert unlabeled_mask(y).tolist() == [False, True, False]
        assert unlabeled_mask(y, task="regression").tolist() == [False, True, False]


# ------------------------------------------------------------ score(X, y)'s rows ------------
def test_scored_rows_reads_class_labels_by_default_and_a_column_as_a_vector():
    keep, y = scored_rows(np.array([[1.0], [2.0], [np.nan]]))
    assert keep.tolist() == [True, True, False]
    assert y.dtype == np.int64 and y.tolist() == [1, 2, -1]
    keep, y = scored_rows(np.array([[0, 1], [1, -1]]))       # two columns: left as they are
    assert y.shape == (2, 2)


def test_scored_rows_for_regression_keeps_minus_one_and_the_float_targets():
    keep, y = scored_rows(np.array([3.0, -1.0, np.nan]), task="regression")
    assert keep.tolist() == [True, True, False]
    assert y.dtype == np.float64 and y[:2].tolist() == [3.0, -1.0]
    keep, _ = scored_rows(np.array([3.0, -1.0, 2.0]), task="regression")
    assert keep.tolist() == [True, True, True]


def test_scoring_domains_from_the_unlabeled_rows_or_none():
    assert scoring_domains(np.array([0, 1]), None) is None
    assert scoring_domains(np.array([0, -1]), None).tolist() == [1, -2]
    assert scoring_domains(np.array([0, 1]), [2, -3]).tolist() == [2, -3]


def test_require_y_names_the_estimator_by_string_or_type():
    from shiftlearn import TCA

    require_y([0], TCA(), ".")
    with pytest.raises(ValueError, match=r"^TCA requires y to be passed, but the target y is "
                                         r"None: give it\.$"):
        require_y(None, TCA(), ": give it.")
    with pytest.raises(ValueError, match=r"^Mine requires y"):
        require_y(None, "Mine", ".")


# ------------------------------------------------------------ pipeline steps -----------------
def test_takes_sample_domain_is_false_without_the_method_or_a_signature():
    from shiftlearn import TCA

    class NoSignature:
        fit = max             # a builtin: inspect.signature raises ValueError

    assert takes_sample_domain(TCA())
    assert not takes_sample_domain(object())
    assert not takes_sample_domain(NoSignature())
    assert not takes_sample_domain(TCA(), "predict")


def test_learns_labels_reads_strings_none_and_a_nested_pipelines_last_step():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    assert not learns_labels(None) and not learns_labels("passthrough")
    assert learns_labels(LogisticRegression())
    assert learns_labels(make_pipeline(StandardScaler(), StandardScaler(), LogisticRegression()))
    assert not learns_labels(make_pipeline(StandardScaler(), LogisticRegression(),
                                           StandardScaler()))


def _ten_unlabeled_rows():
    """30 rows of 3 features: 20 labeled (classes 0, 1), then 10 marked unlabeled (-1)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    return X, np.r_[rng.integers(0, 2, 20), -np.ones(10, dtype=int)]


def test_plain_pipeline_warning_counts_the_unlabeled_rows_and_names_both_steps():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from shiftlearn import TCA

    X, y = _ten_unlabeled_rows()
    with pytest.warns(UserWarning, match=r"^TCA was fitted inside a scikit-learn Pipeline on "
                                         r"10 unlabeled row\(s\).*'logisticregression' "
                                         r"\(LogisticRegression\)"):
        make_pipeline(TCA(n_components=2), LogisticRegression()).fit(X, y)


def test_plain_pipeline_warning_only_for_later_steps_and_plain_pipelines():
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.pipeline import Pipeline, make_pipeline

    from shiftlearn import TCA

    class DomainPipeline(Pipeline):
        def fit(self, X, y=None, sample_domain=None, **params):
            return super().fit(X, y, **params)

    X, y = _ten_unlabeled_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # a step before the adapter that predicts (KMeans) is not a later learner
        make_pipeline(KMeans(2, n_init=1, random_state=0), TCA(n_components=2),
                      "passthrough").fit(X, y)
        DomainPipeline([("tca", TCA(n_components=2)),
                        ("knn", KMeans(2, n_init=1, random_state=0))]).fit(X, y)


def test_bytes_labels_are_decoded_as_utf8():
    y = np.array(["café".encode(), None, b"tea"], dtype=object)
    assert read_class_labels(y).tolist() == ["café", "", "tea"]


def test_plain_pipeline_warning_reaches_an_adapter_fitted_inside_another_step():
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from shiftlearn import TCA

    class Wrapper(TransformerMixin, BaseEstimator):      # fits its adapter in a _fit of its own
        def fit(self, X, y=None):
            return self._fit(X, y)

        def _fit(self, X, y):
            self.tca_ = TCA(n_components=2).fit(X, y)
            return self

        def transform(self, X):
            return self.tca_.transform(X)

    X, y = _ten_unlabeled_rows()
    with pytest.warns(UserWarning, match=r"^TCA was fitted inside a scikit-learn Pipeline"):
        make_pipeline(Wrapper(), LogisticRegression()).fit(X, y)


def test_plain_pipeline_warning_points_at_the_users_line():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from shiftlearn import TCA

    X, y = _ten_unlabeled_rows()
    pipe = make_pipeline(TCA(n_components=2), LogisticRegression())
    with pytest.warns(UserWarning, match=r"inside a scikit-learn Pipeline") as rec:
        pipe.fit(X, y)
    assert rec[0].filename == __file__


def test_magnitudes_beyond_the_limit_are_found_whatever_else_the_array_holds():
    """The limit holds on either sign, beside NaN (which is no magnitude), in any column; the
    message names the column and its value. Up to the limit nothing is refused."""
    from shiftlearn._validation import MAX_MAGNITUDE, check_magnitudes

    check_magnitudes(np.array([[MAX_MAGNITUDE, -MAX_MAGNITUDE], [np.nan, 0.0]]))
    for bad, col in (([[1.0, 2e60]], "1"), ([[-3e55, 1.0]], "0"),
                     ([[np.nan, 1.0], [0.0, -5e51]], "1")):
        with pytest.raises(ValueError, match=rf"column {col} holds -?\d"):
            check_magnitudes(np.array(bad))
    with pytest.raises(ValueError, match="column 'b' holds 2e\\+60"):
        check_magnitudes(np.array([[1.0, 2e60]]), feature_names=np.array(["a", "b"]))


def test_a_list_of_strings_with_nan_keeps_nan_unlabeled():
    """numpy turns NaN beside strings into the string 'nan'; a Python list of class names with
    NaN for the unlabeled target rows must still read those rows as unlabeled, in the
    validation and in a fit (the same as None, or a pandas Series)."""
    from sklearn.linear_model import LogisticRegression

    from shiftlearn import CORAL, make_da_pipeline
    from shiftlearn._validation import label_array

    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 2))
    sd = [1, 1, 1, 1, -2, -2, -2, -2]
    y = ["a", "b", "a", "b", np.nan, np.nan, None, np.nan]
    assert unlabeled_mask(label_array(y)).tolist() == [False] * 4 + [True] * 4
    _, yo, _ = check_X_y_domain(X, y, sd, task="classification")
    assert unlabeled_mask(yo).tolist() == [False] * 4 + [True] * 4
    y_nan = ["a", "b", "a", "b", np.nan, np.nan, np.nan, np.nan]
    _, yo, _ = check_X_y_domain(X, y_nan, sd, task="classification")
    assert unlabeled_mask(yo).tolist() == [False] * 4 + [True] * 4
    pipe = make_da_pipeline(CORAL(), LogisticRegression()).fit(X, y_nan, sample_domain=sd)
    assert sorted(pipe.classes_.tolist()) == ["a", "b"]
    # strings and numbers stay strings (numpy's reading), a NaN in a float list stays NaN
    assert label_array(["a", 1]).tolist() == ["a", "1"]
    assert np.isnan(label_array([1.0, np.nan])[1])


@pytest.mark.parametrize("adapter", ["CORAL", "TCA"])
def test_labels_minus_one_plus_one_in_a_plain_pipeline_raise_without_the_marker_warning(adapter):
    """Labels -1/+1 in a plain scikit-learn Pipeline: the convention error, and not first a
    warning that 'unlabeled rows' will be learnt as a class (they are not unlabeled rows)."""
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import shiftlearn

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = np.where(np.arange(20) % 2 == 0, 1, -1)
    pipe = make_pipeline(getattr(shiftlearn, adapter)(), LogisticRegression())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="beside a single other class"):
            pipe.fit(X, y)
    assert not [w for w in caught if "unlabeled row" in str(w.message)]
