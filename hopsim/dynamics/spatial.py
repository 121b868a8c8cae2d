"""Rotations, quaternions, poses and 6-D spatial algebra (compiled).

Conventions
-----------
* Quaternions are scalar-last ``q = (x, y, z, w)`` (SciPy's order) with the Hamilton product.
  ``quat_to_dcm(q_BN)`` is the matrix that maps B components to N components,
  ``v_N = R(q_BN) v_B``; it equals ``scipy.spatial.transform.Rotation.from_quat(q).as_matrix()``.
* A pose of frame B relative to frame A is the pair ``(R_AB, p_BA_A)``: the rotation mapping B
  components to A components and the position of B's origin relative to A's origin, in A.
* Spatial vectors are angular first: motion ``[omega; v]`` with ``v`` the velocity of the point at
  the frame origin; force ``[moment about the frame origin; force]``.
* A spatial inertia is the 6x6 matrix mapping a motion vector to a momentum vector, both taken
  at the same frame origin and in the same frame.
"""

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics._jit import compiled, compiled_borrowing

# --------------------------------------------------------------------------- 3-vectors, 3x3


@compiled
def skew(v):
    """Cross-product matrix: ``skew(a) @ b == cross(a, b)``."""
    m = np.zeros((3, 3))
    m[0, 1] = -v[2]
    m[0, 2] = v[1]
    m[1, 0] = v[2]
    m[1, 2] = -v[0]
    m[2, 0] = -v[1]
    m[2, 1] = v[0]
    return m


@compiled
def cross3(a, b):
    """Cross product of two 3-vectors."""
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


def cross_xyz(a, b) -> tuple[float, float, float]:
    """Cross product of two 3-vectors (any sequences of floats) as a tuple, for Python callers with
    a few vectors (a numpy call costs microseconds): numpy's ``cross`` arithmetic, term for term, so
    the same floats, signed zeros included."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


def cross_array(a, b) -> np.ndarray:
    """``np.cross`` of two 3-vectors for Python callers, as an array: the same floats
    (:func:`cross_xyz`) for a tenth of the cost."""
    return np.array(cross_xyz(a, b))


@compiled
def mat3_vec(m, v):
    """``m @ v`` for a 3x3 matrix and a 3-vector."""
    out = np.empty(3)
    for i in range(3):
        out[i] = m[i, 0] * v[0] + m[i, 1] * v[1] + m[i, 2] * v[2]
    return out


@compiled
def mat3T_vec(m, v):
    """``m.T @ v`` for a 3x3 matrix and a 3-vector."""
    out = np.empty(3)
    for i in range(3):
        out[i] = m[0, i] * v[0] + m[1, i] * v[1] + m[2, i] * v[2]
    return out


@compiled
def mat3_mat3(a, b):
    """``a @ b`` for 3x3 matrices."""
    out = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]
    return out


@compiled
def mat3T_mat3(a, b):
    """``a.T @ b`` for 3x3 matrices."""
    out = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = a[0, i] * b[0, j] + a[1, i] * b[1, j] + a[2, i] * b[2, j]
    return out


@compiled
def inverse3(m):
    """Inverse of a non-singular 3x3 matrix by its adjugate."""
    inv = np.empty((3, 3))
    inverse3_into(inv, m)
    return inv


@compiled_borrowing
def inverse3_into(inv, m):
    """:func:`inverse3` of ``m`` written into ``inv`` (3 x 3): no allocation."""
    c00 = m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]
    c01 = m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2]
    c02 = m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]
    det = m[0, 0] * c00 + m[0, 1] * c01 + m[0, 2] * c02
    inv[0, 0] = c00 / det
    inv[1, 0] = c01 / det
    inv[2, 0] = c02 / det
    inv[0, 1] = (m[0, 2] * m[2, 1] - m[0, 1] * m[2, 2]) / det
    inv[1, 1] = (m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0]) / det
    inv[2, 1] = (m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1]) / det
    inv[0, 2] = (m[0, 1] * m[1, 2] - m[0, 2] * m[1, 1]) / det
    inv[1, 2] = (m[0, 2] * m[1, 0] - m[0, 0] * m[1, 2]) / det
    inv[2, 2] = (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]) / det


@compiled
def axis_angle_to_dcm(axis, angle):
    """Rotation matrix of a right-handed rotation by ``angle`` [rad] about unit ``axis``."""
    c = detmath.cos(angle)
    s = detmath.sin(angle)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    m = np.empty((3, 3))
    m[0, 0] = t * x * x + c
    m[0, 1] = t * x * y - s * z
    m[0, 2] = t * x * z + s * y
    m[1, 0] = t * x * y + s * z
    m[1, 1] = t * y * y + c
    m[1, 2] = t * y * z - s * x
    m[2, 0] = t * x * z - s * y
    m[2, 1] = t * y * z + s * x
    m[2, 2] = t * z * z + c
    return m


# --------------------------------------------------------------------------- quaternions


@compiled
def quat_multiply(p, q):
    """Hamilton product ``p (x) q`` of scalar-last quaternions; ``R(p (x) q) = R(p) R(q)``."""
    out = np.empty(4)
    out[0] = p[3] * q[0] + q[3] * p[0] + p[1] * q[2] - p[2] * q[1]
    out[1] = p[3] * q[1] + q[3] * p[1] + p[2] * q[0] - p[0] * q[2]
    out[2] = p[3] * q[2] + q[3] * p[2] + p[0] * q[1] - p[1] * q[0]
    out[3] = p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]
    return out


@compiled
def quat_conjugate(q):
    """Inverse rotation of a unit quaternion."""
    out = np.empty(4)
    out[0] = -q[0]
    out[1] = -q[1]
    out[2] = -q[2]
    out[3] = q[3]
    return out


@compiled_borrowing
def quat_normalize_into(q, out):
    """:func:`quat_normalize` of ``q`` into ``out`` (which may be ``q``)."""
    n = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if q[3] < 0.0:
        n = -n
    for k in range(4):
        out[k] = q[k] / n


@compiled
def quat_normalize(q):
    """Unit quaternion with ``w >= 0`` representing the same rotation as ``q``."""
    out = np.empty(4)
    quat_normalize_into(q, out)
    return out


@compiled
def quat_dcm_entries(x, y, z, w):
    """The nine entries (row by row) of the matrix of unit quaternion ``(x, y, z, w)`` = ``q_BN``,
    which maps B components to N components; for scalar code that must not allocate."""
    return (
        1.0 - 2.0 * (y * y + z * z),
        2.0 * (x * y - z * w),
        2.0 * (x * z + y * w),
        2.0 * (x * y + z * w),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z - x * w),
        2.0 * (x * z - y * w),
        2.0 * (y * z + x * w),
        1.0 - 2.0 * (x * x + y * y),
    )


@compiled
def quat_to_dcm(q):
    """Matrix of unit quaternion ``q_BN``: maps B components to N components."""
    m = np.empty((3, 3))
    (m[0, 0], m[0, 1], m[0, 2], m[1, 0], m[1, 1], m[1, 2], m[2, 0], m[2, 1], m[2, 2]) = quat_dcm_entries(
        q[0], q[1], q[2], q[3]
    )
    return m


@compiled
def dcm_to_quat(m):
    """Unit quaternion (``w >= 0``) of a rotation matrix (largest-pivot method)."""
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    q = np.empty(4)
    if tr >= m[0, 0] and tr >= m[1, 1] and tr >= m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + tr)
        q[3] = 0.25 * s
        q[0] = (m[2, 1] - m[1, 2]) / s
        q[1] = (m[0, 2] - m[2, 0]) / s
        q[2] = (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] >= m[1, 1] and m[0, 0] >= m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q[3] = (m[2, 1] - m[1, 2]) / s
        q[0] = 0.25 * s
        q[1] = (m[0, 1] + m[1, 0]) / s
        q[2] = (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] >= m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q[3] = (m[0, 2] - m[2, 0]) / s
        q[0] = (m[0, 1] + m[1, 0]) / s
        q[1] = 0.25 * s
        q[2] = (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q[3] = (m[1, 0] - m[0, 1]) / s
        q[0] = (m[0, 2] + m[2, 0]) / s
        q[1] = (m[1, 2] + m[2, 1]) / s
        q[2] = 0.25 * s
    return quat_normalize(q)


@compiled
def quat_rate(q, omega_B):
    """Time derivative of ``q_BN`` [1/s] for body rates ``omega_BN_B`` [rad/s]:
    ``qdot = 1/2 q (x) (omega_B, 0)``."""
    out = np.empty(4)
    x, y, z, w = q[0], q[1], q[2], q[3]
    ox, oy, oz = omega_B[0], omega_B[1], omega_B[2]
    out[0] = 0.5 * (w * ox + y * oz - z * oy)
    out[1] = 0.5 * (w * oy + z * ox - x * oz)
    out[2] = 0.5 * (w * oz + x * oy - y * ox)
    out[3] = -0.5 * (x * ox + y * oy + z * oz)
    return out


# --------------------------------------------------------------------------- spatial algebra


@compiled
def motion_cross(v, m):
    """Spatial cross product for motion vectors, ``v x m`` (angular first)."""
    out = np.empty(6)
    w = v[0:3]
    u = v[3:6]
    a = cross3(w, m[0:3])
    b = cross3(w, m[3:6])
    c = cross3(u, m[0:3])
    out[0:3] = a
    out[3:6] = b + c
    return out


@compiled
def force_cross(v, f):
    """Spatial cross product for force vectors, ``v x* f = -(v x)^T f`` (angular first)."""
    out = np.empty(6)
    w = v[0:3]
    u = v[3:6]
    a = cross3(w, f[0:3])
    b = cross3(u, f[3:6])
    c = cross3(w, f[3:6])
    out[0:3] = a + b
    out[3:6] = c
    return out


@compiled
def motion_to_child(R, p, m_A):
    """Motion vector in child frame B from its value in parent A; pose of B in A is (R, p)."""
    out = np.empty(6)
    w = m_A[0:3]
    v = m_A[3:6] - cross3(p, w)
    out[0:3] = mat3T_vec(R, w)
    out[3:6] = mat3T_vec(R, v)
    return out


@compiled
def motion_to_parent(R, p, m_B):
    """Motion vector in parent frame A from its value in child B; pose of B in A is (R, p)."""
    out = np.empty(6)
    w = mat3_vec(R, m_B[0:3])
    out[0:3] = w
    out[3:6] = mat3_vec(R, m_B[3:6]) + cross3(p, w)
    return out


@compiled
def force_to_parent(R, p, f_B):
    """Force vector in parent frame A from its value in child B; pose of B in A is (R, p)."""
    out = np.empty(6)
    f = mat3_vec(R, f_B[3:6])
    out[0:3] = mat3_vec(R, f_B[0:3]) + cross3(p, f)
    out[3:6] = f
    return out


@compiled
def force_to_child(R, p, f_A):
    """Force vector in child frame B from its value in parent A; pose of B in A is (R, p)."""
    out = np.empty(6)
    n = f_A[0:3] - cross3(p, f_A[3:6])
    out[0:3] = mat3T_vec(R, n)
    out[3:6] = mat3T_vec(R, f_A[3:6])
    return out


@compiled
def motion_transform_matrix(R, p):
    """6x6 matrix X mapping parent-frame motion vectors to child-frame ones (pose (R, p))."""
    X = np.zeros((6, 6))
    RT = R.T
    P = skew(p)
    RTP = mat3T_mat3(R, P)
    for i in range(3):
        for j in range(3):
            X[i, j] = RT[i, j]
            X[3 + i, 3 + j] = RT[i, j]
            X[3 + i, j] = -RTP[i, j]
    return X


@compiled
def congruence6(X, M):
    """``X.T @ M @ X`` for 6x6 matrices (moves a spatial inertia from child to parent frame
    when X is the child-from-parent motion transform)."""
    Y = np.zeros((6, 6))
    for i in range(6):
        for k in range(6):
            mik = M[i, k]
            if mik != 0.0:
                for j in range(6):
                    Y[i, j] += mik * X[k, j]
    out = np.zeros((6, 6))
    for k in range(6):
        for i in range(6):
            xki = X[k, i]
            if xki != 0.0:
                for j in range(6):
                    out[i, j] += xki * Y[k, j]
    return out


@compiled
def mat6_vec(M, v):
    """``M @ v`` for a 6x6 matrix."""
    out = np.zeros(6)
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += M[i, j] * v[j]
        out[i] = s
    return out


@compiled
def spatial_inertia(mass, r_CB_B, inertia_C_B):
    """Spatial inertia about the body origin B, in B, from the mass [kg], the centre of mass
    position ``r_CB_B`` [m] and the inertia tensor about the centre of mass ``inertia_C_B``
    [kg m^2]."""
    I6 = np.zeros((6, 6))
    C = skew(r_CB_B)
    CCt = mat3T_mat3(C, C)  # C^T C = -C C
    for i in range(3):
        for j in range(3):
            I6[i, j] = inertia_C_B[i, j] + mass * CCt[i, j]
            I6[i, 3 + j] = mass * C[i, j]
            I6[3 + i, j] = -mass * C[i, j]
        I6[3 + i, 3 + i] = mass
    return I6


@compiled
def compose_poses(R_AB, p_BA_A, R_BC, p_CB_B):
    """Pose of C in A from the pose of B in A and the pose of C in B."""
    return mat3_mat3(R_AB, R_BC), p_BA_A + mat3_vec(R_AB, p_CB_B)


@compiled
def invert_pose(R_AB, p_BA_A):
    """Pose of A in B from the pose of B in A."""
    return R_AB.T.copy(), -mat3T_vec(R_AB, p_BA_A)


# --------------------------------------------------------------------------- in-place variants
# Used in the inner loops of the recursive algorithms: they write into caller-owned buffers
# instead of allocating.


@compiled
def motion_to_child_into(out, R, p, m):
    """``out = X m``: motion vector ``m`` of parent A re-expressed in child B (pose (R, p))."""
    wx, wy, wz = m[0], m[1], m[2]
    vx = m[3] - (p[1] * wz - p[2] * wy)
    vy = m[4] - (p[2] * wx - p[0] * wz)
    vz = m[5] - (p[0] * wy - p[1] * wx)
    out[0] = R[0, 0] * wx + R[1, 0] * wy + R[2, 0] * wz
    out[1] = R[0, 1] * wx + R[1, 1] * wy + R[2, 1] * wz
    out[2] = R[0, 2] * wx + R[1, 2] * wy + R[2, 2] * wz
    out[3] = R[0, 0] * vx + R[1, 0] * vy + R[2, 0] * vz
    out[4] = R[0, 1] * vx + R[1, 1] * vy + R[2, 1] * vz
    out[5] = R[0, 2] * vx + R[1, 2] * vy + R[2, 2] * vz


@compiled
def motion_to_parent_into(out, R, p, m):
    """``out``: motion vector ``m`` of child B re-expressed in parent A (pose (R, p))."""
    wx = R[0, 0] * m[0] + R[0, 1] * m[1] + R[0, 2] * m[2]
    wy = R[1, 0] * m[0] + R[1, 1] * m[1] + R[1, 2] * m[2]
    wz = R[2, 0] * m[0] + R[2, 1] * m[1] + R[2, 2] * m[2]
    out[0] = wx
    out[1] = wy
    out[2] = wz
    out[3] = R[0, 0] * m[3] + R[0, 1] * m[4] + R[0, 2] * m[5] + (p[1] * wz - p[2] * wy)
    out[4] = R[1, 0] * m[3] + R[1, 1] * m[4] + R[1, 2] * m[5] + (p[2] * wx - p[0] * wz)
    out[5] = R[2, 0] * m[3] + R[2, 1] * m[4] + R[2, 2] * m[5] + (p[0] * wy - p[1] * wx)


@compiled
def force_to_parent_add(out, R, p, f):
    """``out += X^T f``: force ``f`` of child B re-expressed in parent A and accumulated."""
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] += R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2] + (p[1] * fz - p[2] * fy)
    out[1] += R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2] + (p[2] * fx - p[0] * fz)
    out[2] += R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2] + (p[0] * fy - p[1] * fx)
    out[3] += fx
    out[4] += fy
    out[5] += fz


@compiled
def motion_cross_into(out, v, m):
    """``out = v x m`` for motion vectors."""
    out[0] = v[1] * m[2] - v[2] * m[1]
    out[1] = v[2] * m[0] - v[0] * m[2]
    out[2] = v[0] * m[1] - v[1] * m[0]
    out[3] = (v[1] * m[5] - v[2] * m[4]) + (v[4] * m[2] - v[5] * m[1])
    out[4] = (v[2] * m[3] - v[0] * m[5]) + (v[5] * m[0] - v[3] * m[2])
    out[5] = (v[0] * m[4] - v[1] * m[3]) + (v[3] * m[1] - v[4] * m[0])


@compiled
def force_cross_into(out, v, f):
    """``out = v x* f`` for a motion vector ``v`` and a force vector ``f``."""
    out[0] = (v[1] * f[2] - v[2] * f[1]) + (v[4] * f[5] - v[5] * f[4])
    out[1] = (v[2] * f[0] - v[0] * f[2]) + (v[5] * f[3] - v[3] * f[5])
    out[2] = (v[0] * f[1] - v[1] * f[0]) + (v[3] * f[4] - v[4] * f[3])
    out[3] = v[1] * f[5] - v[2] * f[4]
    out[4] = v[2] * f[3] - v[0] * f[5]
    out[5] = v[0] * f[4] - v[1] * f[3]


@compiled
def mat6_vec_into(out, M, v):
    """``out = M v`` for a 6x6 matrix."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += M[i, j] * v[j]
        out[i] = s


@compiled
def inertia_to_parent_add(dst, R, p, M, X, Y):
    """``dst += X^T M X`` with X the child-from-parent motion transform of pose (R, p): moves a
    spatial inertia from child to parent frame and accumulates it. ``X``, ``Y`` are 6x6
    scratch buffers."""
    for i in range(6):
        for j in range(6):
            X[i, j] = 0.0
    for i in range(3):
        for j in range(3):
            X[i, j] = R[j, i]
            X[3 + i, 3 + j] = R[j, i]
    # lower-left block: -R^T skew(p)
    for i in range(3):
        X[3 + i, 0] = -(R[1, i] * p[2] - R[2, i] * p[1])
        X[3 + i, 1] = -(R[2, i] * p[0] - R[0, i] * p[2])
        X[3 + i, 2] = -(R[0, i] * p[1] - R[1, i] * p[0])
    # the sums skip the zero upper-right block of X (keeping their order: same results)
    for i in range(6):
        for j in range(3):
            s = 0.0
            for k in range(6):
                s += M[i, k] * X[k, j]
            Y[i, j] = s
        for j in range(3, 6):
            s = 0.0
            for k in range(3, 6):
                s += M[i, k] * X[k, j]
            Y[i, j] = s
    for j in range(6):
        for i in range(3):
            s = 0.0
            for k in range(6):
                s += X[k, i] * Y[k, j]
            dst[i, j] += s
        for i in range(3, 6):
            s = 0.0
            for k in range(3, 6):
                s += X[k, i] * Y[k, j]
            dst[i, j] += s
