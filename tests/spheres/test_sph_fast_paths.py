"""The compiled and closed-form fast paths of the SPHERES actors give exactly (bit for bit) what
the plain forms they replace give."""

import random

import numpy as np

from hopsim.actors.spheres.estimator import _coasted_pose
from hopsim.actors.spheres.frames import from_rotvec, normalized, quat_mul
from hopsim.actors.spheres.imu import _measure_quiet
from hopsim.actors.spheres.thrust_prediction import impulse_moment_rows
from hopsim.actors.spheres.valves import NEVER, ValveTimeline
from hopsim.dynamics import detlinalg

MS = 1_000_000


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=float).view(np.int64)


def _near_numpys_product(got, A, x) -> bool:
    """``got`` is numpy's ``A @ x`` to within the rounding of the sums (numpy's BLAS, which
    depends on the CPU, is the reference only to that tolerance)."""
    return bool(np.all(np.abs(got - A @ x) <= 4 * np.finfo(float).eps * (np.abs(A) @ np.abs(x))))


def _randomly_driven_timelines(seed: int, pauses_ms: list[int], plan_in_hand: bool = False):
    """300 valve timelines, each driven by 20 random commands and advances (pauses drawn from
    ``pauses_ms``); yields the timeline after every step. ``plan_in_hand``: its plan is asked for
    before each step, as the thruster simulator does."""
    rng = random.Random(seed)
    for _ in range(300):
        on, off = rng.choice([(6 * MS, 0), (6 * MS, 2 * MS), (0, 0), (3 * MS, 5 * MS)])
        tl = ValveTimeline(on, off)
        t = 0
        for _ in range(20):
            if plan_in_hand:
                tl.planned_view()
            t += rng.choice(pauses_ms) * MS
            if rng.random() < 0.6:
                on_times = (
                    None
                    if rng.random() < 0.2
                    else [rng.choice([0, 1 * MS, 6 * MS, 7 * MS, 50 * MS]) for _ in range(12)]
                )
                tl.command(t, rng.getrandbits(12), on_times)
            else:
                tl.advance(t, rng.random() < 0.5)
            yield tl


def test_closed_form_plan_matches_stepping_a_copy():
    for tl in _randomly_driven_timelines(5, [0, 1, 2, 5, 7, 100]):
        stepped = tl.clone().advance(NEVER - 1) if tl.next_event_ns < NEVER else []
        assert tl.planned() == stepped


def test_plan_after_a_step_is_the_remaining_plan():
    """advance() takes the plan it leaves from the plan before it (a slice) instead of having
    _future rebuild it: the same list as the closed form of the new state."""
    sliced = 0
    for tl in _randomly_driven_timelines(11, [0, 1, 2, 5, 6, 7, 100], plan_in_hand=True):
        if tl._planned is not None:
            sliced += 1
            assert tl._planned == (tl._future() if tl.next_event_ns < NEVER else [])
    assert sliced > 500


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
        spans = np.column_stack(
            [starts / 1e9, (starts + rng.integers(1, 60, 5) * MS) / 1e9, rng.standard_normal((5, 3)) * 0.1]
        )
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
        true[0, :3] = [0.5e-3, 1.5e-3, -0.0]  # ties round to even; signed zero
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
        assert np.array_equal(_bits(got), _bits(detlinalg.matmul(dcm(q).T, force_N)))
        assert _near_numpys_product(got, dcm(q).T, force_N)


# --------------------------------------------------------------------------- second round
def _synthetic_ranges(rng, r, q, motion):
    """Ranges [beacon][face][receiver] by plain geometry (m), some readings missing (-1)."""
    from hopsim.actors.spheres.frames import dcm
    from hopsim.actors.spheres.params import TestbedParams, vehicle_params

    beacons = np.array(TestbedParams().beacon_positions_N, dtype=float)
    rx = np.array(vehicle_params().receivers.positions_B, dtype=float)
    R = dcm(q)
    out = np.full((len(beacons), *rx.shape[:2]), -1.0)
    for k, p_b in enumerate(beacons):
        dr, dR = motion[k]
        for f in range(rx.shape[0]):
            for j in range(rx.shape[1]):
                if rng.random() < 0.6:
                    out[k, f, j] = np.linalg.norm(p_b - (r + dr + dR @ (R @ rx[f, j]))) + rng.normal(0, 2e-3)
    return out, beacons, rx


def test_solve_pose_moving_matches_solve_pose_with_a_motion_list():
    from hopsim.actors.spheres.frames import dcm, from_rotvec, normalized
    from hopsim.actors.spheres.pose_solver import solve_pose, solve_pose_moving

    rng = np.random.default_rng(7)
    for trial in range(40):
        r = rng.uniform(0.6, 1.7, 3)
        q = normalized(rng.normal(size=4))
        n_b = 5
        dr = rng.normal(0, 0.01, (n_b, 3))
        dR = np.array([dcm(from_rotvec(rng.normal(0, 0.02, 3))) for _ in range(n_b)])
        ranges, beacons, rx = _synthetic_ranges(rng, r, q, list(zip(dr, dR)))
        if trial % 10 == 0:
            ranges[:] = -1.0
            ranges[0, 0, :2] = 1.0  # too few readings
        r0 = r + rng.normal(0, 0.03, 3)
        q0 = quat_mul(from_rotvec(rng.normal(0, 0.1, 3)), q) * rng.uniform(0.5, 2.0)  # not unit
        a = solve_pose(ranges, beacons, rx, r0, q0, list(zip(dr, dR)))
        b = solve_pose_moving(ranges, beacons, rx, r0, q0, dr, dR)
        assert (a.n_ranges, a.iterations, a.converged) == (b.n_ranges, b.iterations, b.converged)
        assert np.array_equal(_bits(a.r_N), _bits(b.r_N)) and np.array_equal(_bits(a.q_BN), _bits(b.q_BN))
        assert _bits(a.rms_m) == _bits(b.rms_m)


def _blend_reference(r, v, q, bias, fix_r, fix_q, r_ref, q_ref, kp, kv, kq, kb, dt_fix):
    """Estimator.gm_update's correction as it was written with the frames helpers."""
    from hopsim.actors.spheres.frames import dcm, quat_conj, to_rotvec

    e_r = fix_r - r_ref
    e_theta_N = to_rotvec(quat_mul(fix_q, quat_conj(q_ref)))
    return (
        r + kp * e_r,
        v + kv * e_r / dt_fix,
        normalized(quat_mul(from_rotvec(kq * e_theta_N), q)),
        bias - kb * detlinalg.matmul(dcm(normalized(quat_mul(from_rotvec(kq * e_theta_N), q))).T, e_theta_N) / dt_fix,
    )


def test_compiled_fix_blend_matches_the_frames_helpers():
    from hopsim.actors.spheres.estimator import _blend_fix

    rng = np.random.default_rng(3)
    for trial in range(500):
        r, v, bias = rng.normal(size=3), rng.normal(0, 0.1, 3), rng.normal(0, 1e-3, 3)
        q, q_ref = normalized(rng.normal(size=4)), normalized(rng.normal(size=4))
        scale = [1.0, 1e-3, 1e-9, 1e-14, 0.0][trial % 5]  # small and vanishing innovations
        fix_q = normalized(quat_mul(from_rotvec(rng.normal(0, scale, 3)), q_ref))
        fix_r = rng.normal(size=3)
        gains = (1.0, 0.0, 1.0, 0.0) if trial % 7 == 0 else tuple(rng.uniform(0, 1, 4))
        dt_fix = float(rng.choice([0.5, 1e-3, 0.2]))
        ref = _blend_reference(r, v, q, bias, fix_r, fix_q, r_ref := rng.normal(size=3), q_ref, *gains, dt_fix)
        got = _blend_fix(r, v, q, bias, fix_r, fix_q, r_ref, q_ref, *[float(g) for g in gains], dt_fix)
        for a, b in zip(ref, got):
            assert np.array_equal(_bits(a), _bits(b))


def _command_at_reference(task, t_ns):
    """PropulsionTask.command_at without the shortcut (the loops only)."""
    from hopsim.actors.spheres.propulsion import NUM_THRUSTERS

    ends = task.end_ns if t_ns >= task.start_ns else task.prev_end_ns
    blanked = task._blank_at(t_ns) is not None
    mask = live = 0
    for i in range(NUM_THRUSTERS):
        if not blanked and t_ns < ends[i]:
            mask |= 1 << i
        if task.sent_mask >> i & 1 and t_ns < task.sent_until[i]:
            live |= 1 << i
    if mask == 0 and live == 0:
        return None
    cut = task._next_blank_start(t_ns)
    until = [0] * NUM_THRUSTERS
    for i in range(NUM_THRUSTERS):
        if mask >> i & 1:
            until[i] = ends[i] if cut is None else min(ends[i], cut)
    if mask == live and all(until[i] == task.sent_until[i] for i in range(NUM_THRUSTERS) if mask >> i & 1):
        return None
    task.sent_mask, task.sent_until = mask, until
    return mask, [(u - t_ns) if u else 0 for u in until]


def test_command_at_shortcut_changes_nothing():
    import copy

    from hopsim.actors.spheres.propulsion import PropulsionTask

    rng = random.Random(11)
    for _ in range(200):
        task = PropulsionTask(MS)
        t = 0
        for _ in range(40):
            t += rng.choice([0, 1, 1, 2, 5, 20, 100]) * MS
            r = rng.random()
            if r < 0.3:
                task.set_pulses(t, [rng.choice([0, 0, 3, 10, 60]) * MS for _ in range(12)])
            elif r < 0.4:
                task.blank(t + rng.choice([0, 1, 3]) * MS, t + rng.choice([5, 30]) * MS)
            ref_task = copy.deepcopy(task)
            assert task.command_at(t) == _command_at_reference(ref_task, t)
            # the maxima the shortcut reads are those of the lists they stand for
            assert task.end_max_ns == max(task.end_ns) and task.prev_end_max_ns == max(task.prev_end_ns)
            assert task.sent_until_max_ns == max(task.sent_until)
            assert (task.sent_mask, task.sent_until) == (ref_task.sent_mask, ref_task.sent_until)


def test_packet_fast_paths_match_the_plain_forms():
    from hopsim.actors.spheres import packets

    rng = np.random.default_rng(2)
    for _ in range(50):
        r, v, q, w = rng.normal(size=3), rng.normal(size=3), rng.normal(size=4), rng.normal(size=3)
        plain = packets._STATE.pack(5, *np.concatenate([r, v, q, w]).tolist())
        assert packets.pack_state(5, r, v, q, w) == plain
        assert packets.pack_state(5, r.tolist(), (0, 1, 2), q, w) == packets._STATE.pack(
            5, *np.concatenate([r, np.array((0, 1, 2)), q, w]).tolist()
        )
        pkt = packets.Packet(3, 1, packets.STATE, 65535, plain)
        assert packets.encode(pkt, 0xA5) == packets.encode_fields(3, 1, packets.STATE, 65535, plain, 0xA5)


def test_thruster_memos_match_recomputation(monkeypatch):
    """In noisy runs (thrust noise on): the wrench remembered for an open mask equals the one
    computed afresh, a plan taken over from the look-ahead equals the one the timeline would
    compute, a look-ahead timeline adopted for a command is what applying the command would have
    made, and the plan-derived values equal their derivation from the plan."""
    from hopsim.actors.spheres.thruster_memo import CommandLookahead, PlanMemo
    from hopsim.actors.spheres.thrusters import ThrusterSimulator
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    checked = {"wrench": 0, "adopt": 0, "derived": 0}
    update, apply = ThrusterSimulator._update_wrench, CommandLookahead.apply
    memo_get = PlanMemo.get

    def checked_update(self):
        update(self)
        got = (list(self._thrust_list), self.firing, self.thrust_N.copy(), self.force_B.copy(), self.torque_B.copy())
        self._compute_wrench()
        assert got[0] == self._thrust_list and got[1] == self.firing
        for a, b in zip(got[2:], (self.thrust_N, self.force_B, self.torque_B)):
            assert np.array_equal(_bits(a), _bits(b))
        checked["wrench"] += 1

    def checked_apply(self, timeline, cmd):
        before = timeline.clone()
        adopting = self._cmd is cmd and self._unchanged_since_cloned(timeline, cmd[0])
        after, applied = apply(self, timeline, cmd)
        if adopting:
            # the command applied to the timeline as it was: same transitions, same state
            assert after is not timeline
            assert before.command(*cmd) == applied
            assert before.same_state(after) and before.__dict__.keys() == after.__dict__.keys()
            assert (before.t_ns, before.open_mask, before.next_event_ns) == (
                after.t_ns,
                after.open_mask,
                after.next_event_ns,
            )
            assert before.planned() == after.planned()
            checked["adopt"] += 1
        return after, applied

    def checked_get(self, plan, derive):
        value = memo_get(self, plan, derive)
        assert value == derive(list(plan))
        checked["derived"] += 1
        return value

    monkeypatch.setattr(ThrusterSimulator, "_update_wrench", checked_update)
    monkeypatch.setattr(CommandLookahead, "apply", checked_apply)
    monkeypatch.setattr(PlanMemo, "get", checked_get)
    for over in ({}, {"thrust_noise": 0.01}):
        spec = get_scenario("leader_follower")
        sim = Simulation(seed=0, batching=True)
        spec.build(sim, spec.make_params(over))
        sim.advance_to(12.0)
    assert checked["wrench"] > 100 and checked["adopt"] > 50 and checked["derived"] > 100


def test_command_lookahead_gives_what_applying_the_commands_gives():
    """One or two commands wait for their tick while the plan is asked for; meanwhile the
    timeline may move on (then the look-ahead copy is stale and must not be adopted). After the
    commands are applied through the look-ahead, the timeline is the one that applied them
    directly: same transitions, same state, same plan, and a plan handed over from the copy is
    the one the timeline computes."""
    from hopsim.actors.spheres.thruster_memo import CommandLookahead

    rng = random.Random(7)
    outcomes = {"adopted": 0, "applied": 0, "plan handed over": 0}
    for _ in range(400):
        on, off = rng.choice([(6 * MS, 0), (6 * MS, 2 * MS), (3 * MS, 5 * MS)])
        tl, ref = ValveTimeline(on, off), ValveTimeline(on, off)
        look = CommandLookahead()
        t = 0
        for _ in range(12):
            t = max(t, tl.t_ns) + rng.choice([0, 1, 5, 7, 100]) * MS
            waiting = []
            for _ in range(rng.choice([1, 1, 2])):
                on_times = None if rng.random() < 0.3 else [rng.choice([0, 6 * MS, 50 * MS]) for _ in range(12)]
                waiting.append((t + rng.choice([0, 2, 10]) * MS, rng.getrandbits(12), on_times))
            waiting.sort(key=lambda c: c[0])
            tl.advance(t, True)
            ref.advance(t, True)
            plan = look.planned(tl, waiting)
            ahead, transitions = ref.clone(), []
            for cmd in waiting:
                transitions += ahead.command(*cmd)
            assert plan == sorted(transitions + ahead.planned())
            if rng.random() < 0.3 and waiting[0][0] > t:  # the timeline moves on meanwhile
                tl.advance(waiting[0][0] - 1)
                ref.advance(waiting[0][0] - 1)
            for cmd in waiting:
                before = tl
                tl, applied = look.apply(tl, cmd)
                outcomes["adopted" if tl is not before else "applied"] += 1
                assert applied == ref.command(*cmd)
            had_plan = tl._planned is not None
            look.hand_plan_to(tl)
            if not had_plan and tl._planned is not None:
                outcomes["plan handed over"] += 1
                assert tl._planned == tl._future()
            assert tl.same_state(ref) and (tl.t_ns, tl.open_mask, tl.next_event_ns) == (
                ref.t_ns,
                ref.open_mask,
                ref.next_event_ns,
            )
            assert tl.planned() == ref.planned()
    assert min(outcomes.values()) > 100, outcomes
