"""The flight software's model of the thrust it commanded (the modified ``propagate_state``).

The seed's leader-follower run propagated the state with "the average thruster force since the
last IMU update", because the accelerometers were not used. This predictor replays the flight
software's own valve commands through the same valve timing the hardware has (6 ms opening
delay) at the nominal thrust levels, and integrates the resulting body-frame force exactly:
over an interval [a, b] it gives the impulse ``I = int F dt`` and the moment
``M = int (b - t) F dt``, so that ``v(b) = v(a) + R I / m`` and ``r(b) = r(a) + v(a)(b - a) + R M / m``
for an attitude held over the interval. It also tracks the propellant the commands burn.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from numba import njit

from hopsim.actors.spheres.params import G0, SpheresParams
from hopsim.actors.spheres.valves import NUM_THRUSTERS, ValveTimeline
from hopsim.kernel.simtime import NS_PER_S, seconds


class ThrustPredictor:
    """Predicted valve intervals and body-frame forces (N) of one vehicle's own commands."""

    def __init__(self, params: SpheresParams):
        thr = params.thrusters
        self.timeline = ValveTimeline(seconds(thr.on_delay_s), seconds(thr.off_delay_s))
        dirs = np.array(thr.directions_B, dtype=float)
        self.force_per_thruster = np.array(thr.levels_N(), dtype=float)[:, None] * dirs
        if thr.planar:
            self.force_per_thruster[:, 2] = 0.0
        self.force_rows = [tuple(row) for row in self.force_per_thruster.tolist()]
        self.thrust_N = np.array(thr.levels_N(), dtype=float)
        self.thrust_list = self.thrust_N.tolist()
        self.isp_g0 = thr.isp_s * G0
        self.open_since: list[int | None] = [None] * NUM_THRUSTERS
        # (t_open, t_close, thruster, span row for firing_spans), by t_close
        self.closed: deque = deque()
        self.burnt_kg = 0.0

    def _record(self, transitions) -> None:
        """Valve transitions (t_ns, thruster, opens) in time order: open spans, closed firings
        (each with its :meth:`firing_spans` row, made once) and propellant."""
        thrust, rows = self.thrust_list, self.force_rows
        for t, i, is_open in transitions:
            if is_open:
                self.open_since[i] = t
            else:
                t0 = self.open_since[i]
                self.open_since[i] = None
                if t0 is not None:
                    self.closed.append((t0, t, i, (t0 / NS_PER_S, t / NS_PER_S, *rows[i])))
                    self.burnt_kg += thrust[i] * (t - t0) / NS_PER_S / self.isp_g0

    def command(self, t_ns: int, mask: int, on_time_ns) -> None:
        self._record(self.timeline.command(t_ns, mask, on_time_ns))

    def _advance(self, t_ns: int) -> None:
        if t_ns > self.timeline.t_ns:
            self._record(self.timeline.advance(t_ns, before_activations=True))

    def impulse_moment(self, a_ns: int, b_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """(I, M) over [a, b] in the body frame: N s and N s^2. Successive calls must not go back
        in ``a`` (intervals that closed before it are forgotten)."""
        self._advance(b_ns)
        closed = self.closed
        open_mask = self.timeline.open_mask  # bit i: open_since[i] is set
        if not closed and not open_mask:
            return np.zeros(3), np.zeros(3)  # writable, as the compiled kernels' other inputs
        while closed and closed[0][1] <= a_ns:
            closed.popleft()
        if b_ns <= a_ns:
            return np.zeros(3), np.zeros(3)
        b = b_ns / NS_PER_S
        spans = [(t0, t1, i) for t0, t1, i, _ in closed if t1 > a_ns and t0 < b_ns]
        if open_mask:
            spans += [(t0, b_ns, i) for i, t0 in enumerate(self.open_since) if t0 is not None and t0 < b_ns]
        # I += f * (hi - lo) and M += f * (0.5 * ...) component by component, in floats
        Ix = Iy = Iz = Mx = My = Mz = 0.0
        for t0, t1, i in spans:
            lo = max(t0, a_ns) / NS_PER_S
            hi = min(t1, b_ns) / NS_PER_S
            if hi <= lo:
                continue
            fx, fy, fz = self.force_rows[i]
            dur = hi - lo
            d_lo, d_hi = b - lo, b - hi
            mom = 0.5 * (d_lo * d_lo - d_hi * d_hi)
            Ix += fx * dur
            Iy += fy * dur
            Iz += fz * dur
            Mx += fx * mom
            My += fy * mom
            Mz += fz * mom
        return np.array([Ix, Iy, Iz]), np.array([Mx, My, Mz])

    def firing_spans(self, a_ns: int, b_ns: int) -> np.ndarray:
        """The firings that may overlap intervals starting at or after ``a_ns`` and ending by
        ``b_ns`` (later calls must not go back in ``a``), one row each: start and end (s) and the
        body-frame force (N, 3 columns); the closed firings first (by closing time), then the
        open ones, cut at b."""
        self._advance(b_ns)
        closed = self.closed
        while closed and closed[0][1] <= a_ns:
            closed.popleft()
        spans = [row for _, t1, _, row in closed if t1 > a_ns]
        if self.timeline.open_mask:  # bit i: open_since[i] is set
            rows = self.force_rows
            b_s = b_ns / NS_PER_S
            spans += [(t0 / NS_PER_S, b_s, *rows[i]) for i, t0 in enumerate(self.open_since) if t0 is not None]
        if not spans:
            return np.zeros((0, 5))  # writable, as the compiled kernels' other inputs
        return np.array(spans)

    def impulse_moment_many(self, a_ns, b_ns) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`impulse_moment` over successive intervals [a_k, b_k] (sequences of ns, a_k
        non-decreasing); rows of N s and N s^2."""
        a_ns = [int(t) for t in a_ns]
        b_ns = [int(t) for t in b_ns]
        n = len(a_ns)
        if n == 0:
            return np.zeros((0, 3)), np.zeros((0, 3))
        spans = self.firing_spans(a_ns[0], max(b_ns))
        return impulse_moment_rows(
            np.array([t / NS_PER_S for t in a_ns]), np.array([t / NS_PER_S for t in b_ns]), spans
        )


@njit(cache=True, fastmath=False, error_model="numpy")
def impulse_moment_rows(a_s, b_s, spans):
    """Impulses I (N s) and moments M (N s^2) over the intervals [a_k, b_k] (s) of the firings
    ``spans`` (rows of start and end in s, and body-frame force in N), one row per interval.
    Firing by firing, interval by interval, in plain float arithmetic (the order fixes the
    rounding)."""
    n = a_s.shape[0]
    I = np.zeros((n, 3))
    M = np.zeros((n, 3))
    for j in range(spans.shape[0]):
        t0, t1, fx, fy, fz = spans[j, 0], spans[j, 1], spans[j, 2], spans[j, 3], spans[j, 4]
        for k in range(n):
            b = b_s[k]
            lo = max(a_s[k], t0)
            hi = min(b, t1)
            if not hi > lo:
                continue
            dur = hi - lo
            d_lo = b - lo
            d_hi = b - hi
            mom = 0.5 * (d_lo * d_lo - d_hi * d_hi)
            I[k, 0] += dur * fx
            I[k, 1] += dur * fy
            I[k, 2] += dur * fz
            M[k, 0] += mom * fx
            M[k, 1] += mom * fy
            M[k, 2] += mom * fz
    return I, M
