"""Position and attitude of a vehicle from its ultrasound ranges (Gauss-Newton).

Unknowns: the geometric centre ``r_N`` and the attitude ``q_BN`` at a reference instant. The
receiver j of the reading from beacon k is modelled at ``r_N + dr_k + dR_k R(q_BN) s_j``, where
``(dr_k, dR_k)`` is the vehicle's own rigid motion from the reference instant to that reading
(known from the inertial propagation; identity when the readings are simultaneous). Each
iteration linearizes ``|p_k - p_j|`` in the position and a small inertial rotation ``dtheta``
(``q <- exp(dtheta) (x) q``) and solves the least-squares step.

The iterations are compiled with numba (cached on disk). Without a starting point the position
comes from linear trilateration of the beacon-to-centre distances (each beacon's mean reading
plus the face offset) and the attitude from the 24 axis-aligned rotations, keeping the start
that fits best.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
from numba import njit

from hopsim.actors.spheres.frames import normalized, normalized_c
from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.spatial import quat_to_dcm


@dataclass
class PoseFix:
    r_N: np.ndarray
    q_BN: np.ndarray
    rms_m: float  # RMS range residual (m)
    n_ranges: int
    iterations: int
    converged: bool


def _measurements(ranges, beacons_N, receivers_B):
    """Flatten the valid readings: (beacon index, receiver offset in B, measured range)."""
    ranges = np.asarray(ranges, dtype=float)
    n_b = ranges.shape[0]
    flat = ranges.reshape(n_b, -1)
    s_B = np.asarray(receivers_B, dtype=float).reshape(-1, 3)
    k_idx, j_idx = np.nonzero(flat >= 0.0)
    return k_idx, s_B[j_idx], flat[k_idx, j_idx]


def solve_pose(
    ranges, beacons_N, receivers_B, r0_N=None, q0_BN=None, motion=None, max_iterations: int = 12, tol: float = 1e-8
) -> PoseFix:
    """Least-squares pose from ``ranges[beacon][face][receiver]`` (m, negative = no reading).

    ``receivers_B`` is [face][receiver][3] (m, in B); ``motion`` an optional list, per beacon,
    of ``(dr_N, dR)`` from the reference instant to that beacon's readings.
    """
    beacons_N = np.asarray(beacons_N, dtype=float)
    k_idx, s_B, rho = _measurements(ranges, beacons_N, receivers_B)
    n = rho.size
    if n < 6:
        return PoseFix(np.full(3, np.nan), np.array([0, 0, 0, 1.0]), np.inf, n, 0, False)
    if motion is None:
        dr = np.zeros((n, 3))
        dR = None
    else:
        # per beacon, then per reading (the same values as a list comprehension over k_idx)
        dr = np.array([m[0] for m in motion], dtype=float)[k_idx]
        dR = np.array([m[1] for m in motion], dtype=float)[k_idx]
    p_b = beacons_N[k_idx]
    if r0_N is None:
        r0_N = trilaterate(ranges, beacons_N, receivers_B)
    if q0_BN is None:
        starts = [np.asarray(q, float) for q in cube_rotations()]
        fixes = [_gauss_newton(p_b, s_B, rho, dr, dR, np.array(r0_N, float), q, max_iterations, tol) for q in starts]
        return min(fixes, key=lambda f: f.rms_m)
    return _gauss_newton(p_b, s_B, rho, dr, dR, np.array(r0_N, float), np.asarray(q0_BN, float), max_iterations, tol)


def solve_pose_moving(
    ranges, beacons_N, receivers_B, r0_N, q0_BN, dr_N, dR, max_iterations: int = 12, tol: float = 1e-8
) -> PoseFix:
    """:func:`solve_pose` from a starting pose, with the motion as two arrays (per beacon: the
    displacement ``dr_N[k]`` in N, m, and the rotation ``dR[k]``) instead of a list of pairs.

    Fast path of ``solve_pose(ranges, beacons_N, receivers_B, r0_N, q0_BN, list(zip(dr_N, dR)))``:
    the readings are gathered and the pose iterated in one compiled call
    (:func:`_gather_and_solve`, the same data, the same :func:`_gauss_newton_compiled`);
    tests/spheres/test_sph_fast_paths.py checks both forms give the same fix bit for bit."""
    ranges = np.asarray(ranges, dtype=float)
    flat = np.ascontiguousarray(ranges.reshape(ranges.shape[0], -1))
    s_B = np.ascontiguousarray(np.asarray(receivers_B, dtype=float).reshape(-1, 3))
    r_out, q_out, rms, it, converged, n = _gather_and_solve(
        flat,
        s_B,
        np.ascontiguousarray(beacons_N, dtype=float),
        np.ascontiguousarray(dr_N, dtype=float),
        np.ascontiguousarray(dR, dtype=float),
        np.array(r0_N, dtype=float),
        np.array(q0_BN, dtype=float),
        int(max_iterations),
        float(tol),
    )
    if n < 6:
        return PoseFix(np.full(3, np.nan), np.array([0, 0, 0, 1.0]), np.inf, n, 0, False)
    return PoseFix(r_out, q_out, float(rms), n, int(it), bool(converged))


@njit(cache=True, fastmath=False, error_model="numpy")
def _gather_and_solve(flat, s_all, beacons_N, dr_b, dR_b, r0, q0, max_iterations, tol):
    """The valid readings of ``flat`` (beacon rows, ranges >= 0, in row-major order as
    ``np.nonzero`` finds them) with their beacon, receiver offset and motion, then
    :func:`_gauss_newton_compiled` from (r0, q0 normalized). Returns its results and the count
    of readings (fewer than 6: nothing solved)."""
    n_b, n_r = flat.shape
    n = 0
    for k in range(n_b):
        for j in range(n_r):
            if flat[k, j] >= 0.0:
                n += 1
    p_b = np.empty((n, 3))
    s_B = np.empty((n, 3))
    rho = np.empty(n)
    dr = np.empty((n, 3))
    dR = np.empty((n, 3, 3))
    m = 0
    for k in range(n_b):
        for j in range(n_r):
            if flat[k, j] >= 0.0:
                for i in range(3):
                    p_b[m, i] = beacons_N[k, i]
                    s_B[m, i] = s_all[j, i]
                    dr[m, i] = dr_b[k, i]
                    for c in range(3):
                        dR[m, i, c] = dR_b[k, i, c]
                rho[m] = flat[k, j]
                m += 1
    if n < 6:
        return r0, q0, np.inf, 0, False, n
    r, q, rms, it, converged = _gauss_newton_compiled(p_b, s_B, rho, dr, dR, r0, normalized_c(q0), max_iterations, tol)
    return r, q, rms, it, converged, n


def _gauss_newton(p_b, s_B, rho, dr, dR, r, q, max_iterations, tol) -> PoseFix:
    if dR is None:
        dR = np.broadcast_to(np.eye(3), (rho.size, 3, 3))
    r_out, q_out, rms, it, converged = _gauss_newton_compiled(
        np.ascontiguousarray(p_b),
        np.ascontiguousarray(s_B),
        np.ascontiguousarray(rho),
        np.ascontiguousarray(dr),
        np.ascontiguousarray(dR),
        np.array(r, dtype=float),
        normalized(q),
        int(max_iterations),
        float(tol),
    )
    return PoseFix(r_out, q_out, float(rms), rho.size, int(it), bool(converged))


@njit(cache=True, fastmath=False, error_model="numpy")
def _residuals(p_b, s_B, rho, dr, dR, r, q, J, res):
    """Fill the range residuals (measured - predicted) and, if J has rows, their Jacobian."""
    R = quat_to_dcm(q)
    n = rho.size
    # the products R @ s_B[k], dR[k] @ m and dR[k].T @ u, each by detlinalg.matmul
    u = np.empty(3)
    for k in range(n):
        m = detlinalg.matmul(R, s_B[k])
        moved = detlinalg.matmul(dR[k], m)
        d0 = p_b[k, 0] - (r[0] + dr[k, 0] + moved[0])
        d1 = p_b[k, 1] - (r[1] + dr[k, 1] + moved[1])
        d2 = p_b[k, 2] - (r[2] + dr[k, 2] + moved[2])
        pred = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        res[k] = rho[k] - pred
        if J.shape[0] == n:
            u[0] = d0 / pred
            u[1] = d1 / pred
            u[2] = d2 / pred
            a = detlinalg.matmul(dR[k].T, u)
            J[k, 0] = -u[0]
            J[k, 1] = -u[1]
            J[k, 2] = -u[2]
            J[k, 3] = a[1] * m[2] - a[2] * m[1]
            J[k, 4] = a[2] * m[0] - a[0] * m[2]
            J[k, 5] = a[0] * m[1] - a[1] * m[0]


@njit(cache=True, fastmath=False, error_model="numpy")
def _gauss_newton_compiled(p_b, s_B, rho, dr, dR, r, q, max_iterations, tol):
    n = rho.size
    J = np.empty((n, 6))
    res = np.empty(n)
    converged = False
    it = 0
    for it in range(1, max_iterations + 1):  # noqa: B007  (the count is returned after the loop)
        _residuals(p_b, s_B, rho, dr, dR, r, q, J, res)
        step = detlinalg.solve(detlinalg.matmul(J.T, J), detlinalg.matmul(J.T, res))
        r = r + step[:3]
        # q <- exp(dtheta) (x) q, dtheta in N
        th = step[3:]
        ang = np.sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2])
        if ang < 1e-12:
            e = np.array([0.5 * th[0], 0.5 * th[1], 0.5 * th[2], 1.0])
        else:
            sn = detmath.sin(0.5 * ang) / ang
            e = np.array([th[0] * sn, th[1] * sn, th[2] * sn, detmath.cos(0.5 * ang)])
        qn = np.array(
            [
                e[3] * q[0] + e[0] * q[3] + e[1] * q[2] - e[2] * q[1],
                e[3] * q[1] - e[0] * q[2] + e[1] * q[3] + e[2] * q[0],
                e[3] * q[2] + e[0] * q[1] - e[1] * q[0] + e[2] * q[3],
                e[3] * q[3] - e[0] * q[0] - e[1] * q[1] - e[2] * q[2],
            ]
        )
        qn = qn / np.sqrt(detlinalg.dot(qn, qn))
        if qn[3] < 0:
            qn = -qn
        q = qn
        if detlinalg.dot(step, step) < tol * tol:
            converged = True
            break
    _residuals(p_b, s_B, rho, dr, dR, r, q, np.empty((0, 6)), res)
    total = 0.0  # np.mean(res * res): the squares summed in order, over their count
    for k in range(n):
        total += res[k] * res[k]
    return r, q, np.sqrt(total / n), it, converged


def trilaterate(ranges, beacons_N, receivers_B) -> np.ndarray:
    """Rough centre position from each beacon's mean reading (linear least squares, m)."""
    ranges = np.asarray(ranges, dtype=float)
    s_B = np.asarray(receivers_B, float).reshape(-1, 3)
    face_offset = float(np.mean(np.sqrt(np.sum(s_B * s_B, axis=1))))
    rows, rhs, seen = [], [], []
    for k in range(ranges.shape[0]):
        vals = ranges[k][ranges[k] >= 0.0]
        if vals.size:
            seen.append((np.asarray(beacons_N[k], float), float(vals.mean()) + 0.7 * face_offset))
    if len(seen) < 4:
        return np.mean([b for b, _ in seen], axis=0) if seen else np.zeros(3)
    b0, d0 = seen[0]
    for b, d in seen[1:]:
        rows.append(2.0 * (b - b0))
        rhs.append(d0 * d0 - d * d + detlinalg.dot(b, b) - detlinalg.dot(b0, b0))
    return detlinalg.lstsq(np.array(rows), np.array(rhs))


def cube_rotations() -> list[np.ndarray]:
    """The 24 rotations that map the coordinate axes onto themselves, as quaternions (copies of
    those made once)."""
    return [q.copy() for q in _cube_rotations()]


@functools.lru_cache(maxsize=1)
def _cube_rotations() -> tuple[np.ndarray, ...]:
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            M = np.zeros((3, 3))
            for row, (col, sgn) in enumerate(zip(perm, signs)):
                M[row, col] = sgn
            if detlinalg.det(M) > 0:
                out.append(_quat_from_dcm(M))
    return tuple(out)


def _quat_from_dcm(M) -> np.ndarray:
    tr = np.trace(M)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [(M[2, 1] - M[1, 2]) / s, (M[0, 2] - M[2, 0]) / s, (M[1, 0] - M[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(M)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + M[i, i] - M[j, j] - M[k, k])
        q = [0.0] * 4
        q[i] = 0.25 * s
        q[j] = (M[j, i] + M[i, j]) / s
        q[k] = (M[k, i] + M[i, k]) / s
        q[3] = (M[k, j] - M[j, k]) / s
    return normalized(np.array(q))
