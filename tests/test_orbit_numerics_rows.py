"""The many-spacecraft RK4 calls (:func:`hopsim.dynamics.orbiting_body.rk4_hops`, ``rk4_rows``)
against the one-spacecraft hop (:func:`~hopsim.dynamics.orbiting_body.rk4_hop`, then the
attitude put back on the unit sphere for ``rk4_rows``) row by row, on random states: the same
bits, whatever the batching (one row at a time, rows sharing each instant, the rows' gravity
evaluated LANES at a time). Degree-8 gravity (or a point mass, or mixed degrees), drag, solar
pressure in and out of the Earth's shadow (cylindrical and conical), drag plates, the gravity
gradient, four wheels with viscous and Coulomb or LuGre bearings, spacecraft sharing one epoch
or not, more rows than LANES."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hopsim.dynamics.environment import sun_position_xyz
from hopsim.dynamics.orbiting_body import (
    F_COULOMB,
    F_COULOMB_SPEED,
    F_DAMPING,
    F_STATIC,
    F_STIFFNESS,
    F_STRIBECK_SPEED,
    F_VISCOUS,
    FRICTION_PARAMS,
    LANES,
    N_LOADS,
    orbiting_derivative,
    parameters,
    rk4_hop,
    rk4_hops,
    rk4_rows,
    scratch,
)
from hopsim.dynamics.spatial import quat_normalize
from hopsim.dynamics.spherical_harmonics import (
    ggm03s,
    spherical_harmonic_acceleration_lanes,
    spherical_harmonic_acceleration_xyz,
)

DEGREE = 8
EPOCH_JD = 2460310.5


def unit(v):
    return v / np.linalg.norm(v)


def random_fleet(rng, n, *, lugre=False, n_wheels=4, plates=0, shared_epoch=True, degrees=(DEGREE,)):
    """Stacked arrays of ``n`` random spacecraft (as an orbiting fleet holds them) and the field;
    row i's spherical-harmonic degree ``degrees[i % len(degrees)]`` (-1: a point mass)."""
    field = ggm03s()
    C, S = field.unnormalized(DEGREE)
    size = 13 + n_wheels * (2 if lugre else 1)
    X = np.zeros((n, size))
    P, loads = [], np.zeros((n, N_LOADS))
    inertia_B, inertia_inv, inertia_total = np.zeros((n, 3, 3)), np.zeros((n, 3, 3)), np.zeros((n, 3, 3))
    G = np.zeros((n, n_wheels, 3))
    J, motor = np.zeros((n, n_wheels)), np.zeros((n, n_wheels))
    friction = np.zeros((n, n_wheels, FRICTION_PARAMS))
    for i in range(n):
        epoch = EPOCH_JD if shared_epoch else EPOCH_JD + rng.uniform(0.0, 300.0)
        sun = unit(np.array(sun_position_xyz(epoch + 2.0 / 86400.0)))
        radius = rng.uniform(6.65e6, 7.3e6)
        kind = i % 4  # sunlit, umbra, the shadow's edge (penumbra), anywhere
        if kind == 1:
            r = -radius * sun + rng.normal(0.0, 1e5, 3)
        elif kind == 2:
            side = unit(np.cross(sun, rng.normal(size=3)))
            r = radius * unit(-math.sqrt(max(radius**2 - 6.378e6**2, 0.0)) / radius * sun + 6.378e6 / radius * side)
        elif kind == 0:
            r = radius * unit(sun + 0.3 * rng.normal(size=3))
        else:
            r = radius * unit(rng.normal(size=3))
        v = math.sqrt(field.mu / radius) * unit(np.cross(r, rng.normal(size=3))) + rng.normal(0.0, 5.0, 3)
        q = unit(rng.normal(size=4))
        X[i, 0:3], X[i, 3:6], X[i, 6:10] = r, v, q
        X[i, 10:13] = rng.normal(0.0, 0.01, 3)
        X[i, 13 : 13 + n_wheels] = rng.normal(0.0, 100.0, n_wheels)
        if lugre:
            X[i, 13 + n_wheels :] = rng.normal(0.0, 1e-4, n_wheels)
        records = (
            np.concatenate(
                [
                    np.concatenate([unit(rng.normal(size=3)), [rng.uniform(0.5, 2.0), 2.2], rng.normal(0.0, 0.5, 3)])
                    for _ in range(plates)
                ]
            )
            if plates
            else ()
        )
        P.append(
            parameters(
                field.mu,
                field.radius,
                degrees[i % len(degrees)],
                epoch,
                rng.uniform(0.5, 4.0) * (i % 5 != 3),
                4e-13,
                500e3,
                60e3,
                rng.uniform(0.5, 3.0) * (i % 7 != 5),
                rng.uniform(100.0, 600.0),
                bool(i % 2),
                lugre,
                plates=records,
                conical_shadow=bool(i % 3 == 2),
            )
        )
        loads[i] = rng.normal(0.0, 0.1, N_LOADS) * (i % 6 != 0)
        if i % 6 == 1:
            loads[i, 0:3] = [0.0, -0.0, 0.0]
        inertia = np.diag(rng.uniform(100.0, 400.0, 3)) + 5.0 * np.eye(3)[[1, 2, 0]] + 5.0 * np.eye(3)[[2, 0, 1]]
        inertia_B[i], inertia_inv[i] = inertia, np.linalg.inv(inertia)
        inertia_total[i] = inertia + np.diag(rng.uniform(0.0, 1.0, 3))
        G[i] = np.array([unit(rng.normal(size=3)) for _ in range(n_wheels)]).reshape(n_wheels, 3)
        J[i] = rng.uniform(0.05, 0.1, n_wheels)
        motor[i] = rng.normal(0.0, 0.01, n_wheels)
        friction[i, :, F_VISCOUS] = 1e-5
        friction[i, :, F_COULOMB] = 5e-4
        friction[i, :, F_COULOMB_SPEED] = 0.1
        friction[i, :, F_STATIC] = 8e-4
        friction[i, :, F_STRIBECK_SPEED] = 0.1
        friction[i, :, F_STIFFNESS] = 1e-3
        friction[i, :, F_DAMPING] = 1e-4
    return (X, np.zeros_like(X), np.array(P), loads, inertia_B, inertia_inv, inertia_total, C, S, G, J, motor, friction)


def one_by_one(
    rows,
    t0_s,
    steps_s,
    X,
    Xdot,
    P,
    loads,
    inertia_B,
    inertia_inv,
    inertia_total,
    C,
    S,
    G,
    J,
    motor,
    friction,
    normalize,
):
    """The scalar hop for each row of ``rows`` (copies); its state and end derivative."""
    X, Xdot = X.copy(), Xdot.copy()
    for r in rows:
        VW, f, K = scratch(DEGREE, J.shape[1], X.shape[1])
        rk4_hop(
            t0_s,
            steps_s,
            X[r],
            Xdot[r],
            P[r],
            loads[r],
            inertia_B[r],
            inertia_inv[r],
            inertia_total[r],
            C,
            S,
            G[r],
            J[r],
            motor[r],
            friction[r],
            VW,
            f,
            K,
        )
        if normalize:
            X[r, 6:10] = quat_normalize(X[r, 6:10])
    return X, Xdot


def same_bits(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


CASES = [
    dict(),
    dict(lugre=True),
    dict(shared_epoch=False),
    dict(plates=3),
    dict(n_wheels=0),
    dict(degrees=(-1,)),
    dict(degrees=(8, 4)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "plain")
@pytest.mark.parametrize("n", [1, 7, 33, 70])
def test_rk4_hops_and_rows_are_the_scalar_hop_bit_for_bit(case, n):
    rng = np.random.default_rng(17 + n)
    X, Xdot, P, *rest = random_fleet(rng, n, **case)
    steps = np.array([1.0, 0.5, 0.25])
    for t0 in (0.0, 1234.5):
        want, want_dot = one_by_one(range(n), t0, steps, X, Xdot, P, *rest, normalize=False)
        got, got_dot = X.copy(), Xdot.copy()
        rk4_hops(t0, steps, got, got_dot, P, *rest)
        assert same_bits(got, want) and same_bits(got_dot, want_dot)
        rows = np.array([i for i in range(n) if i % 3 != 1][::-1], dtype=np.int64)
        want, want_dot = one_by_one(rows, t0, steps, X, Xdot, P, *rest, normalize=True)
        got, got_dot = X.copy(), Xdot.copy()
        rk4_rows(rows, t0, steps, got, got_dot, P, *rest, *scratch(DEGREE, rest[-2].shape[1], X.shape[1]))
        assert same_bits(got, want) and same_bits(got_dot, want_dot)


def test_consecutive_hops_are_the_scalar_hops_bit_for_bit():
    """Hop after hop (each starting where the last ended), loads changed between some of them."""
    rng = np.random.default_rng(5)
    X, Xdot, P, loads, *rest = random_fleet(rng, 12)
    rows = np.arange(12, dtype=np.int64)
    work = scratch(DEGREE, 4, X.shape[1])
    got, got_dot = X.copy(), Xdot.copy()
    want, want_dot = X.copy(), Xdot.copy()
    for k in range(6):
        if k == 3:
            loads = loads.copy()
            loads[2, 0] += 0.5
        want, want_dot = one_by_one(rows, float(k), np.array([1.0]), want, want_dot, P, loads, *rest, normalize=True)
        rk4_rows(rows, float(k), np.array([1.0]), got, got_dot, P, loads, *rest, *work)
        assert same_bits(got, want) and same_bits(got_dot, want_dot)


def test_the_published_derivative_is_the_derivative_at_the_hops_end():
    rng = np.random.default_rng(3)
    X, Xdot, P, loads, inertia_B, inertia_inv, inertia_total, C, S, G, J, motor, friction = random_fleet(rng, 5)
    rk4_hops(
        10.0,
        np.array([1.0, 1.0]),
        X,
        Xdot,
        P,
        loads,
        inertia_B,
        inertia_inv,
        inertia_total,
        C,
        S,
        G,
        J,
        motor,
        friction,
    )
    VW, f, _ = scratch(DEGREE, 4, X.shape[1])
    for i in range(5):
        xdot = np.empty(X.shape[1])
        orbiting_derivative(
            12.0,
            X[i],
            xdot,
            P[i],
            loads[i],
            inertia_B[i],
            inertia_inv[i],
            inertia_total[i],
            C,
            S,
            G[i],
            J[i],
            motor[i],
            friction[i],
            VW,
            f,
        )
        assert same_bits(xdot, Xdot[i])


def test_more_rows_than_lanes_are_tested():
    assert LANES < 70


@pytest.mark.parametrize("degree", [0, 1, 2, 8, 20])
def test_spherical_harmonics_by_lanes_are_the_one_point_arithmetic(degree):
    rng = np.random.default_rng(degree)
    field = ggm03s()
    C, S = field.unnormalized(degree)
    n = 45
    r = rng.normal(size=(n, 3)) * rng.uniform(6.5e6, 4.2e7, (n, 1)) / math.sqrt(3.0)
    r[0], r[1], r[2] = [0.0, 0.0, 7e6], [7e6, -0.0, 0.0], [-0.0, 6.9e6, -1.0]
    want = np.zeros((n, 3))
    d = degree + 2
    for i in range(n):
        want[i] = spherical_harmonic_acceleration_xyz(
            r[i, 0], r[i, 1], r[i, 2], field.mu, field.radius, C, S, degree, np.zeros((d, d)), np.zeros((d, d))
        )
    x, y, z = (np.ascontiguousarray(r[:, k]) for k in range(3))
    ax, ay, az = np.zeros(n), np.zeros(n), np.zeros(n)
    spherical_harmonic_acceleration_lanes(
        x,
        y,
        z,
        field.mu,
        field.radius,
        C,
        S,
        degree,
        np.zeros((d, d, n)),
        np.zeros((d, d, n)),
        np.zeros((4, n)),
        n,
        ax,
        ay,
        az,
    )
    assert same_bits(np.column_stack([ax, ay, az]), want)
