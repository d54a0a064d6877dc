"""What the command line does, as one call from Python.

* :func:`adapt`: labeled source rows and unlabeled target rows (arrays or DataFrames) in; the
  chosen pipeline, the target predictions and the report of ``shiftlearn adapt`` out
  (:class:`AdaptationResult`, :class:`AdaptationReport`: the JSON report's dict, with
  ``write("report.html")`` for the command's HTML page). The command runs the same code
  (:func:`run_adaptation`) on the rows of its files.
* :func:`make_estimator`, :func:`default_select`, :func:`candidate_methods`: the estimator
  names, the default criterion and the candidate adapters shared with the command.
* :func:`adapt_regression`: the same for a regression target (a
  :class:`~shiftlearn.compose.DomainAdaptationRegressor`, errors in the label's units).
* :func:`save_model`, :func:`load_model`, :func:`load_estimator`: the model files of
  ``shiftlearn adapt --save`` and ``shiftlearn predict`` (skops, safely loaded, with a
  whole-file SHA-256; needs the ``persist`` extra).

Examples
--------
>>> import numpy as np
>>> from shiftlearn.workflow import adapt
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 30)
>>> res = adapt(rng.normal(size=(60, 2)) + 3 * y[:, None], y,
...             rng.normal(size=(60, 2)) + 3 * y[:, None] + 1.0, method="raw", permutations=0)
>>> res.report["method"]
'raw'
"""

from ._adapt import (
    DEFAULT_SELECT,
    ESTIMATORS,
    MAX_ROWS,
    METHODS,
    REWEIGHTING,
    SCORERS,
    SELECT,
    AdaptationReport,
    AdaptationResult,
    candidate_methods,
    check_options,
    default_select,
    make_estimator,
    run_adaptation,
)
from ._adapt_regression import (
    DEFAULT_REGRESSION_SELECT,
    REGRESSION_SELECT,
    REGRESSORS,
    RegressionReport,
    RegressionResult,
    adapt_regression,
    check_regression_options,
    make_regressor,
    regression_candidates,
    run_regression,
)
from ._api import adapt
from ._fewlabels import FEW_ONLY, few_label_methods, run_few_labels
from ._model_file import (
    load_estimator,
    load_model,
    read_header,
    save_model,
    skops_io,
    trusted_types,
)
from ._report import warning_lines, write_formats

__all__ = ["DEFAULT_SELECT", "ESTIMATORS", "MAX_ROWS", "METHODS", "REWEIGHTING", "SCORERS",
           "SELECT", "AdaptationReport", "AdaptationResult", "adapt", "candidate_methods",
           "check_options", "default_select", "load_estimator", "load_model", "make_estimator",
           "read_header", "run_adaptation", "save_model", "skops_io", "trusted_types",
           "warning_lines", "write_formats",
           # regression targets
           "DEFAULT_REGRESSION_SELECT", "REGRESSION_SELECT", "REGRESSORS", "RegressionReport",
           "RegressionResult",
           "adapt_regression", "check_regression_options", "make_regressor",
           "regression_candidates", "run_regression"]
__all__ += ["FEW_ONLY", "few_label_methods", "run_few_labels"]
