"""RFTCA / RFSCA on Dask arrays: the same model as numpy input, validation with the same
messages, lazy transform, threaded scheduler and a distributed LocalCluster (issue #18 item 1)."""

import warnings

import numpy as np
import pytest
from _tolerances import EPS, dot_atol, mean_atol, rff_err

from shiftlearn.adaptation import RFSCA, RFTCA, FitMemory
from shiftlearn.kernels import rff_map

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N_FEAT = 60


def _data(n=1500, seed=0):
    """Asymmetric domains: two sources (sizes 2:1), two targets (3:1), unbalanced classes,
    off-centre target blobs; more than the 1,000 rows the median rule samples."""
    rng = np.random.default_rng(seed)
    ns = 2 * n // 3
    X = rng.normal(size=(n, 5))
    X[ns:] = X[ns:] * 1.3 + 0.8
    y = np.r_[rng.choice(3, ns, p=[0.5, 0.3, 0.2]), -np.ones(n - ns, dtype=int)]
    sd = np.r_[np.where(np.arange(ns) % 3 == 0, 2, 1),
               np.where(np.arange(n - ns) % 4 == 0, -4, -3)]
    return X, y, sd


def _same(ref, est, X, Xd, tol=1e-8):
    """Components, eigenvalues and embeddings equal up to the sign of each component."""
    assert est.n_components_ == ref.n_components_
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=tol, atol=tol)
    sign = np.sign(np.sum(ref.components_ * est.components_, axis=0))
    np.testing.assert_allclose(est.components_ * sign, ref.components_, atol=tol)
    Zd = est.transform(Xd)
    assert isinstance(Zd, da.Array)
    np.testing.assert_allclose(Zd.compute() * sign, ref.transform(X), atol=tol)
    # the median rule's squared distances formed in other blocks: c (d + 2) eps (|x|^2 +
    # |y|^2) each, relative to the median (>= sigma^2); another sample moves it by percents
    sq = np.sum(X * X, axis=1)
    rel = 4 * (X.shape[1] + 2) * EPS * 2 * np.max(sq) / ref.sigma_**2
    assert est.sigma_ == pytest.approx(ref.sigma_, rel=rel)
    np.testing.assert_array_equal(est.omega_, ref.omega_)


@pytest.mark.parametrize("Est, kw", [(RFTCA, {"mu": 0.5}), (RFTCA, {"penalty": "coefficients"}),
                                     (RFSCA, {"beta": 0.5, "delta": 2.0}),
                                     (RFSCA, {"supervised": False})])
@pytest.mark.parametrize("y_dask, sd_dask", [(True, True), (False, True), (True, False)])
def test_dask_fit_equals_numpy_fit(Est, kw, y_dask, sd_dask):
    X, y, sd = _data()
    ref = Est(n_components=4, n_features=N_FEAT, random_state=0, **kw).fit(X, y, sd)
    Xd = da.from_array(X, chunks=(400, 5))
    yy = da.from_array(y, chunks=700) if y_dask else y       # other blocks than X's
    ss = da.from_array(sd, chunks=333) if sd_dask else sd
    with dask.config.set(scheduler="threads"):
        est = Est(n_components=4, n_features=N_FEAT, random_state=0, **kw).fit(Xd, yy, ss)
        _same(ref, est, X, Xd)
    if Est is RFSCA:
        assert est.classes_.tolist() == ref.classes_.tolist()
        assert len(est.classes_) == (3 if est.supervised else 0)
        # a mean of features formed in other blocks (rff_err), summed in another order
        Z = rff_map(X, ref.omega_)
        np.testing.assert_allclose(est.mean_, ref.mean_, rtol=0,
                                   atol=mean_atol(Z, err=rff_err(X, ref.omega_)))
        assert est.setting_ == ref.setting_ == "da"


def test_dask_inferred_domains_nan_labels_and_plain_fit():
    X, y, _ = _data(n=1200)
    Xd = da.from_array(X, chunks=(500, 5))
    ref = RFTCA(n_components=3, n_features=N_FEAT, random_state=1).fit(X, y)
    # NaN marks the unlabeled rows as well as -1 (float labels, all integral)
    yf = np.where(y < 0, np.nan, y.astype(float))
    est = RFTCA(n_components=3, n_features=N_FEAT, random_state=1).fit(
        Xd, da.from_array(yf, chunks=300))
    _same(ref, est, X, Xd)
    # fit(X) alone: one unlabeled domain, as numpy input
    ref = RFSCA(n_components=3, beta=0.0, n_features=N_FEAT, random_state=1).fit(X)
    est = RFSCA(n_components=3, beta=0.0, n_features=N_FEAT, random_state=1).fit(Xd)
    _same(ref, est, X, Xd)
    assert est.setting_ == "dg"


def test_dask_block_with_one_class_and_unlabeled_sources_is_not_refused():
    """The -1 rule is global: a block holding one class plus unlabeled *source* rows is fine
    when another block holds a second class (numpy input fits it; a per-block rule would not)."""
    X, y, sd = _data(n=1200)
    y = y.copy()
    y[:400] = np.where(np.arange(400) % 2 == 0, 0, -1)      # block 0: class 0 and -1 rows
    assert np.any((y == -1) & (sd > 0))
    ref = RFSCA(n_components=3, n_features=N_FEAT, random_state=0).fit(X, y, sd)
    Xd = da.from_array(X, chunks=(400, 5))
    est = RFSCA(n_components=3, n_features=N_FEAT, random_state=0).fit(
        Xd, da.from_array(y, chunks=400), da.from_array(sd, chunks=400))
    _same(ref, est, X, Xd)


def _message(fn):
    with pytest.raises((ValueError, TypeError)) as exc:
        fn()
    return str(exc.value)


@pytest.mark.parametrize("case", ["sd_zero", "sd_fraction", "sd_length", "y_length",
                                  "minus_one_plus_one", "minus_one_plus_one_in_source",
                                  "nan_plus_one_in_source", "y_inf", "X_nan",
                                  "dg_with_target"])
def test_dask_bad_input_same_message_as_numpy(case):
    X, y, sd = _data(n=1200)
    X, y, sd = X.copy(), y.copy(), sd.copy()
    Est, kw = RFTCA, {}
    if case == "sd_zero":
        sd[1100] = 0
    elif case == "sd_fraction":
        sd = sd.astype(float)
        sd[900] = 1.5
    elif case == "sd_length":
        sd = sd[:-1]
    elif case == "y_length":
        y = y[:-3]
    elif case == "minus_one_plus_one":              # labels -1/+1, no sample_domain
        y = np.where(np.arange(1200) % 2 == 0, 1, -1)
        sd = None
    elif case == "minus_one_plus_one_in_source":   # the -1 rows sit in source domains
        y = np.where(np.arange(1200) % 2 == 0, 1, -1)
        sd = np.r_[np.ones(1000, int), -np.ones(200, int)]
    elif case == "nan_plus_one_in_source":   # NaN is the -1 marker of float class labels
        y = np.where(np.arange(1200) % 2 == 0, 1.0, np.nan)
        sd = np.r_[np.ones(1000, int), -np.ones(200, int)]
    elif case == "y_inf":
        y = y.astype(float)
        y[5] = np.inf
    elif case == "X_nan":
        X[1150, 2] = np.nan
    elif case == "dg_with_target":
        Est, kw = RFSCA, {"setting": "dg"}
    expected = _message(lambda: Est(n_features=N_FEAT, random_state=0, **kw).fit(X, y, sd))
    dy = da.from_array(y, chunks=500)
    dsd = None if sd is None else da.from_array(sd, chunks=500)
    got = _message(lambda: Est(n_features=N_FEAT, random_state=0, **kw).fit(
        da.from_array(X, chunks=(300, 5)), dy, dsd))
    assert got == expected


def test_dask_minus_one_in_targets_only_is_accepted():
    """Labels 1 and -1 where every -1 row is a target row: -1 plainly means unlabeled."""
    X, _, _ = _data(n=1200)
    y = np.r_[np.ones(800, int), -np.ones(400, int)]
    sd = np.r_[np.ones(800, int), -np.ones(400, int)]
    ref = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(X, y, sd)
    Xd = da.from_array(X, chunks=(300, 5))
    est = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(
        Xd, da.from_array(y, chunks=300), da.from_array(sd, chunks=300))
    _same(ref, est, X, Xd)


def test_dask_refusals_name_the_fix():
    X, y, sd = _data(n=1200)
    Xd = da.from_array(X, chunks=(300, 5))
    with pytest.raises(TypeError, match="LabelEncoder"):
        RFTCA(n_features=N_FEAT).fit(Xd, da.from_array(np.array(["a", "b"] * 600)), sd)
    with pytest.raises(ValueError, match="exact=False"):
        RFTCA(exact=True).fit(Xd, y, sd)
    unknown = Xd[da.from_array(np.arange(1200) % 2 == 0, chunks=300)]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        RFTCA(n_features=N_FEAT).fit(unknown)
    yf = np.where(y < 0, np.nan, y + 0.5)
    yf[0] = -1.0
    with pytest.raises(ValueError, match="non-integral values and -1.0"):
        RFTCA(n_features=N_FEAT).fit(Xd, da.from_array(yf, chunks=300), sd)
    est = RFTCA(n_components=2, n_features=N_FEAT, random_state=0).fit(Xd, y, sd)
    with pytest.raises(ValueError, match="X has 4 features, but RFTCA is expecting 5"):
        est.transform(Xd[:, :4])
    Xbad = X.copy()
    Xbad[700, 0] = np.inf
    lazy = est.transform(da.from_array(Xbad, chunks=(300, 5)))    # lazy: no error yet
    with pytest.raises(ValueError, match="Input X contains infinity"):
        lazy.compute()


def test_dask_small_data_and_memory_give_the_numpy_model():
    """n <= n_features: the in-memory row-space fit on the computed rows, bit for bit; a
    memory is not used for Dask X (same model, nothing stored)."""
    X, y, sd = _data(n=50)
    ref = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(X, y, sd)
    est = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(
        da.from_array(X, chunks=(20, 5)), y, sd)
    np.testing.assert_array_equal(est.components_, ref.components_)
    # keep_stats: no row-space path, so the Dask statistics, equal to numpy input's
    ref = RFTCA(n_components=3, n_features=N_FEAT, random_state=0, keep_stats=True).fit(
        X, y, sd)
    est = RFTCA(n_components=3, n_features=N_FEAT, random_state=0, keep_stats=True).fit(
        da.from_array(X, chunks=(20, 5)), y, sd)
    # the moment of features formed in blocks of 20 rows: gamma_n |Z|^T |Z| plus the
    # features' own round-off (rff_err); a block lost or counted twice is off by ~1e-1
    Z, dZ = rff_map(X, ref.omega_), rff_err(X, ref.omega_)
    np.testing.assert_allclose(est.stats_.total_moment(), ref.stats_.total_moment(), rtol=0,
                               atol=dot_atol(Z.T, Z, Xerr=dZ.T, Yerr=dZ))
    np.testing.assert_array_equal(est.stats_.domains, ref.stats_.domains)
    _same(ref, est, X, da.from_array(X, chunks=(20, 5)))
    # a scalar Dask sample_domain is broadcast, as a numpy one
    ref = RFTCA(n_components=3, n_features=10, random_state=0).fit(X, sample_domain=3)
    est = RFTCA(n_components=3, n_features=10, random_state=0).fit(
        da.from_array(X, chunks=(20, 5)), sample_domain=da.from_array(np.array(3)))
    _same(ref, est, X, da.from_array(X, chunks=(20, 5)))
    X, y, sd = _data(n=1200)
    mem = FitMemory()
    ref = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(X, y, sd)
    Xd = da.from_array(X, chunks=(300, 5))
    est = RFTCA(n_components=3, n_features=N_FEAT, random_state=0, memory=mem).fit(Xd, y, sd)
    _same(ref, est, X, Xd)
    assert len(mem._store) == 0


def test_dask_float32_and_fit_transform():
    X, y, sd = _data(n=1200)
    X32 = X.astype(np.float32)
    ref = RFSCA(n_components=3, n_features=N_FEAT, random_state=0).fit(X32, y, sd)
    Xd = da.from_array(X32, chunks=(300, 5))
    Z = RFSCA(n_components=3, n_features=N_FEAT, random_state=0).fit_transform(Xd, y, sd)
    assert isinstance(Z, da.Array) and Z.dtype == np.float32
    Zr = ref.transform(X32)
    sign = np.sign(np.sum(Zr * Z.compute(), axis=0))
    np.testing.assert_allclose(Z.compute() * sign, Zr, atol=2e-4)   # float32 block sums


def test_dask_column_y_warns_as_numpy():
    from sklearn.exceptions import DataConversionWarning

    X, y, sd = _data(n=1200)
    Xd = da.from_array(X, chunks=(300, 5))
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        RFTCA(n_components=2, n_features=N_FEAT, random_state=0).fit(
            Xd, da.from_array(y[:, None], chunks=(300, 1)), sd)


def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    X, y, sd = _data(n=1200)
    ref = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(X, y, sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # distributed's port/resource notices
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            Xd = da.from_array(X, chunks=(300, 5))
            est = RFTCA(n_components=3, n_features=N_FEAT, random_state=0).fit(
                Xd, da.from_array(y, chunks=300), da.from_array(sd, chunks=300))
            _same(ref, est, X, Xd)


@pytest.mark.parametrize("kw", [{"random_state": 0, "n_features": 200},
                                {"kernel": "laplacian", "bandwidth": "mean", "n_features": 150,
                                 "random_state": 3}])
def test_dask_mmd2_rff_equals_numpy(kw):
    from shiftlearn.kernels import mmd2_rff, rff_weights

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(900, 4)), rng.normal(size=(400, 4)) * 1.2 + 0.3   # 1,300 rows
    ref = mmd2_rff(X, Y, **kw)
    Xd, Yd = da.from_array(X, chunks=(250, 4)), da.from_array(Y, chunks=(150, 2))
    assert mmd2_rff(Xd, Yd, **kw) == pytest.approx(ref, rel=1e-10)
    assert mmd2_rff(Xd, Y, **kw) == pytest.approx(ref, rel=1e-10)       # one side in memory
    om = rff_weights(4, 80, 1.5, random_state=1)
    assert mmd2_rff(Xd, Yd, om, chunk_size=60) == pytest.approx(mmd2_rff(X, Y, om), rel=1e-10)
    assert mmd2_rff(Xd, Yd, om) > 0
    Ybad = Y.copy()
    Ybad[390, 1] = np.nan
    with pytest.raises(ValueError, match="Input Y contains NaN"):
        mmd2_rff(Xd, da.from_array(Ybad, chunks=100), om)
    with pytest.raises(ValueError, match="Input Y contains NaN"):     # in the bandwidth rows
        mmd2_rff(Xd, da.from_array(np.full_like(Y, np.nan), chunks=100), **kw)
    with pytest.raises(ValueError, match="would be ignored"):
        mmd2_rff(Xd, Yd, om, kernel="rbf")
    # each sample named in its own error, on both routes (bandwidth rows, block sums)
    Xbad = X.copy()
    Xbad[5, 0] = np.inf
    Xbad = da.from_array(Xbad, chunks=100)
    with pytest.raises(ValueError, match=r"Input X contains infinity"):
        mmd2_rff(Xbad, Yd, om)
    with pytest.raises(ValueError, match=r"Input X contains infinity"):
        mmd2_rff(Xbad, Yd, **kw)
    with pytest.raises(ValueError, match=r"^X has 4 features but Y has 3\.$"):
        mmd2_rff(Xd, Yd[:, :3], **kw)
    with pytest.raises(ValueError, match=r"^X has 4 features but Omega was drawn for 3\.$"):
        mmd2_rff(Xd, Yd, rff_weights(3, 80, 1.5, random_state=1))
    # a one-row sample: its mean is that row, on both routes
    one = da.from_array(X[:1], chunks=1)
    assert mmd2_rff(one, Yd, om) == pytest.approx(mmd2_rff(X[:1], Y, om), rel=1e-10)


@pytest.mark.parametrize("bandwidth", [1.7, "n_features"])
def test_dask_fit_reads_each_block_of_X_once(bandwidth):
    """A number or the "n_features" rule reads no rows for the bandwidth, and the validation
    reductions read only y and sample_domain: one pass over X's blocks, same model."""
    X, y, sd = _data(n=1200)
    calls = []

    def block(b, block_info=None):
        calls.append(block_info[0]["chunk-location"][0])
        return b

    Xd = da.from_array(X, chunks=(300, 5)).map_blocks(block, dtype=X.dtype)
    ref = RFTCA(n_components=3, n_features=N_FEAT, bandwidth=bandwidth,
                random_state=0).fit(X, y, sd)
    est = RFTCA(n_components=3, n_features=N_FEAT, bandwidth=bandwidth, random_state=0).fit(
        Xd, da.from_array(y, chunks=300), da.from_array(sd, chunks=300))
    assert sorted(calls) == [0, 1, 2, 3]
    _same(ref, est, X, Xd)


def test_docs_dask_example_runs():
    """The Dask example of docs/random_features.md (its lines are +SKIP for installs without
    dask) runs here, with its printed results checked."""
    from _docs_examples import run_skipped_example

    assert run_skipped_example("random_features.md", "## Dask: fit without gathering") >= 12


def test_to_memory_computes_shared_graphs_once():
    """y and sample_domain derived from one Dask graph are computed by one dask.compute."""
    from shiftlearn._dask import to_memory

    calls = []

    def block(b):
        calls.append(1)
        return b

    base = da.from_array(np.arange(8), chunks=4).map_blocks(block, dtype=int)
    lazy_y, lazy_sd = base % 2, base - 10
    calls.clear()                                        # dask's meta probe at graph build
    y, sd, plain = to_memory(lazy_y, lazy_sd, [1, 2])
    np.testing.assert_array_equal(y, np.arange(8) % 2)
    np.testing.assert_array_equal(sd, np.arange(8) - 10)
    assert plain == [1, 2] and len(calls) == 2           # two blocks, read once each
    assert to_memory(None) is None
