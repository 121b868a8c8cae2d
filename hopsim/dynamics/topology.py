"""Run-time changes of a tree's topology: detaching and attaching subtrees.

Both operations return a new :class:`~hopsim.dynamics.tree.MultibodyTree` (the old one is left
untouched) with the state mapped onto it. Body names are kept, indices may change (look bodies
up by name). After either operation the integrator must be reset: the state vector changes.

* :func:`detach_subtree` cuts a body's joint and gives it a free joint to the world placed so
  that every body keeps its pose and velocity exactly (a separation).
* :func:`attach_subtree` hinges a body (and its descendants) to a new parent with a joint whose
  zero configuration is the current relative pose. Velocities change as in a perfectly plastic
  impact: the new generalized velocities are those whose generalized momentum equals the
  projection of the bodies' momenta, ``M_new U_new = sum_i J_i,new^T I_i v_i,old``, which
  conserves the total spatial momentum when the tree is free floating (docking).
"""

from __future__ import annotations

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics import joints as jt
from hopsim.dynamics.algorithms import forward_kinematics, jacobian_transpose_times, minv
from hopsim.dynamics.spatial import dcm_to_quat
from hopsim.dynamics.tree import Body, MultibodyTree, Pose


def _reordered(
    tree: MultibodyTree, moved: list[int], moved_root: int, new_root_parent: int, new_joint: int, inb: Pose, axis
) -> tuple[MultibodyTree, list[int]]:
    """Tree with the ``moved`` bodies placed last and ``moved_root`` re-hinged."""
    kept = [i for i in range(tree.n_bodies) if i not in set(moved)]
    order = kept + moved
    new_index = {old: k for k, old in enumerate(order)}
    new = MultibodyTree(tree.gravity_N)
    for old in order:
        b = tree.bodies[old]
        if old == moved_root:
            parent = new_index[new_root_parent] if new_root_parent >= 0 else -1
            axis_vec = np.asarray(axis, dtype=float)
            nb = Body(
                b.name,
                parent,
                new_joint,
                b.mass,
                b.r_CB_B.copy(),
                b.inertia_C_B.copy(),
                axis_vec / detlinalg.norm(axis_vec),
                inb,
                Pose(),
                False,
            )
        else:
            parent = new_index[b.parent] if b.parent >= 0 else -1
            nb = Body(
                b.name,
                parent,
                b.joint_type,
                b.mass,
                b.r_CB_B.copy(),
                b.inertia_C_B.copy(),
                b.axis.copy(),
                Pose(b.inb_to_joint.rotation.copy(), b.inb_to_joint.translation.copy()),
                Pose(b.body_to_joint.rotation.copy(), b.body_to_joint.translation.copy()),
                b.prescribed,
            )
        new.bodies.append(nb)
    return new, order


def _copy_joint_states(old: MultibodyTree, new: MultibodyTree, order, Q, U, skip: int):
    Qn = np.zeros(new.nq)
    Un = np.zeros(new.nv)
    for k, o in enumerate(order):
        if o == skip:
            continue
        Qn[new.q_slice(k)] = Q[old.q_slice(o)]
        Un[new.v_slice(k)] = U[old.v_slice(o)]
    return Qn, Un


def detach_subtree(tree: MultibodyTree, body, Q, U):
    """Free ``body`` and its descendants from their parent: the body gets a free joint to the
    world at its current pose and velocity. Returns ``(new_tree, Q_new, U_new)``."""
    b = tree.body_index(body)
    Q = np.asarray(Q, dtype=float)
    U = np.asarray(U, dtype=float)
    R_w, p_w, v = forward_kinematics(tree, Q, U)
    moved = tree.subtree(b)
    new, order = _reordered(tree, moved, b, -1, jt.FREE, Pose(), (0.0, 0.0, 1.0))
    Qn, Un = _copy_joint_states(tree, new, order, Q, U, skip=b)
    k = order.index(b)
    qs = new.q_slice(k)
    Qn[qs.start : qs.start + 4] = dcm_to_quat(R_w[b])
    Qn[qs.start + 4 : qs.stop] = p_w[b]
    Un[new.v_slice(k)] = v[b]  # free joint with identity placements: U = body velocity
    return new, Qn, Un


def attach_subtree(tree: MultibodyTree, body, new_parent, Q, U, joint="locked", axis=(0.0, 0.0, 1.0)):
    """Hinge ``body`` (with its descendants) to ``new_parent`` (a body, or None for the world)
    by a joint of type ``joint`` whose zero configuration is the current relative pose; the
    pin or slider ``axis`` is in the new parent's frame at that pose. Returns
    ``(new_tree, Q_new, U_new)`` with velocities from a perfectly plastic impact."""
    b = tree.body_index(body)
    moved = tree.subtree(b)
    parent = -1 if new_parent is None else tree.body_index(new_parent)
    if parent in moved:
        raise ValueError(f"cannot attach {tree.bodies[b].name!r} to its own descendant {tree.bodies[parent].name!r}")
    Q = np.asarray(Q, dtype=float)
    U = np.asarray(U, dtype=float)
    R_w, p_w, v = forward_kinematics(tree, Q, U)
    if parent >= 0:
        R_PB = detlinalg.matmul(R_w[parent].T, R_w[b])
        p_BP_P = detlinalg.matmul(R_w[parent].T, p_w[b] - p_w[parent])
    else:
        R_PB, p_BP_P = R_w[b], p_w[b]
    # joint frame O = J = body frame at the current pose; the axis is given in the parent frame
    axis_B = detlinalg.matmul(R_PB.T, np.asarray(axis, dtype=float))
    code = jt.joint_code(joint)
    new, order = _reordered(tree, moved, b, parent, code, Pose(R_PB, p_BP_P), axis_B)
    Qn, _ = _copy_joint_states(tree, new, order, Q, U, skip=b)
    k = order.index(b)
    Qn[new.q_slice(k)] = jt.zero_configuration(code)
    # body momenta in their body frames, reordered into the new numbering
    inertia = tree.arrays.inertia
    h = np.array([detlinalg.matmul(inertia[o], v[o]) for o in order])
    generalized_momentum = jacobian_transpose_times(new, Qn, h)
    Un = minv(new, Qn, generalized_momentum)
    return new, Qn, Un
