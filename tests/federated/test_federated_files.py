"""Federated jobs on the users' own tables (``dataset="files"``): one CSV/Parquet file per
client, written here as a new user would (numeric features, text labels). The job on files
must give bit for bit the job on the same arrays (the synthetic blobs the files were written
from: same rows, same class codes), through the simulator, the command line and, where flwr
is installed, a Flower loopback; every awkward file is refused with one line naming it."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from shiftlearn import cli
from shiftlearn.federated import make_federated_blobs
from shiftlearn.federated._data import load_all, load_client_data, load_files
from shiftlearn.federated.jobs import job_config, oneshot_accuracy, simulate_job

NAMES = np.array(["cat", "dog", "owl"])   # sorted, so class i is NAMES[i] as in the blobs
BLOBS = {"num-clients": 3, "n-per-client": 40}


def _write(folder, kind="csv", target_labels=True):
    """The blobs of job BLOBS as one table per client; returns the paths (target last)."""
    paths = []
    for p in make_federated_blobs(3, 40, seed=0):
        df = pd.DataFrame(p.X, columns=[f"f{j}" for j in range(p.X.shape[1])])
        y = p.y if p.y is not None else p.y_true
        if p.y is not None or target_labels:
            df["species"] = NAMES[y]
        path = folder / f"client{p.client_id}.{kind}"
        if kind == "parquet":
            df.to_parquet(path, index=False)
        else:
            df.to_csv(path, index=False)
        paths.append(str(path))
    return paths


def _job(paths, **extra):
    return {"dataset": "files", "source-files": ";".join(paths[:-1]),
            "target-file": paths[-1], "label-column": "species", **extra}


def _same(a: dict, b: dict, keys):
    for k in keys:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


# ------------------------------------------------------------------ the same job, bit for bit
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_files_load_the_arrays_they_were_written_from(tmp_path, kind):
    if kind == "parquet":
        pytest.importorskip("pyarrow")
    parts = load_files(job_config(_job(_write(tmp_path, kind))))
    ref = load_all(job_config(BLOBS))
    for p, r in zip(parts, ref, strict=True):
        np.testing.assert_array_equal(p.X, r.X)      # float64 text round trip is exact
        assert p.domain_id == r.domain_id and p.n_classes == 3
        for a, b in ((p.y, r.y), (p.y_true, r.y_true)):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)


def test_oneshot_job_on_files_equals_the_job_on_the_arrays(tmp_path):
    paths = _write(tmp_path)
    job = _job(paths)
    res, ref = simulate_job(job), simulate_job(BLOBS)
    _same(res, ref, ["sigma", "W", "eigenvalues", "rounds", "bytes_up", "bytes_down"])
    ev = oneshot_accuracy(job, res["sigma"], res["W"])
    assert ev == oneshot_accuracy(BLOBS, ref["sigma"], ref["W"])
    # a Python list is the same job (one string in the run config: a path may hold a comma)
    (tmp_path / "a,b").mkdir()
    moved = str(tmp_path / "a,b" / "client1.csv")
    os.rename(paths[0], moved)
    listed = {**job, "source-files": [moved, paths[1]]}
    assert job_config(listed)["source-files"] == f"{moved};{paths[1]}"
    _same(simulate_job(listed), ref, ["W", "eigenvalues"])


def test_iterative_job_on_files_equals_the_job_on_the_arrays(tmp_path):
    it = {"protocol": "iterative", "rounds": 3}
    res = simulate_job(_job(_write(tmp_path), **it))
    ref = simulate_job({**BLOBS, **it})
    _same(res, ref, ["sigma", "W", "C", "target_accuracy", "baseline", "bytes_up"])


def test_each_client_alone_reads_its_own_file_as_the_simulator_does(tmp_path):
    """A SuperNode reads only its table (the job's entry, or its --node-config data-file),
    its labels coded by the job's classes; a source without every class codes them alike."""
    paths = _write(tmp_path)
    job = job_config(_job(paths, classes="owl,dog,cat"))    # listed in any order: sorted
    every = load_files(job)
    for i, p in enumerate(every):
        alone = load_client_data(job, i)
        np.testing.assert_array_equal(alone.X, p.X)
        assert alone.domain_id == p.domain_id
        np.testing.assert_array_equal(alone.y if p.y is not None else alone.y_true,
                                      p.y if p.y is not None else p.y_true)
    # no file in the job: the node's own data-file; a file holding two of the three classes
    only = pd.read_csv(paths[0]).query("species != 'owl'")
    only.to_csv(tmp_path / "two.csv", index=False)
    job2 = job_config({"dataset": "files", "num-clients": 3, "classes": "cat,dog,owl",
                       "label-column": "species"})
    c = load_client_data(job2, 0, str(tmp_path / "two.csv"))
    assert c.client_id == 1 and c.n_classes == 3
    np.testing.assert_array_equal(c.y, np.where(only["species"] == "cat", 0, 1))
    t = load_client_data(job2, 2, paths[-1])
    assert t.domain_id == -3 and t.y is None and t.y_true is not None


def test_feature_columns_pick_and_order_the_columns_of_every_file(tmp_path):
    """Columns in another order, and an extra id column, in one file: refused as they are,
    matched by name with feature-columns."""
    paths = _write(tmp_path)
    _rewrite(paths[1], lambda d: d[["species", *reversed([f"f{j}" for j in range(5)])]]
             .assign(site_id=7))
    with pytest.raises(ValueError, match="feature columns differ from .*extra 'site_id'"):
        load_files(job_config(_job(paths)))
    cols = ",".join(f"f{j}" for j in range(5))
    parts = load_files(job_config(_job(paths, **{"feature-columns": cols})))
    for p, r in zip(parts, load_all(job_config(BLOBS)), strict=True):
        np.testing.assert_array_equal(p.X, r.X)


def test_target_without_labels_runs_unscored(tmp_path):
    paths = _write(tmp_path, target_labels=False)
    ref = simulate_job({**BLOBS, "protocol": "iterative", "rounds": 2})
    res = simulate_job(_job(paths, protocol="iterative", rounds=2))
    _same(res, ref, ["W", "C", "sigma"])
    assert "target_accuracy" not in res and "baseline" not in res
    # an empty label column is no labels either
    df = pd.read_csv(paths[-1]).assign(species="")
    df.to_csv(paths[-1], index=False)
    assert load_files(job_config(_job(paths)))[-1].y_true is None


# ------------------------------------------------------------------------- the command line
def _cli(capsys, *argv):
    code = cli.main(["federated", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_command_line_simulate_on_files_prints_the_job_on_the_arrays(tmp_path, capsys):
    paths = _write(tmp_path)
    code, out, err = _cli(capsys, "simulate", "--source", *paths[:-1], "--target", paths[-1],
                          "--label-column", "species", "--json", "-q")
    assert code == 0, err
    res = json.loads(out)
    ref = simulate_job(BLOBS)
    ev = oneshot_accuracy(BLOBS, ref["sigma"], ref["W"])
    assert res["sigma"] == ref["sigma"] and res["target_accuracy"] == ev["target_accuracy"]
    assert res["W"]["norm"] == float(np.linalg.norm(ref["W"]))
    code, out, err = _cli(capsys, "simulate", "--source", *paths[:-1], "--target", paths[-1],
                          "--label-column", "species", "--set", "protocol=iterative",
                          "rounds=2")
    assert code == 0, err
    assert out.splitlines()[0] == ("federated simulate: FedRF-TCA on your files (2 sources, "
                                   "target client3.csv)")
    assert "target accuracy" in out


def test_the_installed_command_runs_a_file_job(tmp_path):
    paths = _write(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "shiftlearn.cli", "federated", "simulate",
                           "--source", *paths[:-1], "--target", paths[-1], "--label-column",
                           "species"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    assert "on your files (2 sources, target client3.csv)" in proc.stdout


def test_app_folder_on_files_holds_the_paths_classes_and_node_configs(tmp_path, capsys):
    paths = _write(tmp_path)
    code, out, err = _cli(capsys, "app", str(tmp_path / "app"), "--source", *paths[:-1],
                          "--target", paths[-1], "--label-column", "species")
    assert code == 0, err
    toml = (tmp_path / "app" / "pyproject.toml").read_text()
    assert 'dataset = "files"' in toml and 'classes = "cat,dog,owl"' in toml
    assert f'target-file = "{paths[-1]}"' in toml
    readme = (tmp_path / "app" / "README.md").read_text()
    for i, p in enumerate(paths):
        assert f"partition-id={i} num-partitions=3 data-file=\"{p}\"" in readme


def test_app_folder_for_files_on_the_nodes_needs_the_classes(tmp_path, capsys):
    code, _, err = _cli(capsys, "app", str(tmp_path / "a"), "--set", "dataset=files")
    assert code == 2 and "needs the classes: --set classes=a,b" in err
    code, _, err = _cli(capsys, "app", str(tmp_path / "b"), "--set", "dataset=files",
                        "num-clients=3", "classes=cat,dog,owl", "--label-column", "species")
    assert code == 0, err
    readme = (tmp_path / "b" / "README.md").read_text()
    assert "partition-id=2 num-partitions=3 data-file=" in readme
    assert 'label-column = "species"' in (tmp_path / "b" / "pyproject.toml").read_text()


def _rewrite(path, fn):
    df = fn(pd.read_csv(path))
    df.to_csv(path, index=False)


@pytest.mark.parametrize("case, expected", [
    ("missing", "client1.csv: no such file"),
    ("columns", "feature columns differ from"),
    ("label", "no column named 'species'"),
    ("text feature", "f0"),
    ("one class", "single class ('cat')"),
    ("target class", "'emu' are not among the job's classes"),
    ("partial target", "filled on 1 of 40 rows"),
    ("listed classes", "'owl' are not among the job's classes"),
    ("no target", "give --source (one or more files) and --target together"),
    ("dataset", "asks for a built-in data set"),
    ("label alone", "--label-column names the label column of your files"),
    ("both ways", "--label-column and --set label-column=... both set"),
])
def test_refusals_are_one_line_naming_the_file(tmp_path, capsys, case, expected):
    paths = _write(tmp_path)
    extra: list[str] = []
    argv = ["--source", *paths[:-1], "--target", paths[-1], "--label-column", "species"]
    if case == "missing":
        os.remove(paths[0])
    elif case == "columns":
        _rewrite(paths[1], lambda d: d.rename(columns={"f4": "g4"}))
    elif case == "label":
        _rewrite(paths[1], lambda d: d.rename(columns={"species": "kind"}))
    elif case == "text feature":
        _rewrite(paths[0], lambda d: d.assign(f0="high"))
    elif case == "one class":
        for p in paths[:-1]:
            _rewrite(p, lambda d: d.assign(species="cat"))
    elif case == "target class":
        _rewrite(paths[-1], lambda d: d.assign(species="emu"))
    elif case == "partial target":
        _rewrite(paths[-1], lambda d: d.assign(species=["cat"] + [""] * 39))
    elif case == "listed classes":
        extra = ["--set", "classes=cat,dog"]
    elif case == "no target":
        argv = ["--source", *paths[:-1]]
    elif case == "dataset":
        extra = ["--set", "dataset=digits"]
    elif case == "label alone":
        argv = ["--label-column", "species"]
    elif case == "both ways":
        extra = ["--set", "label-column=species"]
    code, out, err = _cli(capsys, "simulate", *argv, *extra)
    lines = err.splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and lines[0].startswith("shiftlearn federated simulate: error: ")
    assert expected in lines[0], lines[0]


def test_a_client_alone_without_the_class_list_is_refused(tmp_path):
    paths = _write(tmp_path)
    with pytest.raises(ValueError, match="needs the job key classes"):
        load_client_data(job_config(_job(paths)), 0)
    with pytest.raises(ValueError, match="no file: give its SuperNode --node-config"):
        load_client_data(job_config({"dataset": "files", "classes": "a,b"}), 0)


# ------------------------------------------------------------------------- Flower loopback
@pytest.mark.network
def test_flower_loopback_on_files_matches_the_simulator(tmp_path):
    pytest.importorskip("flwr")
    from shiftlearn.cli.federated import _with_classes
    from shiftlearn.federated.flower import LoopbackDeployment

    paths = _write(tmp_path)
    job = _with_classes(_job(paths))
    assert job["classes"] == "cat,dog,owl"
    with LoopbackDeployment(3, tmp_path / "run") as dep:
        res = dep.run(job, timeout=150)
    assert res["status"] == "ok", res.get("traceback")
    sim = simulate_job(BLOBS)
    assert res["sigma"] == sim["sigma"]
    # the server sums the replies in arrival order: round-off, not bit identity
    np.testing.assert_allclose(np.abs(res["W"]), np.abs(sim["W"]), rtol=0, atol=1e-8)
    assert res["bytes_up"] == sim["bytes_up"]
