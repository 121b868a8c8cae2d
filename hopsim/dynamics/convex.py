"""Penalty unilateral contact between convex shapes: narrow phase and the contact law.

Shapes
------
Every shape is a set of body-frame vertices (its *core*) grown by a radius (its *margin*): a
sphere is one vertex with its radius, a capsule the two ends of its axis (body z, half length
``h``) with its radius, a box its eight corners (half extents ``a, b, c``) and a convex hull its
vertices, both with margin 0. A plane is the half-space ``z_B <= 0`` of its body frame (its
outward normal is the body z axis). :func:`sphere`, :func:`capsule`, :func:`box`,
:func:`convex_hull` and :func:`plane` build the :class:`ConvexShape` record. A pose is the
rotation ``R`` (body to inertial, ``v_N = R v_B``) and the position ``p`` [m] of the body origin
in the inertial frame N.

Conventions of a contact (:func:`collide`)
-------------------------------------------
* ``distance`` [m] is signed: the separation when positive, minus the penetration depth when
  negative (as coal's ``penetration_depth`` and MuJoCo's ``dist``).
* ``normal`` (unit, in N) points from shape A to shape B: moving B by ``-distance * normal``
  (or A by the opposite) makes the shapes touch.
* ``points`` (up to 4, in N) lie midway between the two surfaces along the normal, each with its
  own signed ``gaps`` [m] (the local separation along the normal at that point; the deepest equals
  ``distance`` for every exact contact). Separated shapes report one point, midway between their
  closest points.

Narrow phase
------------
* Plane against any shape: exact; every core vertex below ``margin`` of the plane is a point.
* Box against box: the separating-axis test over the 15 axes (3 + 3 face normals, 9 edge
  cross products) gives the exact depth and normal in penetration (face axes preferred on a tie);
  separated boxes go to GJK, exact for polytopes.
* Everything else: GJK on the cores (Johnson's subalgorithm over the subsets of the simplex)
  gives their distance; minus the margins it is the distance of the shapes, and when it is below
  the sum of the margins the penetration is ``rA + rB - d`` along the cores' closest points. When
  the cores themselves overlap, EPA on their Minkowski difference gives the core depth, and the
  depth of the shapes adds the margins (the difference of the grown shapes is the core difference
  grown by ``rA + rB``). Both terminate on polytope faces, so they are exact to rounding.
* Manifold: the features of each shape that support the normal (its core vertices within
  ``FEATURE_TOLERANCE`` of the shape's size below its extreme along the normal) are clipped
  against each other: an incident feature (vertex, edge or face) against the side planes of a
  reference face (Sutherland-Hodgman), an edge against a parallel edge by its end planes, crossing
  edges at their closest points; points above the reference face are dropped and more than four
  are reduced to four (the deepest, the farthest from it, then the largest triangle on each side).

Penalty law (:func:`penalty_force`), per point
----------------------------------------------
With ``u`` the velocity of B's material point relative to A's, ``g`` the gap and
``g_dot = u . n`` (positive when separating; the rotation of the normal is neglected), the
penetration is ``delta = -g`` and the force on B (A receives its negative) is::

    F_n = max(0, K delta + C delta_dot) n          (only when delta > 0; never pulls)
    u_t = u - (u . n) n,   s = u_t / max(|u_t|, v_gate)        (v_gate = 1e-5 m/s)
    F_t = -|F_n| (mu_1 (s . e_1) e_1 + mu_2 (s . e_2) e_2)

with ``e_1`` the friction axis projected on the tangent plane and ``e_2 = n x e_1``. Equal
coefficients give isotropic Coulomb friction; below the gate the friction is a linear
(regularized) stick. This is the Ndarts law with ``mu = mu_2`` and an eccentricity of
``mu_1 / mu_2`` along ``e_1``; Ndarts writes the normal force along the unit normal relative
velocity, whose sign flips with the approach direction: the force here always pushes along ``n``.
:func:`penalty_wrenches` sums the forces of a manifold into the wrench on each body about its
centre of mass (angular first, inertial frame), equal and opposite.
"""

from typing import NamedTuple

import numpy as np

from hopsim.dynamics._jit import compiled, compiled_borrowing
from hopsim.dynamics.contact import point_velocity
from hopsim.dynamics.spatial import cross3, quat_to_dcm

SPHERE = 0
CAPSULE = 1
BOX = 2
HULL = 3
PLANE = 4

MAX_POINTS = 4
FEATURE_TOLERANCE = 1e-6
"""Core vertices within this fraction of the shapes' size below a shape's extreme along the
normal belong to its contact feature."""
FRICTION_GATE = 1e-5
"""[m/s] tangential speed below which friction is a regularized (linear) stick."""

_GJK_ITERATIONS = 128
_EPA_ITERATIONS = 128
_EPA_VERTICES = _EPA_ITERATIONS + 8
_EPA_FACES = 1024
_EPA_EDGES = 3 * _EPA_FACES
_MAX_FEATURE = 64


class ConvexShape(NamedTuple):
    """A convex shape: core vertices (body frame, m) grown by ``margin`` (m)."""

    kind: int
    vertices_B: np.ndarray
    margin: float
    half_extents: np.ndarray


class Contact(NamedTuple):
    """Result of :func:`collide` (see the module's conventions)."""

    distance: float
    normal_N: np.ndarray
    points_N: np.ndarray
    gaps: np.ndarray


def sphere(radius: float) -> ConvexShape:
    """A sphere of ``radius`` [m] centred on the body origin."""
    return ConvexShape(SPHERE, np.zeros((1, 3)), float(radius), np.zeros(3))


def capsule(radius: float, half_length: float) -> ConvexShape:
    """A capsule of ``radius`` [m] around the body z axis from ``-half_length`` to ``+half_length``
    [m] (coal's ``Capsule(radius, 2 half_length)``, MuJoCo's ``size="radius half_length"``)."""
    v = np.zeros((2, 3))
    v[0, 2] = -half_length
    v[1, 2] = half_length
    return ConvexShape(CAPSULE, v, float(radius), np.zeros(3))


def box(half_extents) -> ConvexShape:
    """A box centred on the body origin, aligned with the body axes, of ``half_extents`` [m]."""
    h = np.asarray(half_extents, dtype=np.float64).copy()
    v = np.empty((8, 3))
    for k in range(8):
        v[k, 0] = h[0] if k & 1 else -h[0]
        v[k, 1] = h[1] if k & 2 else -h[1]
        v[k, 2] = h[2] if k & 4 else -h[2]
    return ConvexShape(BOX, v, 0.0, h)


def convex_hull(vertices_B) -> ConvexShape:
    """The convex hull of ``vertices_B`` [m] (n x 3, body frame; interior points are harmless)."""
    v = np.ascontiguousarray(vertices_B, dtype=np.float64).reshape(-1, 3)
    return ConvexShape(HULL, v, 0.0, np.zeros(3))


def plane() -> ConvexShape:
    """The half-space ``z_B <= 0`` of the body frame (outward normal: body z)."""
    return ConvexShape(PLANE, np.zeros((1, 3)), 0.0, np.zeros(3))


# --------------------------------------------------------------------------- small helpers


@compiled_borrowing
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@compiled
def _world(V, R, p):
    """Core vertices in N: ``R v + p`` for each row of ``V``."""
    n = V.shape[0]
    W = np.empty((n, 3))
    for i in range(n):
        for r in range(3):
            W[i, r] = p[r] + R[r, 0] * V[i, 0] + R[r, 1] * V[i, 1] + R[r, 2] * V[i, 2]
    return W


@compiled_borrowing
def _support(W, d):
    """Index of the vertex of ``W`` farthest along ``d`` (the first on a tie)."""
    best = -np.inf
    k = 0
    for i in range(W.shape[0]):
        s = W[i, 0] * d[0] + W[i, 1] * d[1] + W[i, 2] * d[2]
        if s > best:
            best = s
            k = i
    return k


@compiled
def _tangent_basis(n):
    """Two unit vectors completing ``n`` to a right-handed basis ``(t1, t2, n)``."""
    a = np.zeros(3)
    if abs(n[0]) <= abs(n[1]) and abs(n[0]) <= abs(n[2]):
        a[0] = 1.0
    elif abs(n[1]) <= abs(n[2]):
        a[1] = 1.0
    else:
        a[2] = 1.0
    t1 = cross3(a, n)
    t1 = t1 / np.sqrt(_dot(t1, t1))
    return t1, cross3(n, t1)


# --------------------------------------------------------------------------- GJK


@compiled_borrowing
def _project_subset(Y, mask, lam, idx, E, G, b, t):
    """Barycentric coordinates (into ``lam``, 4) of the origin's projection on the affine hull of
    the simplex points ``Y[i]`` with bit ``i`` of ``mask`` set; false if degenerate. ``idx`` (4),
    ``E``, ``G`` (3 x 3), ``b`` and ``t`` (3) are scratch."""
    k = 0
    for i in range(4):
        lam[i] = 0.0
        if mask & (1 << i):
            idx[k] = i
            k += 1
    if k == 1:
        lam[idx[0]] = 1.0
        return True
    # minimize |y0 + sum_j t_j (y_j - y0)|^2: Gram system G t = -b
    i0 = idx[0]
    for j in range(1, k):
        for r in range(3):
            E[j - 1, r] = Y[idx[j], r] - Y[i0, r]
    m = k - 1
    for i in range(m):
        b[i] = E[i, 0] * Y[i0, 0] + E[i, 1] * Y[i0, 1] + E[i, 2] * Y[i0, 2]
        for j in range(m):
            G[i, j] = E[i, 0] * E[j, 0] + E[i, 1] * E[j, 1] + E[i, 2] * E[j, 2]
    if m == 1:
        if G[0, 0] <= 0.0:
            return False
        t[0] = -b[0] / G[0, 0]
    elif m == 2:
        det = G[0, 0] * G[1, 1] - G[0, 1] * G[1, 0]
        if det <= 1e-30 * (G[0, 0] * G[1, 1]) or det <= 0.0:
            return False
        t[0] = (-b[0] * G[1, 1] + b[1] * G[0, 1]) / det
        t[1] = (-b[1] * G[0, 0] + b[0] * G[1, 0]) / det
    else:
        c00 = G[1, 1] * G[2, 2] - G[1, 2] * G[2, 1]
        c01 = G[1, 2] * G[2, 0] - G[1, 0] * G[2, 2]
        c02 = G[1, 0] * G[2, 1] - G[1, 1] * G[2, 0]
        det = G[0, 0] * c00 + G[0, 1] * c01 + G[0, 2] * c02
        if det <= 1e-30 * (G[0, 0] * G[1, 1] * G[2, 2]) or det <= 0.0:
            return False
        c10 = G[0, 2] * G[2, 1] - G[0, 1] * G[2, 2]
        c11 = G[0, 0] * G[2, 2] - G[0, 2] * G[2, 0]
        c12 = G[0, 1] * G[2, 0] - G[0, 0] * G[2, 1]
        c20 = G[0, 1] * G[1, 2] - G[0, 2] * G[1, 1]
        c21 = G[0, 2] * G[1, 0] - G[0, 0] * G[1, 2]
        c22 = G[0, 0] * G[1, 1] - G[0, 1] * G[1, 0]
        t[0] = -(c00 * b[0] + c10 * b[1] + c20 * b[2]) / det
        t[1] = -(c01 * b[0] + c11 * b[1] + c21 * b[2]) / det
        t[2] = -(c02 * b[0] + c12 * b[1] + c22 * b[2]) / det
    s = 0.0
    for j in range(m):
        lam[idx[j + 1]] = t[j]
        s += t[j]
    lam[idx[0]] = 1.0 - s
    inside = True
    for j in range(k):
        if lam[idx[j]] <= 0.0:
            inside = False
    return inside


@compiled_borrowing
def _closest_on_simplex(Y, n, best_lam, lam, idx, E, G, b, t):
    """Point of the simplex ``Y[:n]`` nearest the origin: its barycentric coordinates into
    ``best_lam`` (4), and the mask of the smallest face holding it (returned). Every subset is
    tried (Johnson's subalgorithm by enumeration); the valid projection of least norm is the
    nearest point. ``lam`` and the rest are :func:`_project_subset`'s scratch."""
    best = np.inf
    for i in range(4):
        best_lam[i] = 0.0
    best_mask = 1
    for size in range(1, n + 1):
        for mask in range(1, 1 << n):
            bits = 0
            for i in range(n):
                if mask & (1 << i):
                    bits += 1
            if bits != size:
                continue
            if not _project_subset(Y, mask, lam, idx, E, G, b, t):
                continue
            v0 = 0.0
            v1 = 0.0
            v2 = 0.0
            for i in range(n):
                if mask & (1 << i):
                    v0 += lam[i] * Y[i, 0]
                    v1 += lam[i] * Y[i, 1]
                    v2 += lam[i] * Y[i, 2]
            vv = v0 * v0 + v1 * v1 + v2 * v2
            if vv < best:
                best = vv
                for i in range(4):
                    best_lam[i] = lam[i]
                best_mask = mask
    return best_mask


@compiled
def gjk(WA, WB):
    """GJK distance between the convex hulls of the inertial vertex sets ``WA`` and ``WB``.

    Returns ``(distance, a, b, Y, YA, YB, n)``: the distance [m], the closest points on A and B,
    and the final simplex of the difference ``A - B`` (``Y[:n]``, with the A and B vertices that
    made it). A distance of 0 means the hulls overlap or touch.
    """
    Y = np.zeros((4, 3))
    YA = np.zeros((4, 3))
    YB = np.zeros((4, 3))
    d = np.empty(3)
    for r in range(3):
        d[r] = WB[0, r] - WA[0, r]
    if _dot(d, d) == 0.0:
        d[0] = 1.0
    # first point: the support of A - B along -d (from B towards A)
    ia = _support(WA, -d)
    ib = _support(WB, d)
    YA[0] = WA[ia]
    YB[0] = WB[ib]
    Y[0] = YA[0] - YB[0]
    n = 1
    lam = np.zeros(4)
    lam[0] = 1.0
    v = Y[0].copy()
    scale = 0.0
    for i in range(WA.shape[0]):
        scale = max(scale, abs(WA[i, 0]) + abs(WA[i, 1]) + abs(WA[i, 2]))
    for i in range(WB.shape[0]):
        scale = max(scale, abs(WB[i, 0]) + abs(WB[i, 1]) + abs(WB[i, 2]))
    tiny = (1e-14 * scale) * (1e-14 * scale)
    vv = _dot(v, v)
    # scratch: -v, the support point, the subset's coordinates and the new v
    neg_v = np.empty(3)
    w = np.empty(3)
    lam_s = np.empty(4)
    lam_p = np.empty(4)
    idx = np.empty(4, np.int64)
    E = np.empty((3, 3))
    G = np.empty((3, 3))
    gb = np.empty(3)
    gt = np.empty(3)
    v_new = np.empty(3)
    for _ in range(_GJK_ITERATIONS):
        if vv <= tiny:
            vv = 0.0
            break
        for r in range(3):
            neg_v[r] = -v[r]
        ia = _support(WA, neg_v)
        ib = _support(WB, v)
        for r in range(3):
            w[r] = WA[ia, r] - WB[ib, r]
        # converged: no support point closer to the origin along v
        if vv - _dot(v, w) <= 1e-13 * vv:
            break
        dup = False
        for j in range(n):
            if Y[j, 0] == w[0] and Y[j, 1] == w[1] and Y[j, 2] == w[2]:
                dup = True
        if dup:
            break
        for r in range(3):
            Y[n, r] = w[r]
            YA[n, r] = WA[ia, r]
            YB[n, r] = WB[ib, r]
        n += 1
        mask = _closest_on_simplex(Y, n, lam_s, lam_p, idx, E, G, gb, gt)
        k = 0
        for j in range(4):
            lam[j] = 0.0
        for j in range(n):
            if mask & (1 << j):
                for r in range(3):
                    Y[k, r] = Y[j, r]
                    YA[k, r] = YA[j, r]
                    YB[k, r] = YB[j, r]
                lam[k] = lam_s[j]
                k += 1
        n = k
        for r in range(3):
            v_new[r] = 0.0
        for j in range(n):
            for r in range(3):
                v_new[r] += lam[j] * Y[j, r]
        vv_new = _dot(v_new, v_new)
        if n == 4:
            vv = 0.0
            for r in range(3):
                v[r] = v_new[r]
            break
        if vv_new >= vv:
            break
        for r in range(3):
            v[r] = v_new[r]
        vv = vv_new
    a = np.zeros(3)
    b = np.zeros(3)
    for j in range(n):
        for r in range(3):
            a[r] += lam[j] * YA[j, r]
            b[r] += lam[j] * YB[j, r]
    dist = 0.0 if vv == 0.0 else np.sqrt(_dot(a - b, a - b))
    return dist, a, b, Y, YA, YB, n


# --------------------------------------------------------------------------- EPA


@compiled_borrowing
def _face_plane(P, i, j, k, centre, FN, f):
    """Outward unit normal (into ``FN[f]``) and origin distance (returned) of face (i, j, k);
    ``flip`` (returned) if (i, j, k) winds inward (seen from ``centre``)."""
    u0 = P[j, 0] - P[i, 0]
    u1 = P[j, 1] - P[i, 1]
    u2 = P[j, 2] - P[i, 2]
    w0 = P[k, 0] - P[i, 0]
    w1 = P[k, 1] - P[i, 1]
    w2 = P[k, 2] - P[i, 2]
    n0 = u1 * w2 - u2 * w1
    n1 = u2 * w0 - u0 * w2
    n2 = u0 * w1 - u1 * w0
    nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if nn == 0.0:
        FN[f, 0] = n0
        FN[f, 1] = n1
        FN[f, 2] = n2
        return np.inf, False
    n0 = n0 / nn
    n1 = n1 / nn
    n2 = n2 / nn
    flip = n0 * (P[i, 0] - centre[0]) + n1 * (P[i, 1] - centre[1]) + n2 * (P[i, 2] - centre[2]) < 0.0
    if flip:
        n0 = -n0
        n1 = -n1
        n2 = -n2
    FN[f, 0] = n0
    FN[f, 1] = n1
    FN[f, 2] = n2
    return n0 * P[i, 0] + n1 * P[i, 1] + n2 * P[i, 2], flip


@compiled
def _blow_up(WA, WB, Y, YA, YB, n):
    """Grow a GJK simplex that reached the origin with fewer than 4 points into a tetrahedron."""
    trials = np.zeros((14, 3))
    for k in range(3):
        trials[2 * k, k] = 1.0
        trials[2 * k + 1, k] = -1.0
    while n < 4:
        if n == 2:
            e = Y[1] - Y[0]
            t1, t2 = _tangent_basis(e / np.sqrt(_dot(e, e)))
            for r in range(3):
                trials[6, r] = t1[r]
                trials[7, r] = -t1[r]
                trials[8, r] = t2[r]
                trials[9, r] = -t2[r]
        elif n == 3:
            nrm = cross3(Y[1] - Y[0], Y[2] - Y[0])
            for r in range(3):
                trials[10, r] = nrm[r]
                trials[11, r] = -nrm[r]
        added = False
        first = 0 if n == 1 else (6 if n == 2 else 10)
        last = 6 if n == 1 else (10 if n == 2 else 12)
        for t in range(first, last):
            d = trials[t]
            ia = _support(WA, d)
            ib = _support(WB, -d)
            w = WA[ia] - WB[ib]
            if n == 1:
                ok = _dot(w - Y[0], w - Y[0]) > 0.0
            elif n == 2:
                c = cross3(Y[1] - Y[0], w - Y[0])
                ok = _dot(c, c) > 1e-24 * _dot(Y[1] - Y[0], Y[1] - Y[0]) * _dot(w - Y[0], w - Y[0])
            else:
                nrm = cross3(Y[1] - Y[0], Y[2] - Y[0])
                vol = _dot(nrm, w - Y[0])
                ok = vol * vol > 1e-24 * _dot(nrm, nrm) * _dot(w - Y[0], w - Y[0])
            if ok:
                Y[n] = w
                YA[n] = WA[ia]
                YB[n] = WB[ib]
                n += 1
                added = True
                break
        if not added:
            return n
    return n


@compiled
def epa(WA, WB, Y0, YA0, YB0, n0):
    """Penetration of overlapping convex hulls ``WA``, ``WB`` (inertial vertex sets) by EPA
    from GJK's final simplex. Returns ``(depth, normal)``: the least translation of B along
    ``normal`` (from A to B) that separates them is ``depth`` [m]."""
    P = np.empty((_EPA_VERTICES, 3))  # rows below nv are written before they are read
    Y = Y0.copy()
    YA = YA0.copy()
    YB = YB0.copy()
    n = _blow_up(WA, WB, Y, YA, YB, n0)
    if n < 4:
        # a flat difference (the cores only touch, or are coplanar): any direction out of its
        # plane or line separates them at no depth
        normal = np.zeros(3)
        normal[2] = 1.0
        if n == 3:
            normal = cross3(Y[1] - Y[0], Y[2] - Y[0])
            normal = normal / np.sqrt(_dot(normal, normal))
        elif n == 2:
            e = Y[1] - Y[0]
            normal, _ = _tangent_basis(e / np.sqrt(_dot(e, e)))
        return 0.0, normal
    for i in range(4):
        P[i] = Y[i]
    nv = 4
    centre = 0.25 * (P[0] + P[1] + P[2] + P[3])
    # faces below nf and edges below ne are written before they are read
    F = np.empty((_EPA_FACES, 3), np.int64)
    FN = np.empty((_EPA_FACES, 3))
    FD = np.empty(_EPA_FACES)
    alive = np.empty(_EPA_FACES, np.bool_)
    nf = 0
    for i, j, k in ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2)):
        fd, flip = _face_plane(P, i, j, k, centre, FN, nf)
        F[nf, 0] = i
        F[nf, 1] = k if flip else j
        F[nf, 2] = j if flip else k
        FD[nf] = fd
        alive[nf] = True
        nf += 1
    scale = 0.0
    for i in range(4):
        scale = max(scale, abs(P[i, 0]) + abs(P[i, 1]) + abs(P[i, 2]))
    E = np.empty((_EPA_EDGES, 2), np.int64)
    best = 0
    for _ in range(_EPA_ITERATIONS):
        best = -1
        for f in range(nf):
            if alive[f] and (best < 0 or FD[f] < FD[best]):
                best = f
        d = FN[best]
        ia = _support(WA, d)
        ib = _support(WB, -d)
        w = WA[ia] - WB[ib]
        if _dot(w, d) - FD[best] <= 1e-13 * scale or nv >= _EPA_VERTICES or nf + 64 >= _EPA_FACES:
            break
        P[nv] = w
        # faces that see the new point go; their unshared edges form the horizon
        ne = 0
        for f in range(nf):
            g = F[f, 0]
            if (
                alive[f]
                and FN[f, 0] * (w[0] - P[g, 0]) + FN[f, 1] * (w[1] - P[g, 1]) + FN[f, 2] * (w[2] - P[g, 2])
                > 1e-13 * scale
            ):
                alive[f] = False
                for e in range(3):
                    a = F[f, e]
                    b = F[f, (e + 1) % 3]
                    shared = False
                    for q in range(ne):
                        if E[q, 0] == b and E[q, 1] == a:
                            E[q, 0] = -1
                            shared = True
                            break
                    if not shared:
                        E[ne, 0] = a
                        E[ne, 1] = b
                        ne += 1
        for q in range(ne):
            if E[q, 0] < 0:
                continue
            fd, flip = _face_plane(P, E[q, 0], E[q, 1], nv, centre, FN, nf)
            F[nf, 0] = E[q, 0]
            F[nf, 1] = nv if flip else E[q, 1]
            F[nf, 2] = E[q, 1] if flip else nv
            FD[nf] = fd
            alive[nf] = True
            nf += 1
        nv += 1
    return max(FD[best], 0.0), FN[best].copy()


# --------------------------------------------------------------------------- box-box SAT


@compiled
def _box_box_sat(hA, RA, pA, hB, RB, pB):
    """Least overlap of two boxes over the 15 separating axes: ``(overlap, normal)`` with the
    normal from A to B; a negative overlap means separated (then only a lower bound)."""
    d = pB - pA
    best = np.inf
    normal = np.zeros(3)
    axis = np.zeros(3)
    size = hA[0] + hA[1] + hA[2] + hB[0] + hB[1] + hB[2]
    for k in range(15):
        if k < 3:
            for r in range(3):
                axis[r] = RA[r, k]
        elif k < 6:
            for r in range(3):
                axis[r] = RB[r, k - 3]
        else:
            # the unit cross product of A's axis i and B's axis j
            i = (k - 6) // 3
            j = (k - 6) % 3
            a0, a1, a2 = RA[0, i], RA[1, i], RA[2, i]
            b0, b1, b2 = RB[0, j], RB[1, j], RB[2, j]
            c0 = a1 * b2 - a2 * b1
            c1 = a2 * b0 - a0 * b2
            c2 = a0 * b1 - a1 * b0
            nn = c0 * c0 + c1 * c1 + c2 * c2
            if nn < 1e-18:
                continue
            root = np.sqrt(nn)
            axis[0] = c0 / root
            axis[1] = c1 / root
            axis[2] = c2 / root
        rA = 0.0
        rB = 0.0
        for m in range(3):
            rA += hA[m] * abs(axis[0] * RA[0, m] + axis[1] * RA[1, m] + axis[2] * RA[2, m])
            rB += hB[m] * abs(axis[0] * RB[0, m] + axis[1] * RB[1, m] + axis[2] * RB[2, m])
        s = _dot(axis, d)
        overlap = rA + rB - abs(s)
        # face axes win ties with edge axes
        if overlap < best - (1e-12 * size if k >= 6 else 0.0):
            best = overlap
            sign = -1.0 if s < 0.0 else 1.0
            for r in range(3):
                normal[r] = sign * axis[r]
    return best, normal


# --------------------------------------------------------------------------- manifold


@compiled
def _feature(W, margin, n, sign, tol):
    """Core vertices of a shape within ``tol`` of its extreme along ``sign * n``, moved to its
    surface by the margin; and the surface's extreme height along ``n``."""
    h = -np.inf
    for i in range(W.shape[0]):
        h = max(h, sign * _dot(W[i], n))
    out = np.empty((min(W.shape[0], _MAX_FEATURE), 3))
    k = 0
    for i in range(W.shape[0]):
        if sign * _dot(W[i], n) >= h - tol and k < _MAX_FEATURE:
            for r in range(3):
                out[k, r] = W[i, r] + sign * margin * n[r]
            k += 1
    return out[:k], sign * (h + margin)


@compiled
def _order_polygon(X, n):
    """The rows of ``X`` (points in a plane normal to ``n``) ordered counter-clockwise about n."""
    k = X.shape[0]
    t1, t2 = _tangent_basis(n)
    c = np.zeros(3)
    for i in range(k):
        for r in range(3):
            c[r] += X[i, r]
    c /= k
    key = np.empty(k)
    for i in range(k):
        d0 = X[i, 0] - c[0]
        d1 = X[i, 1] - c[1]
        d2 = X[i, 2] - c[2]
        x = d0 * t1[0] + d1 * t1[1] + d2 * t1[2]
        y = d0 * t2[0] + d1 * t2[1] + d2 * t2[2]
        s = abs(x) + abs(y)
        q = 0.0 if s == 0.0 else x / s  # pseudo-angle in [0, 4), increasing counter-clockwise
        key[i] = 1.0 - q if y >= 0.0 else 3.0 + q
    order = np.arange(k)
    for i in range(1, k):  # insertion sort: a face has a handful of vertices
        j = i
        while j > 0 and key[order[j - 1]] > key[order[j]]:
            order[j - 1], order[j] = order[j], order[j - 1]
            j -= 1
    out = np.empty((k, 3))
    for i in range(k):
        out[i] = X[order[i]]
    return out


@compiled
def _clip_plane(X, m, a, normal):
    """Sutherland-Hodgman: the part of polygon ``X[:m]`` with ``(x - a) . normal >= 0``."""
    out = np.empty((2 * m + 2, 3))
    k = 0
    for i in range(m):
        j = (i + 1) % m
        dp = (X[i, 0] - a[0]) * normal[0] + (X[i, 1] - a[1]) * normal[1] + (X[i, 2] - a[2]) * normal[2]
        dq = (X[j, 0] - a[0]) * normal[0] + (X[j, 1] - a[1]) * normal[1] + (X[j, 2] - a[2]) * normal[2]
        if dp >= 0.0:
            for r in range(3):
                out[k, r] = X[i, r]
            k += 1
        if (dp >= 0.0) != (dq >= 0.0):
            t = dp / (dp - dq)
            for r in range(3):
                out[k, r] = X[i, r] + t * (X[j, r] - X[i, r])
            k += 1
    return out, k


@compiled
def _clip_segment(p, q, a, normal):
    """Part of segment pq with ``(x - a) . normal >= 0``; ``ok`` false if none."""
    dp = _dot(p - a, normal)
    dq = _dot(q - a, normal)
    if dp < 0.0 and dq < 0.0:
        return p, q, False
    if dp < 0.0:
        p = p + (dp / (dp - dq)) * (q - p)
    elif dq < 0.0:
        q = q + (dq / (dq - dp)) * (p - q)
    return p, q, True


@compiled
def _reduce(X, g, k, n):
    """At most four of the ``k`` points: the deepest, the farthest from it, then the largest
    triangle on each side of the line through those two."""
    if k <= MAX_POINTS:
        return X[:k].copy(), g[:k].copy(), k
    i0 = 0
    for i in range(k):
        if g[i] < g[i0]:
            i0 = i
    i1 = i0
    far = -1.0
    for i in range(k):
        e = X[i] - X[i0]
        e = e - _dot(e, n) * n
        if _dot(e, e) > far:
            far = _dot(e, e)
            i1 = i
    i2 = i0
    i3 = i0
    hi = 0.0
    lo = 0.0
    for i in range(k):
        area = _dot(cross3(X[i1] - X[i0], X[i] - X[i0]), n)
        if area > hi:
            hi = area
            i2 = i
        if area < lo:
            lo = area
            i3 = i
    keep = [i0, i1]
    if i2 != i0:
        keep.append(i2)
    if i3 != i0:
        keep.append(i3)
    m = len(keep)
    Xo = np.empty((m, 3))
    go = np.empty(m)
    for j in range(m):
        Xo[j] = X[keep[j]]
        go[j] = g[keep[j]]
    return Xo, go, m


@compiled
def _manifold(WA, rA, WB, rB, n, gap, tol):
    """Contact points (midway between the surfaces) and their gaps for shapes that touch or
    penetrate along ``n`` (from A to B) with least gap ``gap``."""
    FA, hA = _feature(WA, rA, n, 1.0, tol)
    FB, hB = _feature(WB, rB, n, -1.0, tol)
    ka = FA.shape[0]
    kb = FB.shape[0]
    pts = np.empty((4 * _MAX_FEATURE + 4, 3))
    gaps = np.empty(4 * _MAX_FEATURE + 4)
    k = 0
    if ka >= 3 or kb >= 3:
        # a reference face and an incident feature clipped against its side planes
        ref_is_A = ka >= 3
        ref = _order_polygon(FA if ref_is_A else FB, n)
        inc = FB if ref_is_A else FA
        ki = inc.shape[0]
        if ki >= 3:
            X = _order_polygon(inc, n)
            m = ki
            for e in range(ref.shape[0]):
                a = ref[e]
                inward = cross3(n, ref[(e + 1) % ref.shape[0]] - a)
                if _dot(inward, inward) == 0.0 or m == 0:
                    continue
                X, m = _clip_plane(X, m, a, inward)
        elif ki == 2:
            p = inc[0]
            q = inc[1]
            ok = True
            for e in range(ref.shape[0]):
                a = ref[e]
                inward = cross3(n, ref[(e + 1) % ref.shape[0]] - a)
                if _dot(inward, inward) == 0.0:
                    continue
                p, q, ok = _clip_segment(p, q, a, inward)
                if not ok:
                    break
            X = np.empty((2, 3))
            X[0] = p
            X[1] = q
            m = 2 if ok else 0
        else:
            X = inc.copy()
            m = 1
        for i in range(m):
            s = _dot(X[i], n)
            g = s - hA if ref_is_A else hB - s
            if g <= 0.0 or gap > 0.0:
                pts[k] = X[i] - (0.5 * g) * n if ref_is_A else X[i] + (0.5 * g) * n
                gaps[k] = g
                k += 1
    elif ka == 2 and kb == 2:
        dA = FA[1] - FA[0]
        dB = FB[1] - FB[0]
        c = cross3(dA, dB)
        if _dot(c, c) <= 1e-12 * _dot(dA, dA) * _dot(dB, dB):
            # parallel edges: B's edge cut by the planes through A's ends
            p, q, ok = _clip_segment(FB[0], FB[1], FA[0], dA)
            if ok:
                p, q, ok = _clip_segment(p, q, FA[1], -dA)
            if ok:
                pts[0] = p - (0.5 * gap) * n
                pts[1] = q - (0.5 * gap) * n
                gaps[0] = gap
                gaps[1] = gap
                k = 2
        if k == 0:
            # crossing edges: the closest points of the two segments
            r = FA[0] - FB[0]
            a = _dot(dA, dA)
            e = _dot(dB, dB)
            f = _dot(dB, r)
            cc = _dot(dA, r)
            b = _dot(dA, dB)
            den = a * e - b * b
            s = min(max((b * f - cc * e) / den, 0.0), 1.0) if den > 0.0 else 0.0
            t = min(max((b * s + f) / e, 0.0), 1.0)
            s = min(max((b * t - cc) / a, 0.0), 1.0)
            pa = FA[0] + s * dA
            pb = FB[0] + t * dB
            pts[0] = 0.5 * (pa + pb)
            gaps[0] = gap
            k = 1
    if k == 0:
        # a vertex against anything (or nothing left after clipping): one point at the vertex
        if kb == 1 or ka != 1:
            pts[0] = FB[0] - (0.5 * gap) * n
        else:
            pts[0] = FA[0] + (0.5 * gap) * n
        gaps[0] = gap
        k = 1
    return _reduce(pts, gaps, k, n)


# --------------------------------------------------------------------------- the narrow phase


@compiled
def _plane_contact(RA, pA, WB, rB, tol):
    """A's half-space ``z <= 0`` against B's core ``WB`` grown by ``rB``."""
    n = RA[:, 2].copy()
    h = _dot(n, pA)
    kb = WB.shape[0]
    X = np.empty((kb, 3))
    g = np.empty(kb)
    dist = np.inf
    for i in range(kb):
        g[i] = _dot(WB[i], n) - rB - h
        dist = min(dist, g[i])
    k = 0
    for i in range(kb):
        if g[i] < 0.0 or (dist >= 0.0 and g[i] <= dist + tol):
            f = rB + 0.5 * g[i]
            for r in range(3):
                X[k, r] = WB[i, r] - f * n[r]
            g[k] = g[i]
            k += 1
    if dist >= 0.0 and k > 1:
        # separated: the nearest vertex only
        j = 0
        for i in range(k):
            if g[i] < g[j]:
                j = i
        X[0] = X[j]
        g[0] = g[j]
        k = 1
    pts, gaps, m = _reduce(X, g, k, n)
    return dist, n, pts, gaps, m


@compiled
def _size(VA, rA, VB, rB):
    """A length [m] of the pair's scale: the sum of the margins plus the largest vertex extent."""
    size = rA + rB
    for i in range(VA.shape[0]):
        size = max(size, rA + rB + abs(VA[i, 0]) + abs(VA[i, 1]) + abs(VA[i, 2]))
    for i in range(VB.shape[0]):
        size = max(size, rA + rB + abs(VB[i, 0]) + abs(VB[i, 1]) + abs(VB[i, 2]))
    return size


@compiled
def plane_contact(RA, pA, VB, rB, RB, pB):
    """A plane (pose ``RA``, ``pA``) against a shape of core ``VB`` and margin ``rB``; returns
    ``(distance, normal, points, gaps)`` as :func:`collide`."""
    dist, n, pts, gaps, _ = _plane_contact(RA, np.zeros(3), _world(VB, RB, pB - pA), rB, FEATURE_TOLERANCE)
    return dist, n, pts + pA, gaps


@compiled
def box_box_contact(hA, VA, RA, pA, hB, VB, RB, pB):
    """Two boxes in penetration by the separating-axis test; returns ``(distance, normal,
    points, gaps)`` as :func:`collide`, or a positive distance and no points when the boxes are
    separated (then only a lower bound: :func:`convex_contact` gives the distance)."""
    origin = np.zeros(3)
    dB = pB - pA
    overlap, n = _box_box_sat(hA, RA, origin, hB, RB, dB)
    if overlap < 0.0:
        return -overlap, n, np.zeros((0, 3)), np.zeros(0)
    WA = _world(VA, RA, origin)
    WB = _world(VB, RB, dB)
    tol = FEATURE_TOLERANCE * _size(VA, 0.0, VB, 0.0)
    pts, gaps, _ = _manifold(WA, 0.0, WB, 0.0, n, -overlap, tol)
    return -overlap, n, pts + pA, gaps


@compiled
def convex_contact(VA, rA, RA, pA, VB, rB, RB, pB):
    """Any two shapes but planes by GJK and EPA on their cores; returns ``(distance, normal,
    points, gaps)`` as :func:`collide`."""
    origin = np.zeros(3)
    WA = _world(VA, RA, origin)
    WB = _world(VB, RB, pB - pA)
    d, a, b, Y, YA, YB, ny = gjk(WA, WB)
    if d > 0.0:
        n = (b - a) / d
        gap = d - rA - rB
        if gap > 0.0:
            pts = np.empty((1, 3))
            pts[0] = 0.5 * ((a + rA * n) + (b - rB * n)) + pA
            gaps = np.empty(1)
            gaps[0] = gap
            return gap, n, pts, gaps
    else:
        depth, n = epa(WA, WB, Y, YA, YB, ny)
        gap = -depth - rA - rB
    tol = FEATURE_TOLERANCE * _size(VA, rA, VB, rB)
    pts, gaps, _ = _manifold(WA, rA, WB, rB, n, gap, tol)
    return gap, n, pts + pA, gaps


@compiled
def collide_arrays(kindA, VA, rA, hA, RA, pA, kindB, VB, rB, hB, RB, pB):
    """:func:`collide` on plain arrays, for compiled callers: returns ``(distance, normal,
    points (m x 3), gaps (m))``. The geometry is worked relative to A's origin, so that shapes
    far from N's origin keep their precision. Two planes give a NaN distance."""
    if kindA == PLANE and kindB == PLANE:
        return np.nan, np.zeros(3), np.zeros((0, 3)), np.zeros(0)
    if kindA == PLANE:
        return plane_contact(RA, pA, VB, rB, RB, pB)
    if kindB == PLANE:
        dist, n, pts, gaps = plane_contact(RB, pB, VA, rA, RA, pA)
        return dist, -n, pts, gaps
    if kindA == BOX and kindB == BOX:
        dist, n, pts, gaps = box_box_contact(hA, VA, RA, pA, hB, VB, RB, pB)
        if dist <= 0.0:
            return dist, n, pts, gaps
    return convex_contact(VA, rA, RA, pA, VB, rB, RB, pB)


def collide(shape_A: ConvexShape, R_A, p_A, shape_B: ConvexShape, R_B, p_B) -> Contact:
    """Signed distance, normal (A to B) and contact points of two convex shapes at poses
    ``(R, p)`` (body to inertial rotation, body origin in N [m]); see the module's conventions.

    The same as :func:`collide_arrays`, but only the pair's own path is compiled at first use
    (a plane's is small; GJK, EPA and the clipping are not)."""

    def f(a):
        return np.ascontiguousarray(a, dtype=np.float64)

    A, B = shape_A, shape_B
    RA, pA, RB, pB = f(R_A), f(p_A), f(R_B), f(p_B)
    VA, VB, rA, rB = f(A.vertices_B), f(B.vertices_B), float(A.margin), float(B.margin)
    if A.kind == PLANE and B.kind == PLANE:
        raise ValueError(
            "collide: two planes have no contact; one of the shapes must be a sphere, capsule, box or hull"
        )
    if A.kind == PLANE:
        dist, n, pts, gaps = plane_contact(RA, pA, VB, rB, RB, pB)
    elif B.kind == PLANE:
        dist, n, pts, gaps = plane_contact(RB, pB, VA, rA, RA, pA)
        n = -n
    else:
        dist = 1.0
        if A.kind == BOX and B.kind == BOX:
            dist, n, pts, gaps = box_box_contact(f(A.half_extents), VA, RA, pA, f(B.half_extents), VB, RB, pB)
        if dist > 0.0:
            dist, n, pts, gaps = convex_contact(VA, rA, RA, pA, VB, rB, RB, pB)
    return Contact(float(dist), n, pts, gaps)


# --------------------------------------------------------------------------- the penalty law


@compiled
def penalty_force(normal_N, gap, u_N, stiffness, damping, mu_1, mu_2, axis_N):
    """Force [N, in N] on B at one contact point (A receives its negative).

    ``normal_N``: unit normal from A to B; ``gap`` [m]: signed gap (negative in penetration);
    ``u_N`` [m/s]: velocity of B's material point relative to A's; ``stiffness`` K [N/m],
    ``damping`` C [N s/m]; ``mu_1`` along ``axis_N`` (projected on the tangent plane), ``mu_2``
    across it (``mu_1 == mu_2``: isotropic, the axis is then unused; otherwise it must not lie
    along the normal). Zero when not penetrating.
    """
    F = np.zeros(3)
    if gap >= 0.0:
        return F
    n = normal_N
    un = _dot(u_N, n)
    fn = stiffness * (-gap) + damping * (-un)
    if fn <= 0.0:
        return F
    ut = u_N - un * n
    speed = np.sqrt(_dot(ut, ut))
    s = ut / max(speed, FRICTION_GATE)
    if mu_1 == mu_2:
        ft = -(fn * mu_1) * s
    else:
        e1 = axis_N - _dot(axis_N, n) * n
        e1 = e1 / np.sqrt(_dot(e1, e1))
        e2 = cross3(n, e1)
        ft = -fn * (mu_1 * _dot(s, e1) * e1 + mu_2 * _dot(s, e2) * e2)
    for r in range(3):
        F[r] = fn * n[r] + ft[r]
    return F


@compiled
def _centre_of_mass(x, r_CB_B):
    R = quat_to_dcm(x[6:10])
    c = np.empty(3)
    for r in range(3):
        c[r] = x[r] + R[r, 0] * r_CB_B[0] + R[r, 1] * r_CB_B[1] + R[r, 2] * r_CB_B[2]
    return c


@compiled
def penalty_wrenches(x_A, r_CB_B_A, x_B, r_CB_B_B, normal_N, points_N, gaps, stiffness, damping, mu_1, mu_2, axis_N):
    """Wrenches ``[moment; force]`` [N m, N] in N on A and on B about their centres of mass from
    the penalty forces at every contact point (equal and opposite). ``x_A``, ``x_B``: 13-vector
    states (:mod:`hopsim.dynamics.rigid_body`; a fixed body has zero velocities), ``r_CB_B_*``
    their centres of mass [m] in body axes; the rest as :func:`penalty_force`."""
    cA = _centre_of_mass(x_A, r_CB_B_A)
    cB = _centre_of_mass(x_B, r_CB_B_B)
    wA = np.zeros(6)
    wB = np.zeros(6)
    for i in range(points_N.shape[0]):
        P = points_N[i]
        u = point_velocity(x_B, P) - point_velocity(x_A, P)
        F = penalty_force(normal_N, gaps[i], u, stiffness, damping, mu_1, mu_2, axis_N)
        mB = cross3(P - cB, F)
        mA = cross3(P - cA, F)
        for r in range(3):
            wB[r] += mB[r]
            wB[3 + r] += F[r]
            wA[r] -= mA[r]
            wA[3 + r] -= F[r]
    return wA, wB
