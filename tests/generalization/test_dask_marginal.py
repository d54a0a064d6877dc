"""Marginal transfer's random-feature solver on Dask arrays (issue #18 item 1): the squared-hinge
Newton method on per-block sums gives numpy input's model (to float32 round-off; to 1e-10 with
float64 features), lazy predictions, and refusals that name the fix."""

import warnings

import numpy as np
import pytest
from _tolerances import EPS, mean_atol, rff_err

from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import (
    MarginalTransferClassifier,
    MarginalTransferRegressor,
    PoolingClassifier,
)
from shiftlearn.kernels import rff_map

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

SQ = {"solver": "rf", "loss": "squared_hinge", "n_features": 60, "random_state": 0}


def _data(n_tasks=24, n=60, seed=0, classes=2):
    """Ellipse tasks with the rows shuffled across tasks (numpy input sorts them by task; the
    Dask path keeps their order); more than the 1,000 rows a bandwidth rule reads."""
    X, y, sd = make_rotated_ellipses(n_tasks, n, random_state=seed)
    if classes == 3:                                 # a third class: the outer part of class 1
        y = np.where((y == 1) & (np.linalg.norm(X, axis=1) > 0.6), 2, y)
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    return X[perm], y[perm], sd[perm]


def _test_rows():
    X, y, sd = make_rotated_ellipses(4, 250, random_state=7)
    return X, y, sd + 1000                           # unseen test tasks


def _embedding_atol(ref, X, sd):
    """Round-off of the task embeddings ZP_ (task means of the features of X with the
    frequencies W_, or of X itself) summed in other blocks: mean_atol of each task's
    features with their phases' rff_err; and the relative bound it gives sigma_p_, the
    median rule on the embeddings' squared distances (or |inner products|): 2 |z| |dz| per
    pair plus the Gram formula's c (dim + 2) eps |z|^2, over the median (>= sigma_p^2)."""
    if ref.W_ is None:                                      # linear kernel_emb: means of X
        Z, dZ = X, np.zeros_like(X)
    else:
        Z, dZ = rff_map(X, ref.W_), rff_err(X, ref.W_)
    a = max(mean_atol(Z[sd == g], err=dZ[sd == g]) for g in ref.domains_)
    dim = ref.ZP_.shape[1]
    zn = np.max(np.linalg.norm(ref.ZP_, axis=1))
    dD2 = 4 * zn * a * np.sqrt(dim) + 4 * (dim + 2) * EPS * 2 * zn**2
    return a, dD2 / ref.sigma_p_**2


def _compare(ref, est, atol, X, sd):
    Xt, _, sdt = _test_rows()
    Dd = est.decision_function(da.from_array(Xt, chunks=(300, 2)), sdt)
    assert isinstance(Dd, da.Array)                  # lazy
    np.testing.assert_allclose(Dd.compute(), ref.decision_function(Xt, sdt), atol=atol)
    Pd = est.predict(da.from_array(Xt, chunks=(300, 2)), da.from_array(sdt, chunks=500))
    assert isinstance(Pd, da.Array)
    np.testing.assert_array_equal(Pd.compute(), ref.predict(Xt, sdt))
    assert est.sigma_x_ == ref.sigma_x_                     # the same bandwidth rows
    if ref.sigma_p_ is None:                                # pooling: no embeddings
        assert est.sigma_p_ is None and est.ZP_ is None
    else:                                                   # embeddings: the sums' order
        a, rel = _embedding_atol(ref, X, sd)                # (a task's rows mixed: ~1e-2)
        assert est.sigma_p_ == pytest.approx(ref.sigma_p_, rel=rel)
        np.testing.assert_allclose(est.ZP_, ref.ZP_, rtol=0, atol=a)
    np.testing.assert_array_equal(est.V_x_, ref.V_x_)       # drawn from the seed
    assert est.n_iter_ == ref.n_iter_ and est.solver_ == "rf"
    np.testing.assert_array_equal(est.classes_, ref.classes_)


@pytest.mark.parametrize("Est, kw", [
    (MarginalTransferClassifier, {"n_features_emb": 30}),
    (PoolingClassifier, {}),
    (MarginalTransferClassifier, {"kernel_emb": "linear", "weighting": "point"}),
    (MarginalTransferClassifier, {"kernel_x": "laplacian", "C": 10.0}),
])
@pytest.mark.parametrize("labels_dask", [False, True])
def test_dask_marginal_rf_equals_numpy(Est, kw, labels_dask):
    X, y, sd = _data()
    ref = Est(**SQ, **kw).fit(X, y, sd)
    yy, ss = ((da.from_array(y, chunks=500), da.from_array(sd, chunks=700)) if labels_dask
              else (y, sd))
    est = Est(**SQ, **kw).fit(da.from_array(X, chunks=(400, 2)), yy, ss)
    _compare(ref, est, 1e-5, X, sd)                 # float32 features: round-off of the sums


def test_dask_marginal_rf_float64_features_agree_to_1e10(monkeypatch):
    """With float64 features the only difference left is the order of the sums."""
    import shiftlearn.generalization._marginal_base as base

    monkeypatch.setattr(base, "_RF_DTYPE", np.float64)
    X, y, sd = _data(classes=3)
    ref = MarginalTransferClassifier(**SQ).fit(X, y, sd)
    est = MarginalTransferClassifier(**SQ).fit(da.from_array(X, chunks=(333, 2)), y, sd)
    _compare(ref, est, 1e-10, X, sd)
    np.testing.assert_allclose(est.linear_model_.coef_, ref.linear_model_.coef_, rtol=1e-9,
                               atol=1e-10)


def test_dask_marginal_rf_multiclass_targets_left_out_and_float32():
    X, y, sd = _data(classes=3)
    sd = sd.copy()
    sd[:200] = -9                                    # a target domain: left out with a warning
    y = y.copy()
    y[:200] = -1
    with pytest.warns(UserWarning, match="left out"):
        ref = MarginalTransferClassifier(**SQ).fit(X, y, sd)
    with pytest.warns(UserWarning, match="left out"):
        est = MarginalTransferClassifier(**SQ).fit(da.from_array(X, chunks=(400, 2)), y, sd)
    assert est.linear_model_.coef_.shape == (3, 120)
    _compare(ref, est, 1e-5, X, sd)
    X32 = X.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref32 = MarginalTransferClassifier(**SQ).fit(X32, y, sd)
        est32 = MarginalTransferClassifier(**SQ).fit(da.from_array(X32, chunks=(400, 2)), y, sd)
    Xt, _, sdt = _test_rows()
    np.testing.assert_allclose(est32.decision_function(da.from_array(Xt, chunks=300),
                                                       sdt).compute(),
                               ref32.decision_function(Xt, sdt), atol=1e-4)


def test_dask_marginal_auto_picks_rf_and_score_works():
    X, y, sd = _data()
    kw = {k: v for k, v in SQ.items() if k != "solver"}
    est = MarginalTransferClassifier(solver="auto", **kw).fit(da.from_array(X, chunks=500), y,
                                                                sd)
    assert est.solver_ == "rf"
    Xt, yt, sdt = _test_rows()
    assert est.score(da.from_array(Xt, chunks=500), yt, sdt) > 0.8


def test_dask_marginal_refusals_name_the_fix():
    X, y, sd = _data(n_tasks=6, n=40)
    Xd = da.from_array(X, chunks=(100, 2))
    with pytest.raises(ValueError, match=r"loss='hinge'\) cannot fit a Dask array.*"
                                         r"loss='squared_hinge'"):
        MarginalTransferClassifier(solver="rf").fit(Xd, y, sd)
    with pytest.raises(ValueError, match=r"solver='exact'\) cannot fit a Dask array"):
        MarginalTransferClassifier(solver="exact", loss="squared_hinge").fit(Xd, y, sd)
    with pytest.raises(ValueError, match="needs the random-feature solver"):
        MarginalTransferClassifier(solver="auto", loss="squared_hinge",
                                   kernel_x="linear").fit(Xd, y, sd)
    with pytest.raises(ValueError, match="MarginalTransferRegressor cannot fit a Dask array"):
        MarginalTransferRegressor(solver="rf").fit(Xd, y.astype(float), sd)
    with pytest.raises(ValueError, match="The 'C' parameter of MarginalTransferClassifier"):
        MarginalTransferClassifier(C=-1.0, **{k: v for k, v in SQ.items()}).fit(Xd, y, sd)
    bad = X.copy()
    bad[130, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        MarginalTransferClassifier(**SQ).fit(da.from_array(bad, chunks=(100, 2)), y, sd)
    with pytest.raises(ValueError, match="min_task_size"):
        MarginalTransferClassifier(**SQ).fit(Xd, y, np.r_[sd[:-1], 99])
    with pytest.raises(ValueError, match="X has 240 rows but y has 239"):
        MarginalTransferClassifier(**SQ).fit(Xd, y[:-1], sd)
    with pytest.raises(ValueError, match=r"n_features=10000000 .* needs about"):
        MarginalTransferClassifier(**{**SQ, "n_features": 10**7}).fit(Xd, y, sd)
    exact = MarginalTransferClassifier(solver="exact").fit(X, y, sd)
    with pytest.raises(ValueError, match="fitted with solver='exact'.*X.compute"):
        exact.predict(Xd, sd + 100)
    rf = MarginalTransferClassifier(**SQ).fit(Xd, y, sd)
    with pytest.raises(ValueError, match="X has 3 features, but MarginalTransferClassifier is "
                                         "expecting 2"):
        rf.predict(da.from_array(np.c_[X, X[:, :1]], chunks=100), sd + 100)


def test_dask_marginal_rf_regressor_fitted_in_memory_predicts_lazily():
    X, y, sd = _data(n_tasks=10, n=50)
    reg = MarginalTransferRegressor(solver="rf", n_features=50, random_state=0).fit(
        X, y.astype(float), sd)
    Xt, _, sdt = _test_rows()
    got = reg.predict(da.from_array(Xt, chunks=300), sdt)
    assert isinstance(got, da.Array)
    # chunks form the product features' phases [x / s_x, z_P / s_p] [V_x; V_p] in other BLAS
    # calls (gamma_d |phase| / sqrt(N) per feature, |z| <= 1 / sqrt(N)), then the 2N-term
    # dot with the coefficients: (max dz + c 2N eps / sqrt(N)) sum|coef| (a chunk's rows
    # shifted or its task embedded from the chunk alone is off by O(1e-1))
    N = reg.V_x_.shape[1]
    phase = (np.max(np.abs(Xt) / reg.sigma_x_ @ np.abs(reg.V_x_))
             + np.max(np.abs(reg.ZP_) / reg.sigma_p_ @ np.abs(reg.V_p_)))
    dz = 4 * (reg.V_x_.shape[0] + reg.V_p_.shape[0]) * EPS * (1 + phase) / np.sqrt(N)
    atol = (dz + 4 * 2 * N * EPS / np.sqrt(N)) * np.abs(reg.linear_model_.coef_).sum()
    np.testing.assert_allclose(got.compute(), reg.predict(Xt, sdt), rtol=0, atol=atol)


def test_dask_marginal_local_cluster():
    distributed = pytest.importorskip("distributed")
    X, y, sd = _data(n_tasks=12, n=50)
    ref = MarginalTransferClassifier(**SQ).fit(X, y, sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # distributed's port/resource notices
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            est = MarginalTransferClassifier(**SQ).fit(da.from_array(X, chunks=(200, 2)),
                                                       da.from_array(y, chunks=200), sd)
            Xt, _, sdt = _test_rows()
            got = est.decision_function(da.from_array(Xt, chunks=300), sdt).compute()
    np.testing.assert_allclose(got, ref.decision_function(Xt, sdt), atol=1e-5)


def test_docs_dask_marginal_example_runs():
    """The Dask example of docs/marginal_transfer.md (+SKIP lines for installs without dask)
    runs here, with its printed results checked."""
    from _docs_examples import run_skipped_example

    assert run_skipped_example("marginal_transfer.md", "### Data beyond memory: Dask") >= 10


def test_dask_marginal_reads_the_former_sigma_names_with_a_warning():
    X, y, sd = _data()
    ref = MarginalTransferClassifier(**SQ, bandwidth_x=0.5, bandwidth_p="2*median").fit(X, y, sd)
    with pytest.warns(FutureWarning, match="sigma_p is renamed bandwidth_p"):
        est = MarginalTransferClassifier(**SQ, sigma_x=0.5, sigma_p="2*median").fit(
            da.from_array(X, chunks=(400, 2)), y, sd)
    assert est.sigma_x_ == ref.sigma_x_ == 0.5
    _compare(ref, est, 1e-5, X, sd)
