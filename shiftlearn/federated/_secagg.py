"""Secure aggregation of the one-shot statistics: exact fixed point in Flower's SecAgg+.

Flower's SecAgg+ (``flwr.server.workflow.SecAggPlusWorkflow`` with the client mod
``flwr.client.mod.secaggplus_mod``) reveals to the server only the sum of the clients' vectors.
It works on integers: each client's floats are clipped to ``[-c, c]``, scaled by
``T / (2c)`` (``T`` the *quantization range*), stochastically rounded to ``int32`` and masked
modulo ``M`` (the *modulus range*, ``2**32``); the sum of ``K`` clients must stay below ``M``,
so ``K * T < M``. That leaves about 29 bits per value for 4 clients: far too coarse for the
statistics of RF-TCA, whose counts reach thousands while the moment sums need about 1e-9 of
their size for the eigenvectors to agree (measurements: ``docs/dev/federated.md``).

Each statistic is encoded in exact fixed point (``frac_bits`` fractional bits), split into
limbs that SecAgg+ adds exactly; the aggregate is within ``K * 2**-(frac_bits + 1)`` of the
float sum per entry, deterministically. Only the secure layout (:func:`secure_layout`: the two
sides' counts and sums, the total second moment) is summed. Design notes and measurements:
``docs/dev/federated.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..adaptation import RFStats

__all__ = ["FixedPointCodec", "emulate_secure_sum", "secure_arrays_to_stats",
           "secure_layout", "secure_oneshot", "secure_stats_arrays", "subspace_angle"]

#: Flower's SecAgg+ modulus (``modulus_range``): its documented maximum, ``2**32``.
MODULUS_BITS = 32


def secure_layout(dim: int) -> dict[str, tuple]:
    """Shapes of the secure one-shot statistics (``dim = 2N``): side counts and sums (row 0 the
    sources, row 1 the target) and the upper triangle of the total second moment."""
    return {"side_counts": (2,), "side_sums": (2, dim), "moment": (dim * (dim + 1) // 2,)}


def secure_stats_arrays(stats: RFStats) -> dict[str, np.ndarray]:
    """``stats`` -> the secure layout (sources pooled, target pooled, total moment)."""
    dim = stats.dim
    out = {k: np.zeros(s) for k, s in secure_layout(dim).items()}
    for d, c, s in zip(stats.domains, stats.domain_counts, stats.domain_sums, strict=True):
        side = 0 if int(d) > 0 else 1
        out["side_counts"][side] += c
        out["side_sums"][side] += s
    out["moment"] = stats.total_moment()[np.triu_indices(dim)].copy()
    return out


def secure_arrays_to_stats(arrays: dict, dim: int, fingerprint: str = "") -> RFStats:
    """The aggregate of :func:`secure_stats_arrays` -> an ``RFStats`` that
    :func:`~shiftlearn.adaptation.rftca_from_stats` solves exactly as the full statistics
    (domains ``+1`` = all sources, ``-1`` = the target; the total moment as the labeled one)."""
    cnt = np.asarray(arrays["side_counts"], dtype=np.float64)
    if cnt.shape != (2,) or np.any(cnt < 0) or np.any(cnt != np.round(cnt)):
        raise ValueError(f"side_counts must be two non-negative integers, got {cnt}; the "
                         "aggregate is corrupt (a client sent values outside the agreed "
                         "range, or the fixed-point settings differ between clients).")
    if np.any(cnt == 0):
        raise ValueError(f"the aggregate has {int(cnt[0])} source and {int(cnt[1])} target "
                         "rows; RF-TCA needs both sides (did every source or the target "
                         "drop out?).")
    M = np.zeros((dim, dim))
    M[np.triu_indices(dim)] = arrays["moment"]
    M = np.triu(M) + np.triu(M, 1).T
    return RFStats(dim, np.array([-1, 1], dtype=np.int64),
                   cnt[::-1].astype(np.int64), np.asarray(arrays["side_sums"])[::-1].copy(),
                   np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, dim)),
                   M, np.zeros((dim, dim)), fingerprint)


@dataclass(frozen=True)
class FixedPointCodec:
    """Exact fixed-point encoding of float arrays into SecAgg+ limbs (see the module notes).

    Parameters
    ----------
    frac_bits : int
        Fractional bits: each client rounds to ``2**-frac_bits``.
    int_bits : int
        Every value must satisfy ``|x| < 2**int_bits`` (counts and sums of the one-shot
        statistics are at most the client's number of rows).
    n_parties : int
        Clients whose limbs are summed (``K``); fixes the limb width.

    Examples
    --------
    >>> import numpy as np
    >>> codec = FixedPointCodec(frac_bits=36, int_bits=20, n_parties=3)
    >>> codec.limb_bits, codec.n_limbs, codec.quantization_range == 2 ** 30
    (30, 2, True)
    >>> xs = [{"a": np.array([0.5, -3.25])}, {"a": np.array([1e-3, 7.0])},
    ...       {"a": np.array([2.0, 0.0])}]
    >>> emulate_secure_sum(xs, codec)["a"]
    array([2.501, 3.75 ])
    """

    frac_bits: int = 36
    int_bits: int = 20
    n_parties: int = 4

    def __post_init__(self):
        if self.n_parties < 1:
            raise ValueError(f"n_parties must be at least 1, got {self.n_parties}.")
        if self.frac_bits < 0 or self.int_bits < 1:
            raise ValueError(f"frac_bits must be >= 0 and int_bits >= 1, got "
                             f"{self.frac_bits} and {self.int_bits}.")
        if self.frac_bits + self.int_bits + math.ceil(math.log2(self.n_parties + 1)) > 62:
            raise ValueError(f"frac_bits + int_bits = {self.frac_bits + self.int_bits} is too "
                             f"large for {self.n_parties} clients (the sum must fit 63 bits); "
                             "lower secagg-frac-bits or secagg-int-bits.")
        if self.limb_bits < 8:
            raise ValueError(f"{self.n_parties} clients leave only {self.limb_bits} bits "
                             f"per SecAgg+ value under the modulus 2**{MODULUS_BITS}; use "
                             "fewer clients per aggregation.")

    @property
    def limb_bits(self) -> int:
        return MODULUS_BITS - math.ceil(math.log2(self.n_parties + 1))

    @property
    def total_bits(self) -> int:
        return self.frac_bits + self.int_bits + 1

    @property
    def n_limbs(self) -> int:
        return -(-self.total_bits // self.limb_bits)

    @property
    def quantization_range(self) -> int:
        """SecAgg+'s ``quantization_range`` (``T``)."""
        return 1 << self.limb_bits

    @property
    def clipping_range(self) -> float:
        """SecAgg+'s ``clipping_range``: ``T / 2``, which makes its scale exactly 1."""
        return float(self.quantization_range // 2)

    @property
    def modulus_range(self) -> int:
        return 1 << MODULUS_BITS

    def to_integers(self, x: np.ndarray) -> np.ndarray:
        """Float array -> non-negative fixed-point integers (``uint64``, flattened)."""
        x = np.asarray(x, dtype=np.float64).ravel()
        if not np.all(np.isfinite(x)):
            raise ValueError("secure aggregation got NaN or inf statistics.")
        if x.size and float(np.max(np.abs(x))) >= 2.0 ** self.int_bits:
            raise ValueError(
                f"a statistic of magnitude {float(np.max(np.abs(x))):.4g} does not fit the "
                f"secure aggregation's fixed point (|x| < 2**{self.int_bits}); raise the job "
                "key secagg-int-bits (every client and the server must use the same value).")
        scaled = np.rint(np.ldexp(x, self.frac_bits)).astype(np.int64)
        return (scaled + np.int64(1 << (self.frac_bits + self.int_bits))).astype(np.uint64)

    def encode(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Arrays (in sorted key order) -> ``n_limbs`` float vectors for Flower's SecAgg+.

        Each vector holds ``limb - T/2``: SecAgg+ maps it back to the integer ``limb``
        exactly (its clipping range is ``T/2``, so its scale is 1)."""
        X = np.concatenate([self.to_integers(arrays[k]) for k in sorted(arrays)] or
                           [np.zeros(0, np.uint64)])
        mask = np.uint64((1 << self.limb_bits) - 1)
        return [((X >> np.uint64(self.limb_bits * j)) & mask).astype(np.float64)
                - self.clipping_range for j in range(self.n_limbs)]

    def limb_sums(self, means: list[np.ndarray], n_active: int) -> list[np.ndarray]:
        """What Flower's SecAgg+ returns (the mean over ``n_active`` clients of the encoded
        vectors) -> the exact integer limb sums."""
        out = []
        for m in means:
            s = np.rint(np.asarray(m, dtype=np.float64) * n_active
                        + n_active * self.clipping_range)
            if np.any(s < 0) or np.any(s >= self.modulus_range):
                raise ValueError("the SecAgg+ aggregate is outside the limb range; the "
                                 "clients' secure-aggregation settings disagree.")
            out.append(s)
        return out

    def decode(self, limb_sums: list[np.ndarray], n_active: int,
               shapes: dict[str, tuple]) -> dict[str, np.ndarray]:
        """Exact limb sums of ``n_active`` clients -> the summed float arrays.

        The integer sum is recombined modulo ``2**64`` (``uint64`` wraps), which is exact
        because the true sum minus the offsets is below ``n_active * 2**(frac_bits +
        int_bits) < 2**63`` in magnitude."""
        if len(limb_sums) != self.n_limbs:
            raise ValueError(f"expected {self.n_limbs} limb vectors, got {len(limb_sums)}.")
        total = np.zeros(np.asarray(limb_sums[0]).size, dtype=np.uint64)
        for j, s in enumerate(limb_sums):
            total += np.asarray(s).ravel().astype(np.uint64) << np.uint64(self.limb_bits * j)
        total -= np.uint64(n_active) << np.uint64(self.frac_bits + self.int_bits)
        flat = np.ldexp(total.view(np.int64).astype(np.float64), -self.frac_bits)
        out, pos = {}, 0
        for k in sorted(shapes):
            size = int(np.prod(shapes[k], dtype=np.int64))
            out[k] = flat[pos:pos + size].reshape(shapes[k])
            pos += size
        if pos != flat.size:
            raise ValueError(f"the aggregate has {flat.size} values, the layout {pos}.")
        return out


def emulate_secure_sum(arrays_list: list[dict], codec: FixedPointCodec) -> dict:
    """What the server learns from a SecAgg+ round, computed in-process: every client's arrays
    encoded, the limbs summed as integers (SecAgg+ sums them exactly), decoded."""
    shapes = {k: np.shape(v) for k, v in arrays_list[0].items()}
    encoded = [codec.encode(a) for a in arrays_list]
    half = codec.clipping_range
    sums = [np.sum([e[j] + half for e in encoded], axis=0) for j in range(codec.n_limbs)]
    return codec.decode(sums, len(arrays_list), shapes)


def secure_oneshot(parts, config, frac_bits: int = 32, int_bits: int = 20) -> dict:
    """The secure one-shot protocol in-process: what the Flower server learns and solves.

    ``parts``: ``[(X, y, domain_id), ...]`` per client (``y`` None for the target);
    ``config``: a :class:`~shiftlearn.federated.OneShotConfig`. Returns ``W``,
    ``eigenvalues``, the revealed ``side_counts`` and ``max_entry_error``, the bound
    ``K * 2**-(frac_bits + 1)`` on each aggregated statistic's rounding error.
    """
    from ..adaptation import rf_stats, rftca_from_stats
    from ..kernels import omega_fingerprint

    omega = config.omega(np.asarray(parts[0][0]).shape[1])
    arrays = []
    for X, y, dom in parts:
        X = np.asarray(X, dtype=np.float64)
        stats = rf_stats(X, y, np.full(X.shape[0], int(dom), dtype=np.int64), omega)
        arrays.append(secure_stats_arrays(stats))
    codec = FixedPointCodec(frac_bits, int_bits, len(parts))
    sums = emulate_secure_sum(arrays, codec)
    stats = secure_arrays_to_stats(sums, 2 * config.n_features, omega_fingerprint(omega))
    W, ev = rftca_from_stats(stats, config.n_components, config.mu, penalty=config.penalty)
    return {"W": W, "eigenvalues": ev, "side_counts": [int(c) for c in sums["side_counts"]],
            "max_entry_error": len(parts) * 2.0 ** -(frac_bits + 1)}


def subspace_angle(A: np.ndarray, B: np.ndarray) -> float:
    """Largest principal angle (radians) between the column spaces of ``A`` and ``B``."""
    from scipy.linalg import subspace_angles

    return float(np.max(subspace_angles(np.asarray(A), np.asarray(B))))
