"""The ``stacklevel`` of the library's warnings: the user's line, whatever the call depth.

A warning raised deep inside a fit (a pipeline, a meta-estimator, ``set_output``'s wrappers)
should point at the line of the user's code that called into shiftlearn or scikit-learn, not at
a line of the library. Every layer warns, so this lives at the bottom and imports nothing of the
package.
"""

from __future__ import annotations

import os
import sys

__all__ = ["user_stacklevel"]


def _library_dirs() -> tuple[str, ...]:
    # joblib: scikit-learn's Pipeline fits its steps through joblib.Memory's wrapper
    import joblib
    import sklearn

    return (os.path.dirname(os.path.abspath(__file__)),
            os.path.dirname(os.path.abspath(sklearn.__file__)),
            os.path.dirname(os.path.abspath(joblib.__file__)))


def user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` called by the caller of this function that points
    at the first frame outside shiftlearn and scikit-learn (the user's line, whatever the call
    depth: a pipeline, a meta-estimator, ``set_output``'s wrappers)."""
    dirs = _library_dirs()
    frame, level = sys._getframe(1), 1      # the function that warns is level 1
    while frame is not None and frame.f_code.co_filename.startswith(dirs):
        frame, level = frame.f_back, level + 1
    return level
