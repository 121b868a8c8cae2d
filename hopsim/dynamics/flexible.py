"""Modal flexible appendages on a rigid hub (hybrid coordinates).

A vehicle is a rigid hub B carrying appendages whose small elastic deformation is a sum of
modes. :mod:`hopsim.dynamics.flexible_beam` computes the modes of a clamped Euler-Bernoulli beam;
any other model's modes come in through the NPZ file described below, and
:func:`rigid_hinged_panel` makes the one-mode appendage of a rigid panel on a torsional spring.

Coordinates
-----------
The hub is a free rigid body (6 dof); the appendages' modal coordinates follow, ``N`` in all::

    Q = [r_BN_N (3), q_BN (4), eta (N)]            configuration (nq = 7 + N)
    U = [v_BN_B (3), omega_BN_B (3), etadot (N)]   velocities (nv = 6 + N)
    x = [Q; U]                                     the state (7 + N + 6 + N floats)

``r_BN_N`` [m] is the hub origin B in the inertial frame N, ``q_BN`` the attitude (scalar last,
``v_N = R(q_BN) v_B``), ``v_BN_B`` [m/s] the inertial velocity of B in B components (so the
mass matrix does not depend on the attitude), ``omega_BN_B`` [rad/s] the hub's angular velocity,
``eta`` [sqrt(kg) m] the modal coordinates (modes normalized to unit modal mass) of every
appendage in the order they were attached.

A material point of an appendage at ``p`` (in B, relative to B, undeformed) moves to
``x = p + Phi(p) eta`` [m]: the deformation is linear in ``eta``, its section rotates by
``Psi(p) eta`` [rad]. Kinetic energy, elastic energy and modal damping::

    T = 1/2 integral |v + omega x x + Phi etadot|^2 dm  (+ the sections' polar rotary inertia)
      = 1/2 U^T M(eta) U
    V = 1/2 sum_k w_k^2 eta_k^2                     D = 1/2 sum_k 2 zeta_k w_k etadot_k^2

with ``w_k`` [rad/s] the mode's frequency with the root clamped and ``zeta_k`` its damping
ratio. The mass matrix, all about B in B components::

    M = [[ m I3      -S~       P    ]        S(eta) = S0 + P eta               [kg m]
         [ S~         J(eta)   H(eta)]       J(eta) = J0 + sum_i eta_i J1_i
         [ P^T        H^T      I_N  ]]              + sum_ij eta_i eta_j J2_ij  [kg m^2]
                                             H(eta) = H0 + sum_i eta_i G_i     [sqrt(kg) m]

``m`` the total mass [kg], ``S0`` the first moment of mass and ``J0`` the inertia about B of the
undeformed vehicle, ``P = integral Phi dm`` [sqrt(kg)] and ``H0 = integral p x Phi dm`` the
translational and rotational modal participation (momentum coupling) matrices,
``J1_i = integral (2 p.Phi_i I - p Phi_i^T - Phi_i p^T) dm`` [sqrt(kg) m] and
``J2_ij = integral (Phi_i.Phi_j I - (Phi_i Phi_j^T + Phi_j Phi_i^T)/2) dm`` [-] the change of
the inertia with the deformation, and ``G_i = integral Phi_i~ Phi dm`` [-] (column ``j``:
``integral Phi_i x Phi_j dm``) the modes' gyroscopic coupling; ``a~`` is the cross-product
matrix of ``a``. Appendage data with ``J1``, ``J2``, ``G`` absent (zero) give the classical
first-order hybrid model with a constant mass matrix.

Equations of motion (Boltzmann-Hamel for the hub's body-frame velocities, Lagrange for ``eta``),
with ``p = m v + omega x S + P etadot`` and ``h = S x v + J omega + H etadot`` the linear
momentum and the angular momentum about B (in B)::

    M(eta) Udot = Q_ext + [ -omega x p - omega x (P etadot)                          ]
                          [ -omega x h - v x p - (P etadot) x v - Jdot omega - Hdot etadot ]
                          [ dT/deta - Hdot^T omega - W^2 eta - 2 Z W etadot         ]

``Jdot = sum_i etadot_i (J1_i + 2 sum_j eta_j J2_ij)``, ``Hdot = sum_i etadot_i G_i``,
``(dT/deta)_k = (v x omega).P_k + 1/2 omega^T (J1_k + 2 sum_j eta_j J2_kj) omega
+ omega^T G_k etadot``, ``W = diag(w)``, ``Z = diag(zeta)``. The kinematics are
``rdot_BN_N = R(q) v``, ``qdot = 1/2 q (x) (omega, 0)``. Without external loads the equations
conserve the inertial linear momentum ``R p`` and the angular momentum about N's origin
``R h + r_BN_N x R p``, and without damping the energy ``T + V`` (an integrator, to its
truncation error). ``Udot`` is solved by Gaussian elimination with partial
pivoting in a fixed order (:func:`hopsim.dynamics.detlinalg.solve`): no BLAS, the same bits on
every CPU.

External loads ``Q_ext``, held constant over a step (:meth:`FlexibleSpacecraft.loads` packs
them): a force ``force_B`` [N] at B and a torque ``torque_B`` [N m] (both in B components) on
the hub; a force ``f_k`` [N] and a moment ``l_k`` [N m] (in B) at each node ``k`` of the
appendages, at its deformed position ``x_k = p_k + Phi_k eta``:
``[f_k; x_k x f_k + l_k; Phi_k^T f_k + Psi_k^T l_k]``.

The compiled laws, each a numba function on the packed vehicle (:class:`FlexArrays`):
:func:`mass_matrix`, :func:`generalized_forces` (the right-hand side), :func:`state_derivative`
and :func:`rk4_step` (classical RK4, the quaternion renormalized after the step).
:class:`FlexibleSpacecraft` assembles the vehicle and calls them from Python.

Limits: the deformation field is linear in ``eta``, with no geometric (centrifugal) stiffening:
the model holds for small deflections and spin rates well below the first frequency (a spinning
boom's bending frequencies come out lowered in the spin plane and unchanged across it, where the
centrifugal tension raises both).

The NPZ file of an appendage's modes
------------------------------------
One appendage per file (:func:`save_modes`, :func:`load_modes`), in its own frame A whose origin
is the root (where it is attached), SI units, ``n`` modes, ``k`` nodes, float64 arrays:

=====================  ============  =======================================================
key                    shape         content [unit]
=====================  ============  =======================================================
``format``             ()            the string ``"hopsim-modes-1"``
``frequency``          (n,)          clamped-root natural frequencies ``w`` [rad/s], > 0
``damping``            (n,)          modal damping ratios ``zeta``, in [0, 1)
``mass``               ()            appendage mass [kg], > 0
``first_moment``       (3,)          ``integral p dm`` about the root [kg m]
``inertia``            (3, 3)        inertia about the root [kg m^2], symmetric
``P``                  (3, n)        ``integral Phi dm`` [sqrt(kg)]
``H``                  (3, n)        ``integral p x Phi dm`` about the root [sqrt(kg) m]
``node_names``         (k,)          unicode strings, unique
``node_positions``     (k, 3)        undeformed node positions [m]
``node_translations``  (k, 3, n)     ``Phi`` at the nodes [1/sqrt(kg)]
``node_rotations``     (k, 3, n)     ``Psi`` at the nodes [rad/(sqrt(kg) m)]
``J1`` (optional)      (n, 3, 3)     first-order change of the inertia [sqrt(kg) m]
``J2`` (optional)      (n, n, 3, 3)  second-order change, ``J2[i, j] = J2[j, i]`` [-]
``G`` (optional)       (n, 3, n)     ``G[i][:, j] = integral Phi_i x Phi_j dm`` [-]
=====================  ============  =======================================================

The modes are normalized to unit modal mass. :func:`load_modes` refuses (``ValueError`` naming
the key and the problem) a file with a key missing or unknown, a wrong shape, a value not finite,
a frequency not positive, a damping ratio outside [0, 1), a non-positive mass, an asymmetric
inertia or ``J2``, or a rest mass matrix ``[[m I, -S~, P], [S~, J, H], [P^T, H^T, I]]`` that is
not positive semi-definite (participation larger than the mass and inertia can carry; it is
singular, not indefinite, when a mode is a rigid motion of the appendage, as a hinged panel's).
"""

from __future__ import annotations

import zipfile
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics._jit import compiled
from hopsim.dynamics.spatial import quat_dcm_entries, quat_normalize, quat_to_dcm

FORMAT = "hopsim-modes-1"
REQUIRED_KEYS = (
    "format",
    "frequency",
    "damping",
    "mass",
    "first_moment",
    "inertia",
    "P",
    "H",
    "node_names",
    "node_positions",
    "node_translations",
    "node_rotations",
)
OPTIONAL_KEYS = ("J1", "J2", "G")


def _skew(a) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _mm(a, b) -> np.ndarray:
    """``a @ b`` by :func:`hopsim.dynamics.detlinalg.matmul` (the same bits on every CPU)."""
    return detlinalg.matmul(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64))


def _dot(a, b) -> float:
    return float(detlinalg.dot(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)))


@dataclass
class ModalAppendage:
    """The modes of one appendage in its frame A (origin at the root), about the root; keys,
    shapes and units as in the module's NPZ table."""

    frequency: np.ndarray
    damping: np.ndarray
    mass: float
    first_moment: np.ndarray
    inertia: np.ndarray
    P: np.ndarray
    H: np.ndarray
    node_names: tuple = ()
    node_positions: np.ndarray = None
    node_translations: np.ndarray = None
    node_rotations: np.ndarray = None
    J1: np.ndarray = None
    J2: np.ndarray = None
    G: np.ndarray = None

    def __post_init__(self):
        n = len(np.atleast_1d(self.frequency))
        k = len(self.node_names)
        self.node_names = tuple(str(s) for s in self.node_names)
        if self.node_positions is None:
            self.node_positions = np.zeros((k, 3))
        if self.node_translations is None:
            self.node_translations = np.zeros((k, 3, n))
        if self.node_rotations is None:
            self.node_rotations = np.zeros((k, 3, n))
        if self.J1 is None:
            self.J1 = np.zeros((n, 3, 3))
        if self.J2 is None:
            self.J2 = np.zeros((n, n, 3, 3))
        if self.G is None:
            self.G = np.zeros((n, 3, n))
        _check(self.as_dict())

    @property
    def n_modes(self) -> int:
        return len(self.frequency)

    def node(self, name) -> int:
        """Index of the node called ``name``."""
        if name not in self.node_names:
            raise ValueError(f"no node named {name!r}; the nodes are {list(self.node_names)}")
        return self.node_names.index(name)

    def as_dict(self) -> dict:
        """The NPZ keys and their arrays."""
        return {
            "format": np.array(FORMAT),
            "frequency": np.asarray(self.frequency, dtype=np.float64),
            "damping": np.asarray(self.damping, dtype=np.float64),
            "mass": np.asarray(self.mass, dtype=np.float64),
            "first_moment": np.asarray(self.first_moment, dtype=np.float64),
            "inertia": np.asarray(self.inertia, dtype=np.float64),
            "P": np.asarray(self.P, dtype=np.float64),
            "H": np.asarray(self.H, dtype=np.float64),
            "node_names": np.array(self.node_names, dtype=str).reshape(len(self.node_names)),
            "node_positions": np.asarray(self.node_positions, dtype=np.float64),
            "node_translations": np.asarray(self.node_translations, dtype=np.float64),
            "node_rotations": np.asarray(self.node_rotations, dtype=np.float64),
            "J1": np.asarray(self.J1, dtype=np.float64),
            "J2": np.asarray(self.J2, dtype=np.float64),
            "G": np.asarray(self.G, dtype=np.float64),
        }


def _check(d: dict) -> None:
    """Refuse inconsistent mode data with a ValueError naming the key and the problem."""
    missing = [key for key in REQUIRED_KEYS if key not in d]
    if missing:
        raise ValueError(f"mode data: missing key(s) {missing}")
    unknown = sorted(set(d) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise ValueError(f"mode data: unknown key(s) {unknown}")
    if str(d["format"]) != FORMAT:
        raise ValueError(f"mode data: format is {str(d['format'])!r}, expected {FORMAT!r}")
    freq = np.asarray(d["frequency"])
    if freq.ndim != 1 or freq.size == 0:
        raise ValueError(f"mode data: 'frequency' must have shape (n,) with n >= 1, got {freq.shape}")
    n = freq.shape[0]
    names = np.asarray(d["node_names"])
    if names.ndim != 1 or (names.size and names.dtype.kind != "U"):
        raise ValueError(f"mode data: 'node_names' must be a 1-D array of strings, got {names.dtype} {names.shape}")
    k = names.shape[0]
    if len(set(names.tolist())) != k:
        raise ValueError("mode data: 'node_names' are not unique")
    shapes = {
        "frequency": (n,),
        "damping": (n,),
        "mass": (),
        "first_moment": (3,),
        "inertia": (3, 3),
        "P": (3, n),
        "H": (3, n),
        "node_positions": (k, 3),
        "node_translations": (k, 3, n),
        "node_rotations": (k, 3, n),
        "J1": (n, 3, 3),
        "J2": (n, n, 3, 3),
        "G": (n, 3, n),
    }
    for key, shape in shapes.items():
        if key not in d:
            continue
        a = np.asarray(d[key])
        if a.dtype.kind not in "fiu":
            raise ValueError(f"mode data: {key!r} must be numeric, got dtype {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"mode data: {key!r} must have shape {shape}, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"mode data: {key!r} has values that are not finite (NaN or inf)")
    if not np.all(freq > 0.0):
        raise ValueError(f"mode data: 'frequency' must be positive [rad/s], got {freq[freq <= 0.0].tolist()}")
    zeta = np.asarray(d["damping"])
    if not np.all((zeta >= 0.0) & (zeta < 1.0)):
        raise ValueError(f"mode data: 'damping' ratios must lie in [0, 1), got {zeta.tolist()}")
    if not float(d["mass"]) > 0.0:
        raise ValueError(f"mode data: 'mass' must be positive [kg], got {float(d['mass'])}")
    inertia = np.asarray(d["inertia"], dtype=np.float64)
    if np.abs(inertia - inertia.T).max() > 1e-12 * max(np.abs(inertia).max(), 1e-300):
        raise ValueError("mode data: 'inertia' is not symmetric")
    if "J2" in d:
        J2 = np.asarray(d["J2"], dtype=np.float64)
        tol = 1e-12 * max(np.abs(J2).max(), 1e-300)
        if np.abs(J2 - J2.transpose(1, 0, 2, 3)).max() > tol or np.abs(J2 - J2.transpose(0, 1, 3, 2)).max() > tol:
            raise ValueError("mode data: 'J2' must be symmetric in its two mode indices and its 3x3 blocks")
    m = float(d["mass"])
    S = _skew(np.asarray(d["first_moment"], dtype=np.float64))
    P = np.asarray(d["P"], dtype=np.float64)
    H = np.asarray(d["H"], dtype=np.float64)
    M0 = np.zeros((6 + n, 6 + n))
    M0[0:3, 0:3] = m * np.eye(3)
    M0[0:3, 3:6] = -S
    M0[3:6, 0:3] = S
    M0[3:6, 3:6] = 0.5 * (inertia + inertia.T)
    M0[0:3, 6:] = P
    M0[3:6, 6:] = H
    M0[6:, 0:3] = P.T
    M0[6:, 3:6] = H.T
    M0[6:, 6:] = np.eye(n)
    lowest = float(detlinalg.eigvalsh(M0)[0])
    if not lowest >= -1e-10 * max(m, float(np.abs(inertia).max()), 1.0):
        raise ValueError(
            "mode data: the rest mass matrix [[m I, -S~, P], [S~, J, H], [P^T, H^T, I]] is not positive "
            f"semi-definite (lowest eigenvalue {lowest:.3g}): 'P' and 'H' exceed what 'mass' and 'inertia' can carry"
        )


def save_modes(path, appendage: ModalAppendage) -> Path:
    """Write ``appendage`` to the NPZ file ``path`` (the module's format); returns the path."""
    path = Path(path)
    with open(path, "wb") as f:
        np.savez(f, **appendage.as_dict())
    return path


def load_modes(path) -> ModalAppendage:
    """Read an appendage's modes from the NPZ file ``path``, checked (see the module's format)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file")
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a single array, not an archive of named arrays")
        with z:
            d = {key: z[key] for key in z.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as err:  # ValueError: object arrays too
        raise ValueError(f"{path}: not a readable NPZ file of arrays ({err})") from None
    try:
        _check(d)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    fields = {key: d[key] for key in d if key != "format"}
    fields["mass"] = float(fields["mass"])
    fields["node_names"] = tuple(fields["node_names"].tolist())
    return ModalAppendage(**fields)


def rigid_hinged_panel(mass, inertia_C, r_C, axis, stiffness, damping=0.0, nodes=None) -> ModalAppendage:
    """The one-mode appendage of a rigid panel turning about a hinge line through the root.

    ``mass`` [kg], ``inertia_C`` [kg m^2] about the panel's centre of mass at ``r_C`` [m], the
    hinge's unit ``axis``, all in A; a torsional spring ``stiffness`` [N m/rad] and damper
    ``damping`` [N m s/rad] at the hinge. With ``mu`` the panel's inertia about the hinge line,
    the mode is the rotation ``theta = eta / sqrt(mu)`` about ``axis``: ``Phi(y) = b x y``,
    ``Psi = b``, ``b = axis / sqrt(mu)``, ``w = sqrt(stiffness / mu)``,
    ``zeta = damping / (2 sqrt(stiffness mu))``. The displacement is linear in the angle (the
    small-angle panel). ``nodes``: name -> position in A [m]."""
    m = float(mass)
    c = np.asarray(r_C, dtype=np.float64)
    Ic = np.asarray(inertia_C, dtype=np.float64)
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.sqrt(_dot(a, a))
    J0 = Ic + m * (_dot(c, c) * np.eye(3) - np.outer(c, c))  # inertia about the hinge point
    mu = _dot(a, _mm(J0, a))
    b = a / np.sqrt(mu)
    E = 0.5 * (Ic[0, 0] + Ic[1, 1] + Ic[2, 2]) * np.eye(3) - Ic + m * np.outer(c, c)  # integral y y^T dm
    bx = _skew(b)
    bEb = _mm(_mm(bx, E), bx.T)
    nodes = nodes or {}
    pos = np.array([np.asarray(p, dtype=np.float64) for p in nodes.values()]).reshape(len(nodes), 3)
    return ModalAppendage(
        frequency=np.array([np.sqrt(stiffness / mu)]),
        damping=np.array([damping / (2.0 * np.sqrt(stiffness * mu))]),
        mass=m,
        first_moment=m * c,
        inertia=J0,
        P=(m * np.cross(b, c)).reshape(3, 1),
        H=_mm(J0, b).reshape(3, 1),
        node_names=tuple(nodes),
        node_positions=pos,
        node_translations=np.cross(b, pos).reshape(len(nodes), 3, 1),
        node_rotations=np.tile(b, (len(nodes), 1)).reshape(len(nodes), 3, 1),
        J1=(_mm(E, bx) - _mm(bx, E)).reshape(1, 3, 3),
        J2=((bEb[0, 0] + bEb[1, 1] + bEb[2, 2]) * np.eye(3) - bEb).reshape(1, 1, 3, 3),
        G=np.zeros((1, 3, 1)),
    )


def attached(appendage: ModalAppendage, R_BA, r_AB_B) -> ModalAppendage:
    """The same appendage's data in the hub frame B about B: A's axes ``R_BA`` (``v_B = R_BA
    v_A``) and its root at ``r_AB_B`` [m]."""
    R = np.asarray(R_BA, dtype=np.float64)
    r = np.asarray(r_AB_B, dtype=np.float64)
    n, k = appendage.n_modes, len(appendage.node_names)
    m = appendage.mass
    S = _mm(R, appendage.first_moment)
    P = _mm(R, appendage.P)
    J0 = _mm(_mm(R, appendage.inertia), R.T) + m * (_dot(r, r) * np.eye(3) - np.outer(r, r))
    J0 += 2.0 * _dot(r, S) * np.eye(3) - np.outer(r, S) - np.outer(S, r)
    J1 = np.zeros((n, 3, 3))
    J2 = np.zeros((n, n, 3, 3))
    G = np.zeros((n, 3, n))
    for i in range(n):
        J1[i] = _mm(_mm(R, appendage.J1[i]), R.T)
        J1[i] += 2.0 * _dot(r, P[:, i]) * np.eye(3) - np.outer(r, P[:, i]) - np.outer(P[:, i], r)
        G[i] = _mm(R, appendage.G[i])
        for j in range(n):
            J2[i, j] = _mm(_mm(R, appendage.J2[i, j]), R.T)
    translations = np.zeros((k, 3, n))
    rotations = np.zeros((k, 3, n))
    for row in range(k):
        translations[row] = _mm(R, appendage.node_translations[row])
        rotations[row] = _mm(R, appendage.node_rotations[row])
    return ModalAppendage(
        frequency=appendage.frequency.copy(),
        damping=appendage.damping.copy(),
        mass=m,
        first_moment=m * r + S,
        inertia=0.5 * (J0 + J0.T),
        P=P,
        H=_mm(R, appendage.H) + np.cross(r, P, axis=0),
        node_names=appendage.node_names,
        node_positions=r + _mm(appendage.node_positions.reshape(k, 3), R.T),
        node_translations=translations,
        node_rotations=rotations,
        J1=J1,
        J2=J2,
        G=G,
    )


FlexArrays = namedtuple(
    "FlexArrays",
    [
        "mass",  # (1,) total mass [kg]
        "S0",  # (3,) first moment about B at rest [kg m]
        "J0",  # (3, 3) inertia about B at rest [kg m^2]
        "P",  # (3, N)
        "H0",  # (3, N)
        "J1",  # (N, 3, 3)
        "J2",  # (N, N, 3, 3)
        "G",  # (N, 3, N)
        "omega",  # (N,) [rad/s]
        "zeta",  # (N,)
        "node_pos",  # (K, 3) nodes of every appendage, in B [m]
        "node_T",  # (K, 3, N) Phi at the nodes
        "node_R",  # (K, 3, N) Psi at the nodes
    ],
)
"""The whole vehicle in B about B (modes of different appendages do not couple: their cross
blocks are zero), as views into one packed float64 buffer ``[N, K, mass, S0, J0, P, H0, J1, J2,
G, omega, zeta, node_pos, node_T, node_R]`` (each field row-major), which is what the compiled
laws take (:func:`unpack_vehicle` rebuilds the views). The loads are packed the same way:
``[force_B (3), torque_B (3), node forces (K*3), node moments (K*3)]``."""


@compiled
def unpack_vehicle(vehicle):
    """The :class:`FlexArrays` views of a packed vehicle buffer."""
    n = int(vehicle[0])
    k = int(vehicle[1])
    o = 3
    S0 = vehicle[o : o + 3]
    o += 3
    J0 = vehicle[o : o + 9].reshape((3, 3))
    o += 9
    P = vehicle[o : o + 3 * n].reshape((3, n))
    o += 3 * n
    H0 = vehicle[o : o + 3 * n].reshape((3, n))
    o += 3 * n
    J1 = vehicle[o : o + 9 * n].reshape((n, 3, 3))
    o += 9 * n
    J2 = vehicle[o : o + 9 * n * n].reshape((n, n, 3, 3))
    o += 9 * n * n
    G = vehicle[o : o + 3 * n * n].reshape((n, 3, n))
    o += 3 * n * n
    omega = vehicle[o : o + n]
    o += n
    zeta = vehicle[o : o + n]
    o += n
    node_pos = vehicle[o : o + 3 * k].reshape((k, 3))
    o += 3 * k
    node_T = vehicle[o : o + 3 * k * n].reshape((k, 3, n))
    o += 3 * k * n
    node_R = vehicle[o : o + 3 * k * n].reshape((k, 3, n))
    return FlexArrays(vehicle[2:3], S0, J0, P, H0, J1, J2, G, omega, zeta, node_pos, node_T, node_R)


@dataclass
class Attachment:
    name: str
    appendage: ModalAppendage  # in B about B
    modes: slice
    nodes: slice


@dataclass
class FlexibleSpacecraft:
    """A rigid hub with modal appendages (see the module's coordinates and equations).

    ``hub_mass`` [kg], the hub's centre of mass ``hub_r_CB_B`` [m] and its inertia about it
    ``hub_inertia_C_B`` [kg m^2]; :meth:`attach` adds appendages."""

    hub_mass: float
    hub_r_CB_B: np.ndarray
    hub_inertia_C_B: np.ndarray
    attachments: list = field(default_factory=list)

    def __post_init__(self):
        self.hub_r_CB_B = np.asarray(self.hub_r_CB_B, dtype=np.float64)
        self.hub_inertia_C_B = np.asarray(self.hub_inertia_C_B, dtype=np.float64)
        self._packed = None

    def attach(self, name, appendage: ModalAppendage, R_BA=None, r_AB_B=(0.0, 0.0, 0.0)) -> Attachment:
        """Attach ``appendage`` with its frame A at ``R_BA``, ``r_AB_B`` [m] on the hub."""
        if any(a.name == name for a in self.attachments):
            raise ValueError(f"an appendage named {name!r} is already attached")
        app = attached(appendage, np.eye(3) if R_BA is None else R_BA, r_AB_B)
        n0 = self.n_modes
        att = Attachment(
            name, app, slice(n0, n0 + app.n_modes), slice(self.n_nodes, self.n_nodes + len(app.node_names))
        )
        self.attachments.append(att)
        self._packed = None
        return att

    @property
    def n_modes(self) -> int:
        return sum(a.appendage.n_modes for a in self.attachments)

    @property
    def n_nodes(self) -> int:
        return sum(len(a.appendage.node_names) for a in self.attachments)

    @property
    def nq(self) -> int:
        return 7 + self.n_modes

    @property
    def nv(self) -> int:
        return 6 + self.n_modes

    def attachment(self, name) -> Attachment:
        for a in self.attachments:
            if a.name == name:
                return a
        raise ValueError(f"no appendage named {name!r}")

    def node_index(self, appendage, node) -> int:
        """Row of ``node`` (a name) of ``appendage`` (a name) in the vehicle's node arrays."""
        att = self.attachment(appendage)
        return att.nodes.start + att.appendage.node(node)

    @property
    def packed(self) -> np.ndarray:
        """The vehicle's packed buffer (see :class:`FlexArrays`)."""
        if self._packed is None:
            n, k = self.n_modes, self.n_nodes
            c, mh = self.hub_r_CB_B, float(self.hub_mass)
            mass = mh
            S0 = mh * c
            J0 = self.hub_inertia_C_B + mh * (_dot(c, c) * np.eye(3) - np.outer(c, c))
            P, H0 = np.zeros((3, n)), np.zeros((3, n))
            J1, J2, G = np.zeros((n, 3, 3)), np.zeros((n, n, 3, 3)), np.zeros((n, 3, n))
            omega, zeta = np.zeros(n), np.zeros(n)
            pos, T, R = np.zeros((k, 3)), np.zeros((k, 3, n)), np.zeros((k, 3, n))
            for a in self.attachments:
                app, s, ks = a.appendage, a.modes, a.nodes
                mass += app.mass
                S0 = S0 + app.first_moment
                J0 = J0 + app.inertia
                P[:, s], H0[:, s] = app.P, app.H
                J1[s], J2[s, s], G[s, :, s] = app.J1, app.J2, app.G
                omega[s], zeta[s] = app.frequency, app.damping
                pos[ks], T[ks, :, s], R[ks, :, s] = app.node_positions, app.node_translations, app.node_rotations
            fields = (S0, 0.5 * (J0 + J0.T), P, H0, J1, J2, G, omega, zeta, pos, T, R)
            self._packed = np.concatenate([[n, k, mass], *(np.ravel(f) for f in fields)])
        return self._packed

    @property
    def arrays(self) -> FlexArrays:
        """Named views of :attr:`packed`."""
        return unpack_vehicle(self.packed)

    # ------------------------------------------------------------------ states and loads

    def pack_state(
        self, r_BN_N=(0, 0, 0), q_BN=(0, 0, 0, 1), eta=None, v_BN_B=(0, 0, 0), omega_BN_B=(0, 0, 0), etadot=None
    ):
        """The state ``[Q; U]``; the quaternion is normalized (w >= 0), ``eta`` and ``etadot``
        default to zero."""
        n = self.n_modes
        x = np.zeros(self.nq + self.nv)
        x[0:3] = r_BN_N
        x[3:7] = quat_normalize(np.asarray(q_BN, dtype=np.float64))
        x[7 : 7 + n] = np.zeros(n) if eta is None else eta
        x[7 + n : 10 + n] = v_BN_B
        x[10 + n : 13 + n] = omega_BN_B
        x[13 + n :] = np.zeros(n) if etadot is None else etadot
        return x

    def loads(self, force_B=None, torque_B=None, node_forces_B=None, node_moments_B=None) -> np.ndarray:
        """The packed loads of :meth:`rk4` (zeros where not given): a force [N] at B and a torque
        [N m] on the hub, and one force [N] and moment [N m] per node (rows in the vehicle's node
        order, :meth:`node_index`), all in B components."""
        k = self.n_nodes
        parts = []
        for a, size in ((force_B, 3), (torque_B, 3), (node_forces_B, 3 * k), (node_moments_B, 3 * k)):
            parts.append(np.zeros(size) if a is None else np.asarray(a, dtype=np.float64).reshape(size))
        return np.concatenate(parts)

    # ------------------------------------------------------------------ the laws, from Python

    def mass_matrix(self, eta) -> np.ndarray:
        return mass_matrix(self.packed, np.ascontiguousarray(eta, dtype=np.float64))

    def derivative(self, x, loads=None) -> np.ndarray:
        loads = self.loads() if loads is None else loads
        return state_derivative(np.asarray(x, dtype=np.float64), self.packed, loads)

    def rk4(self, x, h, n_steps=1, loads=None) -> np.ndarray:
        """``n_steps`` steps of :func:`rk4_step` (``h`` [s], the loads held) from ``x``; returns
        the ``(n_steps + 1, len(x))`` states (the first is ``x``)."""
        loads = np.ascontiguousarray(self.loads() if loads is None else loads, dtype=np.float64)
        vehicle, h = self.packed, float(h)
        out = np.empty((int(n_steps) + 1, len(x)))
        out[0] = x
        for s in range(int(n_steps)):
            out[s + 1] = rk4_step(out[s], h, vehicle, loads)
        return out

    def split(self, x):
        """``(r_BN_N, q_BN, eta, v_BN_B, omega_BN_B, etadot)`` of a state (or of states, rows)."""
        n = self.n_modes
        return tuple(np.split(np.asarray(x), [3, 7, 7 + n, 10 + n, 13 + n], axis=-1))

    def momentum(self, x):
        """Inertial linear momentum [kg m/s] and angular momentum about N's origin [kg m^2/s],
        both in N components."""
        r, q, eta, v, w, etadot = self.split(x)
        Mu = _mm(self.mass_matrix(eta), np.concatenate([v, w, etadot]))
        R = quat_to_dcm(q)
        p_N = _mm(R, Mu[0:3])
        return p_N, _mm(R, Mu[3:6]) + np.cross(r, p_N)

    def energy(self, x) -> float:
        """Kinetic plus elastic energy [J]."""
        _, _, eta, v, w, etadot = self.split(x)
        u = np.concatenate([v, w, etadot])
        we = self.arrays.omega * eta
        return 0.5 * _dot(u, _mm(self.mass_matrix(eta), u)) + 0.5 * _dot(we, we)

    def node_displacement(self, x, appendage, node):
        """Elastic translation [m] and rotation [rad] of a node relative to the hub, in B."""
        k = self.node_index(appendage, node)
        eta = self.split(x)[2]
        a = self.arrays
        return _mm(a.node_T[k], eta), _mm(a.node_R[k], eta)

    def node_position_N(self, x, appendage, node) -> np.ndarray:
        """Inertial position of a node [m], in N."""
        k = self.node_index(appendage, node)
        r, q, eta = self.split(x)[0:3]
        a = self.arrays
        return r + _mm(quat_to_dcm(q), a.node_pos[k] + _mm(a.node_T[k], eta))


# --------------------------------------------------------------------------- compiled laws


@compiled
def mass_matrix(vehicle, eta):
    """The mass matrix ``M(eta)`` (nv x nv, nv = 6 + N) of the velocities ``[v_BN_B, omega_BN_B,
    etadot]``, in B about B [kg, kg m, kg m^2, sqrt(kg), sqrt(kg) m, -]."""
    a = unpack_vehicle(vehicle)
    n = eta.shape[0]
    M = np.zeros((6 + n, 6 + n))
    S = a.S0.copy()
    J = a.J0.copy()
    H = a.H0.copy()
    for i in range(n):
        e = eta[i]
        for r in range(3):
            S[r] += a.P[r, i] * e
            for c in range(3):
                J[r, c] += a.J1[i, r, c] * e
            for j in range(n):
                H[r, j] += a.G[i, r, j] * e
    for i in range(n):
        for j in range(n):
            e = eta[i] * eta[j]
            for r in range(3):
                for c in range(3):
                    J[r, c] += a.J2[i, j, r, c] * e
    for r in range(3):
        M[r, r] = a.mass[0]
    # -S~ in the (v, omega) block, S~ in the (omega, v) block
    M[0, 4], M[0, 5] = S[2], -S[1]
    M[1, 3], M[1, 5] = -S[2], S[0]
    M[2, 3], M[2, 4] = S[1], -S[0]
    for r in range(3):
        for c in range(3):
            M[3 + c, r] = M[r, 3 + c]
            M[3 + r, 3 + c] = J[r, c]
    for i in range(n):
        for r in range(3):
            M[r, 6 + i] = a.P[r, i]
            M[6 + i, r] = a.P[r, i]
            M[3 + r, 6 + i] = H[r, i]
            M[6 + i, 3 + r] = H[r, i]
        M[6 + i, 6 + i] = 1.0
    return M


@compiled
def _cross_into(out, a, b):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@compiled
def generalized_forces(vehicle, M, eta, u, loads):
    """The right-hand side ``F`` of ``M(eta) Udot = F`` (nv): the external ``loads`` (packed),
    the velocity terms and the modal springs and dampers (the module's equations) [N, N m,
    sqrt(kg) m/s^2]. ``M`` is ``M(eta)``; ``u = [v_BN_B, omega_BN_B, etadot]``."""
    a = unpack_vehicle(vehicle)
    P, J1, J2, G = a.P, a.J1, a.J2, a.G
    n = eta.shape[0]
    nv = 6 + n
    nk = a.node_pos.shape[0]
    v = u[0:3]
    w = u[3:6]
    ed = u[6:]
    F = np.zeros(nv)
    p = np.zeros(3)  # linear momentum, M_v u
    h = np.zeros(3)  # angular momentum about B, M_omega u
    Ped = np.zeros(3)  # P etadot
    for r in range(3):
        for c in range(nv):
            p[r] += M[r, c] * u[c]
            h[r] += M[3 + r, c] * u[c]
        for i in range(n):
            Ped[r] += P[r, i] * ed[i]
    # dJ/deta_k = J1_k + 2 sum_j eta_j J2_kj, times omega; G_k etadot; G_k^T omega
    Jw = np.zeros((n, 3))
    Ge = np.zeros((n, 3))
    GTw = np.zeros((n, n))
    for k in range(n):
        for r in range(3):
            for c in range(3):
                d = J1[k, r, c]
                for j in range(n):
                    d += 2.0 * J2[k, j, r, c] * eta[j]
                Jw[k, r] += d * w[c]
            for j in range(n):
                Ge[k, r] += G[k, r, j] * ed[j]
                GTw[k, j] += G[k, r, j] * w[r]
    Jdw = np.zeros(3)  # Jdot omega
    Hde = np.zeros(3)  # Hdot etadot
    for i in range(n):
        for r in range(3):
            Jdw[r] += ed[i] * Jw[i, r]
            Hde[r] += ed[i] * Ge[i, r]
    t1 = np.empty(3)
    t2 = np.empty(3)
    t3 = np.empty(3)
    t4 = np.empty(3)
    t5 = np.empty(3)
    _cross_into(t1, w, p)
    _cross_into(t2, w, Ped)
    _cross_into(t3, w, h)
    _cross_into(t4, v, p)
    _cross_into(t5, Ped, v)
    for r in range(3):
        F[r] = loads[r] - t1[r] - t2[r]
        F[3 + r] = loads[3 + r] - t3[r] - t4[r] - t5[r] - Jdw[r] - Hde[r]
    _cross_into(t1, v, w)
    for k in range(n):
        dT = 0.0  # dT/deta_k
        for r in range(3):
            dT += t1[r] * P[r, k] + 0.5 * w[r] * Jw[k, r] + w[r] * Ge[k, r]
        Hdw = 0.0  # (Hdot^T omega)_k
        for i in range(n):
            Hdw += ed[i] * GTw[i, k]
        F[6 + k] = dT - Hdw - a.omega[k] * a.omega[k] * eta[k] - 2.0 * a.zeta[k] * a.omega[k] * ed[k]
    # node loads at the deformed nodes
    f = np.empty(3)
    m = np.empty(3)
    xk = np.empty(3)
    for k in range(nk):
        any_load = False
        for r in range(3):
            f[r] = loads[6 + 3 * k + r]
            m[r] = loads[6 + 3 * nk + 3 * k + r]
            any_load = any_load or f[r] != 0.0 or m[r] != 0.0
        if not any_load:
            continue
        for r in range(3):
            xk[r] = a.node_pos[k, r]
            for i in range(n):
                xk[r] += a.node_T[k, r, i] * eta[i]
        _cross_into(t1, xk, f)
        for r in range(3):
            F[r] += f[r]
            F[3 + r] += t1[r] + m[r]
        for i in range(n):
            for r in range(3):
                F[6 + i] += a.node_T[k, r, i] * f[r] + a.node_R[k, r, i] * m[r]
    return F


@compiled
def state_derivative(x, vehicle, loads):
    """``xdot`` of the state ``[r_BN_N, q_BN, eta, v_BN_B, omega_BN_B, etadot]``:
    ``[R v, 1/2 q (x) (omega, 0), etadot, M^-1 F]`` [m/s, 1/s, sqrt(kg) m/s, m/s^2, rad/s^2,
    sqrt(kg) m/s^2]."""
    n = int(vehicle[0])
    nq = 7 + n
    eta = x[7:nq]
    u = x[nq:]
    M = mass_matrix(vehicle, eta)
    udot = detlinalg.solve(M, generalized_forces(vehicle, M, eta, u, loads))
    qx, qy, qz, qw = x[3], x[4], x[5], x[6]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_dcm_entries(qx, qy, qz, qw)
    ox, oy, oz = u[3], u[4], u[5]
    xd = np.empty(x.shape[0])
    xd[0] = r00 * u[0] + r01 * u[1] + r02 * u[2]
    xd[1] = r10 * u[0] + r11 * u[1] + r12 * u[2]
    xd[2] = r20 * u[0] + r21 * u[1] + r22 * u[2]
    # qdot = 1/2 q (x) (omega, 0), as spatial.quat_rate
    xd[3] = 0.5 * (qw * ox + qy * oz - qz * oy)
    xd[4] = 0.5 * (qw * oy + qz * ox - qx * oz)
    xd[5] = 0.5 * (qw * oz + qx * oy - qy * ox)
    xd[6] = -0.5 * (qx * ox + qy * oy + qz * oz)
    for i in range(n):
        xd[7 + i] = u[6 + i]
    for i in range(6 + n):
        xd[nq + i] = udot[i]
    return xd


@compiled
def rk4_step(x, h, vehicle, loads):
    """One classical RK4 step of ``h`` [s] (the loads held), the quaternion renormalized after it
    (``w >= 0``)."""
    half = 0.5 * h
    k1 = state_derivative(x, vehicle, loads)
    k2 = state_derivative(x + half * k1, vehicle, loads)
    k3 = state_derivative(x + half * k2, vehicle, loads)
    k4 = state_derivative(x + h * k3, vehicle, loads)
    out = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    # renormalize the quaternion, w >= 0 (as spatial.quat_normalize)
    norm = np.sqrt(out[3] * out[3] + out[4] * out[4] + out[5] * out[5] + out[6] * out[6])
    if out[6] < 0.0:
        norm = -norm
    for i in range(3, 7):
        out[i] = out[i] / norm
    return out
