"""A move sequencer: publishes prescribed-motion profiles at their start times."""

from __future__ import annotations

from hopsim.dynamics.profiles import MoveProfile
from hopsim.kernel import Out, VariableRate
from hopsim.kernel.model import Model
from hopsim.kernel.simtime import seconds
from hopsim.schemas import PrescribedMotionProfile, Vector3


class MoveSequencer(Model):
    """Sends each move of ``moves`` [(start_s, MoveProfile)] to the joint at its start time.

    Every move is checked when the sequencer is built (an impossible move raises ValueError
    saying why and what would make it possible) and must start where the previous one ended.
    """

    outputs = {"profiles": Out(PrescribedMotionProfile, queue=True)}
    io_schedule = VariableRate()

    def __init__(self, name: str, joint: str, moves: list[tuple[float, MoveProfile]]):
        super().__init__(name)
        self.joint = joint
        self.moves = sorted(((seconds(t), m) for t, m in moves), key=lambda tm: tm[0])
        for (t_a, a), (t_b, b) in zip(self.moves, self.moves[1:]):
            if t_b < t_a + seconds(a.duration):
                raise ValueError(
                    f"{name}: the move at {t_b / 1e9:g} s starts before the one at "
                    f"{t_a / 1e9:g} s ends ({(t_a / 1e9 + a.duration):g} s); start it later"
                )
            if b.initial != a.reference:
                raise ValueError(
                    f"{name}: the move at {t_b / 1e9:g} s starts at {b.initial:g}, but the "
                    f"previous one ends at {a.reference:g}"
                )
        self.sent = 0

    def next_io_time(self, t_ns: int) -> int | None:
        later = [t for t, _ in self.moves if t > t_ns]
        return later[0] if later else None

    def update_flow_outs(self, t_ns: int) -> None:
        while self.sent < len(self.moves) and self.moves[self.sent][0] <= t_ns:
            t, m = self.moves[self.sent]
            if t == t_ns:
                self.write(
                    "profiles",
                    PrescribedMotionProfile(
                        joint=self.joint,
                        kind=m.kind,
                        initial=m.initial,
                        reference=m.reference,
                        accel_max=m.accel_max,
                        coast_bang_duration=m.coast_bang_duration,
                        smoothing_duration=m.smoothing_duration,
                        axis=Vector3(x=m.axis[0], y=m.axis[1], z=m.axis[2]),
                        start_time_ns=t,
                    ),
                )
            self.sent += 1
