"""hopsim.dynamics.detlinalg against numpy's BLAS and LAPACK (to rounding: those are the
CPU-dependent results it replaces), exact small-integer cases, and the sums' fixed order."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hopsim.dynamics import detlinalg as la

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
RNG = np.random.default_rng(11)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.integers(1, 7), st.data())
def test_matmul_is_numpys_product_to_rounding_for_every_shape(m, k, n, data):
    A = data.draw(arrays(np.float64, (m, k), elements=finite))
    B = data.draw(arrays(np.float64, (k, n), elements=finite))
    v = data.draw(arrays(np.float64, (k,), elements=finite))
    w = data.draw(arrays(np.float64, (m,), elements=finite))
    bound = lambda a, b: 8 * k * np.finfo(float).eps * (np.abs(a) @ np.abs(b)) + 1e-300  # noqa: E731
    assert np.all(np.abs(la.matmul(A, B) - A @ B) <= bound(A, B))
    assert np.all(np.abs(la.matmul(A, v) - A @ v) <= bound(A, v))
    assert np.all(np.abs(la.matmul(w, A) - w @ A) <= bound(w, A))
    assert abs(la.matmul(v, v) - v @ v) <= bound(v, v)
    assert la.matmul(A.T, w).shape == (k,)  # a transposed view, as numpy's


def test_sums_are_taken_left_to_right():
    # 1 + 1e16 - 1e16 is 0 left to right; a pairwise or SIMD order gives another value
    a = np.array([1.0, 1e16, -1e16, 1.0])
    assert la.dot(a, np.ones(4)) == ((1.0 + 1e16) - 1e16) + 1.0 == 1.0
    assert la.norm(np.array([3.0, 4.0])) == 5.0 and la.norm(np.array([1e-200, 1e-200])) == 0.0


def test_integer_matrices_give_exact_results():
    A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    assert la.det(A) == 18.0
    assert np.array_equal(la.solve(A, A @ np.array([1.0, -2.0, 3.0])), [1.0, -2.0, 3.0])
    assert np.array_equal(la.cholesky(np.array([[4.0, 2.0], [2.0, 10.0]])), [[2.0, 0.0], [1.0, 3.0]])
    assert la.det(np.array([[0.0, 1.0], [1.0, 0.0]])) == -1.0  # a row swap's sign


@pytest.mark.parametrize("n", [1, 2, 3, 6, 13])
def test_factorizations_against_lapack(n):
    A = RNG.normal(size=(n, n)) + n * np.eye(n)
    S = A @ A.T + np.eye(n)
    b = RNG.normal(size=n)
    tol = 1e-12 * np.linalg.cond(A)
    assert np.allclose(la.solve(A, b), np.linalg.solve(A, b), rtol=tol, atol=tol)
    assert np.allclose(la.inv(A), np.linalg.inv(A), rtol=tol, atol=tol)
    assert math.isclose(la.det(A), np.linalg.det(A), rel_tol=1e-12)
    assert np.allclose(la.cholesky(S), np.linalg.cholesky(S), rtol=1e-12, atol=1e-12)
    assert np.allclose(la.eigvalsh(S), np.linalg.eigvalsh(S), rtol=1e-12, atol=1e-12 * np.abs(S).max())
    M = RNG.normal(size=(n + 4, n))
    y = RNG.normal(size=n + 4)
    assert np.allclose(la.lstsq(M, y), np.linalg.lstsq(M, y, rcond=None)[0], rtol=1e-10, atol=1e-12)
    assert np.allclose(la.pinv(M), np.linalg.pinv(M), rtol=1e-10, atol=1e-12)
    assert np.allclose(la.pinv(M.T.copy()), np.linalg.pinv(M.T), rtol=1e-10, atol=1e-12)


def test_semidefinite_factor_leaves_a_direction_of_no_variance_zero():
    C = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    L = la.cholesky_semidefinite(C)
    assert np.allclose(L @ L.T, C, atol=1e-15) and np.all(L[2] == 0.0)
    with pytest.raises(ValueError, match="not positive definite"):
        la.cholesky(C)


def test_bad_shapes_and_singular_matrices_are_refused_by_name():
    with pytest.raises(ValueError, match="inner dimensions"):
        la.matmul(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="singular"):
        la.solve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="not square"):
        la.inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="full column rank"):
        la.lstsq(np.zeros((3, 2)), np.ones(3))
