"""The dynamics integrator actor of a rigid vehicle.

It owns the vehicle's 13 continuous states (``r_BN_N``, ``v_BN_N``, ``q_BN``, ``omega_BN_B`` of
the body origin B, the geometric centre), gathers the forces and torques that the island's
continuous models apply in their ``pre_deriv`` (thrusters, disturbances, contact), and turns
them into state derivatives in ``post_deriv`` with :mod:`hopsim.dynamics.rigid_body`. At its I/O
steps it publishes the vehicle state with the accelerations of the latest derivative sample.

Force models hold a reference to this actor (continuous models always share their integrator's
process) and call :meth:`add_force_B`, :meth:`add_force_N` or :meth:`add_torque_B` in pre_deriv.
The accumulator is emptied after every derivative sample, so the order of pre_deriv calls does
not matter.
"""
from __future__ import annotations

import numpy as np

from hopsim.dynamics.rigid_body import STATE_SIZE, derivative_single, pack_state
from hopsim.dynamics.spatial import quat_normalize, quat_to_dcm
from hopsim.kernel import ContinuousModel, FixedRate, Out
from hopsim.schemas import Quaternion, Vector3, VehicleState

STATE_NAMES = ("r_x", "r_y", "r_z", "v_x", "v_y", "v_z", "q_x", "q_y", "q_z", "q_w",
               "omega_x", "omega_y", "omega_z")


def vector3(v) -> Vector3:
    return Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


class RigidVehicleDynamics(ContinuousModel):
    """Rigid-body dynamics of one vehicle (mass kg, inertia about the CM in B kg m^2, CM offset m)."""

    state_names = STATE_NAMES
    outputs = {"state": Out(VehicleState)}

    def __init__(self, name: str, mass_kg: float, inertia_C_B, r_CB_B=(0.0, 0.0, 0.0),
                 r_BN_N=(0.0, 0.0, 0.0), v_BN_N=(0.0, 0.0, 0.0), q_BN=(0.0, 0.0, 0.0, 1.0),
                 omega_BN_B=(0.0, 0.0, 0.0), rate_hz: float = 10.0):
        super().__init__(name)
        inertia = np.array(inertia_C_B, dtype=float)
        if mass_kg <= 0:
            raise ValueError(f"{name}: mass_kg must be positive, got {mass_kg}")
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T) or np.any(np.linalg.eigvalsh(inertia) <= 0):
            raise ValueError(f"{name}: inertia_C_B must be a symmetric positive-definite 3x3 matrix "
                             f"(products of inertia as they appear in the tensor), got {inertia.tolist()}")
        self.mass_kg = float(mass_kg)
        self.inertia_C_B = inertia
        self.r_CB_B = np.array(r_CB_B, dtype=float)
        self.x0 = pack_state(r_BN_N, v_BN_N, q_BN, omega_BN_B)
        self.io_schedule = FixedRate(rate_hz)
        self._force_N = np.zeros(3)
        self._force_B = np.zeros(3)
        self._torque_B = np.zeros(3)
        self.xdot_last = np.zeros(STATE_SIZE)

    def initial_state(self):
        return self.x0.copy()

    # ------------------------------------------------------------------ forces (called in pre_deriv)
    def add_force_B(self, force_B, point_B=None) -> None:
        """A force (N) with body-fixed direction, applied at ``point_B`` (m from B, in B; CM if None)."""
        f = np.asarray(force_B, dtype=float)
        self._force_B += f
        if point_B is not None:
            self._torque_B += np.cross(np.asarray(point_B, dtype=float) - self.r_CB_B, f)

    def add_force_N(self, force_N, point_B=None) -> None:
        """A force (N) fixed in inertial directions, applied at ``point_B`` (CM if None)."""
        f = np.asarray(force_N, dtype=float)
        self._force_N += f
        if point_B is not None:
            f_B = quat_to_dcm(self.x[6:10]).T @ f
            self._torque_B += np.cross(np.asarray(point_B, dtype=float) - self.r_CB_B, f_B)

    def add_torque_B(self, torque_B) -> None:
        """A pure torque (N m) in body components."""
        self._torque_B += np.asarray(torque_B, dtype=float)

    # ------------------------------------------------------------------ lifecycle
    def post_deriv(self, t_s: float) -> None:
        """Derivatives of the 13 states from the gathered loads; empties the accumulator."""
        xdot = derivative_single(self.x.copy(), self.mass_kg, self.inertia_C_B, self.r_CB_B,
                                 self._force_N, self._force_B, self._torque_B, self.r_CB_B, 0.0)
        self.xdot[:] = xdot
        self.xdot_last = xdot
        self._force_N[:] = 0.0
        self._force_B[:] = 0.0
        self._torque_B[:] = 0.0

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Keep the quaternion on the unit sphere with w >= 0 (a state fix between hops)."""
        self.x[6:10] = quat_normalize(self.x[6:10].copy())

    def update_flow_outs(self, t_ns: int) -> None:
        x, xd = self.x, self.xdot_last
        self.write("state", VehicleState(
            vehicle=self.name, t_ns=t_ns, r_BN_N=vector3(x[0:3]), v_BN_N=vector3(x[3:6]),
            q_BN=Quaternion(x=float(x[6]), y=float(x[7]), z=float(x[8]), w=float(x[9])),
            omega_BN_B=vector3(x[10:13]), a_BN_N=vector3(xd[3:6]), omega_dot_BN_B=vector3(xd[10:13]),
            mass=self.mass_kg))

    # ------------------------------------------------------------------ views
    @property
    def r_BN_N(self) -> np.ndarray:
        return self.x[0:3].copy()

    @property
    def v_BN_N(self) -> np.ndarray:
        return self.x[3:6].copy()

    @property
    def q_BN(self) -> np.ndarray:
        return self.x[6:10].copy()

    @property
    def omega_BN_B(self) -> np.ndarray:
        return self.x[10:13].copy()
