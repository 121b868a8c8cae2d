"""Recursive multibody algorithms over a :class:`~hopsim.dynamics.tree.TreeArrays` tree.

Each algorithm is one compiled function over the tree (``_aba``, ``_rnea``, ``_crba``, ...)
with a thin Python entry point of the same name without the underscore. The compiled
algorithms take the tree as its two packed buffers ``(tree_ints, tree_reals)`` (see
:class:`~hopsim.dynamics.tree.TreeArrays`; two arrays cost far less to pass from Python than a
named tuple of seventeen) and unpack the named views with
:func:`~hopsim.dynamics.tree.unpack_tree`; the helpers they share take the unpacked ``tree``.

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
    inertia_to_parent_add,
    mat3_mat3,
    mat3_vec,
    mat6_vec,
    mat6_vec_into,
    motion_cross,
    motion_cross_into,
    motion_to_child,
    motion_to_child_into,
    motion_to_parent,
    motion_to_parent_into,
    motion_transform_matrix,
    skew,
)
from hopsim.dynamics.tree import MultibodyTree, as_arrays, unpack_tree

# --------------------------------------------------------------------------- small dense helpers


@compiled
def _spd_inverse_into(D, n, inv, L):
    """Inverse of the leading n x n block of a symmetric positive definite matrix ``D`` into
    ``inv`` (Cholesky; ``L`` is scratch)."""
    for j in range(n):
        s = D[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = D[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    # inv = L^-T L^-1: forward then backward substitution of the unit vectors e_c, all columns
    # at once (row by row, so that the divisions of different columns overlap). L^-1 is lower
    # triangular: the forward pass skips its zeros.
    for i in range(n):
        for col in range(n):
            if col > i:
                inv[i, col] = 0.0
                continue
            s = 1.0 if i == col else 0.0
            for k in range(col, i):
                s -= L[i, k] * inv[k, col]
            inv[i, col] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        for col in range(n):
            s = inv[i, col]
            for k in range(i + 1, n):
                s -= L[k, i] * inv[k, col]
            inv[i, col] = s / L[i, i]


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
    _kinematics_into(tree, Q, U, R_rel, p_rel, S, cJ, vJ, v, np.empty((2, 3, 3)),
                     np.empty((2, 3)), np.empty((2, 6)), np.empty((6, 6)))
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
        q = Q[qs:qs + JOINT_NQ[jtype]]
        u = U[vs:vs + nvj]
        joint_motion(jtype, tree.joint_axis[i], q, u, Sj, cj, R_OJ, p_JO)
        R_bj = tree.R_bj[i]
        p_bj = tree.p_bj[i]
        R_inb = tree.R_inb[i]
        # T_PB = T_PO * T_OJ * T_BJ^-1
        for r in range(3):
            for c in range(3):
                R_OB[r, c] = R_OJ[r, 0] * R_bj[c, 0] + R_OJ[r, 1] * R_bj[c, 1] + \
                    R_OJ[r, 2] * R_bj[c, 2]
        for r in range(3):
            p_BO[r] = p_JO[r] - (R_OB[r, 0] * p_bj[0] + R_OB[r, 1] * p_bj[1]
                                 + R_OB[r, 2] * p_bj[2])
        for r in range(3):
            for c in range(3):
                R_rel[i, r, c] = R_inb[r, 0] * R_OB[0, c] + R_inb[r, 1] * R_OB[1, c] + \
                    R_inb[r, 2] * R_OB[2, c]
            p_rel[i, r] = tree.p_inb[i, r] + (R_inb[r, 0] * p_BO[0] + R_inb[r, 1] * p_BO[1]
                                              + R_inb[r, 2] * p_BO[2])
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


@compiled
def _aba(tree_ints, tree_reals, Q, U, tau, udot_prescribed, f_ext):
    """Articulated-body algorithm with prescribed joints (hybrid dynamics).

    Returns ``(udot, tau_out)``: accelerations of all joints (the given ones for prescribed
    joints) and generalized forces (the given ones for free joints, the required ones for
    prescribed joints). An empty ``udot_prescribed`` stands for zeros, an empty ``f_ext`` for
    no external forces."""
    tree = unpack_tree(tree_ints, tree_reals)
    return _aba_core(tree, Q, U, tau, udot_prescribed, f_ext, tree.prescribed,
                     _world_acceleration(tree))


@compiled
def _aba_core(tree, Q, U, tau, udot_prescribed, f_ext, prescribed, a_world):
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    has_fext = f_ext.shape[0] > 0
    has_udot = udot_prescribed.shape[0] > 0
    # four workspace blocks for everything but the outputs (allocations and reshapes dominate
    # small trees); per body, then scratch
    w33 = np.empty((nb + 2, 3, 3))
    w3 = np.empty((nb + 2, 3))
    w6 = np.empty((7 * nb + 9, 6))
    w66 = np.empty((4 * nb + 7, 6, 6))
    R_rel = w33[0:nb]
    p_rel = w3[0:nb]
    cJ = w6[0:nb]
    vJ = w6[nb:2 * nb]
    v = w6[2 * nb:3 * nb]
    pA = w6[3 * nb:4 * nb]  # articulated bias forces
    c = w6[4 * nb:5 * nb]  # velocity-product accelerations
    uprime = w6[5 * nb:6 * nb]  # tau - S^T p^A (first nv_i entries)
    acc = w6[6 * nb:7 * nb]  # body accelerations
    tmp, tmp2, pa, known, ap, f, rhs = w6[7 * nb], w6[7 * nb + 1], w6[7 * nb + 2], \
        w6[7 * nb + 3], w6[7 * nb + 4], w6[7 * nb + 5], w6[7 * nb + 6]
    S = w66[0:nb]
    IA = w66[nb:2 * nb]  # articulated inertias
    Ust = w66[2 * nb:3 * nb]  # I^A S (first nv_i columns)
    Dinv = w66[3 * nb:4 * nb]  # (S^T I^A S)^-1 (leading nv_i block)
    D, L, UD, Ia, X, Y = w66[4 * nb], w66[4 * nb + 1], w66[4 * nb + 2], w66[4 * nb + 3], \
        w66[4 * nb + 4], w66[4 * nb + 5]
    _kinematics_into(tree, Q, U, R_rel, p_rel, S, cJ, vJ, v, w33[nb:], w3[nb:],
                     w6[7 * nb + 7:], w66[4 * nb + 6])
    for i in range(nb):
        for r in range(6):
            for col in range(6):
                IA[i, r, col] = tree.inertia[i, r, col]
    for i in range(nb):
        motion_cross_into(tmp, v[i], vJ[i])
        mat6_vec_into(tmp2, tree.inertia[i], v[i])
        force_cross_into(pA[i], v[i], tmp2)
        for r in range(6):
            c[i, r] = cJ[i, r] + tmp[r]
        if has_fext:
            for r in range(6):
                pA[i, r] -= f_ext[i, r]
    for i in range(nb - 1, -1, -1):
        nvj = JOINT_NV[tree.joint_type[i]]
        vs = tree.v_start[i]
        I_i = IA[i]
        Ui = Ust[i]
        for r in range(6):
            for col in range(6):
                Ia[r, col] = I_i[r, col]
        par = tree.parent[i]
        if nvj > 0 and not prescribed[i]:
            # products with S skip its zero entries (most of them for free and ball joints);
            # the sums keep their order, so the results are the same
            for k in range(nvj):
                for r in range(6):
                    Ui[r, k] = 0.0
                for m in range(6):
                    smk = S[i, m, k]
                    if smk != 0.0:
                        for r in range(6):
                            Ui[r, k] += I_i[r, m] * smk
            for a in range(nvj):
                for b in range(nvj):
                    s = 0.0
                    for r in range(6):
                        if S[i, r, a] != 0.0:
                            s += S[i, r, a] * Ui[r, b]
                    D[a, b] = s
            _spd_inverse_into(D, nvj, Dinv[i], L)
            Di = Dinv[i]
            for a in range(nvj):
                s = tau[vs + a]
                for r in range(6):
                    s -= S[i, r, a] * pA[i, r]
                uprime[i, a] = s
            if par < 0:
                continue  # a root passes nothing on
            for r in range(6):
                for b in range(nvj):
                    s = 0.0
                    for a in range(nvj):
                        s += Ui[r, a] * Di[a, b]
                    UD[r, b] = s
            for r in range(6):
                for col in range(6):
                    s = 0.0
                    for a in range(nvj):
                        s += UD[r, a] * Ui[col, a]
                    Ia[r, col] -= s
            for r in range(6):
                known[r] = c[i, r]
            mat6_vec_into(pa, Ia, known)
            for r in range(6):
                s = 0.0
                for a in range(nvj):
                    s += UD[r, a] * uprime[i, a]
                pa[r] += pA[i, r] + s
        else:
            for r in range(6):
                known[r] = c[i, r]
            for k in range(nvj):
                ud = udot_prescribed[vs + k] if has_udot else 0.0
                for r in range(6):
                    known[r] += S[i, r, k] * ud
            mat6_vec_into(pa, Ia, known)
            for r in range(6):
                pa[r] += pA[i, r]
        if par >= 0:
            inertia_to_parent_add(IA[par], R_rel[i], p_rel[i], Ia, X, Y)
            force_to_parent_add(pA[par], R_rel[i], p_rel[i], pa)
    udot = np.zeros(nv)
    tau_out = tau.copy()
    for i in range(nb):
        nvj = JOINT_NV[tree.joint_type[i]]
        vs = tree.v_start[i]
        par = tree.parent[i]
        if par >= 0:
            motion_to_child_into(ap, R_rel[i], p_rel[i], acc[par])
        else:
            motion_to_child_into(ap, R_rel[i], p_rel[i], a_world)
        for r in range(6):
            ap[r] += c[i, r]
        if nvj > 0 and not prescribed[i]:
            for k in range(nvj):
                s = uprime[i, k]
                for r in range(6):
                    s -= Ust[i, r, k] * ap[r]
                rhs[k] = s
            for k in range(nvj):
                s = 0.0
                for m in range(nvj):
                    s += Dinv[i, k, m] * rhs[m]
                udot[vs + k] = s
        elif nvj > 0 and has_udot:
            for k in range(nvj):
                udot[vs + k] = udot_prescribed[vs + k]
        for k in range(nvj):
            for r in range(6):
                ap[r] += S[i, r, k] * udot[vs + k]
        for r in range(6):
            acc[i, r] = ap[r]
        if nvj > 0 and prescribed[i]:
            mat6_vec_into(f, IA[i], ap)
            for k in range(nvj):
                s = 0.0
                for r in range(6):
                    s += S[i, r, k] * (f[r] + pA[i, r])
                tau_out[vs + k] = s
    return udot, tau_out


@compiled_for((I64_VECTOR, F64_VECTOR, F64_VECTOR, F64_VECTOR, F64_VECTOR))
def _aba_tau_only(tree_ints, tree_reals, Q, U, tau):
    """:func:`_aba` with no external forces and zero prescribed accelerations, returning
    ``udot`` only: the entry point of :func:`aba` in the common case (compiled for exactly
    these argument types, so that a call costs as little as possible)."""
    if Q.shape[0] != tree_ints[1] or U.shape[0] != tree_ints[2] or tau.shape[0] != tree_ints[2]:
        raise ValueError("Q, U or tau does not match the tree's nq and nv")
    return _aba(tree_ints, tree_reals, Q, U, tau, np.empty(0), np.empty((0, 6)))[0]


@compiled
def _aba_batch(tree_ints, tree_reals, Qs, Us, taus, udots_prescribed, f_exts):
    n = Qs.shape[0]
    nv = tree_ints[2]
    udots = np.empty((n, nv))
    tau_out = np.empty((n, nv))
    for k in range(n):
        udots[k], tau_out[k] = _aba(tree_ints, tree_reals, Qs[k], Us[k], taus[k],
                                    udots_prescribed[k], f_exts[k])
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
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    udot, _ = _aba_core(tree, Q, np.zeros(nv), vec, np.zeros(nv), np.zeros((nb, 6)),
                        np.zeros(nb, dtype=np.int64), np.zeros(6))
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
        joint_configuration_rate(jtype, Q[qs:qs + nq], U[vs:vs + JOINT_NV[jtype]],
                                 Qdot[qs:qs + nq])
    return Qdot


@compiled
def _normalize_configuration(tree_ints, tree_reals, Q):
    tree = unpack_tree(tree_ints, tree_reals)
    for i in range(tree.parent.shape[0]):
        jtype = tree.joint_type[i]
        qs = tree.q_start[i]
        joint_normalize(jtype, Q[qs:qs + JOINT_NQ[jtype]])


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
        raise ValueError(f"expected Q ({nq},), U ({nv},), tau ({nv},); got Q {Q.shape}, "
                         f"U {U.shape}, tau {tau.shape}")
    up = _NO_UDOT if udot_prescribed is None else _f64(udot_prescribed, (nv,))
    fx = _NO_FEXT if f_ext is None else _f64(f_ext, (nb, 6))
    return _aba(a.ints, a.reals, Q, U, tau, up, fx)


def aba(tree, Q, U, tau, f_ext=None, udot_prescribed=None):
    """Forward dynamics (articulated-body algorithm): ``Udot`` (nv) [rad/s^2, m/s^2] for
    generalized forces ``tau`` (nv) [N m, N] and external forces ``f_ext`` (nb, 6; body frame,
    about the body origin, ``[moment; force]``). Prescribed joints take ``udot_prescribed``;
    use :func:`hybrid_dynamics` to also get the forces they need."""
    a = tree.arrays if isinstance(tree, MultibodyTree) else tree
    if f_ext is None and udot_prescribed is None:
        try:  # the common case, when Q, U and tau are already float64 C-contiguous vectors
            return _aba_tau_only(a.ints, a.reals, Q, U, tau)
        except TypeError:
            pass
    return hybrid_dynamics(a, Q, U, tau, udot_prescribed, f_ext)[0]


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
    return _rnea(a.ints, a.reals, _f64(Q, (nq,)), _f64(U, (nv,)), _f64(Udot, (nv,)),
                 _fext(nb, f_ext))[0]


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
    inertia_C = I0[0:3, 0:3] - m * (Cs.T @ Cs)
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
        return np.vstack([R.T @ Jw[0:3], R.T @ Jw[3:6]])
    raise ValueError(f"frame must be 'body', 'world_aligned' or 'world', got {frame!r}")


def station_jacobian(tree, Q, body, r_SB_B):
    """3 x nv Jacobian of the inertial velocity (in N) of the station ``r_SB_B`` [m] fixed in
    ``body``; also returns the station's position ``r_SN_N`` [m]."""
    a = as_arrays(tree)
    b = tree.body_index(body) if hasattr(tree, "body_index") else int(body)
    J, R_w, p_w = _frame_jacobian_world(a.ints, a.reals, _f64(Q, (_sizes(a)[1],)), b)
    r = p_w[b] + R_w[b] @ np.asarray(r_SB_B, dtype=np.float64)
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
