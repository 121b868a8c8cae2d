"""Zero-crossing conditions: a sign change of a function of the island's state ends a hop."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_zc_sequence = itertools.count()


@dataclass(eq=False)
class ZeroCrossing:
    """A condition ``fn(t_ns) -> float`` whose sign change ends a hop (Dshell step validation).

    ``direction`` is "falling" (from > 0 to <= 0), "rising" (from < 0 to >= 0) or "either".
    The hop is cut by bisection to within ``eps_ns`` before the crossing; the callback then runs
    at that barrier and the condition is removed (register it again to keep watching).
    """

    name: str
    fn: Callable[[int], float]
    callback: Callable[[int], Any]
    direction: str = "falling"
    eps_ns: int = 1000
    seq: int = field(default_factory=lambda: next(_zc_sequence))
    island: str | None = None  # the (home) island it was registered with
    restorable: bool = True  # False: made during the run (contact), not by the scenario build

    def __post_init__(self):
        if self.direction not in ("falling", "rising", "either"):
            raise ValueError(
                f"zero-crossing {self.name!r}: direction must be 'falling', 'rising' "
                f"or 'either', not {self.direction!r}"
            )
        if self.eps_ns < 1:
            raise ValueError(f"zero-crossing {self.name!r}: eps must be at least 1 ns")

    def crossed(self, g0: float, g1: float) -> bool:
        falling = g0 > 0.0 and g1 <= 0.0
        rising = g0 < 0.0 and g1 >= 0.0
        if self.direction == "falling":
            return falling
        if self.direction == "rising":
            return rising
        return falling or rising
