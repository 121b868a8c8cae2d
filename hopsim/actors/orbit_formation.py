"""Flight software and radio of a formation of deputies keeping passively safe slots about a chief in orbit.

Slots. Deputy k's slot is a bounded relative orbit given by quasi-nonsingular relative orbital
elements (:mod:`hopsim.dynamics.orbital_elements`; D'Amico 2010) with da = dl = 0 and parallel
relative eccentricity and inclination vectors (:func:`passively_safe_roe`),

    a_c de = de_m (cos phi_k, sin phi_k),   a_c di = di_m (cos phi_k, sin phi_k),   phi_k = 2 pi k / N,

whose first-order Hill-frame motion (x radial, y along-track, z normal, m; theta = u_c - phi_k with
u_c the chief's argument of latitude) is

    x = -de_m cos theta,   y = 2 de_m sin theta,   z = di_m sin theta:

radial and normal motion in quadrature, so |(x, z)| >= min(de_m, di_m) at all times (D'Amico's
e/i-vector separation: an along-track error cannot bring the deputy to the chief). The reference
state (:func:`slot_reference`) is that map and its time derivative (u_c' = n) at the chief's
current u_c.

Estimation (:class:`SlotKeeper`). The deputy's GNSS fix and the chief's (over the radio,
:class:`BroadcastRadio`) are taken at the same instants (both receivers at the control rate, phase
0); the flight software runs ``phase_s`` later, after the chief's packet of the step has arrived,
and pairs the chief's latest fix with its own fix of the *same* instant (a short history of its own
fixes; a packet lost pairs the previous one). Differencing fixes of one instant gives the relative
state without propagating either spacecraft (a fix 0.1 s old is 760 m off along-track, its
difference with another of the same instant is not): rho, rho' = C_HN (r_d - r_c), ... as
:func:`hopsim.dynamics.orbit_frames.inertial_to_hill`. The relative state is then brought to the
control instant by the Clohessy-Wiltshire transition over the fix's age (0.11 s normally; at most
``stale_after_s``; :func:`~hopsim.dynamics.orbit_frames.hill_state_carried`), and u_c from the
chief's fix (the angle from its ascending node to its position,
:func:`~hopsim.dynamics.orbital_elements.argument_of_latitude`) by n times the age; the slot
error below follows in the same compiled call
(:func:`~hopsim.dynamics.orbit_frames.slot_error_carried`). The chief's phase taken from its fix
keeps the reference on the chief's actual along-track motion (J2 changes u_c' from n by ~1e-3).

Control law. The slot error e = rho - rho_ref, e' = rho' - rho_ref' (Hill frame, m and m/s) obeys
the Clohessy-Wiltshire equations with the commanded acceleration a (the reference is a free CW
solution), e'' = A_cw(e, e') + a with A_cw = (3 n^2 e_x + 2 n e'_y, -2 n e'_x, -n^2 e_z). The law
cancels the CW coupling (the feedforward) and closes a PD loop,

    a_H = -A_cw(e, e') - w^2 e - 2 w e'      (m/s^2, Hill frame; w = ``bandwidth_rad_s``),

so that every axis of the error is a critically damped second-order system of natural frequency w,
whatever the orbit: a simple law whose gains say what they do, where an impulsive ROE law would
need its own burn planner. A deadband with hysteresis gates it: the deputy starts firing when
|e| > ``deadband_m`` and stops when |e| < deadband / 2 and |e'| < w deadband / 2; it never fires
otherwise, and never without a fresh pair of fixes (``mode`` "blind": coasting, e.g. during a
GNSS dropout or a radio partition). The acceleration becomes a velocity change over one control
period, dv_N = C_HN^T R_z(n age) a_H T (the Hill frame turned to the control instant), and each
inertial axis's change the on-time |dv| m / F of the thruster pair along it (+x, -x, +y, -y, +z,
-z of the body, which is held aligned with N: ``on_time0`` ... ``on_time5``), at most
``max_on_fraction`` of the period, none below ``min_on_time_s``.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.actors.held_messages import HeldMessages
from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.orbit_frames import slot_error_carried
from hopsim.dynamics.orbital_elements import hill_position_from_roe
from hopsim.kernel import FixedRate, In, Model, NoIo, Out
from hopsim.kernel.bounds import check_probability
from hopsim.kernel.simtime import PeriodicSchedule
from hopsim.schemas import MassProperties, PositionVelocityMeasurement, RelativeStateMeasurement, Scalar, Vector3

AXES = 6
ON_TIME_PORTS = tuple(f"on_time{i}" for i in range(AXES))


def passively_safe_roe(a_c: float, k: int, n: int, de_m: float, di_m: float) -> np.ndarray:
    """(da, dl, dex, dey, dix, diy) of deputy ``k`` of ``n``: parallel e/i vectors of sizes
    ``de_m`` / a_c and ``di_m`` / a_c at phase 2 pi k / n (see the module)."""
    phi = 2.0 * math.pi * k / n
    c, s = detmath.cos(phi), detmath.sin(phi)
    return np.array([0.0, 0.0, de_m * c, de_m * s, di_m * c, di_m * s]) / a_c


def slot_reference(a_c: float, n: float, u_c: float, roe) -> tuple[np.ndarray, np.ndarray]:
    """(rho m, rho' m/s) of the slot in the chief's Hill frame at the chief's argument of
    latitude ``u_c``: the first-order ROE map (da = 0) and its derivative with u_c' = ``n``."""
    _, _, dex, dey, dix, diy = roe
    c, s = detmath.cos(u_c), detmath.sin(u_c)
    rho = hill_position_from_roe(a_c, u_c, roe)
    rho_dot = a_c * n * np.array([dex * s - dey * c, 2.0 * (dex * c + dey * s), dix * c + diy * s])
    return rho, rho_dot


def _norm(v: list[float]) -> float:
    """|v| of a 3-vector: the root of its squares summed in order (detlinalg.norm's result,
    bit for bit: ``tests/test_orbit_formation.py``)."""
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _rv(fix) -> tuple[np.ndarray, np.ndarray]:
    """(r m, v m/s) of a fix (N frame), as two halves of one array."""
    r, v = fix.r_BN_N, fix.v_BN_N
    rv = np.array([r.x, r.y, r.z, v.x, v.y, v.z])
    return rv[0:3], rv[3:6]


def _v3(a) -> Vector3:
    return Vector3(x=float(a[0]), y=float(a[1]), z=float(a[2]))


class BroadcastRadio(Model):
    """The chief's transmitter: forwards each GNSS fix (``fix`` in) on ``air`` (its tie carries the
    link latency), losing each packet with probability ``loss`` (one uniform draw per packet from the
    radio's own generator; none when ``loss`` is 0). A lost packet is lost for every deputy.

    Faults: ``radio_loss`` (``value``: the new probability; ``clear`` restores the configured one),
    ``partition`` (every packet lost until cleared)."""

    inputs = {"fix": In(PositionVelocityMeasurement)}
    outputs = {"air": Out(PositionVelocityMeasurement)}
    io_schedule = NoIo()  # runs when a fix reaches it
    feed_through = True
    accepts_faults = {"radio_loss": ("value", "clear"), "partition": ("clear",)}

    def __init__(self, name: str, loss: float = 0.0):
        super().__init__(name)
        self.configured_loss = self.loss = float(check_probability(loss, f"{name}: loss"))
        self.partitioned = False
        self.sent = 0
        self.lost = 0

    def check_fault(self, fault) -> None:
        if fault.kind == "radio_loss" and not fault.clear:
            check_probability(
                fault.value, f"{self.name}: fault 'radio_loss': value (the probability that a fix is lost)"
            )

    def on_fault(self, fault, t_ns: int) -> None:
        if fault.kind == "partition":
            self.partitioned = not fault.clear
        elif fault.kind == "radio_loss":
            self.loss = self.configured_loss if fault.clear else float(fault.value)  # in [0, 1]: check_fault

    def update_flow_outs(self, t_ns: int) -> None:
        fix = self.take("fix")
        if fix is None:
            return
        draw = self.rng.random() if self.loss > 0.0 else 1.0  # drawn whatever happens: faults shift no draw
        if self.partitioned or draw < self.loss:
            self.lost += 1
            return
        self.sent += 1
        self.write("air", fix)


class SlotKeeper(Model):
    """A deputy's slot-keeping flight software (see the module).

    Inputs ``own`` and ``chief`` (GNSS fixes, N frame; the chief's over the radio), ``mass`` (the
    tank's). Outputs ``on_time0`` ... ``on_time5`` (s, the thruster pairs of the inertial axes) and
    ``error`` (the estimated slot error e, e' in the chief's Hill frame, m and m/s; not valid when
    blind); an on-time is published when it changes (the thruster holds it until the next).
    ``roe``: the slot's relative elements (da must be 0); ``a_c`` (m) and ``n`` (rad/s): the
    chief's semi-major axis and mean motion. ``control=False``: estimate only, never fire.
    Attributes for outcomes: ``mode`` ("hold", "fire", "blind"), ``steps`` per mode,
    ``slot_error_m`` (the latest |e|), ``estimate_age_s`` (of the fixes used)."""

    inputs = {
        "own": In(PositionVelocityMeasurement),
        "chief": In(PositionVelocityMeasurement),
        "mass": In(MassProperties),
    }
    outputs = {
        **{f"on_time{i}": Out(Scalar, on_change=True) for i in range(AXES)},
        "error": Out(RelativeStateMeasurement),
    }
    feed_through = True

    def __init__(
        self,
        name: str,
        vehicle: str,
        roe,
        a_c: float,
        n: float,
        thrust_N: float,
        mass_kg: float,
        rate_hz: float = 0.1,
        phase_s: float = 0.0,
        deadband_m: float = 2.0,
        bandwidth_rad_s: float = 0.01,
        control: bool = True,
        stale_after_s: float = 30.0,
        min_on_time_s: float = 0.02,
        max_on_fraction: float = 0.8,
    ):
        super().__init__(name)
        self.roe = np.array(roe, dtype=float)
        if self.roe.shape != (6,) or self.roe[0] != 0.0:
            raise ValueError(f"{name}: roe must be 6 relative elements with da = 0 (a bounded slot), got {roe}")
        for what, value in (
            ("a_c", a_c),
            ("n", n),
            ("thrust_N", thrust_N),
            ("mass_kg", mass_kg),
            ("rate_hz", rate_hz),
            ("deadband_m", deadband_m),
            ("bandwidth_rad_s", bandwidth_rad_s),
            ("stale_after_s", stale_after_s),
            ("min_on_time_s", min_on_time_s),
        ):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name}: {what} must be a positive number, got {value}")
        self.vehicle = vehicle
        self.a_c, self.n = float(a_c), float(n)
        self.thrust_N, self.mass_kg = float(thrust_N), float(mass_kg)
        self.period_s = 1.0 / rate_hz
        self.io_schedule = FixedRate(rate_hz, phase_s)
        self.schedule = PeriodicSchedule(rate_hz, round(phase_s * 1e9))
        self.k = 0  # the index of the next control step
        self.deadband_m, self.w = float(deadband_m), float(bandwidth_rad_s)
        self.control = bool(control)
        self.stale_ns = round(stale_after_s * 1e9)
        self.min_on_s, self.max_on_s = float(min_on_time_s), float(max_on_fraction) * self.period_s
        self.history: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # own fixes: t_ns -> (r, v), oldest first
        self.mode = "blind"
        self.firing = False
        self.steps = {"hold": 0, "fire": 0, "blind": 0}
        self.slot_error_m = math.nan
        self.estimate_age_s = math.nan
        self._held = HeldMessages()  # the last on-time commands built (a memo)

    def accel_H(self, e, e_dot) -> list[float]:
        """The commanded acceleration (m/s^2, Hill frame) for the slot error ``e`` (m) and ``e_dot``
        (m/s), 3-vectors in the Hill frame: CW feedforward and critically damped PD."""
        n, w = self.n, self.w
        cw = (3.0 * n * n * e[0] + 2.0 * n * e_dot[1], -2.0 * n * e_dot[0], -n * n * e[2])
        return [-cw[i] - w * w * e[i] - 2.0 * w * e_dot[i] for i in range(3)]

    def estimate(self, t_ns: int):
        """(e m, e' m/s as 3-lists in the Hill frame, C_NH at t_ns) from the latest chief fix and
        the own fix of its instant, or None."""
        chief = self.read("chief")
        if chief is None or not chief.valid:
            return None
        fix_ns = chief.t_ns
        if fix_ns not in self.history or t_ns - fix_ns > self.stale_ns:
            return None
        r_d, v_d = self.history[fix_ns]
        r_c, v_c = _rv(chief)
        age_s = (t_ns - fix_ns) / 1e9
        # the relative state brought to t_ns by CW, less the slot's reference there
        e, C_NH = slot_error_carried(r_c, v_c, r_d, v_d, self.n, age_s, self.a_c, self.roe)
        self.estimate_age_s = age_s
        e = e.tolist()
        return e[0:3], e[3:6], C_NH

    def update_flow_outs(self, t_ns: int) -> None:
        # called also when a fix or the mass arrives (feed-through): act at the control steps only
        step_ns = self.schedule.instant(self.k)
        if t_ns < step_ns:
            return
        while step_ns <= t_ns:
            self.k += 1
            step_ns = self.schedule.instant(self.k)
        own = self.read("own")
        if own is not None and own.valid:
            self.history[own.t_ns] = _rv(own)
        while self.history and next(iter(self.history)) < t_ns - self.stale_ns:
            del self.history[next(iter(self.history))]
        on = [0.0] * AXES
        est = self.estimate(t_ns)
        if est is None:
            self.mode, self.firing = "blind", False
        else:
            e, e_dot, C_NH = est
            self.slot_error_m = err = _norm(e)
            if err > self.deadband_m:
                self.firing = True
            elif err < 0.5 * self.deadband_m and _norm(e_dot) < 0.5 * self.w * self.deadband_m:
                self.firing = False
            self.mode = "fire" if self.firing and self.control else "hold"
            if self.mode == "fire":
                mass = self.read("mass")
                m = mass.mass_kg if mass is not None and mass.mass_kg > 0 else self.mass_kg
                dv_N = (detlinalg.matmul(C_NH, np.array(self.accel_H(e, e_dot), dtype=float)) * self.period_s).tolist()
                for axis in range(3):
                    t_on = min(abs(dv_N[axis]) * m / self.thrust_N, self.max_on_s)
                    if t_on >= self.min_on_s:
                        on[2 * axis + (0 if dv_N[axis] > 0 else 1)] = t_on
        if self.wanted("error"):  # a report: built only when something reads it
            report = RelativeStateMeasurement(chief="chief", deputy=self.vehicle, t_ns=t_ns, frame="hill")
            if est is not None:
                report.r_DC_F.CopyFrom(_v3(est[0]))
                report.v_DC_F.CopyFrom(_v3(est[1]))
                report.valid = True
            self.write("error", report)
        self.steps[self.mode] += 1
        for port, command in zip(ON_TIME_PORTS, self._held.get(tuple(on), on_time_commands)):
            self.write(port, command)


def on_time_commands(*on_times_s: float) -> tuple[Scalar, ...]:
    """The on-time commands (s) of the thruster pairs, in the order of their ports."""
    return tuple(Scalar(value=t, unit="s") for t in on_times_s)


__all__ = ["BroadcastRadio", "SlotKeeper", "passively_safe_roe", "slot_reference"]
