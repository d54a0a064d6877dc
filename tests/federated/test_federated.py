"""Protocol, simulator, one-shot exactness and hostile-message handling (no network)."""

import doctest
import logging
from pathlib import Path

import numpy as np
import pytest
from _tolerances import EPS, leading_eigvec_atol, sum_atol

from shiftlearn.adaptation import RFTCA, rf_stats
from shiftlearn.federated import (
    PROTOCOL_VERSION,
    FedRFTCAConfig,
    IterativeServer,
    MessageError,
    ModelBroadcast,
    NetworkConditions,
    OneShotConfig,
    ProtocolSpec,
    StatsReply,
    TrainReply,
    TrainRequest,
    _data,
    _iterative,
    _messages,
    _oneshot,
    _run,
    arrays_to_stats,
    decode,
    encode,
    jobs,
    run_iterative,
    run_oneshot,
    sample_clients,
    stats_to_arrays,
)
from shiftlearn.federated._data import make_federated_blobs
from shiftlearn.federated.jobs import simulate_job
from shiftlearn.kernels import rff_map

SPEC = ProtocolSpec(n_features=4, n_components=3, n_classes=2, n_clients=3)


def _blobs(n=60, seed=0):
    parts = make_federated_blobs(4, n, seed=seed)
    return [(p.X, p.y) for p in parts[:-1]], parts[-1]


# ------------------------------------------------------------------------------ messages
def test_encode_decode_roundtrip_all_kinds():
    rng = np.random.default_rng(0)
    msgs = [TrainRequest(round=2, client_id=1, sampled=True, W=rng.normal(size=(8, 3)),
                         C=rng.normal(size=(4, 2)), ref_means=rng.normal(size=(2, 8))),
            TrainRequest(round=1, client_id=3, sampled=False),
            TrainReply(round=5, client_id=2, mean=rng.normal(size=8)),
            ModelBroadcast(round=2, client_id=1, W=rng.normal(size=(8, 3)),
                           eigenvalues=rng.random(3))]
    for m in msgs:
        arrays, meta = encode(m)
        assert meta["version"] == PROTOCOL_VERSION
        assert all(a.dtype == np.float64 for a in arrays.values())
        back = decode(arrays, meta, SPEC)
        assert type(back) is type(m) and back.round == m.round
        for k, a in arrays.items():
            np.testing.assert_array_equal(getattr(back, k), a)
    shapes = {"s": (2, 3)}
    arrays, meta = encode(StatsReply(round=1, client_id=1, fingerprint="ab",
                                     arrays={"s": np.ones((2, 3))}))
    assert decode(arrays, meta, SPEC, stats_shapes=shapes).fingerprint == "ab"


def _reply(**kw):
    base = {"round": 1, "client_id": 1, "mean": np.zeros(8)}
    base.update(kw)
    return encode(TrainReply(**base))


@pytest.mark.parametrize("mutate, reason", [
    (lambda a, m: m.update(version=PROTOCOL_VERSION + 1), "bad_version"),
    (lambda a, m: m.update(version=1), "bad_version"),   # v1 requests lack send_C
    (lambda a, m: m.update(protocol="other"), "bad_header"),
    (lambda a, m: m.update(kind="rm -rf"), "unknown_kind"),
    (lambda a, m: m.update(round="1"), "bad_header"),
    (lambda a, m: a.update(mean=np.zeros(9)), "bad_shape"),           # declared != actual
    (lambda a, m: (a.update(mean=np.zeros(9)), m.update({"shape.mean": "9"})), "bad_shape"),
    (lambda a, m: a.update(mean=np.zeros(8, dtype=np.float32)), "bad_dtype"),
    (lambda a, m: a.update(mean=np.full(8, np.nan)), "non_finite"),
    (lambda a, m: a.update(mean=np.r_[np.inf, np.zeros(7)]), "non_finite"),
    (lambda a, m: a.pop("mean"), "missing_array"),
    (lambda a, m: a.update(evil=np.zeros(2)), "unexpected_array"),
    (lambda a, m: a.update(mean=[0.0] * 8), "bad_dtype"),
])
def test_decode_rejects_malformed(mutate, reason):
    arrays, meta = _reply()
    mutate(arrays, meta)
    with pytest.raises(MessageError) as exc:
        decode(arrays, meta, SPEC)
    assert exc.value.reason == reason


def test_variable_leading_dim_is_bounded():
    arrays, meta = encode(TrainRequest(round=1, client_id=1, ref_means=np.zeros((4, 8))))
    with pytest.raises(MessageError, match="bad_shape"):
        decode(arrays, meta, SPEC)   # more counterpart rows than clients


# ------------------------------------------------------------------------------ guard
def _one_round(server, clients_replies, hostile=()):
    server.start_round()
    for a, m in list(hostile) + list(clients_replies):
        server.receive(a, m)
    return server.finish_round()


def test_hostile_replies_rejected_logged_not_aggregated(caplog):
    cfg = FedRFTCAConfig(n_features=4, n_components=3, client_sampling="all", seed=1)
    rng = np.random.default_rng(0)
    # within what honest clients can send (IterativeServer.value_bounds)
    good = {c: (0.1 * rng.normal(size=(8, 3)), 0.01 * rng.normal(size=(4, 2))) for c in (1, 2)}
    Wt = 0.1 * rng.normal(size=(8, 3))

    def valid(r):
        out = [encode(TrainReply(round=r, client_id=c, mean=np.zeros(8), W=W,
                                 C=C)) for c, (W, C) in good.items()]
        out.append(encode(TrainReply(round=r, client_id=3, mean=np.zeros(8),
                                     W=Wt)))
        return out

    clean = IterativeServer(cfg, [1, 2], 3, n_classes=2)
    _one_round(clean, valid(1))
    _one_round(clean, valid(2))

    server = IterativeServer(cfg, [1, 2], 3, n_classes=2)
    _one_round(server, valid(1))
    big = np.full((8, 3), 1e6)
    nan_W = np.full((8, 3), np.nan)
    hostile = [
        encode(TrainReply(round=2, client_id=99, mean=np.zeros(8), W=big)),
        encode(TrainReply(round=1, client_id=1, mean=np.zeros(8), W=big)),
        encode(TrainReply(round=3, client_id=2, mean=np.zeros(8), W=big)),
        encode(TrainRequest(round=2, client_id=1)),
    ]
    a, m = encode(TrainReply(round=2, client_id=1, mean=np.zeros(8), W=big))
    a["W"] = nan_W
    hostile.append((a, m))
    a, m = encode(TrainReply(round=2, client_id=2, mean=np.zeros(8), W=big))
    a["W"] = big.astype(np.float32)
    hostile.append((a, m))
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        _one_round(server, valid(2), hostile)
        # a second (duplicate) copy of a valid reply after the round's own
        server.receive(*valid(2)[0])
    counts = server.guard.counts()
    assert counts == {"unknown_client": 1, "stale_round": 1, "future_round": 1,
                      "wrong_kind": 1, "non_finite": 1, "bad_dtype": 1, "duplicate": 1}
    assert "unknown_client" in caplog.text and "non_finite" in caplog.text
    np.testing.assert_array_equal(server.W, clean.W)
    np.testing.assert_array_equal(server.C, clean.C)


def test_client_ignores_replayed_request():
    (sources, target) = _blobs(30)
    from shiftlearn.federated import IterativeClient
    cfg = FedRFTCAConfig(n_features=10, n_components=3)
    c = IterativeClient(1, sources[0][0], sources[0][1], cfg, 3)
    assert c.handle(TrainRequest(round=1, client_id=1, sampled=True)) is not None
    W = c.params["W"].copy()
    assert c.handle(TrainRequest(round=1, client_id=1, sampled=True)) is None
    assert c.handle(TrainRequest(round=2, client_id=2, sampled=True)) is None
    np.testing.assert_array_equal(c.params["W"], W)


# ------------------------------------------------------------------------------ one-shot
def _pooled(parts):
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] if p[1] is not None else -np.ones(len(p[0]), int) for p in parts])
    sd = np.concatenate([np.full(len(p[0]), p[2]) for p in parts])
    return X, y, sd


@pytest.mark.parametrize("penalty,frequencies", [("features", "gaussian"),
                                                 ("coefficients", "gaussian"),
                                                 ("features", "orthogonal")])
def test_oneshot_equals_centralized_rftca(penalty, frequencies):
    parts = [(p.X, p.y, p.domain_id) for p in make_federated_blobs(4, 80, seed=3)]
    cfg = OneShotConfig(n_features=40, n_components=4, sigma=2.0, seed=5, mu=0.5,
                        penalty=penalty, sampling=frequencies)
    res = run_oneshot(parts, cfg)
    assert res.rounds == 2 and res.contributors == [1, 2, 3, 4]
    X, y, sd = _pooled(parts)
    ref = RFTCA(n_components=4, mu=0.5, n_features=40, bandwidth=2.0, random_state=5,
                penalty=penalty, sampling=frequencies).fit(X, y, sample_domain=sd)
    np.testing.assert_array_equal(ref.omega_, cfg.omega(X.shape[1]))
    sign = np.sign(np.sum(ref.components_ * res.W, axis=0))
    assert np.max(np.abs(ref.components_ - res.W * sign)) < 1e-8
    assert np.max(np.abs(ref.eigenvalues_ - res.eigenvalues)) < 1e-8
    # every client received W
    for c in res.clients.values():
        np.testing.assert_array_equal(c.W, res.W)
    # only sums crossed: the server's statistics are the sum of the clients' fixed layouts
    om = cfg.omega(X.shape[1])
    direct = sum(rf_stats(Xi, yi, np.full(len(Xi), d), om) for Xi, yi, d in parts)
    np.testing.assert_allclose(res.stats.total_scatter(), direct.total_scatter(), atol=1e-10)


def test_stats_layout_roundtrip_and_sum():
    parts = make_federated_blobs(3, 25, seed=2)
    om = OneShotConfig(n_features=6).omega(5)
    ids = [-3, 1, 2]
    st = [rf_stats(p.X, p.y, np.full(25, p.domain_id), om) for p in parts]
    arrs = [stats_to_arrays(s, ids, 3) for s in st]
    total = {k: sum(a[k] for a in arrs) for k in arrs[0]}
    back = arrays_to_stats(total, ids, 12)
    ref = sum(st)
    np.testing.assert_array_equal(back.domains, ref.domains)
    # three parts summed through the array layout: c 3 eps sum of the parts' |entries|
    # (a part lost or its domain slot swapped is off by O(1))
    np.testing.assert_allclose(back.total_moment(), ref.total_moment(), rtol=0,
                               atol=sum_atol([s.total_moment() for s in st], axis=0))
    # each domain comes from one part: its sum is the part's, up to the layout's scaling
    np.testing.assert_allclose(back.domain_sums, ref.domain_sums, rtol=0,
                               atol=4 * len(st) * EPS * np.max(np.abs(ref.domain_sums)))
    with pytest.raises(ValueError, match="not in the agreed layout"):
        stats_to_arrays(st[0], [-3, 2], 3)


def test_oneshot_survives_loss_by_reasking():
    parts = [(p.X, p.y, p.domain_id) for p in make_federated_blobs(4, 40, seed=1)]
    cfg = OneShotConfig(n_features=20, n_components=3, sigma=2.0, max_rounds=30)
    clean = run_oneshot(parts, cfg)
    lossy = run_oneshot(parts, cfg, conditions=NetworkConditions(loss=0.4, duplicate=0.3,
                                                                 reorder=True, seed=2))
    assert lossy.rounds > 2
    # the server sums the replies in arrival order, which the reordering changes: the
    # pencil (C, I + mu d d^T) moves by a few eps ||S|| (S the uncentred moment), so the
    # B-normalised W turns by at most leading_eigvec_atol scaled by ||S|| / ||C|| (~4e-12;
    # a client's statistics lost or counted twice move W by O(1e-2))
    om = cfg.omega(parts[0][0].shape[1])
    tot = sum(rf_stats(X, y, np.full(len(X), d), om) for X, y, d in parts)
    dv = tot.mmd_vector()
    B = np.eye(dv.size) + cfg.mu * np.outer(dv, dv)
    C, S = tot.total_scatter(), tot.total_moment()
    atol = leading_eigvec_atol(C, B, cfg.n_components) * np.linalg.norm(S, 2) / np.linalg.norm(
        C, 2)
    np.testing.assert_allclose(lossy.W, clean.W, rtol=0, atol=atol)


def test_oneshot_rejects_foreign_omega_and_negative_counts():
    from shiftlearn.federated import OneShotServer

    cfg = OneShotConfig(n_features=3, n_components=2)
    server = OneShotServer(cfg, [1, 2], [-2, 1], 2, n_input=4)
    server.start_round()
    shapes = server.guard.stats_shapes
    zero = {k: np.zeros(s) for k, s in shapes.items()}
    assert not server.receive(*encode(StatsReply(round=1, client_id=1, fingerprint="x",
                                                 arrays=zero)))
    neg = dict(zero, domain_counts=-np.ones(2))
    assert not server.receive(*encode(StatsReply(round=1, client_id=1,
                                                 fingerprint=server.fingerprint, arrays=neg)))
    assert server.guard.counts() == {"wrong_omega": 1, "bad_counts": 1}
    assert server.collected == {}


# ------------------------------------------------------------------------------ iterative
def test_sampling_distribution():
    rng = np.random.default_rng(0)
    sizes = [len(sample_clients(rng, [1, 2, 3], "paper")) for _ in range(4000)]
    freq = np.bincount(sizes, minlength=4) / 4000
    assert np.all(np.abs(freq - 0.25) < 0.03)
    code = [len(sample_clients(rng, [1, 2, 3], "code")) for _ in range(500)]
    assert max(code) == 2 and min(code) == 0


def test_iterative_learns_and_is_deterministic():
    sources, target = _blobs(90, seed=4)
    cfg = FedRFTCAConfig(n_features=40, n_components=6, sigma=3.0, n_rounds=30,
                         local_steps=3, lr=0.05, client_sampling="paper", seed=2)
    a = run_iterative(sources, target.X, cfg, eval_every=30, y_target=target.y_true)
    b = run_iterative(sources, target.X, cfg)
    np.testing.assert_array_equal(a.W, b.W)
    assert a.history[-1]["target_accuracy"] > 0.6   # 3 classes: chance is 1/3
    assert any(h["sampled"] == [] for h in a.history)   # |S_t| = 0 happens and is survived


def test_faults_that_must_not_change_the_result():
    sources, target = _blobs(40)
    cfg = FedRFTCAConfig(n_features=12, n_components=3, sigma=3.0, n_rounds=6,
                         client_sampling="all")
    clean = run_iterative(sources, target.X, cfg)
    noisy = run_iterative(sources, target.X, cfg,
                          conditions=NetworkConditions(duplicate=1.0, reorder=True, seed=1))
    np.testing.assert_array_equal(clean.W, noisy.W)
    assert noisy.rejections.get("duplicate", 0) > 0


def test_faults_that_cut_communication():
    sources, target = _blobs(40)
    cfg = FedRFTCAConfig(n_features=12, n_components=3, sigma=3.0, n_rounds=5,
                         client_sampling="all")
    init = cfg.initial_W()
    lost = run_iterative(sources, target.X, cfg, conditions=NetworkConditions(loss=1.0))
    np.testing.assert_array_equal(lost.W, init)
    late = run_iterative(sources, target.X, cfg,
                         conditions=NetworkConditions(straggler=1.0, max_delay=1))
    np.testing.assert_array_equal(late.W, init)       # every reply stale: none aggregated
    assert late.rejections["stale_round"] > 0
    gone = run_iterative(sources, target.X, cfg, conditions=NetworkConditions(dropout=1.0))
    assert all(r["fate"] == "offline" for r in gone.traffic.records)
    partial = run_iterative(sources, target.X, cfg,
                            conditions=NetworkConditions(loss=0.3, dropout=0.2, seed=3))
    assert np.all(np.isfinite(partial.W)) and not np.array_equal(partial.W, init)


def test_classifier_average_stays_due_under_loss():
    """T_C large + lossy network: the classifier average must still happen (issue #7 bug:
    when round k*T_C's classifier uploads were lost or S_t was empty, the average was skipped
    until the next multiple of T_C, leaving the global classifier at zero = one class)."""
    sources, target = _blobs(60, seed=1)
    cfg = FedRFTCAConfig(n_features=20, n_components=4, sigma=3.0, n_rounds=30, local_steps=3,
                         lr=0.05, classifier_every=15, seed=0)
    for seed in range(6):
        res = run_iterative(sources, target.X, cfg, y_target=target.y_true, eval_every=30,
                            conditions=NetworkConditions(loss=0.5, dropout=0.2, seed=seed))
        averaged = [h["round"] for h in res.history if h["C_from"]]
        assert averaged and averaged[0] >= 15, averaged   # never before it is due
        assert np.any(res.C != 0)
        if seed in (0, 4):
            # these network seeds lose the round-15 average; it must be retried, not skipped
            # (before the fix: no average at all, C = 0, accuracy 1/3 = one class)
            assert 15 < averaged[0] < 30
            assert res.history[-1]["target_accuracy"] > 0.8


def test_classifier_average_due_on_empty_rounds():
    """With |S_t| ~ Unif{0..K} an empty S_t at a multiple of T_C must postpone, not skip."""
    sources, target = _blobs(40, seed=2)
    cfg = FedRFTCAConfig(n_features=12, n_components=3, sigma=3.0, n_rounds=40,
                         classifier_every=5, seed=0)
    res = run_iterative(sources, target.X, cfg)
    hist = res.history
    due_empty = [h["round"] for h in hist if h["round"] % 5 == 0 and not h["sampled"]]
    assert due_empty, "pick a seed with an empty S_t at a multiple of T_C"
    for r in due_empty:
        nxt = next(h for h in hist if h["round"] > r and h["sampled"])
        if nxt["round"] < 40:
            assert nxt["C_from"], (r, nxt)


def test_frozen_W0_trains_only_the_classifier():
    """W0 + train_W=False (e.g. the one-shot RF-TCA W): W never moves, C is learned."""
    sources, target = _blobs(60, seed=3)
    cfg = FedRFTCAConfig(n_features=20, n_components=4, sigma=3.0, n_rounds=15, lr=0.05,
                         train_W=False, seed=1)
    W0 = np.random.default_rng(5).normal(size=(40, 4))
    res = run_iterative(sources, target.X, cfg, W0=W0, y_target=target.y_true, eval_every=15,
                        conditions=NetworkConditions(loss=0.2, seed=0))
    # averages of equal copies: m W / m rounds twice per step, c m eps |W| (a step of the
    # optimiser on W would move it by ~lr |gradient| ~ 1e-2)
    np.testing.assert_allclose(res.W, W0, rtol=0,
                               atol=4 * len(sources) * EPS * np.max(np.abs(W0)))
    assert np.any(res.C != 0)
    moving = run_iterative(sources, target.X, FedRFTCAConfig(**{**cfg.__dict__,
                                                               "train_W": True}), W0=W0)
    assert np.max(np.abs(moving.W - W0)) > 1e-3


def test_local_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    n, D, m, k = 7, 6, 3, 4
    Z = rng.normal(size=(n, D))
    Y = np.eye(k)[rng.integers(0, k, n)]
    W, C = rng.normal(size=(D, m)), rng.normal(size=(m + 1, k))
    for Yc, V, lam in ((Y, rng.normal(size=(1, D)), 3.0), (None, rng.normal(size=(3, D)), 0.7),
                       (Y, None, 1.0)):
        loss, dW, dC = _iterative.local_objective(Z, Yc, W, C, V, lam)
        for P, G in ((W, dW), (C, dC)):
            num = np.zeros_like(P)
            for idx in np.ndindex(P.shape):
                old = P[idx]
                P[idx] = old + 1e-6
                up = _iterative.local_objective(Z, Yc, W, C, V, lam)[0]
                P[idx] = old - 1e-6
                down = _iterative.local_objective(Z, Yc, W, C, V, lam)[0]
                P[idx] = old
                num[idx] = (up - down) / 2e-6
            np.testing.assert_allclose(G, num, rtol=1e-6, atol=1e-8)
        if V is not None:   # the MMD part itself: lam/s * sum_j ||W^T v_j||^2
            base = _iterative.local_objective(Z, Yc, W, C, None, lam)[0]
            # loss - base cancels the classifier part: both carry c n D eps of their size,
            # absolute; the MMD term itself a relative c D eps (a wrong lam / s is O(1) off)
            atol = 4 * n * D * EPS * (abs(loss) + abs(base))
            np.testing.assert_allclose(loss - base, lam * np.sum((V @ W) ** 2) / V.shape[0],
                                       rtol=4 * D * EPS, atol=atol)


def test_bytes_per_round_do_not_depend_on_n():
    cfg = FedRFTCAConfig(n_features=16, n_components=4, sigma=3.0, n_rounds=4, seed=7)
    per = []
    for n in (30, 300):
        sources, target = _blobs(n)
        res = run_iterative(sources, target.X, cfg)
        per.append([(r["up_bytes"], r["down_bytes"]) for r in res.traffic.per_round()])
    assert per[0] == per[1]


def test_simulate_job_protocols():
    one = simulate_job({"protocol": "oneshot", "n-per-client": 40})
    assert one["W"].shape == (100, 5) and one["rounds"] == 2
    it = simulate_job({"protocol": "iterative", "n-per-client": 40, "rounds": 2})
    assert it["C"].shape == (6, 3) and 0 <= it["target_accuracy"] <= 1
    with pytest.raises(ValueError, match="Unknown job key"):
        simulate_job({"nope": 1})
    # the run config chooses the frequencies for every party; a bad value is an error
    orth = simulate_job({"protocol": "oneshot", "n-per-client": 40,
                         "sampling": "orthogonal"})
    assert not np.allclose(np.abs(orth["W"]), np.abs(one["W"]))
    for make in (lambda: OneShotConfig(sampling="sobol"),
                 lambda: FedRFTCAConfig(sampling="sobol")):
        with pytest.raises(ValueError, match="^sampling "):
            make()


def test_job_key_bandwidth_and_the_former_sigma_give_the_same_run_bit_for_bit():
    import warnings

    from shiftlearn.federated.jobs import job_config

    assert job_config()["bandwidth"] == "median" and "sigma" not in job_config()
    assert job_config({"dataset": "digits"})["bandwidth"] == 0.5
    assert job_config({"bandwidth": "0.75"})["bandwidth"] == 0.75       # a command line's text
    for bad in ("mean", "0", -1.0, "2*mean"):
        with pytest.raises(ValueError, match="^bandwidth must be a positive float, 'median'"):
            job_config({"bandwidth": bad})
    for protocol in ("oneshot", "iterative"):
        for sigma, bandwidth in ((0.0, "median"), (1.5, 1.5)):
            job = {"protocol": protocol, "n-per-client": 30, "rounds": 2}
            with pytest.warns(FutureWarning, match=rf"^The job key sigma is renamed bandwidth; "
                                                   rf"set bandwidth={bandwidth!r}"):
                old = simulate_job({**job, "sigma": sigma})
            with warnings.catch_warnings():
                warnings.simplefilter("error", FutureWarning)
                new = simulate_job({**job, "bandwidth": bandwidth})
            assert old["sigma"] == new["sigma"]
            np.testing.assert_array_equal(old["W"], new["W"])
    with pytest.raises(ValueError, match="sets both sigma=1.0 and bandwidth=2.0; sigma is the "
                                         "former key of bandwidth: set bandwidth only"):
        job_config({"sigma": 1.0, "bandwidth": 2.0})


def test_flower_run_config_reads_the_former_sigma_key():
    pytest.importorskip("flwr")
    from types import SimpleNamespace

    from shiftlearn.federated.flower._apps import _job

    with pytest.warns(FutureWarning, match="job key sigma is renamed bandwidth"):
        cfg = _job(SimpleNamespace(run_config={"sigma": 0.0, "rounds": 3}))   # an old app
    assert cfg["bandwidth"] == "median" and "sigma" not in cfg and cfg["rounds"] == 3
    assert _job(SimpleNamespace(run_config={"bandwidth": 0.5}))["bandwidth"] == 0.5


@pytest.mark.parametrize("module", [_messages, _iterative, _oneshot, _run, _data, jobs])
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_office_clients_preprocess_their_own_rows_as_configured():
    from shiftlearn.federated._data import load_all
    from shiftlearn.federated.jobs import job_config

    cfg = job_config({"dataset": "office_caltech", "target": "dslr"})
    assert cfg["preprocessing"] == "sum_zscore"
    z = load_all(cfg)
    l2 = load_all({**cfg, "preprocessing": "l2"})
    assert [p.name for p in z] == [p.name for p in l2] == ["amazon", "caltech", "webcam", "dslr"]
    for a, b in zip(z, l2, strict=True):
        assert np.allclose(a.X.mean(axis=0), 0, atol=1e-9)       # z-scored within the client
        assert np.allclose(np.linalg.norm(b.X, axis=1), 1.0)     # rows normalised only
        assert not np.allclose(b.X.mean(axis=0), 0, atol=1e-3)
    with pytest.raises(ValueError, match="Unknown preprocessing"):
        load_all({**cfg, "preprocessing": "whiten"})


# ------------------------------------------------------------------ issue #14: baselines
ROOT = Path(__file__).resolve().parents[2]
README_NET = NetworkConditions(loss=0.3, dropout=0.1, seed=0)


def test_readme_federated_command_beats_chance_and_is_reported_with_its_baseline():
    """The README's `federated simulate --set protocol=iterative rounds=50 --loss 0.3
    --dropout 0.1`: 19% on 3 classes before issue #14 (the default blobs put the target's
    classes on other classes' places; source only was at chance too)."""
    res = simulate_job({"protocol": "iterative", "rounds": 50}, README_NET)
    acc, base = res["target_accuracy"], res["baseline"]
    assert base["chance"] == pytest.approx(1 / 3)
    assert base["source_only"] > 0.75               # the data are learnable from the sources
    assert acc > 0.75                               # was 0.19
    assert acc >= base["source_only"] - 2 / 120     # not below the baseline (2 target rows)
    assert ("warning" in res) == (acc < base["source_only"])


def test_docs_quick_start_runs_and_beats_its_baseline():
    """docs/federated.md's quick start (a doctest; it printed 2% before issue #14)."""
    result = doctest.testfile(str(ROOT / "docs" / "federated.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0


def test_baseline_is_the_same_model_on_pooled_sources_without_mmd():
    job = {"protocol": "iterative", "rounds": 8, "n-per-client": 60}
    a = simulate_job(job)
    b = simulate_job({**job, "lam": 5.0, "client-sampling": "all"}, README_NET)
    assert a["baseline"] == b["baseline"]           # lam, client sampling and the network: ignored
    parts = _data.load_all(jobs.job_config(job))
    cfg = jobs.iterative_config(jobs.job_config(job), a["sigma"])
    W, C = _run.train_source_only([(p.X, p.y) for p in parts[:-1]], cfg)
    # the same initial W, moved by (rounds x local steps) Adam steps on the pooled sources
    assert not np.allclose(W, cfg.initial_W())
    Xs = np.vstack([p.X for p in parts[:-1]])
    ys = np.concatenate([p.y for p in parts[:-1]])
    pred = _iterative.predict(rff_map(Xs, cfg.omega(5)), W, C)
    assert np.mean(pred == ys) > 0.9
    with pytest.raises(ValueError, match="at least one labeled source"):
        _run.train_source_only([], cfg)


def test_ill_posed_target_is_reported_in_the_result():
    """A target moved past other classes (target-shift 1.2): the result must say that
    FedRF-TCA fell below the source-only model instead of reporting the number alone."""
    res = simulate_job({"protocol": "iterative", "rounds": 20, "n-per-client": 60,
                        "target-shift": 1.2, "data-seed": 0})
    assert res["target_accuracy"] < res["baseline"]["source_only"]
    assert "below the source-only model" in res["warning"]
    warn = jobs.baseline_warning(0.30, {"source_only": 1 / 3, "chance": 1 / 3})
    assert "not above chance (33.3%)" in warn and "source-only model is not above chance" in warn
    # at the boundary: equal to the baseline is not below it
    assert jobs.baseline_warning(0.5, {"source_only": 0.5, "chance": 1 / 3}) is None
    assert jobs.baseline_warning(1 / 3, {"source_only": 0.2, "chance": 1 / 3}) is not None


def _target_classes_nearest_their_own(parts) -> bool:
    Xs = np.vstack([p.X for p in parts[:-1]])
    ys = np.concatenate([p.y for p in parts[:-1]])
    t = parts[-1]
    ms = np.array([Xs[ys == c].mean(0) for c in range(t.n_classes)])
    mt = np.array([t.X[t.y_true == c].mean(0) for c in range(t.n_classes)])
    return bool(np.all(((mt[:, None] - ms[None]) ** 2).sum(-1).argmin(1)
                       == np.arange(t.n_classes)))


def test_blobs_pose_a_well_defined_problem_for_every_seed():
    """Before issue #14, 20 of the seeds 0-99 (seed 0, the default, among them) had a target
    class mean nearer another class's source mean than its own."""
    assert all(_target_classes_nearest_their_own(make_federated_blobs(seed=s))
               for s in range(200))
    parts = make_federated_blobs(5, 40, n_input=6, n_classes=4, seed=3, separation=3.0,
                                 source_shift=0.2, target_shift=0.3)
    assert [p.domain_id for p in parts] == [1, 2, 3, 4, -5]
    assert all(np.bincount(p.y if p.y is not None else p.y_true).tolist() == [10] * 4
               for p in parts)
    # the geometry is what the parameters say (population means, 20,000 rows per domain)
    big = make_federated_blobs(3, 20_000, seed=1, separation=4.0, source_shift=0.25,
                               target_shift=0.4)
    means = [np.array([p.X[(p.y if p.y is not None else p.y_true) == c].mean(0)
                       for c in range(3)]) for p in big]
    for m in means:
        dists = [np.linalg.norm(m[a] - m[b]) for a in range(3) for b in range(a)]
        np.testing.assert_allclose(dists, 4.0, atol=0.1)
    # the simplex is centred at 0, so a domain's mean of class means is its shift: sources
    # 0.25 x 4 = 1.0 from 0, the target 0.4 x 4 = 1.6 from the centre of the sources
    for m in means[:-1]:
        assert np.linalg.norm(m.mean(0)) == pytest.approx(1.0, abs=0.03)
    centre = (means[0].mean(0) + means[1].mean(0)) / 2
    assert np.linalg.norm(means[2].mean(0) - centre) == pytest.approx(1.6, abs=0.03)
    # a large shift is allowed (on purpose) and can pose an ill-defined problem
    assert not all(_target_classes_nearest_their_own(make_federated_blobs(seed=s,
                                                                          target_shift=1.2))
                   for s in range(5))


@pytest.mark.parametrize("kw, match", [
    ({"n_clients": 1}, "n_clients must be an integer >= 2"),
    ({"n_per_client": 2}, "n_per_client must be an integer >= 3"),
    ({"n_classes": 1}, "n_classes must be an integer >= 2"),
    ({"separation": 0.0}, "separation must be a finite number > 0"),
    ({"target_shift": -0.1}, "target_shift must be a finite number >= 0"),
    ({"source_shift": float("inf")}, "source_shift must be a finite number >= 0"),
])
def test_blobs_refuse_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        make_federated_blobs(**kw)
    make_federated_blobs(n_clients=2, n_per_client=3, target_shift=0.0)   # the boundaries


def test_loopback_without_the_federated_extra_raises_importerror_before_starting(
        tmp_path, monkeypatch):
    from shiftlearn.federated.flower import _deploy

    dep = _deploy.LoopbackDeployment(2, tmp_path / "w", bin_dir=str(tmp_path))  # no executables
    with pytest.raises(ImportError, match=r'pip install "shiftlearn\[federated\]"') as err:
        with dep:
            pass
    assert "flower-superlink" in str(err.value)
    assert dep.procs == [] and not (tmp_path / "w" / "superlink.log").exists()
    # the executables present but the flwr package missing: refused the same way
    for exe in _deploy.FLOWER_EXECUTABLES:
        (tmp_path / exe).write_text("")
    real = _deploy.importlib.util.find_spec
    monkeypatch.setattr(_deploy.importlib.util, "find_spec",
                        lambda name, *a: None if name == "flwr" else real(name, *a))
    with pytest.raises(ImportError, match="the flwr package is missing"):
        dep.start()
    assert dep.procs == []


def test_clients_admit_only_their_own_newer_rounds(caplog):
    from types import SimpleNamespace

    from shiftlearn.federated._guard import admit_request

    client = SimpleNamespace(client_id=2, last_round=0, rejected=[])
    req = lambda cid, rnd: SimpleNamespace(client_id=cid, round=rnd)  # noqa: E731
    with caplog.at_level("WARNING", logger="shiftlearn.federated"):
        assert admit_request(client, req(2, 1)) and client.last_round == 1
        assert not admit_request(client, req(3, 2))          # someone else's request
        assert not admit_request(client, req(2, 1))          # a replay
        assert admit_request(client, req(2, 3)) and client.last_round == 3
    assert client.rejected == [(2, "not addressed to me"), (1, "old round")]
    assert sum("ignored request" in r.message for r in caplog.records) == 2
