"""The lander's kinds (:mod:`hopsim.actors.lander`): each law over rows gives, row by row, what its
documentation states, computed here independently in plain Python; one row and many agree bit
for bit (the free fall of the whole scenario against its closed form: tests/test_cli.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.actors.lander import (
    ALTIMETER,
    DESCENT_CONTROLLER,
    LANDER_BODY,
    descent_command_rows,
    sample_height_rows,
    vertical_acceleration_rows,
)
from hopsim.kernel.kind import ONE, as_bytes


def _one_by_one(loop, table, *per_row):
    """The loop called with each row alone, as a model alone calls it."""
    out = table.copy()
    for i in range(len(out)):
        loop(as_bytes(out[i : i + 1]), ONE, *[a[i : i + 1] for a in per_row])
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_the_bodys_derivative_is_thrust_and_disturbance_over_mass_minus_gravity(n, seed):
    rng = np.random.default_rng(seed)
    table = LANDER_BODY.rows(n)
    table["mass_kg"] = rng.uniform(10.0, 100.0, n)
    table["gravity"] = rng.uniform(0.5, 10.0, n)
    table["max_thrust_N"] = rng.uniform(50.0, 500.0, n)
    table["throttle"] = rng.uniform(0.0, 1.0, n)
    table["thrust_scale"] = np.where(rng.random(n) < 0.3, rng.uniform(0.0, 1.0, n), 1.0)
    table["disturbance_N"] = rng.uniform(-50.0, 50.0, n)
    table["disturbance_on"] = rng.random(n) < 0.5
    table["touched_down"] = rng.random(n) < 0.2
    x = rng.uniform(-100.0, 100.0, (n, 2))
    xdot = np.full((n, 2), np.nan)
    vertical_acceleration_rows(as_bytes(table), np.arange(n), x, xdot)
    for i, r in enumerate(table):
        if r["touched_down"]:
            expected = (0.0, 0.0)
        else:
            force = float(r["throttle"]) * float(r["max_thrust_N"]) * float(r["thrust_scale"])
            if r["disturbance_on"]:
                force += float(r["disturbance_N"])
            expected = (float(x[i, 1]), force / float(r["mass_kg"]) - float(r["gravity"]))
        assert tuple(xdot[i]) == expected
    alone = np.full((n, 2), np.nan)
    for i in range(n):
        vertical_acceleration_rows(as_bytes(table[i : i + 1]), ONE, x[i : i + 1], alone[i : i + 1])
    assert alone.tobytes() == xdot.tobytes()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_the_altimeters_sample_is_height_plus_biases_plus_scaled_noise(n, seed):
    rng = np.random.default_rng(seed)
    table = ALTIMETER.rows(n)
    table["noise_m"] = rng.uniform(0.0, 0.5, n)
    table["bias_m"] = rng.uniform(-1.0, 1.0, n)
    table["fault_bias_m"] = rng.uniform(-1.0, 1.0, n) * (rng.random(n) < 0.5)
    table["noise_scale"] = rng.uniform(0.0, 3.0, n)
    table["draw"] = rng.standard_normal(n)
    h = rng.uniform(0.0, 500.0, n)
    alone = _one_by_one(sample_height_rows, table, h)
    sample_height_rows(as_bytes(table), np.arange(n), h)
    assert table.tobytes() == alone.tobytes()
    for i, r in enumerate(table):
        noise = float(r["noise_m"]) * float(r["noise_scale"]) * float(r["draw"])
        assert r["measured_m"] == float(h[i]) + float(r["bias_m"]) + float(r["fault_bias_m"]) + noise


def _descent_by_python(r: dict, h: float, dt_s: float, empty: bool) -> dict:
    """The controller's law as DescentController's documentation states it, in plain Python."""
    r = dict(r)
    if r["has_prev"]:
        r["v_est"] = r["alpha"] * ((h - r["h_prev"]) / dt_s) + (1.0 - r["alpha"]) * r["v_est"]
    r["h_prev"], r["has_prev"] = h, True
    v_ref = -min(max(r["k_h"] * h, r["touchdown"]), r["max_descent"])
    cmd = 0.0 if empty else r["hover_throttle"] + r["gain"] * (v_ref - r["v_est"])
    r["throttle"] = min(max(cmd, 0.0), 1.0)
    return r


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 20), st.integers(0, 2**32 - 1), st.floats(0.01, 1.0))
def test_the_controllers_command_follows_its_stated_law(n, seed, dt_s):
    rng = np.random.default_rng(seed)
    table = DESCENT_CONTROLLER.rows(n)
    table["hover_throttle"] = rng.uniform(0.1, 0.9, n)
    table["gain"] = rng.uniform(0.0, 2.0, n)
    table["k_h"] = rng.uniform(0.0, 1.0, n)
    table["touchdown"] = rng.uniform(0.1, 2.0, n)
    table["max_descent"] = table["touchdown"] + rng.uniform(0.0, 10.0, n)
    table["alpha"] = rng.uniform(0.0, 1.0, n)
    table["has_prev"] = rng.random(n) < 0.7
    table["h_prev"] = rng.uniform(0.0, 300.0, n)
    table["v_est"] = rng.uniform(-10.0, 2.0, n)
    h, empty = rng.uniform(0.0, 300.0, n), rng.random(n) < 0.2
    before = [{k: r[k].item() for k in DESCENT_CONTROLLER.dtype.names} for r in table]
    alone = table.copy()  # each row alone, dt_s passed whole
    for i in range(n):
        descent_command_rows(as_bytes(alone[i : i + 1]), ONE, h[i : i + 1], dt_s, empty[i : i + 1])
    descent_command_rows(as_bytes(table), np.arange(n), h, dt_s, empty)
    assert table.tobytes() == alone.tobytes()
    for i, r in enumerate(table):
        expected = _descent_by_python(before[i], float(h[i]), dt_s, bool(empty[i]))
        assert {k: r[k].item() for k in expected} == expected
