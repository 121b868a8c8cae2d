"""Contact impulses, docking welds and the broad phase, against independent facts: textbook
collision results, conservation laws, hand-derived mass properties, point-mass models and a
brute-force NumPy pair search."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from hopsim.dynamics.contact import (
    all_pairs_candidates,
    apply_impulse,
    box_wall_candidates,
    box_walls,
    broadphase_pairs,
    composite_mass_properties,
    port_alignment,
    sphere_contact_impulse,
    sphere_gap,
    sphere_gap_rate,
    wall_contact_impulse,
    wall_gap,
    wall_gap_rate,
    weld_state,
    welded_follower_state,
)
from hopsim.dynamics.rigid_body import (
    pack_state,
    rigid_body_kinetic_energy,
    rigid_body_momentum,
)

RADIUS = 0.1
N_RANDOM = 200


# --------------------------------------------------------------------------- independent helpers


def rot(x):
    return Rotation.from_quat(x[6:10]).as_matrix()


def material_point_velocity(x, p):
    """Velocity of the body's material point at p: v_B + omega_N x (p - r_B)."""
    return x[3:6] + np.cross(rot(x) @ x[10:13], p - x[0:3])


def random_inertia(rng, scale=0.02):
    a, b = rng.uniform(0.3, 1.0, 2) * scale
    c = rng.uniform(abs(a - b) + 0.05 * scale, a + b)
    R = Rotation.random(random_state=rng).as_matrix()
    return R @ np.diag([a, b, c]) @ R.T


def random_body(rng, cm_offset=True, cm_scale=0.3):
    """Mass, inertia and a CM offset of typical size ``cm_scale * RADIUS``."""
    mass = rng.uniform(1.0, 10.0)
    c = rng.normal(scale=cm_scale * RADIUS, size=3) if cm_offset else np.zeros(3)
    return mass, random_inertia(rng), c


def solid_sphere_inertia(mass, radius):
    return np.eye(3) * 0.4 * mass * radius * radius


def momenta(states, bodies):
    p = np.zeros(3)
    h = np.zeros(3)
    scale_p = scale_h = 0.0
    for x, (m, I, c) in zip(states, bodies):
        pi, hi = rigid_body_momentum(x, m, I, c)
        p += pi
        h += hi
        scale_p += np.linalg.norm(pi)
        scale_h += np.linalg.norm(hi)
    return p, h, scale_p, scale_h


def touching_pair(rng, R1=RADIUS, R2=RADIUS):
    """Two random states whose spheres touch, with the contact points approaching.
    Returns x1, x2, the normal (1 -> 2) and the contact point."""
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    r1 = rng.normal(size=3)
    x1 = pack_state(r1, rng.normal(size=3), Rotation.random(random_state=rng).as_quat(), rng.normal(scale=3.0, size=3))
    x2 = pack_state(
        r1 + (R1 + R2) * n,
        rng.normal(size=3),
        Rotation.random(random_state=rng).as_quat(),
        rng.normal(scale=3.0, size=3),
    )
    p = r1 + R1 * n
    if (material_point_velocity(x2, p) - material_point_velocity(x1, p)) @ n > 0.0:
        for x in (x1, x2):
            x[3:6] *= -1.0
            x[10:13] *= -1.0
    return x1, x2, n, p


def collide(x1, body1, x2, body2, e, mu, R1=RADIUS, R2=RADIUS):
    (m1, I1, c1), (m2, I2, c2) = body1, body2
    J, p = sphere_contact_impulse(x1, m1, I1, c1, R1, x2, m2, I2, c2, R2, e, mu)
    return apply_impulse(x1, m1, I1, c1, -J, p), apply_impulse(x2, m2, I2, c2, J, p), J, p


def split_normal(v, n):
    vn = v @ n
    return vn, v - vn * n


# --------------------------------------------------------------------------- sphere-sphere


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_head_on_equal_spheres_elastic_exchange_velocities(mu):
    m, I = 5.0, solid_sphere_inertia(5.0, RADIUS)
    body = (m, I, np.zeros(3))
    x1 = pack_state([0, 0, 0], [0.3, 0.1, 0], [0, 0, 0, 1], [0, 0, 0])
    x2 = pack_state([0.2, 0, 0], [-0.5, 0.1, 0], [0, 0, 0, 1], [0, 0, 0])
    y1, y2, _, p = collide(x1, body, x2, body, 1.0, mu)
    np.testing.assert_allclose(y1[3:6], [-0.5, 0.1, 0], atol=1e-14)
    np.testing.assert_allclose(y2[3:6], [0.3, 0.1, 0], atol=1e-14)
    np.testing.assert_allclose(y1[10:13], 0.0, atol=1e-14)
    np.testing.assert_allclose(y2[10:13], 0.0, atol=1e-14)
    np.testing.assert_allclose(p, [0.1, 0, 0], atol=1e-15)


def test_separating_spheres_get_no_impulse():
    body = (5.0, solid_sphere_inertia(5.0, RADIUS), np.zeros(3))
    x1 = pack_state([0, 0, 0], [-0.3, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    x2 = pack_state([0.2, 0, 0], [0.1, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    _, _, J, _ = collide(x1, body, x2, body, 0.5, 0.5)
    np.testing.assert_array_equal(J, 0.0)


def check_random_impact(rng, e, mu, cm_scale):
    """Restitution at the contact point, momentum conservation, no energy gain, friction cone."""
    R1, R2 = rng.uniform(0.05, 0.2, 2)
    body1 = random_body(rng, cm_scale=cm_scale)
    body2 = random_body(rng, cm_scale=cm_scale)
    x1, x2, n, p_expected = touching_pair(rng, R1, R2)
    y1, y2, J, p = collide(x1, body1, x2, body2, e, mu, R1, R2)
    np.testing.assert_allclose(p, p_expected, atol=1e-14)
    # Newton's restitution at the contact point
    un_before = (material_point_velocity(x2, p) - material_point_velocity(x1, p)) @ n
    un_after = (material_point_velocity(y2, p) - material_point_velocity(y1, p)) @ n
    assert un_before < 0.0
    assert un_after == pytest.approx(-e * un_before, rel=1e-10, abs=1e-13)
    # poses untouched
    np.testing.assert_array_equal(y1[0:3], x1[0:3])
    np.testing.assert_array_equal(y2[6:10], x2[6:10])
    # momentum: linear and angular about N's origin
    P0, H0, sp, sh = momenta([x1, x2], [body1, body2])
    P1, H1, _, _ = momenta([y1, y2], [body1, body2])
    np.testing.assert_allclose(P1, P0, rtol=0, atol=1e-12 * sp)
    np.testing.assert_allclose(H1, H0, rtol=0, atol=1e-12 * sh)
    # energy never increases
    T0 = rigid_body_kinetic_energy(x1, *body1) + rigid_body_kinetic_energy(x2, *body2)
    T1 = rigid_body_kinetic_energy(y1, *body1) + rigid_body_kinetic_energy(y2, *body2)
    assert T1 <= T0 * (1.0 + 1e-12)
    # compressive normal impulse inside the friction cone
    jn, jt = split_normal(J, n)
    assert jn > 0.0
    assert np.linalg.norm(jt) <= mu * jn + 1e-14 * np.linalg.norm(J)


@pytest.mark.parametrize("friction", [False, True])
def test_random_impacts_restitution_conservation_energy(friction):
    rng = np.random.default_rng(1234 + friction)
    for _ in range(N_RANDOM):
        check_random_impact(rng, e=rng.uniform(0.0, 1.0), mu=rng.uniform(0.0, 1.5) if friction else 0.0, cm_scale=0.3)


def test_strongly_coupled_elastic_impacts_with_friction_create_no_energy():
    """Large CM offsets couple the normal and tangential directions; Newton's restitution with
    sticking friction would then often create energy (the model scales friction back)."""
    rng = np.random.default_rng(99)
    for _ in range(N_RANDOM):
        check_random_impact(rng, e=1.0, mu=2.0, cm_scale=0.75)


def test_elastic_frictionless_impact_conserves_energy():
    rng = np.random.default_rng(7)
    for _ in range(50):
        body1, body2 = random_body(rng), random_body(rng)
        x1, x2, _, _ = touching_pair(rng)
        y1, y2, _, _ = collide(x1, body1, x2, body2, 1.0, 0.0)
        T0 = rigid_body_kinetic_energy(x1, *body1) + rigid_body_kinetic_energy(x2, *body2)
        T1 = rigid_body_kinetic_energy(y1, *body1) + rigid_body_kinetic_energy(y2, *body2)
        assert pytest.approx(T0, rel=1e-12) == T1


def test_frictionless_centred_spheres_get_no_spin():
    rng = np.random.default_rng(3)
    for _ in range(50):
        body1 = random_body(rng, cm_offset=False)
        body2 = random_body(rng, cm_offset=False)
        x1, x2, n, _ = touching_pair(rng)
        y1, y2, J, _ = collide(x1, body1, x2, body2, rng.uniform(), 0.0)
        np.testing.assert_allclose(y1[10:13], x1[10:13], rtol=0, atol=1e-12)
        np.testing.assert_allclose(y2[10:13], x2[10:13], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.cross(J, n), 0.0, atol=1e-12 * np.linalg.norm(J))


def test_offset_centre_of_mass_couples_normal_impulse_to_spin():
    """A frictionless central impact still spins a body whose CM is off the line of centres."""
    m = 5.0
    body1 = (m, solid_sphere_inertia(m, RADIUS), np.array([0.0, 0.02, 0.0]))
    body2 = (m, solid_sphere_inertia(m, RADIUS), np.zeros(3))
    x1 = pack_state([0, 0, 0], [0.2, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    x2 = pack_state([0.2, 0, 0], [0, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    y1, _, J, _ = collide(x1, body1, x2, body2, 0.5, 0.0)
    # impulse -J along -x at (0.1, 0, 0), CM at (0, 0.02, 0): torque arm (0.1, -0.02, 0)
    L = np.cross(np.array([0.1, -0.02, 0.0]), -J)
    np.testing.assert_allclose(y1[10:13], np.linalg.solve(body1[1], L), rtol=1e-12)
    assert abs(y1[12]) > 0.0


def glancing_solid_spheres(mu, e=0.6):
    """Equal solid spheres (CM at centre), a glancing impact with spin."""
    m, R = 4.0, RADIUS
    I = solid_sphere_inertia(m, R)
    body = (m, I, np.zeros(3))
    x1 = pack_state([0, 0, 0], [0.4, 0.3, -0.1], [0, 0, 0, 1], [1.0, -2.0, 5.0])
    x2 = pack_state([2 * R, 0, 0], [-0.2, -0.1, 0.05], [0, 0, 0, 1], [0.5, 3.0, -1.0])
    y1, y2, J, p = collide(x1, body, x2, body, e, mu)
    n = np.array([1.0, 0, 0])
    u0 = material_point_velocity(x2, p) - material_point_velocity(x1, p)
    u1 = material_point_velocity(y2, p) - material_point_velocity(y1, p)
    # hand-derived for centred spheres: J_n = (1+e)|u_n| / (2/m); sticking J_t = -u_t / k_t
    # with k_t = 2/m + 2 R^2 / I
    k_t = 2.0 / m + 2.0 * R * R / I[0, 0]
    jn_expected = (1.0 + e) * -u0[0] / (2.0 / m)
    jt_stick = -split_normal(u0, n)[1] / k_t
    return J, n, u0, u1, jn_expected, jt_stick


def test_glancing_impact_sticking_stops_slip():
    J, n, u0, u1, jn_expected, jt_stick = glancing_solid_spheres(mu=2.0)
    jn, jt = split_normal(J, n)
    assert np.linalg.norm(jt_stick) < 2.0 * jn_expected  # inside the cone: sticks
    assert jn == pytest.approx(jn_expected, rel=1e-12)
    np.testing.assert_allclose(jt, jt_stick, rtol=1e-12)
    np.testing.assert_allclose(split_normal(u1, n)[1], 0.0, atol=1e-13)
    assert u1 @ n == pytest.approx(-0.6 * (u0 @ n), rel=1e-12)


def test_glancing_impact_sliding_at_the_cone_boundary():
    mu = 0.05
    J, n, u0, u1, jn_expected, jt_stick = glancing_solid_spheres(mu=mu)
    jn, jt = split_normal(J, n)
    assert np.linalg.norm(jt_stick) > mu * jn_expected  # outside the cone: slides
    assert jn == pytest.approx(jn_expected, rel=1e-12)
    assert np.linalg.norm(jt) == pytest.approx(mu * jn, rel=1e-12)
    ut0 = split_normal(u0, n)[1]
    np.testing.assert_allclose(jt / np.linalg.norm(jt), -ut0 / np.linalg.norm(ut0), atol=1e-12)
    # slip reduced, same direction (isotropic tangential compliance)
    ut1 = split_normal(u1, n)[1]
    assert 0.0 < np.linalg.norm(ut1) < np.linalg.norm(ut0)
    np.testing.assert_allclose(ut1 / np.linalg.norm(ut1), ut0 / np.linalg.norm(ut0), atol=1e-12)


# --------------------------------------------------------------------------- walls


@pytest.mark.parametrize("cm_offset", [False, True])
def test_wall_bounce_frictionless(cm_offset):
    rng = np.random.default_rng(11 + cm_offset)
    for _ in range(50):
        m, I, c = random_body(rng, cm_offset=cm_offset)
        normal = rng.normal(size=3)
        normal /= np.linalg.norm(normal)
        plane_point = rng.normal(size=3)
        x = pack_state(
            rng.normal(size=3),
            rng.normal(size=3),
            Rotation.random(random_state=rng).as_quat(),
            rng.normal(scale=3.0, size=3),
        )
        # put the sphere on the wall and make its contact point approach it
        x[0:3] += ((plane_point - x[0:3]) @ normal + RADIUS) * normal
        p_expected = x[0:3] - RADIUS * normal
        if material_point_velocity(x, p_expected) @ normal > 0.0:
            x[3:6] *= -1.0
            x[10:13] *= -1.0
        assert wall_gap(x, RADIUS, plane_point, normal) == pytest.approx(0.0, abs=1e-14)
        e_w = rng.uniform()
        J, p = wall_contact_impulse(x, m, I, c, RADIUS, plane_point, normal, e_w, 0.0)
        y = apply_impulse(x, m, I, c, J, p)
        np.testing.assert_allclose(p, p_expected, atol=1e-14)
        np.testing.assert_allclose(np.cross(J, normal), 0.0, atol=1e-12 * np.linalg.norm(J))
        vn0, vt0 = split_normal(material_point_velocity(x, p), normal)
        vn1, vt1 = split_normal(material_point_velocity(y, p), normal)
        assert vn1 == pytest.approx(-e_w * vn0, rel=1e-10, abs=1e-13)
        # a normal impulse leaves the CM's tangential velocity alone ...
        vC0 = rigid_body_momentum(x, m, I, c)[0] / m
        vC1 = rigid_body_momentum(y, m, I, c)[0] / m
        np.testing.assert_allclose(split_normal(vC1, normal)[1], split_normal(vC0, normal)[1], atol=1e-12)
        if not cm_offset:  # ... and, with the CM at the centre, the spin and the point's slip
            np.testing.assert_allclose(y[10:13], x[10:13], atol=1e-12)
            np.testing.assert_allclose(vt1, vt0, atol=1e-12)
        # angular momentum about the contact point is conserved (the impulse acts there)
        h0 = rigid_body_momentum(x, m, I, c)[1] - np.cross(p, m * vC0)
        h1 = rigid_body_momentum(y, m, I, c)[1] - np.cross(p, m * vC1)
        np.testing.assert_allclose(h1, h0, atol=1e-12 * (1 + np.linalg.norm(h0)))
        assert rigid_body_kinetic_energy(y, m, I, c) <= rigid_body_kinetic_energy(x, m, I, c) * (1 + 1e-12)


def test_wall_rolling_contact_with_friction_sticks():
    """A solid ball hitting the floor with backspin and mu large ends with no slip; the
    hand-derived tangential impulse is -v_slip / (1/m + R^2/I)."""
    m, R = 3.0, RADIUS
    I = solid_sphere_inertia(m, R)
    x = pack_state([0, 0, R], [1.0, 0, -2.0], [0, 0, 0, 1], [0, -10.0, 0])
    J, p = wall_contact_impulse(x, m, I, np.zeros(3), R, np.zeros(3), np.array([0, 0, 1.0]), 0.5, 5.0)
    y = apply_impulse(x, m, I, np.zeros(3), J, p)
    np.testing.assert_allclose(p, 0.0, atol=1e-15)
    slip0 = 1.0 + 10.0 * R  # v_x + (omega x (p - r))_x = 1 + (-10 * -R)
    assert J[2] == pytest.approx(1.5 * 2.0 * m, rel=1e-12)
    assert J[0] == pytest.approx(-slip0 / (1.0 / m + R * R / I[0, 0]), rel=1e-12)
    np.testing.assert_allclose(material_point_velocity(y, p)[0:2], 0.0, atol=1e-13)
    assert material_point_velocity(y, p)[2] == pytest.approx(1.0, rel=1e-12)


def test_gaps_and_their_rates():
    x1 = pack_state([0, 0, 0], [1, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    x2 = pack_state([0, 0.5, 0], [0, -2, 0], [0, 0, 0, 1], [4, 5, 6])
    assert sphere_gap(x1, x2, 0.1, 0.15) == pytest.approx(0.25)
    assert sphere_gap_rate(x1, x2) == pytest.approx(-2.0)
    # finite difference of the gap along the straight-line motion of the centres
    h = 1e-6
    x1h, x2h = x1.copy(), x2.copy()
    x1h[0:3] += h * x1[3:6]
    x2h[0:3] += h * x2[3:6]
    fd = (sphere_gap(x1h, x2h, 0.1, 0.15) - sphere_gap(x1, x2, 0.1, 0.15)) / h
    assert fd == pytest.approx(sphere_gap_rate(x1, x2), rel=1e-5)
    nrm = np.array([0.0, -1.0, 0.0])
    assert wall_gap(x2, 0.1, np.array([0, 1.0, 0]), nrm) == pytest.approx(0.4)
    assert wall_gap_rate(x2, nrm) == pytest.approx(2.0)


# --------------------------------------------------------------------------- docking


def test_composite_of_two_identical_centred_spheres():
    m, I0 = 5.0, np.diag([0.02, 0.03, 0.04])
    d = 0.2
    M, I, c = composite_mass_properties(m, I0, np.zeros(3), m, I0, np.zeros(3), np.array([d, 0, 0]), np.eye(3))
    assert 2 * m == M
    np.testing.assert_allclose(c, [d / 2, 0, 0], atol=1e-15)
    expected = 2 * I0 + np.diag([0.0, 2 * m * (d / 2) ** 2, 2 * m * (d / 2) ** 2])
    np.testing.assert_allclose(I, expected, rtol=1e-14, atol=1e-16)


def point_masses(m, I_C, c):
    """Six point masses (positions relative to the body origin) with mass m, CM c, inertia I_C
    about the CM: m/6 at c +- s_k v_k along the principal axes v_k."""
    lam, V = np.linalg.eigh(I_C)
    S = 0.5 * lam.sum() - lam  # S_k = sum m x_k^2 along principal axis k
    s = np.sqrt(3.0 * S / m)
    pts = [c + sign * s[k] * V[:, k] for k in range(3) for sign in (1.0, -1.0)]
    return np.full(6, m / 6.0), np.array(pts)


def inertia_of_points(masses, pts):
    com = masses @ pts / masses.sum()
    d = pts - com
    I = sum(mi * ((di @ di) * np.eye(3) - np.outer(di, di)) for mi, di in zip(masses, d))
    return masses.sum(), I, com


def test_composite_mass_properties_against_point_masses():
    rng = np.random.default_rng(5)
    for _ in range(20):
        m1, I1, c1 = random_body(rng)
        m2, I2, c2 = random_body(rng)
        R = Rotation.random(random_state=rng).as_matrix()
        r = rng.normal(size=3)
        mp1, pts1 = point_masses(m1, I1, c1)
        mp2, pts2 = point_masses(m2, I2, c2)
        # the point model reproduces each body on its own
        np.testing.assert_allclose(inertia_of_points(mp1, pts1)[1], I1, atol=1e-14)
        M_ref, I_ref, c_ref = inertia_of_points(np.concatenate([mp1, mp2]), np.vstack([pts1, r + pts2 @ R.T]))
        M, I, c = composite_mass_properties(m1, I1, c1, m2, I2, c2, r, R)
        assert pytest.approx(M_ref, rel=1e-14) == M
        np.testing.assert_allclose(c, c_ref, atol=1e-14)
        np.testing.assert_allclose(I, I_ref, rtol=1e-12, atol=1e-14)


def test_weld_conserves_momentum_and_gives_one_rigid_velocity_field():
    rng = np.random.default_rng(9)
    for _ in range(50):
        body1, body2 = random_body(rng), random_body(rng)
        x1, x2, _, _ = touching_pair(rng)
        y1, r_rel, q_rel = weld_state(x1, *body1, x2, *body2)
        y2 = welded_follower_state(y1, r_rel, q_rel)
        # poses unchanged
        np.testing.assert_array_equal(y1[0:3], x1[0:3])
        np.testing.assert_array_equal(y1[6:10], x1[6:10])
        np.testing.assert_allclose(y2[0:3], x2[0:3], atol=1e-14)
        np.testing.assert_allclose(Rotation.from_quat(y2[6:10]).as_matrix(), rot(x2), atol=1e-14)
        # total momentum of the two bodies, each with its own mass properties
        P0, H0, sp, sh = momenta([x1, x2], [body1, body2])
        P1, H1, _, _ = momenta([y1, y2], [body1, body2])
        np.testing.assert_allclose(P1, P0, atol=1e-12 * sp)
        np.testing.assert_allclose(H1, H0, atol=1e-12 * sh)
        # the composite as one body has the same momentum
        M, I, c = composite_mass_properties(*body1, *body2, r_rel, Rotation.from_quat(q_rel).as_matrix())
        Pc, Hc = rigid_body_momentum(y1, M, I, c)
        np.testing.assert_allclose(Pc, P0, atol=1e-12 * sp)
        np.testing.assert_allclose(Hc, H0, atol=1e-12 * sh)
        # one rigid velocity field: same angular velocity, v2 = v1 + omega x (r2 - r1)
        w1 = rot(y1) @ y1[10:13]
        np.testing.assert_allclose(rot(y2) @ y2[10:13], w1, atol=1e-12)
        np.testing.assert_allclose(y2[3:6], y1[3:6] + np.cross(w1, y2[0:3] - y1[0:3]), atol=1e-12)
        # a perfectly inelastic weld never creates energy
        T0 = rigid_body_kinetic_energy(x1, *body1) + rigid_body_kinetic_energy(x2, *body2)
        assert rigid_body_kinetic_energy(y1, M, I, c) <= T0 * (1 + 1e-12)


def test_weld_of_bodies_already_moving_rigidly_changes_nothing():
    rng = np.random.default_rng(13)
    body1, body2 = random_body(rng), random_body(rng)
    x1, x2, _, _ = touching_pair(rng)
    w_N = rot(x1) @ x1[10:13]
    x2[3:6] = x1[3:6] + np.cross(w_N, x2[0:3] - x1[0:3])
    x2[10:13] = rot(x2).T @ w_N
    y1, r_rel, q_rel = weld_state(x1, *body1, x2, *body2)
    np.testing.assert_allclose(y1, x1, atol=1e-12)
    np.testing.assert_allclose(welded_follower_state(y1, r_rel, q_rel), x2, atol=1e-12)


def test_port_alignment():
    x1 = pack_state([0, 0, 0], [0, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    x2 = pack_state([0.2, 0, 0], [0, 0, 0], [0, 0, 0, 1], [0, 0, 0])
    px = np.array([1.0, 0, 0])
    angle, gap = port_alignment(x1, x2, px, -px, 0.1, 0.1)
    assert angle == pytest.approx(0.0, abs=1e-15)
    assert gap == pytest.approx(0.0, abs=1e-15)
    # body 2 yawed by 90 deg with its port on +y_B2: +y_B2 -> -x_N, facing again
    q90 = Rotation.from_euler("z", 90, degrees=True).as_quat()
    x2r = pack_state([0.2, 0, 0], [0, 0, 0], q90, [0, 0, 0])
    angle, gap = port_alignment(x1, x2r, px, np.array([0, 1.0, 0]), 0.1, 0.1)
    assert angle == pytest.approx(0.0, abs=1e-12)
    assert gap == pytest.approx(0.0, abs=1e-12)
    # misaligned by 25 deg of yaw: angle 25 deg, port points apart by the chord geometry
    theta = np.radians(25.0)
    x2m = pack_state([0.2, 0, 0], [0, 0, 0], Rotation.from_euler("z", theta).as_quat(), [0, 0, 0])
    angle, gap = port_alignment(x1, x2m, 3.0 * px, -px, 0.1, 0.1)  # port length irrelevant
    assert angle == pytest.approx(theta, rel=1e-12)
    port2 = np.array([0.2, 0, 0]) + 0.1 * np.array([-np.cos(theta), -np.sin(theta), 0])
    assert gap == pytest.approx(np.linalg.norm(port2 - [0.1, 0, 0]), rel=1e-12)
    # both ports on +x: pointing the same way, angle pi
    assert port_alignment(x1, x2, px, px, 0.1, 0.1)[0] == pytest.approx(np.pi)


# --------------------------------------------------------------------------- broad phase


def brute_force_pairs(centres, reach):
    """Independent reference in NumPy: every (i < j) with |c_i - c_j| <= reach_i + reach_j."""
    n = len(centres)
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    d = centres[:, None, :] - centres[None, :, :]
    d2 = (d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2]
    s = reach[:, None] + reach[None, :]
    i, j = np.nonzero(np.triu(d2 <= s * s, k=1))
    return np.stack([i, j], axis=1).astype(np.int64)


def check_broadphase(centres, reach):
    centres = np.ascontiguousarray(centres, dtype=np.float64).reshape(-1, 3)
    reach = np.ascontiguousarray(reach, dtype=np.float64)
    ref = brute_force_pairs(centres, reach)
    all_pairs = all_pairs_candidates(centres, reach)
    hashed = broadphase_pairs(centres, reach)
    np.testing.assert_array_equal(all_pairs.reshape(-1, 2), ref)
    np.testing.assert_array_equal(hashed.reshape(-1, 2), ref)
    assert hashed.dtype == np.int64
    return ref


@pytest.mark.parametrize("n", [0, 1])
def test_broadphase_empty_and_single(n):
    assert check_broadphase(np.zeros((n, 3)), np.full(n, 0.1)).shape == (0, 2)


def test_broadphase_dense_pileup_and_sparse():
    rng = np.random.default_rng(21)
    dense = check_broadphase(rng.uniform(0, 1.0, (2000, 3)), rng.uniform(0.0, 0.15, 2000))
    assert len(dense) > 2000
    sparse = check_broadphase(rng.uniform(0, 1000.0, (500, 3)), rng.uniform(0.0, 5.0, 500))
    assert len(sparse) < 50


def test_broadphase_far_clusters_and_coincident_points():
    rng = np.random.default_rng(22)
    a = rng.normal(scale=0.3, size=(100, 3))
    b = rng.normal(scale=0.3, size=(100, 3)) + 1e7  # forces enlarged cells
    centres = np.vstack([a, b, a[:3]])  # three exact duplicates
    reach = np.concatenate([np.full(200, 0.05), np.zeros(3)])
    pairs = check_broadphase(centres, reach)
    assert {(0, 200), (1, 201), (2, 202)} <= set(map(tuple, pairs))
    check_broadphase(np.zeros((5, 3)), np.zeros(5))  # all coincident, zero reach


def test_broadphase_touching_pair_is_a_candidate():
    centres = np.array([[0.0, 0, 0], [0.25, 0, 0], [0.5, 0, 0]])
    pairs = check_broadphase(centres, np.array([0.125, 0.125, 0.125]))
    np.testing.assert_array_equal(pairs, [[0, 1], [1, 2]])


coords = st.floats(-10.0, 10.0, allow_nan=False, width=64)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(0, 40), spread=st.sampled_from([0.01, 0.5, 3.0, 50.0]))
def test_broadphase_matches_all_pairs_hypothesis(data, n, spread):
    pts = (
        np.array(
            data.draw(st.lists(st.tuples(coords, coords, coords), min_size=n, max_size=n)), dtype=np.float64
        ).reshape(-1, 3)
        * spread
    )
    reach = np.array(
        data.draw(st.lists(st.floats(0.0, 2.0, allow_nan=False), min_size=n, max_size=n)), dtype=np.float64
    )
    check_broadphase(pts, reach)


def test_box_walls_and_candidates():
    lo, hi = np.array([0.0, -1.0, 2.0]), np.array([3.0, 1.0, 4.0])
    points, normals = box_walls(lo, hi)
    centre = 0.5 * (lo + hi)
    for k in range(6):  # inward normals: the box centre is on the free side of every wall
        assert (centre - points[k]) @ normals[k] > 0.0
    centres = np.array([[0.05, 0.0, 3.0], [1.5, 0.95, 3.95], [1.5, 0.0, 3.0]])
    reach = np.array([0.1, 0.1, 0.1])
    got = box_wall_candidates(centres, reach, lo, hi)
    expected = np.zeros((3, 6), dtype=bool)
    expected[0, 0] = True  # -x
    expected[1, 3] = True  # +y
    expected[1, 5] = True  # +z
    np.testing.assert_array_equal(got, expected)
    # consistent with the wall gap of every wall: candidate iff gap <= reach - radius (= 0 here)
    for i in range(3):
        x = pack_state(centres[i], [0, 0, 0], [0, 0, 0, 1], [0, 0, 0])
        for k in range(6):
            assert got[i, k] == (wall_gap(x, 0.0, points[k], normals[k]) <= reach[i])


def test_broadphase_with_zero_reach_and_a_subnormal_separation():
    """Two points 1e-195 m apart with zero reach touch as far as the squared distance can tell
    (it underflows to 0); the hash must put them in one cell and agree with the reference."""
    ref = check_broadphase(np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 7.707017443500613e-196]]), np.zeros(2))
    assert ref.tolist() == [[0, 1]]
