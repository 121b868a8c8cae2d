"""Relative motion of a deputy about a chief on a circular orbit, in the chief's Hill frame.

The chief flies a Keplerian circular orbit of radius ``a_m`` (m) and inclination ``inclination_rad``
about a point-mass planet (``mu``, m^3/s^2); the deputy's continuous states are its position and
velocity relative to the chief in the chief's Hill frame H (x radial, y along-track, z orbit
normal; m and m/s, see :mod:`hopsim.dynamics.orbit_frames`). The derivative is the full
nonlinear relative motion: both spacecraft's point-mass gravity in the inertial frame, brought
into the rotating frame,

    rho'' = C (g(r_d) - g(r_c)) - 2 w x rho' - w x (w x rho) + u_H

with w = n z (n = sqrt(mu / a^3)) and ``thrust_accel_H`` (m/s^2, in H) the deputy's commanded
acceleration, an input. Linearized about rho = 0 it is the Clohessy-Wiltshire system.
"""

from __future__ import annotations

import numpy as np

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.gravity import EARTH_MU, point_mass_acceleration
from hopsim.dynamics.orbit_frames import hill_dcm, hill_to_inertial
from hopsim.kernel import ContinuousModel, FixedRate, Out
from hopsim.schemas import Vector3


class HillRelativeMotion(ContinuousModel):
    """A deputy's relative state about a circular chief orbit (see the module)."""

    state_names = ("x", "y", "z", "vx", "vy", "vz")
    outputs = {"rho_H": Out(Vector3), "rho_dot_H": Out(Vector3)}

    def __init__(
        self,
        name: str,
        a_m: float,
        rho_H=(0.0, 0.0, 0.0),
        rho_dot_H=(0.0, 0.0, 0.0),
        inclination_rad: float = 0.0,
        mu: float = EARTH_MU,
        rate_hz: float = 1.0,
    ):
        super().__init__(name)
        if not (np.isfinite(a_m) and a_m > 0 and np.isfinite(mu) and mu > 0):
            raise ValueError(f"{name}: the orbit radius a_m and mu must be positive and finite, got {a_m}, {mu}")
        self.a_m, self.mu, self.inclination_rad = float(a_m), float(mu), float(inclination_rad)
        self.mean_motion = float(np.sqrt(self.mu / (self.a_m * self.a_m * self.a_m)))
        self.x0 = np.concatenate([np.asarray(rho_H, dtype=float), np.asarray(rho_dot_H, dtype=float)])
        self.thrust_accel_H = np.zeros(3)
        self.io_schedule = FixedRate(rate_hz)

    def initial_state(self) -> np.ndarray:
        return self.x0.copy()

    def chief(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """The chief's inertial position (m) and velocity (m/s) at ``t_s``: ascending node on N's
        x axis at t = 0."""
        n, a, i = self.mean_motion, self.a_m, self.inclination_rad
        u = n * t_s
        cu, su, ci, si = detmath.cos(u), detmath.sin(u), detmath.cos(i), detmath.sin(i)
        p = np.array([cu, su * ci, su * si])
        q = np.array([-su, cu * ci, cu * si])
        return a * p, a * n * q

    def post_deriv(self, t_s: float) -> None:
        rho, rho_dot = self.x[0:3], self.x[3:6]
        r_c, v_c = self.chief(t_s)
        r_d, _ = hill_to_inertial(r_c, v_c, rho, rho_dot)
        C = hill_dcm(r_c, v_c)
        w = np.array([0.0, 0.0, self.mean_motion])
        dg = detlinalg.matmul(C, point_mass_acceleration(r_d, self.mu) - point_mass_acceleration(r_c, self.mu))
        self.xdot[0:3] = rho_dot
        self.xdot[3:6] = dg - 2.0 * np.cross(w, rho_dot) - np.cross(w, np.cross(w, rho)) + self.thrust_accel_H

    def update_flow_outs(self, t_ns: int) -> None:
        x = self.x
        self.write("rho_H", Vector3(x=x[0], y=x[1], z=x[2]))
        self.write("rho_dot_H", Vector3(x=x[3], y=x[4], z=x[5]))
