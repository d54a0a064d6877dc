"""Data layer: checksums, loaders, packing, literature baselines, errors, data home, generators."""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from _tolerances import EPS
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn._validation import check_X_y_domain
from shiftlearn.datasets import (
    FILES,
    LOADERS,
    DataFileError,
    DomainDataset,
    fetch_file,
    get_data_home,
    l2_normalize_rows,
    load_mnist_usps,
    load_msrc_voc,
    load_office_caltech,
    load_parkinsons,
    make_monotone_shift,
    make_rotated_ellipses,
    make_sca_toy,
    sha256_of,
    sum_normalize_zscore,
)


def _one_nn(Xs, ys, Xt, yt) -> float:
    return float(np.mean(KNeighborsClassifier(n_neighbors=1).fit(Xs, ys).predict(Xt) == yt))


def _readme_checksums(data_home) -> dict[str, str]:
    text = (Path(data_home) / "README.md").read_text()
    rows = re.findall(r"^\| (\S+) \| (\S+) \| ([0-9a-f]{64}) \|", text, flags=re.M)
    return {f"{folder}/{name}": sha for folder, name, sha in rows}


# ------------------------------------------------------------------------------ checksums ------
def test_every_file_verified_and_matches_the_shared_readme(data_home):
    readme = _readme_checksums(data_home)
    specs = [s for group in FILES.values() for s in group]
    assert len(specs) == 8 and len(readme) == 8
    for spec in specs:
        assert readme[spec.relpath()] == spec.sha256  # the loaders pin the published checksums
        path = fetch_file(spec, data_home, download=False)
        assert sha256_of(path) == spec.sha256
        assert spec.url.startswith("https://raw.githubusercontent.com/")
        assert re.search(r"/[0-9a-f]{40}/", spec.url), "origin must be pinned to a commit"


# ------------------------------------------------------------------------------- loaders ------
def test_office_caltech_shapes(data_home):
    ds = load_office_caltech(data_home)
    sizes = {d: ds.get(d)[0].shape for d in ds.domain_names}
    assert sizes == {"amazon": (958, 800), "caltech": (1123, 800), "dslr": (157, 800),
                     "webcam": (295, 800)}
    for d in ds.domain_names:
        assert np.unique(ds.get(d)[1]).tolist() == list(range(1, 11))
    assert len(ds.tasks) == 12 and len(set(ds.tasks)) == 12
    assert all(s != t for s, t in ds.tasks)


def test_office_caltech_preprocessing(data_home):
    ds = load_office_caltech(data_home)
    raw, _ = ds.get("webcam", preprocess=False)
    assert np.all(raw == np.round(raw)) and raw.min() >= 0  # uint8 histograms
    X, _ = ds.get("webcam")
    expected = raw / raw.sum(axis=1, keepdims=True)
    std = expected.std(axis=0)
    mean = expected.mean(axis=0)
    s = np.where(std == 0, 1, std)
    # (e - m) / s in another order: the subtraction's eps (|e| + |m|) / s, the mean's and the
    # standard deviation's c n eps (relative, no cancellation in sums of squares) carried
    # through 1 / s and |z| (a mean or std over rows instead of columns is off by O(1))
    n = raw.shape[0]
    Z = (expected - mean) / s
    atol = np.max((4 * EPS * (np.abs(expected) + np.abs(mean)) + 4 * n * EPS * np.abs(mean)) / s
                  + 4 * n * EPS * np.abs(Z))
    expected = Z
    np.testing.assert_allclose(X, expected, rtol=0, atol=atol)
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-10)
    nonconst = std > 0
    np.testing.assert_allclose(X[:, nonconst].std(axis=0), 1, atol=1e-10)
    X_l2, _ = load_office_caltech(data_home, preprocessing="l2").get("webcam")
    np.testing.assert_allclose(np.linalg.norm(X_l2, axis=1), 1)
    with pytest.raises(ValueError, match="Unknown preprocessing"):
        load_office_caltech(data_home, preprocessing="pca")


def test_mnist_usps_shapes_and_both_files_agree(data_home):
    import h5py

    ds = load_mnist_usps(data_home)
    Xm, ym = ds.get("mnist")
    Xu, yu = ds.get("usps")
    assert Xm.shape == (2000, 256) and Xu.shape == (1800, 256)
    assert np.unique(ym).tolist() == list(range(1, 11)) == np.unique(yu).tolist()
    np.testing.assert_allclose(np.linalg.norm(Xm, axis=1), 1)
    raw, _ = ds.get("usps", preprocess=False)
    assert raw.min() >= 0 and raw.max() < 1
    # the second file holds the same two domains in the other direction
    path = fetch_file(FILES["mnist_usps"][1], data_home, download=False)
    with h5py.File(path, "r") as h:
        np.testing.assert_array_equal(np.asarray(h["Xs"]), raw)
        np.testing.assert_array_equal(np.asarray(h["Yt"]).ravel(), ym)
    assert ds.tasks == [("mnist", "usps"), ("usps", "mnist")]


def test_msrc_voc_shapes(data_home):
    ds = load_msrc_voc(data_home)
    Xs, ys = ds.get("msrc")
    Xt, yt = ds.get("voc")
    assert Xs.shape == (1269, 240) and Xt.shape == (1530, 240)
    assert np.unique(ys).tolist() == list(range(1, 7)) == np.unique(yt).tolist()
    assert ys.dtype.kind == "i"


def test_parkinsons_shapes(data_home):
    ds = load_parkinsons(data_home)
    assert len(ds.domain_names) == 42
    assert sum(ds.get(d)[0].shape[0] for d in ds.domain_names) == 5875
    X, y = ds.get("patient_1")
    assert X.shape[1] == 16 and y.dtype == np.float64 and ds.target_name == "total_UPDRS"
    X_all, y_motor = load_parkinsons(data_home, target="motor_UPDRS", features="all") \
        .get("patient_1")
    assert X_all.shape[1] == 19
    assert np.all(y_motor <= y)  # motor UPDRS is a part of total UPDRS
    with pytest.raises(ValueError, match="target must be"):
        load_parkinsons(data_home, target="age")
    with pytest.raises(ValueError, match="features must be"):
        load_parkinsons(data_home, features="some")


# ---------------------------------------------------------------------------------- pack ------
def test_pack_ids_and_masking(data_home):
    ds = load_office_caltech(data_home)
    X, y, sd, y_true = ds.pack(sources=["amazon", "dslr"], targets="webcam",
                               return_masked_labels=True)
    assert X.shape == (958 + 157 + 295, 800)
    assert sd.tolist() == [1] * 958 + [3] * 157 + [-4] * 295  # ids = positions, stable
    assert np.all(y[sd < 0] == -1) and np.all(y[sd > 0] >= 1)
    np.testing.assert_array_equal(y_true[sd < 0], ds.get("webcam")[1])
    np.testing.assert_array_equal(X[sd == 3], ds.get("dslr")[0])  # per-domain preprocessing
    check_X_y_domain(X, y, sd, allow_target_labels=False, require_target=True)
    _, y2, _ = ds.pack("amazon", "webcam", mask_target_labels=False)
    np.testing.assert_array_equal(y2[958:], ds.get("webcam")[1])
    Xr, _, _ = ds.pack("amazon", "webcam", preprocess=False)
    assert np.all(Xr == np.round(Xr))
    with pytest.raises(ValueError, match="both source and target"):
        ds.pack(["amazon"], ["amazon"])
    with pytest.raises(ValueError, match="Unknown domain 'imagenet'"):
        ds.pack("imagenet", "webcam")
    with pytest.raises(ValueError, match="at least one"):
        ds.pack([], [])


def test_pack_regression_masks_with_nan(data_home):
    ds = load_parkinsons(data_home)
    X, y, sd = ds.pack(["patient_1", "patient_2"], ["patient_5"])
    assert np.isnan(y[sd == -5]).all() and not np.isnan(y[sd > 0]).any()
    assert set(sd.tolist()) == {1, 2, -5}
    _, _, inferred = check_X_y_domain(X, y)
    assert inferred.tolist() == np.where(sd > 0, 1, -2).tolist()


def test_domain_dataset_without_data():
    ds = DomainDataset("toy", {"a": (np.arange(6.0).reshape(3, 2), np.array([0, 1, 0])),
                               "b": (np.ones((2, 2)), np.array([1, 1]))},
                       preprocess=l2_normalize_rows, preprocessing="l2")
    assert ds.domain_id("b") == 2
    X, y, sd = ds.pack("b", "a")
    assert sd.tolist() == [2, 2, -1, -1, -1] and y.tolist() == [1, 1, -1, -1, -1]
    np.testing.assert_allclose(np.linalg.norm(X[1:], axis=1), 1)
    assert "toy" in repr(ds) and "a: 3" in repr(ds)


# ----------------------------------------------------------------------------- baselines ------
def test_office_caltech_raw_1nn_baseline(data_home):
    ds = load_office_caltech(data_home)
    accs = [_one_nn(*ds.get(s), *ds.get(t)) for s, t in ds.tasks]
    assert len(accs) == 12
    assert round(100 * np.mean(accs), 2) == 31.37


@pytest.mark.parametrize(("source", "target", "expected"),
                         [("mnist", "usps", 65.94), ("usps", "mnist", 44.70)])
def test_mnist_usps_raw_1nn_baseline(data_home, source, target, expected):
    ds = load_mnist_usps(data_home)
    assert round(100 * _one_nn(*ds.get(source), *ds.get(target)), 2) == expected


# ------------------------------------------------------------------------ missing/corrupt ------
def test_corrupt_file_error_names_file_checksum_and_folder(data_home, tmp_path):
    spec = FILES["office_caltech"][3]
    folder = tmp_path / spec.folder
    folder.mkdir()
    for s in FILES["office_caltech"]:
        shutil.copy(Path(data_home) / s.relpath(), folder / s.filename)
    data = bytearray((folder / spec.filename).read_bytes())
    data[100] ^= 0xFF
    (folder / spec.filename).write_bytes(bytes(data))
    with pytest.raises(DataFileError) as exc:
        load_office_caltech(tmp_path, download=False)
    msg = str(exc.value)
    assert spec.filename in msg and spec.sha256 in msg and str(folder) in msg
    assert "Corrupt" in msg


def test_missing_file_error_names_file_checksum_and_folder(tmp_path):
    spec = FILES["msrc_voc"][0]
    with pytest.raises(DataFileError) as exc:
        load_msrc_voc(tmp_path, download=False)
    msg = str(exc.value)
    assert spec.filename in msg and spec.sha256 in msg and str(tmp_path / spec.folder) in msg
    assert not (tmp_path / spec.folder / spec.filename).exists()


@pytest.mark.parametrize("name", list(LOADERS))
def test_every_loader_refuses_an_empty_data_home(tmp_path, name):
    with pytest.raises(DataFileError, match="Missing data file"):
        LOADERS[name](tmp_path, download=False)


# ----------------------------------------------------------------------------- data home ------
def test_data_home_resolution_order(monkeypatch, tmp_path):
    monkeypatch.setenv("SHIFTLEARN_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"  # argument first
    assert get_data_home() == tmp_path / "env"                   # then the variable
    monkeypatch.delenv("SHIFTLEARN_DATA")
    assert get_data_home() == tmp_path / "xdg" / "shiftlearn"    # then the cache folder
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_data_home() == tmp_path / "home" / ".cache" / "shiftlearn"
    monkeypatch.setenv("SHIFTLEARN_DATA", "")                    # empty = unset
    assert get_data_home() == tmp_path / "home" / ".cache" / "shiftlearn"
    assert get_data_home("~/x") == tmp_path / "home" / "x"


def test_loader_uses_environment_variable(monkeypatch, data_home, tmp_path):
    monkeypatch.setenv("SHIFTLEARN_DATA", str(tmp_path))  # empty folder: must fail there
    with pytest.raises(DataFileError, match=re.escape(str(tmp_path))):
        load_msrc_voc(download=False)
    monkeypatch.setenv("SHIFTLEARN_DATA", data_home)
    assert load_msrc_voc(download=False).get("voc")[0].shape == (1530, 240)
    # the argument wins over the variable
    monkeypatch.setenv("SHIFTLEARN_DATA", str(tmp_path))
    assert load_msrc_voc(data_home, download=False).get("voc")[0].shape == (1530, 240)


# --------------------------------------------------------------------------- preprocessing ------
def test_preprocessing_functions():
    X = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(np.linalg.norm(l2_normalize_rows(X)[:2], axis=1), 1)
    assert np.all(l2_normalize_rows(X)[2] == 0)
    A = np.array([[1.0, 3.0, 2.0], [2.0, 2.0, 2.0], [4.0, 0.0, 2.0]])
    Z = sum_normalize_zscore(A)
    # the centring's rounding, eps (|e| + |m|) / s per entry with e the row-normalised
    # values (<= 1) and s their std (>= 1/6 here), plus the mean's n eps sum|z| (an
    # uncentred column is off by its mean, >= 0.1)
    E = A / A.sum(axis=1, keepdims=True)
    s = np.where(E.std(axis=0) == 0, 1, E.std(axis=0))
    atol = np.max(4 * EPS * 2 * np.max(np.abs(E)) / s) + 4 * EPS * np.max(np.abs(Z).sum(axis=0))
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=atol)
    assert np.isfinite(Z).all()


# ------------------------------------------------------------------------------ synthetic ------
def test_make_sca_toy():
    X, y, sd, yt = make_sca_toy(50, random_state=0, return_target_labels=True)
    assert X.shape == (300, 2) and sd.tolist() == [1] * 150 + [-2] * 150
    assert np.all(y[sd < 0] == -1) and np.bincount(yt).tolist() == [50, 50, 50]
    X2, *_ = make_sca_toy(50, random_state=0)
    np.testing.assert_array_equal(X, X2)
    assert not np.array_equal(X, make_sca_toy(50, random_state=1)[0])
    accs = [_one_nn(X[sd > 0], y[sd > 0], X[sd < 0], yt) for X, y, sd, yt in
            (make_sca_toy(random_state=s, return_target_labels=True) for s in range(3))]
    assert np.mean(accs) < 0.45  # the shift defeats raw 1NN (near chance, 1/3)
    check_X_y_domain(X, y, sd, allow_target_labels=False)


def test_make_rotated_ellipses():
    X, y, sd = make_rotated_ellipses(n_tasks=5, n_points=20, random_state=0)
    assert X.shape == (100, 2) and sorted(set(sd.tolist())) == [1, 2, 3, 4, 5]
    assert set(y.tolist()) == {0, 1}
    check_X_y_domain(X, y, sd)  # valid as labeled source domains
    for d in range(1, 6):
        m = sd == d
        assert y[m].sum() == 10  # exactly balanced
        # the points lie inside an ellipse with semi-axes 1 and 0.2: second moments are
        # anisotropic, the smaller eigenvalue well below the larger
        ev = np.linalg.eigvalsh(np.cov(X[m].T))
        assert ev[0] < 0.2 * ev[1]
    _, y_pm, _ = make_rotated_ellipses(n_tasks=5, n_points=20, labels=(-1, 1), random_state=0)
    assert np.array_equal(y_pm, np.where(y == 1, 1, -1))
    with pytest.raises(ValueError):
        make_rotated_ellipses(n_tasks=0)
    with pytest.raises(ValueError, match="domain id 0"):
        make_rotated_ellipses(n_tasks=5, first_domain=-2)
    _, _, sd_t = make_rotated_ellipses(n_tasks=3, n_points=4, first_domain=-3, random_state=0)
    assert sorted(set(sd_t.tolist())) == [-3, -2, -1]
    with pytest.raises(ValueError, match="^point_sampling must be"):
        make_rotated_ellipses(n_tasks=2, point_sampling="gaussian")


@pytest.mark.parametrize("sampling", ["code", "uniform"])
def test_make_rotated_ellipses_label_is_right_of_major_axis(sampling):
    # Algorithm 1: +1 = right of the major axis; the axis is within 45 degrees of vertical
    X, y, sd = make_rotated_ellipses(n_tasks=40, n_points=200, labels=(-1, 1),
                                     point_sampling=sampling, random_state=3)
    for d in np.unique(sd):
        m = sd == d
        w, V = np.linalg.eigh(X[m].T @ X[m])
        axis = V[:, 1] if V[1, 1] > 0 else -V[:, 1]  # major axis, pointing up
        assert abs(axis[1]) >= np.sqrt(0.5) - 0.05  # within 45 degrees of vertical
        right = np.array([axis[1], -axis[0]])  # right-hand normal, x_1 component > 0
        side = np.where(X[m] @ right > 0, 1, -1)
        assert np.mean(side == y[m]) > 0.9  # mirrored labels would give < 0.1
    # hence the task-blind rule x_1 > 0 => +1 beats chance (the pooled baseline's edge)
    assert 0.25 < np.mean(np.where(X[:, 0] > 0, 1, -1) != y) < 0.40


def test_make_monotone_shift():
    X, y, sd = make_monotone_shift(300, 200, random_state=0)
    assert X.shape == (500, 6) and np.sum(sd == 1) == 300 and np.sum(sd == -2) == 200
    assert set(y.tolist()) == {0, 1}
    Xt = X[sd < 0]
    assert Xt[:, 1].min() > 0 and abs(Xt[:, 0].mean() - 2) < 0.5  # exp and affine maps applied
    Xm, ym, sdm = make_monotone_shift(300, 200, mask_target_labels=True, random_state=0)
    assert np.all(ym[sdm < 0] == -1)
    Xr, _, _ = make_monotone_shift(300, 200, shift="rotation", random_state=0)
    np.testing.assert_allclose(np.linalg.norm(Xr[300:, :3], axis=1),
                               np.linalg.norm(make_monotone_shift(300, 200, shift="rotation",
                                                                  random_state=0)[0][300:, :3],
                                              axis=1))
    with pytest.raises(ValueError, match="shift must be"):
        make_monotone_shift(shift="scale")
    with pytest.raises(ValueError, match="at least 4"):
        make_monotone_shift(n_input=3)
