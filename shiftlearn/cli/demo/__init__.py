"""``shiftlearn demo <name>``: the papers' demos, one module each.

``subspace`` (raw 1NN against TCA/SCA and their random-feature versions on a real data set),
``boosting`` (multi-task boosting on the synthetic monotone-shift pair), ``marginal`` (marginal
transfer against pooling on rotated-ellipse tasks) and ``splits`` (validation splits of a real
data set compared by their train/validation MMD).
"""

from __future__ import annotations

import argparse
import importlib

#: The demos, in the order ``shiftlearn demo --help`` lists them (modules of this package).
DEMOS = ("subspace", "boosting", "marginal", "splits")


def add_parser(subparsers, parents, *, register) -> argparse.ArgumentParser:
    """Add ``demo`` and its own subcommands; ``register(sub, module, parents)`` adds one."""
    p = subparsers.add_parser(
        "demo", parents=parents, help="the papers' demos: subspace, boosting, marginal, splits",
        description="Rerun a demo of the papers behind shiftlearn on real or synthetic data.",
        epilog="Run `shiftlearn demo <name> --help` for the options of a demo.")
    sub = p.add_subparsers(dest="demo", required=True, title="demos",
                           metavar="{" + ",".join(DEMOS) + "}")
    for name in DEMOS:
        register(sub, importlib.import_module(f"{__name__}.{name}"), parents)
    return p
