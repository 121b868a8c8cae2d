"""Joint types of articulated trees: coordinates, motion subspaces and configuration rates.

A joint connects the *inboard joint frame* O (fixed on the parent, placed by the parent's
``inb_to_joint`` pose) to the *outboard joint frame* J (fixed on the child, placed by the child's
``body_to_joint`` pose). At zero coordinates O and J coincide. For each type, ``Q`` are the
coordinates and ``U`` the generalized velocities:

=========  ====  ====  ==========================================================================
type       nq    nv    meaning
=========  ====  ====  ==========================================================================
locked     0     0     weld: J = O
pin        1     1     rotation ``Q`` [rad] about the unit ``axis`` (same in O and J); U = rate
slider     1     1     translation ``Q`` [m] along the unit ``axis``; U = rate
universal  2     2     rotation ``Q0`` about O's x, then ``Q1`` about the rotated y; U = Qdot
planar     3     3     translation ``(Q0, Q1)`` [m] in O's x-y plane, then rotation ``Q2`` about
                       z; U = Qdot
ball       4     3     ``Q`` = quaternion of J in O (scalar last); U = angular velocity of J
                       relative to O, in J [rad/s]
free       7     6     ``Q`` = quaternion of J in O, then position of J's origin in O [m];
                       U = angular velocity of J relative to O in J [rad/s], then the velocity
                       of J's origin relative to O, in J [m/s]
=========  ====  ====  ==========================================================================

The motion subspace ``S`` (6 x nv) maps U to the spatial velocity of J relative to O in J
(angular first); ``c_J = (dS/dt) U`` is its velocity-product term, both in J components.
"""

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics._jit import compiled
from hopsim.dynamics.spatial import mat3_vec, quat_normalize, quat_rate, quat_to_dcm

LOCKED, PIN, SLIDER, UNIVERSAL, PLANAR, BALL, FREE = range(7)

JOINT_TYPES = {
    "locked": LOCKED,
    "pin": PIN,
    "slider": SLIDER,
    "universal": UNIVERSAL,
    "planar": PLANAR,
    "ball": BALL,
    "free": FREE,
}
JOINT_NAMES = {code: name for name, code in JOINT_TYPES.items()}
JOINT_NQ = np.array([0, 1, 1, 2, 3, 4, 7], dtype=np.int64)
JOINT_NV = np.array([0, 1, 1, 2, 3, 3, 6], dtype=np.int64)


def joint_code(joint_type) -> int:
    """Type code from a name (``"pin"``) or a code."""
    if isinstance(joint_type, str):
        try:
            return JOINT_TYPES[joint_type.lower()]
        except KeyError:
            raise ValueError(f"unknown joint type {joint_type!r}; choose one of {sorted(JOINT_TYPES)}") from None
    code = int(joint_type)
    if code not in JOINT_NAMES:
        raise ValueError(f"unknown joint type code {joint_type}")
    return code


def zero_configuration(joint_type) -> np.ndarray:
    """Joint coordinates of the zero configuration (identity quaternions)."""
    code = joint_code(joint_type)
    q = np.zeros(JOINT_NQ[code])
    if code in (BALL, FREE):
        q[3] = 1.0
    return q


@compiled
def joint_motion(jtype, axis, q, u, S, c_J, R, p):
    """Fill the pose of J in O (``R`` = R_OJ, ``p`` = p_JO_O [m]) for joint coordinates ``q``,
    and ``S`` (6 x 6, first nv columns used) and ``c_J`` (6) in J components."""
    for i in range(6):
        c_J[i] = 0.0
        for j in range(6):
            S[i, j] = 0.0
    for i in range(3):
        p[i] = 0.0
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0
    if jtype == PIN:
        c = detmath.cos(q[0])
        s = detmath.sin(q[0])
        t = 1.0 - c
        x, y, z = axis[0], axis[1], axis[2]
        R[0, 0] = t * x * x + c
        R[0, 1] = t * x * y - s * z
        R[0, 2] = t * x * z + s * y
        R[1, 0] = t * x * y + s * z
        R[1, 1] = t * y * y + c
        R[1, 2] = t * y * z - s * x
        R[2, 0] = t * x * z - s * y
        R[2, 1] = t * y * z + s * x
        R[2, 2] = t * z * z + c
        S[0, 0] = x
        S[1, 0] = y
        S[2, 0] = z
    elif jtype == SLIDER:
        for k in range(3):
            p[k] = axis[k] * q[0]
            S[3 + k, 0] = axis[k]
    elif jtype == UNIVERSAL:
        c1 = detmath.cos(q[0])
        s1 = detmath.sin(q[0])
        c2 = detmath.cos(q[1])
        s2 = detmath.sin(q[1])
        # R = Rx(q0) Ry(q1)
        R[0, 0] = c2
        R[0, 1] = 0.0
        R[0, 2] = s2
        R[1, 0] = s1 * s2
        R[1, 1] = c1
        R[1, 2] = -s1 * c2
        R[2, 0] = -c1 * s2
        R[2, 1] = s1
        R[2, 2] = c1 * c2
        S[0, 0] = c2
        S[2, 0] = s2
        S[1, 1] = 1.0
        c_J[0] = -s2 * u[0] * u[1]
        c_J[2] = c2 * u[0] * u[1]
    elif jtype == PLANAR:
        c = detmath.cos(q[2])
        s = detmath.sin(q[2])
        R[0, 0] = c
        R[0, 1] = -s
        R[1, 0] = s
        R[1, 1] = c
        p[0] = q[0]
        p[1] = q[1]
        # linear velocity in J = Rz^T (xdot, ydot, 0)
        S[3, 0] = c
        S[4, 0] = -s
        S[3, 1] = s
        S[4, 1] = c
        S[2, 2] = 1.0
        c_J[3] = u[2] * (-s * u[0] + c * u[1])
        c_J[4] = u[2] * (-c * u[0] - s * u[1])
    elif jtype in (BALL, FREE):
        x, y, z, w = q[0], q[1], q[2], q[3]
        R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
        R[0, 1] = 2.0 * (x * y - z * w)
        R[0, 2] = 2.0 * (x * z + y * w)
        R[1, 0] = 2.0 * (x * y + z * w)
        R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
        R[1, 2] = 2.0 * (y * z - x * w)
        R[2, 0] = 2.0 * (x * z - y * w)
        R[2, 1] = 2.0 * (y * z + x * w)
        R[2, 2] = 1.0 - 2.0 * (x * x + y * y)
        if jtype == BALL:
            S[0, 0] = 1.0
            S[1, 1] = 1.0
            S[2, 2] = 1.0
        else:
            p[0] = q[4]
            p[1] = q[5]
            p[2] = q[6]
            for k in range(6):
                S[k, k] = 1.0


@compiled
def joint_configuration_rate(jtype, q, u, qdot):
    """Fill ``qdot`` (nq) from the joint coordinates ``q`` and velocities ``u``."""
    if jtype in (PIN, SLIDER):
        qdot[0] = u[0]
    elif jtype == UNIVERSAL:
        qdot[0] = u[0]
        qdot[1] = u[1]
    elif jtype == PLANAR:
        qdot[0] = u[0]
        qdot[1] = u[1]
        qdot[2] = u[2]
    elif jtype == BALL:
        qdot[0:4] = quat_rate(q[0:4], u[0:3])
    elif jtype == FREE:
        qdot[0:4] = quat_rate(q[0:4], u[0:3])
        qdot[4:7] = mat3_vec(quat_to_dcm(q[0:4]), u[3:6])


@compiled
def joint_normalize(jtype, q):
    """Normalize the quaternion of a ball or free joint in place (w >= 0)."""
    if jtype in (BALL, FREE):
        q[0:4] = quat_normalize(q[0:4])
