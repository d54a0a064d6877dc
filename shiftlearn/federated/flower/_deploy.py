"""Start a Flower SuperLink and K SuperNodes on 127.0.0.1, run jobs, stop everything.

Used by the integration test, the benchmark and ``shiftlearn federated flower``. Every process
gets its own session (``start_new_session=True``); :meth:`LoopbackDeployment.stop` kills
exactly those process groups (TERM, then KILL), also when the job failed. ``flwr run`` exits 0
even if the ServerApp crashed, so :meth:`run` trusts only the result file it asks the
ServerApp to write.

By default the deployment uses TLS (a private CA made under ``workdir``) and SuperNode
authentication (every node's key registered before it starts); ``insecure=True`` is plain text,
``auth=False`` TLS only. :meth:`LoopbackDeployment.start` raises ``ImportError`` naming
``pip install "shiftlearn[federated]"`` when the ``federated`` extra is missing, before it
starts anything. :func:`write_app` writes the app folder for a deployment across machines,
with the steps (:func:`app_readme`). Design notes: ``docs/dev/federated.md``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..jobs import baseline, baseline_warning, job_config

__all__ = ["FLOWER_EXECUTABLES", "ROUND_LINE", "SUPERLINK_PORT", "LoopbackDeployment",
           "app_readme", "check_flower", "free_port", "live_processes", "stream_process",
           "wait_for_port", "write_app"]

#: The executables of the ``federated`` extra that a loopback deployment starts.
FLOWER_EXECUTABLES = ("flower-superlink", "flower-supernode", "flwr")

#: The SuperLink's one HTTP port in a deployment across machines (Flower's default): it serves
#: the Fleet API (``/v1/fleet``), the Control API (``/v1/control``) and the ServerApp runtime
#: (``/v1/runtime``). The app folder's README binds it to 127.0.0.1 on the server.
SUPERLINK_PORT = 8000

#: The ServerApp's line after each protocol round (``flower.round_line``), anywhere in a line
#: of the streamed log (Flower prefixes its level): rounds done, total (``?``: not known).
ROUND_LINE = re.compile(r"shiftlearn round (\d+)/(\d+|\?) done")


def stream_process(cmd: list[str], env: dict, timeout: float,
                   on_line: Callable[[str], None] | None = None
                   ) -> subprocess.CompletedProcess:
    """Run ``cmd`` (own session, stderr into stdout), calling ``on_line`` with each line of
    its output as it arrives, on this thread. Past ``timeout`` seconds the process group is
    killed and ``subprocess.TimeoutExpired`` raised (with the output so far), as
    ``subprocess.run(..., timeout=)`` does. Returns the exit code and the whole output."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    out, pending = bytearray(), b""
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(cmd, timeout, output=bytes(out))
                if not sel.select(min(left, 1.0)):
                    if proc.poll() is not None:   # exited; a child may still hold the pipe
                        break
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:           # end of output: the process closed its stdout
                    break
                out += chunk
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines if on_line is not None else ():
                    on_line(line.decode(errors="replace"))
        if pending and on_line is not None:
            on_line(pending.decode(errors="replace"))
        rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except BaseException:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        raise
    finally:
        proc.stdout.close()
    return subprocess.CompletedProcess(cmd, rc, bytes(out), b"")


def check_flower(bin_dir) -> None:
    """Raise ``ImportError`` (naming the install command) unless ``flwr`` is importable and
    its executables are in ``bin_dir``."""
    missing = [] if importlib.util.find_spec("flwr") is not None else ["the flwr package"]
    missing += [exe for exe in FLOWER_EXECUTABLES if not (Path(bin_dir) / exe).is_file()]
    if missing:
        raise ImportError(
            "a Flower loopback deployment needs the federated extra, but "
            + ", ".join(missing) + f" {'is' if len(missing) == 1 else 'are'} missing (looked "
            f"for the executables in {bin_dir}); install it with: "
            'pip install "shiftlearn[federated]"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float, what: str) -> None:
    """Wait until 127.0.0.1:``port`` accepts TCP connections (``RuntimeError`` naming ``what``
    if ``proc`` exits or ``timeout`` passes first)."""
    t0 = time.monotonic()
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() - t0 > timeout:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.2)


def live_processes(pgids) -> list[int]:
    """PIDs of non-zombie processes whose process group is in ``pgids`` (Linux ``/proc``)."""
    pgids = {int(g) for g in pgids}
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in pgids:
            out.append(int(entry))
    return out


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v))


def write_app(directory: Path, job: dict | None = None) -> Path:
    """A pyproject-only Flower app whose components are this installed package's apps.

    Its run config holds ``job_config(job)``: every key, resolved (the data set's defaults
    included, e.g. ``{"dataset": "digits"}`` writes the deep model's settings), because a
    ServerApp cannot tell a default from a value the user chose.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    conf = "\n".join(f"{k} = {_toml_value(v)}" for k, v in job_config(job).items())
    (directory / "pyproject.toml").write_text(f"""[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "shiftlearn-fedrftca"
version = "1.0.0"
description = "FedRF-TCA and one-shot federated RF-TCA (shiftlearn)"
license = "BSD-3-Clause"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "shiftlearn"

[tool.flwr.app.components]
serverapp = "shiftlearn.federated.flower:server_app"
clientapp = "shiftlearn.federated.flower:client_app"

[tool.flwr.app.config]
{conf}
""")
    readme = app_readme()
    cfg = job_config(job)
    if cfg["dataset"] == "files":
        readme += files_readme(cfg)
    (directory / "README.md").write_text(readme)
    return directory


def files_readme(cfg: dict) -> str:
    """The README's section for a ``dataset="files"`` job: each SuperNode's own table."""
    from .._data import _file_list, n_clients_of

    k = n_clients_of(cfg)
    paths = _file_list(cfg) or [f"/path/to/client{i}.csv" for i in range(k)]
    lines = "\n".join(f"       flower-supernode ... --node-config "
                      f"'partition-id={i} num-partitions={k} data-file={json.dumps(p)}'"
                      for i, p in enumerate(paths))
    return f"""
## Your own files

This job reads one table per client (`dataset = "files"`, label column
`{cfg["label-column"]}`, classes `{cfg["classes"] or "(set the key classes)"}`). Each client
machine keeps its own table and names it in step 5 (the last client, {k - 1}, is the target;
its label column is optional and only scores the model):

{lines}

A SuperNode without `data-file` reads the job's `source-files`/`target-file` entry for its
partition. Every table needs the same feature columns; every label must be one of `classes`.
"""


def app_readme(port: int = SUPERLINK_PORT) -> str:
    """The deployment steps written into the app folder (``README.md``).

    The SuperLink listens on ``127.0.0.1:port`` of the server only: its one port also serves
    the Control API, which in Flower's open-source build has no account authentication, so
    every SuperNode and the operator reach it through an SSH tunnel (or an authenticated
    reverse proxy that forwards only ``/v1/fleet`` to the nodes).
    """
    return f"""# shiftlearn FedRF-TCA Flower app

`flwr run` this folder against a SuperLink. The SuperLink's one port ({port}) serves the
SuperNodes (Fleet API) **and** the Control API (`flwr run`, `flwr supernode register`), which
has no account login in Flower's open-source build: whoever reaches the port can register a
node key and submit an app that runs on every SuperNode with the clients' data. So the
SuperLink listens on 127.0.0.1 only, and every machine reaches it through SSH.

1. Operator: `shiftlearn federated certs ./tls` (a private CA and a certificate for
   127.0.0.1 and localhost) and `shiftlearn federated node-keys ./keys --nodes K`. Copy
   `tls/ca.pem` to every machine, `tls/server.pem` and `tls/server.key` to the server,
   `keys/node<i>.key` to client machine i; keep `tls/ca.key` offline.
2. Server: give the operator and each client machine an SSH login that may only forward to
   this port (in `~/.ssh/authorized_keys`:
   `restrict,port-forwarding,permitopen="127.0.0.1:{port}" ssh-ed25519 AAAA...`), then

       flower-superlink --host 127.0.0.1 --port {port} --disable-runtime-dependency-installation \\
           --ssl-ca-certfile ca.pem --ssl-certfile server.pem --ssl-keyfile server.key \\
           --enable-supernode-auth

3. Operator and every client machine, left running:

       ssh -N -L {port}:127.0.0.1:{port} tunnel@server.example.org

4. Operator: in `~/.flwr/config.toml`

       [superlink.prod]
       address = "127.0.0.1:{port}"
       root-certificates = "/path/to/tls/ca.pem"

   then `flwr supernode register keys/node<i>.pub prod` for every i, before the nodes start.
5. Client machine i = 0..K-1 (the last, K-1, is the target), data under `SHIFTLEARN_DATA`:

       flower-supernode --superlink 127.0.0.1:{port} --root-certificates ca.pem \\
           --auth-supernode-private-key node<i>.key \\
           --node-config "partition-id=<i> num-partitions=<K>"

6. Operator, in this folder:

       flwr run . prod --stream --run-config 'result-path="/tmp/fedrftca.json"'

   The result file is written on the server; its `"status"` must be `"ok"`.

What stays open: every SSH login reaches the Control API too, so a client machine's owner can
still submit an app. To keep the nodes off it, put a reverse proxy in front instead of the
tunnels: forward `/v1/fleet/` to `https://127.0.0.1:{port}` for the nodes, and `/v1/control/`
only to the operator's authenticated connection (or not at all: the operator uses the tunnel).
See "Running the same job across real machines" in shiftlearn's federated guide.
"""


class LoopbackDeployment:
    """``with LoopbackDeployment(4, workdir) as dep: result = dep.run({...})``.

    Parameters
    ----------
    n_nodes : int
        SuperNodes to start, one per client (``partition-id`` 0..n_nodes-1).
    workdir : path
        Logs, the app folder, ``$FLWR_HOME``, certificates (``tls/``) and node keys
        (``keys/``, mode 0600) go here.
    bin_dir : str, optional
        Folder of the Flower executables (default: beside this Python).
    insecure : bool, default=False
        Plain text, no node authentication (the SuperLink's and SuperNodes' ``--insecure``).
    auth : bool, optional
        SuperNode authentication (default: on unless ``insecure``; it needs TLS).
    node_configs : dict, optional
        Extra ``--node-config`` entries per partition id, e.g.
        ``{1: 'fail-stage="secagg-collect"'}`` (fault injection, see ``flower.py``).
    """

    def __init__(self, n_nodes: int, workdir, *, bin_dir: str | None = None,
                 insecure: bool = False, auth: bool | None = None,
                 node_configs: dict | None = None):
        self.n_nodes = int(n_nodes)
        self.workdir = Path(workdir)
        self.bin = Path(bin_dir or Path(sys.executable).parent)
        self.insecure = bool(insecure)
        self.auth = (not self.insecure) if auth is None else bool(auth)
        if self.auth and self.insecure:
            raise ValueError("SuperNode authentication needs TLS: use insecure=False, or "
                             "auth=False for a plain-text deployment.")
        self.node_configs = dict(node_configs or {})
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()
        self.certs = None
        self.node_keys: list = []
        self.node_ids: dict[int, int] = {}   # partition id -> node id given at registration
        self.env = dict(os.environ, FLWR_HOME=str(self.workdir / "flwr_home"),
                        FLWR_DISABLE_UPDATE_CHECK="1", FLWR_TELEMETRY_ENABLED="0",
                        FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION="1",
                        PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        # every process shares this machine: one compute thread each unless the caller set it
        # (oversubscribed OpenMP pools spin-wait; a deep-model round took ~70x longer)
        self.env.setdefault("OMP_NUM_THREADS", "1")
        self.app = write_app(self.workdir / "app")

    @property
    def transport(self) -> str:
        """``"plain text"``, ``"TLS"`` or ``"TLS + node authentication"``."""
        if self.insecure:
            return "plain text"
        return "TLS + node authentication" if self.auth else "TLS"

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 (closed in stop)
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                             start_new_session=True)
        p._shiftlearn_log = log  # type: ignore[attr-defined]
        p._shiftlearn_name = name  # type: ignore[attr-defined]
        self.procs.append(p)
        return p

    def flwr(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """Run the ``flwr`` CLI against this deployment's ``$FLWR_HOME`` (own session)."""
        return subprocess.run([str(self.bin / "flwr"), *args], env=self.env,
                              capture_output=True, timeout=timeout, start_new_session=True)

    def start(self, ready_timeout: float = 30.0) -> LoopbackDeployment:
        from ._tls import make_certificates, make_node_keys

        check_flower(self.bin)
        home = self.workdir / "flwr_home"
        home.mkdir(parents=True, exist_ok=True)
        link = [str(self.bin / "flower-superlink"), "--host", "127.0.0.1", "--port",
                str(self.port), "--disable-runtime-dependency-installation"]
        conn = f'[superlink]\ndefault = "loopback"\n\n[superlink.loopback]\n' \
               f'address = "127.0.0.1:{self.port}"\n'
        if self.insecure:
            link.append("--insecure")
            conn += "insecure = true\n"
        else:
            self.certs = make_certificates(self.workdir / "tls")
            link += self.certs.superlink_args()
            conn += f"root-certificates = {json.dumps(str(self.certs.ca_cert))}\n"
        if self.auth:
            link.append("--enable-supernode-auth")
        (home / "config.toml").write_text(conn)
        sl = self._spawn(link, "superlink")
        try:
            wait_for_port(self.port, sl, ready_timeout, "the SuperLink")
        except RuntimeError:
            raise RuntimeError("the SuperLink did not start; see "
                               f"{self.workdir / 'superlink.log'}") from None
        if self.auth:
            self.node_keys = make_node_keys(self.workdir / "keys", self.n_nodes)
            self.node_ids = self.register([k.public_key for k in self.node_keys])
        for i in range(self.n_nodes):
            self.spawn_supernode(i, key=self.node_keys[i].private_key if self.auth else None)
        return self

    def register(self, public_keys) -> dict[int, int]:
        """``flwr supernode register`` each public key (in parallel); ``{index: node_id}``."""
        procs = [subprocess.Popen([str(self.bin / "flwr"), "supernode", "register", str(k),
                                   "loopback", "--format", "json"], env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True) for k in public_keys]
        out = {}
        for i, p in enumerate(procs):
            try:
                so, se = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                so, se = p.communicate()
            text = so.decode(errors="replace")
            try:
                out[i] = int(json.loads(text[text.index("{"):])["node-id"])
            except (ValueError, KeyError):
                tail = (text + se.decode(errors="replace"))[-1500:]
                raise RuntimeError(f"flwr supernode register {public_keys[i]} failed (exit "
                                   f"{p.returncode}): {tail}") from None
        return out

    def spawn_supernode(self, partition_id: int, *, insecure: bool | None = None,
                        key=None, name: str | None = None,
                        extra_args: list[str] | None = None) -> subprocess.Popen:
        """Start one SuperNode for ``partition_id`` (its own session, stopped by
        :meth:`stop`). ``insecure`` defaults to the deployment's; ``key`` is the path of its
        private key (OpenSSH format) for an authenticated SuperLink."""
        insecure = self.insecure if insecure is None else insecure
        args = [str(self.bin / "flower-supernode"), "--superlink", f"127.0.0.1:{self.port}",
                "--host", "127.0.0.1", "--port", str(free_port())]
        if insecure:
            args.append("--insecure")
        elif self.certs is not None:
            args += ["--root-certificates", str(self.certs.ca_cert)]
        if key is not None:
            args += ["--auth-supernode-private-key", str(key)]
        conf = f"partition-id={partition_id} num-partitions={self.n_nodes}"
        if partition_id in self.node_configs:
            conf += f" {self.node_configs[partition_id]}"
        args += ["--node-config", conf, *(extra_args or [])]
        return self._spawn(args, name or f"supernode{partition_id}")

    def supernodes(self) -> list[dict]:
        """``flwr supernode list --format json``: the nodes the SuperLink knows."""
        proc = self.flwr("supernode", "list", "loopback", "--format", "json")
        text = proc.stdout.decode(errors="replace")
        try:
            return list(json.loads(text[text.index("{"):])["nodes"])
        except (ValueError, KeyError):
            raise RuntimeError(f"flwr supernode list failed (exit {proc.returncode}): "
                               + (text + proc.stderr.decode(errors="replace"))[-1500:]
                               ) from None

    def run(self, overrides: dict | None = None, timeout: float = 300.0, *,
            on_round: Callable[[int, int | None], None] | None = None) -> dict:
        """Run one job; returns the ServerApp's result dict (+ ``"W"`` etc. from the npz;
        an iterative job with a target accuracy also gets ``baseline`` and, when the model is
        below it, ``warning``, computed here from the same job).

        ``on_round(done, total)`` is called (on this thread) as each protocol round ends,
        from the ServerApp's streamed log; ``total`` is ``None`` where it is not known in
        advance (the one-shot protocol). ``timeout`` bounds the whole ``flwr run``.
        """
        import numpy as np

        cfg = job_config(overrides)
        result_path = self.workdir / f"result_{time.monotonic_ns()}.json"
        cfg["result-path"] = str(result_path)
        rc = " ".join(f"{k}={_toml_value(v)}" for k, v in cfg.items())
        cmd = [str(self.bin / "flwr"), "run", str(self.app), "loopback", "--stream",
               "--run-config", rc]

        def on_line(line: str) -> None:
            m = ROUND_LINE.search(line)
            if m and on_round is not None:
                on_round(int(m.group(1)), None if m.group(2) == "?" else int(m.group(2)))

        t0 = time.monotonic()
        proc = stream_process(cmd, dict(self.env, PYTHONUNBUFFERED="1"), timeout,
                              on_line if on_round is not None else None)
        wall = time.monotonic() - t0
        (self.workdir / "flwr_run.log").write_bytes(proc.stdout + proc.stderr)
        if not result_path.exists():
            raise RuntimeError(f"the ServerApp wrote no result (flwr run exit "
                               f"{proc.returncode}); command: {shlex.join(cmd)}; log tail:\n"
                               + (proc.stdout + proc.stderr).decode(errors="replace")[-3000:])
        result = json.loads(result_path.read_text())
        result["transport"] = self.transport
        result["flwr_run_s"] = wall
        result["flwr_exit_code"] = proc.returncode
        npz = Path(str(result_path) + ".npz")
        if npz.exists():
            with np.load(npz) as z:
                result.update({k: z[k] for k in z.files})
        acc = result.get("target_accuracy")
        if isinstance(acc, float) and np.isnan(acc):   # the target has no labels to score
            del result["target_accuracy"]
        elif isinstance(acc, float) and "sigma" in result:
            result["baseline"] = baseline(cfg, float(result["sigma"]))
            warning = baseline_warning(result["target_accuracy"], result["baseline"])
            if warning:
                result["warning"] = warning
        return result

    def stop(self) -> None:
        pgids = [p.pid for p in self.procs]
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:  # the group may still hold children (superexec, clientapp processes)
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
            p._shiftlearn_log.close()  # type: ignore[attr-defined]
        self.procs = []
        # SIGKILL is delivered asynchronously: wait (at most 5 s) until the groups' other
        # members (superexec, clientapp processes) are gone, so stop() returns with none left
        deadline = time.monotonic() + 5
        while live_processes(pgids) and time.monotonic() < deadline:
            time.sleep(0.05)

    def __enter__(self) -> LoopbackDeployment:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
