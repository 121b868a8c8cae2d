"""The dynamics integrator actor of an articulated vehicle: a hub with appendages.

It owns the tree's generalized coordinates Q and velocities U, integrates them across each hop
with the articulated-body algorithm (hybrid dynamics: prescribed joints follow their profile's
acceleration, the rest respond), and publishes the hub's state and every joint's q, u and
generalized force (for a prescribed joint, the force it needed).

Moves arrive as :class:`~hopsim.schemas.PrescribedMotionProfile` messages (parameters, not
samples): the exact profile is evaluated at every derivative sample. A move's start and every
breakpoint of its acceleration law become barriers, so no integration step straddles a kink; at
a sample that falls on a hop's end the left-hand limit is used.
"""

from __future__ import annotations

import numpy as np

from hopsim.actors.messages import vector3
from hopsim.dynamics import (
    MultibodyTree,
    detlinalg,
    forward_kinematics,
    hybrid_dynamics,
    normalize_configuration,
    state_derivative,
)
from hopsim.dynamics.profiles import MoveProfile
from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.kernel import ContinuousModel, FixedRate, In, Out
from hopsim.schemas import JointStates, PrescribedMotionProfile, Quaternion, VehicleState

ONE_SIDED_S = 1e-12  # how far inside the hop a sample on its start or end is evaluated


class ArticulatedDynamics(ContinuousModel):
    """Hub (body 0, free joint) and appendages of ``tree``; ``Q0``/``U0`` the initial state."""

    inputs = {"profiles": In(PrescribedMotionProfile, queue=True, trigger=True)}
    outputs = {"hub_state": Out(VehicleState), "joints": Out(JointStates)}

    def __init__(self, name: str, tree: MultibodyTree, Q0=None, U0=None, rate_hz: float = 10.0):
        super().__init__(name)
        self.tree = tree
        self.arrays = tree.arrays
        self.nq, self.nv = tree.nq, tree.nv
        self.state_names = tuple(f"Q{i}" for i in range(self.nq)) + tuple(f"U{i}" for i in range(self.nv))
        self.x0 = np.concatenate(
            [
                tree.zero_configuration() if Q0 is None else np.asarray(Q0, float),
                np.zeros(self.nv) if U0 is None else np.asarray(U0, float),
            ]
        )
        self.io_schedule = FixedRate(rate_hz)
        self.moves: dict[str, MoveProfile] = {}
        self._udot_prescribed = np.zeros(self.nv)
        self._tau = np.zeros(self.nv)
        self._hop_start_s = self._hop_end_s = 0.0
        self.joint_names = tree.names

    def initial_state(self):
        return self.x0.copy()

    @property
    def Q(self) -> np.ndarray:
        return self.x[: self.nq].copy()

    @property
    def U(self) -> np.ndarray:
        return self.x[self.nq :].copy()

    # ------------------------------------------------------------------ moves
    def start_io_step(self, t0_ns: int, t1_ns: int | None) -> None:
        """Take the moves that arrived at this barrier (sets moves) and ask for barriers at their
        breakpoints. (start_io_step runs after every output of the barrier was published.)"""
        for msg in self.drain("profiles"):
            body = msg.joint
            i = self.tree.body_index(body)
            vs = self.tree.v_slice(body)
            if not self.arrays.prescribed[i] or vs.stop - vs.start != 1:
                raise ValueError(
                    f"{self.name}: joint {body!r} is not a prescribed one-degree-of-freedom "
                    f"joint; only those follow a PrescribedMotionProfile"
                )
            move = MoveProfile(
                msg.initial,
                msg.reference,
                msg.accel_max,
                msg.coast_bang_duration,
                msg.smoothing_duration,
                kind=msg.kind or "translation",
                start_time_ns=msg.start_time_ns or t0_ns,
            )
            self.moves[body] = move
            for bp in (0.0, *move.breakpoints, move.duration):
                t_ns = move.start_time_ns + round(bp * 1e9)
                if t_ns > t0_ns:
                    self.request_barrier(t_ns)

    # ------------------------------------------------------------------ dynamics
    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        self._hop_start_s = t0_ns * 1e-9
        self._hop_end_s = t1_ns * 1e-9

    def _prescribed_accelerations(self, t_s: float) -> np.ndarray:
        udot = self._udot_prescribed
        udot[:] = 0.0
        t_eval = min(max(t_s, self._hop_start_s + ONE_SIDED_S), self._hop_end_s - ONE_SIDED_S)
        for body, move in self.moves.items():
            t_rel = t_eval - move.start_time_ns * 1e-9
            if 0.0 <= t_rel <= move.duration:
                udot[self.tree.v_slice(body)] = move.evaluate(t_rel)[2]
        return udot

    def post_deriv(self, t_s: float) -> None:
        self.xdot[:] = state_derivative(self.arrays, self.x, self._tau, None, self._prescribed_accelerations(t_s))

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Keep joint quaternions on the unit sphere (a state fix between hops)."""
        self.x[: self.nq] = normalize_configuration(self.arrays, self.x[: self.nq])

    # ------------------------------------------------------------------ outputs
    def update_flow_outs(self, t_ns: int) -> None:
        Q, U = self.x[: self.nq], self.x[self.nq :]
        _R_NB, r_BN_N, v_B = forward_kinematics(self.arrays, Q, U)
        udot, tau = hybrid_dynamics(self.arrays, Q, U, self._tau, self._prescribed_accelerations(self._hop_end_s))
        q_hub = Q[0:4]
        R = quat_to_dcm(q_hub)
        self.write(
            "hub_state",
            VehicleState(
                vehicle=self.name,
                t_ns=t_ns,
                r_BN_N=vector3(r_BN_N[0]),
                v_BN_N=vector3(detlinalg.matmul(R, v_B[0][3:6])),
                q_BN=Quaternion(x=float(q_hub[0]), y=float(q_hub[1]), z=float(q_hub[2]), w=float(q_hub[3])),
                omega_BN_B=vector3(v_B[0][0:3]),
                omega_dot_BN_B=vector3(udot[0:3]),
                mass=float(np.sum(self.arrays.mass)),
            ),
        )
        self.write(
            "joints", JointStates(t_ns=t_ns, joints=self.joint_names, q=Q.tolist(), u=U.tolist(), tau=tau.tolist())
        )
