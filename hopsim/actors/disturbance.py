"""The ``disturbance`` fault of a body's dynamics: a force and a torque from the fault's instant for
its duration (0: until a fault with ``clear``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

FOREVER_NS = 2**62


class Disturbance:
    """``force_N`` (N, inertial frame N) at the centre of mass and ``torque_B`` (N m, body frame),
    acting up to ``until_ns``."""

    def __init__(self):
        self.force_N = np.zeros(3)
        self.torque_B = np.zeros(3)
        self.until_ns = 0

    def apply(self, fault, t_ns: int, request_barrier: Callable[[int], None]) -> None:
        """Take a ``disturbance`` fault received at ``t_ns``; its end is a barrier (a step input
        never splits a hop)."""
        if fault.clear:
            self.until_ns = 0
            return
        self.force_N = np.array([fault.force_N.x, fault.force_N.y, fault.force_N.z])
        self.torque_B = np.array([fault.torque_B.x, fault.torque_B.y, fault.torque_B.z])
        if fault.duration_s > 0:
            self.until_ns = t_ns + round(fault.duration_s * 1e9)
            request_barrier(self.until_ns)
        else:
            self.until_ns = FOREVER_NS

    def acts_over(self, t0_ns: int) -> bool:
        """Whether it acts over a hop that starts at ``t0_ns``."""
        return t0_ns < self.until_ns


__all__ = ["Disturbance"]
