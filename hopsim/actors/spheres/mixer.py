"""Thruster mixer and pulse-width modulation of the SPHERES flight software.

Thrusters come in six opposing pairs (1-2, 3-4, ..., 11-12): the two members of a pair push in
opposite directions along the same line (their positions differ only along that line), so a
signed pair force ``f_j`` gives the wrench ``f_j * (d_j, r_j x d_j)`` whichever member fires. The
mixer solves the 6x6 system for the six pair forces (opposing thrusters are thereby cancelled),
fires the member whose direction matches each sign, and turns each force into an on-time within
the control period: ``tau = f / thrust * period``. If the longest on-time exceeds what a period
allows, every on-time is scaled down by the same factor, which keeps the wrench's direction.
Fired pulses get ``pulse_offset`` added (the valve's opening delay) and are at least ``pw_min``;
on-times shorter than the deadband are not fired. Widths are whole propulsion ticks (1 ms).

In the air-table mode only (Fx, Fy, Tz) are controlled, by the four X and Y pairs (minimum-norm).
"""
from __future__ import annotations

import numpy as np

from hopsim.actors.spheres.params import SpheresParams
from hopsim.kernel.simtime import NS_PER_S, seconds

PAIRS = tuple((2 * j, 2 * j + 1) for j in range(6))


class ThrusterMixer:
    """Wrench command (N and N m about the CM, body frame) to 12 pulse widths (ns)."""

    def __init__(self, params: SpheresParams, control_period_s: float):
        thr, fsw = params.thrusters, params.flight_software
        pos = np.array(thr.positions_B, dtype=float) - np.array(params.mass.r_CB_B, dtype=float)
        dirs = np.array(thr.directions_B, dtype=float)
        self.pair_dirs = np.array([dirs[a] for a, _ in PAIRS])
        arms = np.array([np.cross(pos[a], dirs[a]) for a, _ in PAIRS])
        self.pair_matrix = np.vstack([self.pair_dirs.T, arms.T])          # 6 x 6: wrench = M f
        self.planar = thr.planar
        if self.planar:
            planar_pairs = [j for j in range(6) if abs(self.pair_dirs[j][2]) < 0.5]
            rows = self.pair_matrix[[0, 1, 5]][:, planar_pairs]              # Fx, Fy, Tz
            self._solve = np.zeros((6, 6))
            self._solve[np.ix_(planar_pairs, [0, 1, 5])] = np.linalg.pinv(rows)
        else:
            self._solve = np.linalg.inv(self.pair_matrix)
        levels = np.array(thr.levels_N(), dtype=float)
        self.thrust_N = levels
        self.period_s = control_period_s
        self.tick_ns = seconds(1.0 / fsw.propulsion_rate_hz)
        self.offset_s = fsw.pulse_offset_s
        self.deadband_s = fsw.deadband_s
        self.pw_min_s = fsw.pw_min_s
        self.pw_max_s = min(fsw.pw_max_s, control_period_s)
        self.max_on_s = self.pw_max_s - self.offset_s

    def thruster_forces(self, force_B, torque_B) -> np.ndarray:
        """Non-negative force wanted from each of the 12 thrusters (N)."""
        wrench = np.concatenate([np.asarray(force_B, float), np.asarray(torque_B, float)])
        f = (self._solve @ wrench).tolist()
        u = [0.0] * 12
        for j, (a, b) in enumerate(PAIRS):
            if f[j] >= 0.0:
                u[a] = f[j]
            else:
                u[b] = -f[j]
        return np.array(u)

    def pulse_widths_ns(self, force_B, torque_B) -> list[int]:
        """Pulse widths (ns, whole ticks) realizing the wrench on average over one control period."""
        u = self.thruster_forces(force_B, torque_B)
        on_s = u / self.thrust_N * self.period_s
        longest = float(on_s.max())
        if longest > self.max_on_s > 0:
            on_s *= self.max_on_s / longest
        widths = []
        for tau in on_s.tolist():
            if tau < self.deadband_s:
                widths.append(0)
                continue
            w = min(max(tau + self.offset_s, self.pw_min_s), self.pw_max_s)
            ticks = int(round(w * NS_PER_S / self.tick_ns))
            widths.append(ticks * self.tick_ns)
        return widths
