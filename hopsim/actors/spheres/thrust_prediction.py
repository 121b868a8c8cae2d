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

from hopsim.actors.spheres.params import G0, SpheresParams
from hopsim.actors.spheres.valves import NUM_THRUSTERS, ValveTimeline
from hopsim.kernel.simtime import NS_PER_S, seconds


_ZERO3 = np.zeros(3)
_ZERO3.flags.writeable = False


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
        self.isp_g0 = thr.isp_s * G0
        self.open_since: list[int | None] = [None] * NUM_THRUSTERS
        self.closed: deque = deque()                    # (t_open, t_close, thruster), by t_close
        self.burnt_kg = 0.0

    def _record(self, transitions) -> None:
        for t, i, is_open in transitions:
            if is_open:
                self.open_since[i] = t
            else:
                t0 = self.open_since[i]
                self.open_since[i] = None
                if t0 is not None:
                    self.closed.append((t0, t, i))
                    self.burnt_kg += self.thrust_N[i] * (t - t0) / NS_PER_S / self.isp_g0

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
        if not closed and self.open_since.count(None) == NUM_THRUSTERS:
            return _ZERO3, _ZERO3
        I = np.zeros(3)
        M = np.zeros(3)
        while closed and closed[0][1] <= a_ns:
            closed.popleft()
        if b_ns <= a_ns:
            return I, M
        b = b_ns / NS_PER_S
        spans = [(t0, t1, i) for t0, t1, i in closed if t1 > a_ns and t0 < b_ns]
        spans += [(t0, b_ns, i) for i, t0 in enumerate(self.open_since) if t0 is not None and t0 < b_ns]
        for t0, t1, i in spans:
            lo = max(t0, a_ns) / NS_PER_S
            hi = min(t1, b_ns) / NS_PER_S
            if hi <= lo:
                continue
            f = self.force_per_thruster[i]
            I += f * (hi - lo)
            M += f * (0.5 * ((b - lo) ** 2 - (b - hi) ** 2))
        return I, M

    def impulse_moment_many(self, a_ns, b_ns) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`impulse_moment` over successive intervals [a_k, b_k] (sequences of ns, a_k
        non-decreasing); rows of N s and N s^2."""
        a_ns = [int(t) for t in a_ns]
        b_ns = [int(t) for t in b_ns]
        n = len(a_ns)
        if n == 0:
            return np.zeros((0, 3)), np.zeros((0, 3))
        b_max = max(b_ns)
        self._advance(b_max)
        closed = self.closed
        while closed and closed[0][1] <= a_ns[0]:
            closed.popleft()
        spans = [(t0, t1, i) for t0, t1, i in closed if t1 > a_ns[0]]
        spans += [(t0, b_max, i) for i, t0 in enumerate(self.open_since) if t0 is not None]
        if not spans:
            return np.zeros((n, 3)), np.zeros((n, 3))
        a_s = [t / NS_PER_S for t in a_ns]
        b_s = [t / NS_PER_S for t in b_ns]
        I = [[0.0, 0.0, 0.0] for _ in range(n)]
        M = [[0.0, 0.0, 0.0] for _ in range(n)]
        for t0, t1, i in spans:
            _add_span(I, M, a_s, b_s, t0 / NS_PER_S, t1 / NS_PER_S, self.force_rows[i])
        return np.array(I), np.array(M)


def _add_span(I: list[list[float]], M: list[list[float]], a_s: list[float], b_s: list[float],
              t0_s: float, t1_s: float, f_B: tuple[float, float, float]) -> None:
    """Add one thruster's firing over [t0, t1] (s) at body-frame force f_B (N) to the impulses I
    (N s) and moments M (N s^2) of the intervals [a_k, b_k] (s), in place."""
    fx, fy, fz = f_B
    for k, b in enumerate(b_s):
        lo = max(a_s[k], t0_s)
        hi = min(b, t1_s)
        if not hi > lo:
            continue
        dur = hi - lo
        d_lo = b - lo
        d_hi = b - hi
        mom = 0.5 * (d_lo * d_lo - d_hi * d_hi)
        I_k, M_k = I[k], M[k]
        I_k[0] += dur * fx
        I_k[1] += dur * fy
        I_k[2] += dur * fz
        M_k[0] += mom * fx
        M_k[1] += mom * fy
        M_k[2] += mom * fz
