"""The constellation scenario: Walker geometry, drag-driven along-track drift against the decay
law, station keeping inside the box, the effect of each fault, and Ray's stream equal to local's.

The expected values are typed here from the textbooks (Walker 1984; the decay of a circular orbit
under drag, e.g. Vallado 2013 sec. 9.6 / King-Hele), not taken from the scenario's code."""

import math

import numpy as np
import pytest

import hopsim.scenarios.constellation  # noqa: F401  (registers the scenario)
from hopsim.dynamics.orbital_elements import elements_from_state
from hopsim.scenarios.runner import run_scenario

MU = 398600441500000.0  # GGM03S
R_E = 6378136.3  # GGM03S reference radius (m)
J2 = 1.0826353865466185e-3  # GGM03S, -C20 unnormalised
W_EARTH = 7.2921150e-5  # rad/s
DEG = math.pi / 180.0

# station keeping under 300 times the tabulated density (decay ~0.04 m/s: a box of 0.05 deg is left
# within a few orbits), coarse 300 s control period
SK = {
    "n_satellites": 4,
    "n_planes": 2,
    "phasing": 1,
    "density_scale": 300.0,
    "box_deg": 0.05,
    "return_orbits": 1.0,
    "control_period_s": 300.0,
}
ORBITS_4 = 23_000.0


def argument_of_latitude(r, v):
    """u (rad, [0, 2 pi)) of r on the orbit through (r, v): from the ascending node, in the plane."""
    h = np.cross(r, v)
    h = h / np.linalg.norm(h)
    node = np.cross([0.0, 0.0, 1.0], h)
    node = node / np.linalg.norm(node)
    return math.atan2(np.cross(h, node) @ r, node @ r) % (2 * math.pi)


def wrap(x):
    return (x + math.pi) % (2 * math.pi) - math.pi


def names(n_planes, per_plane):
    return [f"p{k:02d}s{j:02d}" for k in range(n_planes) for j in range(per_plane)]


# ----------------------------------------------------------------------------- 1. geometry
@pytest.mark.parametrize("degree", [0, 2])
def test_initial_states_follow_walkers_formula(degree):
    T, P, F, h, inc = 12, 4, 3, 700e3, 60.0
    r = run_scenario(
        "constellation",
        {
            "n_satellites": T,
            "n_planes": P,
            "phasing": F,
            "altitude_m": h,
            "inclination_deg": inc,
            "gravity_degree": degree,
        },
        duration_s=60.0,
        keep_sim=True,
    )
    a0 = R_E + h
    for k in range(P):
        for j in range(T // P):
            x0 = r.sim.model(f"p{k:02d}s{j:02d}").x0
            a, e, i, raan, _, _ = elements_from_state(x0[0:3], x0[3:6], MU)
            u = argument_of_latitude(x0[0:3], x0[3:6])
            assert abs(wrap(raan - k * 360.0 / P * DEG)) < 1e-12
            assert abs(wrap(u - (j * 360.0 * P / T + k * F * 360.0 / T) * DEG)) < 1e-12
            assert i == pytest.approx(inc * DEG, abs=1e-12) and e < 1e-12
            # a circle of the altitude, mean-circular under J2: a_osc = a + (3/2) J2 R^2/a sin^2 i cos 2u
            expected = a0 + (1.5 * J2 * R_E**2 / a0 * math.sin(inc * DEG) ** 2 * math.cos(2 * u) if degree else 0.0)
            assert a == pytest.approx(expected, abs=1e-4) and np.linalg.norm(x0[0:3]) == pytest.approx(a, abs=1e-4)


def test_a_walker_constellation_needs_whole_planes():
    from hopsim.scenarios import ScenarioError

    with pytest.raises(ScenarioError, match="must be a multiple of n_planes"):
        run_scenario("constellation", {"n_satellites": 10, "n_planes": 3}, duration_s=1.0)


# ----------------------------------------------------------------------------- 2. drag drift
def test_along_track_drift_follows_the_drag_decay():
    """Without station keeping (point mass, so the drift is drag's alone): a decays at
    da/dt = -rho (C_D A / m) sqrt(mu a) (1 - w_E a cos i / v)^2 (the atmosphere turns with the
    Earth); n = sqrt(mu / a^3) gives dn/dt = -(3/2) (n / a) da/dt and the argument of latitude falls
    ahead by du(t) = -(3/4) (n / a) (da/dt) t^2. Two satellites of different ballistic coefficients
    part by the difference."""
    h, inc, scale, t_end = 550e3, 53.0, 3000.0, 17_000.0
    r = run_scenario(
        "constellation",
        {
            "n_satellites": 4,
            "n_planes": 2,
            "gravity_degree": 0,
            "station_keeping": False,
            "density_scale": scale,
            "control_period_s": 500.0,
            "altitude_m": h,
            "inclination_deg": inc,
        },
        seed=3,
        duration_s=t_end,
        keep_sim=True,
    )
    a = R_E + h
    n, v = math.sqrt(MU / a**3), math.sqrt(MU / a)
    rho = scale * 6.967e-13 * math.exp(-(h - 500e3) / 63.822e3)  # Vallado Table 8-4, 500 km row
    wind = (1.0 - W_EARTH * a * math.cos(inc * DEG) / v) ** 2
    drift, predicted = {}, {}
    for name in names(2, 2):
        body = r.sim.model(name)
        u0 = argument_of_latitude(body.x0[0:3], body.x0[3:6])
        drift[name] = wrap(argument_of_latitude(body.x[0:3], body.x[3:6]) - u0 - n * t_end)
        a_dot = -rho * body.cd_area_m2 / body.mass_kg * math.sqrt(MU * a) * wind
        predicted[name] = -0.75 * (n / a) * a_dot * t_end**2
    hi = max(drift, key=lambda s: r.sim.model(s).cd_area_m2)
    lo = min(drift, key=lambda s: r.sim.model(s).cd_area_m2)
    assert r.sim.model(hi).cd_area_m2 > 1.2 * r.sim.model(lo).cd_area_m2
    assert drift[hi] - drift[lo] == pytest.approx(predicted[hi] - predicted[lo], rel=0.1)
    assert drift[hi] - drift[lo] > 0.1 * DEG
    for name in drift:
        assert drift[name] == pytest.approx(predicted[name], rel=0.1)
    assert r.outcome["manoeuvres"] == 0 and r.outcome["dv_total_mps"] == 0.0


# ----------------------------------------------------------------------------- 3. station keeping
def truth_phase_errors(result, name):
    """(t s, e rad) of satellite ``name`` from its recorded truth states: u - u_slot(t)."""
    sk = result.sim.model(f"{name}_sk")
    out = [
        (
            e.t_ns / 1e9,
            argument_of_latitude(
                np.array([e.payload.r_BN_N.x, e.payload.r_BN_N.y, e.payload.r_BN_N.z]),
                np.array([e.payload.v_BN_N.x, e.payload.v_BN_N.y, e.payload.v_BN_N.z]),
            ),
        )
        for e in result.recorder.envelopes
        if e.topic == f"{name}/state"
    ]
    t = np.array([x[0] for x in out])
    return t, np.array([wrap(u - sk.u0_rad - sk.u_dot_radps * ti) for ti, u in out])


@pytest.fixture(scope="module")
def kept():
    return run_scenario("constellation", SK, seed=1, duration_s=ORBITS_4, keep_stream=True)


def test_station_keeping_holds_every_satellite_in_its_box(kept):
    """The orbit-averaged phase error (truth, over one orbit: the J2 short-period terms cancel) stays
    within the box plus the control's overshoot: drifting at most 0.1 deg per orbit outward for one
    control period and one burn (each at most 300 s) after leaving it, 0.01 deg; doubled. The
    osculating error adds the short-period terms, about 0.1 deg at 550 km."""
    box = SK["box_deg"] * DEG
    u_dot = kept.sim.model("p00s00_sk").u_dot_radps
    for name in names(2, 2):
        t, e = truth_phase_errors(kept, name)
        k = round(2 * math.pi / u_dot / (t[1] - t[0]))
        orbit_mean = np.convolve(e, np.ones(k) / k, mode="valid")
        assert np.abs(orbit_mean).max() <= box + 0.02 * DEG, name
        assert np.abs(e).max() <= box + 0.12 * DEG, name
        assert kept.sim.model(f"{name}_sk").manoeuvres >= 1
    out = kept.outcome
    assert out["dv_total_mps"] > 0 and out["dv_max_mps"] > 0 and out["manoeuvres"] >= 4
    assert out["phase_error_max_deg"] <= SK["box_deg"] + 0.12


# ----------------------------------------------------------------------------- 4. faults
def worst_drag(result) -> str:
    return max(names(2, 2), key=lambda s: result.sim.model(s).cd_area_m2)


@pytest.mark.parametrize("kind", ["thruster_stuck_off", "dropout"])
def test_each_fault_lets_its_satellite_drift_out(kept, kind):
    """A prograde thruster stuck off: the flight software commands its burns but no propellant
    flows; a GNSS dropout: the software stops manoeuvring. Either way drag carries the satellite
    ahead, out of its box, while the others are kept."""
    victim = worst_drag(kept)
    target = f"{victim}_thr0" if kind == "thruster_stuck_off" else f"{victim}_gnss"
    r = run_scenario(
        "constellation",
        {**SK, "faults": [{"t_s": 1.0, "target": target, "kind": kind}]},
        seed=1,
        duration_s=ORBITS_4,
        keep_stream=True,
    )
    sk, tank = r.sim.model(f"{victim}_sk"), r.sim.model(f"{victim}_tank")
    last_orbit = 2 * math.pi / sk.u_dot_radps
    t_ok, e_ok = truth_phase_errors(kept, victim)
    t_bad, e_bad = truth_phase_errors(r, victim)
    kept_mean, faulted_mean = e_ok[t_ok >= t_ok[-1] - last_orbit].mean(), e_bad[t_bad >= t_bad[-1] - last_orbit].mean()
    assert faulted_mean > 2 * SK["box_deg"] * DEG and abs(kept_mean) <= SK["box_deg"] * DEG  # ahead, out of the box
    assert float(tank.x[0]) == tank.fuel0_kg  # no propellant spent
    if kind == "dropout":
        assert sk.manoeuvres == 0
    else:
        assert sk.manoeuvres >= 1
    assert r.outcome["out_of_box"] > kept.outcome["out_of_box"]
    assert r.outcome["dv_total_mps"] < kept.outcome["dv_total_mps"]
    assert r.outcome["phase_error_max_deg"] > kept.outcome["phase_error_max_deg"] + 0.05


# ----------------------------------------------------------------------------- 5. Ray
@pytest.mark.ray
def test_ray_shards_give_the_local_stream(shared_ray):
    params = {"n_satellites": 4, "n_planes": 2, "control_period_s": 300.0, "density_scale": 300.0}
    local = run_scenario("constellation", params, seed=4, duration_s=1800.0, keep_stream=True)
    remote = run_scenario(
        "constellation", params, seed=4, duration_s=1800.0, keep_stream=True, backend="ray", placement="shards:2"
    )
    assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()
    assert remote.stream_sha256 == local.stream_sha256 and remote.outcome == local.outcome
