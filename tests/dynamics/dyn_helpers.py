"""Shared helpers for the dynamics tests: random trees and their Pinocchio twins."""

import numpy as np
from scipy.spatial.transform import Rotation

from hopsim.dynamics.joints import BALL, FREE, LOCKED, PIN, PLANAR, SLIDER, UNIVERSAL
from hopsim.dynamics.spatial import force_to_parent
from hopsim.dynamics.tree import MultibodyTree, pose

ALL_JOINTS = ("pin", "slider", "ball", "free", "universal", "planar", "locked")


def random_rotation(rng):
    return Rotation.random(random_state=rng).as_matrix()


def random_inertia(rng, scale=1.0):
    """Physically valid principal moments (triangle inequality) in a random orientation."""
    a, b = rng.uniform(0.3, 1.0, 2) * scale
    c = rng.uniform(abs(a - b) + 0.05 * scale, a + b)
    R = random_rotation(rng)
    return R @ np.diag([a, b, c]) @ R.T


def random_tree(rng, n_bodies, joint_types=ALL_JOINTS, gravity=None, root_joint="free"):
    """A random tree: body 0 hinged to the world by ``root_joint``, the others to a random
    earlier body (sometimes to the world) by a joint drawn from ``joint_types``. Bodies are
    numbered depth first, as Pinocchio's mass-matrix algorithm requires of its models."""
    g = rng.normal(size=3) if gravity is None else gravity
    parents = [-1] + [(-1 if rng.uniform() < 0.05 else int(rng.integers(0, i))) for i in range(1, n_bodies)]
    children = {i: [j for j in range(n_bodies) if parents[j] == i] for i in range(-1, n_bodies)}
    order = []
    stack = list(reversed(children[-1]))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    new_index = {old: k for k, old in enumerate(order)}
    tree = MultibodyTree(gravity_N=g)
    for old in order:
        if old == 0:
            parent, joint = None, root_joint
        else:
            parent = None if parents[old] < 0 else new_index[parents[old]]
            joint = str(rng.choice(joint_types))
        tree.add_body(
            f"b{new_index[old]}",
            parent=parent,
            joint=joint,
            mass=rng.uniform(0.5, 5.0),
            r_CB_B=rng.normal(scale=0.2, size=3),
            inertia_C_B=random_inertia(rng),
            axis=rng.normal(size=3),
            inb_to_joint=pose(random_rotation(rng), rng.normal(scale=0.5, size=3)),
            body_to_joint=pose(random_rotation(rng), rng.normal(scale=0.3, size=3)),
        )
    return tree


def random_state(rng, tree, scale=1.0):
    """Random Q (unit quaternions) and U."""
    a = tree.arrays
    Q = np.zeros(int(a.nq[0]))
    for i, b in enumerate(tree.bodies):
        s = tree.q_slice(i)
        if b.joint_type in (BALL, FREE):
            Q[s.start : s.start + 4] = Rotation.random(random_state=rng).as_quat()
            if b.joint_type == FREE:
                Q[s.start + 4 : s.stop] = rng.normal(size=3)
        else:
            Q[s] = rng.normal(size=s.stop - s.start)
    U = rng.normal(scale=scale, size=int(a.nv[0]))
    return Q, U


# --------------------------------------------------------------------------- Pinocchio twin


def _se3(pin, R, p):
    return pin.SE3(np.asarray(R, dtype=float), np.asarray(p, dtype=float))


class PinocchioTwin:
    """The same tree as a Pinocchio model, with the maps between coordinate orders.

    Pinocchio's joint frame of body i is our outboard joint frame J_i; locked bodies are
    merged into their parent's Pinocchio joint.
    """

    def __init__(self, tree):
        import pinocchio as pin

        self.pin = pin
        model = pin.Model()
        model.gravity = pin.Motion(np.concatenate([tree.gravity_N, np.zeros(3)]))
        n = tree.n_bodies
        self.joint_of_body = np.zeros(n, dtype=int)
        self.body_in_joint = []  # pose of the body frame in its Pinocchio joint frame
        perm_q, perm_v = [], []
        a = tree.arrays
        for i, b in enumerate(tree.bodies):
            if b.parent >= 0:
                pj = self.joint_of_body[b.parent]
                T_parent = self.body_in_joint[b.parent]
            else:
                pj = 0
                T_parent = pin.SE3.Identity()
            T_O = T_parent * _se3(pin, b.inb_to_joint.rotation, b.inb_to_joint.translation)
            T_BJ = _se3(pin, b.body_to_joint.rotation, b.body_to_joint.translation)
            T_JB = T_BJ.inverse()
            inertia_B = pin.Inertia(b.mass, b.r_CB_B, b.inertia_C_B)
            if b.joint_type == LOCKED:
                T = T_O * T_JB
                self.joint_of_body[i] = pj
                self.body_in_joint.append(T)
                model.appendBodyToJoint(int(pj), inertia_B, T)
                continue
            jm = self._joint_model(pin, b)
            jid = model.addJoint(int(pj), jm, T_O, b.name)
            model.appendBodyToJoint(jid, inertia_B, T_JB)
            self.joint_of_body[i] = jid
            self.body_in_joint.append(T_JB)
            qs = int(a.q_start[i])
            vs = int(a.v_start[i])
            if b.joint_type == FREE:
                perm_q += [qs + 4, qs + 5, qs + 6, qs, qs + 1, qs + 2, qs + 3]
                perm_v += [vs + 3, vs + 4, vs + 5, vs, vs + 1, vs + 2]
            else:
                nq = tree.q_slice(i).stop - qs
                nv = tree.v_slice(i).stop - vs
                perm_q += list(range(qs, qs + nq))
                perm_v += list(range(vs, vs + nv))
        self.model = model
        self.data = model.createData()
        self.perm_q = np.array(perm_q, dtype=int)
        self.perm_v = np.array(perm_v, dtype=int)
        self.tree = tree

    @staticmethod
    def _joint_model(pin, b):
        t = b.joint_type
        if t == PIN:
            return pin.JointModelRevoluteUnaligned(*b.axis)
        if t == SLIDER:
            return pin.JointModelPrismaticUnaligned(*b.axis)
        if t == BALL:
            return pin.JointModelSpherical()
        if t == FREE:
            return pin.JointModelFreeFlyer()
        if t == UNIVERSAL:
            jm = pin.JointModelComposite(pin.JointModelRX())
            jm.addJoint(pin.JointModelRY())
            return jm
        if t == PLANAR:
            jm = pin.JointModelComposite(pin.JointModelPX())
            jm.addJoint(pin.JointModelPY())
            jm.addJoint(pin.JointModelRZ())
            return jm
        raise ValueError(t)

    # coordinate maps
    def q(self, Q):
        return np.asarray(Q)[self.perm_q]

    def v(self, U):
        return np.asarray(U)[self.perm_v]

    def v_back(self, v_pin):
        out = np.empty_like(v_pin)
        out[self.perm_v] = v_pin
        return out

    def matrix_back(self, M_pin):
        out = np.empty_like(M_pin)
        out[np.ix_(self.perm_v, self.perm_v)] = M_pin
        return out

    def fext(self, f_ext):
        """Our per-body forces (body frame, angular first) as Pinocchio joint forces."""
        pin = self.pin
        acc = [np.zeros(6) for _ in range(self.model.njoints)]
        for i, f in enumerate(np.asarray(f_ext)):
            T = self.body_in_joint[i]
            f_J = force_to_parent(T.rotation.copy(), T.translation.copy(), np.asarray(f, float))
            acc[self.joint_of_body[i]] += f_J
        return [pin.Force(np.concatenate([f[3:6], f[0:3]])) for f in acc]

    def joint_force_in_body(self, i, f_pin):
        """Pinocchio joint force of body i (joint frame, linear first) in our body frame."""
        T = self.body_in_joint[i].inverse()  # pose of J in B
        f_J = np.concatenate([f_pin.angular, f_pin.linear])
        return force_to_parent(T.rotation.copy(), T.translation.copy(), f_J)
