"""How the orbit scenarios integrate a spacecraft's island (their ``integrator`` parameter).

``rk4`` (the default): the classical fourth-order Runge-Kutta method in equal sub-steps of at
most :data:`RK4_STEP_S` per hop. An island of one orbiting spacecraft (with its tank beside it:
a derivative constant over the hop) then takes the spacecraft's compiled hop step, alone, in a
batch or through its fleet form. Its truncation error: a 500 km circular orbit integrated in
10 s steps is 2.4 cm off Kepler's solution after one orbit and 0.24 m after ten (along-track
phase, growing linearly), under GNSS noise by far; spacecraft integrated alike keep most of it in
common, so relative states are better still (``tests/test_orbit_formation.py`` compares the two
integrators' runs).

``dop853``: Dormand and Prince's adaptive eighth-order method (Hairer, Norsett and Wanner), the
tolerances as given; every derivative sample is a call through the kernel, several times slower.
"""

from __future__ import annotations

import math

from hopsim.dynamics.integrators import DOP853, RK4

RK4_STEP_S = 10.0  # the longest RK4 sub-step (s)
INTEGRATORS = "^(rk4|dop853)$"


def orbit_island(integrator: str, longest_hop_s: float, rtol: float, atol: float, max_step_s: float) -> dict:
    """``sim.add_island`` keywords for an orbiting spacecraft's island whose hops last at most
    ``longest_hop_s`` (s): RK4 in ``ceil(longest_hop_s / RK4_STEP_S)`` sub-steps per hop, or
    DOP853 with ``rtol``, ``atol`` and ``max_step_s`` (s)."""
    if integrator == "rk4":
        return {"integrator": RK4(), "n_integration_steps": max(1, math.ceil(longest_hop_s / RK4_STEP_S))}
    if integrator == "dop853":
        return {"integrator": DOP853(rtol=rtol, atol=atol, max_step=max_step_s)}
    raise ValueError(f"integrator must be 'rk4' or 'dop853', got {integrator!r}")


__all__ = ["INTEGRATORS", "RK4_STEP_S", "orbit_island"]
