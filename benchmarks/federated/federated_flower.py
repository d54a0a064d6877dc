"""Flower loopback deployment: a SuperLink and 4 SuperNodes (3 Office+Caltech sources and the
target) on 127.0.0.1, both protocols, checked against the simulator, timed end to end.

    python benchmarks/federated/federated_flower.py [--rounds 5] [--target amazon]

Internals on purpose: the federated simulation harness (``_deploy.LoopbackDeployment``,
``_deploy.live_processes``, ``_jobs.simulate_job``), which ``shiftlearn.federated`` does not
export (the CLI runs on the same functions). ``tests/house/test_benchmarks.py`` imports this script,
so a rename fails the test suite.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, round_bar, track, write_results  # noqa: E402

from shiftlearn.federated.flower import LoopbackDeployment, live_processes  # noqa: E402
from shiftlearn.federated.jobs import simulate_job  # noqa: E402


def _sigterm(*_):
    raise SystemExit(143)   # so that the deployment's finally/stop runs


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--target", default="amazon")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    machine = header("Flower loopback deployment, 4 SuperNodes")
    machine["load_average_at_start"] = os.getloadavg()
    base = {"dataset": "office_caltech", "target": args.target, "n-features": 250,
            "n-components": 50, "batch-size": 128, "round-timeout-s": 600.0}
    jobs = [("oneshot", {**base, "protocol": "oneshot"}),
            ("iterative", {**base, "protocol": "iterative", "rounds": args.rounds})]
    rows, data = [], []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        dep = LoopbackDeployment(4, tmp)
        try:
            dep.start()
            pgids = [p.pid for p in dep.procs]
            start_s = time.monotonic() - t0
            for name, job in track(jobs, "jobs"):
                t1 = time.monotonic()
                with round_bar(f"{name}: Flower rounds", job.get("rounds")) as on_round:
                    res = dep.run(job, timeout=1800, on_round=on_round)
                wall = time.monotonic() - t1
                sim = simulate_job(job)
                d = {"protocol": name, "status": res["status"], "wall_s": wall,
                     "server_app_s": res.get("wall_s"), "hello_s": res.get("hello_s"),
                     "round_s": [r["seconds"] for r in res.get("rounds", [])],
                     "bytes_up": res.get("bytes_up"), "bytes_down": res.get("bytes_down"),
                     "sim_bytes_up": sim["bytes_up"], "sim_bytes_down": sim["bytes_down"],
                     "max_abs_dW_vs_sim": float(np.max(np.abs(res["W"] - sim["W"]))),
                     "target_accuracy": res.get("target_accuracy"),
                     "sim_target_accuracy": sim.get("target_accuracy"),
                     "flwr_exit_code": res.get("flwr_exit_code")}
                data.append(d)
                print(d, flush=True)
                rows.append({
                    "job": name + (f" ({args.rounds} rounds)" if name == "iterative" else ""),
                    "status": d["status"], "flwr run wall (s)": f"{wall:.1f}",
                    "mean s / round": f"{np.mean(d['round_s']):.1f}",
                    "bytes up / down": f"{d['bytes_up']} / {d['bytes_down']}",
                    "= simulator bytes": d["bytes_up"] == sim["bytes_up"]
                    and d["bytes_down"] == sim["bytes_down"],
                    "max abs(W - W_sim)": f"{d['max_abs_dW_vs_sim']:.1e}",
                    "target acc. Flower / sim": (
                        "-" if d["target_accuracy"] is None else
                        f"{100 * d['target_accuracy']:.1f} / "
                        f"{100 * d['sim_target_accuracy']:.1f}")})
        finally:
            dep.stop()
        total = time.monotonic() - t0
        leftover = live_processes(pgids) if dep.procs == [] else None
    body = (f"Office+Caltech SURF, sources C, D, W -> target {args.target}; N = 250, m = 50. "
            f"Deployment start (SuperLink ready + 4 SuperNodes spawned): {start_s:.1f} s; "
            f"whole benchmark incl. both jobs, simulator re-runs and teardown: {total:.1f} s. "
            f"Load average at start: {machine['load_average_at_start']} on 2 cores "
            "(shared machine: round latency is dominated by starting a fresh ClientApp "
            "process per message and by the SuperNodes' 3 s polling).\n\n"
            + markdown_table(rows) +
            f"\n\nProcesses left after teardown: {leftover}.\n")
    write_results("federated_flower", "Flower loopback deployment", body,
                  {"jobs": data, "start_s": start_s, "total_s": total}, machine)


if __name__ == "__main__":
    main()
