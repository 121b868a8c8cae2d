"""Small attitude helpers for the SPHERES actors (numpy; :func:`dcm` by its compiled twin).

Quaternions are scalar-last ``(x, y, z, w)`` with ``w >= 0``; ``dcm(q_BN)`` maps body components
to inertial ones, ``v_N = dcm(q_BN) @ v_B``. Composition is Hamilton's product, so a body-frame
rotation ``dq`` applied after ``q_BN`` is ``quat_mul(q_BN, dq)`` and an inertial-frame rotation
is ``quat_mul(dq, q_BN)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.spatial import quat_to_dcm


def normalized(q) -> np.ndarray:
    """Unit quaternion with w >= 0."""
    q = np.asarray(q, dtype=float)
    q = q / math.sqrt(detlinalg.dot(q, q))
    return -q if q[3] < 0 else q


def _floats(v):
    """The components of a vector as Python floats (exactly the same values): arithmetic on
    them is the same IEEE arithmetic as on numpy scalars, only much cheaper."""
    return v.tolist() if isinstance(v, np.ndarray) else v


def dcm(q) -> np.ndarray:
    """Rotation matrix R(q) with v_N = R v_B::

        [[1 - 2 (y y + z z), 2 (x y - z w),     2 (x z + y w)],
         [2 (x y + z w),     1 - 2 (x x + z z), 2 (y z - x w)],
         [2 (x z - y w),     2 (y z + x w),     1 - 2 (x x + y y)]]

    computed by the compiled :func:`dcm_c` (the same expressions, so the same numbers)."""
    return dcm_c(np.asarray(q, dtype=float))


def quat_mul(a, b) -> np.ndarray:
    """Hamilton product a (x) b, scalar-last."""
    ax, ay, az, aw = _floats(a)
    bx, by, bz, bw = _floats(b)
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def quat_conj(q) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def from_rotvec(v) -> np.ndarray:
    """Quaternion of a rotation by |v| rad about v/|v|."""
    v = np.asarray(v, dtype=float)
    angle = math.sqrt(detlinalg.dot(v, v))
    if angle < 1e-12:
        return normalized(np.array([0.5 * v[0], 0.5 * v[1], 0.5 * v[2], 1.0]))
    s = detmath.sin(0.5 * angle) / angle
    return np.array([v[0] * s, v[1] * s, v[2] * s, detmath.cos(0.5 * angle)])


def to_rotvec(q) -> np.ndarray:
    """Rotation vector (rad) of a quaternion, the short way round."""
    q = normalized(q)
    s = math.sqrt(float(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]))
    if s < 1e-12:
        return 2.0 * q[:3]
    angle = 2.0 * detmath.atan2(s, float(q[3]))
    return q[:3] * (angle / s)


def from_yaw(psi_rad: float) -> np.ndarray:
    """Attitude yawed by psi about the inertial z axis."""
    half = 0.5 * float(psi_rad)
    return normalized(np.array([0.0, 0.0, detmath.sin(half), detmath.cos(half)]))


def yaw(q) -> float:
    """Heading of body x in the inertial x-y plane (rad)."""
    x, y, z, w = q
    return detmath.atan2(float(2 * (w * z + x * y)), float(1 - 2 * (y * y + z * z)))


# --------------------------------------------------------------------------- compiled kernels
# The same formulas, compiled, for the per-sample paths of the sensors and the estimator
# (float64 arrays in, new arrays out).
_JIT = dict(cache=True, fastmath=False, error_model="numpy")


dcm_c = quat_to_dcm  # compiled direction cosine matrix (shared with hopsim.dynamics)


@njit(**_JIT)
def quat_mul_c(a, b):
    return np.array(
        [
            a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
            a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
            a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
            a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
        ]
    )


@njit(**_JIT)
def from_rotvec_c(v):
    angle = np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if angle < 1e-12:
        q = np.array([0.5 * v[0], 0.5 * v[1], 0.5 * v[2], 1.0])
        return q / np.sqrt(detlinalg.dot(q, q))
    s = detmath.sin(0.5 * angle) / angle
    return np.array([v[0] * s, v[1] * s, v[2] * s, detmath.cos(0.5 * angle)])


@njit(**_JIT)
def normalized_c(q):
    q = q / np.sqrt(detlinalg.dot(q, q))
    if q[3] < 0:
        q = -q
    return q


@njit(**_JIT)
def rotate_body_c(q, omega_B, dt):
    """q (x) exp(omega_B dt): the attitude after turning at body rate omega for dt."""
    return normalized_c(quat_mul_c(q, from_rotvec_c(omega_B * dt)))
