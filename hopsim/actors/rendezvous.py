"""A chaser's rendezvous guidance: Clohessy-Wiltshire targeting through waypoints, on thrusters.

At each guidance step (``rate_hz``, from ``phase_s``: after the fixes of the step have arrived)
the flight software takes its own and the target's position-velocity fixes (inertial frame N,
from GNSS receivers; the target's over the radio), brings both to the step's instant (a
second-order Taylor step under point-mass gravity: the fixes are a fraction of a second old, and
at 7.6 km/s a tenth of a second is 760 m along-track), forms the relative state in the target's Hill frame (x
radial, y along-track, z normal;
:mod:`hopsim.dynamics.orbit_frames`), and aims at the current waypoint: the relative velocity
that reaches the waypoint at the leg's end time by the Clohessy-Wiltshire solution,

    v+ = Phi_rv(tau)^-1 (rho_f - Phi_rr(tau) rho),   tau = time left on the leg,

is commanded as the velocity change dv = v+ - v (in H, turned into N and into the chaser's body
frame). Retargeting every step closes the loop on navigation errors, J2 and thruster
quantization. On the last leg (and once its time is up on any leg) it holds the waypoint with a
critically damped proportional-derivative law on the relative state (natural frequency
``hold_gain`` Hz) that also cancels the Clohessy-Wiltshire accelerations (3 n^2 x + 2 n y', -2 n x',
-n^2 z: feedback linearization, so the closing speed along V-bar does not push the chaser off
radially). Each body axis has a thruster pair (+x, -x,
+y, -y, +z, -z: outputs ``on_time0`` ... ``on_time5``); a velocity change along an axis becomes
the pair's on-time |dv| m / F (m from the tank's mass message), at most ``max_on_fraction`` of the
step, none below ``deadband_mps``. The body frame is the one of the latest valid ``attitude``
measurement (a star tracker's q_BN; its age is left out: at the Hill frame's rate of about 1e-3
rad/s a fraction of a second is a fraction of a milliradian), else the constructor's ``q_BN`` (an
attitude held fixed). Thrusters through the centre of mass apply no torque. Close in, the relative
state is a relative-navigation sensor's (``relative``, a
:class:`~hopsim.actors.sensors.CmFrameStateSensor` in the Hill frame, as a docking lidar or camera
gives it) whenever its measurement is valid and within ``relnav_range_m``; the fixes' difference
otherwise.
"""

from __future__ import annotations

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics.orbit_frames import clohessy_wiltshire_transition, hill_dcm, inertial_to_hill
from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.kernel import FixedRate, In, Model, Out
from hopsim.schemas import (
    AttitudeMeasurement,
    MassProperties,
    PositionVelocityMeasurement,
    RelativeStateMeasurement,
    Scalar,
)

AXES = 6


class CwGuidance(Model):
    """Waypoint guidance of a chaser (see the module)."""

    inputs = {
        "own": In(PositionVelocityMeasurement),
        "target": In(PositionVelocityMeasurement),
        "mass": In(MassProperties),
        "attitude": In(AttitudeMeasurement),
        "relative": In(RelativeStateMeasurement),
    }
    outputs = {f"on_time{i}": Out(Scalar, on_change=True) for i in range(AXES)}  # held by the thrusters
    feed_through = False  # commands at its own steps only (a fix arriving between them waits)

    def __init__(
        self,
        name: str,
        waypoints_H,
        leg_times_s,
        mean_motion: float,
        thrust_N: float,
        mass_kg: float,
        mu: float,
        q_BN=(0.0, 0.0, 0.0, 1.0),
        rate_hz: float = 0.1,
        phase_s: float = 0.0,
        deadband_mps: float = 1e-3,
        max_on_fraction: float = 0.8,
        hold_gain: float = 2e-3,
        relnav_range_m: float = 100.0,
    ):
        super().__init__(name)
        self.waypoints = np.array(waypoints_H, dtype=float).reshape(-1, 3)
        self.leg_end_s = np.cumsum(np.array(leg_times_s, dtype=float))
        if len(self.leg_end_s) != len(self.waypoints) or np.any(np.diff(np.r_[0.0, self.leg_end_s]) <= 0):
            raise ValueError(
                f"{name}: one positive leg time per waypoint, got {len(leg_times_s)} for "
                f"{len(self.waypoints)} waypoints"
            )
        self.n = float(mean_motion)
        self.thrust_N, self.mass_kg = float(thrust_N), float(mass_kg)
        self.R_NB = quat_to_dcm(np.array(q_BN, dtype=float))
        self.period_s = 1.0 / rate_hz
        self.io_schedule = FixedRate(rate_hz, phase_s)
        self.mu = float(mu)
        self.deadband, self.max_on = float(deadband_mps), float(max_on_fraction) * self.period_s
        self.hold_gain = float(hold_gain)
        self.relnav_range_m = float(relnav_range_m)
        self.rho_H = np.full(3, np.nan)  # the latest relative state (m, m/s), for outcomes
        self.rho_dot_H = np.full(3, np.nan)

    def leg(self, t_s: float) -> int:
        return int(min(np.searchsorted(self.leg_end_s, t_s, side="right"), len(self.waypoints) - 1))

    def desired_dv_H(self, t_s: float, rho: np.ndarray, rho_dot: np.ndarray) -> np.ndarray:
        """The velocity change (m/s, Hill frame) toward the current waypoint."""
        k = self.leg(t_s)
        target = self.waypoints[k]
        tau = self.leg_end_s[k] - t_s
        if k == len(self.waypoints) - 1 or tau < 2 * self.period_s:
            # hold: a critically damped PD law on the waypoint, over one guidance step, less the
            # CW system's own acceleration (else closing along V-bar at rho_dot_y pushes the chaser
            # 2 n rho_dot_y / w^2 off radially)
            w = self.hold_gain * 2 * np.pi
            n = self.n
            natural = np.array([3 * n * n * rho[0] + 2 * n * rho_dot[1], -2 * n * rho_dot[0], -n * n * rho[2]])
            accel = -w * w * (rho - target) - 2 * w * rho_dot - natural
            return accel * self.period_s
        Phi = clohessy_wiltshire_transition(self.n, tau)
        v_plus = detlinalg.solve(Phi[0:3, 3:6], target - detlinalg.matmul(Phi[0:3, 0:3], rho))
        return v_plus - rho_dot

    def propagate(self, fix, t_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """A fix brought to ``t_ns``: r + v dt + g dt^2 / 2, v + g dt (point-mass g)."""
        r = np.array([fix.r_BN_N.x, fix.r_BN_N.y, fix.r_BN_N.z])
        v = np.array([fix.v_BN_N.x, fix.v_BN_N.y, fix.v_BN_N.z])
        dt = (t_ns - fix.t_ns) / 1e9
        rn = detlinalg.norm(r)
        g = -self.mu * r / (rn * rn * rn)
        return r + v * dt + 0.5 * g * dt * dt, v + g * dt

    def relative_state(self, t_ns: int, rho_gnss: np.ndarray, rho_dot_gnss: np.ndarray):
        """(rho_H m, rho_dot_H m/s): the relative-navigation sensor's, brought to ``t_ns`` (rho +
        rho_dot dt: the relative acceleration is of order n^2 rho), when it is valid, in the Hill
        frame and within ``relnav_range_m``; else the GNSS fixes' difference."""
        rel = self.read("relative")
        if rel is None or not rel.valid or rel.frame != "hill":
            return rho_gnss, rho_dot_gnss
        rho = np.array([rel.r_DC_F.x, rel.r_DC_F.y, rel.r_DC_F.z])
        if detlinalg.norm(rho) > self.relnav_range_m:
            return rho_gnss, rho_dot_gnss
        rho_dot = np.array([rel.v_DC_F.x, rel.v_DC_F.y, rel.v_DC_F.z])
        return rho + rho_dot * ((t_ns - rel.t_ns) / 1e9), rho_dot

    def body_dcm(self) -> np.ndarray:
        """R_NB (body to N): from the latest valid attitude measurement, else the fixed q_BN's."""
        att = self.read("attitude")
        if att is None or not att.valid:
            return self.R_NB
        q = att.q_BN
        return quat_to_dcm(np.array([q.x, q.y, q.z, q.w]))

    def update_flow_outs(self, t_ns: int) -> None:
        own, target, mass = self.read("own"), self.read("target"), self.read("mass")
        on = np.zeros(AXES)
        if own is not None and target is not None and own.valid and target.valid:
            r_c, v_c = self.propagate(target, t_ns)
            r_d, v_d = self.propagate(own, t_ns)
            self.rho_H, self.rho_dot_H = self.relative_state(t_ns, *inertial_to_hill(r_c, v_c, r_d, v_d))
            dv_H = self.desired_dv_H(t_ns / 1e9, self.rho_H, self.rho_dot_H)
            dv_B = detlinalg.matmul(self.body_dcm().T, detlinalg.matmul(hill_dcm(r_c, v_c).T, dv_H))
            m = mass.mass_kg if mass is not None and mass.mass_kg > 0 else self.mass_kg
            for axis in range(3):
                if abs(dv_B[axis]) < self.deadband:
                    continue
                on[2 * axis + (0 if dv_B[axis] > 0 else 1)] = min(abs(dv_B[axis]) * m / self.thrust_N, self.max_on)
        for i in range(AXES):
            self.write(f"on_time{i}", Scalar(value=float(on[i]), unit="s"))


__all__ = ["CwGuidance"]
