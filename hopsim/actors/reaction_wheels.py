"""A spacecraft's attitude with reaction wheels (Dshell's ReactionWheel with its friction models);
the equations are :func:`hopsim.dynamics.wheels.wheel_accelerations`.

States: the attitude ``q_BN`` (scalar last; v_N = R(q_BN) v_B), the body's angular velocity
``omega_BN_B`` (rad/s), each wheel's spin rate relative to the body ``Omega_i`` (rad/s) and, with
LuGre friction only, each wheel's bristle deflection ``z_i`` (rad) after them. Wheel i
spins about the unit axis ``g_i`` (body frame) with axial inertia ``J_i`` (kg m^2); ``inertia_B``
is the spacecraft's inertia about its centre of mass including the wheels except their axial
inertia (Schaub and Junkins, Analytical Mechanics of Space Systems, 4th ed., section 4.5:
[I_RW]). With h_i = J_i (g_i . omega + Omega_i) the wheels' spin momenta,

    H_B      = [I_RW] omega + sum_i h_i g_i                        (total angular momentum)
    [I_RW] omega' = L_B - omega x H_B - sum_i g_i (u_i - f_i)
    h_i'     = u_i - f_i,      Omega_i' = (u_i - f_i) / J_i - g_i . omega'
    q_BN'    = 1/2 q_BN (x) (omega, 0)

with u_i the motor torque (the command, limited to ``max_torque_Nm``, held over a hop) and f_i the
bearing friction, :class:`hopsim.dynamics.wheels.BearingFriction`: ``friction="coulomb_viscous"``
(the default) is viscous ``viscous_Nms * Omega_i`` plus Coulomb ``coulomb_Nm`` opposing the spin,
ramped linearly within ``coulomb_speed_radps`` of zero so that the derivative stays continuous
(a stopped wheel does not chatter); ``friction="lugre"`` is the LuGre model with ``viscous_Nms``,
``coulomb_Nm``, ``static_Nm``, ``stribeck_speed_radps``, ``bristle_stiffness_Nmprad`` and
``bristle_damping_Nmsprad``, whose stiffness sets the integration step (BearingFriction says how;
an unstable integration raises at the end of its hop). Motor and friction torques are internal:
without an external torque L_B the total angular momentum H_N = R(q_BN) H_B is constant, which
is what moving momentum between wheels and body means.

Faults: ``wheel_failed`` (wheel ``index``, -1 for all: its motor torque is zero; the bearing still
drags), ``torque_scale`` (wheel ``index``: motor torque times ``value``), both
:class:`hopsim.dynamics.wheels.WheelMotors`; ``disturbance`` (``torque_B`` on the body for
``duration_s``).
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.actors.disturbance import Disturbance
from hopsim.dynamics import detlinalg
from hopsim.dynamics.spatial import quat_normalize, quat_rate, quat_to_dcm
from hopsim.dynamics.wheels import (
    WHEEL_FAULTS,
    BearingFriction,
    WheelMotors,
    per_wheel,
    wheel_accelerations,
    wheel_angular_momentum_B,
    wheel_axes,
    wheel_friction,
)
from hopsim.kernel import ContinuousModel, FixedRate, In, Out
from hopsim.schemas import Quaternion, ReactionWheelCommand, ReactionWheelState, Vector3, VehicleState


class ReactionWheelSpacecraft(ContinuousModel):
    """A rigid spacecraft's attitude and its reaction wheels (see the module)."""

    inputs = {"torque_cmd": In(ReactionWheelCommand)}
    outputs = {"state": Out(VehicleState), "wheels": Out(ReactionWheelState)}
    feed_through = False
    accepts_faults = {**WHEEL_FAULTS, "disturbance": ("torque_B", "duration_s", "clear")}

    def __init__(
        self,
        name: str,
        inertia_B,
        axes_B,
        J_kgm2,
        q_BN=(0.0, 0.0, 0.0, 1.0),
        omega_BN_B=(0.0, 0.0, 0.0),
        Omega_radps=None,
        max_torque_Nm=0.2,
        viscous_Nms=0.0,
        coulomb_Nm=0.0,
        coulomb_speed_radps=0.1,
        rate_hz: float = 10.0,
        friction: str = "coulomb_viscous",
        static_Nm=None,
        stribeck_speed_radps=None,
        bristle_stiffness_Nmprad=None,
        bristle_damping_Nmsprad=None,
    ):
        G = np.array(axes_B, dtype=float).reshape(-1, 3)
        k = len(G)
        bearings = BearingFriction(
            name,
            k,
            friction,
            viscous_Nms,
            coulomb_Nm,
            coulomb_speed_radps,
            static_Nm,
            stribeck_speed_radps,
            bristle_stiffness_Nmprad,
            bristle_damping_Nmsprad,
        )
        self.state_names = (
            "qx",
            "qy",
            "qz",
            "qw",
            "wx",
            "wy",
            "wz",
            *tuple(f"Omega{i}" for i in range(k)),
            *tuple(f"z{i}" for i in range(bearings.n_states)),
        )
        super().__init__(name)
        self.inertia_B = np.array(inertia_B, dtype=float)
        if (
            self.inertia_B.shape != (3, 3)
            or not np.all(np.isfinite(self.inertia_B))
            or np.any(detlinalg.eigvalsh(0.5 * (self.inertia_B + self.inertia_B.T)) <= 0)
        ):
            raise ValueError(f"{name}: inertia_B must be a symmetric positive definite 3x3 matrix (kg m^2)")
        self.G = wheel_axes(name, G)
        self.J = self._per_wheel(name, "J_kgm2", J_kgm2, k, positive=True)
        self.motors = WheelMotors(name, k, max_torque_Nm)
        self.bearings = bearings
        Omega0 = (
            np.zeros(k)
            if Omega_radps is None
            else self._per_wheel(name, "Omega_radps", Omega_radps, k, negative_ok=True)
        )
        self.x0 = np.concatenate(
            [
                quat_normalize(np.array(q_BN, dtype=float)),
                np.array(omega_BN_B, dtype=float),
                Omega0,
                np.zeros(bearings.n_states),
            ]
        )
        self.inertia_inv = detlinalg.inv(self.inertia_B)
        self.io_schedule = FixedRate(rate_hz)
        self.n_wheels = k
        self.disturbance = Disturbance()
        self.u = np.zeros(k)  # motor torques over the current hop (N m)
        self._disturbed = False
        self.lugre_step_s = math.inf  # the longest stable RK4 step at the hop's start (s)

    _per_wheel = staticmethod(per_wheel)

    def initial_state(self) -> np.ndarray:
        return self.x0.copy()

    # ------------------------------------------------------------------ faults
    def check_fault(self, fault) -> None:
        if fault.kind in WHEEL_FAULTS:
            self.motors.check_fault(fault)

    def on_fault(self, fault, t_ns: int) -> None:
        """``wheel_failed``, ``torque_scale`` (per wheel ``index``, -1 all) and ``disturbance``."""
        if fault.kind in WHEEL_FAULTS:
            self.motors.on_fault(fault)
        elif fault.kind == "disturbance":
            self.disturbance.apply(fault, t_ns, self.request_barrier)

    # ------------------------------------------------------------------ lifecycle
    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Latch the motor torques (limited, scaled, failed wheels off) and the disturbance for the hop."""
        cmd = self.read("torque_cmd")
        self.u = self.motors.torques(None if cmd is None else cmd.torque_Nm)
        self._disturbed = self.disturbance.acts_over(t0_ns)
        if self.bearings.n_states:
            self.lugre_step_s = self.bearings.max_step_s(self.x[7 : 7 + self.n_wheels], self.effective_inertia())

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Raise if the LuGre bristles' integration went unstable over the hop."""
        if self.bearings.n_states:
            self.bearings.check(self.name, self.x[7 + self.n_wheels :], self.lugre_step_s, (t1_ns - t0_ns) * 1e-9)

    def effective_inertia(self) -> np.ndarray:
        """Each wheel's effective inertia about its axis (kg m^2): 1 / (1/J_i + g_i . [I_RW]^-1 g_i)."""
        return 1.0 / (1.0 / self.J + np.sum(detlinalg.matmul(self.G, self.inertia_inv) * self.G, axis=1))

    def angular_momentum_B(self, x=None) -> np.ndarray:
        """H_B (N m s): body and wheels about the centre of mass, B components."""
        x = self.x if x is None else x
        return wheel_angular_momentum_B(self.inertia_B, self.G, self.J, x[4:7], x[7 : 7 + self.n_wheels])

    def post_deriv(self, t_s: float) -> None:
        x, k = self.x, self.n_wheels
        q, omega, Omega = x[0:4], x[4:7], x[7 : 7 + k]
        friction, z_dot = self.bearings.torques(Omega, x[7 + k :])
        external = self.disturbance.torque_B if self._disturbed else np.zeros(3)
        omega_dot, Omega_dot = wheel_accelerations(
            self.inertia_B, self.inertia_inv, self.G, self.J, omega, Omega, self.u, friction, external
        )
        self.xdot[0:4] = quat_rate(q, omega)
        self.xdot[4:7] = omega_dot
        self.xdot[7 : 7 + k] = Omega_dot
        self.xdot[7 + k :] = z_dot

    def update_flow_outs(self, t_ns: int) -> None:
        x = self.x
        q = x[0:4]
        H_B = self.angular_momentum_B()
        H_N = detlinalg.matmul(quat_to_dcm(q), H_B)
        self.write(
            "state",
            VehicleState(
                vehicle=self.name,
                t_ns=t_ns,
                q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
                omega_BN_B=Vector3(x=x[4], y=x[5], z=x[6]),
            ),
        )
        k = self.n_wheels
        friction, _ = self.bearings.torques(x[7 : 7 + k], x[7 + k :])
        self.write(
            "wheels",
            ReactionWheelState(
                vehicle=self.name,
                t_ns=t_ns,
                speed_radps=x[7 : 7 + k].tolist(),
                motor_torque_Nm=self.u.tolist(),
                friction_torque_Nm=friction.tolist(),
                H_B=Vector3(x=H_B[0], y=H_B[1], z=H_B[2]),
                H_N=Vector3(x=H_N[0], y=H_N[1], z=H_N[2]),
            ),
        )


__all__ = ["ReactionWheelSpacecraft", "wheel_friction"]
