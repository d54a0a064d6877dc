"""Declarative parameter constraints: scikit-learn's own, and the one check every fit starts with.

Every estimator declares ``_parameter_constraints`` (a dict from parameter name to a list of
allowed kinds) and calls :func:`check_params` at the start of ``fit``. The constraint kinds
(:class:`Interval`, :class:`StrOptions`, :class:`Options`, :class:`HasMethods`,
:class:`RealNotInt`, :class:`Hidden` for a value left out of the messages such as the
``"deprecated"`` default of a renamed parameter) and the error
(:class:`InvalidParameterError`, a ``ValueError`` and a ``TypeError`` whose message names the
parameter, its value and what is allowed) are scikit-learn's, imported from
``sklearn.utils._param_validation``: the module scikit-learn's own estimators use, whose
names and messages have been stable since scikit-learn 1.2.
``tests/core/test_constraints.py`` pins them against the versions ``pyproject.toml`` admits.

One kind is the library's own: :class:`BandwidthSpec`, the form of every ``bandwidth*``
parameter (a positive float, a rule name, or ``"<f>*<rule>"``), parsed by
:func:`parse_bandwidth_spec`, the one parser the kernels' resolver
(:func:`shiftlearn.kernels.resolve_bandwidth`) also uses.
"""

from __future__ import annotations

import re
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = ["BandwidthSpec", "HasMethods", "Hidden", "Interval", "InvalidParameterError", "Options",
           "RealNotInt", "StrOptions", "check_params", "parse_bandwidth_spec"]

#: ``"<f>*<rule>"`` or ``"<rule>"``, spaces allowed around each part
_BANDWIDTH_SPEC = re.compile(r"^\s*(?:([^*]+)\*)?\s*([A-Za-z_]+)\s*$")


def parse_bandwidth_spec(spec, rules: tuple[str, ...], name: str = "bandwidth"
                         ) -> tuple[float, str | None]:
    """``(factor, rule)`` of a bandwidth spec: a positive finite real ``s`` gives
    ``(float(s), None)``; a rule name of ``rules`` gives ``(1.0, rule)``; ``"<f>*<rule>"``
    with a positive finite ``f`` gives ``(float(f), rule)``. O(len(spec)).

    Raises
    ------
    ValueError
        naming ``name``, the value and the allowed forms.

    Examples
    --------
    >>> parse_bandwidth_spec("0.5*median", ("median",))
    (0.5, 'median')
    >>> parse_bandwidth_spec(2, ("median",))
    (2.0, None)
    """
    if isinstance(spec, str):
        m = _BANDWIDTH_SPEC.match(spec)
        if m is not None and m.group(2) in rules:
            try:
                factor = 1.0 if m.group(1) is None else float(m.group(1))
            except ValueError:
                factor = None
            if factor is not None and np.isfinite(factor) and factor > 0:
                return factor, m.group(2)
    elif (isinstance(spec, Real) and not isinstance(spec, bool | np.bool_)
          and bool(np.isfinite(spec)) and spec > 0):
        return float(spec), None
    raise ValueError(f"{name} must be {_bandwidth_forms(rules)}, got {spec!r}.")


def _bandwidth_forms(rules: tuple[str, ...]) -> str:
    if len(rules) == 1:
        return f"a positive float, {rules[0]!r} or '<f>*{rules[0]}' with a positive factor f"
    return (f"a positive float, a rule among {list(rules)} or '<f>*<rule>' with a positive "
            "factor f")


class BandwidthSpec(Options):
    """The constraint of a ``bandwidth*`` parameter: what :func:`parse_bandwidth_spec`
    accepts for ``rules``. An ``Options`` subclass because scikit-learn's ``make_constraint``
    accepts only its own constraint classes; it overrides the test and the message."""

    def __init__(self, rules: tuple[str, ...]):
        super().__init__(str, set(rules))
        self.rules = tuple(rules)

    def is_satisfied_by(self, val) -> bool:
        try:
            parse_bandwidth_spec(val, self.rules)
        except ValueError:
            return False
        return True

    def __str__(self) -> str:
        return _bandwidth_forms(self.rules)


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
