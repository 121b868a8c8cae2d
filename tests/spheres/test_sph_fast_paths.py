"""The compiled and closed-form fast paths of the SPHERES actors give exactly (bit for bit) what
the plain forms they replace give."""
import random

import numpy as np

from hopsim.actors.spheres.estimator import _coasted_pose
from hopsim.actors.spheres.frames import from_rotvec, normalized, quat_mul
from hopsim.actors.spheres.imu import _measure_quiet
from hopsim.actors.spheres.thrust_prediction import impulse_moment_rows
from hopsim.actors.spheres.valves import NEVER, ValveTimeline

MS = 1_000_000


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=float).view(np.int64)


def test_closed_form_plan_matches_stepping_a_copy():
    rng = random.Random(5)
    for _ in range(300):
        on, off = rng.choice([(6 * MS, 0), (6 * MS, 2 * MS), (0, 0), (3 * MS, 5 * MS)])
        tl = ValveTimeline(on, off)
        t = 0
        for _ in range(20):
            t += rng.choice([0, 1 * MS, 2 * MS, 5 * MS, 7 * MS, 100 * MS])
            if rng.random() < 0.6:
                on_times = (None if rng.random() < 0.2 else
                            [rng.choice([0, 1 * MS, 6 * MS, 7 * MS, 50 * MS]) for _ in range(12)])
                tl.command(t, rng.getrandbits(12), on_times)
            else:
                tl.advance(t, rng.random() < 0.5)
            stepped = tl.clone().advance(NEVER - 1) if tl.next_event_ns < NEVER else []
            assert tl.planned() == stepped


def _impulse_moment_reference(a_s, b_s, spans):
    """The interpreted loop the compiled impulse_moment_rows replaced."""
    I = [[0.0, 0.0, 0.0] for _ in a_s]
    M = [[0.0, 0.0, 0.0] for _ in a_s]
    for t0, t1, fx, fy, fz in spans.tolist():
        for k, b in enumerate(b_s):
            lo, hi = max(a_s[k], t0), min(b, t1)
            if not hi > lo:
                continue
            dur, d_lo, d_hi = hi - lo, b - lo, b - hi
            mom = 0.5 * (d_lo * d_lo - d_hi * d_hi)
            for j, f in enumerate((fx, fy, fz)):
                I[k][j] += dur * f
                M[k][j] += mom * f
    return np.array(I), np.array(M)


def test_compiled_impulse_moment_matches_the_interpreted_loop():
    rng = np.random.default_rng(1)
    for _ in range(200):
        edges = np.sort(rng.integers(0, 400, 8)) * MS
        a_s, b_s = edges[:-1] / 1e9, edges[1:] / 1e9
        starts = rng.integers(0, 380, 5) * MS
        spans = np.column_stack([starts / 1e9, (starts + rng.integers(1, 60, 5) * MS) / 1e9,
                                 rng.standard_normal((5, 3)) * 0.1])
        I, M = impulse_moment_rows(a_s, b_s, spans)
        I_ref, M_ref = _impulse_moment_reference(a_s.tolist(), b_s.tolist(), spans)
        assert np.array_equal(_bits(I), _bits(I_ref)) and np.array_equal(_bits(M), _bits(M_ref))


def test_compiled_imu_measurement_matches_numpy():
    rng = np.random.default_rng(0)
    limit = np.array([0.87] * 3 + [196.0] * 3)
    step = np.array([1e-3] * 3 + [5e-5] * 3)
    scale_error, bias = rng.uniform(-1, 1, 6) * 1e-3, rng.uniform(-1, 1, 6) * 1e-3
    for _ in range(200):
        true = rng.standard_normal((5, 6)) * rng.choice([1e-4, 1e-2, 1.0, 1e3])
        true[0, :3] = [0.5e-3, 1.5e-3, -0.0]          # ties round to even; signed zero
        ref = np.round(np.clip(true, -limit, limit) / step) * step * (1.0 + scale_error) + bias + np.zeros(6)
        assert np.array_equal(_bits(_measure_quiet(true, limit, step, scale_error, bias, np.zeros(6))), _bits(ref))


def test_compiled_coasted_pose_matches_the_frames_helpers():
    rng = np.random.default_rng(2)
    for _ in range(500):
        r, v, w = rng.standard_normal(3), rng.standard_normal(3) * 0.1, rng.standard_normal(3) * 0.05
        if rng.random() < 0.1:
            w = np.zeros(3)
        q = normalized(rng.standard_normal(4))
        dt = float(rng.uniform(-0.2, 0.3))
        r_t, q_t = _coasted_pose(r, v, q, w, dt)
        assert np.array_equal(_bits(r_t), _bits(r + v * dt))
        assert np.array_equal(_bits(q_t), _bits(normalized(quat_mul(q, from_rotvec(w * dt)))))


def _pulse_widths_reference(mixer, force_B, torque_B):
    """The interpreted pulse-width loop the compiled kernel replaced."""
    u = np.array(mixer._forces(force_B, torque_B))
    on_s = u / mixer.thrust_N * mixer.period_s
    longest = float(on_s.max())
    if longest > mixer.max_on_s > 0:
        on_s *= mixer.max_on_s / longest
    widths = []
    for tau in on_s.tolist():
        if tau < mixer.deadband_s:
            widths.append(0)
            continue
        w = min(max(tau + mixer.offset_s, mixer.pw_min_s), mixer.pw_max_s)
        widths.append(int(round(w * 1_000_000_000 / mixer.tick_ns)) * mixer.tick_ns)  # noqa: RUF046 (as it was)
    return widths


def test_compiled_pulse_widths_match_the_interpreted_loop():
    from hopsim.actors.spheres.mixer import ThrusterMixer
    from hopsim.actors.spheres.params import vehicle_params
    rng = np.random.default_rng(3)
    for vehicle in ("spheres_6dof", "spheres_air_table"):
        mixer = ThrusterMixer(vehicle_params(vehicle), 0.1)
        for _ in range(2000):
            scale = rng.choice([1e-4, 1e-2, 0.05, 0.3, 2.0])
            force, torque = rng.standard_normal(3) * scale, rng.standard_normal(3) * scale * 0.1
            assert mixer.pulse_widths_ns(force, torque) == _pulse_widths_reference(mixer, force, torque)


def test_compiled_body_force_matches_position_pd_and_the_rotation():
    from hopsim.actors.spheres.control import body_force_pd, position_pd
    from hopsim.actors.spheres.frames import dcm
    rng = np.random.default_rng(4)
    for _ in range(2000):
        r, v, r_ref, v_ref = (rng.standard_normal(3) for _ in range(4))
        q = normalized(rng.standard_normal(4))
        mass, kp, kd = float(rng.uniform(3, 5)), float(rng.uniform(0.1, 1)), float(rng.uniform(0.5, 2))
        control_z = bool(rng.random() < 0.5)
        force_N = position_pd(r, v, r_ref, v_ref, mass, kp, kd)
        if not control_z:
            force_N[2] = 0.0
        got = body_force_pd(r, v, r_ref, v_ref, mass, kp, kd, control_z, q)
        assert np.array_equal(_bits(got), _bits(dcm(q).T @ force_N))
