"""Declarative parameter constraints: scikit-learn's own, and the one check every fit starts with.

Every estimator declares ``_parameter_constraints`` (a dict from parameter name to a list of
allowed kinds) and calls :func:`check_params` at the start of ``fit``. The constraint kinds
(:class:`Interval`, :class:`StrOptions`, :class:`Options`, :class:`HasMethods`,
:class:`RealNotInt`) and the error (:class:`InvalidParameterError`, a ``ValueError`` and a
``TypeError`` whose message names the parameter, its value and what is allowed) are
scikit-learn's, imported from ``sklearn.utils._param_validation``: the module scikit-learn's own
estimators use, whose names and messages have been stable since scikit-learn 1.2.
``tests/test_constraints.py`` pins them against the versions ``pyproject.toml`` admits.
"""

from __future__ import annotations

from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = ["HasMethods", "Interval", "InvalidParameterError", "Options", "RealNotInt",
           "StrOptions", "check_params"]


def check_params(estimator) -> None:
    """Validate ``estimator``'s parameters against its ``_parameter_constraints``.

    Raises
    ------
    InvalidParameterError
        (a ``ValueError`` and a ``TypeError``) naming the parameter, its value and the
        allowed values. Parameters without a constraint are not checked.

    Examples
    --------
    >>> from numbers import Integral
    >>> from shiftlearn.adaptation import TCA
    >>> class Toy(TCA):
    ...     _parameter_constraints = {"n_components": [Interval(Integral, 1, None, closed="left")]}
    >>> try:
    ...     check_params(Toy(n_components=0))
    ... except InvalidParameterError as exc:
    ...     print(str(exc)[:53])
    The 'n_components' parameter of Toy must be an int in
    """
    validate_parameter_constraints(
        getattr(estimator, "_parameter_constraints", {}),
        estimator.get_params(deep=False),
        caller_name=type(estimator).__name__,
    )
