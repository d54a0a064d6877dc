"""shiftlearn.linear_model: scikit-learn's linear models, solved where the data are smaller.
:class:`RowSpaceLogisticRegression` is scikit-learn's ``LogisticRegression`` whose L2 problem
is solved in the span of the training rows when the features outnumber them (d >> n)."""

from ._rowspace import RowSpaceLogisticRegression, row_space_basis

__all__ = ["RowSpaceLogisticRegression", "row_space_basis"]
