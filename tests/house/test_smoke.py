"""Package-level smoke tests (the docstring and docs-page examples are collected by pytest's
--doctest-modules / --doctest-glob, configured in pyproject.toml)."""

import importlib

import numpy as np
import pytest

import shiftlearn


def test_version():
    assert isinstance(shiftlearn.__version__, str) and shiftlearn.__version__.count(".") == 2


def test_lazy_exports():
    assert shiftlearn.RandomFourierFeatures is importlib.import_module(
        "shiftlearn.kernels").RandomFourierFeatures
    assert "SCA" in dir(shiftlearn) and "SCA" in shiftlearn.__all__
    with pytest.raises(AttributeError, match="no attribute 'NotAThing'"):
        shiftlearn.NotAThing  # noqa: B018


def test_public_functions_have_examples_or_docstrings():
    import shiftlearn.kernels as k

    for name in k.__all__:
        obj = getattr(k, name)
        if callable(obj):
            assert obj.__doc__, f"shiftlearn.kernels.{name} has no docstring"


def test_end_to_end_on_synthetic_data():
    # the foundation pieces together: generator -> validation -> kernel -> MMD test
    from shiftlearn._validation import check_X_y_domain
    from shiftlearn.datasets import make_sca_toy
    from shiftlearn.kernels import mmd_permutation_test

    X, y, sd = check_X_y_domain(*make_sca_toy(40, random_state=0), allow_target_labels=False)
    res = mmd_permutation_test(X[sd > 0], X[sd < 0], n_permutations=100, random_state=0)
    assert res.reject(0.05)
    assert np.isfinite(res.statistic)
