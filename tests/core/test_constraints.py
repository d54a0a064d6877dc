"""shiftlearn._constraints: scikit-learn's constraint kinds and error, and check_params."""

from numbers import Integral, Real

import pytest

from shiftlearn._constraints import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    check_params,
)
from shiftlearn.adaptation import TCA


class _Toy(TCA):
    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(RealNotInt, 0, 1, closed="both"), None],
        "kernel": [StrOptions({"rbf", "linear"}), callable],
        "bandwidth": [Options(Real, {0.5, 2.0})],
        "memory": [HasMethods(["get", "put"]), None],
    }


def test_valid_parameters_pass_and_each_invalid_one_is_named():
    check_params(_Toy(n_components=3, mu=0.5, kernel="rbf", bandwidth=2.0))
    check_params(_Toy(mu=None, kernel=len, bandwidth=0.5))
    cases = [({"n_components": 0}, r"'n_components' parameter of _Toy must be an int in the "
                                   r"range \[1, inf\)"),
             ({"mu": 1}, r"'mu' parameter of _Toy must be a float in the range "
                         r"\[0.0, 1.0\] or None"),
             ({"kernel": "cauchy"}, r"'kernel' parameter of _Toy must be a str among"),
             ({"bandwidth": 1.0}, r"'bandwidth' parameter of _Toy must be a float among"),
             ({"memory": object()}, r"'memory' parameter of _Toy must be an object implementing")]
    for bad, message in cases:
        with pytest.raises(InvalidParameterError, match=message) as info:
            check_params(_Toy(**{"bandwidth": 2.0, **bad}))
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
