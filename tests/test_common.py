"""scikit-learn's common estimator checks over every public estimator and transformer.

ONE ``parametrize_with_checks`` test with DEFAULT hyper-parameters (``random_state=0`` where it
exists, and the smallest grid for the searches): defaults must work on small data.

* ``ESTIMATORS``: the instances checked (one obvious place; add yours here).
* ``EXPECTED_FAILED``: ``{class name: {check name: reason}}`` for every check that is expected
  to fail, each with the reason. Nothing else is skipped.
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from shiftlearn.adaptation import SCA, TCA, DomainAdaptationClassifier, uSCA
from shiftlearn.adaptation._rf import RFSCA, RFTCA
from shiftlearn.kernels import RandomFourierFeatures
from shiftlearn.model_selection import SourceCVSearch

ESTIMATORS = [
    TCA(),
    RFTCA(random_state=0),
    SCA(),
    uSCA(),
    RFSCA(random_state=0),
    RandomFourierFeatures(random_state=0),
    DomainAdaptationClassifier(TCA()),
    SourceCVSearch(DomainAdaptationClassifier(TCA()), {"adapter__mu": [1.0]}, cv=2),
]

#: {class name: {check name: reason}}; every entry says why the check cannot pass by design.
EXPECTED_FAILED: dict[str, dict[str, str]] = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED.get(type(estimator).__name__, {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
