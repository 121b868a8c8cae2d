"""Contact and docking of spherical rigid vehicles, and the broad phase that finds candidate pairs.

Every function is compiled (``hopsim.dynamics._jit.compiled``) except the small vectorized
wall helpers; pass float64 NumPy arrays and Python floats (other dtypes compile extra
specializations). States are the 13-vectors of :mod:`hopsim.dynamics.rigid_body`::

    x = [r_BN_N (3) m, v_BN_N (3) m/s, q_BN (4, scalar-last), omega_BN_B (3) rad/s]

of the body origin B, the geometric centre of the sphere; the centre of mass C sits at
``r_CB_B`` [m] (body frame) and ``inertia_C_B`` [kg m^2] is about C in body axes.

Impact model (used for sphere-sphere and sphere-wall contacts)
--------------------------------------------------------------
A single instantaneous impulse ``J`` [N s] at one contact point P, equal and opposite on the
two bodies, so linear momentum and angular momentum about any fixed point are conserved
exactly (to rounding). With ``r_i`` from each centre of mass to P (inertial frame), the
relative velocity of the contact points ``u = v_P2 - v_P1`` changes by ``K J`` with the
effective compliance (inverse effective mass)::

    K = (1/m1 + 1/m2) 1 - [r1 x] I1_N^-1 [r1 x] - [r2 x] I2_N^-1 [r2 x]

(a wall is a body of infinite mass). The normal ``n`` points from body 1 to body 2.

* Normal: Newton's kinematic restitution at the contact point, ``u_n' = -e u_n``.
* Tangential: Brach's algebraic method (R. M. Brach, *Mechanical Impact Dynamics*, 1991;
  also Stronge, *Impact Mechanics*, ch. 5) with the sticking/sliding test. First try
  sticking: ``J = K^-1 (u' - u)`` with ``u' = -e u_n n`` (no slip after). If
  ``|J_t| <= mu J_n`` the contact sticks. Otherwise it slides: ``J = J_n (n - mu t)`` with
  ``t`` the unit initial slip direction and ``J_n`` set by the restitution condition. The slip
  direction is taken as constant through the impact (the algebraic approximation: no slip
  reversal or rotation during the impulse as Stronge's incremental method would track).
* Energy-consistency clamp (hopsim's safeguard): Newton's restitution combined with friction
  can create kinetic energy when the contact point's compliance couples normal and tangential
  directions (CM offset from the sphere centre, anisotropic inertia). If the impulse above
  would raise the kinetic energy, it is replaced by ``J0 + lambda (J - J0)``, ``J0`` the
  frictionless impulse, with the largest ``lambda`` in [0, 1] that does not. Every such blend
  still satisfies ``u_n' = -e u_n`` and lies inside the friction cone.
* Separating or resting contacts (``u_n >= 0``) get no impulse.

Spin matters: with the centre of mass off the sphere centre a normal impulse changes the spin,
and friction couples spin and translation. (The SPHERES simulator's model ignored both.)

Docking
-------
A weld makes body 1 the primary body of a composite rigid body (mass properties from
:func:`composite_mass_properties`); body 2 then follows at a fixed pose relative to body 1
(:func:`welded_follower_state`). An undock is the reverse: body 2 takes its follower state and
both bodies carry on with their own mass properties.

Broad phase
-----------
:func:`broadphase_pairs` finds the pairs of spheres whose "reach" spheres (radius plus a bound
on how far the sphere can move before the next check) overlap, with a uniform grid of cells
at least twice the largest reach, a hash table from cell to its spheres and a scan of the 27
neighbouring cells (each cell against itself and 13 of them, so that every pair is met once).
:func:`all_pairs_candidates` is the O(N^2) reference with the same test.
"""

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics._jit import compiled
from hopsim.dynamics.spatial import (
    cross3,
    inverse3,
    mat3_mat3,
    mat3_vec,
    mat3T_vec,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_to_dcm,
)

# --------------------------------------------------------------------------- small helpers


@compiled
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@compiled
def _norm3(a):
    return np.sqrt(_dot3(a, a))


@compiled
def _inertia_inverse_N(R, inertia_C_B):
    """Inverse inertia about the CM in inertial axes, ``R I^-1 R^T`` [1/(kg m^2)]."""
    return mat3_mat3(mat3_mat3(R, inverse3(inertia_C_B)), R.T.copy())


@compiled
def _point_compliance(R, inertia_C_B, r_CP_N):
    """Rotational part of a body's compliance at a point, ``-[r x] I_N^-1 [r x]`` [1/kg],
    with ``r_CP_N`` [m] from the centre of mass to the point, in N."""
    Iinv = _inertia_inverse_N(R, inertia_C_B)
    W = np.empty((3, 3))
    e = np.zeros(3)
    for k in range(3):
        e[:] = 0.0
        e[k] = 1.0
        # column k of -[r x] Iinv [r x] is -r x (Iinv (r x e_k))
        col = cross3(mat3_vec(Iinv, cross3(r_CP_N, e)), r_CP_N)
        for i in range(3):
            W[i, k] = col[i]
    # symmetric by construction; remove rounding asymmetry
    for i in range(3):
        for k in range(i + 1, 3):
            s = 0.5 * (W[i, k] + W[k, i])
            W[i, k] = s
            W[k, i] = s
    return W


@compiled
def _centre_of_mass_N(x, r_CB_B):
    """Rotation matrix ``R(q_BN)`` and the CM position ``r_CN_N`` [m] of a body state."""
    R = quat_to_dcm(x[6:10])
    return R, x[0:3] + mat3_vec(R, r_CB_B)


@compiled
def point_velocity(x, point_N):
    """Inertial velocity [m/s] of the body's material point at ``point_N`` [m, in N]:
    ``v_BN_N + omega x (point - r_BN_N)``."""
    R = quat_to_dcm(x[6:10])
    omega_N = mat3_vec(R, x[10:13])
    return x[3:6] + cross3(omega_N, point_N - x[0:3])


# --------------------------------------------------------------------------- impulse law


@compiled
def _energy_clamp(J0, J1, u, K):
    """``J0 + lam (J1 - J0)`` with the largest ``lam`` in [0, 1] whose energy change is not
    positive; ``J0`` is the (dissipative) frictionless impulse."""
    D = J1 - J0
    KJ0 = mat3_vec(K, J0)
    a = min(_dot3(J0, u) + 0.5 * _dot3(J0, KJ0), 0.0)
    b = _dot3(D, u) + _dot3(D, KJ0)
    c = 0.5 * _dot3(D, mat3_vec(K, D))
    if c <= 0.0 or a + b + c <= 0.0:
        return J1
    root = np.sqrt(b * b - 4.0 * a * c)
    lam = -2.0 * a / (b + root) if b > 0.0 else (root - b) / (2.0 * c)
    lam = min(max(lam, 0.0), 1.0)
    return J0 + lam * D


@compiled
def _friction_impulse(u, n, K, e, mu, J_free):
    """Brach's algebraic impulse with friction: sticking if inside the cone, else sliding."""
    un = _dot3(u, n)
    J_stick = mat3_vec(inverse3(K), -u - e * un * n)
    jn = _dot3(J_stick, n)
    jt = J_stick - jn * n
    jt_norm = _norm3(jt)
    if jt_norm <= mu * jn:
        return J_stick
    ut = u - un * n
    ut_norm = _norm3(ut)
    t = ut / ut_norm if ut_norm > 0.0 else -jt / jt_norm
    d = n - mu * t
    denom = _dot3(n, mat3_vec(K, d))
    if denom <= 0.0:
        return J_free
    return (-(1.0 + e) * un / denom) * d


@compiled
def contact_impulse_from_compliance(u, n, K, e, mu):
    """Impulse [N s, in N] on body 2 at a contact (body 1 receives its negative).

    ``u`` [m/s]: velocity of body 2's contact point relative to body 1's, in N; ``n``: unit
    normal from body 1 to body 2; ``K`` [1/kg]: effective compliance at the contact (module
    docstring); ``e``: coefficient of restitution in [0, 1]; ``mu``: Coulomb friction
    coefficient (0 for frictionless). Zero if the contact is not approaching (``u.n >= 0``).
    """
    un = _dot3(u, n)
    if un >= 0.0:
        return np.zeros(3)
    J_free = (-(1.0 + e) * un / _dot3(n, mat3_vec(K, n))) * n
    if mu <= 0.0:
        return J_free
    J = _friction_impulse(u, n, K, e, mu, J_free)
    return _energy_clamp(J_free, J, u, K)


# --------------------------------------------------------------------------- contact geometry


@compiled
def _centre_normal(x1, x2):
    """Unit vector from sphere 1's centre to sphere 2's and the centre distance [m];
    ``+z`` for coincident centres."""
    d_N = x2[0:3] - x1[0:3]
    dist = _norm3(d_N)
    if dist > 0.0:
        return d_N / dist, dist
    n = np.zeros(3)
    n[2] = 1.0
    return n, dist


@compiled
def sphere_gap(x1, x2, R1, R2):
    """Gap [m] between spheres of radii ``R1``, ``R2`` [m] centred on the body origins:
    ``|r_B2N_N - r_B1N_N| - (R1 + R2)``; negative when they overlap."""
    return _norm3(x2[0:3] - x1[0:3]) - (R1 + R2)


@compiled
def sphere_gap_rate(x1, x2):
    """Time derivative [m/s] of :func:`sphere_gap`: the relative velocity of the centres along
    the line of centres (not defined for coincident centres, where ``+z`` is used)."""
    n, _ = _centre_normal(x1, x2)
    return _dot3(x2[3:6] - x1[3:6], n)


@compiled
def wall_gap(x, R, plane_point_N, normal_N):
    """Gap [m] between a sphere of radius ``R`` [m] centred on the body origin and a plane
    through ``plane_point_N`` [m] with unit inward normal ``normal_N`` (pointing into the free
    side); negative when the sphere crosses the plane."""
    return _dot3(x[0:3] - plane_point_N, normal_N) - R


@compiled
def wall_gap_rate(x, normal_N):
    """Time derivative [m/s] of :func:`wall_gap`: the centre's velocity along the normal."""
    return _dot3(x[3:6], normal_N)


@compiled
def sphere_contact_point(x1, x2, R1, R2):
    """Contact point [m, in N] and unit normal (body 1 to body 2) of two spheres: the middle
    of the gap (or overlap) on the line of centres, i.e. ``r_B1 + n (R1 + gap/2)``."""
    n, dist = _centre_normal(x1, x2)
    return x1[0:3] + (R1 + 0.5 * (dist - R1 - R2)) * n, n


@compiled
def wall_contact_point(x, R, plane_point_N, normal_N):
    """Contact point [m, in N] of a sphere and a plane: the middle of the gap (or overlap)
    between the plane and the sphere's nearest surface point, ``r_B - n (R + gap/2)``."""
    gap = wall_gap(x, R, plane_point_N, normal_N)
    return x[0:3] - (R + 0.5 * gap) * normal_N


# --------------------------------------------------------------------------- impulses


@compiled
def _body_compliance(x, mass, inertia_C_B, r_CB_B, point_N):
    """Compliance [1/kg] of one body at a point: ``1/m + rotational part``."""
    R, r_CN_N = _centre_of_mass_N(x, r_CB_B)
    W = _point_compliance(R, inertia_C_B, point_N - r_CN_N)
    for i in range(3):
        W[i, i] += 1.0 / mass
    return W


@compiled
def sphere_contact_impulse(x1, m1, I1_C_B1, r_C1B1_B1, R1, x2, m2, I2_C_B2, r_C2B2_B2, R2, e, mu):
    """Impulse at the contact of two rigid spheres (see the module docstring for the law).

    Body i: state ``xi`` (13), mass ``mi`` [kg], inertia about its CM in its body frame
    ``Ii_C_Bi`` [kg m^2], CM offset from the sphere centre ``r_CiBi_Bi`` [m, body frame],
    radius ``Ri`` [m]. ``e`` restitution (normal, Newton's), ``mu`` Coulomb friction.

    Returns ``(J_N, point_N)``: the impulse [N s, in N] on body 2 (body 1 gets ``-J_N``) and
    the contact point [m, in N] (:func:`sphere_contact_point`). Apply with :func:`apply_impulse`.
    """
    p, n = sphere_contact_point(x1, x2, R1, R2)
    K = _body_compliance(x1, m1, I1_C_B1, r_C1B1_B1, p) + _body_compliance(x2, m2, I2_C_B2, r_C2B2_B2, p)
    u = point_velocity(x2, p) - point_velocity(x1, p)
    return contact_impulse_from_compliance(u, n, K, e, mu), p


@compiled
def wall_contact_impulse(x, mass, inertia_C_B, r_CB_B, R, plane_point_N, normal_N, e_w, mu_w):
    """Impulse on a sphere bouncing on a fixed plane wall (a body of infinite mass).

    Sphere: state ``x``, ``mass`` [kg], ``inertia_C_B`` [kg m^2], CM offset ``r_CB_B`` [m],
    radius ``R`` [m]. Wall: a point on it ``plane_point_N`` [m] and its unit inward normal
    ``normal_N`` (towards the sphere). ``e_w`` restitution, ``mu_w`` friction of the wall.

    Returns ``(J_N, point_N)``: the impulse [N s, in N] on the sphere and the contact point
    [m, in N] (:func:`wall_contact_point`).
    """
    p = wall_contact_point(x, R, plane_point_N, normal_N)
    K = _body_compliance(x, mass, inertia_C_B, r_CB_B, p)
    return contact_impulse_from_compliance(point_velocity(x, p), normal_N, K, e_w, mu_w), p


@compiled
def apply_impulse(x, mass, inertia_C_B, r_CB_B, J_N, point_N):
    """New 13-state after an impulse ``J_N`` [N s, in N] at ``point_N`` [m, in N].

    Position and attitude are unchanged; the CM velocity changes by ``J/m``, the body rates by
    ``I_C^-1 (r_CP x J)`` (body frame, ``r_CP`` from the CM to the point), and the origin's
    velocity follows as ``v_BN_N = v_CN_N - omega x r_CB``.
    """
    R, r_CN_N = _centre_of_mass_N(x, r_CB_B)
    c_N = mat3_vec(R, r_CB_B)
    omega_N = mat3_vec(R, x[10:13])
    v_C = x[3:6] + cross3(omega_N, c_N) + J_N / mass
    dL_B = mat3T_vec(R, cross3(point_N - r_CN_N, J_N))
    omega_B = x[10:13] + mat3_vec(inverse3(inertia_C_B), dL_B)
    out = x.copy()
    out[10:13] = omega_B
    out[3:6] = v_C - cross3(mat3_vec(R, omega_B), c_N)
    return out


# --------------------------------------------------------------------------- docking


@compiled
def _parallel_axis(mass, d):
    """Inertia [kg m^2] of a point mass at offset ``d`` [m]: ``m (|d|^2 1 - d d^T)``."""
    out = np.empty((3, 3))
    dd = _dot3(d, d)
    for i in range(3):
        for j in range(3):
            out[i, j] = -mass * d[i] * d[j]
        out[i, i] += mass * dd
    return out


@compiled
def composite_mass_properties(m1, I1_C_B1, r_C1B1_B1, m2, I2_C_B2, r_C2B2_B2, r_B2B1_B1, R_B1B2):
    """Mass properties of two bodies welded together, expressed in body 1's frame.

    ``r_B2B1_B1`` [m]: body 2's origin relative to body 1's, in B1; ``R_B1B2``: rotation mapping
    B2 components to B1 components (``quat_to_dcm(q_B2B1)``). Returns ``(M, I_C_B1, r_CB1_B1)``:
    total mass [kg], inertia about the composite CM in B1 axes [kg m^2] (each body's inertia
    rotated into B1 and moved by the parallel-axis theorem), composite CM relative to B1 [m].
    """
    M = m1 + m2
    r_C2B1_B1 = r_B2B1_B1 + mat3_vec(R_B1B2, r_C2B2_B2)
    r_CB1_B1 = (m1 * r_C1B1_B1 + m2 * r_C2B1_B1) / M
    I2_B1 = mat3_mat3(mat3_mat3(R_B1B2, I2_C_B2), R_B1B2.T.copy())
    I_C_B1 = I1_C_B1 + _parallel_axis(m1, r_C1B1_B1 - r_CB1_B1) + I2_B1 + _parallel_axis(m2, r_C2B1_B1 - r_CB1_B1)
    return M, 0.5 * (I_C_B1 + I_C_B1.T), r_CB1_B1


@compiled
def relative_pose(x1, x2):
    """Pose of body 2 relative to body 1: ``(r_B2B1_B1 [m], q_B2B1)`` with
    ``R(q_B2B1) = R(q_B1N)^T R(q_B2N)`` (maps B2 components to B1 components)."""
    R1 = quat_to_dcm(x1[6:10])
    return mat3T_vec(R1, x2[0:3] - x1[0:3]), quat_normalize(quat_multiply(quat_conjugate(x1[6:10]), x2[6:10]))


@compiled
def _momentum_about(x, mass, inertia_C_B, r_CB_B, point_N):
    """Linear momentum [kg m/s] and angular momentum about ``point_N`` [kg m^2/s], in N."""
    R, r_CN_N = _centre_of_mass_N(x, r_CB_B)
    omega_N = mat3_vec(R, x[10:13])
    p = mass * (x[3:6] + cross3(omega_N, mat3_vec(R, r_CB_B)))
    h = mat3_vec(R, mat3_vec(inertia_C_B, x[10:13])) + cross3(r_CN_N - point_N, p)
    return p, h


@compiled
def weld_state(x1, m1, I1_C_B1, r_C1B1_B1, x2, m2, I2_C_B2, r_C2B2_B2):
    """Perfectly inelastic weld of body 2 onto body 1 at their current poses.

    Returns ``(x, r_B2B1_B1, q_B2B1)``: the 13-state of body 1 as the primary body of the
    composite (use the mass properties of :func:`composite_mass_properties`), and the fixed pose
    of body 2 relative to body 1 for :func:`welded_follower_state`. The composite's velocity
    conserves the two bodies' total linear momentum and total angular momentum about the
    composite centre of mass (hence about any point), including each body's own spin.
    """
    r_B2B1_B1, q_B2B1 = relative_pose(x1, x2)
    M, I_C_B1, r_CB1_B1 = composite_mass_properties(
        m1, I1_C_B1, r_C1B1_B1, m2, I2_C_B2, r_C2B2_B2, r_B2B1_B1, quat_to_dcm(q_B2B1)
    )
    R1, r_CN_N = _centre_of_mass_N(x1, r_CB1_B1)
    p1, h1 = _momentum_about(x1, m1, I1_C_B1, r_C1B1_B1, r_CN_N)
    p2, h2 = _momentum_about(x2, m2, I2_C_B2, r_C2B2_B2, r_CN_N)
    omega_B = mat3_vec(inverse3(I_C_B1), mat3T_vec(R1, h1 + h2))
    out = x1.copy()
    out[10:13] = omega_B
    out[3:6] = (p1 + p2) / M - cross3(mat3_vec(R1, omega_B), mat3_vec(R1, r_CB1_B1))
    return out, r_B2B1_B1, q_B2B1


@compiled
def welded_follower_state(x_primary, r_B2B1_B1, q_B2B1):
    """13-state of body 2 rigidly attached to the primary body 1 at pose
    ``(r_B2B1_B1 [m], q_B2B1)``: its position, its velocity on body 1's rigid velocity field,
    attitude ``q_B2N = q_B1N (x) q_B2B1`` and body rates ``R(q_B2B1)^T omega_B1N_B1``."""
    R1 = quat_to_dcm(x_primary[6:10])
    arm_N = mat3_vec(R1, r_B2B1_B1)
    out = np.empty(13)
    out[0:3] = x_primary[0:3] + arm_N
    out[3:6] = x_primary[3:6] + cross3(mat3_vec(R1, x_primary[10:13]), arm_N)
    out[6:10] = quat_normalize(quat_multiply(x_primary[6:10], q_B2B1))
    out[10:13] = mat3T_vec(quat_to_dcm(q_B2B1), x_primary[10:13])
    return out


@compiled
def port_alignment(x1, x2, port1_B1, port2_B2, R1, R2):
    """Alignment of two docking ports; a port is the point ``R * unit(port_B)`` on a sphere of
    radius ``R`` [m] centred on the body origin, facing along ``port_B``.

    Returns ``(angle [rad], gap [m])``: the angle between port 1's direction and the reversed
    direction of port 2 (0 when the ports face each other) and the distance between the two
    port points.
    """
    a1 = mat3_vec(quat_to_dcm(x1[6:10]), port1_B1 / _norm3(port1_B1))
    a2 = mat3_vec(quat_to_dcm(x2[6:10]), port2_B2 / _norm3(port2_B2))
    angle = detmath.atan2(_norm3(cross3(a1, a2)), -_dot3(a1, a2))
    gap = _norm3((x1[0:3] + R1 * a1) - (x2[0:3] + R2 * a2))
    return angle, gap


# --------------------------------------------------------------------------- broad phase

_EMPTY_SLOT = -1  # cell keys are >= 0
_MAX_CELLS_PER_AXIS = 1 << 20  # keeps the linear cell key below 2**60
_MIN_CELL_EDGE_M = 1e-9  # 1 nm: the smallest cell edge
_CELL_MARGIN = 1.0 + 1e-6  # cell slightly larger than 2 * reach: rounding-safe neighbours
# The 13 neighbour offsets (dx, dy, dz) that are "after" (0, 0, 0) in (z, y, x) order: each
# pair of adjacent cells is visited once, from the cell it is after.
_HALF_NEIGHBOURS = np.array(
    [(dx, dy, dz) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dz, dy, dx) > (0, 0, 0)],
    dtype=np.int64,
)


@compiled
def _reach_overlap(centres, reach, i, j):
    """The one overlap test of both broad phases: ``|c_i - c_j| <= reach_i + reach_j``
    (symmetric in i and j, bit for bit)."""
    dx = centres[i, 0] - centres[j, 0]
    dy = centres[i, 1] - centres[j, 1]
    dz = centres[i, 2] - centres[j, 2]
    s = reach[i] + reach[j]
    return dx * dx + dy * dy + dz * dz <= s * s


@compiled
def _with_room(buf, count, extra):
    """``buf`` if it has room for ``extra`` more pairs after ``count``, else a larger copy."""
    if count + extra <= buf.shape[0]:
        return buf
    bigger = np.empty((max(2 * buf.shape[0], count + extra), 2), dtype=np.int64)
    bigger[:count] = buf[:count]
    return bigger


@compiled
def all_pairs_candidates(centres, reach):
    """Reference O(N^2) broad phase: pairs ``(i, j)``, ``i < j``, (K, 2) int64 sorted, of the
    spheres with centres ``centres`` (N, 3) [m] whose reach spheres (radii ``reach`` (N,) [m])
    overlap or touch."""
    n = centres.shape[0]
    buf = np.empty((max(n, 1), 2), dtype=np.int64)
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if _reach_overlap(centres, reach, i, j):
                if count == buf.shape[0]:
                    buf = _with_room(buf, count, 1)
                buf[count, 0] = i
                buf[count, 1] = j
                count += 1
    return buf[:count].copy()


@compiled
def _grid_cells(centres, reach):
    """Integer cell coordinates (N, 3) of each centre and the grid's cells per axis (3,).

    The cell edge is at least twice the largest reach (so overlapping reach spheres are in the
    same or adjacent cells) and 1 nm, enlarged if needed to keep at most 2**20 cells per axis.
    """
    n = centres.shape[0]
    lo = np.empty(3)
    hi = np.empty(3)
    for k in range(3):
        lo[k] = centres[:, k].min()
        hi[k] = centres[:, k].max()
    edge = 2.0 * reach.max() * _CELL_MARGIN
    for k in range(3):
        edge = max(edge, (hi[k] - lo[k]) / (_MAX_CELLS_PER_AXIS - 2))
    # below a nanometre, distances are rounding noise (their squares underflow to zero)
    edge = max(edge, _MIN_CELL_EDGE_M)
    cells = np.empty((n, 3), dtype=np.int64)
    for i in range(n):
        for k in range(3):
            cells[i, k] = np.int64(np.floor((centres[i, k] - lo[k]) / edge))
    dims = np.empty(3, dtype=np.int64)
    for k in range(3):
        dims[k] = cells[:, k].max() + 1
    return cells, dims


@compiled
def _cell_key(ix, iy, iz, dims):
    """Linear key of cell (ix, iy, iz), x fastest."""
    return ix + dims[0] * (iy + dims[1] * iz)


@compiled
def _cell_coords(key, dims):
    """Inverse of :func:`_cell_key`."""
    yz = key // dims[0]
    return key - yz * dims[0], yz % dims[1], yz // dims[1]


@compiled
def _is_prime(m):
    if m < 4:
        return m >= 2
    if m % 2 == 0 or m % 3 == 0:
        return False
    f = 5
    while f * f <= m:
        if m % f == 0 or m % (f + 2) == 0:
            return False
        f += 6
    return True


@compiled
def _table_find(table_keys, key):
    """Slot holding ``key``, or the empty slot where it would go: open addressing with linear
    probing from ``key mod size``. The table size is prime, so that the cell keys of a grid
    row (consecutive) land in consecutive slots and regular strides in the keys do not pile
    up in a few slots."""
    size = table_keys.shape[0]
    s = key % size
    while table_keys[s] != _EMPTY_SLOT and table_keys[s] != key:
        s += 1
        if s == size:
            s = 0
    return s


@compiled
def _bin_by_cell(cells, dims):
    """Group the spheres by cell with a hash table from cell key to cell number.

    Returns ``(table_keys, table_cells, cell_keys, start, members)``: cell c has key
    ``cell_keys[c]`` and spheres ``members[start[c]:start[c + 1]]``, in increasing order. Cells are numbered in the
    order
    of their table slots, which follows the cell keys where the grid is dense, so that
    neighbouring cells are near each other in memory.
    """
    n = cells.shape[0]
    size = 2 * n + 1
    while not _is_prime(size):
        size += 2
    table_keys = np.full(size, _EMPTY_SLOT, dtype=np.int64)
    slot_of = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = _cell_key(cells[i, 0], cells[i, 1], cells[i, 2], dims)
        s = _table_find(table_keys, key)
        table_keys[s] = key
        slot_of[i] = s
    table_cells = np.full(size, _EMPTY_SLOT, dtype=np.int64)
    cell_keys = np.empty(n, dtype=np.int64)
    n_cells = 0
    for s in range(size):
        if table_keys[s] != _EMPTY_SLOT:
            table_cells[s] = n_cells
            cell_keys[n_cells] = table_keys[s]
            n_cells += 1
    start = np.zeros(n_cells + 1, dtype=np.int64)
    for i in range(n):
        start[table_cells[slot_of[i]] + 1] += 1
    for c in range(n_cells):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = table_cells[slot_of[i]]
        members[fill[c]] = i
        fill[c] += 1
    return table_keys, table_cells, cell_keys[:n_cells], start, members


@compiled
def _sort_pairs(pairs, n):
    """Pairs ``(i, j)`` with ``i, j < n`` sorted by (i, j) in linear time: a counting sort on
    i, then an insertion sort of each i's (few) partners."""
    first = np.zeros(n + 1, dtype=np.int64)
    for k in range(pairs.shape[0]):
        first[pairs[k, 0] + 1] += 1
    for i in range(n):
        first[i + 1] += first[i]
    fill = first[:-1].copy()
    out = np.empty_like(pairs)
    for k in range(pairs.shape[0]):
        i = pairs[k, 0]
        out[fill[i], 0] = i
        out[fill[i], 1] = pairs[k, 1]
        fill[i] += 1
    for i in range(n):
        for a in range(first[i] + 1, first[i + 1]):
            j = out[a, 1]
            b = a
            while b > first[i] and out[b - 1, 1] > j:
                out[b, 1] = out[b - 1, 1]
                b -= 1
            out[b, 1] = j
    return out


@compiled
def _cell_pairs(pos, rch, members, start, c, other, buf, count):
    """Write the overlapping pairs between cell ``c`` and cell ``other`` (or within cell ``c``
    if they are the same) into ``buf`` from ``count`` on, which must have room for all of
    them; ``pos`` and ``rch`` are in cell order. Returns the new count."""
    for a in range(start[c], start[c + 1]):
        b0 = a + 1 if other == c else start[other]
        for b in range(b0, start[other + 1]):
            if _reach_overlap(pos, rch, a, b):
                i = members[a]
                j = members[b]
                buf[count, 0] = min(i, j)
                buf[count, 1] = max(i, j)
                count += 1
    return count


@compiled
def broadphase_pairs(centres, reach):
    """Candidate contact pairs by a uniform-grid spatial hash.

    ``centres`` (N, 3) [m]: sphere centres; ``reach`` (N,) [m]: radius plus a bound on the
    distance each sphere can travel before the next check. Returns the pairs ``(i, j)``,
    ``i < j``, whose reach spheres overlap or touch, as a (K, 2) int64 array sorted by (i, j):
    exactly :func:`all_pairs_candidates`'s result. Expected time linear in N for bounded
    density: hashing into cells, a scan of each cell against itself and its 13 "forward"
    neighbours (the other 13 of the 27 see the pair from the other side), a counting sort.
    """
    n = centres.shape[0]
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    cells, dims = _grid_cells(centres, reach)
    table_keys, table_cells, cell_keys, start, members = _bin_by_cell(cells, dims)
    pos = np.empty((n, 3))
    rch = np.empty(n)
    for a in range(n):  # cell-ordered copies: the inner loops read memory in sequence
        i = members[a]
        for k in range(3):
            pos[a, k] = centres[i, k]
        rch[a] = reach[i]
    buf = np.empty((4 * n, 2), dtype=np.int64)
    count = 0
    for c in range(start.shape[0] - 1):
        size = start[c + 1] - start[c]
        if count + size * (size - 1) // 2 > buf.shape[0]:
            buf = _with_room(buf, count, size * (size - 1) // 2)
        count = _cell_pairs(pos, rch, members, start, c, c, buf, count)
        cx, cy, cz = _cell_coords(cell_keys[c], dims)
        for k in range(_HALF_NEIGHBOURS.shape[0]):
            ix = cx + _HALF_NEIGHBOURS[k, 0]
            iy = cy + _HALF_NEIGHBOURS[k, 1]
            iz = cz + _HALF_NEIGHBOURS[k, 2]
            if ix < 0 or iy < 0 or iz < 0 or ix >= dims[0] or iy >= dims[1] or iz >= dims[2]:
                continue
            s = _table_find(table_keys, _cell_key(ix, iy, iz, dims))
            if table_keys[s] != _EMPTY_SLOT:
                other = table_cells[s]
                most = size * (start[other + 1] - start[other])
                if count + most > buf.shape[0]:
                    buf = _with_room(buf, count, most)
                count = _cell_pairs(pos, rch, members, start, c, other, buf, count)
    return _sort_pairs(buf[:count], n)


def box_walls(lo, hi):
    """The six walls of the axis-aligned box [lo, hi] [m] as (points (6, 3), inward unit
    normals (6, 3)), in the order -x, +x, -y, +y, -z, +z (wall ``2k`` is at ``lo[k]``, wall
    ``2k + 1`` at ``hi[k]``), ready for :func:`wall_contact_impulse`."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    points = np.empty((6, 3))
    normals = np.zeros((6, 3))
    for k in range(3):
        points[2 * k] = lo
        points[2 * k + 1] = hi
        normals[2 * k, k] = 1.0
        normals[2 * k + 1, k] = -1.0
    return points, normals


def box_wall_candidates(centres, reach, lo, hi):
    """Which spheres can reach which wall of the box [lo, hi] [m] (vectorized).

    ``centres`` (N, 3) [m], ``reach`` (N,) [m]. Returns an (N, 6) bool array in the wall order
    of :func:`box_walls`: sphere i can reach wall 2k if ``c_ik - reach_i <= lo_k`` and wall
    2k + 1 if ``c_ik + reach_i >= hi_k``.
    """
    centres = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    r = np.asarray(reach, dtype=np.float64).reshape(-1, 1)
    out = np.empty((centres.shape[0], 6), dtype=bool)
    out[:, 0::2] = centres - r <= np.asarray(lo, dtype=np.float64)
    out[:, 1::2] = centres + r >= np.asarray(hi, dtype=np.float64)
    return out
