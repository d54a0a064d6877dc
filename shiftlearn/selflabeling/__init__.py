"""shiftlearn.selflabeling: classifiers that label the unlabeled target rows themselves and learn
from them: the domain adaptation SVM (DASVM) of Bruzzone and Marconcini."""

from ._dasvm import DASVM, class_scores

__all__ = ["DASVM", "class_scores"]
