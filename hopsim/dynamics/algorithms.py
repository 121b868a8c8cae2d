"""Recursive multibody algorithms over a :class:`~hopsim.dynamics.tree.TreeArrays` tree.

Each algorithm is one compiled function over the tree (``_aba``, ``_rnea``, ``_crba``, ...)
with a thin Python entry point of the same name without the underscore. The compiled
algorithms take the tree as its two packed buffers ``(tree_ints, tree_reals)`` (see
:class:`~hopsim.dynamics.tree.TreeArrays`; two arrays cost far less to pass from Python than a
named tuple of seventeen) and unpack the named views with
:func:`~hopsim.dynamics.tree.unpack_tree`; the helpers they share take the unpacked ``tree``.
The articulated-body algorithm, the hot path of simulation, indexes the packed buffers
directly (field offsets from :mod:`hopsim.dynamics.tree`).

Frames and units
----------------
* Body quantities are in the body frame, about the body origin: spatial velocities
  ``[omega; v]`` [rad/s; m/s], accelerations [rad/s^2; m/s^2], forces ``[moment; force]``
  [N m; N], spatial inertias [kg m^2, kg m; kg m, kg].
* ``f_ext`` (nb, 6): external spatial force on each body, body frame, about the body origin.
* Generalized coordinates ``Q`` (nq), velocities ``U`` (nv), accelerations ``Udot`` (nv) and
  forces ``tau`` (nv) follow :mod:`hopsim.dynamics.joints`.
* Uniform gravity ``tree.gravity`` enters as a fictitious acceleration of the world.
* World quantities (momentum, mass properties, Jacobians) are in N, about N's origin unless
  stated otherwise.

Prescribed joints (``tree.prescribed[i]``): their accelerations are inputs
(``udot_prescribed``) and their generalized forces outputs; the articulated-body recursion
carries them as known motions (hybrid dynamics).
"""

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics._jit import F64_VECTOR, I64_VECTOR, compiled, compiled_for
from hopsim.dynamics.joints import (
    JOINT_NQ,
    JOINT_NV,
    joint_configuration_rate,
    joint_motion,
    joint_normalize,
)
from hopsim.dynamics.spatial import (
    congruence6,
    force_cross,
    force_cross_into,
    force_to_parent,
    force_to_parent_add,
    mat3_mat3,
    mat3_vec,
    mat6_vec,
    motion_cross,
    motion_to_child,
    motion_to_child_into,
    motion_to_parent,
    motion_to_parent_into,
    motion_transform_matrix,
    skew,
)
from hopsim.dynamics.tree import (
    INT_JOINT_TYPE,
    INT_PARENT,
    INT_PRESCRIBED,
    INT_Q_START,
    INT_V_START,
    N_INT_HEADER,
    N_REAL_HEADER,
    N_REAL_PER_BODY,
    REAL_INERTIA,
    REAL_JOINT_AXIS,
    REAL_MASS,
    REAL_P_BJ,
    REAL_P_INB,
    REAL_R_BJ,
    REAL_R_INB,
    MultibodyTree,
    as_arrays,
    unpack_tree,
)

# --------------------------------------------------------------------------- small dense helpers


@compiled
def _cholesky_into(D, n, L):
    """Cholesky factor of the leading n x n block of a symmetric positive definite matrix
    ``D`` (lower triangle read) into the lower triangle of ``L``, with the reciprocals of the
    factor's diagonal stored on the diagonal (the solves then multiply instead of divide)."""
    for j in range(n):
        s = D[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        r = 1.0 / np.sqrt(s)
        L[j, j] = r
        for i in range(j + 1, n):
            s = D[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s * r


@compiled
def _cholesky_back_substitute(L, n, x):
    """``x = L^-T x`` in place for a factor from :func:`_cholesky_into`."""
    for j in range(n - 1, -1, -1):
        s = x[j]
        for k in range(j + 1, n):
            s -= L[k, j] * x[k]
        x[j] = s * L[j, j]


# --------------------------------------------------------------------------- kinematics


@compiled
def _kinematics(tree, Q, U):
    """Per body: pose in its parent (R_rel, p_rel), motion subspace S and velocity product c_J
    in the body frame, joint velocity v_J and body velocity v (body frame)."""
    nb = tree.parent.shape[0]
    R_rel = np.empty((nb, 3, 3))
    p_rel = np.empty((nb, 3))
    S = np.zeros((nb, 6, 6))
    cJ = np.zeros((nb, 6))
    vJ = np.zeros((nb, 6))
    v = np.zeros((nb, 6))
    _kinematics_into(
        tree,
        Q,
        U,
        R_rel,
        p_rel,
        S,
        cJ,
        vJ,
        v,
        np.empty((2, 3, 3)),
        np.empty((2, 3)),
        np.empty((2, 6)),
        np.empty((6, 6)),
    )
    return R_rel, p_rel, S, cJ, vJ, v


@compiled
def _kinematics_into(tree, Q, U, R_rel, p_rel, S, cJ, vJ, v, s33, s3, s6, s66):
    """:func:`_kinematics` into caller-owned arrays: ``R_rel`` (nb, 3, 3), ``p_rel`` (nb, 3),
    ``S`` (nb, 6, 6; only the first nv_i columns of ``S[i]`` are written), ``cJ``, ``vJ``,
    ``v`` (nb, 6). ``s33`` (2, 3, 3), ``s3`` (2, 3), ``s6`` (2, 6) and ``s66`` (6, 6) are
    scratch."""
    nb = tree.parent.shape[0]
    Sj = s66
    cj = s6[0]
    col = s6[1]
    R_OJ = s33[0]
    R_OB = s33[1]
    p_JO = s3[0]
    p_BO = s3[1]
    for i in range(nb):
        for r in range(6):
            vJ[i, r] = 0.0
        jtype = tree.joint_type[i]
        qs = tree.q_start[i]
        vs = tree.v_start[i]
        nvj = JOINT_NV[jtype]
        q = Q[qs : qs + JOINT_NQ[jtype]]
        u = U[vs : vs + nvj]
        joint_motion(jtype, tree.joint_axis[i], q, u, Sj, cj, R_OJ, p_JO)
        R_bj = tree.R_bj[i]
        p_bj = tree.p_bj[i]
        R_inb = tree.R_inb[i]
        # T_PB = T_PO * T_OJ * T_BJ^-1
        for r in range(3):
            for c in range(3):
                R_OB[r, c] = R_OJ[r, 0] * R_bj[c, 0] + R_OJ[r, 1] * R_bj[c, 1] + R_OJ[r, 2] * R_bj[c, 2]
        for r in range(3):
            p_BO[r] = p_JO[r] - (R_OB[r, 0] * p_bj[0] + R_OB[r, 1] * p_bj[1] + R_OB[r, 2] * p_bj[2])
        for r in range(3):
            for c in range(3):
                R_rel[i, r, c] = R_inb[r, 0] * R_OB[0, c] + R_inb[r, 1] * R_OB[1, c] + R_inb[r, 2] * R_OB[2, c]
            p_rel[i, r] = tree.p_inb[i, r] + (R_inb[r, 0] * p_BO[0] + R_inb[r, 1] * p_BO[1] + R_inb[r, 2] * p_BO[2])
        for k in range(nvj):
            motion_to_parent_into(col, R_bj, p_bj, Sj[:, k])
            for r in range(6):
                S[i, r, k] = col[r]
                vJ[i, r] += col[r] * u[k]
        motion_to_parent_into(cJ[i], R_bj, p_bj, cj)
        par = tree.parent[i]
        if par >= 0:
            motion_to_child_into(v[i], R_rel[i], p_rel[i], v[par])
            for r in range(6):
                v[i, r] += vJ[i, r]
        else:
            for r in range(6):
                v[i, r] = vJ[i, r]


@compiled
def _world_poses(tree, R_rel, p_rel):
    """Pose of every body in N: rotation (nb, 3, 3) and origin position (nb, 3)."""
    nb = tree.parent.shape[0]
    R_w = np.empty((nb, 3, 3))
    p_w = np.empty((nb, 3))
    for i in range(nb):
        par = tree.parent[i]
        if par >= 0:
            R_w[i] = mat3_mat3(R_w[par], R_rel[i])
            p_w[i] = p_w[par] + mat3_vec(R_w[par], p_rel[i])
        else:
            R_w[i] = R_rel[i]
            p_w[i] = p_rel[i]
    return R_w, p_w


@compiled
def _world_acceleration(tree):
    a0 = np.zeros(6)
    for k in range(3):
        a0[3 + k] = -tree.gravity[k]
    return a0


@compiled
def _forward_kinematics(tree_ints, tree_reals, Q, U):
    """World poses ``(R_NB, r_BN_N)`` of the bodies and their velocities in their body frames."""
    tree = unpack_tree(tree_ints, tree_reals)
    R_rel, p_rel, _S, _cJ, _vJ, v = _kinematics(tree, Q, U)
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    return R_w, p_w, v


# --------------------------------------------------------------------------- forward dynamics
# The articulated-body algorithm reads the tree straight from its packed buffers and keeps each
# body's state in one block ``W[i]`` of five 6x6 matrices (one allocation for the whole tree):
_W_IA = 0  # articulated inertia I^A, body frame; after the inward pass I^a = I^A - U D^-1 U^T
_W_S = 1  # motion subspace S, transposed: row k is column k of S (body frame)
_W_U = 2  # U = I^A S, transposed like S; after the inward pass W = L^-1 U^T
_W_L = 3  # Cholesky factor L of D = S^T I^A S (see _cholesky_into), leading nv_i block
_W_VEC = 4  # rows: _V, _C, _PA, _UP, _ACC
_V = 0  # body velocity [rad/s; m/s]
_C = 1  # velocity-product acceleration c = c_J + v x v_J
_PA = 2  # articulated bias force p^A [N m; N]
_UP = 3  # y = L^-1 (tau - S^T p^A) (first nv_i entries)
_ACC = 4  # body acceleration [rad/s^2; m/s^2]


@compiled
def _inertia_to_parent_add(dst, R, p, M, Z, Y):
    """``dst += X^T M X``: the spatial inertia ``M`` of child B (body frame, about its origin)
    moved to the parent frame about the parent's origin and accumulated, X being the
    child-from-parent motion transform of B's pose (``R`` = R_PB, ``p`` = p_BP_P [m]).

    With M = [[A, B], [B^T, C]] rotated blockwise (A1 = R A R^T, ...) the shift by p gives
    [[A1 - E - E^T - p~ F, B1 - F^T], [(B1 - F^T)^T, C1]], E = B1 p~, F = C1 p~,
    p~ = skew(p) (C symmetric): half the products of the general 6x6 congruence. ``Z`` and
    ``Y`` (6, 6) are scratch."""
    for br, bc in ((0, 0), (0, 3), (3, 3)):
        # Z's lower-left block holds R M_block, then Z's (br, bc) block R M_block R^T
        for r in range(3):
            for c in range(3):
                Z[3 + r, c] = R[r, 0] * M[br, bc + c] + R[r, 1] * M[br + 1, bc + c] + R[r, 2] * M[br + 2, bc + c]
        for r in range(3):
            for c in range(3):
                Z[br + r, bc + c] = Z[3 + r, 0] * R[c, 0] + Z[3 + r, 1] * R[c, 1] + Z[3 + r, 2] * R[c, 2]
    x, y, z = p[0], p[1], p[2]
    for r in range(3):
        # E = B1 p~ (upper-left of Y) and F = C1 p~ (lower-left of Y), row r
        Y[r, 0] = Z[r, 4] * z - Z[r, 5] * y
        Y[r, 1] = Z[r, 5] * x - Z[r, 3] * z
        Y[r, 2] = Z[r, 3] * y - Z[r, 4] * x
        Y[3 + r, 0] = Z[3 + r, 4] * z - Z[3 + r, 5] * y
        Y[3 + r, 1] = Z[3 + r, 5] * x - Z[3 + r, 3] * z
        Y[3 + r, 2] = Z[3 + r, 3] * y - Z[3 + r, 4] * x
    for c in range(3):
        # G = p~ F, column c
        Y[0, 3 + c] = y * Y[5, c] - z * Y[4, c]
        Y[1, 3 + c] = z * Y[3, c] - x * Y[5, c]
        Y[2, 3 + c] = x * Y[4, c] - y * Y[3, c]
    for r in range(3):
        for c in range(3):
            dst[r, c] += Z[r, c] - Y[r, c] - Y[c, r] - Y[r, 3 + c]
            h = Z[r, 3 + c] - Y[3 + c, r]
            dst[r, 3 + c] += h
            dst[3 + c, r] += h
            dst[3 + r, 3 + c] += Z[3 + r, 3 + c]


@compiled
def _aba_velocity_pass(ints, reals, Q, U, f_ext, W, pose, T):
    """Outward pass: each body's pose in its parent (``pose[i]``: rows 0-2 R_PB, row 3 p_BP_P
    [m]), motion subspace, velocity, velocity-product acceleration and bias force; the
    articulated inertias start as the body inertias. ``T`` (4+, 6, 6) is scratch."""
    nb = ints[0]
    oi = N_INT_HEADER
    o = N_REAL_HEADER
    axis = reals[o + REAL_JOINT_AXIS * nb : o + REAL_R_INB * nb]
    R_inb = reals[o + REAL_R_INB * nb : o + REAL_P_INB * nb]
    p_inb = reals[o + REAL_P_INB * nb : o + REAL_R_BJ * nb]
    R_bj = reals[o + REAL_R_BJ * nb : o + REAL_P_BJ * nb]
    p_bj = reals[o + REAL_P_BJ * nb : o + REAL_MASS * nb]
    inertia = reals[o + REAL_INERTIA * nb : o + N_REAL_PER_BODY * nb]
    SJ = T[0]
    R_OJ = T[1]
    R_OB = T[2]
    cj = T[3, 0]
    vJ = T[3, 1]
    p_JO = T[3, 2]
    p_BO = T[3, 3]
    Iv = T[3, 4]
    has_fext = f_ext.shape[0] > 0
    for i in range(nb):
        jtype = ints[oi + INT_JOINT_TYPE * nb + i]
        par = ints[oi + INT_PARENT * nb + i]
        qs = ints[oi + INT_Q_START * nb + i]
        vs = ints[oi + INT_V_START * nb + i]
        nvj = JOINT_NV[jtype]
        joint_motion(jtype, axis[3 * i : 3 * i + 3], Q[qs : qs + JOINT_NQ[jtype]], U[vs : vs + nvj], SJ, cj, R_OJ, p_JO)
        Rb = R_bj[9 * i : 9 * i + 9]
        pb = p_bj[3 * i : 3 * i + 3]
        Ri = R_inb[9 * i : 9 * i + 9]
        Pi = pose[i]
        # T_PB = T_PO * T_OJ * T_BJ^-1
        for r in range(3):
            for c in range(3):
                R_OB[r, c] = R_OJ[r, 0] * Rb[3 * c] + R_OJ[r, 1] * Rb[3 * c + 1] + R_OJ[r, 2] * Rb[3 * c + 2]
        for r in range(3):
            p_BO[r] = p_JO[r] - (R_OB[r, 0] * pb[0] + R_OB[r, 1] * pb[1] + R_OB[r, 2] * pb[2])
        for r in range(3):
            for c in range(3):
                Pi[r, c] = Ri[3 * r] * R_OB[0, c] + Ri[3 * r + 1] * R_OB[1, c] + Ri[3 * r + 2] * R_OB[2, c]
            Pi[3, r] = p_inb[3 * i + r] + (Ri[3 * r] * p_BO[0] + Ri[3 * r + 1] * p_BO[1] + Ri[3 * r + 2] * p_BO[2])
        # S and c_J from the joint frame J to the body frame
        for r in range(6):
            vJ[r] = 0.0
        for k in range(nvj):
            _motion_from_joint_frame(W[i, _W_S, k], Rb, pb, SJ[0, k], SJ[1, k], SJ[2, k], SJ[3, k], SJ[4, k], SJ[5, k])
            uk = U[vs + k]
            for r in range(6):
                vJ[r] += W[i, _W_S, k, r] * uk
        vec = W[i, _W_VEC]
        v = vec[_V]
        if par >= 0:
            motion_to_child_into(v, Pi, Pi[3], W[par, _W_VEC, _V])
            for r in range(6):
                v[r] += vJ[r]
        else:
            for r in range(6):
                v[r] = vJ[r]
        _motion_from_joint_frame(vec[_C], Rb, pb, cj[0], cj[1], cj[2], cj[3], cj[4], cj[5])
        c = vec[_C]
        c[0] += v[1] * vJ[2] - v[2] * vJ[1]
        c[1] += v[2] * vJ[0] - v[0] * vJ[2]
        c[2] += v[0] * vJ[1] - v[1] * vJ[0]
        c[3] += (v[1] * vJ[5] - v[2] * vJ[4]) + (v[4] * vJ[2] - v[5] * vJ[1])
        c[4] += (v[2] * vJ[3] - v[0] * vJ[5]) + (v[5] * vJ[0] - v[3] * vJ[2])
        c[5] += (v[0] * vJ[4] - v[1] * vJ[3]) + (v[3] * vJ[1] - v[4] * vJ[0])
        IA = W[i, _W_IA]
        oI = 36 * i
        for r in range(6):
            s = 0.0
            for col in range(6):
                m = inertia[oI + 6 * r + col]
                IA[r, col] = m
                s += m * v[col]
            Iv[r] = s
        force_cross_into(vec[_PA], v, Iv)
        if has_fext:
            for r in range(6):
                vec[_PA, r] -= f_ext[i, r]


@compiled
def _motion_from_joint_frame(out, R, p, wx, wy, wz, vx, vy, vz):
    """``out``: the motion vector ``[w; v]`` given in J re-expressed in the body frame, for the
    pose of J in the body (``R`` = R_BJ row-major, ``p`` = p_JB_B [m])."""
    ox = R[0] * wx + R[1] * wy + R[2] * wz
    oy = R[3] * wx + R[4] * wy + R[5] * wz
    oz = R[6] * wx + R[7] * wy + R[8] * wz
    out[0] = ox
    out[1] = oy
    out[2] = oz
    out[3] = R[0] * vx + R[1] * vy + R[2] * vz + (p[1] * oz - p[2] * oy)
    out[4] = R[3] * vx + R[4] * vy + R[5] * vz + (p[2] * ox - p[0] * oz)
    out[5] = R[6] * vx + R[7] * vy + R[8] * vz + (p[0] * oy - p[1] * ox)


@compiled
def _aba_joint(ints, nb, i, honor_prescribed):
    """Body ``i``'s joint as the ABA passes read it from the packed tree: (its number of
    velocity coordinates, the index of its first one, the parent body (-1: a root), whether its
    motion is prescribed and honoured)."""
    oi = N_INT_HEADER
    nvj = JOINT_NV[ints[oi + INT_JOINT_TYPE * nb + i]]
    vs = ints[oi + INT_V_START * nb + i]
    par = ints[oi + INT_PARENT * nb + i]
    given = honor_prescribed and ints[oi + INT_PRESCRIBED * nb + i] != 0
    return nvj, vs, par, given


@compiled
def _aba_inward_pass(ints, tau, udot_prescribed, honor_prescribed, W, pose, T):
    """Inward pass: articulated inertias and bias forces, from the leaves to the roots, and
    the factors of each free joint's D = S^T I^A S. ``T`` (6, 6, 6) is scratch."""
    nb = ints[0]
    D = T[0]
    X = T[2]
    Y = T[3]
    pa = T[5, 0]  # articulated bias force passed to the parent
    has_udot = udot_prescribed.shape[0] > 0
    for i in range(nb - 1, -1, -1):
        nvj, vs, par, given = _aba_joint(ints, nb, i, honor_prescribed)
        IA = W[i, _W_IA]
        S = W[i, _W_S]
        Ut = W[i, _W_U]
        L = W[i, _W_L]
        vec = W[i, _W_VEC]
        pA = vec[_PA]
        c = vec[_C]
        if nvj > 0 and not given:
            for k in range(nvj):
                for r in range(6):
                    s = 0.0
                    for m in range(6):
                        s += IA[r, m] * S[k, m]
                    Ut[k, r] = s
            for a in range(nvj):
                for b in range(a + 1):
                    s = 0.0
                    for r in range(6):
                        s += S[a, r] * Ut[b, r]
                    D[a, b] = s
            _cholesky_into(D, nvj, L)
            # with D = L L^T, keep W = L^-1 U^T (in place of U^T) and y = L^-1 u: then
            # U D^-1 U^T = W^T W, U D^-1 u = W^T y and udot = L^-T (y - W a')
            for j in range(nvj):
                for r in range(6):
                    s = Ut[j, r]
                    for k in range(j):
                        s -= L[j, k] * Ut[k, r]
                    Ut[j, r] = s * L[j, j]
                s = tau[vs + j]
                for r in range(6):
                    s -= S[j, r] * pA[r]
                for k in range(j):
                    s -= L[j, k] * vec[_UP, k]
                vec[_UP, j] = s * L[j, j]
            if par < 0:
                continue  # a root passes nothing on
            for r in range(6):
                for col in range(r + 1):
                    s = 0.0
                    for j in range(nvj):
                        s += Ut[j, r] * Ut[j, col]
                    IA[r, col] -= s
                    IA[col, r] = IA[r, col]
            for r in range(6):
                s = 0.0
                for j in range(nvj):
                    s += Ut[j, r] * vec[_UP, j]
                for col in range(6):
                    s += IA[r, col] * c[col]
                pa[r] = pA[r] + s
        else:
            if par < 0:
                continue
            for col in range(6):
                X[0, col] = c[col]
            for k in range(nvj):
                ud = udot_prescribed[vs + k] if has_udot else 0.0
                for col in range(6):
                    X[0, col] += S[k, col] * ud
            for r in range(6):
                s = 0.0
                for col in range(6):
                    s += IA[r, col] * X[0, col]
                pa[r] = pA[r] + s
        Pi = pose[i]
        _inertia_to_parent_add(W[par, _W_IA], Pi, Pi[3], IA, X, Y)
        force_to_parent_add(W[par, _W_VEC, _PA], Pi, Pi[3], pa)


@compiled
def _aba_outward_pass(ints, reals, udot_prescribed, honor_prescribed, with_bias, W, pose, udot, tau_out):
    """Outward pass: body and joint accelerations from the roots to the leaves; the forces of
    the prescribed joints into ``tau_out`` when it is not empty."""
    nb = ints[0]
    has_udot = udot_prescribed.shape[0] > 0
    want_tau = tau_out.shape[0] > 0
    a_world = np.zeros(6)
    if with_bias:
        for k in range(3):
            a_world[3 + k] = -reals[k]
    ap = np.empty(6)
    rhs = np.empty(6)
    for i in range(nb):
        nvj, vs, par, given = _aba_joint(ints, nb, i, honor_prescribed)
        S = W[i, _W_S]
        vec = W[i, _W_VEC]
        Pi = pose[i]
        if par >= 0:
            motion_to_child_into(ap, Pi, Pi[3], W[par, _W_VEC, _ACC])
        else:
            motion_to_child_into(ap, Pi, Pi[3], a_world)
        for r in range(6):
            ap[r] += vec[_C, r]
        if not given:
            Ut = W[i, _W_U]
            L = W[i, _W_L]
            for k in range(nvj):
                s = vec[_UP, k]
                for r in range(6):
                    s -= Ut[k, r] * ap[r]
                rhs[k] = s
            _cholesky_back_substitute(L, nvj, rhs)
            for k in range(nvj):
                udot[vs + k] = rhs[k]
        else:
            for k in range(nvj):
                udot[vs + k] = udot_prescribed[vs + k] if has_udot else 0.0
        for k in range(nvj):
            for r in range(6):
                ap[r] += S[k, r] * udot[vs + k]
        for r in range(6):
            vec[_ACC, r] = ap[r]
        if given and want_tau and nvj > 0:
            IA = W[i, _W_IA]
            for r in range(6):
                s = 0.0
                for col in range(6):
                    s += IA[r, col] * ap[col]
                rhs[r] = s + vec[_PA, r]
            for k in range(nvj):
                s = 0.0
                for r in range(6):
                    s += S[k, r] * rhs[r]
                tau_out[vs + k] = s


@compiled
def _aba_into(ints, reals, Q, U, tau, udot_prescribed, f_ext, with_bias, honor_prescribed, udot, tau_out):
    """Articulated-body algorithm into ``udot`` (nv) and, when it is not empty, ``tau_out``
    (nv; it must hold ``tau``): the given forces stay on free joints, prescribed joints get the
    forces they need. ``with_bias`` False drops gravity (``U`` must then be zero, for
    ``M^-1 tau``); ``honor_prescribed`` False treats every joint as free."""
    nb = ints[0]
    W = np.empty((nb, 5, 6, 6))
    pose = np.empty((nb, 4, 3))
    T = np.empty((6, 6, 6))
    _aba_velocity_pass(ints, reals, Q, U, f_ext, W, pose, T)
    _aba_inward_pass(ints, tau, udot_prescribed, honor_prescribed, W, pose, T)
    _aba_outward_pass(ints, reals, udot_prescribed, honor_prescribed, with_bias, W, pose, udot, tau_out)


@compiled
def _aba(tree_ints, tree_reals, Q, U, tau, udot_prescribed, f_ext):
    """Articulated-body algorithm with prescribed joints (hybrid dynamics).

    Returns ``(udot, tau_out)``: accelerations of all joints (the given ones for prescribed
    joints) and generalized forces (the given ones for free joints, the required ones for
    prescribed joints). An empty ``udot_prescribed`` stands for zeros, an empty ``f_ext`` for
    no external forces."""
    udot = np.empty(tree_ints[2])
    tau_out = tau.copy()
    _aba_into(tree_ints, tree_reals, Q, U, tau, udot_prescribed, f_ext, True, True, udot, tau_out)
    return udot, tau_out


@compiled_for((I64_VECTOR, F64_VECTOR, F64_VECTOR, F64_VECTOR, F64_VECTOR, F64_VECTOR))
def _aba_tau_only(tree_ints, tree_reals, Q, U, tau, udot):
    """:func:`_aba` into ``udot`` with no external forces and zero prescribed accelerations:
    the entry point of :func:`aba` in the common case (compiled for exactly these argument
    types, so that a call costs as little as possible; the caller allocates ``udot`` because
    NumPy does that faster than a compiled function can return an array)."""
    nv = tree_ints[2]
    if Q.shape[0] != tree_ints[1] or U.shape[0] != nv or tau.shape[0] != nv or udot.shape[0] != nv:
        raise ValueError("Q, U, tau or udot does not match the tree's nq and nv")
    _aba_into(tree_ints, tree_reals, Q, U, tau, Q[:0], np.empty((0, 6)), True, True, udot, Q[:0])


@compiled
def _aba_batch(tree_ints, tree_reals, Qs, Us, taus, udots_prescribed, f_exts):
    n = Qs.shape[0]
    nv = tree_ints[2]
    udots = np.empty((n, nv))
    tau_out = taus.copy()
    for k in range(n):
        _aba_into(
            tree_ints,
            tree_reals,
            Qs[k],
            Us[k],
            taus[k],
            udots_prescribed[k],
            f_exts[k],
            True,
            True,
            udots[k],
            tau_out[k],
        )
    return udots, tau_out


# --------------------------------------------------------------------------- inverse dynamics


@compiled
def _rnea(tree_ints, tree_reals, Q, U, Udot, f_ext):
    """Recursive Newton-Euler: generalized forces ``tau`` (nv) producing ``Udot``, and the
    spatial force ``f`` (nb, 6) each joint transmits from the parent to the body (body frame,
    about the body origin)."""
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, U)
    a = np.zeros((nb, 6))
    f = np.zeros((nb, 6))
    a_world = _world_acceleration(tree)
    for i in range(nb):
        nvj = JOINT_NV[tree.joint_type[i]]
        vs = tree.v_start[i]
        par = tree.parent[i]
        a_par = a[par] if par >= 0 else a_world
        ai = motion_to_child(R_rel[i], p_rel[i], a_par) + cJ[i] + motion_cross(v[i], vJ[i])
        for k in range(nvj):
            ai += S[i, :, k] * Udot[vs + k]
        a[i] = ai
        I = tree.inertia[i]
        f[i] = mat6_vec(I, ai) + force_cross(v[i], mat6_vec(I, v[i])) - f_ext[i]
    return _project_forces_to_joints(tree, R_rel, p_rel, S, f), f


@compiled
def _jacobian_transpose_times(tree_ints, tree_reals, Q, f_body):
    """Generalized forces ``sum_i J_i^T f_i`` of body spatial forces ``f_body`` (nb, 6), each
    in its body frame about the body origin."""
    tree = unpack_tree(tree_ints, tree_reals)
    R_rel, p_rel, S, _cJ, _vJ, _v = _kinematics(tree, Q, np.zeros(tree.nv[0]))
    return _project_forces_to_joints(tree, R_rel, p_rel, S, f_body.copy())


@compiled
def _project_forces_to_joints(tree, R_rel, p_rel, S, f):
    """The backward pass of Newton-Euler: from the leaves in, each body's spatial force ``f[i]``
    (body frame, about its origin) is projected on its joint's motion subspace (the generalized
    force) and added to its parent's. ``f`` is accumulated in place; returns the generalized forces."""
    nb = tree.parent.shape[0]
    tau = np.zeros(tree.nv[0])
    for i in range(nb - 1, -1, -1):
        nvj = JOINT_NV[tree.joint_type[i]]
        vs = tree.v_start[i]
        for k in range(nvj):
            s = 0.0
            for r in range(6):
                s += S[i, r, k] * f[i, r]
            tau[vs + k] = s
        par = tree.parent[i]
        if par >= 0:
            f[par] += force_to_parent(R_rel[i], p_rel[i], f[i])
    return tau


# --------------------------------------------------------------------------- mass matrix


@compiled
def _composite_body_inertias(tree_ints, tree_reals, Q):
    """Spatial inertia of each body's subtree at configuration ``Q``, in the body frame about
    the body origin."""
    tree = unpack_tree(tree_ints, tree_reals)
    R_rel, p_rel, _S, _cJ, _vJ, _v = _kinematics(tree, Q, np.zeros(tree.nv[0]))
    return _subtree_inertias(tree, R_rel, p_rel)


@compiled
def _subtree_inertias(tree, R_rel, p_rel):
    """Spatial inertia of each body's subtree, in the body frame about the body origin."""
    nb = tree.parent.shape[0]
    Ic = tree.inertia.copy()
    for i in range(nb - 1, -1, -1):
        par = tree.parent[i]
        if par >= 0:
            X = motion_transform_matrix(R_rel[i], p_rel[i])
            Ic[par] += congruence6(X, Ic[i])
    return Ic


@compiled
def _crba(tree_ints, tree_reals, Q):
    """Composite rigid body algorithm: the joint-space mass matrix M (nv x nv)."""
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    R_rel, p_rel, S, _cJ, _vJ, _v = _kinematics(tree, Q, np.zeros(nv))
    Ic = _subtree_inertias(tree, R_rel, p_rel)
    M = np.zeros((nv, nv))
    F = np.zeros((6, 6))
    for i in range(nb):
        nvi = JOINT_NV[tree.joint_type[i]]
        if nvi == 0:
            continue
        vi = tree.v_start[i]
        for k in range(nvi):
            F[:, k] = mat6_vec(Ic[i], S[i, :, k])
        for a in range(nvi):
            for b in range(a, nvi):
                s = 0.0
                for r in range(6):
                    s += S[i, r, a] * F[r, b]
                M[vi + a, vi + b] = s
                M[vi + b, vi + a] = s
        j = i
        while tree.parent[j] >= 0:
            for k in range(nvi):
                F[:, k] = force_to_parent(R_rel[j], p_rel[j], F[:, k].copy())
            j = tree.parent[j]
            nvj = JOINT_NV[tree.joint_type[j]]
            vj = tree.v_start[j]
            for a in range(nvi):
                for b in range(nvj):
                    s = 0.0
                    for r in range(6):
                        s += F[r, a] * S[j, r, b]
                    M[vi + a, vj + b] = s
                    M[vj + b, vi + a] = s
    return M


@compiled
def _minv(tree_ints, tree_reals, Q, vec):
    """``M(Q)^-1 vec`` by the articulated-body recursions (no velocity, no gravity, all joints
    treated as free)."""
    nv = tree_ints[2]
    udot = np.empty(nv)
    _aba_into(tree_ints, tree_reals, Q, np.zeros(nv), vec, vec[:0], np.empty((0, 6)), False, False, udot, vec[:0])
    return udot


# --------------------------------------------------------------------------- system properties


@compiled
def _spatial_momentum(tree_ints, tree_reals, Q, U):
    """Spatial momentum ``[angular; linear]`` of the tree, in N about N's origin."""
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    R_rel, p_rel, _S, _cJ, _vJ, v = _kinematics(tree, Q, U)
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    h = np.zeros(6)
    for i in range(nb):
        h += force_to_parent(R_w[i], p_w[i], mat6_vec(tree.inertia[i], v[i]))
    return h


@compiled
def _kinetic_energy(tree_ints, tree_reals, Q, U):
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    _R_rel, _p_rel, _S, _cJ, _vJ, v = _kinematics(tree, Q, U)
    T = 0.0
    for i in range(nb):
        Iv = mat6_vec(tree.inertia[i], v[i])
        for r in range(6):
            T += 0.5 * v[i, r] * Iv[r]
    return T


@compiled
def _system_inertia(tree_ints, tree_reals, Q):
    """Spatial inertia of the whole tree in N about N's origin."""
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    R_rel, p_rel, _S, _cJ, _vJ, _v = _kinematics(tree, Q, np.zeros(nv))
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    I0 = np.zeros((6, 6))
    for i in range(nb):
        I0 += congruence6(motion_transform_matrix(R_w[i], p_w[i]), tree.inertia[i])
    return I0


@compiled
def _frame_jacobian_world(tree_ints, tree_reals, Q, body):
    """6 x nv Jacobian of ``body``'s spatial velocity, in N at N's origin, and the world poses
    of the bodies."""
    tree = unpack_tree(tree_ints, tree_reals)
    nv = tree.nv[0]
    R_rel, p_rel, S, _cJ, _vJ, _v = _kinematics(tree, Q, np.zeros(nv))
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    J = np.zeros((6, nv))
    j = body
    while j >= 0:
        nvj = JOINT_NV[tree.joint_type[j]]
        vs = tree.v_start[j]
        for k in range(nvj):
            J[:, vs + k] = motion_to_parent(R_w[j], p_w[j], S[j, :, k])
        j = tree.parent[j]
    return J, R_w, p_w


# --------------------------------------------------------------------------- configuration


@compiled
def _configuration_rate(tree_ints, tree_reals, Q, U):
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    Qdot = np.zeros(Q.shape[0])
    for i in range(nb):
        jtype = tree.joint_type[i]
        qs = tree.q_start[i]
        vs = tree.v_start[i]
        nq = JOINT_NQ[jtype]
        joint_configuration_rate(jtype, Q[qs : qs + nq], U[vs : vs + JOINT_NV[jtype]], Qdot[qs : qs + nq])
    return Qdot


@compiled
def _normalize_configuration(tree_ints, tree_reals, Q):
    tree = unpack_tree(tree_ints, tree_reals)
    for i in range(tree.parent.shape[0]):
        jtype = tree.joint_type[i]
        qs = tree.q_start[i]
        joint_normalize(jtype, Q[qs : qs + JOINT_NQ[jtype]])


# =========================================================================== Python entry points
# They check shapes and convert inputs to C-contiguous float64 (no copy when an input already is
# one), then call the compiled algorithm with the tree's packed buffers.

_NO_UDOT = np.zeros(0)
"""Passed for ``udot_prescribed=None``: the compiled ABA reads an empty array as zeros."""
_NO_FEXT = np.zeros((0, 6))
"""Passed for ``f_ext=None``: the compiled ABA reads an empty array as no external forces."""


def _f64(x, shape=None):
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"expected shape {shape}, got {arr.shape}")
    return arr


def _sizes(a):
    """``(nb, nq, nv)`` of a tree's arrays, as Python ints."""
    nb, nq, nv = a.ints[0:3].tolist()
    return nb, nq, nv


def _fext(nb, f_ext):
    return np.zeros((nb, 6)) if f_ext is None else _f64(f_ext, (nb, 6))


def hybrid_dynamics(tree, Q, U, tau, udot_prescribed=None, f_ext=None):
    """Forward dynamics by the articulated-body algorithm with prescribed joints.

    ``Q`` (nq), ``U`` (nv) and ``tau`` (nv) as in :mod:`hopsim.dynamics.joints`;
    ``udot_prescribed`` (nv, default zeros) the accelerations of the prescribed joints (other
    entries unused); ``f_ext`` (nb, 6) external spatial forces, body frame, about the body
    origin ``[moment; force]`` [N m; N] (default none).

    Returns ``(Udot, tau_out)``: ``Udot`` (nv) [rad/s^2, m/s^2], equal to ``udot_prescribed``
    on prescribed joints; ``tau_out`` (nv), equal to ``tau`` on free joints and the
    generalized force each prescribed joint needs [N m, N]."""
    a = tree.arrays if isinstance(tree, MultibodyTree) else tree
    nb, nq, nv = a.ints[0:3].tolist()
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    U = np.ascontiguousarray(U, dtype=np.float64)
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    if Q.shape != (nq,) or U.shape != (nv,) or tau.shape != (nv,):
        raise ValueError(f"expected Q ({nq},), U ({nv},), tau ({nv},); got Q {Q.shape}, U {U.shape}, tau {tau.shape}")
    up = _NO_UDOT if udot_prescribed is None else _f64(udot_prescribed, (nv,))
    fx = _NO_FEXT if f_ext is None else _f64(f_ext, (nb, 6))
    return _aba(a.ints, a.reals, Q, U, tau, up, fx)


def aba(tree, Q, U, tau, f_ext=None, udot_prescribed=None, out=None):
    """Forward dynamics (articulated-body algorithm): ``Udot`` (nv) [rad/s^2, m/s^2] for
    generalized forces ``tau`` (nv) [N m, N] and external forces ``f_ext`` (nb, 6; body frame,
    about the body origin, ``[moment; force]``). Prescribed joints take ``udot_prescribed``;
    use :func:`hybrid_dynamics` to also get the forces they need. ``out`` (nv, float64,
    C-contiguous), if given, receives ``Udot`` and is returned."""
    # a built MultibodyTree holds its arrays in ``_arrays`` (the property costs a call)
    a = getattr(tree, "_arrays", None) or as_arrays(tree)
    if f_ext is None and udot_prescribed is None:
        try:  # the common case, when Q, U and tau are already float64 C-contiguous vectors
            udot = np.empty(len(U)) if out is None else out
            _aba_tau_only(a.ints, a.reals, Q, U, tau, udot)
            return udot
        except TypeError:
            pass
    udot = hybrid_dynamics(a, Q, U, tau, udot_prescribed, f_ext)[0]
    if out is None:
        return udot
    out[...] = udot
    return out


def aba_batch(tree, Qs, Us, taus, f_exts=None, udots_prescribed=None):
    """:func:`hybrid_dynamics` for many states of one tree in one compiled call; inputs are
    stacked along the first axis. Returns ``(Udots, taus_out)``."""
    a = as_arrays(tree)
    nb, nq, nv = _sizes(a)
    Qs = _f64(Qs)
    n = Qs.shape[0]
    Qs = _f64(Qs, (n, nq))
    Us = _f64(Us, (n, nv))
    taus = _f64(taus, (n, nv))
    up = np.zeros((n, 0)) if udots_prescribed is None else _f64(udots_prescribed, (n, nv))
    fx = np.zeros((n, 0, 6)) if f_exts is None else _f64(f_exts, (n, nb, 6))
    return _aba_batch(a.ints, a.reals, Qs, Us, taus, up, fx)


def rnea(tree, Q, U, Udot, f_ext=None):
    """Inverse dynamics (recursive Newton-Euler): generalized forces ``tau`` (nv) [N m, N]
    producing the accelerations ``Udot`` (nv) under external forces ``f_ext`` (nb, 6; body
    frame, about the body origin)."""
    a = as_arrays(tree)
    nb, nq, nv = _sizes(a)
    return _rnea(a.ints, a.reals, _f64(Q, (nq,)), _f64(U, (nv,)), _f64(Udot, (nv,)), _fext(nb, f_ext))[0]


def joint_reaction_forces(tree, Q, U, tau, f_ext=None, udot_prescribed=None):
    """Spatial force (nb, 6) each joint transmits from the parent onto the body, in the body
    frame about the body origin ``[moment; force]``: constraint forces in the locked
    directions plus the joint forces in the free ones, for the motion the forward dynamics
    gives."""
    a = as_arrays(tree)
    nb, nq, nv = _sizes(a)
    Q = _f64(Q, (nq,))
    U = _f64(U, (nv,))
    fx = _fext(nb, f_ext)
    udot, _ = hybrid_dynamics(a, Q, U, tau, udot_prescribed, fx)
    return _rnea(a.ints, a.reals, Q, U, udot, fx)[1]


def jacobian_transpose_times(tree, Q, f_body):
    """Generalized forces (nv) equivalent to body spatial forces ``f_body`` (nb, 6), each in
    its body frame about the body origin ``[moment; force]``: ``sum_i J_i^T f_i``."""
    a = as_arrays(tree)
    nb, nq, _ = _sizes(a)
    return _jacobian_transpose_times(a.ints, a.reals, _f64(Q, (nq,)), _f64(f_body, (nb, 6)))


def crba(tree, Q):
    """Joint-space mass matrix M (nv x nv), by the composite rigid body algorithm."""
    a = as_arrays(tree)
    return _crba(a.ints, a.reals, _f64(Q, (_sizes(a)[1],)))


def minv(tree, Q, vec):
    """``M(Q)^-1 vec`` in O(n) by the articulated-body recursions."""
    a = as_arrays(tree)
    _nb, nq, nv = _sizes(a)
    return _minv(a.ints, a.reals, _f64(Q, (nq,)), _f64(vec, (nv,)))


def composite_body_inertias(tree, Q):
    """Spatial inertia (nb, 6, 6) of each body together with its descendants, in the body
    frame about the body origin."""
    a = as_arrays(tree)
    return _composite_body_inertias(a.ints, a.reals, _f64(Q, (_sizes(a)[1],)))


def forward_kinematics(tree, Q, U=None):
    """World poses and body velocities: ``(R_NB (nb,3,3), r_BN_N (nb,3), v_B (nb,6))`` with
    ``v_B`` the body spatial velocity in the body frame."""
    a = as_arrays(tree)
    _nb, nq, nv = _sizes(a)
    Q = _f64(Q, (nq,))
    U = np.zeros(nv) if U is None else _f64(U, (nv,))
    return _forward_kinematics(a.ints, a.reals, Q, U)


def mass_properties(tree, Q):
    """System mass [kg], centre of mass ``r_CN_N`` [m] and inertia about the centre of mass in
    N [kg m^2]."""
    a = as_arrays(tree)
    I0 = _system_inertia(a.ints, a.reals, _f64(Q, (_sizes(a)[1],)))
    m = I0[3, 3]
    mC = I0[0:3, 3:6]  # m skew(c)
    c = np.array([mC[2, 1], mC[0, 2], mC[1, 0]]) / m
    Cs = skew(c)
    inertia_C = I0[0:3, 0:3] - m * detlinalg.matmul(Cs.T, Cs)
    return m, c, inertia_C


def spatial_momentum(tree, Q, U):
    """Spatial momentum ``[angular; linear]`` in N about N's origin [kg m^2/s; kg m/s]."""
    a = as_arrays(tree)
    _nb, nq, nv = _sizes(a)
    return _spatial_momentum(a.ints, a.reals, _f64(Q, (nq,)), _f64(U, (nv,)))


def center_of_mass(tree, Q, U=None):
    """Centre of mass position ``r_CN_N`` [m] and velocity ``v_CN_N`` [m/s]."""
    a = as_arrays(tree)
    m, c, _ = mass_properties(a, Q)
    if U is None:
        return c, np.zeros(3)
    h = spatial_momentum(a, Q, U)
    return c, h[3:6] / m


def kinetic_energy(tree, Q, U) -> float:
    """Kinetic energy [J]."""
    a = as_arrays(tree)
    _nb, nq, nv = _sizes(a)
    return float(_kinetic_energy(a.ints, a.reals, _f64(Q, (nq,)), _f64(U, (nv,))))


def frame_jacobian(tree, Q, body, frame="body"):
    """6 x nv Jacobian of a body frame's spatial velocity ``[omega; v]``.

    ``frame="body"``: in the body frame, ``v`` of the body origin; ``"world_aligned"``: N axes,
    ``v`` of the body origin; ``"world"``: N axes, ``v`` of the body point at N's origin."""
    a = as_arrays(tree)
    b = tree.body_index(body) if hasattr(tree, "body_index") else int(body)
    J, R_w, p_w = _frame_jacobian_world(a.ints, a.reals, _f64(Q, (_sizes(a)[1],)), b)
    if frame == "world":
        return J
    Jw = J.copy()
    Jw[3:6] = J[3:6] + np.cross(J[0:3].T, p_w[b]).T  # v_origin = v_0 + omega x r
    if frame == "world_aligned":
        return Jw
    if frame == "body":
        R = R_w[b]
        return np.vstack([detlinalg.matmul(R.T, Jw[0:3]), detlinalg.matmul(R.T, Jw[3:6])])
    raise ValueError(f"frame must be 'body', 'world_aligned' or 'world', got {frame!r}")


def station_jacobian(tree, Q, body, r_SB_B):
    """3 x nv Jacobian of the inertial velocity (in N) of the station ``r_SB_B`` [m] fixed in
    ``body``; also returns the station's position ``r_SN_N`` [m]."""
    a = as_arrays(tree)
    b = tree.body_index(body) if hasattr(tree, "body_index") else int(body)
    J, R_w, p_w = _frame_jacobian_world(a.ints, a.reals, _f64(Q, (_sizes(a)[1],)), b)
    r = p_w[b] + detlinalg.matmul(R_w[b], np.asarray(r_SB_B, dtype=np.float64))
    return J[3:6] + np.cross(J[0:3].T, r).T, r


def configuration_rate(tree, Q, U):
    """``Qdot`` (nq) from ``Q`` and ``U`` (quaternion kinematics for ball and free joints)."""
    a = as_arrays(tree)
    _nb, nq, nv = _sizes(a)
    return _configuration_rate(a.ints, a.reals, _f64(Q, (nq,)), _f64(U, (nv,)))


def normalize_configuration(tree, Q):
    """Copy of ``Q`` with every joint quaternion normalized (w >= 0); call between steps."""
    a = as_arrays(tree)
    Q = _f64(Q, (_sizes(a)[1],)).copy()
    _normalize_configuration(a.ints, a.reals, Q)
    return Q


def state_derivative(tree, x, tau=None, f_ext=None, udot_prescribed=None):
    """Derivative of the state ``x = [Q; U]`` for use with the integrators: ``[Qdot; Udot]``
    for generalized forces ``tau`` (default zeros), external forces ``f_ext`` and prescribed
    accelerations ``udot_prescribed`` as in :func:`hybrid_dynamics`."""
    a = as_arrays(tree)
    _nb, nq, nv = _sizes(a)
    x = _f64(x, (nq + nv,))
    Q = x[:nq]
    U = x[nq:]
    tau = np.zeros(nv) if tau is None else tau
    udot = hybrid_dynamics(a, Q, U, tau, udot_prescribed, f_ext)[0]
    return np.concatenate([_configuration_rate(a.ints, a.reals, Q, U), udot])


__all__ = [
    "aba",
    "aba_batch",
    "center_of_mass",
    "composite_body_inertias",
    "configuration_rate",
    "crba",
    "forward_kinematics",
    "frame_jacobian",
    "hybrid_dynamics",
    "jacobian_transpose_times",
    "joint_reaction_forces",
    "kinetic_energy",
    "mass_properties",
    "minv",
    "normalize_configuration",
    "rnea",
    "spatial_momentum",
    "state_derivative",
    "station_jacobian",
]
