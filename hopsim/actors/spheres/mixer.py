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
from numba import njit

from hopsim.actors.spheres.params import SpheresParams
from hopsim.dynamics import detlinalg
from hopsim.kernel.simtime import seconds

PAIRS = tuple((2 * j, 2 * j + 1) for j in range(6))


class ThrusterMixer:
    """Wrench command (N and N m about the CM, body frame) to 12 pulse widths (ns)."""

    def __init__(self, params: SpheresParams, control_period_s: float):
        thr, fsw = params.thrusters, params.flight_software
        pos = np.array(thr.positions_B, dtype=float) - np.array(params.mass.r_CB_B, dtype=float)
        dirs = np.array(thr.directions_B, dtype=float)
        self.pair_dirs = np.array([dirs[a] for a, _ in PAIRS])
        arms = np.array([np.cross(pos[a], dirs[a]) for a, _ in PAIRS])
        self.pair_matrix = np.vstack([self.pair_dirs.T, arms.T])  # 6 x 6: wrench = M f
        self.planar = thr.planar
        if self.planar:
            planar_pairs = [j for j in range(6) if abs(self.pair_dirs[j][2]) < 0.5]
            rows = self.pair_matrix[[0, 1, 5]][:, planar_pairs]  # Fx, Fy, Tz
            self._solve = np.zeros((6, 6))
            self._solve[np.ix_(planar_pairs, [0, 1, 5])] = detlinalg.pinv(np.ascontiguousarray(rows))
        else:
            self._solve = detlinalg.inv(np.ascontiguousarray(self.pair_matrix))
        levels = np.array(thr.levels_N(), dtype=float)
        self.thrust_N = levels
        self.thrust_list = levels.tolist()
        self.period_s = control_period_s
        self.tick_ns = seconds(1.0 / fsw.propulsion_rate_hz)
        self.offset_s = fsw.pulse_offset_s
        self.deadband_s = fsw.deadband_s
        self.pw_min_s = fsw.pw_min_s
        self.pw_max_s = min(fsw.pw_max_s, control_period_s)
        self.max_on_s = self.pw_max_s - self.offset_s
        # one (C) layout for the compiled kernel and the interpreted form alike
        self._solve = np.ascontiguousarray(self._solve)

    def _forces(self, force_B, torque_B) -> list[float]:
        """:meth:`thruster_forces` as a list."""
        fx, fy, fz = force_B
        tx, ty, tz = torque_B
        wrench = np.array([fx, fy, fz, tx, ty, tz], dtype=float)
        f = detlinalg.matmul(self._solve, wrench).tolist()
        u = [0.0] * 12
        for j, (a, b) in enumerate(PAIRS):
            if f[j] >= 0.0:
                u[a] = f[j]
            else:
                u[b] = -f[j]
        return u

    def thruster_forces(self, force_B, torque_B) -> np.ndarray:
        """Non-negative force wanted from each of the 12 thrusters (N)."""
        return np.array(self._forces(force_B, torque_B))

    def pulse_widths_ns(self, force_B, torque_B) -> list[int]:
        """Pulse widths (ns, whole ticks) realizing the wrench on average over one control period."""
        wrench = np.empty(6)  # (Fx, Fy, Fz, Tx, Ty, Tz) as floats, filled without a list
        wrench[:3] = force_B
        wrench[3:] = torque_B
        widths, valid = _pulse_widths(
            wrench,
            self._solve,
            self.thrust_N,
            self.period_s,
            self.max_on_s,
            self.deadband_s,
            self.offset_s,
            self.pw_min_s,
            self.pw_max_s,
            self.tick_ns,
        )
        if not valid:
            raise ValueError("cannot convert float NaN to integer (a NaN pulse width)")
        return widths.tolist()


@njit(cache=True, fastmath=False, error_model="numpy")
def _pulse_widths(wrench, solve, thrust_N, period_s, max_on_s, deadband_s, offset_s, pw_min_s, pw_max_s, tick_ns):
    """:meth:`ThrusterMixer.pulse_widths_ns` compiled, operation for operation (the pair forces
    ``solve @ wrench`` by :func:`hopsim.dynamics.detlinalg.matmul`, as the interpreted form;
    Python's max, min and round to even):
    (widths in ns, False if an on-time is NaN, where the interpreted form raises)."""
    f = detlinalg.matmul(solve, wrench)
    u = np.zeros(12)
    for j in range(6):
        if f[j] >= 0.0:
            u[2 * j] = f[j]
        else:
            u[2 * j + 1] = -f[j]
    on_s = np.empty(12)
    for i in range(12):
        on_s[i] = u[i] / thrust_N[i] * period_s
    # explicit comparisons rather than max() and min(): Python's semantics exactly (the first of
    # equals; a NaN first stays), whatever the compiled builtins do
    longest = on_s[0]
    for i in range(1, 12):
        if on_s[i] > longest:
            longest = on_s[i]
    if longest > max_on_s > 0:
        factor = max_on_s / longest
        for i in range(12):
            on_s[i] = on_s[i] * factor
    widths = np.zeros(12, dtype=np.int64)
    for i in range(12):
        tau = on_s[i]
        if tau < deadband_s:
            continue
        if np.isnan(tau):
            return widths, False
        w = tau + offset_s
        if pw_min_s > w:
            w = pw_min_s
        if pw_max_s < w:
            w = pw_max_s
        widths[i] = round(w * 1_000_000_000 / tick_ns) * tick_ns
    return widths, True
