"""What TLS, SuperNode authentication and SecAgg+ cost, and how exact SecAgg+ is.

    python benchmarks/federated/federated_secure.py [--dataset office_caltech|synthetic]
                                                    [--skip-loopback]

Part 1 (in-process): the fixed point that carries the one-shot statistics through SecAgg+
(``shiftlearn.federated._secagg``): for each ``frac_bits``, the largest principal angle between
the secure one-shot ``W`` and the float one-shot ``W`` (= centralized RF-TCA, tested to 1e-13),
the largest error of an aggregated statistic, the limbs per value and the upload per client.

Part 2 (Flower loopback, 4 SuperNodes on 127.0.0.1, one deployment per setting): the same
one-shot job in plain text, with TLS, with TLS + SuperNode authentication, with TLS + auth +
SecAgg+, and the last with one source dropping out after the key exchange. Reported: start-up
time (certificates, SuperLink, key registration, SuperNodes), ``flwr run`` wall time, the
ServerApp's protocol time, and the bytes of every Flower message the ServerApp pushed (down)
and pulled (up): ``Message.deflate`` of the message and its records; TLS framing is not
counted.

Internals on purpose: ``_deploy.LoopbackDeployment``, ``_jobs``, ``_secagg`` (the harness the
CLI and tests use; ``shiftlearn.federated`` does not export them).
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

from shiftlearn.adaptation import rf_stats, rftca_from_stats  # noqa: E402
from shiftlearn.federated._data import agree_bandwidth, load_all, local_bandwidth  # noqa: E402
from shiftlearn.federated._secagg import (  # noqa: E402
    FixedPointCodec,
    emulate_secure_sum,
    secure_arrays_to_stats,
    secure_stats_arrays,
    subspace_angle,
)
from shiftlearn.federated.flower import LoopbackDeployment, live_processes  # noqa: E402
from shiftlearn.federated.jobs import job_config, oneshot_config, simulate_job  # noqa: E402

FRAC_BITS = (12, 16, 20, 24, 28, 32)


def _sigterm(*_):
    raise SystemExit(143)   # so that the deployment's finally/stop runs


def _job(dataset: str) -> dict:
    if dataset == "office_caltech":
        return {"dataset": "office_caltech", "target": "amazon", "n-features": 250,
                "n-components": 50, "round-timeout-s": 600.0, "protocol": "oneshot"}
    return {"dataset": "synthetic", "n-per-client": 120, "protocol": "oneshot",
            "round-timeout-s": 600.0}


def quantisation_sweep(job: dict) -> list[dict]:
    cfg = job_config(job)
    parts = load_all(cfg)
    sigma = agree_bandwidth([local_bandwidth(p.X) for p in parts])
    oc = oneshot_config(cfg, sigma)
    omega = oc.omega(parts[0].X.shape[1])
    stats = [rf_stats(p.X, p.y, np.full(len(p.X), p.domain_id), omega) for p in parts]
    W0 = simulate_job(job)["W"]
    arrays = [secure_stats_arrays(s) for s in stats]
    exact = {k: np.sum([a[k] for a in arrays], axis=0) for k in arrays[0]}
    n_values = sum(v.size for v in arrays[0].values())
    rows = []
    for fb in track(FRAC_BITS, "frac_bits"):
        codec = FixedPointCodec(frac_bits=fb, int_bits=20, n_parties=len(parts))
        t0 = time.perf_counter()
        agg = emulate_secure_sum(arrays, codec)
        codec_s = time.perf_counter() - t0
        W, _ = rftca_from_stats(secure_arrays_to_stats(agg, 2 * oc.n_features),
                                oc.n_components, oc.mu, penalty=oc.penalty)
        err = max(float(np.max(np.abs(agg[k] - exact[k]))) for k in exact)
        rows.append({"frac_bits": fb, "limbs": codec.n_limbs, "limb_bits": codec.limb_bits,
                     "max stat error": f"{err:.1e}",
                     "bound K 2^-(f+1)": f"{len(parts) * 2.0 ** -(fb + 1):.1e}",
                     "angle to float W (rad)": f"{subspace_angle(W, W0):.1e}",
                     "angle < 1e-6": subspace_angle(W, W0) < 1e-6,
                     "upload / client (bytes)": 8 * codec.n_limbs * n_values,
                     "encode+sum+decode (s)": f"{codec_s:.2f}"})
        print(rows[-1], flush=True)
    return rows


SETTINGS = [  # name, LoopbackDeployment kwargs, job overrides
    ("plain text", {"insecure": True}, {}),
    ("TLS", {"auth": False}, {}),
    ("TLS + auth", {}, {}),
    ("TLS + auth + SecAgg+", {}, {"secure-aggregation": True}),
    ("TLS + auth + SecAgg+, 1 client drops", {"node_configs": {1: 'fail-stage="secagg-collect"'}},
     {"secure-aggregation": True}),
]


def loopback(job: dict) -> list[dict]:
    out = []
    for name, kwargs, over in track(SETTINGS, "loopback settings"):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            dep = LoopbackDeployment(4, tmp, **kwargs)
            pgids = []
            try:
                dep.start()
                pgids = [p.pid for p in dep.procs]
                start_s = time.monotonic() - t0
                with round_bar(f"{name}: Flower rounds") as on_round:
                    res = dep.run({**job, **over}, timeout=1800, on_round=on_round)
            finally:
                dep.stop()
            left = live_processes(pgids)
        d = {"setting": name, "status": res["status"], "start_s": start_s,
             "flwr_run_s": res["flwr_run_s"], "protocol_s": res.get("protocol_s"),
             "hello_s": res.get("hello_s"), "rounds": res.get("rounds"),
             "wire_bytes_up": res.get("wire_bytes_up"),
             "wire_bytes_down": res.get("wire_bytes_down"),
             "secure_aggregation": res.get("secure_aggregation"), "W": res.get("W"),
             "left_processes": left, "load_average": os.getloadavg()}
        print({k: v for k, v in d.items() if k != "W"}, flush=True)
        out.append(d)
    return out


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="office_caltech",
                    choices=["office_caltech", "synthetic"])
    ap.add_argument("--skip-loopback", action="store_true")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    machine = header("Secure federation: TLS, node authentication, SecAgg+")
    machine["load_average_at_start"] = os.getloadavg()
    job = _job(args.dataset)
    sweep = quantisation_sweep(job)
    body = (f"Job: {job}. 4 clients (3 sources + target); the float one-shot W equals "
            "centralized RF-TCA (max abs difference ~1e-14, `federated_office.py`).\n\n"
            "## 1. Fixed point through SecAgg+ (in-process, exact emulation of the sum)\n\n"
            + markdown_table(sweep) + "\n")
    data: dict = {"job": job, "sweep": sweep}
    if not args.skip_loopback:
        runs = loopback(job)
        plain = simulate_job(job)["W"]
        sec = next(r for r in runs if r["setting"] == "TLS + auth + SecAgg+")
        emu = simulate_job({**job, "secure-aggregation": True})["W"]
        base = runs[0]["wire_bytes_up"] + runs[0]["wire_bytes_down"]
        rows = []
        for r in runs:
            up, down = r["wire_bytes_up"], r["wire_bytes_down"]
            rows.append({
                "setting": r["setting"], "status": r["status"],
                "start (s)": f"{r['start_s']:.1f}", "flwr run (s)": f"{r['flwr_run_s']:.1f}",
                "protocol (s)": f"{r['protocol_s']:.1f}",
                "bytes up": up, "bytes down": down,
                "x plain (up+down)": f"{(up + down) / base:.2f}",
                "contributors": (r["secure_aggregation"] or {}).get("contributors", "all"),
                "angle to float W": ("-" if "drops" in r["setting"] else
                                     f"{subspace_angle(r['W'], plain):.1e}"),
                "processes left": r["left_processes"]})
        body += ("\n## 2. Flower loopback, 4 SuperNodes, one deployment per setting\n\n"
                 + markdown_table(rows) +
                 f"\n\nSecAgg+ W on Flower equal to the in-process emulation: "
                 f"{bool(np.array_equal(sec['W'], emu))}. Load averages after each run: "
                 + ", ".join(f"{r['setting']}: {tuple(round(x, 1) for x in r['load_average'])}"
                             for r in runs)
                 + " (2 shared cores; Flower starts one ClientApp process per message and "
                   "SuperNodes poll every 3 s, so times are dominated by that, not by "
                   "cryptography).\n")
        data["loopback"] = [{k: v for k, v in r.items() if k != "W"} for r in runs]
        data["secagg_equals_emulation"] = bool(np.array_equal(sec["W"], emu))
    write_results("federated_secure", "Secure federation: TLS, node authentication, SecAgg+",
                  body, data, machine)


if __name__ == "__main__":
    main()
