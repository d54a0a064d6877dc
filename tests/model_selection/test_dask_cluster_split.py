"""ClusterSplit on Dask arrays (issue #18 item 1): the same split as numpy input, kernel
products per block (X never gathered, read twice per Lloyd iteration), refusals with the fix."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score

from shiftlearn.adaptation import RFTCA
from shiftlearn.model_selection import ClusterSplit

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


def _data(n=1600, seed=0):
    """Two labeled source domains (3:1) with an informative first feature and a shifted
    second domain, and an unlabeled target domain (the last quarter of the rows)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    g = np.where(np.arange(n) % 4 == 0, 2, 1)
    X[g == 2] += 0.7
    return X, y, g


def _splits(cv, X, y, **kw):
    return [(tr.copy(), va.copy()) for tr, va in cv.split(X, y, **kw)]


def _same_split(ref_cv, ref, cv, got, tol=1e-8):
    assert len(ref) == len(got)
    for (tr0, va0), (tr1, va1) in zip(ref, got, strict=True):
        np.testing.assert_array_equal(tr0, tr1)
        np.testing.assert_array_equal(va0, va1)
    np.testing.assert_array_equal(ref_cv.labels_, cv.labels_)
    # MMD^2 is a difference of kernel means (entries <= 1): an absolute round-off of ~1e-11
    # is relative 1e-7 on a split that barely moves the distribution
    np.testing.assert_allclose(cv.mmd2_, ref_cv.mmd2_, rtol=tol, atol=1e-10)
    np.testing.assert_allclose(cv.mmd2_init_, ref_cv.mmd2_init_, rtol=tol, atol=1e-10)
    np.testing.assert_allclose(cv.objective_trace_, ref_cv.objective_trace_, rtol=tol)
    assert cv.n_iter_ == ref_cv.n_iter_ and cv.gamma_ == ref_cv.gamma_


@pytest.mark.parametrize("kw", [
    {"n_landmarks": 60},
    {"n_landmarks": 60, "bandwidth": "median", "stratify": "label"},   # bandwidth rows of X only
    {"n_landmarks": 50, "n_splits": 3},                            # K folds: the (n, K) D
    {"n_landmarks": 60, "init": "pca", "test_size": 0.3},          # Lanczos through blocks
    {"n_landmarks": 60, "solver": "lp", "tolerance": 0.1},
    {"kernel": "linear", "n_init": 2},
])
@pytest.mark.parametrize("labels_dask", [False, True])
def test_dask_cluster_split_equals_numpy(kw, labels_dask):
    X, y, g = _data()
    ref_cv = ClusterSplit(random_state=0, **kw)
    ref = _splits(ref_cv, X, y, groups=g)
    cv = ClusterSplit(random_state=0, **kw)
    Xd = da.from_array(X, chunks=(350, 2))                      # uneven row blocks, split columns
    yy, gg = ((da.from_array(y, chunks=500), da.from_array(g, chunks=700)) if labels_dask
              else (y, g))
    _same_split(ref_cv, ref, cv, _splits(cv, Xd, yy, groups=gg))


def test_dask_cluster_split_domain_adaptation_and_float32():
    """sample_domain with a target: the labeled source rows are clustered, every target row
    joins both sides; float32 rows stay float32 inside the blocks (round-off level agreement)."""
    X, y, g = _data()
    sd = g.copy()
    sd[-400:] = -3
    y = y.copy()
    y[-400:] = -1
    ref_cv = ClusterSplit(n_landmarks=40, random_state=1)
    ref = _splits(ref_cv, X, y, sample_domain=sd)
    cv = ClusterSplit(n_landmarks=40, random_state=1)
    got = _splits(cv, da.from_array(X, chunks=(500, 4)), y,
                  sample_domain=da.from_array(sd, chunks=300))
    _same_split(ref_cv, ref, cv, got)
    assert set(range(1200, 1600)) <= set(got[0][0]) and set(range(1200, 1600)) <= set(got[0][1])
    X32 = X.astype(np.float32)
    ref32 = ClusterSplit(n_landmarks=40, random_state=1)
    cv32 = ClusterSplit(n_landmarks=40, random_state=1)
    _splits(ref32, X32, y, sample_domain=sd)
    _splits(cv32, da.from_array(X32, chunks=(500, 4)), y, sample_domain=sd)
    np.testing.assert_allclose(cv32.mmd2_, ref32.mmd2_, rtol=1e-4)


def test_dask_cluster_split_reads_blocks_not_the_array():
    """Every product is a per-block task: X's blocks are read block by block (never as one
    array), twice per Lloyd iteration plus the setup passes."""
    X, y, g = _data(n=1200)
    calls = []

    def block(b, block_info=None):
        calls.append(b.shape[0])
        return b

    Xd = da.from_array(X, chunks=(300, 4)).map_blocks(block, dtype=X.dtype)
    cv = ClusterSplit(n_landmarks=30, bandwidth=1.0, random_state=0)
    _splits(cv, Xd, y, groups=g)
    assert calls and max(calls) <= 300                           # blocks, never the 1,200 rows
    # landmarks (4 blocks hold them) + column sums + 2 passes per iteration (4 blocks each)
    assert len(calls) <= 4 * (2 + 2 * (cv.n_iter_ + 1))


def test_dask_cluster_split_refusals_name_the_fix():
    X, y, g = _data(n=600)
    Xd = da.from_array(X, chunks=(200, 4))
    with pytest.raises(ValueError, match=r"needs n_landmarks \(Nyström, e\.g\. n_landmarks=500\)"):
        _splits(ClusterSplit(), Xd, y, groups=g)
    with pytest.raises(ValueError, match="a callable kernel forms the n x n"):
        _splits(ClusterSplit(kernel=lambda a, b: a @ b.T), Xd, y, groups=g)
    bad = X.copy()
    bad[450, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        _splits(ClusterSplit(n_landmarks=10), da.from_array(bad, chunks=(200, 4)), y, groups=g)
    unknown = Xd[Xd[:, 0] > -100]                                # row-block sizes unknown
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        _splits(ClusterSplit(n_landmarks=10), unknown, y, groups=g)
    with pytest.raises(ValueError, match="^bandwidth must be a positive float, a rule among"):
        _splits(ClusterSplit(n_landmarks=10, bandwidth=-1.0), Xd, y, groups=g)
    with pytest.raises(ValueError, match="n_landmarks must be a positive integer"):
        _splits(ClusterSplit(n_landmarks=0), Xd, y, groups=g)


def test_dask_cluster_split_in_grid_search_and_with_a_dask_featurizer():
    """The splitter drives scikit-learn's machinery on a Dask X (fold rows indexed lazily),
    and a fitted RF-TCA featurizer hands it a lazy Dask embedding."""
    X, y, g = _data(n=1000)
    Xd = da.from_array(X, chunks=(250, 4))
    ref = cross_val_score(LogisticRegression(), X, y, groups=g,
                          cv=ClusterSplit(n_landmarks=40, random_state=0))
    got = cross_val_score(LogisticRegression(), Xd, y, groups=g,
                          cv=ClusterSplit(n_landmarks=40, random_state=0))
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    search = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]},
                          cv=ClusterSplit(n_landmarks=40, random_state=0)).fit(Xd, y, groups=g)
    assert search.best_params_ == {"C": 1.0}
    sd = np.where(g == 2, -2, 1)                                  # domain 2 as the target
    feat = RFTCA(n_components=3, n_features=40, random_state=0).fit(X, np.where(sd < 0, -1, y),
                                                                     sd)
    ref_cv = ClusterSplit(n_landmarks=30, featurizer=feat, random_state=0)
    ref_split = _splits(ref_cv, X, y, groups=g)
    cv = ClusterSplit(n_landmarks=30, featurizer=feat, random_state=0)
    # 30 landmarks in a 3-d embedding: K_qq has condition ~7e8, which amplifies the 1e-13
    # difference of the block sums' order to ~1e-7 relative in Psi (both equally accurate)
    _same_split(ref_cv, ref_split, cv, _splits(cv, Xd, y, groups=g), tol=1e-6)


def test_dask_cluster_split_local_cluster():
    distributed = pytest.importorskip("distributed")
    X, y, g = _data(n=900)
    ref_cv = ClusterSplit(n_landmarks=30, random_state=0)
    ref = _splits(ref_cv, X, y, groups=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # distributed's port/resource notices
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            cv = ClusterSplit(n_landmarks=30, random_state=0)
            got = _splits(cv, da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=300),
                          groups=g)
    _same_split(ref_cv, ref, cv, got)


def test_docs_dask_cluster_split_example_runs():
    """The Dask example of docs/model_selection.md (its Dask lines are +SKIP for installs
    without dask) runs here, with its printed results checked."""
    from _docs_examples import run_skipped_example

    assert run_skipped_example("model_selection.md", "### Data beyond memory: Dask") >= 9
