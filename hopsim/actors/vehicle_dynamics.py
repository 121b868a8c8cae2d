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

Docking welds vehicles into one rigid composite (:meth:`weld`): the *primary* integrates the
composite (mass, centre of mass and inertia of all its parts, recomputed at every derivative
sample so that propellant use stays exact), a *follower* forwards every load it receives to the
primary at its place on the composite, and its own state follows the primary's kinematically
(:mod:`hopsim.dynamics.weld`). Every vehicle keeps publishing its own state.

Fault ``disturbance``: ``force_N`` (N, inertial) at the centre of mass and ``torque_B`` (N m) for
``duration_s`` (0: until a fault with ``clear``), the viewer's disturbance command of the seed.
"""

from __future__ import annotations

import numpy as np

from hopsim.actors.messages import StateMessageBuilder
from hopsim.actors.rigid_fleet import RigidFleet
from hopsim.actors.welding import Weldable
from hopsim.dynamics import detlinalg
from hopsim.dynamics.rigid_body import (
    STATE_SIZE,
    derivative_single,
    derivatives_batch,
    pack_state,
    rk4_hop,
    rk4_step_batch,
)
from hopsim.dynamics.spatial import quat_normalize, quat_to_dcm
from hopsim.dynamics.weld import welded_follower_derivative
from hopsim.kernel import ContinuousModel, FixedRate, Out
from hopsim.schemas import VehicleState

FOREVER_NS = 2**62

STATE_NAMES = ("r_x", "r_y", "r_z", "v_x", "v_y", "v_z", "q_x", "q_y", "q_z", "q_w", "omega_x", "omega_y", "omega_z")


class RigidVehicleDynamics(Weldable, ContinuousModel):
    """Rigid-body dynamics of one vehicle (mass kg, inertia about the CM in B kg m^2, CM offset m)."""

    state_names = STATE_NAMES
    outputs = {"state": Out(VehicleState)}
    accepts_faults = {"disturbance": ("force_N", "torque_B", "duration_s", "clear")}
    loads_constant_over_hop = True  # the disturbance is held across a hop
    fleet_form = RigidFleet  # many vehicles' hops in one call (hopsim.kernel.fleet)
    row_form = "hopsim.actors.rigid_fleet:RigidVehicleRows"  # in a row block (hopsim.kernel.blocks)
    # welds are links between models, made and broken at barriers only (never inside a hop)
    # _quat_fixed lives within one hop (propagate_hop to end_hop): always False between hops
    # _state_builder is scratch memory for update_flow_outs
    _FRAMEWORK_ATTRS = ContinuousModel._FRAMEWORK_ATTRS | {"_welds", "_primary_weld", "_quat_fixed", "_state_builder"}

    def __init__(
        self,
        name: str,
        mass_kg: float,
        inertia_C_B,
        r_CB_B=(0.0, 0.0, 0.0),
        r_BN_N=(0.0, 0.0, 0.0),
        v_BN_N=(0.0, 0.0, 0.0),
        q_BN=(0.0, 0.0, 0.0, 1.0),
        omega_BN_B=(0.0, 0.0, 0.0),
        rate_hz: float = 10.0,
    ):
        super().__init__(name)
        inertia = np.array(inertia_C_B, dtype=float)
        if mass_kg <= 0:
            raise ValueError(f"{name}: mass_kg must be positive, got {mass_kg}")
        if (
            inertia.shape != (3, 3)
            or not np.all(np.abs(inertia - inertia.T) <= 1e-8 + 1e-5 * np.abs(inertia.T))  # np.allclose's test
            or np.any(detlinalg.eigh_unsorted(inertia)[0] <= 0)  # in any order (eigvalsh sorts them)
        ):
            raise ValueError(
                f"{name}: inertia_C_B must be a symmetric positive-definite 3x3 matrix "
                f"(products of inertia as they appear in the tensor), got {inertia.tolist()}"
            )
        self.mass_kg = float(mass_kg)
        self.inertia_C_B = inertia
        self.r_CB_B = np.array(r_CB_B, dtype=float)
        self.x0 = pack_state(r_BN_N, v_BN_N, q_BN, omega_BN_B)
        self.io_schedule = FixedRate(rate_hz)
        # the loads the island's force models add in pre_deriv (N inertial, N body, N m body
        # about the CM), emptied after each derivative sample
        self.gathered_force_N = np.zeros(3)
        self.gathered_force_B = np.zeros(3)
        self.gathered_torque_B = np.zeros(3)
        self.xdot_last = np.zeros(STATE_SIZE)
        self.disturbance_force_N = np.zeros(3)
        self.disturbance_torque_B = np.zeros(3)
        self.disturbance_until_ns = 0
        self._disturbed = False
        self._init_welds()
        self._quat_fixed = False  # propagate_hop did end_hop's quaternion fix
        self._state_builder = StateMessageBuilder()

    def initial_state(self):
        return self.x0.copy()

    # ------------------------------------------------------------------ forces (called in pre_deriv)
    def add_force_B(self, force_B, point_B=None) -> None:
        """A force (N) with body-fixed direction, applied at ``point_B`` (m from B, in B; CM if None)."""
        f = np.asarray(force_B, dtype=float)
        if self._primary is not None:
            w = self._primary_weld
            self._primary.add_force_B(detlinalg.matmul(w.R_PF, f), self._on_primary(point_B))
            return
        self.gathered_force_B += f
        if point_B is not None:
            self.gathered_torque_B += np.cross(np.asarray(point_B, dtype=float) - self.r_CB_B, f)

    def add_force_N(self, force_N, point_B=None) -> None:
        """A force (N) fixed in inertial directions, applied at ``point_B`` (CM if None)."""
        if self._primary is None and point_B is None:
            self.gathered_force_N += force_N
            return
        f = np.asarray(force_N, dtype=float)
        if self._primary is not None:
            self._primary.add_force_N(f, self._on_primary(point_B))
            return
        self.gathered_force_N += f
        if point_B is not None:
            f_B = detlinalg.matmul(quat_to_dcm(self.x[6:10]).T, f)
            self.gathered_torque_B += np.cross(np.asarray(point_B, dtype=float) - self.r_CB_B, f_B)

    def add_torque_B(self, torque_B) -> None:
        """A pure torque (N m) in body components."""
        if self._primary is not None:
            self._primary.add_torque_B(detlinalg.matmul(self._primary_weld.R_PF, np.asarray(torque_B, dtype=float)))
            return
        self.gathered_torque_B += np.asarray(torque_B, dtype=float)

    def _on_primary(self, point_B) -> np.ndarray:
        """A point of this (follower) body, in the primary's frame from the primary's origin."""
        w = self._primary_weld
        p = self.r_CB_B if point_B is None else np.asarray(point_B, dtype=float)
        return w.r_FP_P + detlinalg.matmul(w.R_PF, p)

    # ------------------------------------------------------------------ compiled hops
    def hop_ready(self) -> bool:
        """A free vehicle propagates itself (a composite needs its followers' kinematics)."""
        return not self._welds and self._primary is None

    @staticmethod
    def propagate_hop(bodies: list[RigidVehicleDynamics], steps_s, t0_s: float = 0.0) -> None:
        """RK4 over a hop for many free vehicles, one compiled call per sub-step, with the loads
        gathered in their accumulators (constant over the hop; nothing depends on the time
        ``t0_s``); the published accelerations are the derivative at the hop's end. One vehicle
        or many: the same arithmetic."""
        if len(bodies) == 1:
            b = bodies[0]
            rk4_hop(
                b.x,
                b.xdot,
                steps_s,
                b.mass_kg,
                b.inertia_C_B,
                b.r_CB_B,
                b.gathered_force_N,
                b.gathered_force_B,
                b.gathered_torque_B,
            )
            b.xdot_last = b.xdot  # the derivative at the hop's end, which only the next hop writes
            b._quat_fixed = True  # end_hop, which always follows, skips its fix
            return
        X = np.array([b.x for b in bodies])
        mass = np.array([b.mass_kg for b in bodies])
        inertia = np.array([b.inertia_C_B for b in bodies])
        r_CB = np.array([b.r_CB_B for b in bodies])
        f_N = np.array([b.gathered_force_N for b in bodies])
        f_B = np.array([b.gathered_force_B for b in bodies])
        tau_B = np.array([b.gathered_torque_B for b in bodies])
        for h in steps_s:
            X = rk4_step_batch(X, h, mass, inertia, r_CB, f_N, f_B, tau_B, r_CB, 0.0)
        Xdot = derivatives_batch(X, mass, inertia, r_CB, f_N, f_B, tau_B, r_CB, 0.0)
        for b, x, xd in zip(bodies, X, Xdot):
            b.x[:] = x
            b.xdot[:] = xd
            b.xdot_last = xd
            b.gathered_force_N[:] = 0.0
            b.gathered_force_B[:] = 0.0
            b.gathered_torque_B[:] = 0.0

    # ------------------------------------------------------------------ faults
    def on_fault(self, fault, t_ns: int) -> None:
        """``disturbance``: ``force_N`` at the CM and ``torque_B`` for ``duration_s`` (0: until cleared)."""
        if fault.clear:
            self.disturbance_until_ns = 0
            return
        self.disturbance_force_N = np.array([fault.force_N.x, fault.force_N.y, fault.force_N.z])
        self.disturbance_torque_B = np.array([fault.torque_B.x, fault.torque_B.y, fault.torque_B.z])
        if fault.duration_s > 0:
            self.disturbance_until_ns = t_ns + round(fault.duration_s * 1e9)
            self.request_barrier(self.disturbance_until_ns)
        else:
            self.disturbance_until_ns = FOREVER_NS

    # ------------------------------------------------------------------ lifecycle
    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Whether the disturbance acts across this hop (it starts and ends at barriers)."""
        self._disturbed = t0_ns < self.disturbance_until_ns

    def pre_deriv(self, t_s: float) -> None:
        if self._disturbed:
            self.add_force_N(self.disturbance_force_N)
            self.add_torque_B(self.disturbance_torque_B)

    def post_deriv(self, t_s: float) -> None:
        """Derivatives of the 13 states from the gathered loads; empties the accumulator.
        A primary integrates its composite and writes its followers' derivatives too."""
        if self._primary is not None:
            return  # the primary wrote this follower's derivative
        if self._welds:
            mass, inertia, r_CB_B = self.composite()
        else:
            mass, inertia, r_CB_B = self.mass_kg, self.inertia_C_B, self.r_CB_B
        xdot = derivative_single(
            self.x.copy(),
            mass,
            inertia,
            r_CB_B,
            self.gathered_force_N,
            self.gathered_force_B,
            self.gathered_torque_B,
            self.r_CB_B,
            0.0,
        )
        self.xdot[:] = xdot
        self.xdot_last = xdot
        self.gathered_force_N[:] = 0.0
        self.gathered_force_B[:] = 0.0
        self.gathered_torque_B[:] = 0.0
        for w in self._welds:
            f = w.follower
            f.xdot_last = welded_follower_derivative(self.x, xdot, w.r_FP_P, w.q_FP)
            f.xdot[:] = f.xdot_last

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Keep the quaternion on the unit sphere with w >= 0 (a state fix between hops); put
        welded followers back exactly on the composite."""
        if self._primary is not None:
            return  # the primary puts this follower on the composite
        if self._quat_fixed:
            self._quat_fixed = False  # done already, in the single-vehicle compiled hop
        else:
            self.x[6:10] = quat_normalize(self.x[6:10].copy())
        if self._welds:
            self.place_followers()

    def update_flow_outs(self, t_ns: int) -> None:
        """The state (m, m/s, quaternion, rad/s in N and B) with the accelerations of the latest
        derivative sample, and the mass (kg). Not built when nothing reads it."""
        if not self.wanted("state"):
            return
        self.write("state", self._state_builder.build(self.name, t_ns, self.x, self.xdot_last, self.mass_kg))

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
