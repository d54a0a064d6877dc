"""Reading users' tables: CSV/TSV/text (compressed or not), Parquet, ``.npy``/``.npz``.

* :func:`read_table`: one file's features ``X`` (float64, finite), its labels as values and,
  optionally, a per-row domain column, as a :class:`Table` with the notes of what was
  recognised (a header, an index column, an encoding);
* :func:`encode_labels`: the labels of several tables pooled into one set of classes;
* :class:`TableError`: a ``ValueError`` with a one-line message naming the file, the line or
  row, the column and the fix.

The command line reads its files with these, and so can Python code (a federated client's
table, a notebook). Design notes: ``docs/dev/datasets.md``.
"""

from ._tables import Table, TableError, encode_labels, read_table

__all__ = ["Table", "TableError", "encode_labels", "read_table"]
