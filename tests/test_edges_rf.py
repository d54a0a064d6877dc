"""Random-feature statistics and solvers against references computed from the features ``Z``
themselves (issue #23: asymmetric data, both sides of every check, the paths the reference
tests did not reach: many domains, non-contiguous rows, float labels, merging, chunking)."""

import numpy as np
import pytest
import scipy.linalg
from _tolerances import dot_atol, mean_atol, rff_err, sum_atol

from shiftlearn.adaptation._rf_solvers import (
    rfsca_from_stats,
    rfsca_max_components,
    rftca_from_stats,
)
from shiftlearn.adaptation._rf_stats import RFStats, rf_stats
from shiftlearn.kernels import omega_fingerprint, rff_map, rff_weights


def _data(n_per=(40, 17, 9, 25, 12, 30), d=3, seed=0, shuffle=True, n_classes=3,
          unlabeled_domains=(-5, -6)):
    """Six domains of unequal sizes (four sources, two targets); unbalanced classes on the
    sources, unlabeled (-1) rows on the targets."""
    rng = np.random.default_rng(seed)
    ids = [1, 2, 3, 4, -5, -6]
    X, y, sd = [], [], []
    for i, (dom, n) in enumerate(zip(ids, n_per, strict=True)):
        X.append(rng.normal(size=(n, d)) + 0.5 * i)
        if dom in unlabeled_domains:
            y.append(np.full(n, -1))
        else:
            y.append(rng.choice(n_classes, n, p=np.linspace(1, 2, n_classes) / np.linspace(
                1, 2, n_classes).sum()))
        sd.append(np.full(n, dom))
    X, y, sd = np.vstack(X), np.concatenate(y), np.concatenate(sd)
    if shuffle:
        p = rng.permutation(len(y))
        X, y, sd = X[p], y[p], sd[p]
    return X, y, sd


def _reference(Z, y, sd):
    """Every sum of RFStats, straight from the features."""
    lab = y != -1 if y is not None else np.zeros(len(sd), bool)
    doms = np.unique(sd)
    ref = {
        "domains": doms,
        "domain_counts": np.array([(sd == g).sum() for g in doms]),
        "domain_sums": np.array([Z[sd == g].sum(axis=0) for g in doms]),
        "moment_labeled": Z[lab].T @ Z[lab],
        "moment_unlabeled": Z[~lab].T @ Z[~lab],
    }
    classes = np.unique(y[lab]) if lab.any() else np.zeros(0)
    ref["classes"] = classes
    ref["class_counts"] = np.array([(y[lab] == c).sum() for c in classes], dtype=np.int64)
    ref["class_sums"] = np.array([Z[lab][y[lab] == c].sum(axis=0) for c in classes]).reshape(
        len(classes), Z.shape[1])
    return ref


def _check_stats(st, ref, rtol=1e-10):
    for name in ("domains", "domain_counts", "classes", "class_counts"):
        np.testing.assert_array_equal(getattr(st, name), ref[name], err_msg=name)
    for name in ("domain_sums", "class_sums", "moment_labeled", "moment_unlabeled"):
        np.testing.assert_allclose(getattr(st, name), ref[name], rtol=rtol, atol=rtol,
                                   err_msg=name)


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("chunk_size", [None, 7, 64])
def test_rf_stats_equal_sums_of_the_features(shuffle, chunk_size):
    X, y, sd = _data(shuffle=shuffle)
    om = rff_weights(3, 8, 1.3, random_state=0)
    st = rf_stats(X, y, sd, omega=om, chunk_size=chunk_size, fast_trig=False)
    Z = rff_map(X, om)
    _check_stats(st, _reference(Z, y, sd))
    assert st.dim == 16 and st.n_samples == len(y) and st.n_labeled == (y >= 0).sum()
    assert st.fingerprint == omega_fingerprint(om) and len(st.fingerprint) == 16
    # the same from an already mapped block, in any number of pieces
    ff = RFStats.from_features(Z, y, sd, fingerprint=st.fingerprint)
    _check_stats(ff, _reference(Z, y, sd))
    parts = sum(RFStats.from_features(Z[i:i + 31], y[i:i + 31], sd[i:i + 31],
                                      fingerprint=st.fingerprint) for i in range(0, len(y), 31))
    _check_stats(parts, _reference(Z, y, sd))
    assert parts.fingerprint == st.fingerprint


def test_rf_stats_label_and_domain_inference():
    X, y, sd = _data(n_per=(30, 20, 10, 10, 8, 12))
    om = rff_weights(3, 5, 1.0, random_state=1)
    Z = rff_map(X, om)
    # float labels with NaN = unlabeled: classes kept as integers
    yf = np.where(y == -1, np.nan, y.astype(float))
    st = rf_stats(X, yf, sd, omega=om, fast_trig=False)
    assert st.classes.dtype.kind == "i"
    _check_stats(st, _reference(Z, y, sd))
    ff = RFStats.from_features(Z, yf, sd)
    assert ff.classes.dtype.kind == "i" and ff.fingerprint == ""
    _check_stats(ff, _reference(Z, y, sd))
    # no sample_domain: labeled rows are domain 1, unlabeled rows domain -2
    st = rf_stats(X, y, omega=om, fast_trig=False)
    _check_stats(st, _reference(Z, y, np.where(y == -1, -2, 1)))
    # neither: every row is one unlabeled source domain
    st = rf_stats(X, omega=om, fast_trig=False)
    assert st.domains.tolist() == [1] and st.n_labeled == 0 and st.classes.size == 0
    # one product in two orders, of features computed twice: gamma_n |Z|^T |Z| plus the
    # features' own round-off through |Z| (a row lost is off by |z|^2 ~ 1 / N)
    dZ = rff_err(X, om)
    np.testing.assert_allclose(st.moment_unlabeled, Z.T @ Z, rtol=0,
                               atol=dot_atol(Z.T, Z, Xerr=dZ.T, Yerr=dZ))
    ff = RFStats.from_features(Z, None, np.ones(len(y), int))
    np.testing.assert_allclose(ff.moment_unlabeled, Z.T @ Z, rtol=0, atol=dot_atol(Z.T, Z))
    assert ff.classes.size == 0 and ff.class_sums.shape == (0, 10)
    # all labeled: the unlabeled moment is zero
    lab = y >= 0
    ff = RFStats.from_features(Z[lab], y[lab], sd[lab])
    assert np.all(ff.moment_unlabeled == 0)


def test_rf_stats_float32_input_and_explicit_dtype():
    X, y, sd = _data()
    om = rff_weights(3, 8, 1.3, random_state=0)
    ref = _reference(rff_map(X, om), y, sd)
    st32 = rf_stats(X.astype(np.float32), y, sd, omega=om, fast_trig=False)
    _check_stats(st32, ref, rtol=1e-4)
    assert st32.moment_labeled.dtype == np.float64
    st = rf_stats(X, y, sd, omega=om, dtype=np.float32, fast_trig=False)
    _check_stats(st, ref, rtol=1e-4)
    st64 = rf_stats(X, y, sd, omega=om, fast_trig=False)
    assert np.abs(st.moment_labeled - st64.moment_labeled).max() > 0     # float32 was used
    # fast trig (the default): float32 cos/sin, error below 1e-5 per feature
    fast = rf_stats(X, y, sd, omega=om)
    np.testing.assert_allclose(fast.moment_labeled, st64.moment_labeled, atol=1e-3)


def test_rf_stats_errors_name_the_problem():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    with pytest.raises(ValueError, match=r"^rf_stats needs the frequencies omega"):
        rf_stats(X, y, sd)
    with pytest.raises(ValueError, match=r"^X has 2 features but omega was drawn for 3\."):
        rf_stats(X[:, :2], y, sd, omega=om)
    with pytest.raises(ValueError, match=rf"^X has {len(y)} rows but y has {len(y) - 1} "):
        rf_stats(X, y[:-1], sd, omega=om)
    # the unlabeled convention applies: labels -1/+1 without sample_domain are refused ...
    ypm = np.where(np.arange(len(y)) % 2 == 0, 1, -1)
    with pytest.raises(ValueError, match="-1 beside a single other class"):
        rf_stats(X, ypm, omega=om)
    # ... and with a sample_domain that puts -1 rows in a source domain
    with pytest.raises(ValueError, match="-1 beside a single other class"):
        rf_stats(X, ypm, np.ones(len(y), int), omega=om)
    # -1 only on target rows is the marker: accepted
    rf_stats(X, np.where(sd > 0, 1, -1), sd, omega=om)


# ------------------------------------------------------------------ derived quantities
def test_derived_quantities_match_the_formulas():
    X, y, sd = _data()
    om = rff_weights(3, 6, 1.2, random_state=2)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    Z = rff_map(X, om)
    n = len(y)
    m = Z.mean(axis=0)
    # sums and products in other orders than numpy's, of features computed twice (rff_err):
    # n eps sum|Z| for the sums (absolute: means of signed features cancel), gamma_n |Z|^T |Z|
    # for the products; a wrong count or a row in the wrong group moves them by ~1 / n of
    # the features' size, 1e10 times more
    dZ = rff_err(X, om)
    s, s_ = Z[sd > 0], Z[sd < 0]
    e, e_ = dZ[sd > 0], dZ[sd < 0]
    np.testing.assert_allclose(st.mean(), m, rtol=0, atol=mean_atol(Z, err=dZ))
    np.testing.assert_allclose(st.total_moment(), Z.T @ Z, rtol=0,
                               atol=dot_atol(Z.T, Z, Xerr=dZ.T, Yerr=dZ))
    np.testing.assert_allclose(st.total_scatter(), Z.T @ Z - n * np.outer(m, m), atol=1e-10)
    src, tgt = Z[sd > 0].mean(axis=0), Z[sd < 0].mean(axis=0)
    np.testing.assert_allclose(st.side_mean(+1), src, rtol=0, atol=mean_atol(s, err=e))
    np.testing.assert_allclose(st.side_mean(-1), tgt, rtol=0, atol=mean_atol(s_, err=e_))
    np.testing.assert_allclose(st.mmd_vector(), src - tgt, rtol=0,
                               atol=mean_atol(s, err=e) + mean_atol(s_, err=e_))
    groups = [(Z[sd == g], dZ[sd == g]) for g in np.unique(sd)]
    means = np.array([G.mean(axis=0) for G, _ in groups])
    atol_means = max(mean_atol(G, err=E) for G, E in groups)
    np.testing.assert_allclose(st.domain_means(), means, rtol=0, atol=atol_means)
    np.testing.assert_allclose(st.domain_means("ids"), means, rtol=0, atol=atol_means)
    atol_sides = max(mean_atol(s, err=e), mean_atol(s_, err=e_))
    np.testing.assert_allclose(st.domain_means("sides"), np.array([src, tgt]), rtol=0,
                               atol=atol_sides)
    # the scatter of the means: their own round-off through |dev| (2 |dev| d), plus the product's
    dev = means - means.mean(axis=0)
    atol = dot_atol(dev.T, dev) / len(means) + 4 * atol_means * np.max(np.abs(dev))
    np.testing.assert_allclose(st.domain_scatter(), dev.T @ dev / len(means), rtol=0, atol=atol)
    dev2 = np.array([src, tgt]) - (src + tgt) / 2
    atol = dot_atol(dev2.T, dev2) / 2 + 4 * atol_sides * np.max(np.abs(dev2))
    np.testing.assert_allclose(st.domain_scatter("sides"), dev2.T @ dev2 / 2, rtol=0, atol=atol)
    lab = y >= 0
    ns = lab.sum()
    mu_s = Z[lab].mean(axis=0)
    Sb = sum((y[lab] == c).sum() * np.outer(Z[lab][y[lab] == c].mean(0) - mu_s,
                                            Z[lab][y[lab] == c].mean(0) - mu_s)
             for c in np.unique(y[lab])) / ns
    Sw = sum((Z[lab][y[lab] == c] - Z[lab][y[lab] == c].mean(0)).T
             @ (Z[lab][y[lab] == c] - Z[lab][y[lab] == c].mean(0)) for c in np.unique(y[lab])) / ns
    got_b, got_w = st.class_scatters()
    # the statistics centre the uncentred moment of the labeled rows: its round-off,
    # gamma_n |Z_l|^T |Z_l| / n_s (a class mean off by one row is ~1e-2 off)
    atol = dot_atol(Z[lab].T, Z[lab], c=8, Xerr=dZ[lab].T, Yerr=dZ[lab]) / ns
    np.testing.assert_allclose(got_b, Sb, rtol=0, atol=atol)
    np.testing.assert_allclose(got_w, Sw, rtol=0, atol=atol)
    with pytest.raises(ValueError, match="^domains must be 'ids' or 'sides', got 'all'"):
        st.domain_means("all")


def test_one_sided_statistics():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    src = rf_stats(X[sd > 0], y[sd > 0], sd[sd > 0], omega=om)
    tgt = rf_stats(X[sd < 0], y[sd < 0], sd[sd < 0], omega=om)
    assert np.all(src.mmd_vector() == 0) and np.all(tgt.mmd_vector() == 0)
    with pytest.raises(ValueError, match="^No target rows in the statistics"):
        src.side_mean(-1)
    with pytest.raises(ValueError, match="^No source rows in the statistics"):
        tgt.side_mean(+1)
    assert src.domain_means("sides").shape == (1, 8)
    assert tgt.domain_means("sides").shape == (1, 8)
    np.testing.assert_allclose(tgt.domain_means("sides")[0], tgt.side_mean(-1))
    with pytest.raises(ValueError, match="^No labeled rows: the class scatters need labels"):
        tgt.class_factors()
    # one labeled row is enough for the class factors
    one = rf_stats(X[:1], np.array([2]), np.array([1]), omega=om)
    Fb, Fw = one.class_factors()
    assert np.allclose(Fb, 0) and Fw.shape == (1, 8)


def test_merging_statistics():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    a = rf_stats(X[:70], y[:70], sd[:70], omega=om, fast_trig=False)
    b = rf_stats(X[70:], y[70:], sd[70:], omega=om, fast_trig=False)
    whole = rf_stats(X, y, sd, omega=om, fast_trig=False)
    for merged in (a + b, sum([a, b]), RFStats.empty(8) + a + b, a + RFStats.empty(8) + b):
        _check_stats(merged, {k: getattr(whole, k) for k in (
            "domains", "domain_counts", "domain_sums", "classes", "class_counts",
            "class_sums", "moment_labeled", "moment_unlabeled")})
        assert merged.fingerprint == whole.fingerprint
    assert (RFStats.empty(8) + RFStats.empty(8, fingerprint="ab")).fingerprint == "ab"
    e = RFStats.empty(8)
    assert e.n_samples == 0 and e.n_labeled == 0 and e.domain_sums.shape == (0, 8)
    assert e.moment_labeled.shape == (8, 8) and e.classes.dtype == np.int64
    assert RFStats.empty(8, label_dtype=np.float64).classes.dtype == np.float64
    with pytest.raises(ValueError, match="^Cannot merge RFStats with 8 and 6 random-feature"):
        a + RFStats.empty(6)
    other = rf_stats(X[70:], y[70:], sd[70:], omega=rff_weights(3, 4, 1.0, random_state=1))
    with pytest.raises(ValueError, match="^Cannot merge RFStats computed with different"):
        a + other
    assert a.__add__("x") is NotImplemented


# ------------------------------------------------------------------ solvers
def _sca_reference(Z, y, sd, beta, delta, eps, norm, domains, supervised):
    n = len(y)
    m = Z.mean(axis=0)
    C = Z.T @ Z - n * np.outer(m, m)
    A = (1 - beta) * C / n
    D = Z.shape[1]
    M = (1 + eps) * np.eye(D)
    lab = y >= 0
    if supervised and lab.any():
        ns = lab.sum()
        scale = 1.0 / ns if norm == "n_s" else 1.0
        mu_s = Z[lab].mean(axis=0)
        for c in np.unique(y[lab]):
            Zc = Z[lab][y[lab] == c]
            mc = Zc.mean(axis=0)
            A += beta * scale * len(Zc) * np.outer(mc - mu_s, mc - mu_s)
            M += scale * (Zc - mc).T @ (Zc - mc)
    if delta > 0:
        if domains == "ids":
            means = np.array([Z[sd == g].mean(axis=0) for g in np.unique(sd)])
        else:
            means = np.array([Z[sd > 0].mean(axis=0), Z[sd < 0].mean(axis=0)])
        dev = means - means.mean(axis=0)
        M += delta * dev.T @ dev / len(means)
    return scipy.linalg.eigh(A, M, eigvals_only=True)[::-1]


SCA_CASES = [
    dict(beta=0.5, delta=1.0),
    dict(beta=0.0, delta=2.0),
    dict(beta=1.0, delta=0.0),
    dict(beta=0.3, delta=0.5, domains="sides"),
    dict(beta=0.4, delta=1.5, class_scatter_normalization="none"),
    dict(beta=0.7, delta=1.0, supervised=False),
    dict(beta=0.5, delta=1.0, eps=0.3),
]


@pytest.mark.parametrize("kw", SCA_CASES)
def test_rfsca_matches_the_feature_space_problem(kw):
    X, y, sd = _data(seed=3)
    om = rff_weights(3, 10, 1.1, random_state=3)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    Z = rff_map(X, om)
    args = dict(beta=0.5, delta=1.0, eps=1e-5, class_scatter_normalization="n_s",
                domains="ids", supervised=True)
    args.update(kw)
    k = 2
    V, w = rfsca_from_stats(st, n_components=k, eigen_solver="dense", **args)
    beta = args["beta"] if args["supervised"] else 0.0
    ref = _sca_reference(Z, y, sd, beta, args["delta"], args["eps"],
                         args["class_scatter_normalization"], args["domains"],
                         args["supervised"])
    np.testing.assert_allclose(w, ref[:k], rtol=1e-8)


def test_rfsca_defaults_and_argument_checks():
    X, y, sd = _data(seed=4)
    om = rff_weights(3, 10, 1.1, random_state=4)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    V, w = rfsca_from_stats(st)
    V2, w2 = rfsca_from_stats(st, n_components=10, beta=0.5, delta=1.0, eps=1e-5,
                              domains="ids", supervised=True, class_scatter_normalization="n_s",
                              eigen_solver="auto", rank_deficient="raise")
    assert V.shape == (20, 10)
    np.testing.assert_array_equal(w, w2)
    for kw in (dict(beta=1.0), dict(beta=0.0), dict(delta=0.0), dict(eps=0.0)):
        rfsca_from_stats(st, n_components=2, **kw)                     # boundaries accepted
    bad = [
        (dict(beta=1.5), r"^beta must lie in \[0, 1\], got 1.5"),
        (dict(beta=-0.1), r"^beta must lie in \[0, 1\], got -0.1"),
        (dict(delta=-1.0), r"^delta must be a non-negative finite number, got -1.0"),
        (dict(delta=np.inf), r"^delta must be a non-negative finite number, got inf"),
        (dict(eps=-1e-3), r"^eps must be a non-negative finite number, got -0.001"),
        (dict(eps=np.nan), r"^eps must be a non-negative finite number, got nan"),
        (dict(domains="all"), r"^domains must be 'ids' or 'sides', got 'all'"),
        (dict(class_scatter_normalization="n"), r"^class_scatter_normalization must be "
                                                 r"'n_s' or 'none', got 'n'"),
    ]
    for kw, msg in bad:
        with pytest.raises(ValueError, match=msg):
            rfsca_from_stats(st, n_components=2, **kw)


def test_rfsca_component_limits_and_label_checks():
    X, y, sd = _data(seed=5)
    om = rff_weights(3, 10, 1.1, random_state=5)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    C = st.classes.size
    assert C == 3
    assert rfsca_max_components(st, 1.0)[0] == C - 1
    assert rfsca_max_components(st, 1.0, supervised=True)[0] == C - 1
    assert rfsca_max_components(st, 1.0, supervised=False)[0] == 20
    assert rfsca_max_components(st, 0.9)[0] == 20
    assert "n_classes - 1 = 2" in rfsca_max_components(st, 1.0)[1]
    rfsca_from_stats(st, n_components=C - 1, beta=1.0, delta=0.0)
    with pytest.raises(ValueError, match="n_classes - 1 = 2"):
        rfsca_from_stats(st, n_components=C, beta=1.0, delta=0.0)
    # unsupervised: any number of components up to the rank, labels ignored
    V, w = rfsca_from_stats(st, n_components=5, beta=1.0, supervised=False)
    assert V.shape == (20, 5)
    # two classes: the beta = 1 limit is 1
    lab2 = np.where(y == 2, 1, y)
    st2 = rf_stats(X, lab2, sd, omega=om)
    assert rfsca_max_components(st2, 1.0)[0] == 1
    # labels: beta > 0 needs labeled rows of two classes; beta = 0 needs none
    tgt = sd < 0
    st_u = rf_stats(X[tgt], y[tgt], sd[tgt], omega=om)
    with pytest.raises(ValueError, match=r"^beta > 0 needs labeled rows"):
        rfsca_from_stats(st_u, n_components=2, beta=0.5)
    rfsca_from_stats(st_u, n_components=2, beta=0.0)
    one = np.where(y >= 0, 0, -1)
    st1 = rf_stats(X, one, sd, omega=om)
    with pytest.raises(ValueError, match=r"^Only one class \(\[0\]\) among the labeled rows"):
        rfsca_from_stats(st1, n_components=2, beta=0.5)
    # a single labeled row: the class terms are still built (one class: beta = 0 only)
    y1 = np.full(len(y), -1)
    y1[0] = 1
    sd1 = np.where(np.arange(len(y)) == 0, 1, -3)          # one labeled source row
    V1, w1 = rfsca_from_stats(rf_stats(X, y1, sd1, omega=om, fast_trig=False), n_components=2,
                              beta=0.0, eigen_solver="dense")
    ref = _sca_reference(rff_map(X, om), y1, sd1, 0.0, 1.0, 1e-5, "n_s", "ids", True)
    np.testing.assert_allclose(w1, ref[:2], rtol=1e-8)


def _tca_features_reference(Z, sd, mu):
    n = len(sd)
    m = Z.mean(axis=0)
    C = Z.T @ Z - n * np.outer(m, m)
    d = Z[sd > 0].mean(axis=0) - Z[sd < 0].mean(axis=0)
    B = np.eye(Z.shape[1]) + mu * np.outer(d, d)
    return scipy.linalg.eigh(C, B, eigvals_only=True)[::-1]


@pytest.mark.parametrize("mu", [0.0, 0.5, 1.0, 7.0])
def test_rftca_features_penalty_matches_the_feature_space_problem(mu):
    X, y, sd = _data(seed=6)
    om = rff_weights(3, 10, 1.1, random_state=6)
    st = rf_stats(X, None, sd, omega=om, fast_trig=False)
    V, w = rftca_from_stats(st, n_components=3, mu=mu, eigen_solver="dense")
    ref = _tca_features_reference(rff_map(X, om), sd, mu)
    np.testing.assert_allclose(w, ref[:3], rtol=1e-8)


def test_rftca_argument_checks_and_defaults():
    X, y, sd = _data(seed=7)
    om = rff_weights(3, 20, 1.1, random_state=7)
    st = rf_stats(X, None, sd, omega=om)
    V, w = rftca_from_stats(st)
    assert V.shape == (40, 30)
    for bad in (-1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="^mu must be a non-negative finite number"):
            rftca_from_stats(st, mu=bad)
    with pytest.raises(ValueError, match="^penalty must be 'features' or 'coefficients', "
                                         "got 'both'"):
        rftca_from_stats(st, n_components=2, penalty="both")


def test_rftca_coefficients_dense_and_cholesky_agree_and_clip_on_duplicates():
    X, y, sd = _data(seed=8)
    om = rff_weights(3, 60, 1.1, random_state=8)
    st = rf_stats(X, None, sd, omega=om, fast_trig=False)
    Vd, wd = rftca_from_stats(st, n_components=4, penalty="coefficients", eigen_solver="dense")
    Vr, wr = rftca_from_stats(st, n_components=4, penalty="coefficients",
                              eigen_solver="arpack")
    np.testing.assert_allclose(wr, wd, rtol=1e-6)
    # exact TCA with the random-feature kernel K = Z Z^T (Pan's penalty on the coefficients)
    Z = rff_map(X, om)
    n = len(sd)
    K = Z @ Z.T
    H = np.eye(n) - 1.0 / n
    l = np.where(sd > 0, 1.0 / (sd > 0).sum(), -1.0 / (sd < 0).sum())
    KL = K @ l
    ref = scipy.linalg.eigh(K @ H @ K, np.outer(KL, KL) + np.eye(n) + 0 * K,
                            eigvals_only=True)[::-1]
    np.testing.assert_allclose(wd, ref[:4], rtol=1e-6)
    # three distinct points repeated: the kernel has rank 3
    Xd = np.repeat(X[:3], 20, axis=0)
    sdd = np.where(np.arange(60) % 2 == 0, 1, -2)
    std = rf_stats(Xd, None, sdd, omega=om, fast_trig=False)
    with pytest.raises(ValueError, match="^n_components=5 exceeds the numerical rank 3"):
        rftca_from_stats(std, n_components=5, penalty="coefficients", eigen_solver="dense")
    with pytest.warns(Warning, match="using n_components=2"):
        V, w = rftca_from_stats(std, n_components=5, penalty="coefficients",
                                eigen_solver="dense", rank_deficient="clip")
    assert V.shape[1] == w.shape[0] == 2
    rftca_from_stats(std, n_components=2, penalty="coefficients", eigen_solver="dense")
    Xc = np.repeat(X[:1], 20, axis=0)
    stc = rf_stats(Xc, None, np.where(np.arange(20) % 2 == 0, 1, -2), omega=om)
    with pytest.raises(ValueError, match="^The random-feature kernel has numerical rank 1"):
        rftca_from_stats(stc, n_components=2, penalty="coefficients", eigen_solver="dense",
                         rank_deficient="clip")


def test_statistics_dtypes_and_small_cases():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    st = rf_stats(X, y, sd, omega=om)
    for name in ("domains", "domain_counts", "class_counts"):
        assert getattr(st, name).dtype == np.int64, name
    merged = rf_stats(X[:50], y[:50], sd[:50], omega=om) + rf_stats(X[50:], y[50:], sd[50:],
                                                                     omega=om)
    assert merged.domain_counts.dtype == np.int64 and merged.class_counts.dtype == np.int64
    # float32 features: products in float32, sums and moments in float64
    Z32 = rff_map(X, om).astype(np.float32)
    ff = RFStats.from_features(Z32, y, sd)
    for name in ("domain_sums", "class_sums", "moment_labeled", "moment_unlabeled"):
        assert getattr(ff, name).dtype == np.float64, name
    assert ff.domain_counts.dtype == np.int64 and ff.class_counts.dtype == np.int64
    nolab = RFStats.from_features(Z32, None, sd)
    assert nolab.classes.dtype == np.int64 and nolab.class_counts.dtype == np.int64
    # a float32 X is mapped in float32 (not silently in float64)
    st32 = rf_stats(X.astype(np.float32), y, sd, omega=om, fast_trig=False)
    st64 = rf_stats(X, y, sd, omega=om, fast_trig=False)
    assert np.abs(st32.moment_labeled - st64.moment_labeled).max() > 0
    # one row: zero scatter; one target row: a target mean
    one = rf_stats(X[:1], None, np.array([1]), omega=om)
    assert np.all(one.total_scatter() == 0)
    st1 = rf_stats(X[:4], None, np.array([1, 1, 1, -2]), omega=om, fast_trig=False)
    # one row's features: the same cos/sin of the same products, up to their rounding
    z3 = rff_map(X[3:4], om)
    np.testing.assert_allclose(st1.side_mean(-1), z3[0], rtol=0,
                               atol=mean_atol(z3, err=rff_err(X[3:4], om)))
    # string labels
    ys = np.where(y == -1, "", np.char.add("c", y.astype(str)))
    sts = rf_stats(X, ys, sd, omega=om, fast_trig=False)
    assert sts.classes.tolist() == ["c0", "c1", "c2"]
    np.testing.assert_array_equal(sts.class_counts, st64.class_counts)
    # the same rows grouped by other labels: the same sums, up to their order
    np.testing.assert_allclose(sts.class_sums, st64.class_sums, rtol=0,
                               atol=sum_atol(rff_map(X, om), axis=0))
    # adding a non-zero int is not a merge
    with pytest.raises(TypeError):
        st + 1
    assert (0 + st) is st


def test_statistics_without_labels_one_source_id_and_empty_have_the_documented_shapes():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    for st in (rf_stats(X, None, sd, omega=om), RFStats.from_features(rff_map(X, om), None, sd),
               RFStats.empty(8)):
        assert st.classes.shape == (0,) and st.classes.dtype == np.int64
        assert st.class_counts.shape == (0,) and st.class_counts.dtype == np.int64
        assert st.class_sums.shape == (0, 8) and st.n_labeled == 0
    e = RFStats.empty(8)
    assert e.domains.dtype == np.int64 and e.domain_counts.dtype == np.int64
    merged = e + rf_stats(X, y, sd, omega=om) + e
    assert merged.domains.dtype == np.int64 and merged.domain_counts.dtype == np.int64
    assert merged.classes.dtype == np.int64 and merged.class_counts.dtype == np.int64
    # a float32 X is mapped in float32: not the float64 statistics of the same values
    X32 = X.astype(np.float32)
    st32 = rf_stats(X32, y, sd, omega=om, fast_trig=False)
    st64 = rf_stats(X32.astype(np.float64), y, sd, omega=om, fast_trig=False)
    assert np.abs(st32.moment_labeled - st64.moment_labeled).max() > 0
    # one row: its mean is its feature vector
    one = rf_stats(X[:1], None, np.array([1]), omega=om, fast_trig=False)
    z0 = rff_map(X[:1], om)
    np.testing.assert_allclose(one.mean(), z0[0], rtol=0,
                               atol=mean_atol(z0, err=rff_err(X[:1], om)))
    # "sides" with the single source id 1
    st = rf_stats(X, None, np.where(sd > 0, 1, -2), omega=om)
    assert st.domain_means("sides").shape == (2, 8)
    # string labels straight from features
    Z = rff_map(X, om)
    ys = np.where(y == -1, "", np.char.add("c", y.astype(str)))
    ff = RFStats.from_features(Z, ys, sd)
    assert ff.classes.tolist() == ["c0", "c1", "c2"]


def test_rftca_clipping_on_every_path():
    from shiftlearn.adaptation._base import ComponentsClippedWarning

    X, y, sd = _data(seed=9)
    om = rff_weights(3, 60, 1.1, random_state=9)
    # three distinct points: the kernel has rank 3, the centred one rank 2
    Xd = np.repeat(X[:3], 20, axis=0)
    sdd = np.where(np.arange(60) % 2 == 0, 1, -2)
    std = rf_stats(Xd, None, sdd, omega=om, fast_trig=False)
    # n_components = the rank: the centring leaves 2 non-zero eigenvalues
    with pytest.raises(ValueError, match="^Only 2 of the n_components=3 leading eigenvalues"):
        rftca_from_stats(std, n_components=3, penalty="coefficients", eigen_solver="dense")
    for solver in ("dense", "arpack"):
        with pytest.warns(ComponentsClippedWarning):
            V, w = rftca_from_stats(std, n_components=5, penalty="coefficients",
                                    eigen_solver=solver, rank_deficient="clip")
        assert V.shape[1] == 2
    with pytest.warns(ComponentsClippedWarning):
        V, w = rftca_from_stats(std, n_components=5, rank_deficient="clip")     # features
    assert V.shape[1] == 2
    # two distinct points: rank 2, one component after centring (clipped, not refused)
    X2 = np.repeat(X[:2], 10, axis=0)
    st2 = rf_stats(X2, None, np.where(np.arange(20) % 2 == 0, 1, -2), omega=om, fast_trig=False)
    with pytest.warns(ComponentsClippedWarning, match="using n_components=1"):
        V, w = rftca_from_stats(st2, n_components=3, penalty="coefficients",
                                eigen_solver="dense", rank_deficient="clip")
    assert V.shape[1] == 1
    # one component is a valid request
    V, w = rftca_from_stats(rf_stats(X, None, sd, omega=om), n_components=1)
    assert V.shape == (120, 1)


def test_rftca_coefficients_auto_solver_on_800_features():
    X, y, sd = _data(seed=10)
    om = rff_weights(3, 400, 1.1, random_state=10)        # D = 800: "auto" may go to ARPACK
    st = rf_stats(X, None, sd, omega=om, fast_trig=False)
    w_auto = rftca_from_stats(st, n_components=3, penalty="coefficients")[1]
    w_dense = rftca_from_stats(st, n_components=3, penalty="coefficients",
                               eigen_solver="dense")[1]
    np.testing.assert_allclose(w_auto, w_dense, rtol=1e-6)


def test_rf_stats_refuses_a_chunk_size_that_is_no_row_count():
    X = np.random.default_rng(0).normal(size=(9, 2))
    W = rff_weights(2, 3, 1.0, random_state=0)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
            rf_stats(X, omega=W, chunk_size=bad)
    one = rf_stats(X, omega=W, chunk_size=np.int64(1))          # numpy ints are row counts
    # row by row against one block: the same products summed in another order
    Zw, dZ = rff_map(X, W, fast_trig=True), rff_err(X, W)
    np.testing.assert_allclose(one.total_moment(), rf_stats(X, omega=W).total_moment(),
                               rtol=0, atol=dot_atol(Zw.T, Zw, Xerr=dZ.T, Yerr=dZ))
