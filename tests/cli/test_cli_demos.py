"""``shiftlearn demo boosting|marginal|splits`` and ``shiftlearn federated``: bad values are
refused with one error line (never a traceback), and the runs print their tables."""

import json
import sys

import pytest

from shiftlearn import cli
from shiftlearn.cli import federated


def _argparse_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def _error(argv, capsys) -> str:
    assert cli.main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("argv, message", [
    (["demo", "boosting", "--n-source", "-5"], "argument --n-source: must be at least 1, got -5"),
    (["demo", "boosting", "--n-target", "0"], "argument --n-target: must be at least 1"),
    (["demo", "boosting", "--n-estimators", "1.5"], "expected a whole number, got '1.5'"),
    (["demo", "boosting", "--learning-rate", "0"], "must be greater than 0"),
    (["demo", "boosting", "--learning-rate", "nan"], "expected a finite number"),
    (["demo", "marginal", "--N", "0"], "argument --N: must be at least 1, got 0"),
    (["demo", "marginal", "--n", "1"], "argument --n: must be at least 2"),
    (["demo", "marginal", "--C", "-1"], "argument --C: must be greater than 0"),
    (["demo", "marginal", "--sampling", "sobol"], "invalid choice: 'sobol'"),
    (["demo", "marginal", "--bandwidth-x", "wide"],
     "argument --bandwidth-x: must be a positive number, 'median' or '<f>*median', got 'wide'"),
    (["demo", "splits", "--test-size", "2"], "must be a fraction between 0 and 1"),
    (["demo", "splits", "--test-size", "0"], "must be a fraction between 0 and 1"),
    (["federated", "simulate", "--loss", "2"], "must be a probability in [0, 1], got 2"),
    (["federated", "loopback", "--nodes", "0"], "argument --nodes: must be at least 2"),
    (["mmd", "office_caltech", "--alpha", "5"], "must be a fraction between 0 and 1"),
])
def test_bad_numbers_are_argparse_errors(argv, message, capsys):
    line = _argparse_error(argv, capsys)
    assert line.startswith("shiftlearn " + " ".join(argv[:2] if argv[0] != "mmd" else argv[:1]))
    assert message in line


def test_boosting_runs_and_refuses_a_one_class_target(capsys):
    assert cli.main(["demo", "boosting", "--n-estimators", "5", "--n-source", "200",
                     "--n-test", "200", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "seed=1" in out
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["multitask", "target_only",
                                                             "pooling", "source_only"]
    line = _error(["demo", "boosting", "--n-target", "1", "--n-source", "30", "--n-test", "5",
                   "--n-estimators", "2"], capsys)
    assert "hold a single class" in line and "raise --n-target" in line


def test_marginal_runs_with_the_smallest_sizes(capsys):
    assert cli.main(["demo", "marginal", "--N", "1", "--n", "2", "--test-points", "10",
                     "--solver", "rf"]) == 0
    assert "marginal transfer" in capsys.readouterr().out


def test_splits_holdout_typo_lists_the_domains(data_home, capsys):
    line = _error(["demo", "splits", "--holdout", "amazn"], capsys)
    assert line == ("shiftlearn demo splits: error: --holdout 'amazn' is not a domain of "
                    "office_caltech; choose one of amazon, caltech, dslr, webcam.")
    line = _error(["demo", "splits", "--dataset", "mnist_usps"], capsys)
    assert "leaves 1 development domain" in line


# ------------------------------------------------------------------------- federated ------
@pytest.mark.parametrize("setting, message", [
    ("foo=1", "unknown job key 'foo'; the keys are protocol, dataset"),
    ("rounds", "write key=value"),
    ("rounds=ten", "rounds takes a whole number (default 5)"),
    ("rounds=0", "rounds takes a whole number of at least 1"),
    ("num-clients=1", "num-clients takes a whole number of at least 2"),
    ("lr=fast", "lr takes a number"),
    ("mu=-1", "mu takes a finite number of 0 or more"),
    ("sigma=inf", "sigma takes a finite number of 0 or more"),
    ("protocol=bogus", "protocol must be 'oneshot' or 'iterative'"),  # the library's check
])
def test_federated_bad_settings_are_one_line(setting, message, capsys):
    line = _error(["federated", "simulate", "--set", setting], capsys)
    assert line.startswith("shiftlearn federated simulate: error: ") and message in line


def test_federated_bad_setting_names_the_data_sets_default(capsys):
    """dataset=digits brings rounds=100: a bad rounds names that default, not the generic 5,
    whatever the order of the --set items."""
    for sets in (["dataset=digits", "rounds=ten"], ["rounds=ten", "dataset=digits"]):
        line = _error(["federated", "simulate", "--set", *sets], capsys)
        assert line.endswith("rounds takes a whole number (default 100 with dataset=digits).")
    line = _error(["federated", "simulate", "--set", "dataset=digits", "lam=-1"], capsys)
    assert "(default 0.3 with dataset=digits)" in line       # the target's lam (usps)


def test_federated_settings_are_typed_as_the_defaults():
    job = federated.parse_sets(["rounds=3", "lr=0.5", "protocol=iterative", "bandwidth=1"])
    assert job == {"rounds": 3, "lr": 0.5, "protocol": "iterative", "bandwidth": 1.0}
    assert federated._convert("flag", "Yes", True) is True
    with pytest.raises(ValueError, match="takes true or false"):
        federated._convert("flag", "maybe", False)


def test_federated_seed_option(capsys):
    line = _error(["--seed", "3", "federated", "simulate", "--set", "seed=4"], capsys)
    assert "--seed 3 and --set seed=4 disagree" in line
    assert cli.main(["federated", "simulate", "--json", "--seed", "3", "--set", "seed=3",
                     "n-per-client=20"]) == 0
    captured = capsys.readouterr()
    assert "eigenvalues" in json.loads(captured.out)


def test_federated_simulate_prints_json_and_a_headline(capsys):
    assert cli.main(["federated", "simulate", "--json", "--set", "protocol=iterative",
                     "rounds=2", "n-per-client=30"]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    assert 0 <= res["target_accuracy"] <= 1 and res["rounds"] == 2
    assert captured.err.startswith(f"target accuracy {100 * res['target_accuracy']:.1f}%")
    assert cli.main(["federated", "simulate", "-q", "--set", "protocol=iterative",
                     "rounds=1", "n-per-client=30"]) == 0
    assert capsys.readouterr().err == ""


def test_federated_headline_prints_baselines():
    res = {"target_accuracy": 0.19, "baseline": {"source_only": 0.33, "chance": 1 / 3}}
    assert federated._headline(res) == ("target accuracy 19.0% (baseline: source_only 33.0%, "
                                        "chance 33.3%)")
    assert federated._headline({"target_accuracy": 0.5, "baseline_x": 0.25}) == (
        "target accuracy 50.0% (baseline: baseline_x 25.0%)")
    assert federated._headline({"eigenvalues": 1}) is None


def test_federated_prints_the_warning(capsys):
    args = type("Args", (), {"quiet": False})()
    federated._print(args, {"target_accuracy": 0.19, "warning": "below source only"})
    assert capsys.readouterr().err.splitlines() == ["target accuracy 19.0%",
                                                    "warning: below source only"]


def test_federated_loopback_without_flower_names_the_extra(monkeypatch, tmp_path, capsys):
    # no Flower executables beside Python nor on the PATH, as without the federated extra
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    line = _error(["federated", "loopback", "--nodes", "2"], capsys)
    assert line.startswith("shiftlearn federated loopback: error: ")
    assert "needs the federated extra" in line and "flower-superlink" in line
    assert line.endswith('pip install "shiftlearn[federated]"')
    assert list(tmp_path.iterdir()) == []                  # nothing started or written


def test_federated_keys_and_app(tmp_path, capsys):
    assert cli.main(["federated", "keys"]) == 0
    assert "protocol = 'oneshot'" in capsys.readouterr().out
    assert cli.main(["federated", "app", str(tmp_path / "app")]) == 0
    assert (tmp_path / "app" / "pyproject.toml").is_file()
    assert "README.md" in capsys.readouterr().err          # where the deployment steps are
    (tmp_path / "file").write_text("x")
    line = _error(["federated", "app", str(tmp_path / "file")], capsys)
    assert line.startswith("shiftlearn federated app: error: ")


def test_boosting_huge_depth_is_one_line(capsys):
    line = _error(["demo", "boosting", "--max-depth", "40", "--n-estimators", "2",
                   "--n-source", "50", "--n-test", "50"], capsys)
    assert line.startswith("shiftlearn demo boosting: error: ") and "max_depth" in line


def test_demo_marginal_reads_the_former_sigma_x_with_a_warning(capsys):
    import re

    argv = ["demo", "marginal", "--N", "6", "--n", "8", "--test-points", "30", "--solver",
            "exact"]

    def errors(out):                        # the two models' test errors (fit times vary)
        return re.findall(r"test error +([0-9.]+)%", out)

    assert cli.main([*argv, "--bandwidth-x", "0.3"]) == 0
    new = errors(capsys.readouterr().out)
    with pytest.warns(FutureWarning, match="--sigma-x is renamed --bandwidth-x; pass "
                                           "--bandwidth-x 0.3"):
        assert cli.main([*argv, "--sigma-x", "0.3"]) == 0
    assert errors(capsys.readouterr().out) == new and len(new) == 2
    assert cli.main([*argv, "--bandwidth-x", "2*median"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["demo", "marginal", "--help"])
    out = capsys.readouterr().out
    assert "--bandwidth-x" in out and "--sigma-x" not in out        # hidden for its release
    line = _error([*argv, "--bandwidth-x", "0.3", "--sigma-x", "0.3"], capsys)
    assert line == ("shiftlearn demo marginal: error: --sigma-x is the former name of "
                    "--bandwidth-x: give --bandwidth-x only.")
