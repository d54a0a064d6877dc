"""``shiftlearn federated``: federated RF-TCA jobs.

Run a job in the fault-injecting simulator, on a Flower loopback (a SuperLink and SuperNodes on
127.0.0.1), or write the Flower app folder used to deploy the same job across machines::

    shiftlearn federated simulate --set protocol=iterative rounds=50 --loss 0.3
    shiftlearn federated simulate --set dataset=digits target=usps extractor=cnn  # deep model
    shiftlearn federated simulate --source a.csv b.csv --target t.csv --label-column y
    shiftlearn federated loopback --nodes 4 --set protocol=oneshot
    shiftlearn federated loopback --set secure-aggregation=true   # one-shot under SecAgg+
    shiftlearn federated app ./fedrftca-app      # its README.md: the deployment steps
    shiftlearn federated app ./digits-app --set dataset=digits   # resolved digits settings
    shiftlearn federated certs ./tls --host server.example.org    # private CA + server cert
    shiftlearn federated node-keys ./keys --nodes 4               # SuperNode key pairs
    shiftlearn federated keys                    # every job key and its default

``simulate`` and ``loopback`` print a table (target accuracy beside its baselines, rounds,
bytes, bandwidth, rejected replies, excluded or dropped clients, the transport) or, with
``--json``, the whole result. ``loopback`` runs with TLS and SuperNode authentication unless
``--insecure`` or ``--no-auth``; it needs the ``federated`` extra, and jobs with a trained
extractor the ``deep`` extra. Design notes: ``docs/dev/federated.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from ._common import count, info, print_table

#: Job keys whose value counts something and has a floor above 0.
_FLOORS = {"num-clients": 2, "n-per-client": 2, "n-features": 1, "n-components": 1,
           "rounds": 1, "local-steps": 1, "classifier-every": 1, "secagg-int-bits": 1,
           "clients-per-domain": 1}


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1], got {value:g}")
    return value


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "federated", parents=parents,
        help="federated RF-TCA: simulate, Flower loopback run, app folder, job keys",
        description="Federated RF-TCA jobs (iterative FedRF-TCA or one-shot exact RF-TCA): "
                    "in the fault-injecting simulator, on a local Flower deployment, or as a "
                    "Flower app folder for real machines.",
        epilog="Job keys and their defaults: `shiftlearn federated keys`.")
    sub = p.add_subparsers(dest="action", required=True, title="actions",
                           metavar="{simulate,loopback,app,certs,node-keys,keys}")
    s = sub.add_parser("simulate", parents=parents,
                       help="run a job in the fault-injecting simulator",
                       description="Run a federated job in-process, with simulated message "
                                   "loss, client dropout, stragglers and duplicates.")
    s.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="job keys, e.g. protocol=iterative rounds=50")
    for name, what in (("loss", "a message is lost"),
                       ("dropout", "a client is offline for a whole round"),
                       ("straggler", "a message is delayed"),
                       ("duplicate", "a message is delivered twice")):
        s.add_argument(f"--{name}", type=_probability, default=0.0, metavar="P",
                       help=f"probability that {what} (default 0)")
    s.add_argument("--reorder", action="store_true",
                   help="shuffle the delivery order within each round")
    s.add_argument("--net-seed", type=int, default=0, metavar="N",
                   help="seed of the simulated network's faults (default 0)")
    lp = sub.add_parser("loopback", parents=parents,
                        help="a SuperLink and SuperNodes on 127.0.0.1: run one job, stop",
                        description="Start a Flower SuperLink and one SuperNode per client on "
                                    "127.0.0.1, run one job, stop them (needs the federated "
                                    "extra).")
    lp.add_argument("--nodes", type=count(2), default=None, metavar="N",
                    help="SuperNodes to start, one per client (default: the job's clients, "
                         "4 for the synthetic blobs)")
    lp.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="job keys, e.g. protocol=oneshot dataset=office_caltech")
    lp.add_argument("--insecure", action="store_true",
                    help="plain text and no node authentication (default: TLS with a private "
                         "CA made for the run, and only registered SuperNode keys may join)")
    lp.add_argument("--no-auth", action="store_true",
                    help="TLS, but without SuperNode authentication")
    a = sub.add_parser("app", parents=parents,
                       help="write the Flower app folder (pyproject.toml) for `flwr run`",
                       description="Write the Flower app folder whose components are this "
                                   "installed package's server and client apps.")
    a.add_argument("directory", help="folder to write (created if missing)")
    a.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="job keys written into the app's run config, resolved with the data "
                        "set's defaults, e.g. dataset=digits")
    c = sub.add_parser("certs", parents=parents,
                       help="create a private CA and a SuperLink certificate (TLS)",
                       description="Write ca.pem, ca.key, server.pem and server.key: a private "
                                   "certificate authority and a SuperLink certificate for the "
                                   "given host names/addresses.")
    c.add_argument("directory", help="folder to write (created if missing)")
    c.add_argument("--host", action="append", default=None, metavar="NAME",
                   help="host name or IP address the SuperLink is reached at (repeatable; "
                        "default 127.0.0.1 and localhost)")
    c.add_argument("--days", type=count(1), default=365, metavar="N",
                   help="validity in days (default 365)")
    c.add_argument("--force", action="store_true",
                   help="replace a CA, certificate or key that exists in the folder (without "
                        "it they are refused; a symbolic link is refused always)")
    nk = sub.add_parser("node-keys", parents=parents,
                        help="create SuperNode key pairs for node authentication",
                        description="Write node<i>.key (for flower-supernode "
                                    "--auth-supernode-private-key) and node<i>.pub (for flwr "
                                    "supernode register), EC P-384, OpenSSH format.")
    nk.add_argument("directory", help="folder to write (created if missing)")
    nk.add_argument("--nodes", type=count(1), default=4, metavar="N",
                    help="key pairs to write (default 4)")
    nk.add_argument("--force", action="store_true",
                    help="replace key files that exist in the folder (without it they are "
                         "refused; a symbolic link is refused always)")
    k = sub.add_parser("keys", parents=parents, help="list the job keys and their defaults",
                       description="List every job key (Flower run-config name) and its "
                                   "default.")
    for action in (s, lp, a):
        g = action.add_argument_group(
            "your own files (the job's data set files: one table per client)")
        g.add_argument("--source", nargs="+", default=None, metavar="FILE",
                       help="the sources' tables, one per client (CSV, TSV, Parquet, ...)")
        g.add_argument("--target", default=None, metavar="FILE",
                       help="the target client's table (its label column is optional: "
                            "used only to score the model)")
        g.add_argument("--label-column", default=None, metavar="COLUMN",
                       help="the label column: a header name or an index (default -1, the "
                            "last); name it to find the target's optional labels")
    for action in (s, lp, c, nk):
        action.add_argument("--json", action="store_true",
                            help="print the result as JSON (for programs) instead of a table")
    for action in (s, lp, a, c, nk, k):  # errors name the action: "shiftlearn federated simulate"
        action.set_defaults(_prog=action.prog)
    return p


def _convert(key: str, text: str, default, shown: str | None = None):
    """``text`` as the type of ``default`` (bool, int, float or str), checked; ``shown`` is the
    default the message names (the data set's own, where it brings one)."""
    def bad(kind: str) -> ValueError:
        return ValueError(f"--set {key}={text}: {key} takes {kind} "
                          f"({shown or f'default {default!r}'}).")
    if isinstance(default, bool):
        low = text.strip().lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise bad("true or false")
        return low in ("true", "1", "yes")
    if isinstance(default, int):
        try:
            value = int(text)
        except ValueError:
            raise bad("a whole number") from None
        floor = _FLOORS.get(key, 0)
        if value < floor:
            raise bad(f"a whole number of at least {floor}")
        return value
    if isinstance(default, float):
        try:
            value = float(text)
        except ValueError:
            raise bad("a number") from None
        if not math.isfinite(value) or value < 0:
            raise bad("a finite number of 0 or more")
        return value
    return text


def parse_sets(items: list[str] | None) -> dict:
    """``["rounds=50", ...]`` -> ``{"rounds": 50, ...}`` typed as the job's defaults (the
    former key ``sigma`` mapped onto ``bandwidth`` with a ``FutureWarning``)."""
    from ..federated.jobs import (
        DEFAULTS,
        FORMER_KEYS,
        check_bandwidth,
        former_keys,
        job_config,
    )

    raw = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r}: write key=value, e.g. rounds=50.")
        if key in FORMER_KEYS:          # read for one release; job_config maps it, warning
            raw.append((key, value))
            continue
        if key not in DEFAULTS:
            raise ValueError(f"--set {item}: unknown job key {key!r}; the keys are "
                             f"{', '.join(DEFAULTS)} (defaults: `shiftlearn federated keys`).")
        raw.append((key, value))
    given = dict(raw)
    # the defaults this job starts from: a data set (and target) may bring their own
    chosen = {k: given[k] for k in ("dataset", "target") if k in given}
    try:
        start = job_config(chosen)
    except ValueError:                  # a bad data set or target: reported by the job itself
        start = dict(DEFAULTS)
    out = {}
    for key, value in raw:
        if key in FORMER_KEYS:
            out[key] = _convert(key, value, 0.0)
            continue
        shown = None
        if start[key] != DEFAULTS[key]:
            shown = f"default {start[key]!r} with dataset={start['dataset']}"
        out[key] = (check_bandwidth(value) if key == "bandwidth"
                    else _convert(key, value, DEFAULTS[key], shown))
    return former_keys(out)             # sigma=... -> bandwidth, with a FutureWarning


@contextlib.contextmanager
def _stop_on_signals():
    """SIGTERM and SIGHUP stop the command as Ctrl-C does (a ``KeyboardInterrupt`` raised in
    the main thread), so the ``with`` blocks unwind: the Flower processes are stopped and the
    folder with the run's private keys is removed. The previous handlers come back after."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    wanted = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    try:
        previous = {sig: signal.signal(sig, interrupt) for sig in wanted}
    except ValueError:           # not the main thread: leave the handlers alone
        previous = {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def flower_bin() -> Path:
    """The folder holding the Flower executables: the interpreter's, else the PATH's one.

    Raises the ``ImportError`` of :func:`~shiftlearn.federated.flower.check_flower` (it names
    ``pip install "shiftlearn[federated]"``) when neither has them or ``flwr`` is missing.
    """
    from ..federated.flower import FLOWER_EXECUTABLES, check_flower

    found = shutil.which(FLOWER_EXECUTABLES[0])
    folders = [Path(sys.executable).parent, *([Path(found).parent] if found else [])]
    for folder in folders:
        try:
            check_flower(folder)
        except ImportError:
            if folder is folders[-1]:
                raise
        else:
            return folder
    raise AssertionError("unreachable")  # pragma: no cover


def _summary(res: dict) -> dict:
    import numpy as np

    out = {}
    for k, v in res.items():
        if isinstance(v, np.ndarray):
            out[k] = {"shape": list(v.shape), "norm": float(np.linalg.norm(v))}
        elif k not in ("traceback", "job"):
            out[k] = v
    return out


def _headline(res: dict) -> str | None:
    """``target accuracy 48.4% (baseline source_only 47.1%)`` where the result has them."""
    acc = res.get("target_accuracy")
    if not isinstance(acc, int | float):
        return None
    parts = []
    for k, v in res.items():
        if not k.startswith("baseline"):
            continue
        if isinstance(v, dict):
            parts += [f"{k2} {100 * v2:.1f}%" for k2, v2 in v.items()
                      if isinstance(v2, int | float)]
        elif isinstance(v, int | float):
            parts.append(f"{k} {100 * v:.1f}%")
    return (f"target accuracy {100 * acc:.1f}%"
            + (f" (baseline: {', '.join(parts)})" if parts else ""))


#: The job keys the file options set (``--source``, ``--target``, ``--label-column``).
_FILE_OPTIONS = {"source": "source-files", "target": "target-file",
                 "label_column": "label-column"}


def _file_keys(args: argparse.Namespace, job: dict) -> None:
    """``--source``/``--target``/``--label-column`` -> the job keys of ``dataset=files``
    (:func:`_absolute` then makes the paths absolute)."""
    given = {o: getattr(args, o, None) for o in _FILE_OPTIONS}
    if all(v is None for v in given.values()):
        return
    if given["source"] is None and given["target"] is None:   # --label-column alone
        if job.get("dataset") != "files":
            raise ValueError("--label-column names the label column of your files: give "
                             "them with --source and --target (or --set dataset=files).")
        if "label-column" in job:
            raise ValueError("--label-column and --set label-column=... both set "
                             "label-column; give one of them.")
        job["label-column"] = given["label_column"]
        return
    if (given["source"] is None) != (given["target"] is None):
        raise ValueError("give --source (one or more files) and --target together.")
    for option, key in _FILE_OPTIONS.items():
        if given[option] is not None and key in job:
            raise ValueError(f"--{option.replace('_', '-')} and --set {key}=... both set "
                             f"{key}; give one of them.")
    if job.get("dataset", "files") != "files":
        raise ValueError(f"--source/--target run the job on your files (dataset=files), but "
                         f"--set dataset={job['dataset']} asks for a built-in data set; give "
                         "one of them.")
    job["dataset"] = "files"
    if given["source"] is not None:
        job["source-files"], job["target-file"] = list(given["source"]), given["target"]
    if given["label_column"] is not None:
        job["label-column"] = given["label_column"]


def _absolute(job: dict) -> None:
    """The job's file paths made absolute (a loopback's SuperNodes run in other folders)."""
    from ..federated.jobs import split_list

    if job.get("source-files"):
        job["source-files"] = [str(Path(p).expanduser().absolute())
                               for p in split_list(job["source-files"], "source-files")]
    if job.get("target-file"):
        job["target-file"] = str(Path(str(job["target-file"])).expanduser().absolute())


def _with_classes(job: dict) -> dict:
    """A files job whose SuperNodes each read only their own table needs the job key
    ``classes``: read every file here (all at hand), check them as the simulator does, and
    write the sources' classes into the job where it lists none."""
    from ..federated.jobs import file_classes, job_config, join_list, load_files

    if job.get("dataset") != "files":
        return job
    cfg = job_config(job)
    if not cfg["source-files"]:
        if not str(cfg["classes"]).strip():
            raise ValueError("a files job whose SuperNodes name their own files (--node-config "
                             "data-file) needs the classes: --set classes=a,b,... (and "
                             "num-clients, the sources + the target), or give the files with "
                             "--source and --target.")
        return job
    if not str(cfg["classes"]).strip():
        job = dict(job, classes=join_list([str(c) for c in file_classes(cfg)], "classes"))
    load_files(job_config(job))
    return job


def _job(args: argparse.Namespace) -> dict:
    job = parse_sets(args.set)
    _file_keys(args, job)
    _absolute(job)
    if "seed" in args._explicit:
        if "seed" in job and job["seed"] != args.seed:
            raise ValueError(f"--seed {args.seed} and --set seed={job['seed']} disagree; give "
                             "one of them.")
        job["seed"] = args.seed
    return job


def _print(args: argparse.Namespace, res: dict) -> None:
    """``--json``: the result as JSON on stdout; the headline and the warning on stderr."""
    print(json.dumps(_summary(res), indent=2, default=str))
    line = _headline(res)
    if line:
        info(args, line)
    if isinstance(res.get("warning"), str):
        info(args, f"warning: {res['warning']}")


# ------------------------------------------------------------------- the table for people ---
def _method(cfg: dict) -> str:
    """``one-shot RF-TCA``, ``FedRF-TCA (cnn extractor, fcnn classifier, vote)``, ..."""
    if cfg["protocol"] == "oneshot":
        return "one-shot RF-TCA" + (" under SecAgg+" if cfg["secure-aggregation"] else "")
    name = "FedAvg" if cfg["algorithm"] == "fedavg" else "FedRF-TCA"
    extras = [f"{cfg['extractor']} extractor"] if cfg["extractor"] != "none" else []
    extras += [f"{cfg['classifier']} classifier"] if cfg["classifier"] != "linear" else []
    extras += ["vote"] if cfg["vote"] else []
    extras += [f"message subsets {cfg['subsets']}"] if cfg["subsets"] != "I" else []
    return name + (f" ({', '.join(extras)})" if extras else "")


#: The target domain a job with ``target=""`` gets (``shiftlearn.federated._data``).
_DEFAULT_TARGET = {"office_caltech": "amazon", "digits": "usps"}


def _title(action: str, cfg: dict) -> str:
    if cfg["dataset"] == "files":
        from ..federated.jobs import split_list

        n = len(split_list(cfg["source-files"], "source-files"))
        data = (f"your files ({n} source{'s' * (n != 1)}, target "
                f"{Path(str(cfg['target-file'])).name})" if n else "your files")
        return f"federated {action}: {_method(cfg)} on {data}"
    target = cfg["target"] or _DEFAULT_TARGET.get(str(cfg["dataset"]), "")
    data = str(cfg["dataset"]) + (f", target {target}" if target else "")
    return f"federated {action}: {_method(cfg)} on {data}"


def _pct(value) -> str:
    return f"{100 * value:.1f}%"


def _bytes(n) -> str:
    from rich.filesize import decimal

    return f"{int(n):,} ({decimal(int(n))})"


#: What each baseline is, for the table (other keys are shown by name).
_BASELINES = {"source_only": "source only (same model, no adaptation)",
              "chance": "chance (1 / classes)"}


def summary_rows(res: dict) -> list[list[str]]:
    """The rows ``[quantity, value]`` of a job's table (what the result holds, in order)."""
    rows: list[list[str]] = []
    if res.get("status") not in (None, "ok"):
        rows.append(["status", str(res["status"])])
    transport = res.get("transport")
    if transport == "plain text":
        rows.append(["transport", "plain text (--insecure): no TLS, no node authentication"])
    elif isinstance(transport, str):
        rows.append(["transport", transport])
    acc = res.get("target_accuracy")
    if isinstance(acc, int | float):
        rows.append(["target accuracy", _pct(acc)])
        base = res.get("baseline")
        for k, v in (base.items() if isinstance(base, dict) else ()):
            if isinstance(v, int | float):
                rows.append([f"  baseline: {_BASELINES.get(k, k)}", _pct(v)])
    rounds = res.get("rounds")
    if isinstance(rounds, list):   # a Flower run: one entry per round
        rounds = len(rounds)
    if isinstance(rounds, int):
        rows.append(["rounds", str(rounds)])
    for key, what in (("bytes_up", "bytes sent, clients to server"),
                      ("bytes_down", "bytes sent, server to clients"),
                      ("wire_bytes_up", "bytes on the wire (Flower), up"),
                      ("wire_bytes_down", "bytes on the wire (Flower), down")):
        if isinstance(res.get(key), int | float):
            rows.append([what, _bytes(res[key])])
    if isinstance(res.get("sigma"), int | float):
        rows.append(["kernel bandwidth sigma", f"{res['sigma']:.4g}"])
    sec = res.get("secure_aggregation")
    err = sec.get("max_entry_error") if isinstance(sec, dict) else res.get("max_entry_error")
    if isinstance(err, int | float):
        rows.append(["SecAgg+ largest rounding error per entry", f"{err:.2g}"])
    rejected = res.get("rejections")
    if isinstance(rejected, dict) and sum(rejected.values()):
        rows.append(["replies rejected", ", ".join(f"{k} {v}" for k, v in rejected.items())])
    excluded = res.get("excluded")
    if isinstance(excluded, dict) and excluded:
        rows.append(["clients excluded at hello", ", ".join(
            f"{c} ({str(why).split(':')[0]})" for c, why in excluded.items())])
    dropped = sec.get("dropped") if isinstance(sec, dict) else None
    if isinstance(dropped, list) and dropped:
        rows.append(["clients dropped (model exact for the others)",
                     ", ".join(str(c) for c in dropped)])
    if isinstance(res.get("flwr_run_s"), int | float):
        rows.append(["Flower run time", f"{res['flwr_run_s']:.1f} s"])
    return rows


def _table(action: str, cfg: dict, res: dict, network: str | None = None) -> None:
    title = _title(action, cfg) + (f" ({network})" if network else "")
    print_table(["result", "value"], summary_rows(res), title=title)
    if isinstance(res.get("warning"), str):
        print(f"warning: {res['warning']}", flush=True)
    if isinstance(res.get("error"), str):
        print(f"error: {res['error']}", flush=True)


def _report(args: argparse.Namespace, cfg: dict, res: dict, network: str | None = None
            ) -> None:
    if args.json:
        _print(args, res)
    else:
        _table(args.action, cfg, res, network)


def _network(args: argparse.Namespace) -> str | None:
    """``loss 30%, reorder`` for the simulator's faults (None on a perfect network)."""
    faults = [f"{name} {_pct(getattr(args, name))}"
              for name in ("loss", "dropout", "straggler", "duplicate") if getattr(args, name)]
    faults += ["reorder"] if args.reorder else []
    return ("simulated network: " + ", ".join(faults)) if faults else None


def _score_oneshot(cfg: dict, res: dict) -> None:
    """Add ``target_accuracy``, ``baseline`` (and ``warning``) to a one-shot result."""
    from ..federated.jobs import load_all, oneshot_accuracy, oneshot_warning

    if cfg["protocol"] != "oneshot" or res.get("W") is None or "target_accuracy" in res:
        return
    parts = load_all(cfg)
    if parts[-1].y_true is None:     # a target file without labels: nothing to score
        return
    res.update(oneshot_accuracy(cfg, float(res["sigma"]), res["W"], parts))
    warning = oneshot_warning(res["target_accuracy"], res["baseline"])
    if warning:
        res["warning"] = warning


# ------------------------------------------------------------------------------- run -------
def _paths(args: argparse.Namespace, rows: list[list[str]], data) -> None:
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_table(["file", "path"], rows)


def run(args: argparse.Namespace) -> int:
    if args.action == "keys":
        from ..federated.jobs import DEFAULTS

        for k, v in DEFAULTS.items():
            print(f"{k} = {v!r}")
        return 0
    if args.action == "app":
        from ..federated.flower import SUPERLINK_PORT, write_app

        job = parse_sets(args.set)
        _file_keys(args, job)
        _absolute(job)
        folder = write_app(Path(args.directory), _with_classes(job))
        print(folder / "pyproject.toml")
        info(args, f"deploy it as {folder / 'README.md'} says: the SuperLink on "
             f"127.0.0.1:{SUPERLINK_PORT} of the server, every machine through "
             f"ssh -N -L {SUPERLINK_PORT}:127.0.0.1:{SUPERLINK_PORT} (its Control API "
             "lets whoever reaches the port run an app on every node).")
        return 0
    if args.action == "certs":
        from ..federated.flower import make_certificates

        certs = make_certificates(Path(args.directory), hosts=args.host or
                                  ("127.0.0.1", "localhost"), days=args.days, force=args.force)
        data = {k: str(v) if isinstance(v, Path) else list(v) for k, v in vars(certs).items()}
        _paths(args, [[k, v if isinstance(v, str) else ", ".join(v)] for k, v in data.items()],
               data)
        info(args, "SuperLink: flower-superlink " + " ".join(certs.superlink_args())
             + f"; SuperNodes: --root-certificates {certs.ca_cert}; keep {certs.ca_key} "
             "off the servers.")
        return 0
    if args.action == "node-keys":
        from ..federated.flower import make_node_keys

        keys = make_node_keys(Path(args.directory), args.nodes, force=args.force)
        data = [{"private_key": str(k.private_key), "public_key": str(k.public_key)}
                for k in keys]
        _paths(args, [[f"node {i} {kind}", str(path)] for i, d in enumerate(data)
                      for kind, path in (("private key", d["private_key"]),
                                         ("public key", d["public_key"]))], data)
        info(args, "node i: flower-supernode --auth-supernode-private-key <node<i>.key>; "
             "operator: flwr supernode register <node<i>.pub> <connection>; SuperLink: "
             "--enable-supernode-auth.")
        return 0
    from .._progress import task
    from ..datasets import DATA_HOME_ENV
    from ..federated.jobs import job_config

    if args.data_home is not None:   # read by the job's loaders, here and in the SuperNodes
        os.environ[DATA_HOME_ENV] = str(Path(args.data_home).expanduser())
    job = _job(args)
    cfg = job_config(job)
    if args.action == "simulate":
        from ..federated import NetworkConditions
        from ..federated.jobs import simulate_job

        cond = NetworkConditions(loss=args.loss, dropout=args.dropout,
                                 straggler=args.straggler, duplicate=args.duplicate,
                                 reorder=args.reorder, seed=args.net_seed)
        with task(f"simulating {_method(cfg)}") as step:
            res = simulate_job(job, cond)
            if cfg["protocol"] == "oneshot":
                step(0, description="scoring the one-shot W on the target's labels")
                _score_oneshot(cfg, res)
        _report(args, cfg, res, _network(args))
        return 0
    folder = flower_bin()
    from ..federated.flower import LoopbackDeployment
    from ..federated.jobs import n_clients_of

    if cfg["dataset"] == "files":
        with task("reading and checking the client files"):
            job = _with_classes(job)
            cfg = job_config(job)
    n_clients = n_clients_of(cfg)
    if args.nodes is None:
        args.nodes = n_clients if cfg["dataset"] == "files" else 4
    elif cfg["dataset"] == "files" and args.nodes != n_clients:
        raise ValueError(f"--nodes {args.nodes}, but the job has {n_clients} clients (one per "
                         "file); leave --nodes out or give every client a file.")

    if args.insecure:            # a security fact, shown even with --quiet
        print(f"{args._prog}: warning: --insecure: the SuperLink and the SuperNodes talk in "
              "plain text, without TLS or node authentication (any local process can read "
              "and change the messages).", file=sys.stderr, flush=True)
    with _stop_on_signals(), \
            task(f"Flower loopback: starting a SuperLink and {args.nodes} SuperNodes") as step, \
            tempfile.TemporaryDirectory() as tmp, \
            LoopbackDeployment(args.nodes, tmp, bin_dir=str(folder), insecure=args.insecure,
                               auth=not (args.insecure or args.no_auth)) as dep:
        step(0, description=f"Flower loopback: running {_method(cfg)}")
        # a round bar advanced from the ServerApp's streamed log (one-shot: count unknown)
        with task("Flower rounds", cfg["rounds"] if cfg["protocol"] == "iterative" else None
                  ) as rnd:
            res = dep.run(job, on_round=lambda done, _total: rnd(
                1, description=f"Flower rounds: {done} done"))
        if res.get("status") == "ok" and cfg["protocol"] == "oneshot":
            step(0, description="scoring the one-shot W on the target's labels")
            _score_oneshot(cfg, res)
    _report(args, cfg, res)
    if res.get("status") != "ok":
        info(args, f"{args._prog}: the Flower run ended with status {res.get('status')!r} "
             "(its error is printed with the result).")
        return 1
    return 0
