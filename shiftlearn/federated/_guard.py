"""Admission control: the server's (:class:`ReplyGuard`: decode, check sender and round, log and
count rejections) and the clients' (:func:`admit_request`)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from ._messages import MessageError, ProtocolSpec, decode

__all__ = ["Rejection", "ReplyGuard", "admit_request", "logger"]

logger = logging.getLogger("shiftlearn.federated")


def admit_request(client, req) -> bool:
    """A client's admission of a training request: ``True`` (and ``client.last_round``
    advanced) for a request addressed to ``client.client_id`` for a round after
    ``client.last_round``; otherwise the request is logged (WARNING), recorded in
    ``client.rejected`` as ``(round, reason)`` and refused (``False``). The one rule of every
    client (:class:`~shiftlearn.federated.IterativeClient`, the deep client)."""
    if req.client_id != client.client_id or req.round <= client.last_round:
        why = "not addressed to me" if req.client_id != client.client_id else "old round"
        client.rejected.append((req.round, why))
        logger.warning("client %s: ignored request for round %s (%s)", client.client_id,
                       req.round, why)
        return False
    client.last_round = req.round
    return True


@dataclass(frozen=True)
class Rejection:
    round: int
    client_id: int | None
    reason: str
    detail: str


@dataclass
class ReplyGuard:
    """Admit a reply only if it decodes, comes from a known client, answers the current round,
    is of the expected kind and is the first one from that client in this round.

    Anything else is logged (logger ``shiftlearn.federated``, WARNING) and recorded in
    :attr:`rejections`; it never reaches the aggregate. Reasons besides the decoding ones of
    :func:`~shiftlearn.federated.decode`: ``impersonation`` (the transport says the reply
    came from the node registered as another client), ``unknown_client``, ``wrong_kind``,
    ``stale_round`` (a replay or a straggler's late answer), ``future_round``, ``duplicate``.
    The sender check comes before the duplicate check, so a forgery never takes the genuine
    client's slot.
    """

    spec: ProtocolSpec
    known_clients: frozenset
    stats_shapes: dict | None = None
    rejections: list = field(default_factory=list)
    _seen: set = field(default_factory=set)

    def reject(self, round_: int, client_id, reason: str, detail: str) -> None:
        """Record and log one rejection (the detail cut to 300 characters: it may quote
        what a hostile peer sent)."""
        if len(detail) > 300:
            detail = detail[:297] + "..."
        self.rejections.append(Rejection(round_, client_id, reason, detail))
        logger.warning("round %s: rejected message from client %s (%s): %s",
                       round_, client_id, reason, detail)

    def admit(self, arrays, meta, *, kind: str, round_: int, commit: bool = True,
              sender: int | None = None, node=None):
        """Return the decoded message, or None (rejected, logged).

        ``sender``: the client id the transport vouches for (the one the sending node
        registered at hello; ``node`` names that node in the log line); a reply claiming
        another client is rejected as ``impersonation``. ``None``: no transport identity
        (the in-process simulator).

        ``commit=False`` leaves the (round, client) slot open until :meth:`commit`, so that a
        caller with further checks does not let a rejected forgery block the genuine reply.
        """
        claimed = meta.get("client_id") if isinstance(meta, dict) else None
        where = "" if node is None else f" (node {node})"
        if sender is not None and claimed != sender:
            self.reject(round_, sender, "impersonation",
                        f"node {node}, registered as client {sender}, sent a reply claiming "
                        f"client {repr(claimed)[:40]}")
            return None
        try:
            msg = decode(arrays, meta, self.spec, stats_shapes=self.stats_shapes)
        except MessageError as exc:
            self.reject(round_, claimed if sender is None else sender, exc.reason,
                        str(exc) + where)
            return None
        if msg.client_id not in self.known_clients:
            self.reject(round_, msg.client_id, "unknown_client",
                        f"client {msg.client_id} is not part of this run")
            return None
        if msg.KIND != kind:
            self.reject(round_, msg.client_id, "wrong_kind", f"got {msg.KIND}, expected {kind}")
            return None
        if msg.round < round_:
            self.reject(round_, msg.client_id, "stale_round",
                        f"reply for round {msg.round} arrived in round {round_}")
            return None
        if msg.round > round_:
            self.reject(round_, msg.client_id, "future_round",
                        f"reply claims round {msg.round} during round {round_}")
            return None
        key = (msg.round, msg.client_id)
        if key in self._seen:
            self.reject(round_, msg.client_id, "duplicate",
                        f"second reply from client {msg.client_id} in round {round_}")
            return None
        if commit:
            self._seen.add(key)
        return msg

    def commit(self, msg) -> None:
        """Mark ``msg``'s (round, client) as used (later copies are duplicates)."""
        self._seen.add((msg.round, msg.client_id))

    def counts(self) -> dict[str, int]:
        """Rejections per reason."""
        return dict(Counter(r.reason for r in self.rejections))
