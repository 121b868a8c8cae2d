"""Linear algebra that gives the same bits on every CPU.

numpy's ``@``, ``dot`` and ``linalg.norm``, and everything in ``numpy.linalg``, call BLAS and
LAPACK, whose kernels OpenBLAS chooses by CPU (and by ``OPENBLAS_CORETYPE``): they sum in other
orders and fuse multiplications into additions on some CPUs, so the last bits of a 3-vector's
norm differ from one machine to the next. numba's ``np.dot`` and ``np.linalg`` call the same
libraries. The functions here are explicit loops in one fixed order (each sum left to right),
compiled without fast-math, so they give the same bits on every CPU; on the small matrices of a
vehicle model they are also faster than a call into BLAS.

Every function is compiled with numba and can be called from Python or from compiled code.
Arguments are float64 arrays (anything else is converted by the Python entry points).

==================  ====================================================================
``matmul(a, b)``    ``a @ b`` for 1-D and 2-D operands (numpy's shapes and rules)
``dot(a, b)``       the inner product of two vectors
``norm(a)``         the Euclidean norm of a vector, ``sqrt(dot(a, a))``
``solve(A, b)``     ``A x = b`` by Gaussian elimination with partial pivoting
``inv(A)``          the inverse, by the same elimination
``det(A)``          the determinant, by the same elimination
``cholesky(A)``     the lower factor ``L`` with ``A = L L^T`` of a positive-definite matrix
``cholesky_semidefinite(A)``  the same for a positive semi-definite one (zero columns where no variance)
``eigvalsh(A)``     eigenvalues of a symmetric matrix, ascending (cyclic Jacobi)
``eigh_unsorted(A)``  its eigenvalues and eigenvectors, unsorted (the same rotations)
``lstsq(A, b)``     least squares by Householder QR (full column rank)
``pinv(A)``         the pseudo-inverse of a full-rank matrix, by the same QR
==================  ====================================================================
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from hopsim.dynamics._jit import COMPILE_OPTIONS, compiled


@compiled
def _dot11(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@compiled
def _dot21(a, b):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k] * b[k]
        out[i] = s
    return out


@compiled
def _dot12(a, b):
    out = np.empty(b.shape[1])
    for j in range(b.shape[1]):
        s = 0.0
        for k in range(a.shape[0]):
            s += a[k] * b[k, j]
        out[j] = s
    return out


@compiled
def _dot22(a, b):
    out = np.empty((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for k in range(a.shape[1]):
                s += a[i, k] * b[k, j]
            out[i, j] = s
    return out


def _matmul(a, b):
    """Typed dispatch of :func:`matmul` on the operands' dimensions (compiled code only)."""
    raise NotImplementedError


@overload(_matmul, jit_options=COMPILE_OPTIONS)
def _matmul_typed(a, b):
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
        return None
    kernels = {(1, 1): _dot11, (2, 1): _dot21, (1, 2): _dot12, (2, 2): _dot22}
    kernel = kernels.get((a.ndim, b.ndim))
    if kernel is None:
        return None

    def impl(a, b):
        if a.shape[a.ndim - 1] != b.shape[0]:
            raise ValueError("matmul: the operands' inner dimensions differ")
        return kernel(a, b)

    return impl


@njit(**COMPILE_OPTIONS)
def matmul(a, b):
    """``a @ b`` for float arrays of one or two dimensions, each sum taken left to right."""
    return _matmul(a, b)


@compiled
def dot(a, b):
    """Inner product of two vectors, summed left to right."""
    if a.shape[0] != b.shape[0]:
        raise ValueError("dot: the vectors' lengths differ")
    return _dot11(a, b)


@compiled
def norm(a):
    """Euclidean norm of a vector: ``sqrt(a[0]**2 + a[1]**2 + ...)`` summed left to right."""
    return math.sqrt(_dot11(a, a))


@compiled
def _lu(A):
    """LU factors of a square matrix by Gaussian elimination with partial pivoting: the packed
    factors, the row permutation and its sign. A zero pivot is left in place (singular)."""
    n = A.shape[0]
    lu = A.astype(np.float64).copy()
    perm = np.arange(n)
    sign = 1.0
    for k in range(n):
        p = k
        big = abs(lu[k, k])
        for i in range(k + 1, n):
            if abs(lu[i, k]) > big:
                big = abs(lu[i, k])
                p = i
        if p != k:
            for j in range(n):
                lu[k, j], lu[p, j] = lu[p, j], lu[k, j]
            perm[k], perm[p] = perm[p], perm[k]
            sign = -sign
        pivot = lu[k, k]
        if pivot == 0.0:
            continue
        for i in range(k + 1, n):
            f = lu[i, k] / pivot
            lu[i, k] = f
            for j in range(k + 1, n):
                lu[i, j] -= f * lu[k, j]
    return lu, perm, sign


@compiled
def _lu_solve(lu, perm, b):
    n = lu.shape[0]
    x = np.empty(n)
    for i in range(n):
        s = b[perm[i]]
        for j in range(i):
            s -= lu[i, j] * x[j]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= lu[i, j] * x[j]
        x[i] = s / lu[i, i]
    return x


@compiled
def _check_square(A):
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("the matrix is not square")


@compiled
def _nonsingular(lu):
    for i in range(lu.shape[0]):
        if lu[i, i] == 0.0:
            raise ValueError("the matrix is singular")


@compiled
def solve(A, b):
    """``x`` with ``A x = b`` (``b`` a vector or a matrix of right-hand sides)."""
    _check_square(A)
    if b.shape[0] != A.shape[0]:
        raise ValueError("solve: the right-hand side's rows differ from the matrix's")
    lu, perm, _ = _lu(A)
    _nonsingular(lu)
    if b.ndim == 1:
        return _lu_solve(lu, perm, b.astype(np.float64)).reshape(b.shape)
    n, m = b.shape
    out = np.empty((n, m))
    column = np.empty(n)
    for j in range(m):
        for i in range(n):
            column[i] = b[i, j]
        x = _lu_solve(lu, perm, column)
        for i in range(n):  # out[:, j] = x, whose shape check would compile a formatted message
            out[i, j] = x[i]
    return out


@compiled
def inv(A):
    """Inverse of a square non-singular matrix: :func:`solve` with the identity, a column at a
    time (the same eliminations, the same bits)."""
    _check_square(A)
    n = A.shape[0]
    lu, perm, _ = _lu(A)
    _nonsingular(lu)
    out = np.empty((n, n))
    unit = np.zeros(n)
    for j in range(n):
        unit[j] = 1.0
        x = _lu_solve(lu, perm, unit)
        unit[j] = 0.0
        for i in range(n):
            out[i, j] = x[i]
    return out


@compiled
def det(A):
    """Determinant of a square matrix (the product of the eliminated pivots)."""
    _check_square(A)
    lu, _, sign = _lu(A)
    d = sign
    for i in range(A.shape[0]):
        d *= lu[i, i]
    return d


@compiled
def _cholesky(A, semidefinite):
    """Cholesky's elimination; a pivot at or below 1e-14 of the largest diagonal entry leaves its
    column zero when ``semidefinite`` (a direction of no variance), and is refused otherwise."""
    _check_square(A)
    n = A.shape[0]
    L = np.zeros((n, n))
    big = 0.0
    for i in range(n):
        big = max(big, abs(A[i, i]))
    floor = 1e-14 * big if semidefinite else 0.0
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > floor:
            if semidefinite:
                continue
            raise ValueError("the matrix is not positive definite")
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return L


@compiled
def cholesky(A):
    """Lower-triangular ``L`` with ``A = L L^T`` (``A`` symmetric positive definite)."""
    return _cholesky(A, False)


@compiled
def cholesky_semidefinite(A):
    """Lower-triangular ``L`` with ``A = L L^T`` for a symmetric positive semi-definite ``A``:
    a column whose pivot is at or below 1e-14 of the largest diagonal entry is left zero."""
    return _cholesky(A, True)


@compiled
def eigh_unsorted(A):
    """Eigenvalues of a symmetric matrix and the orthonormal eigenvectors (``V[:, i]`` that of
    ``w[i]``), unsorted, by cyclic Jacobi rotations (sweeps until the off-diagonal part is below
    1e-15 of the matrix's norm, at most 64)."""
    _check_square(A)
    n = A.shape[0]
    a = 0.5 * (A + A.T)
    V = np.eye(n)
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale += a[i, j] * a[i, j]
    for _ in range(64):
        off = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                off += a[i, j] * a[i, j]
        if off <= 1e-30 * scale:
            break
        for p in range(n):
            for q in range(p + 1, n):
                if a[p, q] == 0.0:
                    continue
                theta = (a[q, q] - a[p, p]) / (2.0 * a[p, q])
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):
                    akp = a[k, p]
                    akq = a[k, q]
                    a[k, p] = c * akp - s * akq
                    a[k, q] = s * akp + c * akq
                for k in range(n):
                    apk = a[p, k]
                    aqk = a[q, k]
                    a[p, k] = c * apk - s * aqk
                    a[q, k] = s * apk + c * aqk
                for k in range(n):
                    vkp = V[k, p]
                    vkq = V[k, q]
                    V[k, p] = c * vkp - s * vkq
                    V[k, q] = s * vkp + c * vkq
    w = np.empty(n)
    for i in range(n):
        w[i] = a[i, i]
    return w, V


@compiled
def eigvalsh(A):
    """Eigenvalues of a symmetric matrix in ascending order (:func:`eigh_unsorted`)."""
    w, _ = eigh_unsorted(A)
    return np.sort(w)


@compiled
def _householder_qr(A):
    """Householder QR of an m x n matrix (m >= n): the reflected matrix (R above the diagonal)
    and the reflectors' vectors, one column each."""
    m, n = A.shape
    R = A.astype(np.float64).copy()
    V = np.zeros((m, n))
    for k in range(n):
        s = 0.0
        for i in range(k, m):
            s += R[i, k] * R[i, k]
        alpha = math.sqrt(s)
        if alpha == 0.0:
            raise ValueError("the matrix does not have full column rank")
        if R[k, k] > 0.0:
            alpha = -alpha
        vnorm2 = 0.0
        for i in range(k, m):
            V[i, k] = R[i, k]
        V[k, k] -= alpha
        for i in range(k, m):
            vnorm2 += V[i, k] * V[i, k]
        for j in range(k, n):
            d = 0.0
            for i in range(k, m):
                d += V[i, k] * R[i, j]
            f = 2.0 * d / vnorm2
            for i in range(k, m):
                R[i, j] -= f * V[i, k]
        for i in range(k, m):
            V[i, k] /= math.sqrt(vnorm2)
    return R, V


@compiled
def _qr_lstsq_vector(R, V, b):
    m, n = V.shape
    y = b.astype(np.float64).copy()
    for k in range(n):
        d = 0.0
        for i in range(k, m):
            d += V[i, k] * y[i]
        for i in range(k, m):
            y[i] -= 2.0 * d * V[i, k]
    x = np.empty(n)
    for i in range(n - 1, -1, -1):
        s = y[i]
        for j in range(i + 1, n):
            s -= R[i, j] * x[j]
        x[i] = s / R[i, i]
    return x


@compiled
def lstsq(A, b):
    """``x`` minimizing ``|A x - b|`` for an m x n matrix of full column rank (m >= n), by
    Householder QR; ``b`` a vector or a matrix of right-hand sides."""
    if A.shape[0] < A.shape[1]:
        raise ValueError("lstsq: fewer equations than unknowns")
    R, V = _householder_qr(A)
    if b.ndim == 1:
        return _qr_lstsq_vector(R, V, b)
    out = np.empty((A.shape[1], b.shape[1]))
    for j in range(b.shape[1]):
        out[:, j] = _qr_lstsq_vector(R, V, np.ascontiguousarray(b[:, j]))
    return out


@compiled
def pinv(A):
    """Pseudo-inverse of a full-rank matrix: ``(A^T A)^-1 A^T`` computed by QR when ``A`` has
    more rows than columns, the transpose of the pseudo-inverse of ``A^T`` otherwise."""
    m, n = A.shape
    if m >= n:
        return lstsq(A, np.eye(m))
    return lstsq(np.ascontiguousarray(A.T), np.eye(n)).T.copy()
