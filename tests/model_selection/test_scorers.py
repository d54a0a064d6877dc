"""Target-label-free scorers (issue #15, item 2): known answers, skada's values on the same
inputs, the SCA toy's preferences, row-order invariance, and GridSearchCV with metadata routing
on and off."""

import warnings

import numpy as np
import pytest
from _tolerances import EPS
from scipy.special import entr
from sklearn import config_context
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.model_selection import BaseCrossValidator, GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from shiftlearn import SCA, DomainAdaptationClassifier, make_da_pipeline
from shiftlearn.datasets import make_sca_toy
from shiftlearn.kernels import median_heuristic, mmd2, rbf_kernel
from shiftlearn.model_selection import SourceKFold
from shiftlearn.model_selection._scorers import (
    CircularValidation,
    DeepEmbeddedValidation,
    ImportanceWeightedScorer,
    MaNoScorer,
    MixValScorer,
    MMDScorer,
    PredictionEntropyScorer,
    SoftNeighborhoodDensity,
    softrun,
)

ALL = [ImportanceWeightedScorer, PredictionEntropyScorer, SoftNeighborhoodDensity,
       DeepEmbeddedValidation, CircularValidation, MixValScorer, MMDScorer, MaNoScorer]


def _toy(seed=0, n=20):
    return make_sca_toy(n_per_cluster=n, random_state=seed, return_target_labels=True)


def _fold(seed=0):
    """One validation fold of the toy: a held-out third of the sources + every target row."""
    X, y, sd, yt = _toy(seed)
    tr, va = next(SourceKFold(3).split(X, y, sample_domain=sd))
    return X, y, sd, yt, tr, va


class _FixedProba(DummyClassifier):
    """predict_proba returns a given matrix (rows in call order)."""

    def __init__(self, proba=None):
        super().__init__(strategy="prior")
        self.proba = proba

    def predict_proba(self, X):
        return np.asarray(self.proba)[: len(X)]


# ------------------------------------------------------------------ known answers
def test_prediction_entropy_known_values():
    X = np.zeros((4, 1))
    y = np.array([0, 1, -1, -1])
    uniform = _FixedProba(np.full((2, 3), 1 / 3)).fit(X[:2], y[:2])
    assert PredictionEntropyScorer()(uniform, X, y) == pytest.approx(-np.log(3))
    mixed = _FixedProba([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]).fit(X[:2], y[:2])
    assert PredictionEntropyScorer()(mixed, X, y) == pytest.approx(-np.log(2) / 2)
    hard = _FixedProba([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]).fit(X[:2], y[:2])
    with pytest.warns(UserWarning, match="hard 0/1 probabilities"):
        assert PredictionEntropyScorer()(hard, X, y) == 0.0


def test_mano_known_values():
    # uniform rows: (mean (1/K)^p)^(1/p) = 1/K; one-hot rows: (1/K)^(1/p); Eq. (2) otherwise
    X = np.zeros((4, 1))
    y = np.array([0, 1, -1, -1])
    uniform = _FixedProba(np.full((2, 3), 1 / 3)).fit(X[:2], y[:2])
    assert MaNoScorer()(uniform, X, y) == pytest.approx(1 / 3, rel=4 * EPS)
    hard = _FixedProba([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]).fit(X[:2], y[:2])
    with pytest.warns(UserWarning, match="hard 0/1"):
        assert MaNoScorer(p=4)(hard, X, y) == pytest.approx(3 ** -0.25, rel=4 * EPS)
    P = np.array([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2]])
    mixed = _FixedProba(P).fit(X[:2], y[:2])
    for p in (1.5, 4):
        assert MaNoScorer(p=p)(mixed, X, y) == pytest.approx(
            (np.sum(P ** p) / 6) ** (1 / p), rel=8 * EPS)


def test_softrun_is_eq_6_of_the_paper():
    rng = np.random.default_rng(0)
    Q = rng.normal(size=(7, 4))
    S = np.exp(Q) / np.exp(Q).sum(1, keepdims=True)
    phi = -np.mean(np.log(S))                       # about log K + 1/2 here: Taylor
    T = 1 + Q + Q ** 2 / 2
    P, kind = softrun(Q, threshold=phi + 0.1)
    assert kind == "taylor"
    np.testing.assert_allclose(P, T / T.sum(1, keepdims=True), rtol=8 * EPS)
    P, kind = softrun(Q, threshold=phi - 0.1)
    assert kind == "softmax"
    np.testing.assert_allclose(P, S, rtol=16 * EPS)
    # large logits: Phi above the default 5, softmax without overflow
    P, kind = softrun(100 * Q)
    assert kind == "softmax" and np.all(np.isfinite(P))
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=8 * EPS)


def test_mano_softrun_reads_the_decision_function():
    # two classes: logits [-f/2, f/2] (softmax: the logistic probability); the score is the
    # same when the classes are swapped (f -> -f)
    X, y, sd, yt, tr, va = _fold(0)
    keep = np.isin(y[tr], [0, 1]) | (y[tr] == -1)
    tr = tr[keep]
    est = LogisticRegression().fit(X[tr][y[tr] >= 0], y[tr][y[tr] >= 0])
    tgt = va[sd[va] < 0]
    f = est.decision_function(X[tgt])
    Q = np.c_[-f / 2, f / 2]
    T = 1 + Q + Q ** 2 / 2
    P = T / T.sum(1, keepdims=True)
    got = MaNoScorer(normalization="softrun")(est, X[va], y[va], sample_domain=sd[va])
    assert got == pytest.approx(np.mean(P ** 4) ** 0.25, rel=16 * EPS)
    flipped = LogisticRegression().fit(X[tr][y[tr] >= 0], 1 - y[tr][y[tr] >= 0])
    assert MaNoScorer(normalization="softrun")(flipped, X[va], y[va], sample_domain=sd[va]) \
        == pytest.approx(got, rel=1e-6)        # two fits of the same problem: solver tolerance
    with pytest.raises(TypeError, match="decision_function"):
        MaNoScorer(normalization="softrun")(DummyClassifier().fit(X[:2], [0, 1]), X[va], y[va])


def test_soft_neighborhood_density_closed_form_for_hard_predictions():
    # one-hot predictions: similarity 1/T within a predicted class, 0 across, -1/T on the
    # diagonal; each row's softmax then has a closed form.
    T, sizes = 0.5, [3, 1, 2]
    n = sum(sizes)
    proba = np.repeat(np.eye(3), sizes, axis=0)
    est = _FixedProba(proba).fit(np.zeros((2, 1)), [0, 1])
    X, y = np.zeros((n, 1)), np.full(n, -1)
    expected = []
    for c in sizes:
        logits = np.r_[[-1 / T], np.full(c - 1, 1 / T), np.zeros(n - c)]
        p = np.exp(logits) / np.exp(logits).sum()
        expected += [entr(p).sum()] * c
    with pytest.warns(UserWarning, match="hard 0/1"):
        got = SoftNeighborhoodDensity(T=T)(est, X, y)
    # softmaxes and entropies of n positive terms each, in another order: c n eps relative,
    # no cancellation (another temperature is off by percents)
    assert got == pytest.approx(np.mean(expected), rel=8 * n * EPS)


def test_importance_weights_put_the_mass_where_the_target_is():
    # sources at 0 (40 rows, class 0) and at 5 (10 rows, class 1); targets at 5. A classifier
    # right only at 5 has plain source accuracy 0.2 but importance-weighted accuracy ~1.
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 0.3, 40), rng.normal(5, 0.3, 10), rng.normal(5, 0.3, 20)][:, None]
    y = np.r_[np.zeros(40, int), np.ones(10, int), np.full(20, -1)]
    always1 = DummyClassifier(strategy="constant", constant=1).fit(X[:50], y[:50])
    iw = ImportanceWeightedScorer()
    assert iw(always1, X, y) > 0.99
    w = iw.weights(X[:50], X[50:])
    assert w.sum() == pytest.approx(1.0) and w[40:].sum() > 0.99
    # a domain classifier as weight estimator gives the same picture
    iw_clf = ImportanceWeightedScorer(weight_estimator=LogisticRegression())
    assert iw_clf(always1, X, y) > 0.9
    # metric= replaces the weighted accuracy
    assert ImportanceWeightedScorer(metric=lambda t, p, sample_weight: 0.25)(always1, X, y) == 0.25


def test_importance_weights_do_not_overflow():
    # log-ratios of 1e3 overflow exp(); the shifted version keeps the normalised weights
    X = np.r_[np.linspace(0, 1, 10), np.full(5, 40.0)][:, None]
    w = ImportanceWeightedScorer().weights(X[:10], X[10:])
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(1.0)
    assert np.argmax(w) == 9                   # the source row nearest to the targets


def test_dev_with_constant_domain_probabilities_is_minus_the_log_loss():
    # a domain classifier that predicts the class prior gives w = 1 everywhere, so Var(w) = 0,
    # eta = 0 and the DEV risk is the plain log-loss on the held-out source part.
    X, y, sd, yt, tr, va = _fold()
    est = DomainAdaptationClassifier(None, LogisticRegression()).fit(X[tr], y[tr], sd[tr])
    dev = DeepEmbeddedValidation(domain_classifier=DummyClassifier(strategy="prior"),
                                 random_state=3)
    src = va[sd[va] > 0]
    _, hold = train_test_split(np.flatnonzero(sd[va] > 0), test_size=0.33,
                               random_state=np.random.RandomState(3))
    rows = va[hold]
    p = est.predict_proba(X[rows])[np.arange(rows.size), y[rows]]
    assert src.size > rows.size
    assert dev(est, X[va], y[va]) == pytest.approx(np.mean(np.log(p)), rel=1e-10)


def test_dev_reads_the_probability_column_by_class_not_by_value():
    X, y, sd, yt, tr, va = _fold()
    y2 = np.where(y >= 0, 2 * y + 5, -1)                      # classes 5, 7, 9
    a = DomainAdaptationClassifier(None, LogisticRegression()).fit(X[tr], y[tr], sd[tr])
    b = DomainAdaptationClassifier(None, LogisticRegression()).fit(X[tr], y2[tr], sd[tr])
    assert DeepEmbeddedValidation()(a, X[va], y[va]) == pytest.approx(
        DeepEmbeddedValidation()(b, X[va], y2[va]), rel=1e-10)


def test_dev_ties_exactly_when_every_held_out_row_is_right_with_certainty():
    """1NN is certain: with every held-out source row right, the losses sit at the 1e-15 clip
    and the risk is round-off. Rounded to DEV_DECIMALS, two different embeddings score the
    same 0.0 (no last-bit tie-break); one wrong row costs far more than the rounding."""
    from shiftlearn.model_selection._scorers import DEV_DECIMALS

    rng = np.random.default_rng(0)
    y = np.r_[np.repeat([0, 1], 60), -np.ones(60, int)]
    X = np.r_[rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 8.0,
              rng.normal(size=(60, 2)) + 4.0]
    sd = np.r_[np.ones(120, int), -2 * np.ones(60, int)]
    dev = DeepEmbeddedValidation(random_state=0)
    raw = DomainAdaptationClassifier(None, KNeighborsClassifier(1)).fit(X, y, sd)
    sca = DomainAdaptationClassifier(SCA(n_components=2), KNeighborsClassifier(1)).fit(X, y, sd)
    a, b = dev(raw, X, y, sample_domain=sd), dev(sca, X, y, sample_domain=sd)
    assert a == b == 0.0 and str(a) == "0.0"                  # not -0.0
    y_bad = y.copy()
    y_bad[:120] = np.where(np.arange(120) == 7, 1 - y[:120], y[:120])  # row 7 mislabeled
    one_wrong = DomainAdaptationClassifier(None, KNeighborsClassifier(1)).fit(X, y_bad, sd)
    # row 7 is held out by the split or not; either way a mislabeled neighbour is a wrong row
    scores = [DeepEmbeddedValidation(random_state=r)(one_wrong, X, y, sample_domain=sd)
              for r in range(5)]
    assert min(scores) < -1e-3 and 10.0 ** -DEV_DECIMALS < 1e-3


def test_mixval_intra_is_one_for_a_linear_binary_classifier():
    # the two ends predicted in one class lie in one half-space: so does their mix
    rng = np.random.default_rng(1)
    X = np.r_[rng.normal(size=(30, 2)), rng.normal(size=(40, 2)) + 0.5]
    y = np.r_[(X[:30, 0] > 0).astype(int), np.full(40, -1)]
    clf = DomainAdaptationClassifier(None, LogisticRegression()).fit(X, y)
    assert MixValScorer(ice_type="intra")(clf, X, y) == 1.0
    inter = MixValScorer(ice_type="inter")(clf, X, y)
    assert MixValScorer()(clf, X, y) == pytest.approx((1.0 + inter) / 2)


def test_circular_validation_cannot_see_a_consistent_relabelling():
    # target class c sits where source class c+1 is (cyclically): the candidate labels every
    # target row wrongly, yet the back-fitted model maps the pseudo-labels back onto the right
    # source classes, so circular validation scores it 1.0, like a correct candidate (the
    # SCA toy's unaligned subspaces, docs/adaptation.md).
    rng = np.random.default_rng(0)
    P = np.array([[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]])
    Xs = np.vstack([P[c] + 0.3 * rng.normal(size=(15, 2)) for c in range(3)])
    Xt = np.vstack([P[(c + 1) % 3] + 0.3 * rng.normal(size=(15, 2)) for c in range(3)])
    X = np.r_[Xs, Xt]
    ys = np.repeat([0, 1, 2], 15)
    y = np.r_[ys, np.full(45, -1)]
    raw = DomainAdaptationClassifier(None, LogisticRegression()).fit(X, y)
    assert np.mean(raw.predict(Xt) == ys) == 0.0
    assert CircularValidation()(raw, X, y) == 1.0
    no_shift = np.r_[Xs, Xs + 0.01]
    good = DomainAdaptationClassifier(None, LogisticRegression()).fit(no_shift, y)
    assert CircularValidation()(good, no_shift, y) == 1.0


def test_circular_validation_single_predicted_class_warns():
    X, y, sd, yt, tr, va = _fold()
    const = DummyClassifier(strategy="constant", constant=2).fit(X[tr][y[tr] >= 0],
                                                                y[tr][y[tr] >= 0])
    with pytest.warns(UserWarning, match="one class for every target row"):
        s = CircularValidation()(const, X[va], y[va])
    assert s == pytest.approx(1 / 3)           # balanced accuracy of a constant prediction


def test_mmd_terms_match_the_exact_kernel_computation():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(150, 3)), rng.normal(size=(120, 3)) + [1.0, 0, 0]
    ya, yb = rng.integers(0, 3, 150), rng.integers(0, 2, 120)      # class 2 only in A
    sigma = median_heuristic(np.r_[A, B])                           # the pooled median
    exact = np.sqrt(mmd2(A, B))                                     # biased, same bandwidth
    sc = MMDScorer(n_features=4000)
    assert sc.mmd(A, B) == pytest.approx(exact, abs=0.02)
    # joint: the biased MMD of the product kernel k(a, b) [y_a == y_b]
    Kaa = rbf_kernel(A, sigma=sigma) * (ya[:, None] == ya)
    Kbb = rbf_kernel(B, sigma=sigma) * (yb[:, None] == yb)
    Kab = rbf_kernel(A, B, sigma=sigma) * (ya[:, None] == yb)
    joint = np.sqrt(Kaa.mean() + Kbb.mean() - 2 * Kab.mean())
    assert sc.mmd(A, B, ya, yb) == pytest.approx(joint, abs=0.02)
    # one class everywhere: the joint MMD is the marginal one. The MMD is the norm of a
    # difference of random-feature means (|z| <= 1 / sqrt(N)), each mean off by c eps n_x /
    # sqrt(N) per coordinate in another order, so the norm by at most
    # sqrt(2N) c eps (n_A + n_B) / sqrt(N) (one class dropped is off by ~0.1)
    atol = 4 * np.sqrt(2) * EPS * 2 * (150 + 120)
    assert sc.mmd(A, B, np.zeros(150), np.zeros(120)) == pytest.approx(sc.mmd(A, B), rel=0,
                                                                       abs=atol)
    assert MMDScorer().mmd(A, A) == pytest.approx(0.0, abs=atol)
    assert MMDScorer().mmd(A, A, ya, ya) == pytest.approx(0.0, abs=atol)
    # the same rows with the labels permuted are NOT the same joint distribution
    assert MMDScorer().mmd(A, A, ya, (ya + 1) % 3) > 0.1
    # one embedded row given as a 1-D array is one row (not one row per column)
    assert MMDScorer().mmd(A[0], B) == MMDScorer().mmd(A[:1], B)
    assert MMDScorer().mmd(A, B[0], ya, yb[:1]) == MMDScorer().mmd(A, B[:1], ya, yb[:1])
    # an empty sample has no distribution to compare: an error, not a number
    for a, b in ((A, A[:0]), (A[:0], A), (A[:, :0], A[:, :0])):
        with pytest.raises(ValueError, match="at least one row and one column"):
            MMDScorer().mmd(a, b)


def test_mmd_scorer_is_source_accuracy_minus_lam_mmd():
    X, y, sd, yt, tr, va = _fold()
    est = DomainAdaptationClassifier(SCA(n_components=2), LogisticRegression()).fit(
        X[tr], y[tr], sd[tr])
    src, tgt = va[sd[va] > 0], va[sd[va] < 0]
    acc = np.mean(est.predict(X[src]) == y[src])
    assert MMDScorer(lam=0)(est, X[va], y[va]) == acc
    zs, zt = est.transform(X[src]), est.transform(X[tgt])
    joint = MMDScorer().mmd(zs, zt, y[src], est.predict(X[tgt]))
    marginal = MMDScorer().mmd(zs, zt)
    assert joint > 0 and marginal > 0 and joint != pytest.approx(marginal)
    assert MMDScorer(lam=2.0)(est, X[va], y[va]) == pytest.approx(acc - 2 * joint)
    assert MMDScorer(kind="marginal")(est, X[va], y[va]) == pytest.approx(acc - marginal)
    # the embedding's scale does not matter (median bandwidth)
    assert MMDScorer().mmd(10 * zs, 10 * zt) == pytest.approx(marginal)


def test_mmd_does_not_see_the_sign_of_an_embedding_column(monkeypatch):
    # an eigenvector's sign is arbitrary; the random-feature estimate must not depend on it
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(80, 4)), rng.normal(size=(60, 4)) + [0.5, 0, 0, 0]
    ya, yb = rng.integers(0, 3, 80), rng.integers(0, 3, 60)
    flip = np.array([-1.0, 1.0, -1.0, -1.0])
    sc = MMDScorer()
    for labels in ((), (ya, yb)):
        assert sc.mmd(A * flip, B * flip, *labels) == sc.mmd(A, B, *labels)
    # without the convention the estimate moves (what the test guards against)
    from shiftlearn.model_selection import _scorers

    with pytest.raises(ValueError, match="2 columns and Z_target 3"):
        sc.mmd(A[:, :2], B[:, :3])
    monkeypatch.setattr(_scorers, "svd_flip", lambda u, v: (u, v))
    assert sc.mmd(A * flip, B * flip) != sc.mmd(A, B)


def test_mmd_estimates_are_the_same_with_and_without_fit_memory():
    # FitMemory truncates a solve for more components, whose eigenvectors may come out with
    # other signs than a direct solve; the MMD criterion must give the same estimates
    from shiftlearn.model_selection import AdaptationSelector

    # 520 rows: TCA's eigen_solver="auto" runs ARPACK (above 400 rows), whose signs differ
    # between the solve for 5 components and the one for 2 (2e-3 apart without the convention)
    rng = np.random.default_rng(0)
    n, centres = 260, rng.normal(size=(3, 10)) * 2
    ys, yt = rng.integers(0, 3, n), rng.integers(0, 3, n)
    X = np.r_[centres[ys] + rng.normal(size=(n, 10)), centres[yt] + rng.normal(size=(n, 10)) + 1]
    y, sd = np.r_[ys, -np.ones(n, int)], np.r_[np.ones(n, int), -np.ones(n, int)]
    grids = {"TCA": {"kernel": ["linear", "rbf"], "n_components": [2, 5]}}
    kw = dict(methods=["TCA"], scoring=MMDScorer(), grids=grids, cv=3)
    a = AdaptationSelector(memory="auto", **kw).fit(X, y, sd).search_.cv_results_
    b = AdaptationSelector(memory=None, **kw).fit(X, y, sd).search_.cv_results_
    np.testing.assert_allclose(a["mean_test_score"], b["mean_test_score"], rtol=0, atol=1e-9)


# ------------------------------------------------------------------ the SCA toy
def _candidates():
    return {
        "raw": None,
        "aligned": SCA(setting="da", kernel="linear", n_components=1, delta=10.0, beta=0.9),
        "unaligned_linear": SCA(setting="da", kernel="linear", n_components=2, delta=10.0),
        "unaligned_rbf": SCA(setting="da", kernel="rbf", n_components=2, delta=1.0),
    }


@pytest.fixture(scope="module")
def toy_scores():
    """Every scorer's value for each candidate on one validation fold of the toy (seed 0),
    and the candidates' target accuracies."""
    X, y, sd, yt, tr, va = _fold(0)
    out, acc = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, ad in _candidates().items():
            est = DomainAdaptationClassifier(ad, LogisticRegression()).fit(X[tr], y[tr], sd[tr])
            acc[name] = np.mean(est.predict(X[sd < 0]) == yt)
            out[name] = {cls.__name__: cls()(est, X[va], y[va]) for cls in ALL}
    return out, acc


def test_toy_the_aligned_subspace_is_the_right_answer(toy_scores):
    _, acc = toy_scores
    assert acc["aligned"] > 0.8 and max(acc[k] for k in acc if k != "aligned") < 0.6


def test_toy_mmd_scorer_prefers_the_aligned_subspace(toy_scores):
    s, _ = toy_scores
    mmd = {k: v["MMDScorer"] for k, v in s.items()}
    assert mmd["aligned"] > max(v for k, v in mmd.items() if k != "aligned") + 0.05


@pytest.mark.parametrize("name, prefers_raw", [
    ("ImportanceWeightedScorer", True), ("PredictionEntropyScorer", True),
    ("SoftNeighborhoodDensity", True), ("DeepEmbeddedValidation", True),
    ("MixValScorer", True), ("CircularValidation", False), ("MMDScorer", False),
    ("MaNoScorer", True)])
def test_toy_which_scorers_prefer_no_adaptation(toy_scores, name, prefers_raw):
    # The toy's shift is conditional (each target cluster sits next to another class's source
    # cluster): confident (PE, SND), consistent (MixVal) and covariate-shift (IW, DEV) criteria
    # all prefer the raw features, which label the target confidently and wrongly (40%).
    s, _ = toy_scores
    assert (s["raw"][name] > s["aligned"][name]) == prefers_raw


# ------------------------------------------------------------------ skada on the same inputs
@pytest.fixture(scope="module")
def skada_metrics():
    with config_context():          # importing skada switches routing on: keep it local
        pytest.importorskip("skada")
        import skada
        from skada import metrics
    return skada, metrics


@pytest.fixture(scope="module")
def skada_fitted(skada_metrics):
    skada, _ = skada_metrics
    X, y, sd, yt, tr, va = _fold(0)
    with config_context(enable_metadata_routing=True):
        pipe = skada.make_da_pipeline(
            StandardScaler(), LogisticRegression().set_score_request(sample_weight=True))
        pipe.fit(X[tr], y[tr], sample_domain=sd[tr])
    return pipe, X[va], y[va], sd[va]


@pytest.mark.parametrize("ours, theirs, factor", [
    (lambda: ImportanceWeightedScorer(), "ImportanceWeightedScorer()", 1.0),
    (lambda: PredictionEntropyScorer(), "PredictionEntropyScorer()", 3.0),   # K = 3 classes
    (lambda: SoftNeighborhoodDensity(), "SoftNeighborhoodDensity()", 1.0),
    (lambda: CircularValidation(), "CircularValidation()", 1.0),
    (lambda: MixValScorer(random_state=0), "MixValScorer(random_state=0)", 1.0),
    (lambda: MaNoScorer(), "MaNoScorer()", 1.0),
    (lambda: MaNoScorer(p=2), "MaNoScorer(p=2)", 1.0),
])
def test_same_value_as_skada(skada_metrics, skada_fitted, ours, theirs, factor):
    _, metrics = skada_metrics
    pipe, X, y, sd = skada_fitted
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = eval(theirs, {**vars(metrics), "LogisticRegression": LogisticRegression})(
            pipe, X, y, sample_domain=sd)
        got = ours()(pipe, X, y, sample_domain=sd)
    assert got == pytest.approx(factor * ref, rel=1e-9, abs=1e-12)


def test_skadas_logit_route_departs_from_eq_6(skada_metrics):
    # skada's softmax shifts the logits in place (its Taylor branch then sees q - max q) and
    # it subtracts each row's minimum before normalising: another matrix than the paper's
    _, metrics = skada_metrics
    Q = np.array([[0.5, -0.2, 1.0], [0.1, 0.3, -0.4]])
    with config_context(enable_metadata_routing=True):
        theirs = metrics.MaNoScorer()
    L = Q.copy()
    crit = theirs._get_criterion(L)
    np.testing.assert_allclose(L, Q - Q.max(1, keepdims=True))    # shifted in place
    ref = theirs._softrun(L, crit, 5)
    ours, kind = softrun(Q)
    assert kind == "taylor" == theirs.chosen_normalization
    shifted = Q - Q.max(1, keepdims=True)
    T = 1 + shifted + shifted ** 2 / 2
    T -= T.min(1, keepdims=True)
    np.testing.assert_allclose(ref, T / T.sum(1, keepdims=True), rtol=8 * EPS)
    assert np.all(ref.min(1) == 0) and np.all(ours.min(1) > 0)


def test_dev_differs_from_skada_by_its_broadcasting_bug(skada_metrics, skada_fitted):
    # skada 0.6 multiplies weights of shape (m, 1) by losses of shape (m,): an m x m matrix, so
    # its "mean(w l)" is mean(w) mean(l) and its control variate uses the first two columns.
    # Both values are reproduced here from the same weights and losses.
    _, metrics = skada_metrics
    pipe, X, y, sd = skada_fitted
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = metrics.DeepEmbeddedValidation(domain_classifier=LogisticRegression(),
                                             random_state=0)(pipe, X, y, sample_domain=sd)
        got = DeepEmbeddedValidation(domain_classifier=LogisticRegression(),
                                     random_state=0)(pipe, X, y, sample_domain=sd)
        src, tgt = np.flatnonzero(sd > 0), np.flatnonzero(sd < 0)
        a, b = train_test_split(src, test_size=0.33, random_state=np.random.RandomState(0))
        emb = pipe[:1].transform
        fa, fb, ft = emb(X[a]), emb(X[b]), emb(X[tgt])
        dc = LogisticRegression().fit(np.r_[fa, ft], np.r_[np.ones(len(fa)), np.zeros(len(ft))])
        p = dc.predict_proba(fb)
        w = len(fa) / len(ft) * p[:, 0] / p[:, 1]
        proba = pipe.predict_proba(X[b], sample_domain=sd[b])
    loss = -np.log(np.clip(proba[np.arange(b.size), y[b]], 1e-15, 1 - 1e-15))

    def dev(wl, w):
        eta = -np.cov(np.c_[wl, w], rowvar=False)[0, 1] / np.var(w, ddof=1)
        return -(np.mean(wl) + eta * np.mean(w) - eta)

    assert got == pytest.approx(dev(w * loss, w), rel=1e-10)
    W = w[:, None]
    assert ref == pytest.approx(dev(W * loss, W), rel=1e-10)     # (W * loss).shape == (m, m)
    assert abs(got - ref) > 0.01


def test_skada_scorer_calls_our_classifier_with_the_rows_domains(skada_metrics):
    # our classifier's predict/predict_proba take sample_domain (for CORAL), so skada's scorers,
    # which pass it, run on it; skada's PE is ours divided by the number of classes
    _, metrics = skada_metrics
    X, y, sd, yt, tr, va = _fold(0)
    est = DomainAdaptationClassifier(None, LogisticRegression()).fit(X[tr], y[tr], sd[tr])
    with config_context(enable_metadata_routing=True):
        theirs = metrics.PredictionEntropyScorer()(est, X[va], y[va], sample_domain=sd[va])
        ours = PredictionEntropyScorer()(est, X[va], y[va], sample_domain=sd[va])
    assert ours < 0
    assert theirs == pytest.approx(ours / est.classes_.size, rel=1e-5)


# ------------------------------------------------------------------ invariances and inputs
@pytest.mark.parametrize("cls", [ImportanceWeightedScorer, PredictionEntropyScorer,
                                 SoftNeighborhoodDensity, CircularValidation, MMDScorer,
                                 MaNoScorer])
def test_row_order_does_not_matter(cls):
    X, y, sd, yt, tr, va = _fold(0)
    est = DomainAdaptationClassifier(SCA(n_components=2), LogisticRegression()).fit(
        X[tr], y[tr], sd[tr])
    perm = np.random.default_rng(0).permutation(va.size)
    a = cls()(est, X[va], y[va])
    b = cls()(est, X[va][perm], y[va][perm])
    assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("cls", ALL)
def test_sample_domain_and_inferred_rows_agree(cls):
    X, y, sd, yt, tr, va = _fold(0)
    est = DomainAdaptationClassifier(SCA(n_components=2), LogisticRegression()).fit(
        X[tr], y[tr], sd[tr])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = cls()(est, X[va], y[va])
        b = cls()(est, X[va], y[va], sample_domain=sd[va])
        # with sample_domain, target rows are the negative ids, their labels never read
        y_lab = np.where(sd[va] < 0, np.r_[np.zeros(60, int), yt][va], y[va])
        c = cls()(est, X[va], y_lab, sample_domain=sd[va])
    assert a == pytest.approx(b) and a == pytest.approx(c)


def test_works_on_a_da_pipeline_and_float32():
    X, y, sd, yt, tr, va = _fold(0)
    pipe = make_da_pipeline(StandardScaler(), SCA(n_components=2), LogisticRegression())
    pipe.fit(X[tr], y[tr], sample_domain=sd[tr])
    for cls in ALL:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = cls()(pipe, X[va].astype(np.float32), y[va])
        assert np.isfinite(v)


def test_errors_name_the_problem_and_the_fix():
    X, y, sd, yt, tr, va = _fold(0)
    est = DomainAdaptationClassifier(None, LogisticRegression()).fit(X[tr], y[tr], sd[tr])
    src = va[sd[va] > 0]
    with pytest.raises(ValueError, match="no target rows.*SourceKFold"):
        MMDScorer()(est, X[src], y[src])
    tgt = np.flatnonzero(sd < 0)
    with pytest.raises(ValueError, match="no labeled source rows"):
        MMDScorer()(est, X[tgt], y[tgt])
    assert PredictionEntropyScorer()(est, X[tgt], y[tgt]) < 0      # needs targets only
    # labeled target rows without sample_domain look like sources: refused, not scored
    with pytest.raises(ValueError, match="no target rows"):
        MMDScorer()(est, X, np.r_[y[sd > 0], yt])
    one_nn = DomainAdaptationClassifier(None, KNeighborsClassifier(1)).fit(X[tr], y[tr], sd[tr])
    with pytest.warns(UserWarning, match="hard 0/1"):
        PredictionEntropyScorer()(one_nn, X[va], y[va])
    no_proba = DomainAdaptationClassifier(None, RidgeClassifier()).fit(X[tr], y[tr], sd[tr])
    with pytest.raises(TypeError, match="predict_proba"):
        PredictionEntropyScorer()(no_proba, X[va], y[va])
    with pytest.raises(TypeError, match="unexpected metadata"):
        MMDScorer()(est, X[va], y[va], sample_weight=np.ones(va.size))
    with pytest.raises(ValueError, match="'T' parameter"):
        SoftNeighborhoodDensity(T=0)(est, X[va], y[va])
    with pytest.raises(ValueError, match="'p' parameter"):
        MaNoScorer(p=0)(est, X[va], y[va])
    with pytest.raises(ValueError, match="'normalization' parameter"):
        MaNoScorer(normalization="logits")(est, X[va], y[va])
    with pytest.raises(ValueError, match="re-encode"):
        MMDScorer()(est, X[:4], np.array([1, -1, 1, -1]))
    with pytest.raises(ValueError, match="needs y"):
        MMDScorer()(est, X[va])


# ------------------------------------------------------------------ GridSearchCV
class _HeldOutSourcePlusTargets(BaseCrossValidator):
    """k folds over the labeled rows; every unlabeled (target) row in training AND validation."""

    def __init__(self, n_splits=3):
        self.n_splits = n_splits

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.n_splits

    def split(self, X, y, groups=None):
        y = np.asarray(y)
        src, tgt = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
        for k in range(self.n_splits):
            va = src[k::self.n_splits]
            yield np.sort(np.r_[np.setdiff1d(src, va), tgt]), np.sort(np.r_[va, tgt])


class _Spy(MMDScorer):
    calls: list = []

    def __call__(self, estimator, X, y=None, sample_domain=None, **kw):
        _Spy.calls.append((sample_domain is not None, int(np.sum(np.asarray(y) == -1)),
                           int(np.sum(np.asarray(y) != -1))))
        return super().__call__(estimator, X, y, sample_domain=sample_domain, **kw)


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_scores_with_the_target_rows(routing):
    X, y, sd, yt = _toy(0)
    est = DomainAdaptationClassifier(SCA(setting="da", kernel="linear", n_components=1),
                                     LogisticRegression())
    grid = {"adapter__delta": [0.1, 10.0]}
    _Spy.calls = []
    cv = _HeldOutSourcePlusTargets(3)
    with config_context(enable_metadata_routing=routing), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if routing:
            est.set_fit_request(sample_domain=True)
            search = GridSearchCV(est, grid, cv=cv, scoring=_Spy()).fit(X, y, sample_domain=sd)
        else:
            search = GridSearchCV(est, grid, cv=cv, scoring=_Spy()).fit(X, y, sample_domain=sd)
    assert len(_Spy.calls) == 6
    for got_sd, n_tgt, n_src in _Spy.calls:
        assert got_sd == routing and n_tgt == 60 and n_src == 20
    # the search's fold scores are the scorer's values on those folds
    for k, (tr, va) in enumerate(cv.split(X, y)):
        fitted = DomainAdaptationClassifier(
            SCA(setting="da", kernel="linear", n_components=1, delta=search.best_params_[
                "adapter__delta"]), LogisticRegression()).fit(X[tr], y[tr], sd[tr])
        assert search.cv_results_[f"split{k}_test_score"][search.best_index_] == \
            pytest.approx(MMDScorer()(fitted, X[va], y[va]))
    assert search.best_params_["adapter__delta"] == 10.0          # the aligning setting


def test_grid_search_with_routing_reads_domains_not_labels():
    # semi-supervised: target rows carry labels; only sample_domain (routed) says they are
    # targets, and the scorer never reads their labels
    X, y, sd, yt = _toy(0)
    y_full = np.r_[y[sd > 0], yt]
    est = DomainAdaptationClassifier(None, LogisticRegression())
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.set_fit_request(sample_domain=True)
        search = GridSearchCV(est, {"estimator__C": [0.1, 1.0]}, cv=SourceKFold(3),
                              scoring=PredictionEntropyScorer()).fit(X, y_full, sample_domain=sd)
    assert np.all(search.cv_results_["mean_test_score"] < 0)


def test_mmd_scorers_cached_frequencies_are_rff_weights_bit_for_bit():
    """The scorer draws its unit frequencies once per shape and seed; divided by the
    bandwidth they are the frequencies ``rff_weights`` draws (so every score is unchanged),
    and the cached draws cannot be modified."""
    from shiftlearn.kernels import rff_weights
    from shiftlearn.model_selection._scorers import _unit_frequencies

    for d, n, seed, sigma in ((40, 50, 7, 3.3), (3, 7, 1, 0.123456789)):
        cached = _unit_frequencies(d, n, seed)
        np.testing.assert_array_equal(cached / sigma, rff_weights(d, n, sigma, random_state=seed))
        assert _unit_frequencies(d, n, seed) is cached and not cached.flags.writeable
