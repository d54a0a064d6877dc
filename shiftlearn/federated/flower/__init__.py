"""shiftlearn.federated.flower: the federated protocols on Flower, and their deployment.

* the apps (:mod:`shiftlearn.federated` protocol messages as Flower records):
  ``server_app`` and ``client_app``, the Flower app references
  ``shiftlearn.federated.flower:server_app`` / ``:client_app``; they need the ``federated``
  extra (``pip install shiftlearn[federated]``);
* an app folder for a deployment across machines (:func:`write_app`, :func:`app_readme`) and a
  SuperLink with its SuperNodes on this machine (:class:`LoopbackDeployment`);
* the TLS certificates and SuperNode authentication keys (:func:`make_certificates`,
  :func:`make_node_keys`; the ``cryptography`` package).

The names load on first use (importing this package imports neither ``flwr`` nor
``cryptography``), so the command line's app and certificate commands work without Flower.
The protocol itself, the jobs and the simulator are :mod:`shiftlearn.federated`'s; nothing
there imports this package.
"""

from __future__ import annotations

import importlib

#: public name -> its private module
_LAZY = {
    "client_app": "_apps", "server_app": "_apps", "to_records": "_apps",
    "from_records": "_apps", "reply_from_records": "_apps", "round_line": "_apps",
    "wire_nbytes": "_apps",
    "FLOWER_EXECUTABLES": "_deploy", "ROUND_LINE": "_deploy", "SUPERLINK_PORT": "_deploy",
    "LoopbackDeployment": "_deploy", "app_readme": "_deploy", "check_flower": "_deploy",
    "free_port": "_deploy", "live_processes": "_deploy", "stream_process": "_deploy",
    "wait_for_port": "_deploy", "write_app": "_deploy",
    "Certificates": "_tls", "NodeKey": "_tls", "make_certificates": "_tls",
    "make_node_keys": "_tls",
}

# a literal list: Flower finds an app reference's attribute by reading this file
__all__ = ["Certificates", "FLOWER_EXECUTABLES", "LoopbackDeployment", "NodeKey", "ROUND_LINE",
           "SUPERLINK_PORT", "app_readme", "check_flower", "client_app", "free_port",
           "from_records", "live_processes", "make_certificates", "make_node_keys",
           "reply_from_records", "round_line", "server_app", "stream_process", "to_records",
           "wait_for_port", "wire_nbytes", "write_app"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
