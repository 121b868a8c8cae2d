"""Euler-Bernoulli beam finite elements and their clamped-root modes.

The beam lies along the x axis of its frame A from the root (x = 0, clamped) to the tip
(x = ``length``), cut into ``n_elements`` equal elements. Each node carries up to six degrees
of freedom ``[ux, uy, uz, rx, ry, rz]`` (translations [m], rotations [rad] about A's axes):

=========  ============================  =====================================================
field      degrees of freedom            element
=========  ============================  =====================================================
bending y  ``uy``, ``rz = duy/dx``        Hermite cubic, stiffness ``E Iz``
bending z  ``uz``, ``ry = -duz/dx``       Hermite cubic, stiffness ``E Iy``
axial      ``ux``                         linear, stiffness ``E A``
torsion    ``rx``                         linear, stiffness ``G J``, polar inertia ``rho Ip``
=========  ============================  =====================================================

Mass matrices are consistent (the fields' own shape functions), without the sections' rotary
inertia in bending (Euler-Bernoulli); the sections' polar inertia ``rho Ip`` (``Ip = Iy + Iz``
unless given) counts in the appendage's rigid inertia about x, and in the torsion field when it
is modeled. :func:`cantilever_modes` solves ``K phi = w^2 M phi`` for the lowest modes
(Cholesky and cyclic Jacobi from :mod:`hopsim.dynamics.detlinalg`, so that the modes, like
everything downstream, are the same bits on every CPU), normalized to unit modal mass
(``phi^T M phi = 1``, each with its largest entry positive), and integrates the invariants of
:mod:`hopsim.dynamics.flexible` (``P``, ``H``, ``J1``, ``J2``, ``G``) over the elements by
4-point Gauss quadrature, exact for these polynomial fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics.flexible import ModalAppendage

UX, UY, UZ, RX, RY, RZ = range(6)
# 4-point Gauss-Legendre on [0, 1]: nodes (1 -+ sqrt(3/7 +- 2/7 sqrt(6/5))) / 2, weights (18 -+ sqrt(30)) / 72
_A = np.sqrt(3.0 / 7.0 - 2.0 / 7.0 * np.sqrt(6.0 / 5.0))
_B = np.sqrt(3.0 / 7.0 + 2.0 / 7.0 * np.sqrt(6.0 / 5.0))
_GAUSS_X = 0.5 * np.array([1.0 - _B, 1.0 - _A, 1.0 + _A, 1.0 + _B])
_GAUSS_W = np.array([18.0 - np.sqrt(30.0), 18.0 + np.sqrt(30.0), 18.0 + np.sqrt(30.0), 18.0 - np.sqrt(30.0)]) / 72.0


@dataclass
class Beam:
    """A uniform beam's finite-element model (see the module); ``dofs[node, c]`` is the global
    index of component ``c`` of a node (-1: not modeled), ``M_full``, ``K_full`` include the
    root's degrees of freedom, ``M``, ``K`` have them removed (clamped)."""

    length: float
    n_elements: int
    E: float
    rho: float
    A: float
    Iy: float
    Iz: float
    G: float
    J: float
    Ip: float
    dofs: np.ndarray
    M_full: np.ndarray
    K_full: np.ndarray

    @property
    def x_nodes(self) -> np.ndarray:
        return np.linspace(0.0, self.length, self.n_elements + 1)

    @property
    def free(self) -> np.ndarray:
        """Global indices of the non-root degrees of freedom, ascending."""
        root = set(self.dofs[0][self.dofs[0] >= 0].tolist())
        return np.array([i for i in range(self.M_full.shape[0]) if i not in root], dtype=np.int64)

    @property
    def M(self) -> np.ndarray:
        f = self.free
        return self.M_full[np.ix_(f, f)]

    @property
    def K(self) -> np.ndarray:
        f = self.free
        return self.K_full[np.ix_(f, f)]

    def dof(self, node, component) -> int:
        """Index of a node's component (``UX`` .. ``RZ``) among the clamped model's degrees of
        freedom (-1 for the root or a component not modeled)."""
        g = self.dofs[node, component]
        if g < 0 or node == 0:
            return -1
        return int(np.searchsorted(self.free, g))


def _bending(EI, rhoA, le):
    l2 = le * le
    k = (EI / (l2 * le)) * np.array(
        [
            [12.0, 6.0 * le, -12.0, 6.0 * le],
            [6.0 * le, 4.0 * l2, -6.0 * le, 2.0 * l2],
            [-12.0, -6.0 * le, 12.0, -6.0 * le],
            [6.0 * le, 2.0 * l2, -6.0 * le, 4.0 * l2],
        ]
    )
    m = (rhoA * le / 420.0) * np.array(
        [
            [156.0, 22.0 * le, 54.0, -13.0 * le],
            [22.0 * le, 4.0 * l2, 13.0 * le, -3.0 * l2],
            [54.0, 13.0 * le, 156.0, -22.0 * le],
            [-13.0 * le, -3.0 * l2, -22.0 * le, 4.0 * l2],
        ]
    )
    return k, m


def _bar(stiffness, inertia, le):
    return (stiffness / le) * np.array([[1.0, -1.0], [-1.0, 1.0]]), (inertia * le / 6.0) * np.array(
        [[2.0, 1.0], [1.0, 2.0]]
    )


def beam(
    length, n_elements, *, E, rho, A, Iy, Iz=None, G=None, J=None, Ip=None, bending="yz", axial=False, torsion=False
) -> Beam:
    """Assemble a uniform beam: ``length`` [m], ``n_elements``, Young's modulus ``E`` [Pa],
    density ``rho`` [kg/m^3], area ``A`` [m^2], second moments ``Iy``, ``Iz`` [m^4] (``Iz``
    defaults to ``Iy``), shear modulus ``G`` [Pa] and torsion constant ``J`` [m^4] (for
    ``torsion``), polar moment ``Ip`` [m^4]; ``bending``: the planes modeled, ``"y"``
    (deflection along y), ``"z"``, ``"yz"`` or ``""``."""
    Iz = Iy if Iz is None else Iz
    Ip = Iy + Iz if Ip is None else Ip
    if not (length > 0 and n_elements >= 1 and E > 0 and rho > 0 and A > 0 and Iy > 0 and Iz > 0):
        raise ValueError("the beam's length, elements, E, rho, A, Iy and Iz must be positive")
    if torsion and not (G and J and G > 0 and J > 0 and Ip > 0):
        raise ValueError("torsion needs a positive G, J and Ip")
    if set(bending) - {"y", "z"}:
        raise ValueError(f"bending must name the planes 'y' and/or 'z', got {bending!r}")
    active = []
    if axial:
        active.append(UX)
    if "y" in bending:
        active += [UY, RZ]
    if "z" in bending:
        active += [UZ, RY]
    if torsion:
        active.append(RX)
    if not active:
        raise ValueError("the beam models no field")
    active.sort()
    nn = n_elements + 1
    dofs = -np.ones((nn, 6), dtype=np.int64)
    for node in range(nn):
        for k, c in enumerate(active):
            dofs[node, c] = node * len(active) + k
    ndof = nn * len(active)
    M = np.zeros((ndof, ndof))
    K = np.zeros((ndof, ndof))
    le = length / n_elements
    kb_y, mb_y = _bending(E * Iz, rho * A, le)
    kb_z, mb_z = _bending(E * Iy, rho * A, le)
    flip = np.array([1.0, -1.0, 1.0, -1.0])  # (uz, ry) = (uz, -duz/dx)
    flip = np.outer(flip, flip)
    kb_z, mb_z = flip * kb_z, flip * mb_z
    ka, ma = _bar(E * A, rho * A, le)
    kt, mt = _bar(G * J if torsion else 0.0, rho * Ip, le)
    for e in range(n_elements):
        a, b = e, e + 1
        blocks = []
        if "y" in bending:
            blocks.append(([dofs[a, UY], dofs[a, RZ], dofs[b, UY], dofs[b, RZ]], kb_y, mb_y))
        if "z" in bending:
            blocks.append(([dofs[a, UZ], dofs[a, RY], dofs[b, UZ], dofs[b, RY]], kb_z, mb_z))
        if axial:
            blocks.append(([dofs[a, UX], dofs[b, UX]], ka, ma))
        if torsion:
            blocks.append(([dofs[a, RX], dofs[b, RX]], kt, mt))
        for idx, ke, me in blocks:
            ix = np.ix_(idx, idx)
            K[ix] += ke
            M[ix] += me
    return Beam(float(length), int(n_elements), E, rho, A, Iy, Iz, G or 0.0, J or 0.0, Ip, dofs, M, K)


def _fields(bm: Beam, modes_full: np.ndarray):
    """Gauss points along the beam: positions x [m], weights [m], the modes' translations
    (points, 3, n) and twist (points, n)."""
    n = modes_full.shape[1]
    le = bm.length / bm.n_elements
    xi = _GAUSS_X
    xi2 = xi * xi
    xi3 = xi2 * xi
    n1, n2 = 1 - 3 * xi2 + 2 * xi3, le * (xi - 2 * xi2 + xi3)
    n3, n4 = 3 * xi2 - 2 * xi3, le * (xi3 - xi2)
    ng = len(xi)
    xs = np.zeros(bm.n_elements * ng)
    ws = np.zeros(bm.n_elements * ng)
    phi = np.zeros((bm.n_elements * ng, 3, n))
    twist = np.zeros((bm.n_elements * ng, n))

    def nodal(node, c):
        g = bm.dofs[node, c]
        return modes_full[g] if g >= 0 else np.zeros(n)

    for e in range(bm.n_elements):
        a, b = e, e + 1
        s = slice(e * ng, (e + 1) * ng)
        xs[s] = (e + xi) * le
        ws[s] = _GAUSS_W * le
        phi[s, 0] = np.outer(1 - xi, nodal(a, UX)) + np.outer(xi, nodal(b, UX))
        phi[s, 1] = np.outer(n1, nodal(a, UY)) + np.outer(n2, nodal(a, RZ))
        phi[s, 1] += np.outer(n3, nodal(b, UY)) + np.outer(n4, nodal(b, RZ))
        phi[s, 2] = np.outer(n1, nodal(a, UZ)) - np.outer(n2, nodal(a, RY))
        phi[s, 2] += np.outer(n3, nodal(b, UZ)) - np.outer(n4, nodal(b, RY))
        twist[s] = np.outer(1 - xi, nodal(a, RX)) + np.outer(xi, nodal(b, RX))
    return xs, ws, phi, twist


def clamped_modes(bm: Beam, n_modes):
    """The lowest ``n_modes`` eigenpairs of ``K phi = w^2 M phi`` (clamped), ``phi^T M phi = 1``,
    each mode's largest entry positive: ``M = L L^T`` (Cholesky), the symmetric
    ``L^-1 K L^-T`` by cyclic Jacobi (:mod:`hopsim.dynamics.detlinalg`: the same bits on every
    CPU), ``phi = L^-T y``."""
    Linv = detlinalg.inv(detlinalg.cholesky(np.ascontiguousarray(bm.M)))
    LinvT = np.ascontiguousarray(Linv.T)
    A = detlinalg.matmul(detlinalg.matmul(Linv, np.ascontiguousarray(bm.K)), LinvT)
    w, Y = detlinalg.eigh_unsorted(0.5 * (A + A.T))
    order = np.argsort(w, kind="stable")[:n_modes]
    V = detlinalg.matmul(LinvT, np.ascontiguousarray(Y[:, order]))
    for i in range(n_modes):
        if V[np.argmax(np.abs(V[:, i])), i] < 0.0:
            V[:, i] = -V[:, i]
    return w[order], V


def cantilever_modes(bm: Beam, n_modes, damping=0.0, nodes=None) -> ModalAppendage:
    """The ``n_modes`` lowest modes of the beam clamped at its root, as an appendage in A about
    the root. ``damping``: one ratio for every mode or one per mode. ``nodes``: name -> node
    index (default ``{"root": 0, "tip": n_elements}``), whose rows of the mode shapes are the
    nodal matrices."""
    nf = bm.free.shape[0]
    if not 1 <= n_modes <= nf:
        raise ValueError(f"the beam has {nf} degrees of freedom; asked for {n_modes} modes")
    w2, V = clamped_modes(bm, n_modes)
    full = np.zeros((bm.M_full.shape[0], n_modes))
    full[bm.free] = V
    rhoA = bm.rho * bm.A
    rhoIp = bm.rho * bm.Ip
    L = bm.length
    xs, ws, phi, twist = _fields(bm, full)
    mass = rhoA * L
    first = np.array([0.5 * rhoA * L * L, 0.0, 0.0])
    inertia = np.diag([rhoIp * L, rhoA * L * L * L / 3.0, rhoA * L * L * L / 3.0])
    eye = np.eye(3)
    n = n_modes
    P, H = np.zeros((3, n)), np.zeros((3, n))
    J1, J2, G = np.zeros((n, 3, 3)), np.zeros((n, n, 3, 3)), np.zeros((n, 3, n))
    for g in range(len(xs)):  # the quadrature, point by point (elementwise arithmetic only)
        w = ws[g] * rhoA
        ph = phi[g]  # (3, n)
        pg = np.array([xs[g], 0.0, 0.0])
        P += w * ph
        H += w * np.cross(pg[:, None], ph, axis=0)
        H[0] += ws[g] * rhoIp * twist[g]
        pd = pg[0] * ph[0] + pg[1] * ph[1] + pg[2] * ph[2]
        J1 += w * (2.0 * pd[:, None, None] * eye - pg[None, :, None] * ph.T[:, None, :] - ph.T[:, :, None] * pg)
        dots = ph[0][:, None] * ph[0] + ph[1][:, None] * ph[1] + ph[2][:, None] * ph[2]
        outer = ph.T[:, None, :, None] * ph.T[None, :, None, :]  # [i, j, a, b] = Phi_ia Phi_jb
        J2 += w * (dots[:, :, None, None] * eye - 0.5 * (outer + outer.transpose(0, 1, 3, 2)))
        G += w * np.cross(ph.T[:, None, :], ph.T[None, :, :]).transpose(0, 2, 1)
    nodes = {"root": 0, "tip": bm.n_elements} if nodes is None else dict(nodes)
    names = tuple(nodes)
    idx = [int(nodes[k]) % (bm.n_elements + 1) for k in names]
    pos = np.zeros((len(idx), 3))
    pos[:, 0] = bm.x_nodes[idx]
    trans = np.zeros((len(idx), 3, n_modes))
    rot = np.zeros((len(idx), 3, n_modes))
    for r, node in enumerate(idx):
        for c in range(3):
            if bm.dofs[node, c] >= 0:
                trans[r, c] = full[bm.dofs[node, c]]
            if bm.dofs[node, 3 + c] >= 0:
                rot[r, c] = full[bm.dofs[node, 3 + c]]
    zeta = np.broadcast_to(np.asarray(damping, dtype=np.float64), (n_modes,)).copy()
    return ModalAppendage(
        frequency=np.sqrt(w2),
        damping=zeta,
        mass=mass,
        first_moment=first,
        inertia=inertia,
        P=P,
        H=H,
        node_names=names,
        node_positions=pos,
        node_translations=trans,
        node_rotations=rot,
        J1=J1,
        J2=0.5 * (J2 + J2.transpose(1, 0, 2, 3)),  # exact already; symmetric to the last bit
        G=G,
    )
