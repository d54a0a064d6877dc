"""``DomainDataset``: a set of named domains that packs into ``(X, y, sample_domain)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DomainDataset"]


@dataclass
class DomainDataset:
    """Named domains of one data set, each an ``(X, y)`` pair of raw arrays.

    Domain ``i`` (1-based position in :attr:`domain_names`) gets id ``+i`` when packed as a
    source and ``-i`` when packed as a target, so ids are stable across tasks.

    Attributes
    ----------
    name : str
    domains : dict of str -> (X, y)
        Raw (un-preprocessed) arrays.
    preprocess : callable or None
        The data set's customary preprocessing, applied to each domain separately
        (``X -> X``); see :attr:`preprocessing`.
    preprocessing : str
        Human-readable description of ``preprocess``.
    tasks : list of (source, target)
        The customary single-source tasks.
    target_name : str
        ``"class"`` for classification, else the regression target's name.
    """

    name: str
    domains: dict[str, tuple[np.ndarray, np.ndarray]]
    preprocess: Callable[[np.ndarray], np.ndarray] | None = None
    preprocessing: str = "none"
    tasks: list[tuple[str, str]] = field(default_factory=list)
    target_name: str = "class"
    description: str = ""

    @property
    def domain_names(self) -> list[str]:
        return list(self.domains)

    def domain_id(self, name: str) -> int:
        """Positive id of a domain (its 1-based position)."""
        try:
            return self.domain_names.index(name) + 1
        except ValueError:
            raise ValueError(f"Unknown domain {name!r} in {self.name}; "
                             f"domains are {self.domain_names}.") from None

    def get(self, name: str, *, preprocess: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(X, y)`` of one domain, preprocessed by default (a new array)."""
        X, y = self.domains[name] if name in self.domains else (None, None)
        if X is None:
            self.domain_id(name)  # raises a clear error
        X = np.array(X, dtype=np.float64)
        if preprocess and self.preprocess is not None:
            X = self.preprocess(X)
        return X, np.array(y)

    def pack(
        self,
        sources: Sequence[str] | str,
        targets: Sequence[str] | str = (),
        *,
        mask_target_labels: bool = True,
        preprocess: bool = True,
        return_masked_labels: bool = False,
    ):
        """Stack domains into ``(X, y, sample_domain)`` (skada's convention).

        Parameters
        ----------
        sources, targets : str or list of str
            Domain names; sources get positive ids, targets negative ids.
        mask_target_labels : bool
            Replace target labels by ``-1`` (classification) or ``NaN`` (regression).
        preprocess : bool
            Apply the data set's customary preprocessing to each domain separately.
        return_masked_labels : bool
            Also return the true labels of all rows (for evaluation on the target).

        Returns
        -------
        X, y, sample_domain[, y_true]

        Examples
        --------
        >>> import numpy as np
        >>> ds = DomainDataset("toy", {"a": (np.zeros((2, 1)), np.array([0, 1])),
        ...                            "b": (np.ones((1, 1)), np.array([1]))})
        >>> X, y, sd = ds.pack(sources=["a"], targets=["b"])
        >>> y.tolist(), sd.tolist()
        ([0, 1, -1], [1, 1, -2])
        """
        sources = [sources] if isinstance(sources, str) else list(sources)
        targets = [targets] if isinstance(targets, str) else list(targets)
        both = set(sources) & set(targets)
        if both:
            raise ValueError(f"Domain(s) {sorted(both)} given as both source and target.")
        if not sources and not targets:
            raise ValueError("pack needs at least one source or target domain.")
        Xs, ys, sds, yt = [], [], [], []
        for names, sign in ((sources, 1), (targets, -1)):
            for name in names:
                X, y = self.get(name, preprocess=preprocess)
                yt.append(y)
                if sign < 0 and mask_target_labels:
                    if self.target_name == "class":
                        y = np.full(y.shape, -1, dtype=y.dtype)
                    else:
                        y = np.full(y.shape, np.nan)
                Xs.append(X)
                ys.append(y)
                sds.append(np.full(X.shape[0], sign * self.domain_id(name), dtype=np.int64))
        out = (np.vstack(Xs), np.concatenate(ys), np.concatenate(sds))
        return out + (np.concatenate(yt),) if return_masked_labels else out

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}: {v[0].shape[0]}" for k, v in self.domains.items())
        return f"DomainDataset({self.name!r}, {{{sizes}}}, preprocessing={self.preprocessing!r})"
