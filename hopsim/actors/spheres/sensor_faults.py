"""Fault state shared by the SPHERES sensors: bias, noise scale and dropout, with expiry.

A fault lasts ``duration_s`` from its instant (0: until a fault with ``clear`` arrives). Expiry is
checked at each measurement instant, so a sensor needs no barrier for it.
"""

from __future__ import annotations

import numpy as np

from hopsim.kernel.simtime import seconds

# the kinds, and the Fault fields each reads: the bias of one channel (index, -1 for all) or
# the noise scale, in value; dropout's value is the fraction of samples lost
SENSOR_FAULTS = {
    "sensor_bias": ("index", "value", "duration_s", "clear"),
    "noise_scale": ("value", "duration_s", "clear"),
    "dropout": ("value", "duration_s", "clear"),
}


class SensorFaults:
    """Active sensor faults of one sensor with ``n_axes`` channels."""

    def __init__(self, n_axes: int):
        self.n_axes = n_axes
        self.bias = np.zeros(n_axes)
        self.noise_scale = 1.0
        self.dropout = 0.0
        self._expiry: dict[tuple[str, int], int] = {}

    def check(self, fault) -> None:
        """Raise on a fault these sensor faults cannot take: another kind, a channel it does not
        have (changes nothing)."""
        if fault.kind not in SENSOR_FAULTS:
            raise ValueError(f"not a sensor fault: {fault.kind!r}; sensors accept {tuple(SENSOR_FAULTS)}")
        if fault.kind == "sensor_bias" and not (fault.index == -1 or 0 <= fault.index < self.n_axes):
            raise ValueError(f"sensor channel must be 0..{self.n_axes - 1} or -1, got {fault.index}")

    def apply(self, fault, t_ns: int) -> None:
        """Set or clear one fault (index = channel for sensor_bias, -1 for all)."""
        self.check(fault)
        self._set(fault.kind, fault.index, None if fault.clear else fault.value)
        key = (fault.kind, fault.index)
        if not fault.clear and fault.duration_s > 0:
            self._expiry[key] = t_ns + seconds(fault.duration_s)
        else:
            self._expiry.pop(key, None)

    def _set(self, kind: str, index: int, value: float | None) -> None:
        if kind == "sensor_bias":
            for c in range(self.n_axes) if index == -1 else [index]:  # a channel check() passed
                self.bias[c] = 0.0 if value is None else value
        elif kind == "noise_scale":
            self.noise_scale = 1.0 if value is None else value
        else:
            self.dropout = 0.0 if value is None else value

    def active(self) -> bool:
        """Whether any fault with a duration is pending expiry."""
        return bool(self._expiry)

    def expire(self, t_ns: int) -> None:
        """Remove the faults whose duration has run out by t_ns."""
        if not self._expiry:
            return
        for key, t_end in list(self._expiry.items()):
            if t_end <= t_ns:
                del self._expiry[key]
                self._set(key[0], key[1], None)
