"""``shiftlearn federated ...``: run a job in the simulator, on a local Flower loopback, or write
the Flower app directory used to deploy the same job across machines.

    shiftlearn federated simulate --set protocol=iterative rounds=50 --loss 0.3
    shiftlearn federated loopback --nodes 4 --set protocol=oneshot
    shiftlearn federated app ./fedrftca-app      # then: flwr run ./fedrftca-app <superlink>
    shiftlearn federated keys                    # every job key and its default
"""

from __future__ import annotations

import argparse
import json
import tempfile

import numpy as np

from ._jobs import DEFAULTS

__all__ = ["main"]


def _parse_sets(items) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        if k not in DEFAULTS:
            raise SystemExit(f"unknown job key {k!r}; see 'shiftlearn federated keys'")
        default = DEFAULTS[k]
        out[k] = type(default)(v) if not isinstance(default, bool) else v.lower() == "true"
    return out


def _summary(res: dict) -> dict:
    out = {}
    for k, v in res.items():
        if isinstance(v, np.ndarray):
            out[k] = {"shape": list(v.shape), "norm": float(np.linalg.norm(v))}
        elif k not in ("traceback", "job"):
            out[k] = v
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="shiftlearn federated",
                                 description="Federated RF-TCA jobs (simulator or Flower).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("simulate", help="run a job in the fault-injecting simulator")
    s.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    for name in ("loss", "dropout", "straggler", "duplicate"):
        s.add_argument(f"--{name}", type=float, default=0.0)
    s.add_argument("--reorder", action="store_true")
    s.add_argument("--net-seed", type=int, default=0)
    lp = sub.add_parser("loopback", help="SuperLink + SuperNodes on 127.0.0.1, run, stop")
    lp.add_argument("--nodes", type=int, default=4)
    lp.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    a = sub.add_parser("app", help="write the Flower app directory (pyproject.toml)")
    a.add_argument("directory")
    sub.add_parser("keys", help="list job keys and defaults")
    args = ap.parse_args(argv)

    if args.cmd == "keys":
        for k, v in DEFAULTS.items():
            print(f"{k} = {v!r}")
        return 0
    if args.cmd == "app":
        from ._deploy import write_app

        print(write_app(args.directory) / "pyproject.toml")
        return 0
    job = _parse_sets(args.set)
    if args.cmd == "simulate":
        from ._jobs import simulate_job
        from ._simulator import NetworkConditions

        cond = NetworkConditions(loss=args.loss, dropout=args.dropout,
                                 straggler=args.straggler, duplicate=args.duplicate,
                                 reorder=args.reorder, seed=args.net_seed)
        print(json.dumps(_summary(simulate_job(job, cond)), indent=2, default=str))
        return 0
    from ._deploy import LoopbackDeployment

    with tempfile.TemporaryDirectory() as tmp, LoopbackDeployment(args.nodes, tmp) as dep:
        res = dep.run(job)
    print(json.dumps(_summary(res), indent=2, default=str))
    return 0 if res.get("status") == "ok" else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
