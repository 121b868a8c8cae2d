"""Articulated multibody trees: a Python builder over compiled array representations.

Bodies are numbered so that every parent comes before its children; parent ``-1`` is the
inertial (world) frame N. Body ``i``'s pose relative to its parent P is::

    T_PB = T_PO(inb_to_joint) * T_OJ(joint coordinates) * inverse(T_BJ(body_to_joint))

where ``inb_to_joint`` is the pose of the inboard joint frame O in the parent body frame and
``body_to_joint`` the pose of the outboard joint frame J in the body frame (see
:mod:`hopsim.dynamics.joints`). Mass properties are the mass [kg], the centre of mass
``r_CB_B`` [m] and the inertia about the centre of mass ``inertia_C_B`` [kg m^2], in the body
frame. Gravity ``gravity_N`` [m/s^2] is uniform, in N (zero for free space).

:class:`TreeArrays` is the compiled representation (a named tuple of arrays) that every
algorithm in :mod:`hopsim.dynamics.algorithms` takes.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics import joints as jt
from hopsim.dynamics._jit import compiled
from hopsim.dynamics.spatial import quat_to_dcm, spatial_inertia

TreeArrays = namedtuple(
    "TreeArrays",
    [
        "parent",  # (nb,) int64, -1 for the world
        "joint_type",  # (nb,) int64 joint codes
        "q_start",  # (nb,) int64 first index of the joint's coordinates in Q
        "v_start",  # (nb,) int64 first index of the joint's velocities in U
        "joint_axis",  # (nb, 3) unit axis of pin and slider joints
        "R_inb",  # (nb, 3, 3) rotation of O in the parent body frame
        "p_inb",  # (nb, 3) origin of O in the parent body frame [m]
        "R_bj",  # (nb, 3, 3) rotation of J in the body frame
        "p_bj",  # (nb, 3) origin of J in the body frame [m]
        "mass",  # (nb,) [kg]
        "com",  # (nb, 3) r_CB_B [m]
        "inertia_C",  # (nb, 3, 3) inertia about the centre of mass, body frame [kg m^2]
        "inertia",  # (nb, 6, 6) spatial inertia about the body origin, body frame
        "prescribed",  # (nb,) int64 0/1: joint acceleration given (hybrid dynamics)
        "gravity",  # (3,) uniform gravity in N [m/s^2]
        "nq",  # (1,) int64
        "nv",  # (1,) int64
        "ints",  # every integer field above, packed (see below)
        "reals",  # every float field above, packed (see below)
    ],
)
"""Compiled representation of a tree. All fields are views into two packed buffers, ``ints``
(int64) and ``reals`` (float64), so that a compiled function takes a tree as two arrays (cheap
to pass from Python) and rebuilds the named views with :func:`unpack_tree`. Writing into a
field (``arrays.prescribed[i] = 1``) writes into the packed buffers.

``ints`` = ``[nb, nq, nv, parent (nb), joint_type (nb), q_start (nb), v_start (nb),
prescribed (nb)]``; ``reals`` = ``[gravity (3), joint_axis (nb*3), R_inb (nb*9), p_inb (nb*3),
R_bj (nb*9), p_bj (nb*3), mass (nb), com (nb*3), inertia_C (nb*9), inertia (nb*36)]``, each
field row-major over the bodies."""

N_INT_HEADER = 3
N_INT_PER_BODY = 5
N_REAL_HEADER = 3
N_REAL_PER_BODY = 3 + 9 + 3 + 9 + 3 + 1 + 3 + 9 + 36

# Where each per-body field starts in the packed buffers of an nb-body tree: at
# ``N_INT_HEADER + INT_X * nb`` in ``ints`` and ``N_REAL_HEADER + REAL_X * nb`` in ``reals``.
INT_PARENT, INT_JOINT_TYPE, INT_Q_START, INT_V_START, INT_PRESCRIBED = 0, 1, 2, 3, 4
REAL_JOINT_AXIS = 0
REAL_R_INB = 3
REAL_P_INB = 12
REAL_R_BJ = 15
REAL_P_BJ = 24
REAL_MASS = 27
REAL_COM = 28
REAL_INERTIA_C = 31
REAL_INERTIA = 40


@compiled
def unpack_tree(ints, reals):
    """The :class:`TreeArrays` views of the packed buffers ``ints`` and ``reals``."""
    nb = ints[0]
    o = N_INT_HEADER
    parent = ints[o + INT_PARENT * nb : o + (INT_PARENT + 1) * nb]
    joint_type = ints[o + INT_JOINT_TYPE * nb : o + (INT_JOINT_TYPE + 1) * nb]
    q_start = ints[o + INT_Q_START * nb : o + (INT_Q_START + 1) * nb]
    v_start = ints[o + INT_V_START * nb : o + (INT_V_START + 1) * nb]
    prescribed = ints[o + INT_PRESCRIBED * nb : o + (INT_PRESCRIBED + 1) * nb]
    gravity = reals[0:3]
    o = N_REAL_HEADER
    joint_axis = reals[o + REAL_JOINT_AXIS * nb : o + REAL_R_INB * nb].reshape((nb, 3))
    R_inb = reals[o + REAL_R_INB * nb : o + REAL_P_INB * nb].reshape((nb, 3, 3))
    p_inb = reals[o + REAL_P_INB * nb : o + REAL_R_BJ * nb].reshape((nb, 3))
    R_bj = reals[o + REAL_R_BJ * nb : o + REAL_P_BJ * nb].reshape((nb, 3, 3))
    p_bj = reals[o + REAL_P_BJ * nb : o + REAL_MASS * nb].reshape((nb, 3))
    mass = reals[o + REAL_MASS * nb : o + REAL_COM * nb]
    com = reals[o + REAL_COM * nb : o + REAL_INERTIA_C * nb].reshape((nb, 3))
    inertia_C = reals[o + REAL_INERTIA_C * nb : o + REAL_INERTIA * nb].reshape((nb, 3, 3))
    inertia = reals[o + REAL_INERTIA * nb : o + N_REAL_PER_BODY * nb].reshape((nb, 6, 6))
    return TreeArrays(
        parent,
        joint_type,
        q_start,
        v_start,
        joint_axis,
        R_inb,
        p_inb,
        R_bj,
        p_bj,
        mass,
        com,
        inertia_C,
        inertia,
        prescribed,
        gravity,
        ints[1:2],
        ints[2:3],
        ints,
        reals,
    )


def _rotation_matrix(rotation) -> np.ndarray:
    if rotation is None:
        return np.eye(3)
    r = np.asarray(rotation, dtype=np.float64)
    if r.shape == (4,):
        return quat_to_dcm(r / detlinalg.norm(r))
    if r.shape == (3, 3):
        return r.copy()
    raise ValueError(f"a rotation is a quaternion (x, y, z, w) or a 3x3 matrix, got shape {r.shape}")


@dataclass
class Pose:
    """Pose of a frame F in a frame A: ``rotation`` R_AF (3x3; maps F to A components) and
    ``translation`` r_FA_A [m]. Build it from a quaternion or a matrix with :func:`pose`."""

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))


def pose(rotation=None, translation=None) -> Pose:
    """Pose from a rotation (quaternion ``(x, y, z, w)`` or 3x3 matrix) and a translation [m]."""
    t = np.zeros(3) if translation is None else np.asarray(translation, dtype=np.float64).copy()
    return Pose(_rotation_matrix(rotation), t)


@dataclass
class Body:
    """One body of a :class:`MultibodyTree` and the joint to its parent."""

    name: str
    parent: int
    joint_type: int
    mass: float
    r_CB_B: np.ndarray
    inertia_C_B: np.ndarray
    axis: np.ndarray
    inb_to_joint: Pose
    body_to_joint: Pose
    prescribed: bool = False


class MultibodyTree:
    """Builder of an articulated tree; ``tree.arrays`` is the compiled representation.

    Example::

        tree = MultibodyTree()
        hub = tree.add_body("hub", joint="free", mass=50.0, inertia_C_B=np.diag([5, 6, 7]))
        tree.add_body("arm", parent="hub", joint="pin", axis=(0, 0, 1), mass=2.0,
                      inertia_C_B=np.diag([0.1, 0.1, 0.01]),
                      inb_to_joint=pose(translation=(0.5, 0, 0)),
                      body_to_joint=pose(translation=(-0.3, 0, 0)))
    """

    def __init__(self, gravity_N=(0.0, 0.0, 0.0)):
        self.bodies: list[Body] = []
        self.gravity_N = np.asarray(gravity_N, dtype=np.float64).copy()
        self._arrays = None

    # -- building ------------------------------------------------------------------------
    def add_body(
        self,
        name: str,
        parent=None,
        joint="free",
        mass: float = 1.0,
        r_CB_B=None,
        inertia_C_B=None,
        axis=(0.0, 0.0, 1.0),
        inb_to_joint: Pose | None = None,
        body_to_joint: Pose | None = None,
        prescribed: bool = False,
    ) -> int:
        """Add a body hinged to ``parent`` (a name, an index, or None for the world); returns
        its index. ``mass`` [kg] > 0, ``inertia_C_B`` [kg m^2] symmetric positive definite
        (default: identity)."""
        if any(b.name == name for b in self.bodies):
            raise ValueError(f"a body named {name!r} already exists")
        parent_index = self.body_index(parent) if parent is not None else -1
        code = jt.joint_code(joint)
        inertia = np.eye(3) if inertia_C_B is None else np.asarray(inertia_C_B, dtype=np.float64)
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T):
            raise ValueError(f"inertia_C_B of {name!r} must be a symmetric 3x3 matrix")
        if mass <= 0.0 or np.any(detlinalg.eigvalsh(inertia) <= 0.0):
            raise ValueError(
                f"body {name!r} needs a positive mass and a positive definite "
                f"inertia (zero-mass bodies make the articulated inertia singular)"
            )
        ax = np.asarray(axis, dtype=np.float64)
        n = detlinalg.norm(ax)
        if n == 0.0:
            raise ValueError(f"joint axis of {name!r} must be non-zero")
        self.bodies.append(
            Body(
                name=name,
                parent=parent_index,
                joint_type=code,
                mass=float(mass),
                r_CB_B=np.zeros(3) if r_CB_B is None else np.asarray(r_CB_B, dtype=np.float64).copy(),
                inertia_C_B=inertia.copy(),
                axis=ax / n,
                inb_to_joint=inb_to_joint if inb_to_joint is not None else Pose(),
                body_to_joint=body_to_joint if body_to_joint is not None else Pose(),
                prescribed=bool(prescribed),
            )
        )
        self._arrays = None
        return len(self.bodies) - 1

    def set_prescribed(self, body, prescribed: bool = True) -> None:
        """Mark a body's joint as prescribed (acceleration given) or free (force given)."""
        i = self.body_index(body)
        self.bodies[i].prescribed = bool(prescribed)
        if self._arrays is not None:
            self._arrays.prescribed[i] = int(bool(prescribed))

    # -- queries -------------------------------------------------------------------------
    def body_index(self, body) -> int:
        """Index of a body given by name or index."""
        if isinstance(body, (int, np.integer)):
            if not 0 <= int(body) < len(self.bodies):
                raise IndexError(f"no body {body}")
            return int(body)
        for i, b in enumerate(self.bodies):
            if b.name == body:
                return i
        raise KeyError(f"no body named {body!r}")

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.bodies]

    @property
    def n_bodies(self) -> int:
        return len(self.bodies)

    @property
    def nq(self) -> int:
        return int(sum(jt.JOINT_NQ[b.joint_type] for b in self.bodies))

    @property
    def nv(self) -> int:
        return int(sum(jt.JOINT_NV[b.joint_type] for b in self.bodies))

    def q_slice(self, body) -> slice:
        a = self.arrays
        i = self.body_index(body)
        return slice(int(a.q_start[i]), int(a.q_start[i] + jt.JOINT_NQ[a.joint_type[i]]))

    def v_slice(self, body) -> slice:
        a = self.arrays
        i = self.body_index(body)
        return slice(int(a.v_start[i]), int(a.v_start[i] + jt.JOINT_NV[a.joint_type[i]]))

    def zero_configuration(self) -> np.ndarray:
        """Q of the zero configuration (identity quaternions)."""
        return np.concatenate([jt.zero_configuration(b.joint_type) for b in self.bodies] or [np.zeros(0)])

    def subtree(self, body) -> list[int]:
        """Indices of ``body`` and all its descendants, in tree order."""
        root = self.body_index(body)
        inside = {root}
        for i in range(root + 1, len(self.bodies)):
            if self.bodies[i].parent in inside:
                inside.add(i)
        return sorted(inside)

    # -- compiled representation --------------------------------------------------------
    @property
    def arrays(self) -> TreeArrays:
        """The compiled representation (rebuilt after the tree changes)."""
        if self._arrays is None:
            self._arrays = self._build_arrays()
        return self._arrays

    def _build_arrays(self) -> TreeArrays:
        nb = len(self.bodies)
        for i, b in enumerate(self.bodies):
            if b.parent >= i:
                raise ValueError("bodies must be added after their parent")
        parent = np.array([b.parent for b in self.bodies], dtype=np.int64)
        jtype = np.array([b.joint_type for b in self.bodies], dtype=np.int64)
        nqs = jt.JOINT_NQ[jtype] if nb else np.zeros(0, dtype=np.int64)
        nvs = jt.JOINT_NV[jtype] if nb else np.zeros(0, dtype=np.int64)
        q_start = np.concatenate([[0], np.cumsum(nqs)[:-1]]).astype(np.int64) if nb else nqs
        v_start = np.concatenate([[0], np.cumsum(nvs)[:-1]]).astype(np.int64) if nb else nvs
        ints = np.zeros(N_INT_HEADER + N_INT_PER_BODY * nb, dtype=np.int64)
        reals = np.zeros(N_REAL_HEADER + N_REAL_PER_BODY * nb)
        ints[0:3] = nb, int(nqs.sum()), int(nvs.sum())
        a = unpack_tree(ints, reals)
        a.parent[:] = parent
        a.joint_type[:] = jtype
        a.q_start[:] = q_start
        a.v_start[:] = v_start
        a.prescribed[:] = [b.prescribed for b in self.bodies]
        a.gravity[:] = self.gravity_N
        for i, b in enumerate(self.bodies):
            a.joint_axis[i] = b.axis
            a.R_inb[i] = b.inb_to_joint.rotation
            a.p_inb[i] = b.inb_to_joint.translation
            a.R_bj[i] = b.body_to_joint.rotation
            a.p_bj[i] = b.body_to_joint.translation
            a.mass[i] = b.mass
            a.com[i] = b.r_CB_B
            a.inertia_C[i] = b.inertia_C_B
            a.inertia[i] = spatial_inertia(b.mass, b.r_CB_B, b.inertia_C_B)
        return a

    def copy(self) -> MultibodyTree:
        new = MultibodyTree(self.gravity_N)
        for b in self.bodies:
            new.bodies.append(
                Body(
                    b.name,
                    b.parent,
                    b.joint_type,
                    b.mass,
                    b.r_CB_B.copy(),
                    b.inertia_C_B.copy(),
                    b.axis.copy(),
                    Pose(b.inb_to_joint.rotation.copy(), b.inb_to_joint.translation.copy()),
                    Pose(b.body_to_joint.rotation.copy(), b.body_to_joint.translation.copy()),
                    b.prescribed,
                )
            )
        return new

    def __repr__(self):
        parts = [
            f"{b.name}<-{self.bodies[b.parent].name if b.parent >= 0 else 'N'}[{jt.JOINT_NAMES[b.joint_type]}]"
            for b in self.bodies
        ]
        return f"MultibodyTree(nq={self.nq}, nv={self.nv}: {', '.join(parts)})"


def as_arrays(tree) -> TreeArrays:
    """The :class:`TreeArrays` of a :class:`MultibodyTree` (or the arrays themselves)."""
    return tree.arrays if isinstance(tree, MultibodyTree) else tree


__all__ = ["Body", "MultibodyTree", "Pose", "TreeArrays", "as_arrays", "pose", "unpack_tree"]
