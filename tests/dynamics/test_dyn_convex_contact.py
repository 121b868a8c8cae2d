"""Penalty contact between convex shapes, against independent references in each test: coal
(FCL's successor) for depths, normals and distances; MuJoCo's box-box collider for box
contacts; the analytic static penetration and sliding deceleration of a box on a plane; the
identities of the Ndarts friction law.

Tolerances: box-box, box-plane, capsule-capsule and hull-hull agree with coal to 1e-9 m (both
sides exact for polytopes and segments, coal's GJK and EPA run at tolerance 1e-12); normals to
1e-8. MuJoCo's box-box collider agrees to 1e-9 m in depth and 1e-9 in normal for face contacts.

The plane's path compiles in seconds and runs in the normal suite; GJK, EPA and the clipping take
about half a minute to compile cold, so the tests that need them are marked long.
"""

import numpy as np
import pytest
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from hopsim.dynamics import convex as cv
from hopsim.dynamics.rigid_body import pack_state, rigid_body_derivative

coal = pytest.importorskip("coal")

N_POSES = 200


# --------------------------------------------------------------------------- coal helpers


def coal_transform(R, p):
    return coal.Transform3s(np.asarray(R, float), np.asarray(p, float))


def coal_box(h):
    return coal.Box(2 * h[0], 2 * h[1], 2 * h[2])


def coal_convex(V):
    hull = ConvexHull(V)
    pts = coal.StdVec_Vec3s()
    for v in V:
        pts.append(np.asarray(v, float))
    tris = coal.StdVec_Triangle()
    for s in hull.simplices:
        a, b, c = (int(i) for i in s)
        # outward winding
        n = np.cross(V[b] - V[a], V[c] - V[a])
        if n @ (V[a] - V.mean(axis=0)) < 0:
            b, c = c, b
        tris.append(coal.Triangle(a, b, c))
    return coal.Convex(pts, tris)


def coal_query(gA, TA, gB, TB):
    """(signed distance, normal A to B) from coal: collide in penetration, distance otherwise."""
    req = coal.CollisionRequest(coal.CollisionRequestFlag.CONTACT, 1)
    req.gjk_tolerance = 1e-12
    req.epa_tolerance = 1e-12
    res = coal.CollisionResult()
    if coal.collide(gA, TA, gB, TB, req, res):
        c = res.getContact(0)
        return c.penetration_depth, np.array(c.normal)
    dreq = coal.DistanceRequest()
    dreq.gjk_tolerance = 1e-12
    dres = coal.DistanceResult()
    coal.distance(gA, TA, gB, TB, dreq, dres)
    return dres.min_distance, np.array(dres.normal)


def random_pose(rng, spread):
    return Rotation.random(random_state=rng).as_matrix(), rng.uniform(-spread, spread, 3)


def compare_with_coal(shape_A, geom_A, shape_B, geom_B, rng, spread, n=N_POSES):
    """Largest differences in distance and normal over ``n`` random relative poses, and the
    number in penetration."""
    worst_d = worst_n = 0.0
    penetrating = 0
    for _ in range(n):
        RA, pA = random_pose(rng, 0.1)
        RB, pB = random_pose(rng, spread)
        c = cv.collide(shape_A, RA, pA, shape_B, RB, pB)
        d_ref, n_ref = coal_query(geom_A, coal_transform(RA, pA), geom_B, coal_transform(RB, pB))
        worst_d = max(worst_d, abs(c.distance - d_ref))
        if abs(d_ref) > 1e-6:
            worst_n = max(worst_n, np.abs(c.normal_N - n_ref).max())
        penetrating += d_ref < 0
        assert c.gaps.min() == pytest.approx(c.distance, abs=1e-9)
    return worst_d, worst_n, penetrating


# --------------------------------------------------------------------------- the seed's cases


BIG = cv.box([1.0, 1.0, 1.0])
LITTLE = cv.box([0.5, 0.5, 0.5])
I3 = np.eye(3)
R_Y45 = Rotation.from_euler("y", 45, degrees=True).as_matrix()


def sorted_rows(X):
    X = np.round(np.asarray(X), 9)
    return X[np.lexsort(X.T[::-1])]


@pytest.mark.long
@pytest.mark.parametrize(
    "R, p, depth, normal, xz",
    [
        # face-face: Bullet's 4 contacts at x = 0.75, 1 and z = +-0.5 (on B's face, y = 3.78)
        (I3, (1.25, 4.28, 0), 0.22, (0, 1, 0), [(0.75, -0.5), (0.75, 0.5), (1, -0.5), (1, 0.5)]),
        # edge on face: 3 contacts at (0.542893, 0) and (1, +-0.457107)
        (R_Y45, (1.25, 4.26, 0), 0.24, (0, 1, 0), [(0.542893219, 0), (1, -0.457106781), (1, 0.457106781)]),
    ],
)
def test_the_seeds_box_cases(R, p, depth, normal, xz):
    # the seed's normals point from the little cube (B) into the big one: ours from A to B
    c = cv.collide(BIG, I3, np.array([0.0, 3.0, 0.0]), LITTLE, R, np.array(p, float))
    assert c.distance == pytest.approx(-depth, abs=1e-12)
    np.testing.assert_allclose(c.normal_N, normal, atol=1e-12)
    np.testing.assert_allclose(sorted_rows(c.points_N[:, [0, 2]]), sorted_rows(xz), atol=1e-8)
    # midway between the surfaces: the big cube's top (y = 4) minus half the depth
    np.testing.assert_allclose(c.points_N[:, 1], 4.0 - depth / 2, atol=1e-12)


# --------------------------------------------------------------------------- against coal


@pytest.mark.long
def test_box_box_against_coal():
    rng = np.random.default_rng(1)
    hA, hB = np.array([0.3, 0.2, 0.1]), np.array([0.25, 0.15, 0.2])
    worst_d, worst_n, penetrating = compare_with_coal(cv.box(hA), coal_box(hA), cv.box(hB), coal_box(hB), rng, 0.6)
    assert 40 < penetrating < N_POSES - 40
    assert worst_d < 1e-9 and worst_n < 1e-8, (worst_d, worst_n)


def test_box_plane_against_coal():
    rng = np.random.default_rng(2)
    h = np.array([0.3, 0.2, 0.1])
    worst_d = worst_n = 0.0
    for _ in range(N_POSES):
        RA, pA = random_pose(rng, 0.2)
        RB, pB = random_pose(rng, 0.5)
        for a_is_plane in (True, False):
            if a_is_plane:
                c = cv.collide(cv.plane(), RA, pA, cv.box(h), RB, pB)
                ref = coal_query(coal.Halfspace(np.array([0.0, 0, 1]), 0.0), coal_transform(RA, pA), coal_box(h),
                                 coal_transform(RB, pB))  # fmt: skip
            else:
                c = cv.collide(cv.box(h), RB, pB, cv.plane(), RA, pA)
                ref = coal_query(coal_box(h), coal_transform(RB, pB), coal.Halfspace(np.array([0.0, 0, 1]), 0.0),
                                 coal_transform(RA, pA))  # fmt: skip
            worst_d = max(worst_d, abs(c.distance - ref[0]))
            worst_n = max(worst_n, np.abs(c.normal_N - ref[1]).max())
            # every penetrating corner is a point, at its own depth
            Wb = pB + cv.box(h).vertices_B @ RB.T
            heights = (Wb - pA) @ RA[:, 2]
            if heights.min() < 0:
                assert len(c.gaps) == min(4, int((heights < 0).sum()))
                assert c.gaps.min() == pytest.approx(heights.min(), abs=1e-12)
    assert worst_d < 1e-9 and worst_n < 1e-9, (worst_d, worst_n)


@pytest.mark.long
def test_capsule_capsule_against_coal():
    rng = np.random.default_rng(3)
    A, B = cv.capsule(0.1, 0.3), cv.capsule(0.15, 0.2)
    worst_d, worst_n, penetrating = compare_with_coal(A, coal.Capsule(0.1, 0.6), B, coal.Capsule(0.15, 0.4), rng, 0.5)
    assert 40 < penetrating < N_POSES - 40
    assert worst_d < 1e-9 and worst_n < 1e-8, (worst_d, worst_n)


@pytest.mark.long
def test_hull_hull_against_coal():
    rng = np.random.default_rng(4)
    VA = rng.normal(size=(12, 3)) * [0.3, 0.2, 0.15]
    VB = rng.normal(size=(10, 3)) * [0.2, 0.25, 0.1]
    VA, VB = VA[ConvexHull(VA).vertices], VB[ConvexHull(VB).vertices]
    worst_d, worst_n, penetrating = compare_with_coal(
        cv.convex_hull(VA), coal_convex(VA), cv.convex_hull(VB), coal_convex(VB), rng, 0.6
    )
    assert 40 < penetrating < N_POSES - 40
    assert worst_d < 1e-9 and worst_n < 1e-8, (worst_d, worst_n)


@pytest.mark.long
def test_box_against_sphere_and_capsule_against_coal():
    rng = np.random.default_rng(5)
    h = np.array([0.3, 0.2, 0.1])
    for shape, geom in ((cv.sphere(0.15), coal.Sphere(0.15)), (cv.capsule(0.1, 0.25), coal.Capsule(0.1, 0.5))):
        worst_d, worst_n, _ = compare_with_coal(cv.box(h), coal_box(h), shape, geom, rng, 0.5, n=100)
        assert worst_d < 1e-9 and worst_n < 1e-8, (worst_d, worst_n)


@pytest.mark.long
def test_the_compiled_dispatcher_is_collide():
    rng = np.random.default_rng(9)
    shapes = [cv.plane(), cv.box([0.3, 0.2, 0.1]), cv.sphere(0.2), cv.capsule(0.1, 0.3),
              cv.convex_hull(rng.normal(size=(9, 3)) * 0.2)]  # fmt: skip
    for A in shapes:
        for B in shapes[1:]:
            for _ in range(5):
                (RA, pA), (RB, pB) = random_pose(rng, 0.1), random_pose(rng, 0.4)
                c = cv.collide(A, RA, pA, B, RB, pB)
                d, n, P, g = cv.collide_arrays(A.kind, A.vertices_B, A.margin, A.half_extents, RA, pA,
                                               B.kind, B.vertices_B, B.margin, B.half_extents, RB, pB)  # fmt: skip
                assert d == c.distance and (n == c.normal_N).all() and (c.points_N == P).all() and (g == c.gaps).all()


# --------------------------------------------------------------------------- against MuJoCo


def mujoco_box_box(hA, RA, pA, hB, RB, pB):
    mujoco = pytest.importorskip("mujoco")

    def q(R):
        x, y, z, w = Rotation.from_matrix(R).as_quat()
        return [w, x, y, z]

    def v(a):
        return " ".join(repr(float(t)) for t in a)

    # free bodies (two fixed ones would not be tested against each other), placed through qpos
    xml = f"""<mujoco><worldbody>
      <body><freejoint/><geom type="box" size="{v(hA)}"/></body>
      <body><freejoint/><geom type="box" size="{v(hB)}"/></body>
    </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:] = np.concatenate([pA, q(RA), pB, q(RB)])
    mujoco.mj_forward(model, data)
    contacts = [data.contact[i] for i in range(data.ncon)]
    # MuJoCo's normal (frame[0:3]) points from geom1 to geom2
    sign = 1.0 if all(c.geom1 == 0 for c in contacts) else -1.0
    return [(float(c.dist), sign * np.array(c.frame[0:3]), np.array(c.pos)) for c in contacts]


def on_a_face(n, RA, RB):
    return max(np.abs(RA.T @ n).max(), np.abs(RB.T @ n).max()) > 1 - 1e-9


@pytest.mark.long
def test_box_box_against_mujoco():
    """Depth (MuJoCo's ``dist`` is negative in penetration) and normal of the deepest contact;
    contact points of a face-face contact, both midway between the surfaces.

    Where the least overlap is along an edge-edge axis, MuJoCo's box-box collider sometimes keeps
    a face axis whose overlap is larger (its depth is then deeper than the least one, which coal
    confirms); those are only checked to be deeper, the rest to agree."""
    rng = np.random.default_rng(6)
    hA, hB = np.array([0.3, 0.2, 0.1]), np.array([0.25, 0.15, 0.2])
    worst = {"face": [0.0, 0.0, 0], "edge": [0.0, 0.0, 0], "MuJoCo keeps a face": [0.0, 0.0, 0]}
    for _ in range(N_POSES):
        RA, pA = random_pose(rng, 0.1)
        RB, pB = random_pose(rng, 0.45)
        ref = mujoco_box_box(hA, RA, pA, hB, RB, pB)
        c = cv.collide(cv.box(hA), RA, pA, cv.box(hB), RB, pB)
        if not ref or c.distance > -1e-6:
            continue
        dist, normal, _ = min(ref, key=lambda r: r[0])
        if on_a_face(c.normal_N, RA, RB):
            kind = "face"
        elif not on_a_face(normal, RA, RB):
            kind = "edge"
        else:
            kind = "MuJoCo keeps a face"
            assert dist < c.distance
        w = worst[kind]
        w[0] = max(w[0], abs(dist - c.distance))
        w[1] = max(w[1], np.abs(normal - c.normal_N).max())
        w[2] += 1
    print(worst)
    assert worst["face"][2] > 40 and worst["edge"][2] > 40, worst
    assert worst["face"][0] < 1e-12 and worst["face"][1] < 1e-12, worst
    assert worst["edge"][0] < 1e-9 and worst["edge"][1] < 1e-6, worst
    # face on face, B's face inside A's: B's four corners, same points and depths
    RB = Rotation.from_euler("z", 10, degrees=True).as_matrix()
    pB = np.array([0.02, 0.0, 0.29])
    ref = mujoco_box_box(hA, I3, np.zeros(3), hB, RB, pB)
    c = cv.collide(cv.box(hA), I3, np.zeros(3), cv.box(hB), RB, pB)
    assert len(ref) == len(c.gaps) == 4
    np.testing.assert_allclose(sorted_rows([r[2] for r in ref]), sorted_rows(c.points_N), atol=1e-12)
    np.testing.assert_allclose(sorted(r[0] for r in ref), sorted(c.gaps), atol=1e-12)
    # B's face crossing A's edges: MuJoCo keeps all 7 points of the clipped polygon, we keep 4 of them
    RB = Rotation.from_euler("z", 20, degrees=True).as_matrix()
    pB = np.array([0.05, -0.02, 0.29])
    ref = mujoco_box_box(hA, I3, np.zeros(3), hB, RB, pB)
    c = cv.collide(cv.box(hA), I3, np.zeros(3), cv.box(hB), RB, pB)
    assert len(ref) == 7 and len(c.gaps) == 4
    mj = np.array([r[2] for r in ref])
    assert all(np.abs(mj - p).max(axis=1).min() < 1e-12 for p in c.points_N)


# --------------------------------------------------------------------------- the penalty law


def test_normal_force_pushes_and_never_pulls():
    n = np.array([0.0, 0.0, 1.0])
    K, C = 1e4, 50.0
    zero = np.zeros(3)
    # penetrating and approaching: K delta + C delta_dot along n
    F = cv.penalty_force(n, -0.01, np.array([0.0, 0.0, -0.2]), K, C, 0.0, 0.0, zero)
    np.testing.assert_allclose(F, [0, 0, K * 0.01 + C * 0.2], rtol=1e-15)
    # separating fast: the damper would pull; the force is zero instead
    F = cv.penalty_force(n, -0.01, np.array([0.0, 0.0, 5.0]), K, C, 0.0, 0.0, zero)
    assert not F.any()
    # not penetrating: nothing
    assert not cv.penalty_force(n, 1e-3, np.array([0.0, 0.0, -1.0]), K, C, 0.5, 0.5, zero).any()


def test_friction_identities_of_the_ndarts_law():
    rng = np.random.default_rng(7)
    K, C = 1e4, 0.0
    for _ in range(50):
        n = Rotation.random(random_state=rng).as_matrix()[:, 2]
        u = rng.normal(size=3)
        u_t = u - (u @ n) * n
        axis = rng.normal(size=3)
        e = axis - (axis @ n) * n
        e /= np.linalg.norm(e)
        F = cv.penalty_force(n, -0.01, u, K, C, 0.3, 0.3, axis)
        fn = F @ n
        # isotropic Coulomb: opposite the slip, mu times the normal force
        np.testing.assert_allclose(F - fn * n, -0.3 * fn * u_t / np.linalg.norm(u_t), atol=1e-12)
        # Ndarts' ellipse with mu = mu_2 and |e_v| = mu_1 / mu_2
        mu, ev = 0.4, 0.5
        F = cv.penalty_force(n, -0.01, u, K, C, mu * ev, mu, axis)
        t = u_t / np.linalg.norm(u_t)
        np.testing.assert_allclose(F - fn * n, -mu * fn * (t + (ev - 1) * (t @ e) * e), atol=1e-12)
        # |e_v| = 0: no friction along e
        F = cv.penalty_force(n, -0.01, u, K, C, 0.0, mu, axis)
        assert abs(F @ e) < 1e-12


def test_friction_is_a_continuous_stick_below_the_gate():
    n = np.array([0.0, 0.0, 1.0])
    gate = cv.FRICTION_GATE
    f = [
        cv.penalty_force(n, -0.01, np.array([s, 0.0, 0.0]), 1e4, 0.0, 0.5, 0.5, n)[0]
        for s in (gate / 2, gate, 2 * gate)
    ]
    np.testing.assert_allclose(f, [-25.0, -50.0, -50.0], rtol=1e-12)  # mu K delta = 50 N


def test_wrenches_are_equal_and_opposite():
    rng = np.random.default_rng(8)
    xA = pack_state(rng.normal(size=3), rng.normal(size=3), rng.normal(size=4), rng.normal(size=3))
    xB = pack_state(rng.normal(size=3), rng.normal(size=3), rng.normal(size=4), rng.normal(size=3))
    cA, cB = rng.normal(size=3) * 0.1, rng.normal(size=3) * 0.1
    n = np.array([0.0, 0.6, 0.8])
    P = rng.normal(size=(3, 3))
    g = np.array([-0.01, -0.002, 0.001])
    wA, wB = cv.penalty_wrenches(xA, cA, xB, cB, n, P, g, 1e4, 30.0, 0.2, 0.5, np.array([1.0, 0, 0]))
    np.testing.assert_allclose(wA[3:], -wB[3:], rtol=1e-15)
    # the moments balance about any point: about N's origin, r_C x F + M
    RA, RB = Rotation.from_quat(xA[6:10]).as_matrix(), Rotation.from_quat(xB[6:10]).as_matrix()
    CA, CB = xA[:3] + RA @ cA, xB[:3] + RB @ cB
    np.testing.assert_allclose(wA[:3] + np.cross(CA, wA[3:]), -(wB[:3] + np.cross(CB, wB[3:])), atol=1e-12)


# --------------------------------------------------------------------------- integrated


def box_on_plane_run(v0, mu, t_end, dz=0.0, tilt=0.0, h=5e-4):
    """A 2 kg box (half extents 0.1, 0.1, 0.05) on the plane z = 0 under gravity, by RK4 with
    the contact force evaluated at every stage; returns the times and states."""
    mass, g = 2.0, 9.81
    half = np.array([0.1, 0.1, 0.05])
    inertia = (
        mass / 3 * np.diag([half[1] ** 2 + half[2] ** 2, half[0] ** 2 + half[2] ** 2, half[0] ** 2 + half[1] ** 2])
    )
    K = 2e5
    C = 2 * np.sqrt(K * mass / 4)  # about critical for one corner's share of the mass
    shape, ground = cv.box(half), cv.plane()
    x_ground = pack_state(np.zeros(3), np.zeros(3), [0, 0, 0, 1], np.zeros(3))
    zero = np.zeros(3)

    def deriv(x):
        R = Rotation.from_quat(x[6:10]).as_matrix()
        c = cv.collide(ground, I3, zero, shape, R, x[:3])
        _, w = cv.penalty_wrenches(x_ground, zero, x, zero, c.normal_N, c.points_N, c.gaps, K, C, mu, mu, zero)
        force = w[3:] + np.array([0.0, 0.0, -mass * g])
        return rigid_body_derivative(x, mass, inertia, force_N=force, torque_B=R.T @ w[:3])

    z0 = half[2] - mass * g / (4 * K)
    x = pack_state([0, 0, z0 + dz], [v0, 0, 0], Rotation.from_euler("xy", [tilt, tilt / 2]).as_quat(), zero)
    xs = [x]
    for _ in range(round(t_end / h)):
        k1 = deriv(x)
        k2 = deriv(x + h / 2 * k1)
        k3 = deriv(x + h / 2 * k2)
        k4 = deriv(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        x[6:10] /= np.linalg.norm(x[6:10])
        xs.append(x)
    return np.arange(len(xs)) * h, np.array(xs), mass * g / (4 * K), half


def test_a_box_settles_at_the_static_penetration():
    # dropped from 2 mm above the plane, tilted, it settles level with m g / 4 on each corner
    _, xs, delta, half = box_on_plane_run(0.0, 0.0, 0.5, dz=2e-3, tilt=0.01)
    R = Rotation.from_quat(xs[-1, 6:10]).as_matrix()
    corners = xs[-1, :3] + cv.box(half).vertices_B @ R.T
    np.testing.assert_allclose(np.sort(corners[:, 2])[:4], -delta, rtol=1e-3)


def test_a_sliding_box_decelerates_at_mu_g():
    mu = 0.3
    t, xs, _, _ = box_on_plane_run(1.0, mu, 0.25)
    window = (t > 0.1) & (t < 0.25)
    slope = np.polyfit(t[window], xs[window, 3], 1)[0]
    assert -slope == pytest.approx(mu * 9.81, rel=1e-3)
