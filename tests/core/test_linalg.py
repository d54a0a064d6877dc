"""shiftlearn._linalg.leading_eigh, the one home for leading eigenpairs: dense and ARPACK
against the full dense reference, generalized and standard, matrices and operators, ridges,
failures, and the in-place helpers."""

import numpy as np
import pytest
import scipy.linalg
from _tolerances import eigh_atol
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator

from shiftlearn import _linalg
from shiftlearn._linalg import ARPACK_TOL, ArpackFailure, add_gram_, leading_eigh, sym_


def _pencil(n=120, seed=0, rank=None):
    """An asymmetric-by-round-off PSD ``A`` (optionally low rank) and an SPD ``B`` that is far
    from the identity, so a solver that ignored ``B`` would be caught."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, rank or n)) * np.linspace(3.0, 0.1, rank or n)
    A = F @ F.T
    A[0, 1] += 1e-13                           # not exactly symmetric
    G = rng.standard_normal((n, n))
    B = G @ G.T / n + np.diag(rng.uniform(0.5, 3.0, n))
    return A, B


def _reference(A, B, k):
    w, V = scipy.linalg.eigh((A + A.T) / 2, B)
    return w[::-1][:k], V[:, ::-1][:, :k]


def _cos(V, W, B):
    """|cos| between matching columns in the B-inner product."""
    num = np.abs(np.sum(V * (B @ W), axis=0))
    return num / np.sqrt(np.sum(V * (B @ V), axis=0) * np.sum(W * (B @ W), axis=0))


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("generalized", [False, True])
def test_leading_pairs_match_the_full_dense_reference(solver, generalized):
    A, B = _pencil()
    B = B if generalized else None
    Bref = np.eye(A.shape[0]) if B is None else B
    k = 7
    w, V = leading_eigh(A, k, B, solver=solver)
    w_ref, V_ref = _reference(A, Bref, k)
    # dense: two LAPACK drivers, each backward stable, differ by the round-off bound of the
    # pencil (eigh_atol); ARPACK stops at a relative residual ARPACK_TOL, so its eigenvalues
    # carry a relative error of about that. Either catches a solver that ignores B or drops
    # the B-ridge, which move the eigenvalues by far more.
    rtol = 0.0 if solver == "dense" else 10 * ARPACK_TOL
    np.testing.assert_allclose(w, w_ref, rtol=rtol, atol=eigh_atol(A, Bref, w_ref))
    assert np.all(np.diff(w) <= 0)                                   # leading first
    np.testing.assert_allclose(V.T @ Bref @ V, np.eye(k), atol=1e-9)  # V^T B V = I
    np.testing.assert_allclose(_cos(V, V_ref, Bref), 1.0, atol=1e-9)
    R = A @ V - (Bref @ V) * w
    assert np.max(np.linalg.norm(R, axis=0)) <= 1e-8 * w[0]


def test_operator_input_equals_matrix_input_and_refuses_what_it_cannot_do():
    A, _ = _pencil(n=80)
    As = (A + A.T) / 2
    op = LinearOperator(As.shape, matvec=lambda x: As @ np.ravel(x), dtype=np.float64)
    w_op, V_op = leading_eigh(op, 4, solver="arpack")
    w, V = leading_eigh(A, 4)
    np.testing.assert_allclose(w_op, w, rtol=1e-10)
    np.testing.assert_allclose(np.abs(V_op.T @ V), np.eye(4), atol=1e-8)
    for kwargs in ({"solver": "dense"}, {"solver": "arpack", "B": np.eye(80)}):
        with pytest.raises(ValueError, match="operator A needs solver='arpack', B=None"):
            leading_eigh(op, 4, **kwargs)
    with pytest.raises(ValueError, match="k < n - 1"):
        leading_eigh(op, 79, solver="arpack")


def test_arpack_hands_n_minus_one_pairs_of_a_matrix_to_the_dense_solver():
    A, B = _pencil(n=12)
    for k in (11, 12):                        # ARPACK's limit is k < n - 1
        w, V = leading_eigh(A, k, B, solver="arpack")
        w_ref = _reference(A, B, k)[0]
        # the dense solver's answer: equal to the full reference up to the round-off of two
        # LAPACK drivers on the pencil, |dw| <= c n eps ||B^-1|| (||A|| + |w| ||B||), absolute
        # (the smallest eigenvalue, ~1e-2 here, is not known to a relative 1e-12: that is what
        # failed on another BLAS build). ARPACK's relative 1e-10 would be ~400x the bound, a
        # fallback ridge applied although B is positive definite ~1000x.
        np.testing.assert_allclose(w, w_ref, rtol=0, atol=eigh_atol(A, B, w_ref))
    w, _ = leading_eigh(A, 10, B, solver="arpack")                  # one below: ARPACK
    np.testing.assert_allclose(w, _reference(A, B, 10)[0], rtol=10 * ARPACK_TOL)


def test_arguments_are_checked():
    A, B = _pencil(n=10)
    for k in (0, 11, 2.0, True):
        with pytest.raises(ValueError, match=r"k must be an integer in \[1, 10\]"):
            leading_eigh(A, k)
    leading_eigh(A, 1)
    leading_eigh(A, 10)                                            # both ends accepted
    with pytest.raises(ValueError, match="solver must be 'dense' or 'arpack'"):
        leading_eigh(A, 2, solver="lanczos")
    with pytest.raises(ValueError, match="square of the same size"):
        leading_eigh(A, 2, B[:5, :5])
    with pytest.raises(ValueError, match="eps is a ridge on B"):
        leading_eigh(A, 2, eps=1e-3)


def test_eps_ridge_and_the_stated_fallback_ridge():
    A, B = _pencil(n=30)
    w, V = leading_eigh(A, 3, B, eps=0.5)
    Be = B + 0.5 * np.eye(30)
    w_ref = _reference(A, Be, 3)[0]
    # round-off of the ridged pencil; a ridge of another size (or none) moves w by ~|w| 0.5/2
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=eigh_atol(A, Be, w_ref))
    # a singular B (rank 29) gets the ridge 1e-10 * trace(B) / n, once
    u = np.random.default_rng(1).standard_normal((30, 29))
    Bs = u @ u.T
    w, V = leading_eigh(A, 3, Bs)
    Br = Bs + 1e-10 * np.trace(Bs) / 30 * np.eye(30)
    np.testing.assert_allclose(V.T @ Br @ V, np.eye(3), atol=1e-6)
    with pytest.raises(ValueError, match="not positive definite even with a ridge"):
        leading_eigh(A, 3, np.zeros((30, 30)))


def test_overwrite_reuses_the_inputs_and_gives_the_same_answer():
    A, B = _pencil(n=40)
    w, V = leading_eigh(A, 3, B)
    A2, B2 = A.copy(), B.copy()
    w2, V2 = leading_eigh(A2, 3, B2, overwrite=True)
    # the same LAPACK call on other memory: BLAS kernels may take another path on another
    # alignment, so round-off of the pencil, not bit identity (a B left unsymmetrised or
    # an A consumed before use changes w by far more)
    np.testing.assert_allclose(w2, w, rtol=0, atol=eigh_atol(A, B, w))
    np.testing.assert_allclose(np.abs(V2), np.abs(V), atol=1e-10)
    assert np.array_equal(B2, B2.T)                  # symmetrised in place (not factored)
    A3 = A.copy()
    leading_eigh(A3, 3, B)                           # without overwrite: inputs untouched
    assert np.array_equal(A3, A)


def test_arpack_failure_names_the_way_out_or_falls_back_to_dense(monkeypatch):
    def fail(*args, **kwargs):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", np.empty(0),
                                  np.empty((0, 0)))

    A, B = _pencil(n=60)
    w_ref = _reference(A, B, 3)[0]
    monkeypatch.setattr(_linalg, "eigsh", fail)
    w, _ = leading_eigh(A, 3, B, solver="arpack")            # a matrix: the exact dense answer
    # dense against dense (another driver): the pencil's round-off, ~1e-13 relative here,
    # while an ARPACK answer would carry its relative 1e-10
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=eigh_atol(A, B, w_ref))
    As = (A + A.T) / 2
    op = LinearOperator(As.shape, matvec=lambda x: As @ np.ravel(x), dtype=np.float64)
    with pytest.raises(ArpackFailure, match="^SCA: the iterative eigensolver .ARPACK. failed "
                       ".* eigen_solver='dense' or a smaller n_components"):
        leading_eigh(op, 3, solver="arpack", owner="SCA")
    assert issubclass(ArpackFailure, ValueError)


def test_arpack_is_deterministic():
    A, B = _pencil(n=90)
    w1, V1 = leading_eigh(A, 5, B, solver="arpack", random_state=3)
    w2, V2 = leading_eigh(A, 5, B, solver="arpack", random_state=3)
    assert np.array_equal(w1, w2) and np.array_equal(V1, V2)


def test_in_place_helpers():
    rng = np.random.default_rng(0)
    for D in (5, 300, 600):                           # below, at and across the 256-row block
        A = rng.standard_normal((D, D))
        ref = (A + A.T) / 2
        # bit identity is the maths here: (a + b) * 0.5 is one correctly rounded sum and an
        # exact halving in any block order, with no BLAS involved
        np.testing.assert_array_equal(sym_(A.copy()), ref)
        F = rng.standard_normal((3, D))
        alpha = np.array([1.0, -2.0, 0.5])
        np.testing.assert_allclose(add_gram_(ref.copy(), F, alpha), ref + F.T @ (alpha[:, None]
                                                                              * F), atol=1e-10)
    Z = np.ones((4, 4))
    assert add_gram_(Z, np.zeros((0, 4)), 1.0) is Z and np.all(Z == 1)


def test_arpack_runs_on_one_blas_thread_and_restores_the_callers():
    """ARPACK's iteration runs on one BLAS thread for n <= ARPACK_SINGLE_THREAD_MAX_N; the
    caller's thread count is restored afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    A, _ = _pencil(n=60)
    As = (A + A.T) / 2
    seen = []

    def matvec(x):
        seen.append(blas_threads())
        return As @ np.ravel(x)

    op = LinearOperator(As.shape, matvec=matvec, dtype=np.float64)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        w, _ = leading_eigh(op, 3, solver="arpack")
        after = blas_threads()
    assert before and all(t == 2 for t in before) and after == before
    assert seen and all(all(t == 1 for t in s) for s in seen)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(As)[::-1][:3], rtol=1e-10)


def test_take_rows_is_a_view_of_a_block_and_a_copy_of_scattered_rows():
    from shiftlearn._linalg import take_rows

    X = np.arange(20.0).reshape(10, 2)
    assert take_rows(X, np.ones(10, bool)) is X
    for mask in (np.arange(10) < 4, np.arange(10) >= 7, np.arange(10) == 5,
                 np.isin(np.arange(10), [1, 3]), np.zeros(10, bool)):
        got = take_rows(X, mask)
        np.testing.assert_array_equal(got, X[mask])
        idx = np.flatnonzero(mask)
        block = idx.size > 0 and idx[-1] - idx[0] + 1 == idx.size
        assert np.shares_memory(got, X) == block
