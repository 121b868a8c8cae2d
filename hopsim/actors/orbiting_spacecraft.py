"""A rigid spacecraft in Earth orbit: translation and attitude under gravity, drag, solar pressure,
the gravity-gradient torque and its thrusters, with mass properties from its fuel tank.

States (13): ``r_BN_N`` and ``v_BN_N`` of the centre of mass (m, m/s; N is the Earth-centred
inertial frame, the mean equator and equinox of date of :mod:`hopsim.dynamics.environment`),
``q_BN`` (scalar last; v_N = R(q_BN) v_B) and ``omega_BN_B`` (rad/s). The derivative, at every
derivative sample (orbital gravity changes within a hop):

    r' = v
    v' = g(r, t) + a_drag + a_srp + R(q) F_B / m
    q' = 1/2 q (x) (omega, 0)
    omega' = I^-1 (tau_B + tau_gg - omega x I omega)

- g: a point mass (``field=None``, mu = ``mu``), or a spherical-harmonic ``field``
  (:class:`hopsim.dynamics.spherical_harmonics.GravityField`, e.g. GGM03S) to ``degree``,
  evaluated in the Earth-fixed frame, which turns by GMST from ``epoch_jd`` (UT1 Julian date of
  t = 0);
- drag: a cannonball of ``cd_area_m2`` (C_D A, m^2) in an exponential atmosphere (``rho0_kgpm3``
  at ``h0_m``, scale height ``scale_height_m``; altitude above a sphere of the Earth's radius)
  turning with the Earth; ``cd_area_m2 = 0``: none;
- solar pressure: a cannonball of ``cr_area_m2`` (C_R A, m^2) with the Earth's cylindrical
  shadow; 0: none;
- tau_gg: the point-mass gravity-gradient torque (``gravity_gradient``);
- F_B and tau_B: the sum of the wrenches received on ``wrench0`` ... ``wrench{n-1}`` (body frame,
  torques about the centre of mass), held between messages (which end hops);
- m and I: ``mass_kg`` and ``inertia_B`` (about the centre of mass), replaced by the latest
  ``mass`` message (``hopsim.MassProperties`` from a fuel tank) if one is wired.

Reaction wheels (optional, ``axes_B``: one unit spin axis per wheel, body frame): the state gains
each wheel's spin rate relative to the body ``Omega_i`` (rad/s) after the 13 above (and, with
LuGre friction only, each wheel's bristle deflection ``z_i`` (rad) after those), and omega' and
Omega_i' are :func:`hopsim.dynamics.wheels.wheel_accelerations` with L_B = tau_B + tau_gg:
``J_kgm2`` the wheels' axial inertias, ``inertia_B`` then Schaub and Junkins' [I_RW] (everything
but the wheels' axial inertia; the gravity gradient uses the whole inertia), motor torques from
the ``torque_cmd`` input (``hopsim.ReactionWheelCommand``, limited to ``max_torque_Nm``, held
between messages), bearing friction :class:`hopsim.dynamics.wheels.BearingFriction`:
``friction="coulomb_viscous"`` (the default: ``viscous_Nms``, ``coulomb_Nm``,
``coulomb_speed_radps``) or ``"lugre"`` (``viscous_Nms``, ``coulomb_Nm``, ``static_Nm``,
``stribeck_speed_radps``, ``bristle_stiffness_Nmprad``, ``bristle_damping_Nmsprad``; its stiffness
sets the integration step, and an unstable integration raises at the end of its hop). The wheels
are internal: the orbit does not see them. Output ``wheels`` (``hopsim.ReactionWheelState``) at
``rate_hz``. Without wheels, 13 states, no ``torque_cmd`` and no ``wheels``.

Outputs ``state`` (``hopsim.VehicleState``, with a_BN_N the total acceleration of the latest
derivative sample and the mass) at ``rate_hz``. Faults: ``disturbance``: ``force_N`` (N, frame N)
and ``torque_B`` (N m) for ``duration_s``; ``wheel_failed`` (wheel ``index``, -1 for all: no motor
torque, the bearing still drags) and ``torque_scale`` (wheel ``index``: motor torque times
``value``), both :class:`hopsim.dynamics.wheels.WheelMotors` (an error on a spacecraft without
wheels).
"""
from __future__ import annotations

import math

import numpy as np

from hopsim.actors.disturbance import Disturbance
from hopsim.dynamics.environment import (drag_acceleration, exponential_density, gmst_rad, srp_acceleration,
                                         sun_position)
from hopsim.dynamics.gravity import EARTH_MU, EARTH_RADIUS, gravity_gradient_torque, point_mass_acceleration
from hopsim.dynamics.spatial import quat_normalize, quat_rate, quat_to_dcm
from hopsim.dynamics.spherical_harmonics import GravityField, spherical_harmonic_acceleration
from hopsim.dynamics.wheels import (WHEEL_FAULTS, BearingFriction, WheelMotors, per_wheel, wheel_accelerations,
                                    wheel_angular_momentum_B, wheel_axes)
from hopsim.kernel import ContinuousModel, FixedRate, In, Out
from hopsim.schemas import (MassProperties, Quaternion, ReactionWheelCommand, ReactionWheelState, Vector3,
                            VehicleState, Wrench)

JD_J2000 = 2451545.0


def _v3(a) -> Vector3:
    return Vector3(x=float(a[0]), y=float(a[1]), z=float(a[2]))


class OrbitingSpacecraft(ContinuousModel):
    """A rigid spacecraft in Earth orbit (see the module)."""

    state_names = ("r_x", "r_y", "r_z", "v_x", "v_y", "v_z", "q_x", "q_y", "q_z", "q_w",
                   "omega_x", "omega_y", "omega_z")
    outputs = {"state": Out(VehicleState)}
    feed_through = False
    accepts_faults = {"disturbance": ("force_N", "torque_B", "duration_s", "clear"), **WHEEL_FAULTS}

    def __init__(self, name: str, r_BN_N, v_BN_N, mass_kg: float, inertia_B, q_BN=(0.0, 0.0, 0.0, 1.0),
                 omega_BN_B=(0.0, 0.0, 0.0), field: GravityField | None = None, degree: int = 0,
                 mu: float = EARTH_MU, epoch_jd: float = JD_J2000, cd_area_m2: float = 0.0,
                 rho0_kgpm3: float = 0.0, h0_m: float = 0.0, scale_height_m: float = 1.0, cr_area_m2: float = 0.0,
                 gravity_gradient: bool = True, n_thrusters: int = 0, rate_hz: float = 1.0, axes_B=None,
                 J_kgm2=0.05, Omega_radps=None, max_torque_Nm=0.2, viscous_Nms=0.0, coulomb_Nm=0.0,
                 coulomb_speed_radps=0.1, friction: str = "coulomb_viscous", static_Nm=None,
                 stribeck_speed_radps=None, bristle_stiffness_Nmprad=None, bristle_damping_Nmsprad=None):
        self.inputs = {**{f"wrench{i}": In(Wrench) for i in range(int(n_thrusters))}, "mass": In(MassProperties)}
        G = np.zeros((0, 3)) if axes_B is None else wheel_axes(name, axes_B)
        k = len(G)
        bearings = BearingFriction(name, k, friction, viscous_Nms, coulomb_Nm, coulomb_speed_radps, static_Nm,
                                   stribeck_speed_radps, bristle_stiffness_Nmprad, bristle_damping_Nmsprad)
        if k:
            self.inputs["torque_cmd"] = In(ReactionWheelCommand)
            self.outputs = {**type(self).outputs, "wheels": Out(ReactionWheelState)}
            self.state_names = type(self).state_names + tuple(f"Omega{i}" for i in range(k)) \
                + tuple(f"z{i}" for i in range(bearings.n_states))
        super().__init__(name)
        x0 = np.concatenate([np.asarray(r_BN_N, float), np.asarray(v_BN_N, float),
                             quat_normalize(np.asarray(q_BN, float)), np.asarray(omega_BN_B, float)])
        if x0.shape != (13,) or not np.all(np.isfinite(x0)) or np.linalg.norm(x0[0:3]) <= EARTH_RADIUS * 0.5:
            raise ValueError(f"{name}: the initial state must be finite 3-vectors (m, m/s, rad/s) above the Earth")
        if not (np.isfinite(mass_kg) and mass_kg > 0):
            raise ValueError(f"{name}: mass_kg must be positive, got {mass_kg}")
        inertia = np.array(inertia_B, dtype=float).reshape(3, 3)
        if not np.all(np.isfinite(inertia)) or np.any(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) <= 0):
            raise ValueError(f"{name}: inertia_B must be a symmetric positive definite 3x3 matrix (kg m^2)")
        for what, value in (("cd_area_m2", cd_area_m2), ("cr_area_m2", cr_area_m2), ("rho0_kgpm3", rho0_kgpm3)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: {what} must be a non-negative number, got {value}")
        if not (np.isfinite(scale_height_m) and scale_height_m > 0):
            raise ValueError(f"{name}: scale_height_m must be positive, got {scale_height_m}")
        self.n_wheels, self.G = k, G
        self.J = per_wheel(name, "J_kgm2", J_kgm2, k, positive=True)
        self.motors = WheelMotors(name, k, max_torque_Nm)
        self.bearings = bearings
        Omega0 = np.zeros(k) if Omega_radps is None else per_wheel(name, "Omega_radps", Omega_radps, k,
                                                                    negative_ok=True)
        self.u = np.zeros(k)                       # motor torques over the current hop (N m)
        self.x0 = np.concatenate([x0, Omega0, np.zeros(bearings.n_states)])
        self.mass_kg = float(mass_kg)
        self._set_inertia(inertia)
        self.field, self.degree = field, int(degree)
        if field is not None:
            self.C, self.S = field.unnormalized(self.degree)
            self.mu = field.mu
        else:
            self.C = self.S = None
            self.mu = float(mu)
        self.epoch_jd = float(epoch_jd)
        self.cd_area_m2, self.cr_area_m2 = float(cd_area_m2), float(cr_area_m2)
        self.rho0, self.h0, self.scale_height = float(rho0_kgpm3), float(h0_m), float(scale_height_m)
        self.gravity_gradient = bool(gravity_gradient)
        self.n_thrusters = int(n_thrusters)
        self.io_schedule = FixedRate(rate_hz)
        self.force_B = np.zeros(3)
        self.torque_B = np.zeros(3)
        self.disturbance = Disturbance()
        self._disturbed = False
        self.accel_N = np.zeros(3)
        self.lugre_step_s = math.inf               # the longest stable RK4 step at the hop's start (s)

    def _set_inertia(self, inertia_B: np.ndarray) -> None:
        """inertia_B ([I_RW] with wheels), its inverse and the whole inertia (for the gravity gradient)."""
        self.inertia_B = inertia_B
        if self.n_wheels:
            self.inertia_inv = np.linalg.inv(inertia_B)
            self.inertia_total_B = inertia_B + (self.G.T * self.J) @ self.G
        else:
            self.inertia_inv = None
            self.inertia_total_B = inertia_B

    def initial_state(self) -> np.ndarray:
        return self.x0.copy()

    def angular_momentum_B(self, x=None) -> np.ndarray:
        """H_B (N m s): body and wheels about the centre of mass, B components."""
        x = self.x if x is None else x
        return wheel_angular_momentum_B(self.inertia_B, self.G, self.J, x[10:13], x[13:13 + self.n_wheels])

    def effective_inertia(self) -> np.ndarray:
        """Each wheel's effective inertia about its axis (kg m^2): 1 / (1/J_i + g_i . [I_RW]^-1 g_i)."""
        return 1.0 / (1.0 / self.J + np.einsum("ij,jk,ik->i", self.G, self.inertia_inv, self.G))

    def on_fault(self, fault, t_ns: int) -> None:
        """``disturbance``: ``force_N`` and ``torque_B`` for ``duration_s``; ``wheel_failed`` and
        ``torque_scale`` (per wheel ``index``, -1 all)."""
        if fault.kind in WHEEL_FAULTS:
            self.motors.on_fault(fault)
        elif fault.kind == "disturbance":
            self.disturbance.apply(fault, t_ns, self.request_barrier)

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Latch the thrusters' wrenches, the mass properties, the wheels' motor torques (limited)
        and the disturbance for the hop."""
        force, torque = np.zeros(3), np.zeros(3)
        for i in range(self.n_thrusters):
            w = self.read(f"wrench{i}")
            if w is not None:
                force += (w.force.x, w.force.y, w.force.z)
                torque += (w.torque.x, w.torque.y, w.torque.z)
        self.force_B, self.torque_B = force, torque
        m = self.read("mass")
        if m is not None and m.mass_kg > 0 and len(m.inertia_B) == 9:
            self.mass_kg = m.mass_kg
            self._set_inertia(np.array(m.inertia_B, dtype=float).reshape(3, 3))
        if self.n_wheels:
            cmd = self.read("torque_cmd")
            self.u = self.motors.torques(None if cmd is None else cmd.torque_Nm)
            if self.bearings.n_states:
                self.lugre_step_s = self.bearings.max_step_s(self.x[13:13 + self.n_wheels], self.effective_inertia())
        self._disturbed = self.disturbance.acts_over(t0_ns)

    def gravity_N(self, r_N: np.ndarray, t_s: float) -> np.ndarray:
        """Gravitational acceleration (m/s^2, frame N) at ``r_N`` (m) at ``t_s``."""
        if self.field is None:
            return point_mass_acceleration(r_N, self.mu)
        g = gmst_rad(self.epoch_jd + t_s / 86400.0)
        c, s = math.cos(g), math.sin(g)
        r_F = np.array([c * r_N[0] + s * r_N[1], -s * r_N[0] + c * r_N[1], r_N[2]])
        a_F = spherical_harmonic_acceleration(r_F, self.mu, self.field.radius, self.C, self.S, self.degree)
        return np.array([c * a_F[0] - s * a_F[1], s * a_F[0] + c * a_F[1], a_F[2]])

    def post_deriv(self, t_s: float) -> None:
        x = self.x
        r, v, q, omega = x[0:3], x[3:6], x[6:10], x[10:13]
        R = quat_to_dcm(q)
        a = self.gravity_N(r, t_s) + R @ self.force_B / self.mass_kg
        if self.cd_area_m2 > 0 and self.rho0 > 0:
            rho = exponential_density(float(np.linalg.norm(r)) - EARTH_RADIUS, self.rho0, self.h0, self.scale_height)
            a += drag_acceleration(r, v, rho, self.cd_area_m2 / self.mass_kg)
        if self.cr_area_m2 > 0:
            a += srp_acceleration(r, sun_position(self.epoch_jd + t_s / 86400.0), self.cr_area_m2 / self.mass_kg)
        torque = self.torque_B.copy()
        if self._disturbed:
            a += self.disturbance.force_N / self.mass_kg
            torque += self.disturbance.torque_B
        if self.gravity_gradient:
            torque += gravity_gradient_torque(R.T @ r, self.inertia_total_B, self.mu)
        I = self.inertia_B
        self.xdot[0:3] = v
        self.xdot[3:6] = a
        self.xdot[6:10] = quat_rate(q, omega)
        if self.n_wheels:
            k = self.n_wheels
            Omega = x[13:13 + k]
            friction, z_dot = self.bearings.torques(Omega, x[13 + k:])
            self.xdot[10:13], self.xdot[13:13 + k] = wheel_accelerations(I, self.inertia_inv, self.G, self.J, omega,
                                                                         Omega, self.u, friction, torque)
            self.xdot[13 + k:] = z_dot
        else:
            self.xdot[10:13] = np.linalg.solve(I, torque - np.cross(omega, I @ omega))
        self.accel_N = a

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """The attitude back on the unit sphere (the integrator drifts off it); raise if the LuGre
        bristles' integration went unstable over the hop."""
        self.x[6:10] = quat_normalize(self.x[6:10])
        if self.bearings.n_states:
            self.bearings.check(self.name, self.x[13 + self.n_wheels:], self.lugre_step_s, (t1_ns - t0_ns) * 1e-9)

    def update_flow_outs(self, t_ns: int) -> None:
        x = self.x
        q = x[6:10]
        self.write("state", VehicleState(vehicle=self.name, t_ns=t_ns, r_BN_N=_v3(x[0:3]), v_BN_N=_v3(x[3:6]),
                                         q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]), omega_BN_B=_v3(x[10:13]),
                                         a_BN_N=_v3(self.accel_N), mass=self.mass_kg))
        if self.n_wheels:
            H_B = self.angular_momentum_B()
            k = self.n_wheels
            friction, _ = self.bearings.torques(x[13:13 + k], x[13 + k:])
            self.write("wheels", ReactionWheelState(
                vehicle=self.name, t_ns=t_ns, speed_radps=x[13:13 + k].tolist(), motor_torque_Nm=self.u.tolist(),
                friction_torque_Nm=friction.tolist(), H_B=_v3(H_B), H_N=_v3(quat_to_dcm(q) @ H_B)))


__all__ = ["OrbitingSpacecraft"]
