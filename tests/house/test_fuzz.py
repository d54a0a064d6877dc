"""Property-based fuzzing of every public estimator (issue #14, item 6).

Awkward but ordinary input: shapes, dtypes (float32/64, int, bool, object), scales 1e-8 ... 1e8,
duplicated rows, constant columns, one-row domains, missing classes, label encodings (ints,
-1/+1, strings, floats). Every call either returns finite output of the right shape or raises a
``ValueError``/``TypeError`` whose message is a sentence (never a ``LinAlgError``, a NaN result,
a ``MemoryError``, an ``IndexError``, ...).

Kept fast for CI: small data and a budget of examples per estimator (``FUZZ_EXAMPLES``; set the
environment variable ``SHIFTLEARN_FUZZ_EXAMPLES`` for a longer hunt).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression, Ridge

from shiftlearn._validation import infer_sample_domain
from shiftlearn.adaptation import (
    CORAL,
    JDA,
    RFSCA,
    RFTCA,
    SCA,
    TCA,
    TJM,
    uSCA,
)
from shiftlearn.boosting import MultiTaskBoostingClassifier
from shiftlearn.compose import DomainAdaptationClassifier, DomainAdaptationRegressor
from shiftlearn.fewlabels import (
    FeatureAugmentation,
    LinInt,
    RegularTransferLC,
    RegularTransferLR,
    TrAdaBoost,
    TrAdaBoostR2,
)
from shiftlearn.generalization import (
    MarginalTransferClassifier,
    MarginalTransferRegressor,
    PoolingClassifier,
    PoolingRegressor,
)
from shiftlearn.kernels import RandomFourierFeatures
from shiftlearn.labelshift import BBSE, JCPOT, MLLS, RLLS
from shiftlearn.linear_model import RowSpaceLogisticRegression
from shiftlearn.mapping import (
    EMD,
    MMDLS,
    SA,
    ClassRegOT,
    JDOTClassifier,
    JDOTRegressor,
    LinOT,
    MultiLinOT,
    OTLabelProp,
    Sinkhorn,
)
from shiftlearn.model_selection import (
    AdaptationRegressorSelector,
    AdaptationSelector,
    FewLabelSelector,
    GeneralizationSelector,
)
from shiftlearn.reweighting import (
    KDERW,
    KLIEP,
    KMM,
    DiscriminatorRW,
    GaussianRW,
    NearestNeighborRW,
    RuLSIF,
    uLSIF,
)
from shiftlearn.selflabeling import DASVM

FUZZ_EXAMPLES = int(os.environ.get("SHIFTLEARN_FUZZ_EXAMPLES", "25"))

#: name -> (factory, kind): "transformer" (fit + transform), "classifier", "regressor" (a
#: domain-adaptation regressor: unlabeled target rows with y = NaN, predict),
#: "fewlabels"/"fewreg" (few labeled target rows: classification/regression),
#: "dg" (domain generalization: predict takes the test task's sample_domain)
ESTIMATORS = {
    "TCA": (lambda: TCA(), "transformer"),
    "JDA": (lambda: JDA(), "transformer"),
    "TJM": (lambda: TJM(n_iter=3), "transformer"),
    "DomainAdaptationClassifier(JDA)": (lambda: DomainAdaptationClassifier(JDA()),
                                        "classifier"),
    "SCA": (lambda: SCA(), "transformer"),
    "uSCA": (lambda: uSCA(), "transformer"),
    "RFTCA": (lambda: RFTCA(n_features=50, random_state=0), "transformer"),
    "RFSCA": (lambda: RFSCA(n_features=50, random_state=0), "transformer"),
    "RandomFourierFeatures": (lambda: RandomFourierFeatures(n_features=20, random_state=0),
                              "transformer"),
    "DomainAdaptationClassifier": (lambda: DomainAdaptationClassifier(TCA()), "classifier"),
    "CORAL": (lambda: CORAL(), "transformer"),
    # a float or unscaled Ledoit-Wolf shrinkage: the factored route when domains have fewer
    # rows than features
    "CORAL(ledoit_wolf)": (lambda: CORAL(shrinkage="ledoit_wolf"), "transformer"),
    "CORAL(0.3)": (lambda: CORAL(shrinkage=0.3), "transformer"),
    "DomainAdaptationClassifier(CORAL)": (lambda: DomainAdaptationClassifier(CORAL()),
                                          "classifier"),
    "SA": (lambda: SA(), "transformer"),
    "SA(2)": (lambda: SA(n_components=2), "transformer"),
    "LinOT": (lambda: LinOT(), "transformer"),
    "MultiLinOT": (lambda: MultiLinOT(), "transformer"),
    "MMDLS": (lambda: MMDLS(max_iter=20), "transformer"),
    "EMD": (lambda: EMD(), "transformer"),
    "Sinkhorn": (lambda: Sinkhorn(), "transformer"),
    "ClassRegOT": (lambda: ClassRegOT(), "transformer"),
    "DomainAdaptationClassifier(LinOT)": (lambda: DomainAdaptationClassifier(LinOT()),
                                          "classifier"),
    # labelers: they predict the target rows themselves
    "JDOTClassifier": (lambda: JDOTClassifier(max_iter=5), "classifier"),
    "JDOTRegressor": (lambda: JDOTRegressor(max_iter=5), "regressor"),
    "OTLabelProp": (lambda: OTLabelProp(), "classifier"),
    "DomainAdaptationClassifier(JDOTClassifier)": (
        lambda: DomainAdaptationClassifier(JDOTClassifier(max_iter=5), LogisticRegression()),
        "classifier"),
    # reweighting: transform is the identity; the weights are checked after every fit
    "KMM": (lambda: KMM(), "transformer"),
    "KLIEP": (lambda: KLIEP(random_state=0), "transformer"),
    "uLSIF": (lambda: uLSIF(random_state=0), "transformer"),
    "RuLSIF": (lambda: RuLSIF(random_state=0), "transformer"),
    "DiscriminatorRW": (lambda: DiscriminatorRW(random_state=0), "transformer"),
    "NearestNeighborRW": (lambda: NearestNeighborRW(), "transformer"),
    "KDERW": (lambda: KDERW(), "transformer"),
    "GaussianRW": (lambda: GaussianRW(), "transformer"),
    "DomainAdaptationClassifier(GaussianRW)": (
        lambda: DomainAdaptationClassifier(GaussianRW(), LogisticRegression()), "classifier"),
    "DomainAdaptationClassifier(KMM)": (
        lambda: DomainAdaptationClassifier(KMM(), LogisticRegression()), "classifier"),
    # the command's logistic regression (row space when the features outnumber the rows)
    "DomainAdaptationClassifier(CORAL, RowSpaceLogisticRegression)": (
        lambda: DomainAdaptationClassifier(CORAL(), RowSpaceLogisticRegression()),
        "classifier"),
    "MultiTaskBoostingClassifier": (lambda: MultiTaskBoostingClassifier(n_estimators=10),
                                    "classifier"),
    "MarginalTransferClassifier": (lambda: MarginalTransferClassifier(random_state=0), "dg"),
    "PoolingClassifier": (lambda: PoolingClassifier(random_state=0), "dg"),
    "MarginalTransferRegressor": (lambda: MarginalTransferRegressor(random_state=0), "dgreg"),
    "PoolingRegressor": (lambda: PoolingRegressor(random_state=0), "dgreg"),
    # the few-labels family: half of the first source domain's rows become labeled target rows
    "FeatureAugmentation": (lambda: FeatureAugmentation(), "fewlabels"),
    "FeatureAugmentation(Ridge)": (lambda: FeatureAugmentation(Ridge()), "fewreg"),
    "TrAdaBoost": (lambda: TrAdaBoost(n_estimators=4, random_state=0), "fewlabels"),
    "TrAdaBoostR2": (lambda: TrAdaBoostR2(n_estimators=4, random_state=0), "fewreg"),
    "TrAdaBoostR2(two_stage)": (lambda: TrAdaBoostR2(n_estimators=3, two_stage=True,
                                                     n_steps=3, cv=2, random_state=0),
                                "fewreg"),
    "RegularTransferLR": (lambda: RegularTransferLR(), "fewreg"),
    "RegularTransferLC": (lambda: RegularTransferLC(), "fewlabels"),
    "LinInt": (lambda: LinInt(random_state=0), "fewlabels"),
    "DASVM": (lambda: DASVM(max_iter=20), "classifier"),
    # label shift: the target rows' class proportions, without their labels
    "BBSE": (lambda: BBSE(random_state=0), "classifier"),
    "RLLS": (lambda: RLLS(random_state=0), "classifier"),
    "MLLS": (lambda: MLLS(random_state=0), "classifier"),
    "JCPOT": (lambda: JCPOT(), "classifier"),
    "FewLabelSelector": (lambda: FewLabelSelector(methods=["pooled", "FeatureAugmentation",
                                                           "target-only"]), "fewlabels"),
    "AdaptationSelector": (lambda: AdaptationSelector(methods=["TCA"], grids={}, cv=2,
                                                      margin="se"), "classifier"),
    "GeneralizationSelector": (lambda: GeneralizationSelector(task="classification"), "dg"),
    # regression targets (y = NaN on the unlabeled rows)
    "DomainAdaptationRegressor": (lambda: DomainAdaptationRegressor(TCA()), "regressor"),
    "DomainAdaptationRegressor(CORAL)": (lambda: DomainAdaptationRegressor(CORAL()),
                                         "regressor"),
    "DomainAdaptationRegressor(KMM)": (lambda: DomainAdaptationRegressor(KMM()), "regressor"),
    "AdaptationRegressorSelector": (lambda: AdaptationRegressorSelector(
        methods=["TCA"], grids={}, cv=2, margin="se"), "regressor"),
}

#: transformers that map source rows differently from target rows (``transform(X, sd)``)
_SOURCE_MAPS = ("CORAL", "SA", "LinOT", "EMD", "Sinkhorn", "ClassRegOT", "MultiLinOT", "MMDLS")

ENCODINGS = ("int", "pm1", "str", "float", "shifted", "object")


@st.composite
def problems(draw, regression: bool = False):
    """``(X, y, sample_domain, X_test, sd_test)`` with awkward but ordinary content."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 5))
    n_sources = draw(st.integers(1, 3))
    src_sizes = [draw(st.integers(1, 12)) for _ in range(n_sources)]
    n_tgt = draw(st.integers(0, 10))
    n = sum(src_sizes) + n_tgt
    scale = draw(st.sampled_from([1e-8, 1e-3, 1.0, 1e3, 1e8]))
    X = rng.normal(size=(n, d)) * scale + draw(st.sampled_from([0.0, 1e3]))
    if draw(st.booleans()):                       # duplicated rows
        X[1::2] = X[0]
    if d > 1 and draw(st.booleans()):             # a constant column
        X[:, draw(st.integers(0, d - 1))] = draw(st.sampled_from([0.0, 5.0]))
    dtype = draw(st.sampled_from(["float64", "float32", "int", "bool", "object"]))
    if dtype == "float32":
        X = X.astype(np.float32)
    elif dtype == "int":
        X = np.round(X).astype(np.int64)
    elif dtype == "bool":
        X = X > np.median(X)
    elif dtype == "object":
        X = X.astype(object)
    sd = np.concatenate([np.full(s, i + 1) for i, s in enumerate(src_sizes)]
                        + [np.full(n_tgt, -(n_sources + 1))]).astype(np.int64)
    if regression:
        y = rng.normal(size=n) * draw(st.sampled_from([1e-6, 1.0, 1e6]))
        y[sd < 0] = np.nan
    else:
        n_classes = draw(st.integers(1, 4))
        codes = rng.integers(0, n_classes, size=n)
        enc = draw(st.sampled_from(ENCODINGS))
        if enc == "pm1":
            y = np.where(codes % 2 == 0, -1, 1)
        elif enc == "str":
            y = np.array(["cat", "dog", "emu", "fox"])[codes]
        elif enc == "float":
            y = codes.astype(float)
        elif enc == "shifted":
            y = codes + 3
        elif enc == "object":
            y = np.array(["a", 2, 3.0, "b"], dtype=object)[codes]
        else:
            y = codes
        y = y.astype(object) if enc == "object" else y
        if y.dtype.kind == "U":
            y = np.where(sd < 0, "", y)
        elif y.dtype.kind == "O":
            y = y.copy()
            y[sd < 0] = None
        else:
            y = np.where(sd < 0, -1, y)
    use_sd = draw(st.booleans())
    n_test = draw(st.integers(1, 6))
    X_test = np.asarray(X[:n_test]).copy() if n_test <= n else np.asarray(X).copy()
    return X, y, (sd if use_sd else None), X_test


def _check_error(exc: BaseException) -> None:
    assert isinstance(exc, (ValueError, TypeError)), f"{type(exc).__name__}: {exc}"
    msg = str(exc)
    assert len(msg) > 15, f"uninformative message: {msg!r}"


def _label_some_target_rows(sd: np.ndarray) -> np.ndarray:
    """Every other row of the first source domain (from its second) moved to a target domain
    of its own, keeping its label: the labeled target rows of the few-labels family."""
    sd = sd.copy()
    if not np.any(sd > 0):
        return sd
    rows = np.flatnonzero(sd == sd[sd > 0].min())[1::2]
    sd[rows] = sd.min() - 1 if sd.min() < 0 else -1
    return sd


def _run(name: str, data) -> None:
    factory, kind = ESTIMATORS[name]
    X, y, sd, X_test = data
    if kind in ("fewlabels", "fewreg"):
        # without sample_domain the labeled rows would all be source rows (tested in
        # tests/fewlabels/test_fewlabels.py): the fuzzing gives the domains skada's rule infers
        sd = _label_some_target_rows(infer_sample_domain(y) if sd is None else sd)
    est = factory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if kind in ("dg", "dgreg"):
                est.fit(X, y, sd)
                out = est.predict(X_test, np.full(len(X_test), -99))
            elif kind == "transformer" and name == "RandomFourierFeatures":
                out = est.fit(X).transform(X_test)
            else:
                est.fit(X, y, sd)
                out = est.transform(X_test) if kind == "transformer" else est.predict(X_test)
                if name.startswith(_SOURCE_MAPS) or name in (
                        "DomainAdaptationClassifier(CORAL)",
                        "DomainAdaptationClassifier(LinOT)",
                        "DomainAdaptationRegressor(CORAL)"):
                    # the source map too: the test rows as source rows
                    src = np.ones(len(X_test), dtype=np.int64)
                    out = (est.transform(X_test, sample_domain=src) if kind == "transformer"
                           else est.predict(X_test, sample_domain=src))
        except (MemoryError, np.linalg.LinAlgError, IndexError, KeyError, AttributeError,
                ZeroDivisionError, FloatingPointError, RuntimeError, AssertionError) as exc:
            raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc
        except Exception as exc:   # noqa: BLE001 - only ValueError/TypeError are acceptable
            _check_error(exc)
            return
    for fitted in (est, getattr(est, "adapter_", None)):
        w = getattr(fitted, "weights_", None)
        if w is not None:           # a reweighting adapter's weights: finite, non-negative
            assert np.all(np.isfinite(w)) and np.all(w >= 0), f"{name}: weights {w}"
    out = np.asarray(out)
    assert out.shape[0] == len(X_test)
    if out.dtype.kind in "fc":
        assert np.all(np.isfinite(out)), f"{name} returned non-finite output"
    if kind in ("classifier", "dg", "fewlabels"):
        assert not np.any(np.asarray([str(v) for v in out.ravel()]) == "-1"), \
            f"{name} predicted the unlabeled marker"


FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", [n for n, (_, k) in ESTIMATORS.items()
                                  if k not in ("dgreg", "fewreg", "regressor")])
@FUZZ
@given(data=problems())
def test_fuzz_classification_and_transformers(name, data):
    _run(name, data)


@pytest.mark.parametrize("name", [n for n, (_, k) in ESTIMATORS.items()
                                  if k in ("dgreg", "fewreg", "regressor")])
@FUZZ
@given(data=problems(regression=True))
def test_fuzz_regressors(name, data):
    _run(name, data)
