"""Recursive multibody algorithms over a :class:`~hopsim.dynamics.tree.TreeArrays` tree.

Each algorithm is one compiled function over the tree (``_aba``, ``_rnea``, ``_crba``, ...)
with a thin Python entry point of the same name without the underscore.

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

from hopsim.dynamics._jit import compiled
from hopsim.dynamics.joints import (JOINT_NQ, JOINT_NV, joint_configuration_rate, joint_motion,
                                    joint_normalize)
from hopsim.dynamics.spatial import (congruence6, force_cross, force_cross_into,
                                     force_to_parent, force_to_parent_add,
                                     inertia_to_parent_add, mat3_mat3, mat3_vec, mat6_vec,
                                     mat6_vec_into, motion_cross_into, motion_to_child_into,
                                     motion_to_parent_into,
                                     motion_cross, motion_to_child, motion_to_parent,
                                     motion_transform_matrix, skew)
from hopsim.dynamics.tree import as_arrays

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
    # inv = L^-T L^-1, column by column: forward then backward substitution of e_c
    for col in range(n):
        for i in range(n):
            s = 1.0 if i == col else 0.0
            for k in range(i):
                s -= L[i, k] * inv[k, col]
            inv[i, col] = s / L[i, i]
        for i in range(n - 1, -1, -1):
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
    Sj = np.zeros((6, 6))
    cj = np.zeros(6)
    R_OJ = np.empty((3, 3))
    p_JO = np.empty(3)
    R_OB = np.empty((3, 3))
    p_BO = np.empty(3)
    col = np.empty(6)
    for i in range(nb):
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
    return R_rel, p_rel, S, cJ, vJ, v


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


# --------------------------------------------------------------------------- forward dynamics


@compiled
def _aba(tree, Q, U, tau, udot_prescribed, f_ext):
    """Articulated-body algorithm with prescribed joints (hybrid dynamics).

    Returns ``(udot, tau_out)``: accelerations of all joints (the given ones for prescribed
    joints) and generalized forces (the given ones for free joints, the required ones for
    prescribed joints)."""
    return _aba_core(tree, Q, U, tau, udot_prescribed, f_ext, tree.prescribed,
                     _world_acceleration(tree))


@compiled
def _aba_core(tree, Q, U, tau, udot_prescribed, f_ext, prescribed, a_world):
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, U)
    IA = tree.inertia.copy()
    pA = np.zeros((nb, 6))
    c = np.zeros((nb, 6))
    tmp = np.empty(6)
    tmp2 = np.empty(6)
    for i in range(nb):
        motion_cross_into(tmp, v[i], vJ[i])
        mat6_vec_into(tmp2, tree.inertia[i], v[i])
        force_cross_into(pA[i], v[i], tmp2)
        for r in range(6):
            c[i, r] = cJ[i, r] + tmp[r]
            pA[i, r] -= f_ext[i, r]
    Ust = np.zeros((nb, 6, 6))
    Dinv = np.zeros((nb, 6, 6))
    uprime = np.zeros((nb, 6))
    D = np.empty((6, 6))
    L = np.empty((6, 6))
    UD = np.empty((6, 6))
    Ia = np.empty((6, 6))
    pa = np.empty(6)
    known = np.empty(6)
    X = np.empty((6, 6))
    Y = np.empty((6, 6))
    for i in range(nb - 1, -1, -1):
        nvj = JOINT_NV[tree.joint_type[i]]
        vs = tree.v_start[i]
        I_i = IA[i]
        Ui = Ust[i]
        for r in range(6):
            for col in range(6):
                Ia[r, col] = I_i[r, col]
        if nvj > 0 and not prescribed[i]:
            for k in range(nvj):
                for r in range(6):
                    s = 0.0
                    for m in range(6):
                        s += I_i[r, m] * S[i, m, k]
                    Ui[r, k] = s
            for a in range(nvj):
                for b in range(nvj):
                    s = 0.0
                    for r in range(6):
                        s += S[i, r, a] * Ui[r, b]
                    D[a, b] = s
            _spd_inverse_into(D, nvj, Dinv[i], L)
            Di = Dinv[i]
            for a in range(nvj):
                s = tau[vs + a]
                for r in range(6):
                    s -= S[i, r, a] * pA[i, r]
                uprime[i, a] = s
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
                for r in range(6):
                    known[r] += S[i, r, k] * udot_prescribed[vs + k]
            mat6_vec_into(pa, Ia, known)
            for r in range(6):
                pa[r] += pA[i, r]
        par = tree.parent[i]
        if par >= 0:
            inertia_to_parent_add(IA[par], R_rel[i], p_rel[i], Ia, X, Y)
            force_to_parent_add(pA[par], R_rel[i], p_rel[i], pa)
    udot = np.zeros(nv)
    tau_out = tau.copy()
    a = np.zeros((nb, 6))
    ap = np.empty(6)
    f = np.empty(6)
    rhs = np.empty(6)
    for i in range(nb):
        nvj = JOINT_NV[tree.joint_type[i]]
        vs = tree.v_start[i]
        par = tree.parent[i]
        if par >= 0:
            motion_to_child_into(ap, R_rel[i], p_rel[i], a[par])
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
        elif nvj > 0:
            for k in range(nvj):
                udot[vs + k] = udot_prescribed[vs + k]
        for k in range(nvj):
            for r in range(6):
                ap[r] += S[i, r, k] * udot[vs + k]
        for r in range(6):
            a[i, r] = ap[r]
        if nvj > 0 and prescribed[i]:
            mat6_vec_into(f, IA[i], ap)
            for k in range(nvj):
                s = 0.0
                for r in range(6):
                    s += S[i, r, k] * (f[r] + pA[i, r])
                tau_out[vs + k] = s
    return udot, tau_out


@compiled
def _aba_batch(tree, Qs, Us, taus, udots_prescribed, f_exts):
    n = Qs.shape[0]
    nv = tree.nv[0]
    udots = np.empty((n, nv))
    tau_out = np.empty((n, nv))
    for k in range(n):
        udots[k], tau_out[k] = _aba(tree, Qs[k], Us[k], taus[k], udots_prescribed[k], f_exts[k])
    return udots, tau_out


# --------------------------------------------------------------------------- inverse dynamics


@compiled
def _rnea(tree, Q, U, Udot, f_ext):
    """Recursive Newton-Euler: generalized forces ``tau`` (nv) producing ``Udot``, and the
    spatial force ``f`` (nb, 6) each joint transmits from the parent to the body (body frame,
    about the body origin)."""
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
def _jacobian_transpose_times(tree, Q, f_body):
    """Generalized forces ``sum_i J_i^T f_i`` of body spatial forces ``f_body`` (nb, 6), each
    in its body frame about the body origin."""
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, np.zeros(tree.nv[0]))
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
def _composite_body_inertias(tree, R_rel, p_rel):
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
def _crba(tree, Q):
    """Composite rigid body algorithm: the joint-space mass matrix M (nv x nv)."""
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, np.zeros(nv))
    Ic = _composite_body_inertias(tree, R_rel, p_rel)
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
def _minv(tree, Q, vec):
    """``M(Q)^-1 vec`` by the articulated-body recursions (no velocity, no gravity, all joints
    treated as free)."""
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    udot, _ = _aba_core(tree, Q, np.zeros(nv), vec, np.zeros(nv), np.zeros((nb, 6)),
                        np.zeros(nb, dtype=np.bool_), np.zeros(6))
    return udot


# --------------------------------------------------------------------------- system properties


@compiled
def _spatial_momentum(tree, Q, U):
    """Spatial momentum ``[angular; linear]`` of the tree, in N about N's origin."""
    nb = tree.parent.shape[0]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, U)
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    h = np.zeros(6)
    for i in range(nb):
        h += force_to_parent(R_w[i], p_w[i], mat6_vec(tree.inertia[i], v[i]))
    return h


@compiled
def _kinetic_energy(tree, Q, U):
    nb = tree.parent.shape[0]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, U)
    T = 0.0
    for i in range(nb):
        Iv = mat6_vec(tree.inertia[i], v[i])
        for r in range(6):
            T += 0.5 * v[i, r] * Iv[r]
    return T


@compiled
def _system_inertia(tree, Q):
    """Spatial inertia of the whole tree in N about N's origin."""
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, np.zeros(nv))
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    I0 = np.zeros((6, 6))
    for i in range(nb):
        I0 += congruence6(motion_transform_matrix(R_w[i], p_w[i]), tree.inertia[i])
    return I0


@compiled
def _frame_jacobian_world(tree, R_rel, p_rel, S, body):
    """6 x nv Jacobian of ``body``'s spatial velocity, in N at N's origin."""
    nv = tree.nv[0]
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
def _configuration_rate(tree, Q, U):
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
def _normalize_configuration(tree, Q):
    for i in range(tree.parent.shape[0]):
        jtype = tree.joint_type[i]
        qs = tree.q_start[i]
        joint_normalize(jtype, Q[qs:qs + JOINT_NQ[jtype]])


# =========================================================================== Python entry points


def _f64(x, shape=None):
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"expected shape {shape}, got {arr.shape}")
    return arr


def _fext(arrays, f_ext):
    nb = arrays.parent.shape[0]
    return np.zeros((nb, 6)) if f_ext is None else _f64(f_ext, (nb, 6))


def _inputs(arrays, Q, U):
    return (_f64(Q, (int(arrays.nq[0]),)), _f64(U, (int(arrays.nv[0]),)))


def hybrid_dynamics(tree, Q, U, tau, udot_prescribed=None, f_ext=None):
    """Forward dynamics by the articulated-body algorithm with prescribed joints.

    Returns ``(Udot, tau_out)``: ``Udot`` (nv) [rad/s^2, m/s^2], equal to ``udot_prescribed``
    on prescribed joints; ``tau_out`` (nv), equal to ``tau`` on free joints and the
    generalized force each prescribed joint needs [N m, N]."""
    a = as_arrays(tree)
    Q, U = _inputs(a, Q, U)
    nv = int(a.nv[0])
    tau = _f64(tau, (nv,))
    up = np.zeros(nv) if udot_prescribed is None else _f64(udot_prescribed, (nv,))
    return _aba(a, Q, U, tau, up, _fext(a, f_ext))


def aba(tree, Q, U, tau, f_ext=None, udot_prescribed=None):
    """Forward dynamics (articulated-body algorithm): ``Udot`` for generalized forces ``tau``
    and external forces ``f_ext``. Prescribed joints take ``udot_prescribed``; use
    :func:`hybrid_dynamics` to also get the forces they need."""
    return hybrid_dynamics(tree, Q, U, tau, udot_prescribed, f_ext)[0]


def aba_batch(tree, Qs, Us, taus, f_exts=None, udots_prescribed=None):
    """:func:`hybrid_dynamics` for many states of one tree in one compiled call; inputs are
    stacked along the first axis. Returns ``(Udots, taus_out)``."""
    a = as_arrays(tree)
    Qs = _f64(Qs)
    Us = _f64(Us)
    taus = _f64(taus)
    n = Qs.shape[0]
    nb = a.parent.shape[0]
    up = np.zeros_like(Us) if udots_prescribed is None else _f64(udots_prescribed)
    fx = np.zeros((n, nb, 6)) if f_exts is None else _f64(f_exts, (n, nb, 6))
    return _aba_batch(a, Qs, Us, taus, up, fx)


def rnea(tree, Q, U, Udot, f_ext=None):
    """Inverse dynamics (recursive Newton-Euler): generalized forces ``tau`` (nv)."""
    a = as_arrays(tree)
    Q, U = _inputs(a, Q, U)
    return _rnea(a, Q, U, _f64(Udot, (int(a.nv[0]),)), _fext(a, f_ext))[0]


def joint_reaction_forces(tree, Q, U, tau, f_ext=None, udot_prescribed=None):
    """Spatial force (nb, 6) each joint transmits from the parent onto the body, in the body
    frame about the body origin ``[moment; force]``: constraint forces in the locked
    directions plus the joint forces in the free ones, for the motion the forward dynamics
    gives."""
    a = as_arrays(tree)
    Q, U = _inputs(a, Q, U)
    fx = _fext(a, f_ext)
    udot, _ = hybrid_dynamics(a, Q, U, tau, udot_prescribed, fx)
    return _rnea(a, Q, U, udot, fx)[1]


def jacobian_transpose_times(tree, Q, f_body):
    """Generalized forces (nv) equivalent to body spatial forces ``f_body`` (nb, 6), each in
    its body frame about the body origin ``[moment; force]``: ``sum_i J_i^T f_i``."""
    a = as_arrays(tree)
    return _jacobian_transpose_times(a, _f64(Q, (int(a.nq[0]),)),
                                     _f64(f_body, (a.parent.shape[0], 6)))


def crba(tree, Q):
    """Joint-space mass matrix M (nv x nv), by the composite rigid body algorithm."""
    a = as_arrays(tree)
    return _crba(a, _f64(Q, (int(a.nq[0]),)))


def minv(tree, Q, vec):
    """``M(Q)^-1 vec`` in O(n) by the articulated-body recursions."""
    a = as_arrays(tree)
    return _minv(a, _f64(Q, (int(a.nq[0]),)), _f64(vec, (int(a.nv[0]),)))


def composite_body_inertias(tree, Q):
    """Spatial inertia (nb, 6, 6) of each body together with its descendants, in the body
    frame about the body origin."""
    a = as_arrays(tree)
    Q = _f64(Q, (int(a.nq[0]),))
    R_rel, p_rel, *_ = _kinematics(a, Q, np.zeros(int(a.nv[0])))
    return _composite_body_inertias(a, R_rel, p_rel)


def forward_kinematics(tree, Q, U=None):
    """World poses and body velocities: ``(R_NB (nb,3,3), r_BN_N (nb,3), v_B (nb,6))`` with
    ``v_B`` the body spatial velocity in the body frame."""
    a = as_arrays(tree)
    nv = int(a.nv[0])
    Q = _f64(Q, (int(a.nq[0]),))
    U = np.zeros(nv) if U is None else _f64(U, (nv,))
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(a, Q, U)
    R_w, p_w = _world_poses(a, R_rel, p_rel)
    return R_w, p_w, v


def mass_properties(tree, Q):
    """System mass [kg], centre of mass ``r_CN_N`` [m] and inertia about the centre of mass in
    N [kg m^2]."""
    a = as_arrays(tree)
    I0 = _system_inertia(a, _f64(Q, (int(a.nq[0]),)))
    m = I0[3, 3]
    mC = I0[0:3, 3:6]  # m skew(c)
    c = np.array([mC[2, 1], mC[0, 2], mC[1, 0]]) / m
    Cs = skew(c)
    inertia_C = I0[0:3, 0:3] - m * (Cs.T @ Cs)
    return m, c, inertia_C


def spatial_momentum(tree, Q, U):
    """Spatial momentum ``[angular; linear]`` in N about N's origin [kg m^2/s; kg m/s]."""
    a = as_arrays(tree)
    Q, U = _inputs(a, Q, U)
    return _spatial_momentum(a, Q, U)


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
    Q, U = _inputs(a, Q, U)
    return float(_kinetic_energy(a, Q, U))


def frame_jacobian(tree, Q, body, frame="body"):
    """6 x nv Jacobian of a body frame's spatial velocity ``[omega; v]``.

    ``frame="body"``: in the body frame, ``v`` of the body origin; ``"world_aligned"``: N axes,
    ``v`` of the body origin; ``"world"``: N axes, ``v`` of the body point at N's origin."""
    a = as_arrays(tree)
    b = tree.body_index(body) if hasattr(tree, "body_index") else int(body)
    Q = _f64(Q, (int(a.nq[0]),))
    R_rel, p_rel, S, *_ = _kinematics(a, Q, np.zeros(int(a.nv[0])))
    J, R_w, p_w = _frame_jacobian_world(a, R_rel, p_rel, S, b)
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
    Q = _f64(Q, (int(a.nq[0]),))
    R_rel, p_rel, S, *_ = _kinematics(a, Q, np.zeros(int(a.nv[0])))
    J, R_w, p_w = _frame_jacobian_world(a, R_rel, p_rel, S, b)
    r = p_w[b] + R_w[b] @ np.asarray(r_SB_B, dtype=np.float64)
    return J[3:6] + np.cross(J[0:3].T, r).T, r


def configuration_rate(tree, Q, U):
    """``Qdot`` (nq) from ``Q`` and ``U`` (quaternion kinematics for ball and free joints)."""
    a = as_arrays(tree)
    Q, U = _inputs(a, Q, U)
    return _configuration_rate(a, Q, U)


def normalize_configuration(tree, Q):
    """Copy of ``Q`` with every joint quaternion normalized (w >= 0); call between steps."""
    a = as_arrays(tree)
    Q = _f64(Q, (int(a.nq[0]),)).copy()
    _normalize_configuration(a, Q)
    return Q


def state_derivative(tree, x, tau=None, f_ext=None, udot_prescribed=None):
    """Derivative of the state ``x = [Q; U]`` for use with the integrators."""
    a = as_arrays(tree)
    nq = int(a.nq[0])
    nv = int(a.nv[0])
    x = _f64(x, (nq + nv,))
    Q = x[:nq]
    U = x[nq:]
    tau = np.zeros(nv) if tau is None else tau
    udot = hybrid_dynamics(a, Q, U, tau, udot_prescribed, f_ext)[0]
    return np.concatenate([_configuration_rate(a, Q, U), udot])


__all__ = [
    "aba", "aba_batch", "hybrid_dynamics", "rnea", "crba", "jacobian_transpose_times", "minv",
    "composite_body_inertias",
    "forward_kinematics", "mass_properties", "spatial_momentum", "center_of_mass",
    "kinetic_energy", "frame_jacobian", "station_jacobian", "joint_reaction_forces",
    "configuration_rate", "normalize_configuration", "state_derivative",
]
