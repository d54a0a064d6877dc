"""``FitMemory``: explicit reuse of the work shared by fits on the same rows (``memory=``).

A grid search fits the same adapter on the same training fold many times, changing one
hyper-parameter at a time. Much of each fit does not depend on the searched parameter: the
kernel matrix (TCA across ``mu``), SCA's problem and the Cholesky factor of its ``delta``-free
denominator (across ``beta`` and ``delta``), the random-feature statistics (RF-TCA / RF-SCA
across every setting), and the eigen-solve of each setting, of which every smaller
``n_components`` is a truncation (nested leading eigenvectors); and, for the exact adapters,
the kernel between the rows a ``transform`` is asked for and the training rows (the same
training and validation rows are embedded once per candidate); for the random-feature
adapters, the features of the rows (up to one chunk of rows) and, when there are fewer rows than
frequencies, the QR factors of the training rows' features, which depend on neither the labels
nor the domains (so circular validation's reverse fits share them). An adapter given
``memory=FitMemory()`` stores those pieces there and finds them again on the next fit. A new
setting is solved for the most components asked so far of the same adapter class (at most what
its problem allows, :meth:`FitMemory.nested_solve`), so that, once the largest
``n_components`` of a grid has been asked, every later setting costs one solve whatever the
grid's order; a grid run largest first (as
:class:`~shiftlearn.model_selection.AdaptationSelector` does) costs one solve per setting
from the start.

Contract: nothing is kept unless a ``FitMemory`` is passed; copies and clones share one store,
a pickled memory arrives empty; entries are keyed by a hash of ``X``, ``y``, ``sample_domain``
and every parameter they depend on; at most ``max_bytes`` are held, least recently used
evicted first; a fit with memory returns what a fit without returns, up to the sign of each
component and the solver's tolerance. Design notes: ``docs/dev/adaptation.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import warnings
from collections import OrderedDict
from numbers import Integral

import numpy as np

__all__ = ["FitMemory", "nbytes"]


def nbytes(obj) -> int:
    """Bytes of the numpy arrays and numbers held by ``obj`` (arrays, numbers, tuples, lists,
    dicts, dataclasses; a number counts 8).

    Examples
    --------
    >>> import numpy as np
    >>> nbytes((np.zeros(3), {"a": np.zeros((2, 2))}, 5))
    64
    """
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (int, float, np.generic)):
        return 8
    if isinstance(obj, dict):
        return sum(nbytes(v) for v in obj.values())
    if isinstance(obj, (tuple, list)):
        return sum(nbytes(v) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return 0


class FitMemory:
    """A bounded store of the work that fits on the same rows share (``memory=`` of the
    adapters, :class:`~shiftlearn.compose.DomainAdaptationClassifier` and
    :class:`~shiftlearn.model_selection.AdaptationSelector`).

    See the module docstring for what is stored, the keys, the bound and the guarantee that
    results do not change.

    Parameters
    ----------
    max_bytes : int, default=1 GiB
        Most bytes of numpy arrays kept; least recently used entries go first.

    Attributes
    ----------
    hits, misses : int
        Look-ups that found / did not find their entry (for tests and benchmarks).

    Examples
    --------
    >>> from sklearn.base import clone
    >>> from shiftlearn.adaptation import SCA
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> mem = FitMemory()
    >>> sca = SCA(n_components=2, memory=mem)
    >>> clone(sca).memory is mem                   # survives GridSearchCV's clones
    True
    >>> Z1 = sca.fit(X, y, sd).transform(X)
    >>> Z2 = clone(sca).set_params(beta=0.9).fit(X, y, sd).transform(X)  # reuses the problem
    >>> mem.hits > 0
    True
    """

    def __init__(self, max_bytes: int = 1 << 30):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, Integral) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative integer, got {max_bytes!r}.")
        self.max_bytes = int(max_bytes)
        self._store: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self._largest: dict = {}        # family -> most components asked (see nested_solve)
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

    # one object for every clone (see the module docstring)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (type(self), (self.max_bytes,))

    def __repr__(self) -> str:
        return f"FitMemory(max_bytes={self.max_bytes})"

    def __len__(self) -> int:
        return len(self._store)

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return sum(self._sizes.values())

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._store.clear()
            self._sizes.clear()
            self._largest.clear()

    @staticmethod
    def fingerprint(*parts) -> str:
        """A hash (SHA-256) of arrays (shape, dtype and bytes), strings (e.g. an
        earlier fingerprint, so that the big ``X`` is hashed once per fit) and ``None``."""
        h = hashlib.sha256()
        for a in parts:
            if a is None:
                h.update(b"None;")
            elif isinstance(a, str):
                h.update(f"str{len(a)}:{a};".encode())
            else:
                a = np.ascontiguousarray(a)
                if a.dtype.hasobject:
                    h.update(f"object{a.shape}:{a.tolist()!r};".encode())
                else:
                    h.update(f"{a.shape}{a.dtype.str};".encode())
                    h.update(memoryview(a).cast("B"))
        return h.hexdigest()

    def get(self, key):
        """The value stored under ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            if key in self._store:
                self._store.move_to_end(key)
                self.hits += 1
                return self._store[key]
            self.misses += 1
            return None

    def put(self, key, value) -> bool:
        """Store ``value`` under ``key`` (again, after the value grew: its bytes are
        recounted), evicting the least recently used entries beyond ``max_bytes``. A value
        larger than the budget alone is not stored. Returns whether it was stored."""
        size = nbytes(value)
        with self._lock:
            self._store.pop(key, None)
            self._sizes.pop(key, None)
            if size > self.max_bytes:
                return False
            self._store[key] = value
            self._sizes[key] = size
            total = sum(self._sizes.values())
            while total > self.max_bytes:
                old, _ = self._store.popitem(last=False)
                total -= self._sizes.pop(old)
        return True

    def recount(self, key, value) -> None:
        """Recount the bytes of ``value`` stored under ``key`` after it grew in place (evicting
        beyond the budget); nothing when ``key`` no longer holds ``value``."""
        with self._lock:
            if self._store.get(key) is value:
                self.put(key, value)

    def nested_solve(self, key, k: int, solve, *, family=None, limit: int | None = None):
        """The ``k`` leading eigenpairs of a problem, reusing a stored solve for more.

        ``solve(k)`` returns a tuple ``(eigenvalues, *arrays)`` whose last axis indexes the
        components, leading first (it may return fewer than ``k`` when the problem has
        fewer). A stored result with at least ``k`` components is truncated (nested leading
        eigenvectors: the same pairs up to sign, see the module docstring). Otherwise the
        problem is solved for the most components asked so far in its ``family`` (the
        adapter's class; at most ``limit``, what the problem allows); if that larger solve
        fails or returns fewer than ``k`` pairs, ``solve(k)`` runs instead, as a fit without
        memory would (its warnings and errors included). ``key=None`` just calls
        ``solve(k)``. The arrays returned are the caller's to modify.
        """
        if key is None:
            return solve(k)
        hit = self.get(key)
        if hit is not None and hit[0].shape[0] >= k:
            return tuple(a[..., :k].copy() for a in hit)
        want = k
        if family is not None:
            with self._lock:
                want = max(k, self._largest.get(family, 0))
                self._largest[family] = want
            want = want if limit is None else max(k, min(want, int(limit)))
        out = None
        if want > k:
            try:
                with warnings.catch_warnings():      # warnings about the larger k: not asked
                    warnings.simplefilter("ignore")
                    out = solve(want)
            except ValueError:
                out = None
            if out is not None and out[0].shape[0] < k:
                out = None
        if out is None:
            out = solve(k)
        self.put(key, tuple(a.copy() for a in out))
        return tuple(a[..., :k].copy() for a in out) if want > k else out


def seed_key(random_state):
    """An int seed as a key part; ``None``, a ``RandomState`` or a ``Generator`` give ``None``
    (each fit draws anew, so nothing can be reused)."""
    if isinstance(random_state, (Integral, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return None
