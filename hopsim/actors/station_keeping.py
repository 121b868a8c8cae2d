"""Along-track station keeping of a satellite in its constellation slot, by semi-major-axis bias.

The slot is a point on the reference circular orbit (semi-major axis ``a_m``, inclination i) whose
argument of latitude advances at the mean rate of that orbit, J2 included (first-order secular
rates of the argument of perigee and the mean anomaly of a circular orbit, Vallado, Fundamentals
of Astrodynamics and Applications, 4th ed., 2013, sec. 9.6):

    u_slot(t) = u0 + u_dot t,
    u_dot = n [1 + (3/2) J2 (R/a)^2 (4 cos^2 i - 1)],    n = sqrt(mu / a^3)

(the sum of omega_dot = (3/4) n J2 (R/a)^2 (5 cos^2 i - 1) and M_dot = n [1 + (3/4) J2 (R/a)^2
(3 cos^2 i - 1)]; J2 = 0 for a point mass). The phase error is e = u - u_slot (rad, wrapped to
[-pi, pi); positive: ahead of the slot), with u the osculating argument of latitude of the GNSS fix
(position and velocity in the inertial frame N, m and m/s), measured from the fix's own ascending
node. Along-track, e is a e metres.

The osculating u carries short-period terms (J2 at twice the orbital frequency, the residual
eccentricity at once; about 0.1 deg peak to peak at 550 km). The flight software removes them by
working over one nodal period W = 2 pi / u_dot of samples (``window_s``):

    drift rate  e_dot = (e(t) - e(t - W)) / W           (exact for terms of period W and W/2)
    mean error  e_bar = mean of e over [t - W, t] + e_dot W / 2    (brought to t)

Control (the standard LEO along-track keeping by semi-major-axis bias; Wertz and Larson, Space
Mission Analysis and Design, 3rd ed., 1999, sec. 6.2.3; Vallado 2013, ch. 11): while |e_bar| <=
``box_rad`` nothing is done. When e_bar is out of the box and not already drifting back
(e_bar e_dot >= 0), the software aims the drift at the far edge of the box in ``return_time_s``,

    e_dot* = -sign(e_bar) (|e_bar| + box) / return_time,

and changes the semi-major axis by da = -(2/3) (a / n) (e_dot* - e_dot) (from dn = -(3/2) (n / a)
da) with an along-track velocity change dv = (n / 2) da (vis-viva for a circular orbit, da = 2
dv / n), i.e. dv = -(a / 3) (e_dot* - e_dot) (m/s; positive: along the velocity, raising a, so the
satellite falls back). Under drag a decays, e accelerates forward, and every correction also
restores the decayed a: no separate semi-major-axis keeping is needed. The velocity change is
fired on the prograde thruster (output ``on_time0``, s) or the retrograde one (``on_time1``) as
on-times dv m / F of at most ``max_on_fraction`` of a control period, over as many periods as it
takes (m: the latest ``mass`` message, else ``mass_kg``). The thrusters are fixed along the body
x axis, which the scenario keeps on the velocity (see :mod:`hopsim.scenarios.constellation`).
After a firing the window restarts: the next decision comes one nodal period after the last pulse.

GNSS ``dropout``: invalid fixes are ignored; the software neither samples nor fires (a burn under
way is suspended) until valid fixes return, and then waits a full window of fresh samples: it
stops manoeuvring and never manoeuvres on stale data. With ``enabled`` False it only monitors.

Read-outs for outcomes: ``phase_error_rad`` (the latest osculating e), ``mean_error_rad`` and
``drift_radps`` (the latest window estimates, NaN before the first full window), ``manoeuvres``
(corrections decided), ``dv_commanded_mps`` (the velocity change fired, m/s).
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics.orbital_elements import argument_of_latitude
from hopsim.kernel import FixedRate, In, Model, Out
from hopsim.schemas import MassProperties, PositionVelocityMeasurement, Scalar

TWO_PI = 2.0 * math.pi


def slot_rate(a_m: float, inclination_rad: float, mu: float, j2: float, radius_m: float) -> float:
    """u_dot (rad/s): the mean rate of the argument of latitude of a circular orbit of semi-major
    axis ``a_m`` (m) and inclination (rad) under J2 (``j2`` = 0: n). See the module."""
    n = math.sqrt(mu / (a_m * a_m * a_m))
    ratio, ci = radius_m / a_m, detmath.cos(inclination_rad)
    return n * (1.0 + 1.5 * j2 * (ratio * ratio) * (4.0 * (ci * ci) - 1.0))


def phase_error(r_N, v_N, t_s: float, u0_rad: float, u_dot_radps: float) -> float:
    """e = u - u_slot(t) (rad, wrapped to [-pi, pi)): positive when ahead of the slot."""
    return math.remainder(argument_of_latitude(r_N, v_N) - u0_rad - u_dot_radps * t_s, TWO_PI)


class StationKeeping(Model):
    """Along-track slot keeping by semi-major-axis bias (see the module).

    ``u0_rad`` and ``u_dot_radps``: the slot's argument of latitude at t = 0 (rad) and its rate
    (rad/s, :func:`slot_rate`); ``a_m``: the reference semi-major axis (m); ``box_rad``: the
    half-width of the box (rad); ``thrust_N`` (N) and ``mass_kg`` (kg, until a mass message
    comes); ``window_s``: the averaging window (s, one nodal period); ``return_time_s`` (s).
    """

    inputs = {"fix": In(PositionVelocityMeasurement), "mass": In(MassProperties)}
    outputs = {
        "on_time0": Out(Scalar, on_change=True),
        "on_time1": Out(Scalar, on_change=True),
    }  # held by the thrusters
    feed_through = True

    def __init__(
        self,
        name: str,
        u0_rad: float,
        u_dot_radps: float,
        a_m: float,
        box_rad: float,
        thrust_N: float,
        mass_kg: float,
        window_s: float,
        return_time_s: float,
        rate_hz: float = 1.0 / 60.0,
        enabled: bool = True,
        max_on_fraction: float = 0.9,
        deadband_mps: float = 1e-4,
    ):
        super().__init__(name)
        for what, value in (
            ("a_m", a_m),
            ("box_rad", box_rad),
            ("thrust_N", thrust_N),
            ("mass_kg", mass_kg),
            ("window_s", window_s),
            ("return_time_s", return_time_s),
            ("rate_hz", rate_hz),
        ):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name}: {what} must be a positive number, got {value}")
        if not 0 < max_on_fraction <= 1:
            raise ValueError(f"{name}: max_on_fraction must lie in (0, 1], got {max_on_fraction}")
        self.u0_rad, self.u_dot_radps, self.a_m = float(u0_rad), float(u_dot_radps), float(a_m)
        self.box_rad, self.thrust_N, self.mass_kg = float(box_rad), float(thrust_N), float(mass_kg)
        self.window_s, self.return_time_s = float(window_s), float(return_time_s)
        self.io_schedule = FixedRate(rate_hz)
        self.max_on_s = max_on_fraction / rate_hz
        self.enabled, self.deadband_mps = bool(enabled), float(deadband_mps)
        self.samples: list[tuple[float, float]] = []  # (t s, e rad) since the last firing
        self.pending_dv_mps = 0.0  # velocity change still to fire (m/s, signed)
        self.phase_error_rad = math.nan
        self.mean_error_rad = math.nan
        self.drift_radps = math.nan
        self.manoeuvres = 0
        self.dv_commanded_mps = 0.0

    def estimate(self, t_s: float) -> tuple[float, float] | None:
        """(e_bar rad, e_dot rad/s) at ``t_s`` over the last window, or None before a full window."""
        ts = np.array([s[0] for s in self.samples])
        if len(ts) < 3 or t_s - ts[0] < self.window_s:
            return None
        es = np.unwrap(np.array([s[1] for s in self.samples]))
        t_past = t_s - self.window_s
        drift = (es[-1] - float(np.interp(t_past, ts, es))) / self.window_s
        inside = ts >= t_past
        return float(np.mean(es[inside])) + drift * self.window_s / 2.0, drift

    def decide(self, mean_error: float, drift: float) -> float:
        """The velocity change (m/s, along the velocity) that aims the drift back across the box;
        0 inside the box or when already drifting back."""
        if abs(mean_error) <= self.box_rad or mean_error * drift < 0.0:
            return 0.0
        target = -math.copysign((abs(mean_error) + self.box_rad) / self.return_time_s, mean_error)
        return -(self.a_m / 3.0) * (target - drift)

    def update_flow_outs(self, t_ns: int) -> None:
        fix, mass = self.read("fix"), self.read("mass")
        on = [0.0, 0.0]
        if fix is not None and fix.valid:
            r = (fix.r_BN_N.x, fix.r_BN_N.y, fix.r_BN_N.z)
            v = (fix.v_BN_N.x, fix.v_BN_N.y, fix.v_BN_N.z)
            t_fix = fix.t_ns / 1e9
            self.phase_error_rad = phase_error(r, v, t_fix, self.u0_rad, self.u_dot_radps)
            self.samples.append((t_fix, self.phase_error_rad))
            while len(self.samples) > 2 and self.samples[1][0] <= t_fix - self.window_s:
                self.samples.pop(0)
            est = self.estimate(t_fix)
            if est is not None:
                self.mean_error_rad, self.drift_radps = est
                if self.enabled and self.pending_dv_mps == 0.0:
                    dv = self.decide(*est)
                    if abs(dv) >= self.deadband_mps:
                        self.pending_dv_mps = dv
                        self.manoeuvres += 1
            if self.pending_dv_mps != 0.0:
                m = mass.mass_kg if mass is not None and mass.mass_kg > 0 else self.mass_kg
                on_time = min(abs(self.pending_dv_mps) * m / self.thrust_N, self.max_on_s)
                fired = on_time * self.thrust_N / m
                on[0 if self.pending_dv_mps > 0 else 1] = on_time
                self.dv_commanded_mps += fired
                rest = abs(self.pending_dv_mps) - fired
                self.pending_dv_mps = math.copysign(rest, self.pending_dv_mps) if rest > 1e-12 else 0.0
                self.samples.clear()  # the window restarts after the firing
        for i in (0, 1):
            self.write(f"on_time{i}", Scalar(value=on[i], unit="s"))


__all__ = ["StationKeeping", "phase_error", "slot_rate"]
