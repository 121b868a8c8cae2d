"""Closure constraints: closed loops in articulated multibody trees.

A closure joins two *nodes*: frames fixed on bodies of a tree, or a body node and a frame fixed
in the inertial frame N. Node 1 (frame C1, on ``body1``) plays the part of a joint's outboard
frame J and node 2 (frame C2, on ``body2`` or N) that of its inboard frame O; the closure's type
names the relative motion it allows, as the tree's joint of the same name would:

==========  ====  =========================================================================
type        rows  constraint (velocity rows, in C1 components, angular rows first)
==========  ====  =========================================================================
locked      6     weld: C1 = C2; rows: relative angular velocity (3), relative velocity (3)
ball        3     the origins coincide; rows: relative velocity of the origins (3)
pin         5     the origins coincide and the unit ``axis`` (the same in C1 and C2) is
                  shared; rows: relative angular velocity along e1 and e2, the two unit
                  vectors with (e1, e2, axis) right-handed, then the relative velocity (3)
universal   4     the origins coincide and C2's x axis stays perpendicular to C1's y axis
                  (rotation about C2's x, then about C1's y, as the universal joint);
                  row: relative angular velocity along n = y_C1 x x_C2, then the relative
                  velocity (3)
==========  ====  =========================================================================

"Relative" is node 1 relative to node 2: ``w = R_NC1^T (omega_1 - omega_2)`` [rad/s] and
``v = R_NC1^T (v_1 - v_2)`` [m/s], with ``v_k`` the inertial velocity of node k's origin. The
velocity rows of all closures stacked are ``G(Q) U`` (``G``: m x nv, the constraint Jacobian).
The position residual ``phi(Q)`` (m) has the same rows, and its derivative is ``G U`` on the
constraint manifold: ``R_NC1^T (r_1 - r_2)`` [m] for the origins; for a weld, the rotation
vector of ``R_C2C1 = R_NC2^T R_NC1`` [rad] (accurate below pi); for a pin, with ``b`` C2's axis
in C1 components, ``(e2 . b, -e1 . b)``; for a universal joint, ``y_C1 . x_C2``.

Multipliers ``lambda`` (m) are the constraint forces in the same rows: the spatial force that
node 2's body exerts on node 1's body through the closure, at node 1's origin and in C1
components ``[moment; force]`` [N m; N] (the rows a closure does not constrain carry none); node
2's body receives the opposite. :func:`closure_wrenches` expands them to one 6-vector per
closure.

Constrained forward dynamics (:func:`constraint_dynamics`) solves::

    M(Q) Udot + C(Q, U) = tau + J^T f_ext + G^T lambda
    G Udot = -Gdot U - kd G U - kp phi            (Baumgarte stabilization)

(for the origin rows, ``G Udot + Gdot U`` is the relative acceleration of the origins in N
taken along C1's axes, so that their separation ``e = r_1 - r_2`` obeys
``e'' + kd e' + kp e = 0`` along every constrained direction; for the angular rows it is the
derivative of ``G U`` in C1) by the Schur complement on the articulated-body algorithm:
``a0`` = the unconstrained accelerations (one ABA pass, gravity, velocity terms and external
forces included), ``K = M^-1 G^T`` (no velocity, no gravity: the articulated inertias factored
once, then one bias pass and one outward pass per constraint row, O(n) each, so O(n m) in all
and no mass matrix is formed), the Delassus matrix ``A = G K`` (m x m, symmetric positive
semi-definite), ``A lambda = -Gdot U - kd G U - kp phi - G a0`` and ``Udot = a0 + K lambda``.
The ABA rather than the CRBA and a dense factorization: it is the simulation's own O(n) path,
the one checked most closely against Pinocchio, and it never forms the n x n mass matrix; the
tests check the result against the CRBA and RNEA.

Redundant constraints (a planar four-bar's closing pin in 3-D, whose out-of-plane rows of ``G``
vanish) make ``A`` singular: it is solved by its eigen-decomposition (cyclic Jacobi, the same
bits on every CPU) with eigenvalues at or below ``RANK_RTOL`` = 1e-10 of the largest taken as
zero, which gives the minimum-norm multipliers; the accelerations do not depend on that
choice.

Drift control: the Baumgarte gains ``kp`` [1/s^2] and ``kd`` [1/s] (default 0: none; a critically
damped choice is ``kd = 2 w``, ``kp = w^2`` for a rate ``w`` well below the integration step's
1/h), and between integration steps :func:`project_configuration` (Gauss-Newton on
``phi``: ``dU = -K A^+ phi`` applied as a configuration increment, until ``max |phi| <= tol``)
and :func:`project_velocity` (``U -= K A^+ G U``). Both corrections are the smallest in the
kinetic-energy metric (``M``-weighted, so units of different joints do not mix).

Prescribed (hybrid-dynamics) joints are not supported with closures yet.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics._jit import compiled, compiled_borrowing
from hopsim.dynamics.algorithms import (
    _PA,
    _UP,
    _W_L,
    _W_S,
    _W_U,
    _W_VEC,
    _aba_into,
    _aba_inward_pass,
    _aba_joint,
    _aba_outward_pass,
    _aba_velocity_pass,
    _configuration_rate,
    _kinematics,
    _normalize_configuration,
    _world_poses,
    forward_kinematics,
)
from hopsim.dynamics.joints import BALL, FREE, JOINT_NV, PIN, PLANAR, SLIDER, UNIVERSAL
from hopsim.dynamics.spatial import (
    cross3,
    force_to_parent_add,
    mat3_vec,
    mat3T_mat3,
    mat3T_vec,
    motion_cross_into,
    motion_to_child_into,
    quat_multiply,
    quat_normalize,
    quat_to_dcm,
)
from hopsim.dynamics.tree import MultibodyTree, Pose, as_arrays, unpack_tree

CLOSURE_LOCKED, CLOSURE_BALL, CLOSURE_PIN, CLOSURE_UNIVERSAL = range(4)
CLOSURE_TYPES = {"locked": CLOSURE_LOCKED, "ball": CLOSURE_BALL, "pin": CLOSURE_PIN, "universal": CLOSURE_UNIVERSAL}
CLOSURE_NAMES = {code: name for name, code in CLOSURE_TYPES.items()}
CLOSURE_ROWS = np.array([6, 3, 5, 4], dtype=np.int64)
"""Number of constraint rows of each closure type."""
CLOSURE_ANGULAR_ROWS = np.array([3, 0, 2, 1], dtype=np.int64)
"""Number of those rows that are angular (they come first)."""

RANK_RTOL = 1e-10
"""Eigenvalues of the Delassus matrix at or below this fraction of the largest are taken as zero
(redundant constraints)."""

ClosureArrays = namedtuple(
    "ClosureArrays",
    [
        "kind",  # (nc,) int64 closure type codes
        "bodies",  # (nc, 2) int64 body of node 1, of node 2 (-1: the inertial frame N)
        "frames",  # (nc, 2, 4, 3) pose of each node in its body (or N): rows 0-2 R_BC, row 3 r_CB_B [m]
        "axes",  # (nc, 3, 3) pin closures: rows e1, e2, axis (in C1 and C2); unused otherwise
    ],
)
"""Compiled representation of a set of closures (every algorithm here takes its fields)."""


@dataclass
class Closure:
    """One closure constraint between node 1 (``body1``, ``node1`` pose of C1 in it) and node 2
    (``body2`` or None for N, ``node2`` pose of C2 in it)."""

    name: str
    kind: int
    body1: int
    node1: Pose
    body2: int
    node2: Pose
    axis: np.ndarray


class Closures:
    """The closure constraints of one :class:`~hopsim.dynamics.tree.MultibodyTree`.

    Example (a four-bar's closing pin to the ground, about y)::

        loops = Closures(tree)
        loops.add("close", "pin", "link3", pose(translation=(0.6, 0, 0)),
                  None, pose(translation=(1.0, 0, 0)), axis=(0, 1, 0))
    """

    def __init__(self, tree: MultibodyTree):
        self.tree = tree
        self.closures: list[Closure] = []
        self._arrays = None

    def add(self, name, kind, body1, node1: Pose | None = None, body2=None, node2: Pose | None = None, axis=(0, 0, 1)):
        """Add a closure of type ``kind`` (``"locked"``, ``"ball"``, ``"pin"`` or
        ``"universal"``) between the frame ``node1`` on ``body1`` and the frame ``node2`` on
        ``body2`` (a name or index; None: the inertial frame N). ``axis``: the pin's unit axis,
        the same in both node frames. Returns the closure's index."""
        if any(c.name == name for c in self.closures):
            raise ValueError(f"a closure named {name!r} already exists")
        if isinstance(kind, str):
            if kind.lower() not in CLOSURE_TYPES:
                raise ValueError(f"unknown closure type {kind!r}; choose one of {sorted(CLOSURE_TYPES)}")
            code = CLOSURE_TYPES[kind.lower()]
        else:
            code = int(kind)
            if code not in CLOSURE_NAMES:
                raise ValueError(f"unknown closure type code {kind}")
        b1 = self.tree.body_index(body1)
        b2 = -1 if body2 is None else self.tree.body_index(body2)
        if b1 == b2:
            raise ValueError(f"closure {name!r} joins body {b1} to itself")
        ax = np.asarray(axis, dtype=np.float64)
        if ax.shape != (3,):
            raise ValueError(f"the axis of closure {name!r} must be a 3-vector, got shape {ax.shape}")
        n = float(detlinalg.norm(ax))
        if n == 0.0:
            raise ValueError(f"the axis of closure {name!r} must be non-zero")
        self.closures.append(
            Closure(
                name,
                code,
                b1,
                node1 if node1 is not None else Pose(),
                b2,
                node2 if node2 is not None else Pose(),
                ax / n,
            )
        )
        self._arrays = None
        return len(self.closures) - 1

    @property
    def n_rows(self) -> int:
        """Number of constraint rows m."""
        return int(sum(CLOSURE_ROWS[c.kind] for c in self.closures))

    def rows(self, closure) -> slice:
        """The rows of one closure (by name or index) in the stacked constraints."""
        k = closure if isinstance(closure, (int, np.integer)) else [c.name for c in self.closures].index(closure)
        start = int(sum(CLOSURE_ROWS[c.kind] for c in self.closures[:k]))
        return slice(start, start + int(CLOSURE_ROWS[self.closures[k].kind]))

    @property
    def arrays(self) -> ClosureArrays:
        if self._arrays is None:
            nc = len(self.closures)
            kind = np.array([c.kind for c in self.closures], dtype=np.int64)
            bodies = np.array([[c.body1, c.body2] for c in self.closures], dtype=np.int64).reshape(nc, 2)
            frames = np.zeros((nc, 2, 4, 3))
            axes = np.zeros((nc, 3, 3))
            for k, c in enumerate(self.closures):
                for s, node in enumerate((c.node1, c.node2)):
                    frames[k, s, 0:3] = node.rotation
                    frames[k, s, 3] = node.translation
                axes[k] = _pin_basis(c.axis)
            self._arrays = ClosureArrays(kind, bodies, frames, axes)
        return self._arrays


def _pin_basis(axis) -> np.ndarray:
    """Rows e1, e2, axis: an orthonormal right-handed basis whose third vector is ``axis``."""
    a = np.asarray(axis, dtype=np.float64)
    t = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = t - detlinalg.dot(t, a) * a
    e1 /= detlinalg.norm(e1)
    e2 = np.cross(a, e1)
    return np.array([e1, e2, a])


# --------------------------------------------------------------------------- compiled algorithms


@compiled
def _rotation_vector(R):
    """Rotation vector (axis times angle [rad], angle below pi) of a rotation matrix."""
    v = np.empty(3)
    v[0] = R[2, 1] - R[1, 2]
    v[1] = R[0, 2] - R[2, 0]
    v[2] = R[1, 0] - R[0, 1]
    s2 = np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])  # 2 sin(angle)
    c2 = R[0, 0] + R[1, 1] + R[2, 2] - 1.0  # 2 cos(angle)
    if s2 < 1e-300:
        return 0.5 * v
    return (detmath.atan2(s2, c2) / s2) * v


@compiled
def _closure_terms(tree_ints, tree_reals, Q, U, kind, bodies, frames, axes):
    """The constraint Jacobian ``G`` (m x nv), the position residual ``phi`` (m) and the
    constraint acceleration at ``Udot = 0`` without gravity, ``Gdot U`` (m), of the closures,
    all in the node-1 frames."""
    tree = unpack_tree(tree_ints, tree_reals)
    nb = tree.parent.shape[0]
    nv = tree.nv[0]
    nc = kind.shape[0]
    m = 0
    for k in range(nc):
        m += CLOSURE_ROWS[kind[k]]
    R_rel, p_rel, S, cJ, vJ, v = _kinematics(tree, Q, U)
    R_w, p_w = _world_poses(tree, R_rel, p_rel)
    # body accelerations for Udot = 0 and no gravity (the velocity-product part)
    a = np.zeros((nb, 6))
    t6 = np.empty(6)
    for i in range(nb):
        par = tree.parent[i]
        if par >= 0:
            motion_to_child_into(t6, R_rel[i], p_rel[i], a[par])
            for r in range(6):
                a[i, r] = t6[r]
        motion_cross_into(t6, v[i], vJ[i])
        for r in range(6):
            a[i, r] += cJ[i, r] + t6[r]
    G = np.zeros((m, nv))
    phi = np.zeros(m)
    gdu = np.zeros(m)
    R_N = np.empty((2, 3, 3))  # node frames in N
    r_N = np.empty((2, 3))  # node origins in N [m]
    w_N = np.zeros((2, 3))  # angular velocities [rad/s]
    v_N = np.zeros((2, 3))  # origin velocities [m/s]
    al_N = np.zeros((2, 3))  # angular accelerations (Udot = 0) [rad/s^2]
    ac_N = np.zeros((2, 3))  # origin accelerations (Udot = 0) [m/s^2]
    Jw = np.zeros((2, 3, nv))  # Jacobians of the angular velocities, in N
    Jv = np.zeros((2, 3, nv))  # Jacobians of the origin velocities, in N
    row = 0
    for k in range(nc):
        for s in range(2):
            b = bodies[k, s]
            Rc = frames[k, s, 0:3]
            rc = frames[k, s, 3]
            Jw[s] = 0.0
            Jv[s] = 0.0
            if b < 0:
                R_N[s] = Rc
                r_N[s] = rc
                w_N[s] = 0.0
                v_N[s] = 0.0
                al_N[s] = 0.0
                ac_N[s] = 0.0
                continue
            Rb = R_w[b]
            rc0, rc1, rc2 = rc[0], rc[1], rc[2]
            w0, w1, w2 = v[b, 0], v[b, 1], v[b, 2]  # body b's angular velocity
            al0, al1, al2 = a[b, 0], a[b, 1], a[b, 2]  # and angular acceleration
            # the node origin's velocity and acceleration in body b's frame
            vp0 = v[b, 3] + (w1 * rc2 - w2 * rc1)
            vp1 = v[b, 4] + (w2 * rc0 - w0 * rc2)
            vp2 = v[b, 5] + (w0 * rc1 - w1 * rc0)
            ap0 = a[b, 3] + (al1 * rc2 - al2 * rc1) + (w1 * vp2 - w2 * vp1)
            ap1 = a[b, 4] + (al2 * rc0 - al0 * rc2) + (w2 * vp0 - w0 * vp2)
            ap2 = a[b, 5] + (al0 * rc1 - al1 * rc0) + (w0 * vp1 - w1 * vp0)
            for i in range(3):
                for jj in range(3):
                    R_N[s, i, jj] = Rb[i, 0] * Rc[0, jj] + Rb[i, 1] * Rc[1, jj] + Rb[i, 2] * Rc[2, jj]
                r_N[s, i] = p_w[b, i] + (Rb[i, 0] * rc0 + Rb[i, 1] * rc1 + Rb[i, 2] * rc2)
                w_N[s, i] = Rb[i, 0] * w0 + Rb[i, 1] * w1 + Rb[i, 2] * w2
                v_N[s, i] = Rb[i, 0] * vp0 + Rb[i, 1] * vp1 + Rb[i, 2] * vp2
                al_N[s, i] = Rb[i, 0] * al0 + Rb[i, 1] * al1 + Rb[i, 2] * al2
                ac_N[s, i] = Rb[i, 0] * ap0 + Rb[i, 1] * ap1 + Rb[i, 2] * ap2
            x0, x1, x2 = r_N[s, 0], r_N[s, 1], r_N[s, 2]
            j = b
            while j >= 0:
                vs = tree.v_start[j]
                Rj = R_w[j]
                pj = p_w[j]
                for c in range(JOINT_NV[tree.joint_type[j]]):
                    # column c of joint j's motion subspace in N, at N's origin, then at the node
                    m0, m1, m2 = S[j, 0, c], S[j, 1, c], S[j, 2, c]
                    m3, m4, m5 = S[j, 3, c], S[j, 4, c], S[j, 5, c]
                    cx = Rj[0, 0] * m0 + Rj[0, 1] * m1 + Rj[0, 2] * m2
                    cy = Rj[1, 0] * m0 + Rj[1, 1] * m1 + Rj[1, 2] * m2
                    cz = Rj[2, 0] * m0 + Rj[2, 1] * m1 + Rj[2, 2] * m2
                    u0 = Rj[0, 0] * m3 + Rj[0, 1] * m4 + Rj[0, 2] * m5 + (pj[1] * cz - pj[2] * cy)
                    u1 = Rj[1, 0] * m3 + Rj[1, 1] * m4 + Rj[1, 2] * m5 + (pj[2] * cx - pj[0] * cz)
                    u2 = Rj[2, 0] * m3 + Rj[2, 1] * m4 + Rj[2, 2] * m5 + (pj[0] * cy - pj[1] * cx)
                    Jw[s, 0, vs + c] = cx
                    Jw[s, 1, vs + c] = cy
                    Jw[s, 2, vs + c] = cz
                    Jv[s, 0, vs + c] = u0 + (cy * x2 - cz * x1)
                    Jv[s, 1, vs + c] = u1 + (cz * x0 - cx * x2)
                    Jv[s, 2, vs + c] = u2 + (cx * x1 - cy * x0)
                j = tree.parent[j]
        R1 = R_N[0]
        w1 = mat3T_vec(R1, w_N[0])  # node 1's angular velocity in C1
        w = mat3T_vec(R1, w_N[0] - w_N[1])  # relative angular velocity in C1
        wdot = mat3T_vec(R1, al_N[0] - al_N[1]) - cross3(w1, w)
        vdot = mat3T_vec(R1, ac_N[0] - ac_N[1])
        Gw = np.zeros((3, nv))  # C1 components
        Gv = np.zeros((3, nv))
        for r in range(3):
            for c in range(nv):
                for q in range(3):
                    Gw[r, c] += R1[q, r] * (Jw[0, q, c] - Jw[1, q, c])
                    Gv[r, c] += R1[q, r] * (Jv[0, q, c] - Jv[1, q, c])
        R21 = mat3T_mat3(R_N[1], R1)  # R_C2C1
        t = kind[k]
        na = CLOSURE_ANGULAR_ROWS[t]
        if t == CLOSURE_LOCKED:
            G[row : row + 3] = Gw
            phi[row : row + 3] = _rotation_vector(R21)
            gdu[row : row + 3] = wdot
        elif t == CLOSURE_PIN:
            e1 = axes[k, 0]
            e2 = axes[k, 1]
            bx = mat3T_vec(R21, axes[k, 2])  # C2's axis in C1
            for r in range(2):
                e = e1 if r == 0 else e2
                for c in range(nv):
                    G[row + r, c] = e[0] * Gw[0, c] + e[1] * Gw[1, c] + e[2] * Gw[2, c]
                gdu[row + r] = e[0] * wdot[0] + e[1] * wdot[1] + e[2] * wdot[2]
            phi[row] = e2[0] * bx[0] + e2[1] * bx[1] + e2[2] * bx[2]
            phi[row + 1] = -(e1[0] * bx[0] + e1[1] * bx[1] + e1[2] * bx[2])
        elif t == CLOSURE_UNIVERSAL:
            x2 = R21[0, :].copy()  # C2's x axis in C1 (row 0 of R_C2C1)
            n = np.array([x2[2], 0.0, -x2[0]])  # y x x2
            for c in range(nv):
                G[row, c] = n[0] * Gw[0, c] + n[2] * Gw[2, c]
            phi[row] = x2[1]
            x2dot = -cross3(w, x2)
            ndot = np.array([x2dot[2], 0.0, -x2dot[0]])
            gdu[row] = n[0] * wdot[0] + n[2] * wdot[2] + ndot[0] * w[0] + ndot[2] * w[2]
        row += na
        G[row : row + 3] = Gv
        phi[row : row + 3] = mat3T_vec(R1, r_N[0] - r_N[1])
        gdu[row : row + 3] = vdot
        row += 3
    return G, phi, gdu


@compiled
def _symmetric_pseudo_solve(A, b, rtol):
    """Minimum-norm solution of ``A x = b`` for a symmetric positive semi-definite ``A``, by its
    eigen-decomposition (:func:`hopsim.dynamics.detlinalg.eigh_unsorted`); eigenvalues at or below
    ``rtol`` times the largest are taken as zero."""
    n = A.shape[0]
    w, V = detlinalg.eigh_unsorted(A)
    big = 0.0
    for i in range(n):
        big = max(big, w[i])
    x = np.zeros(n)
    for i in range(n):
        if w[i] > rtol * big:
            d = 0.0
            for k in range(n):
                d += V[k, i] * b[k]
            d /= w[i]
            for k in range(n):
                x[k] += V[k, i] * d
    return x


@compiled_borrowing
def _aba_bias_pass(ints, tau, W, pose, pa):
    """The inward pass of the articulated-body algorithm for the bias forces alone, over
    articulated inertias already factored by :func:`_aba_inward_pass` (every joint free, no
    velocity): the same arithmetic as that pass's bias terms, so that a second right-hand side
    ``tau`` costs no second factorization. The bias forces ``W[i, _W_VEC, _PA]`` must hold the
    body's own (zero with no velocity and no external force) on entry; ``pa`` (6) is scratch."""
    nb = ints[0]
    for i in range(nb - 1, -1, -1):
        nvj, vs, par, _given = _aba_joint(ints, nb, i, False)
        vec = W[i, _W_VEC]
        pA = vec[_PA]
        if nvj > 0:
            S = W[i, _W_S]
            Ut = W[i, _W_U]
            L = W[i, _W_L]
            for j in range(nvj):
                s = tau[vs + j]
                for r in range(6):
                    s -= S[j, r] * pA[r]
                for k in range(j):
                    s -= L[j, k] * vec[_UP, k]
                vec[_UP, j] = s * L[j, j]
            if par < 0:
                continue
            for r in range(6):
                s = 0.0
                for j in range(nvj):
                    s += Ut[j, r] * vec[_UP, j]
                pa[r] = pA[r] + s
        else:
            if par < 0:
                continue
            for r in range(6):
                pa[r] = pA[r]
        Pi = pose[i]
        force_to_parent_add(W[par, _W_VEC, _PA], Pi, Pi[3], pa)


@compiled
def _minv_rows(tree_ints, tree_reals, Q, G):
    """``K^T`` (m x nv) with ``K = M^-1 G^T``, and the Delassus matrix ``A = G K`` (m x m), by
    the articulated-body algorithm with no velocity and no gravity: the articulated inertias
    are factored once, then each row of ``G`` costs one bias pass and one outward pass (the
    same bits as :func:`~hopsim.dynamics.algorithms.minv` of that row)."""
    m, nv = G.shape
    nb = tree_ints[0]
    Kt = np.empty((m, nv))
    none = np.zeros(0)
    W = np.empty((nb, 5, 6, 6))
    pose = np.empty((nb, 4, 3))
    T = np.empty((6, 6, 6))
    _aba_velocity_pass(tree_ints, tree_reals, Q, np.zeros(nv), np.zeros((0, 6)), W, pose, T)
    pa0 = np.empty((nb, 6))
    for i in range(nb):
        for k in range(6):
            pa0[i, k] = W[i, _W_VEC, _PA, k]
    pa = np.empty(6)
    for r in range(m):
        if r == 0:
            _aba_inward_pass(tree_ints, G[0], none, False, W, pose, T)
        else:
            for i in range(nb):
                for k in range(6):
                    W[i, _W_VEC, _PA, k] = pa0[i, k]
            _aba_bias_pass(tree_ints, G[r], W, pose, pa)
        _aba_outward_pass(tree_ints, tree_reals, none, False, False, W, pose, Kt[r], none)
    A = np.empty((m, m))
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for c in range(nv):
                s += G[i, c] * Kt[j, c]
            A[i, j] = s
    for i in range(m):
        for j in range(i + 1, m):
            A[i, j] = A[j, i]
    return Kt, A


@compiled
def _constraint_dynamics(tree_ints, tree_reals, Q, U, tau, f_ext, kind, bodies, frames, axes, kp, kd, rtol):
    """Constrained forward dynamics: ``(Udot, lambda)`` (see the module's docstring)."""
    nv = tree_ints[2]
    G, phi, gdu = _closure_terms(tree_ints, tree_reals, Q, U, kind, bodies, frames, axes)
    m = G.shape[0]
    udot = np.empty(nv)
    none = np.zeros(0)
    _aba_into(tree_ints, tree_reals, Q, U, tau, none, f_ext, True, False, udot, none)
    Kt, A = _minv_rows(tree_ints, tree_reals, Q, G)
    rhs = np.empty(m)
    for i in range(m):
        s = -gdu[i] - kp * phi[i]
        gu = 0.0
        ga = 0.0
        for c in range(nv):
            gu += G[i, c] * U[c]
            ga += G[i, c] * udot[c]
        rhs[i] = s - kd * gu - ga
    lam = _symmetric_pseudo_solve(A, rhs, rtol)
    for r in range(m):
        for c in range(nv):
            udot[c] += Kt[r, c] * lam[r]
    return udot, lam


@compiled
def _retract(tree_ints, tree_reals, Q, dU):
    """Move ``Q`` in place by the generalized-velocity increment ``dU`` (nv, for a unit time):
    added for pin, slider, universal and planar joints; ``q <- q (x) exp(dU/2)`` for the
    quaternion of a ball or free joint, and the free joint's position moved by ``R(q) dU[3:6]``."""
    tree = unpack_tree(tree_ints, tree_reals)
    for i in range(tree.parent.shape[0]):
        jtype = tree.joint_type[i]
        qs = tree.q_start[i]
        vs = tree.v_start[i]
        if jtype in (PIN, SLIDER, UNIVERSAL, PLANAR):
            for k in range(JOINT_NV[jtype]):
                Q[qs + k] += dU[vs + k]
        elif jtype in (BALL, FREE):
            q = Q[qs : qs + 4].copy()
            if jtype == FREE:
                Q[qs + 4 : qs + 7] += mat3_vec(quat_to_dcm(q), dU[vs + 3 : vs + 6])
            wx, wy, wz = dU[vs], dU[vs + 1], dU[vs + 2]
            angle = np.sqrt(wx * wx + wy * wy + wz * wz)
            dq = np.empty(4)
            if angle > 0.0:
                f = detmath.sin(0.5 * angle) / angle
                dq[0] = f * wx
                dq[1] = f * wy
                dq[2] = f * wz
                dq[3] = detmath.cos(0.5 * angle)
            else:
                dq[0] = 0.0
                dq[1] = 0.0
                dq[2] = 0.0
                dq[3] = 1.0
            Q[qs : qs + 4] = quat_normalize(quat_multiply(q, dq))


@compiled
def _max_abs(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = max(s, abs(x[i]))
    return s


@compiled
def _project_configuration(tree_ints, tree_reals, Q, kind, bodies, frames, axes, tol, max_iter, rtol):
    """Gauss-Newton on the closure residual: ``Q`` (a copy) moved by ``-K A^+ phi`` until
    ``max |phi| <= tol``; returns ``(Q, max |phi|, iterations)``."""
    Q = Q.copy()
    _normalize_configuration(tree_ints, tree_reals, Q)
    nv = tree_ints[2]
    zero = np.zeros(nv)
    it = 0
    while True:
        G, phi, _ = _closure_terms(tree_ints, tree_reals, Q, zero, kind, bodies, frames, axes)
        err = _max_abs(phi)
        if err <= tol or it >= max_iter:
            return Q, err, it
        Kt, A = _minv_rows(tree_ints, tree_reals, Q, G)
        y = _symmetric_pseudo_solve(A, phi, rtol)
        dU = np.zeros(nv)
        for r in range(y.shape[0]):
            for c in range(nv):
                dU[c] -= Kt[r, c] * y[r]
        _retract(tree_ints, tree_reals, Q, dU)
        it += 1


@compiled
def _project_velocity(tree_ints, tree_reals, Q, U, kind, bodies, frames, axes, rtol):
    """``U - K A^+ G U``: the velocities nearest ``U`` in the kinetic-energy metric with
    ``G U = 0``."""
    nv = tree_ints[2]
    G, _, _ = _closure_terms(tree_ints, tree_reals, Q, np.zeros(nv), kind, bodies, frames, axes)
    m = G.shape[0]
    Kt, A = _minv_rows(tree_ints, tree_reals, Q, G)
    gu = np.zeros(m)
    for i in range(m):
        for c in range(nv):
            gu[i] += G[i, c] * U[c]
    y = _symmetric_pseudo_solve(A, gu, rtol)
    out = U.copy()
    for r in range(m):
        for c in range(nv):
            out[c] -= Kt[r, c] * y[r]
    return out


@compiled
def _constrained_derivative(tree_ints, tree_reals, Q, U, tau, f_ext, kind, bodies, frames, axes, kp, kd, rtol):
    udot, _ = _constraint_dynamics(tree_ints, tree_reals, Q, U, tau, f_ext, kind, bodies, frames, axes, kp, kd, rtol)
    return _configuration_rate(tree_ints, tree_reals, Q, U), udot


@compiled
def _constrained_rk4(
    tree_ints, tree_reals, Q, U, tau, f_ext, kind, bodies, frames, axes, kp, kd, h, n_steps, tol, max_iter, rtol
):
    """``n_steps`` classical RK4 steps of size ``h`` [s] of the constrained dynamics, each
    followed by the quaternions' normalization and the projections of Q and U."""
    nq = Q.shape[0]
    nv = U.shape[0]
    Q = Q.copy()
    U = U.copy()
    worst = 0.0
    for _ in range(n_steps):
        q1, u1 = _constrained_derivative(
            tree_ints, tree_reals, Q, U, tau, f_ext, kind, bodies, frames, axes, kp, kd, rtol
        )
        q2, u2 = _constrained_derivative(
            tree_ints,
            tree_reals,
            Q + 0.5 * h * q1,
            U + 0.5 * h * u1,
            tau,
            f_ext,
            kind,
            bodies,
            frames,
            axes,
            kp,
            kd,
            rtol,
        )
        q3, u3 = _constrained_derivative(
            tree_ints,
            tree_reals,
            Q + 0.5 * h * q2,
            U + 0.5 * h * u2,
            tau,
            f_ext,
            kind,
            bodies,
            frames,
            axes,
            kp,
            kd,
            rtol,
        )
        q4, u4 = _constrained_derivative(
            tree_ints, tree_reals, Q + h * q3, U + h * u3, tau, f_ext, kind, bodies, frames, axes, kp, kd, rtol
        )
        for c in range(nq):
            Q[c] += (h / 6.0) * (q1[c] + 2.0 * q2[c] + 2.0 * q3[c] + q4[c])
        for c in range(nv):
            U[c] += (h / 6.0) * (u1[c] + 2.0 * u2[c] + 2.0 * u3[c] + u4[c])
        Q, err, _ = _project_configuration(tree_ints, tree_reals, Q, kind, bodies, frames, axes, tol, max_iter, rtol)
        worst = max(worst, err)
        U = _project_velocity(tree_ints, tree_reals, Q, U, kind, bodies, frames, axes, rtol)
    return Q, U, worst


# =========================================================================== Python entry points


def _f64(x, shape):
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"expected shape {shape}, got {arr.shape}")
    return arr


def _prepare(tree, closures):
    a = as_arrays(tree)
    if np.any(a.prescribed):
        raise ValueError("prescribed joints are not supported with closure constraints")
    c = closures.arrays if isinstance(closures, Closures) else closures
    nb, nq, nv = a.ints[0:3].tolist()
    return a, c, nb, nq, nv


def closure_terms(tree, closures, Q, U=None):
    """``(G, phi, gdot_u)``: the constraint Jacobian (m x nv), the position residual (m) [m, rad]
    and the constraint acceleration at ``Udot = 0`` without gravity, ``Gdot U`` (m) [m/s^2,
    rad/s^2] (zero for ``U`` None), rows in the node-1 frames as in the module's docstring."""
    a, c, _nb, nq, nv = _prepare(tree, closures)
    U = np.zeros(nv) if U is None else _f64(U, (nv,))
    return _closure_terms(a.ints, a.reals, _f64(Q, (nq,)), U, c.kind, c.bodies, c.frames, c.axes)


def closure_residual(tree, closures, Q):
    """Position residual ``phi(Q)`` (m) of the closures [m for the origin rows, rad for the
    angular ones]."""
    return closure_terms(tree, closures, Q)[1]


def closure_jacobian(tree, closures, Q):
    """Constraint Jacobian ``G(Q)`` (m x nv): ``G U`` are the closures' relative velocities."""
    return closure_terms(tree, closures, Q)[0]


def constraint_dynamics(tree, closures, Q, U, tau, f_ext=None, kp=0.0, kd=0.0, rtol=RANK_RTOL):
    """Forward dynamics of a tree with closure constraints.

    ``Q`` (nq), ``U`` (nv), ``tau`` (nv) [N m, N] and ``f_ext`` (nb, 6; body frame, about the
    body origin, ``[moment; force]``) as in :func:`hopsim.dynamics.algorithms.aba`; ``kp``
    [1/s^2] and ``kd`` [1/s] the Baumgarte gains (``G Udot = -Gdot U - kd G U - kp phi``).

    Returns ``(Udot, lam)``: the accelerations (nv) [rad/s^2, m/s^2] and the multipliers (m):
    the force node 2's body exerts on node 1's body through each closure, in C1 components at
    C1's origin [N m for the angular rows, N for the others] (see :func:`closure_wrenches`).
    Redundant rows get the minimum-norm multipliers."""
    a, c, nb, nq, nv = _prepare(tree, closures)
    fx = np.zeros((0, 6)) if f_ext is None else _f64(f_ext, (nb, 6))
    return _constraint_dynamics(
        a.ints,
        a.reals,
        _f64(Q, (nq,)),
        _f64(U, (nv,)),
        _f64(tau, (nv,)),
        fx,
        c.kind,
        c.bodies,
        c.frames,
        c.axes,
        float(kp),
        float(kd),
        float(rtol),
    )


def closure_wrenches(tree, closures, Q, lam) -> np.ndarray:
    """The multipliers ``lam`` (m) of :func:`constraint_dynamics` at ``Q`` as one spatial force
    per closure (nc, 6): what node 2's body exerts on node 1's body, at C1's origin, in C1
    components ``[moment; force]`` [N m; N] (zero in the directions the closure leaves free)."""
    a, c, _nb, nq, _nv = _prepare(tree, closures)
    lam = np.asarray(lam, dtype=np.float64)
    m = int(CLOSURE_ROWS[c.kind].sum())
    if lam.shape != (m,):
        raise ValueError(f"expected {m} multipliers, got shape {lam.shape}")
    out = np.zeros((c.kind.shape[0], 6))
    R_w = None
    row = 0
    for k, t in enumerate(c.kind):
        if t == CLOSURE_LOCKED:
            out[k, 0:3] = lam[row : row + 3]
        elif t == CLOSURE_PIN:
            out[k, 0:3] = lam[row] * c.axes[k, 0] + lam[row + 1] * c.axes[k, 1]
        elif t == CLOSURE_UNIVERSAL:
            if R_w is None:
                R_w = forward_kinematics(a, _f64(Q, (nq,)))[0]
            R = [
                c.frames[k, s, 0:3]
                if c.bodies[k, s] < 0
                else detlinalg.matmul(R_w[c.bodies[k, s]], c.frames[k, s, 0:3])
                for s in (0, 1)
            ]
            x2 = detlinalg.matmul(R[1].T.copy(), R[0])[0]  # C2's x axis in C1
            out[k, 0:3] = lam[row] * np.array([x2[2], 0.0, -x2[0]])
        row += int(CLOSURE_ANGULAR_ROWS[t])
        out[k, 3:6] = lam[row : row + 3]
        row += 3
    return out


def project_configuration(tree, closures, Q, tol=1e-12, max_iter=20, rtol=RANK_RTOL):
    """``Q`` moved onto the closures' manifold by Gauss-Newton iterations (smallest steps in the
    kinetic-energy metric, quaternions normalized first): returns ``(Q, residual)`` with
    ``residual = max |phi|`` [m, rad] after at most ``max_iter`` iterations; it is above ``tol``
    when the iterations did not converge (a configuration too far from the manifold, or a
    singular one)."""
    a, c, _nb, nq, _nv = _prepare(tree, closures)
    Qp, err, _ = _project_configuration(
        a.ints, a.reals, _f64(Q, (nq,)), c.kind, c.bodies, c.frames, c.axes, float(tol), int(max_iter), float(rtol)
    )
    return Qp, float(err)


def project_velocity(tree, closures, Q, U, rtol=RANK_RTOL):
    """``U`` with its closure-violating part removed: the velocities with ``G U = 0`` nearest
    ``U`` in the kinetic-energy metric (``U - M^-1 G^T (G M^-1 G^T)^+ G U``)."""
    a, c, _nb, nq, nv = _prepare(tree, closures)
    return _project_velocity(
        a.ints, a.reals, _f64(Q, (nq,)), _f64(U, (nv,)), c.kind, c.bodies, c.frames, c.axes, float(rtol)
    )


def constrained_state_derivative(tree, closures, x, tau=None, f_ext=None, kp=0.0, kd=0.0):
    """``[Qdot; Udot]`` of the state ``x = [Q; U]`` under the closures, for the integrators of
    :mod:`hopsim.dynamics.integrators` (project between steps with :func:`project_configuration`
    and :func:`project_velocity`)."""
    a, _c, _nb, nq, nv = _prepare(tree, closures)
    x = _f64(x, (nq + nv,))
    Q, U = x[:nq], x[nq:]
    udot, _ = constraint_dynamics(tree, closures, Q, U, np.zeros(nv) if tau is None else tau, f_ext, kp, kd)
    return np.concatenate([_configuration_rate(a.ints, a.reals, Q, U), udot])


def constrained_rk4(tree, closures, Q, U, h, n_steps, tau=None, f_ext=None, kp=0.0, kd=0.0, tol=1e-12, max_iter=20):
    """``n_steps`` RK4 steps of ``h`` [s] under constant ``tau`` and ``f_ext``, each followed
    by the normalization of the quaternions and :func:`project_configuration` and
    :func:`project_velocity`, in one compiled call. Returns ``(Q, U, worst)``: the final state
    and the largest closure residual [m, rad] left by a projection."""
    a, c, nb, nq, nv = _prepare(tree, closures)
    tau = np.zeros(nv) if tau is None else _f64(tau, (nv,))
    fx = np.zeros((0, 6)) if f_ext is None else _f64(f_ext, (nb, 6))
    Q, U, worst = _constrained_rk4(
        a.ints,
        a.reals,
        _f64(Q, (nq,)),
        _f64(U, (nv,)),
        tau,
        fx,
        c.kind,
        c.bodies,
        c.frames,
        c.axes,
        float(kp),
        float(kd),
        float(h),
        int(n_steps),
        float(tol),
        int(max_iter),
        RANK_RTOL,
    )
    return Q, U, float(worst)


__all__ = [
    "CLOSURE_TYPES",
    "Closure",
    "ClosureArrays",
    "Closures",
    "closure_jacobian",
    "closure_residual",
    "closure_terms",
    "closure_wrenches",
    "constrained_rk4",
    "constrained_state_derivative",
    "constraint_dynamics",
    "project_configuration",
    "project_velocity",
]
