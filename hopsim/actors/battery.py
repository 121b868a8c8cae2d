"""Dshell's Battery flow model (seed 000, the model library's example), with its alarm output.

Each I/O step integrates the net power ``source * efficiency - load`` over the step into the
stored energy, clamped to [0, total_power_Wh]. The seed's constants are kept (69.1 Wh) but two of
its printed slips are not: efficiency is a fraction (1.0 means 100 %, as its own text says), and
the tick factor is 1/3600.0 h per s (the printed C++ ``1/3600`` is integer division, i.e. 0).
"""

from __future__ import annotations

from hopsim.kernel import FixedRate, In, Model, Out
from hopsim.schemas import BatteryState, Scalar

SECONDS_PER_HOUR = 3600.0


class Battery(Model):
    """Stored energy (Wh) driven by a source and a load (W); alarm below a threshold (Wh)."""

    inputs = {"load": In(Scalar, doc="power drawn (W)"), "source": In(Scalar, doc="power supplied (W)")}
    outputs = {"state": Out(BatteryState)}
    io_schedule = FixedRate(1.0)
    feed_through = False  # the output is the stored energy, a state

    def __init__(
        self,
        name: str,
        total_power_Wh: float = 69.1,
        initial_Wh: float | None = None,
        efficiency: float = 1.0,
        alarm_threshold_Wh: float = 0.0,
        rate_hz: float = 1.0,
    ):
        super().__init__(name)
        if total_power_Wh <= 0:
            raise ValueError(f"{name}: total_power_Wh must be positive, got {total_power_Wh}")
        if not 0.0 <= efficiency <= 1.0:
            raise ValueError(f"{name}: efficiency is a fraction in [0, 1] (1.0 means 100 %), got {efficiency}")
        self.total_power_Wh = total_power_Wh
        self.efficiency = efficiency
        self.alarm_threshold_Wh = alarm_threshold_Wh
        self.power_level_Wh = total_power_Wh if initial_Wh is None else initial_Wh
        if rate_hz != 1.0:
            self.io_schedule = FixedRate(rate_hz)

    @staticmethod
    def _watts(msg) -> float:
        return msg.value if msg is not None else 0.0

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Integrate the net power over the I/O step just ended (sets power_level_Wh)."""
        net_W = self._watts(self.read("source")) * self.efficiency - self._watts(self.read("load"))
        level = self.power_level_Wh + net_W * (t1_ns - t0_ns) * 1e-9 / SECONDS_PER_HOUR
        self.power_level_Wh = min(max(level, 0.0), self.total_power_Wh)

    def update_flow_outs(self, t_ns: int) -> None:
        self.write(
            "state",
            BatteryState(
                power_level_Wh=self.power_level_Wh,
                total_power_Wh=self.total_power_Wh,
                alarm=self.power_level_Wh < self.alarm_threshold_Wh,
            ),
        )
