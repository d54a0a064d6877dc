"""``shiftlearn federated``, as a person uses it: a table with the target accuracy beside its
baselines, the rounds and the bytes sent; ``--json`` for programs; one-shot jobs scored too;
mistakes end in one error line with exit status 2 (issue #17, item 5)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from shiftlearn import cli
from shiftlearn.cli import federated
from shiftlearn.federated.jobs import oneshot_accuracy, oneshot_warning, simulate_job

SMALL = ["n-per-client=30"]


def _shiftlearn(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The installed command line in a fresh process (stdout and stderr are pipes)."""
    return subprocess.run([sys.executable, "-m", "shiftlearn.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "COLUMNS": "80"})


def _table(out: str) -> dict[str, str]:
    """``{quantity: value}`` from the table printed by the command."""
    rows = {}
    for line in out.splitlines()[3:]:
        if line.startswith(("warning:", "error:")):
            break
        label, _, value = line.rstrip().rpartition("  ")
        rows[label.strip()] = value.strip()
    return rows


# ------------------------------------------------------------------------ the table -------
def test_simulate_prints_a_table_with_the_oneshot_accuracy_and_its_baselines():
    proc = _shiftlearn("federated", "simulate", "--set", *SMALL)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "federated simulate: one-shot RF-TCA on synthetic"
    assert lines[1].split() == ["result", "value"] and set(lines[2]) == {"─"}
    assert "{" not in proc.stdout and "\x1b" not in proc.stdout    # no JSON, no escapes
    rows = _table(proc.stdout)
    # the same job scored by the library gives the numbers of the table
    res = simulate_job({"n-per-client": 30})
    ev = oneshot_accuracy({"n-per-client": 30}, res["sigma"], res["W"])
    assert rows["target accuracy"] == f"{100 * ev['target_accuracy']:.1f}%"
    assert rows["baseline: source only (same model, no adaptation)"] == (
        f"{100 * ev['baseline']['source_only']:.1f}%")
    assert rows["baseline: chance (1 / classes)"] == "33.3%"
    assert rows["rounds"] == "2"
    assert rows["bytes sent, clients to server"].startswith(f"{res['bytes_up']:,} (")
    assert rows["bytes sent, server to clients"].startswith(f"{res['bytes_down']:,} (")
    assert rows["kernel bandwidth sigma"] == f"{res['sigma']:.4g}"
    assert proc.stderr == ""     # a pipe: no progress bar, and nothing else to say


def test_iterative_table_json_and_warning_agree(capsys):
    argv = ["federated", "simulate", "--set", "protocol=iterative", "rounds=3",
            "n-per-client=40", "--loss", "0.2", "--reorder"]
    assert cli.main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    assert res["rounds"] == 3 and set(res["baseline"]) == {"source_only", "chance"}
    assert captured.err.startswith(f"target accuracy {100 * res['target_accuracy']:.1f}% "
                                   "(baseline: source_only")
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == ("federated simulate: FedRF-TCA on synthetic "
                                            "(simulated network: loss 20.0%, reorder)")
    rows = _table(captured.out)
    assert rows["target accuracy"] == f"{100 * res['target_accuracy']:.1f}%"
    assert rows["rounds"] == "3"
    assert rows["bytes sent, clients to server"].startswith(f"{res['bytes_up']:,} (")
    # the warning of the result (if any) is printed under the table, on stdout
    assert ("warning" in res) == (f"warning: {res.get('warning')}" in captured.out)
    assert captured.err == ""


def test_quiet_keeps_the_table_and_json_stays_machine_readable(capsys):
    assert cli.main(["federated", "simulate", "-q", "--set", *SMALL]) == 0
    captured = capsys.readouterr()
    assert "target accuracy" in captured.out and captured.err == ""
    assert cli.main(["federated", "simulate", "-q", "--json", "--set", *SMALL]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)                # the one-shot result is scored in JSON too
    assert 0 <= res["target_accuracy"] <= 1 and res["baseline"]["chance"] == pytest.approx(1 / 3)
    assert res["W"]["shape"] == [100, 5] and captured.err == ""


def test_secure_aggregation_result_is_scored_and_shows_its_rounding(capsys):
    assert cli.main(["federated", "simulate", "--set", *SMALL,
                     "secure-aggregation=true"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("federated simulate: one-shot RF-TCA under SecAgg+ on "
                                   "synthetic")
    rows = _table(out)
    assert rows["target accuracy"].endswith("%")
    assert float(rows["SecAgg+ largest rounding error per entry"]) < 1e-6
    assert "rounds" not in rows                   # no network is simulated for SecAgg+


def test_summary_rows_of_a_flower_result():
    res = {"status": "error", "error": "TimeoutError: no reply", "rounds": [{}, {}, {}],
           "bytes_up": 1234, "bytes_down": 10, "wire_bytes_up": 2_000_000, "sigma": 0.5,
           "rejections": {"stale_round": 2}, "flwr_run_s": 12.34,
           "baseline": {"source_only": 0.5}}
    rows = dict(federated.summary_rows(res))
    assert rows["status"] == "error" and rows["rounds"] == "3"
    assert rows["bytes sent, clients to server"] == "1,234 (1.2 kB)"
    assert rows["bytes on the wire (Flower), up"] == "2,000,000 (2.0 MB)"
    assert rows["replies rejected"] == "stale_round 2"
    assert rows["Flower run time"] == "12.3 s"
    assert "target accuracy" not in rows          # no accuracy: its baselines are not shown
    assert federated.summary_rows({"rejections": {}}) == []


def test_method_names():
    from shiftlearn.federated.jobs import job_config

    assert federated._method(job_config({"dataset": "digits"})) == (
        "FedRF-TCA (cnn extractor, fcnn classifier)")
    assert federated._title("simulate", job_config({"dataset": "digits"})) == (
        "federated simulate: FedRF-TCA (cnn extractor, fcnn classifier) on digits, target usps")
    assert federated._method(job_config({"protocol": "iterative", "algorithm": "fedavg",
                                         "subsets": "II"})) == "FedAvg (message subsets II)"
    assert federated._title("loopback", job_config({"dataset": "office_caltech",
                                                    "target": "dslr"})) == (
        "federated loopback: one-shot RF-TCA on office_caltech, target dslr")


# ------------------------------------------------------------------- one-shot accuracy ----
def test_oneshot_accuracy_follows_the_projection():
    job = {"n-per-client": 30}
    res = simulate_job(job)
    ev = oneshot_accuracy(job, res["sigma"], res["W"])
    assert ev["baseline"]["chance"] == pytest.approx(1 / 3)
    assert ev["target_accuracy"] > ev["baseline"]["chance"]
    # a projection onto random directions is a different model: the score follows W
    W = np.random.default_rng(0).standard_normal(res["W"].shape)
    assert oneshot_accuracy(job, res["sigma"], W)["baseline"] == ev["baseline"]
    with pytest.raises(ValueError, match="pass the result of the same job"):
        oneshot_accuracy(job, res["sigma"], res["W"][:10])


def test_oneshot_warning_names_both_failures():
    text = oneshot_warning(0.2, {"source_only": 0.5, "chance": 0.25})
    assert "below the same classifier without the projection (50.0%)" in text
    assert "not above chance (25.0%)" in text and text.endswith(".")


# ------------------------------------------------------------------- files written --------
def test_certs_and_node_keys_print_tables_or_json(tmp_path, capsys):
    pytest.importorskip("cryptography")
    assert cli.main(["federated", "node-keys", str(tmp_path / "keys"), "--nodes", "2"]) == 0
    captured = capsys.readouterr()
    rows = _table("\n" + captured.out)             # no title line
    assert rows["node 1 public key"] == str(tmp_path / "keys" / "node1.pub")
    assert "flwr supernode register" in captured.err
    assert cli.main(["federated", "node-keys", str(tmp_path / "k2"), "--nodes", "1",
                     "--json", "-q"]) == 0
    keys = json.loads(capsys.readouterr().out)
    assert [sorted(k) for k in keys] == [["private_key", "public_key"]]
    assert cli.main(["federated", "certs", str(tmp_path / "tls"), "--json", "-q"]) == 0
    certs = json.loads(capsys.readouterr().out)
    assert certs["hosts"] == ["127.0.0.1", "localhost"]
    assert cli.main(["federated", "certs", str(tmp_path / "tls2"), "-q"]) == 0
    assert _table("\n" + capsys.readouterr().out)["hosts"] == "127.0.0.1, localhost"


# ----------------------------------------------------------------------------- errors ------
@pytest.mark.parametrize("argv, message", [
    (["--set", "rounds=0"], "rounds takes a whole number of at least 1"),
    (["--json", "--set", "protocol=bogus"], "protocol must be 'oneshot' or 'iterative'"),
    (["--set", "protocol=iterative", "secure-aggregation=true"],
     "secure-aggregation=true needs protocol=oneshot"),
    (["--set", "bandwidth=wide"], "bandwidth must be a positive float, 'median' or"),
    (["--set", "sigma=-1"], "sigma takes a finite number of 0 or more"),
])
def test_mistakes_end_in_one_error_line(argv, message):
    proc = _shiftlearn("federated", "simulate", *argv)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("shiftlearn federated simulate: error: ") and message in lines[0]


def test_json_is_refused_where_there_is_no_result(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["federated", "keys", "--json"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --json" in capsys.readouterr().err


# --------------------------------------------------------------------------- Flower -------
@pytest.mark.slow
@pytest.mark.network
def test_loopback_prints_the_table_of_the_flower_run():
    pytest.importorskip("flwr")
    try:
        federated.flower_bin()
    except ImportError as exc:
        pytest.skip(str(exc))
    proc = _shiftlearn("federated", "loopback", "--nodes", "2", "--set", "num-clients=2",
                       *SMALL, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == "federated loopback: one-shot RF-TCA on synthetic"
    rows = _table(proc.stdout)
    res = simulate_job({"num-clients": 2, "n-per-client": 30})
    ev = oneshot_accuracy({"num-clients": 2, "n-per-client": 30}, res["sigma"], res["W"])
    assert rows["target accuracy"] == f"{100 * ev['target_accuracy']:.1f}%"   # same W
    assert rows["rounds"] == "2"
    assert rows["bytes sent, clients to server"].startswith(f"{res['bytes_up']:,} (")
    assert rows["bytes on the wire (Flower), up"].endswith("B)")
    assert rows["Flower run time"].endswith(" s")


def test_data_home_option_reaches_the_job_loaders(data_home, tmp_path):
    """``--data-home`` wins over ``$SHIFTLEARN_DATA`` (an empty folder here)."""
    proc = subprocess.run(
        [sys.executable, "-m", "shiftlearn.cli", "federated", "simulate", "--data-home",
         data_home, "--set", "dataset=office_caltech", "n-features=20", "target=dslr"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "SHIFTLEARN_DATA": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == ("federated simulate: one-shot RF-TCA on "
                                           "office_caltech, target dslr")
    assert _table(proc.stdout)["baseline: chance (1 / classes)"] == "10.0%"
    assert list(tmp_path.iterdir()) == []        # nothing fetched into the other folder


def test_set_bandwidth_and_the_former_sigma_key(capsys):
    import warnings

    from shiftlearn.cli.federated import parse_sets

    assert parse_sets(["bandwidth=0.5", "rounds=2"]) == {"bandwidth": 0.5, "rounds": 2}
    assert parse_sets(["bandwidth=2*median"]) == {"bandwidth": "2*median"}
    with pytest.warns(FutureWarning, match=r"job key sigma is renamed bandwidth; set "
                                           r"bandwidth='median'"):
        assert parse_sets(["sigma=0"]) == {"bandwidth": "median"}
    with pytest.warns(FutureWarning, match="set bandwidth=2.5"):
        assert parse_sets(["sigma=2.5"]) == {"bandwidth": 2.5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert cli.main(["federated", "simulate", "--json", "--set", *SMALL, "sigma=2.5"]) == 0
    assert '"sigma": 2.5' in capsys.readouterr().out
