"""A seeded, in-process network with fault injection that runs either protocol.

Every message is encoded to ``(arrays, meta)`` (:func:`~shiftlearn.federated.encode`), counted,
then subjected to the faults: lost, delayed by whole rounds (a straggler: it arrives when its
round is over and is rejected as stale), duplicated, reordered within a round, or not
delivered because its recipient dropped out for the round. Receivers decode it again, so the
simulator exercises exactly the code paths of a real transport.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._progress import track
from ._guard import logger
from ._messages import MessageError, decode, encode, message_nbytes

__all__ = ["NetworkConditions", "Simulator", "Traffic"]


@dataclass(frozen=True)
class NetworkConditions:
    """Fault model, each fault independent per message (dropout: per client and round).

    Parameters
    ----------
    loss : float
        Probability that a message is lost.
    dropout : float
        Probability that a client is offline for a whole round (receives and sends nothing).
    straggler : float
        Probability that a message is delayed by ``1..max_delay`` rounds.
    max_delay : int
    duplicate : float
        Probability that a message is delivered twice.
    reorder : bool
        Shuffle the delivery order within each round.
    seed : int
    """

    loss: float = 0.0
    dropout: float = 0.0
    straggler: float = 0.0
    max_delay: int = 2
    duplicate: float = 0.0
    reorder: bool = False
    seed: int = 0

    def __post_init__(self):
        for name in ("loss", "dropout", "straggler", "duplicate"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {v}.")
        if self.max_delay < 1:
            raise ValueError(f"max_delay must be >= 1, got {self.max_delay}.")


@dataclass
class Traffic:
    """Every message sent: ``records`` of dicts (round, direction, src, dst, kind, nbytes,
    fate in {"delivered", "lost", "delayed", "duplicated", "offline", "undelivered"})."""

    records: list = field(default_factory=list)

    def per_round(self) -> list[dict]:
        rounds: dict[int, dict] = {}
        for r in self.records:
            d = rounds.setdefault(r["round"], {"round": r["round"], "up_bytes": 0,
                                               "down_bytes": 0, "messages": 0})
            d[f"{r['direction']}_bytes"] += r["nbytes"]
            d["messages"] += 1
            d[r["fate"]] = d.get(r["fate"], 0) + 1
        return [rounds[k] for k in sorted(rounds)]

    def total_bytes(self) -> int:
        return int(sum(r["nbytes"] for r in self.records))

    def max_message_bytes(self, direction: str | None = None) -> int:
        return max((r["nbytes"] for r in self.records
                    if direction is None or r["direction"] == direction), default=0)


class Simulator:
    """Drive ``server`` and ``clients`` (dict id -> client) over a faulty network.

    ``server`` has ``start_round() -> {client_id: message}``, ``receive(arrays, meta)`` and
    ``finish_round()``; a client has ``handle(message) -> reply | None``.

    Examples
    --------
    See :func:`shiftlearn.federated.run_iterative` and
    :func:`shiftlearn.federated.run_oneshot`.
    """

    def __init__(self, server, clients: dict, conditions: NetworkConditions | None = None):
        self.server = server
        self.clients = clients
        self.cond = conditions or NetworkConditions()
        self.rng = np.random.default_rng([self.cond.seed, 7])
        self.traffic = Traffic()
        self._queue: list[tuple[int, int, str, int, dict, dict]] = []  # (due, seq, dir, dst,..)
        self._seq = 0
        self.round = 0
        self.client_rejections: list[tuple[int, int, str]] = []

    def _post(self, direction: str, src, dst, arrays, meta) -> None:
        c, rng, t = self.cond, self.rng, self.round
        nbytes = message_nbytes(arrays, meta)
        rec = {"round": t, "direction": direction, "src": src, "dst": dst,
               "kind": meta.get("kind"), "nbytes": nbytes}
        if rng.random() < c.loss:
            self.traffic.records.append({**rec, "fate": "lost"})
            return
        due, fate = t, "delivered"
        if rng.random() < c.straggler:
            due, fate = t + int(rng.integers(1, c.max_delay + 1)), "delayed"
        copies = 2 if rng.random() < c.duplicate else 1
        if copies == 2 and fate == "delivered":
            fate = "duplicated"
        self.traffic.records.append({**rec, "fate": fate})
        for _ in range(copies):
            self._seq += 1
            self._queue.append((due, self._seq, direction, dst, arrays, meta))

    def _due(self, direction: str) -> list:
        due = [q for q in self._queue if q[0] <= self.round and q[2] == direction]
        self._queue = [q for q in self._queue if not (q[0] <= self.round
                                                      and q[2] == direction)]
        due.sort(key=lambda q: q[1])
        if self.cond.reorder and len(due) > 1:
            due = [due[i] for i in self.rng.permutation(len(due))]
        return due

    def step(self) -> dict:
        """One round: requests down, local work, replies up, aggregation."""
        self.round += 1
        online = {cid: self.rng.random() >= self.cond.dropout for cid in self.clients}
        for cid, msg in self.server.start_round().items():
            arrays, meta = encode(msg)
            if not online.get(cid, False):
                self.traffic.records.append({"round": self.round, "direction": "down",
                                             "src": "server", "dst": cid, "kind": msg.KIND,
                                             "nbytes": message_nbytes(arrays, meta),
                                             "fate": "offline"})
                continue
            self._post("down", "server", cid, arrays, meta)
        for _, _, _, cid, arrays, meta in self._due("down"):
            if not online.get(cid, False):
                continue
            try:
                msg = decode(arrays, meta, self.server.spec)
            except MessageError as exc:
                self.client_rejections.append((self.round, cid, exc.reason))
                logger.warning("client %s rejected a request: %s", cid, exc)
                continue
            reply = self.clients[cid].handle(msg)
            if reply is not None:
                self._post("up", cid, "server", *encode(reply))
        for _, _, _, _, arrays, meta in self._due("up"):
            self.server.receive(arrays, meta)
        return self.server.finish_round()

    def run(self, n_rounds: int) -> Traffic:
        """``n_rounds`` more rounds (a progress bar where the caller switched them on, see
        :mod:`shiftlearn._progress`), then every message still queued is recorded as
        undelivered."""
        for _ in track(range(n_rounds), description="federated rounds"):
            self.step()
        for q in self._queue:
            self.traffic.records.append({"round": q[0], "direction": q[2], "src": None,
                                         "dst": q[3], "kind": q[5].get("kind"), "nbytes": 0,
                                         "fate": "undelivered"})
        self._queue = []
        return self.traffic
