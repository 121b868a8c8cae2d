"""A rigid spacecraft in Earth orbit: translation and attitude under gravity, drag, solar pressure,
the gravity-gradient torque and its thrusters, with mass properties from its fuel tank.

States (13): ``r_BN_N`` and ``v_BN_N`` of the centre of mass (m, m/s; N is the Earth-centred
inertial frame, the mean equator and equinox of date of :mod:`hopsim.dynamics.environment`),
``q_BN`` (scalar last; v_N = R(q_BN) v_B) and ``omega_BN_B`` (rad/s). The derivative, at every
derivative sample (orbital gravity changes within a hop):

    r' = v
    v' = g(r, t) + a_drag + a_srp + R(q) (F_B + F_plates) / m
    q' = 1/2 q (x) (omega, 0)
    omega' = I^-1 (tau_B + tau_gg + tau_plates - omega x I omega)

- g: a point mass (``field=None``, mu = ``mu``), or a spherical-harmonic ``field``
  (:class:`hopsim.dynamics.spherical_harmonics.GravityField`, e.g. GGM03S) to ``degree``,
  evaluated in the Earth-fixed frame, which turns by GMST from ``epoch_jd`` (UT1 Julian date of
  t = 0);
- drag: a cannonball of ``cd_area_m2`` (C_D A, m^2) in an exponential atmosphere (``rho0_kgpm3``
  at ``h0_m``, scale height ``scale_height_m``; altitude above a sphere of the Earth's radius)
  turning with the Earth; ``cd_area_m2 = 0``: none;
- F_plates and tau_plates: the drag of flat plates in the same atmosphere (``drag_plates``: each
  ``(normal_B, area_m2, drag_coefficient, centre_B)``, the centre of pressure from the centre of
  mass; a plate drags with its area projected on the flow when its front faces it,
  :func:`hopsim.dynamics.environment.plate_drag_xyz`), and its torque about the centre of mass:
  a body that is no cannonball, whose drag depends on its attitude (beside or instead of
  ``cd_area_m2``);
- solar pressure: a cannonball of ``cr_area_m2`` (C_R A, m^2) with the Earth's cylindrical
  shadow, or with ``shadow="conical"`` its umbra and penumbra (the fraction of the Sun's disk in
  view, :func:`hopsim.dynamics.environment.conical_shadow_fraction_xyz`); 0: none;
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

Outputs ``state`` (``hopsim.VehicleState``, with a_BN_N and omega_dot_BN_B of the latest
derivative sample and the mass) at ``rate_hz``. Faults: ``disturbance``: ``force_N`` (N, frame N)
and ``torque_B`` (N m) for ``duration_s``; ``wheel_failed`` (wheel ``index``, -1 for all: no motor
torque, the bearing still drags) and ``torque_scale`` (wheel ``index``: motor torque times
``value``), both :class:`hopsim.dynamics.wheels.WheelMotors` (accepted only by a spacecraft with
wheels).

The equations are compiled, once, in :mod:`hopsim.dynamics.orbiting_body`: ``post_deriv`` calls
its derivative for any integrator; in an island integrated by RK4 the spacecraft propagates a whole
hop in one compiled call (:meth:`OrbitingSpacecraft.propagate_hop`, its loads latched at the hop's
start), and the islands whose hops coincide in one call for all (``Simulation(batching=True)``);
the published accelerations are then the derivative at the hop's end.

Docking (:class:`hopsim.actors.contact.ContactWorld`, :mod:`hopsim.actors.welding`): welded
spacecraft fly as one rigid composite integrated by the primary. Its derivative is the equations
above for the composite: the state of its centre of mass C (``r_CN = r_BN + R c``, ``v_CN = v_BN
+ R (omega x c)``, ``c`` the composite's centre of mass from the primary's, B axes), its mass and
inertia about C (:meth:`Weldable.composite`), the sum of every part's drag and radiation areas
(cannonballs), every part's loads moved to C (forces rotated into B, torques about C), and the
primary's wheels; the primary's own acceleration then follows from C's by rigid kinematics:
``a_BN = a_CN - R (omega_dot x c + omega x (omega x c))`` (Schaub and Junkins, 2nd ed., sec. 2.5).
Followers ride on it (:func:`hopsim.dynamics.weld.welded_follower_derivative`) and keep publishing
their own state. A follower has no wheels (their spin would need the composite's equations).
"""

from __future__ import annotations

import math
import struct

import numpy as np

from hopsim.actors.disturbance import Disturbance
from hopsim.actors.held_messages import ReadMessages
from hopsim.actors.messages import StateMessageBuilder
from hopsim.actors.orbiting_fleet import OrbitingFleet
from hopsim.actors.welding import Weldable
from hopsim.dynamics import detlinalg
from hopsim.dynamics.environment import PLATE_CENTRE, PLATE_NORMAL, PLATE_PARAMS, plate_records
from hopsim.dynamics.gravity import EARTH_MU, EARTH_RADIUS
from hopsim.dynamics.orbiting_body import (
    FRICTION_PARAMS,
    L_DIST_FORCE_N,
    L_DIST_TORQUE_B,
    L_FORCE_B,
    L_TORQUE_B,
    N_LOADS,
    N_PARAMS,
    P_CD_AREA,
    P_CR_AREA,
    P_DEGREE,
    P_MASS,
    P_MU,
    P_N_PLATES,
    gravity_acceleration,
    orbiting_derivative,
    parameters,
    rk4_hop,
    rk4_hops,
    scratch,
)
from hopsim.dynamics.spatial import quat_normalize, quat_to_dcm
from hopsim.dynamics.spherical_harmonics import GravityField
from hopsim.dynamics.weld import welded_follower_derivative
from hopsim.dynamics.wheels import (
    WHEEL_FAULTS,
    BearingFriction,
    WheelMotors,
    per_wheel,
    wheel_angular_momentum_B,
    wheel_axes,
)
from hopsim.kernel import ContinuousModel, FixedRate, In, Out
from hopsim.schemas import MassProperties, ReactionWheelCommand, ReactionWheelState, Vector3, VehicleState, Wrench

JD_J2000 = 2451545.0


def _v3(a) -> Vector3:
    return Vector3(x=float(a[0]), y=float(a[1]), z=float(a[2]))


def wrench_numbers(w) -> tuple[float, ...]:
    """A wrench's force (N) and torque (N m), body frame: (fx, fy, fz, tx, ty, tz)."""
    force, torque = w.force, w.torque
    return force.x, force.y, force.z, torque.x, torque.y, torque.z


class OrbitingSpacecraft(Weldable, ContinuousModel):
    """A rigid spacecraft in Earth orbit (see the module)."""

    state_names = (
        "r_x",
        "r_y",
        "r_z",
        "v_x",
        "v_y",
        "v_z",
        "q_x",
        "q_y",
        "q_z",
        "q_w",
        "omega_x",
        "omega_y",
        "omega_z",
    )
    outputs = {"state": Out(VehicleState)}
    feed_through = False
    accepts_faults = {"disturbance": ("force_N", "torque_B", "duration_s", "clear"), **WHEEL_FAULTS}
    loads_constant_over_hop = True  # thrust, wheel torques and disturbances are held over a hop
    fleet_form = OrbitingFleet  # many spacecraft's hops in one call (hopsim.kernel.fleet)
    row_form = "hopsim.actors.orbiting_fleet:OrbitingSpacecraftRows"  # in a row block (hopsim.kernel.blocks)
    # _state_builder and _work are scratch memory (update_flow_outs', the compiled equations'),
    # holding nothing between calls; welds are links between models, made and broken at barriers only
    _FRAMEWORK_ATTRS = ContinuousModel._FRAMEWORK_ATTRS | {"_state_builder", "_work", "_welds", "_primary_weld"}

    def __init__(
        self,
        name: str,
        r_BN_N,
        v_BN_N,
        mass_kg: float,
        inertia_B,
        q_BN=(0.0, 0.0, 0.0, 1.0),
        omega_BN_B=(0.0, 0.0, 0.0),
        field: GravityField | None = None,
        degree: int = 0,
        mu: float = EARTH_MU,
        epoch_jd: float = JD_J2000,
        cd_area_m2: float = 0.0,
        rho0_kgpm3: float = 0.0,
        h0_m: float = 0.0,
        scale_height_m: float = 1.0,
        cr_area_m2: float = 0.0,
        gravity_gradient: bool = True,
        n_thrusters: int = 0,
        rate_hz: float = 1.0,
        axes_B=None,
        J_kgm2=0.05,
        Omega_radps=None,
        max_torque_Nm=0.2,
        viscous_Nms=0.0,
        coulomb_Nm=0.0,
        coulomb_speed_radps=0.1,
        friction: str = "coulomb_viscous",
        static_Nm=None,
        stribeck_speed_radps=None,
        bristle_stiffness_Nmprad=None,
        bristle_damping_Nmsprad=None,
        drag_plates=(),
        shadow: str = "cylindrical",
    ):
        self.inputs = {**{f"wrench{i}": In(Wrench) for i in range(int(n_thrusters))}, "mass": In(MassProperties)}
        G = np.zeros((0, 3)) if axes_B is None else wheel_axes(name, axes_B)
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
        if k:
            self.inputs["torque_cmd"] = In(ReactionWheelCommand)
            self.outputs = {**type(self).outputs, "wheels": Out(ReactionWheelState)}
            self.state_names = (
                type(self).state_names
                + tuple(f"Omega{i}" for i in range(k))
                + tuple(f"z{i}" for i in range(bearings.n_states))
            )
        super().__init__(name)
        x0 = np.concatenate(
            [
                np.asarray(r_BN_N, float),
                np.asarray(v_BN_N, float),
                quat_normalize(np.asarray(q_BN, float)),
                np.asarray(omega_BN_B, float),
            ]
        )
        if x0.shape != (13,) or not np.isfinite(x0).all() or detlinalg.norm(x0[0:3]) <= EARTH_RADIUS * 0.5:
            raise ValueError(f"{name}: the initial state must be finite 3-vectors (m, m/s, rad/s) above the Earth")
        if not (np.isfinite(mass_kg) and mass_kg > 0):
            raise ValueError(f"{name}: mass_kg must be positive, got {mass_kg}")
        inertia = np.array(inertia_B, dtype=float).reshape(3, 3)
        if not np.isfinite(inertia).all() or (detlinalg.eigvalsh(0.5 * (inertia + inertia.T)) <= 0).any():
            raise ValueError(f"{name}: inertia_B must be a symmetric positive definite 3x3 matrix (kg m^2)")
        for what, value in (("cd_area_m2", cd_area_m2), ("cr_area_m2", cr_area_m2), ("rho0_kgpm3", rho0_kgpm3)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: {what} must be a non-negative number, got {value}")
        if not (np.isfinite(scale_height_m) and scale_height_m > 0):
            raise ValueError(f"{name}: scale_height_m must be positive, got {scale_height_m}")
        if not k:  # the wheel faults only where there are wheels
            self.accepts_faults = {
                kind: fields for kind, fields in type(self).accepts_faults.items() if kind not in WHEEL_FAULTS
            }
        self.n_wheels, self.G = k, G
        self.J = per_wheel(name, "J_kgm2", J_kgm2, k, positive=True)
        self.motors = WheelMotors(name, k, max_torque_Nm)
        self.bearings = bearings
        Omega0 = (
            np.zeros(k) if Omega_radps is None else per_wheel(name, "Omega_radps", Omega_radps, k, negative_ok=True)
        )
        self.u = np.zeros(k)  # motor torques over the current hop (N m)
        self.x0 = np.concatenate([x0, Omega0, np.zeros(bearings.n_states)])
        if field is not None:
            C, S = field.unnormalized(int(degree))
            mu, radius, degree = field.mu, field.radius, int(degree)
        else:
            C = S = np.zeros((1, 1))
            mu, radius, degree = float(mu), EARTH_RADIUS, -1
        self.field, self.C, self.S = field, C, S
        self.epoch_jd = float(epoch_jd)
        self.cd_area_m2, self.cr_area_m2 = float(cd_area_m2), float(cr_area_m2)
        self.gravity_gradient = bool(gravity_gradient)
        # the parameters, loads and bearings as the compiled equations take them
        self.drag_plates = plate_records(name, drag_plates)  # PLATE_PARAMS floats per plate
        if shadow not in ("cylindrical", "conical"):
            raise ValueError(f"{name}: shadow must be 'cylindrical' or 'conical', got {shadow!r}")
        self.shadow = shadow
        self.params = parameters(
            mu,
            radius,
            degree,
            self.epoch_jd,
            self.cd_area_m2,
            float(rho0_kgpm3),
            float(h0_m),
            float(scale_height_m),
            self.cr_area_m2,
            float(mass_kg),
            self.gravity_gradient,
            bearings.n_states > 0,
            self.drag_plates,
            shadow == "conical",
        )
        self.loads = np.zeros(N_LOADS)
        self.friction_table = bearings.table() if k else np.zeros((0, FRICTION_PARAMS))
        self._work = scratch(degree, k, len(self.x0))  # the compiled equations' work arrays
        self.inertia_B, self.inertia_inv, self.inertia_total_B = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3))
        self._set_inertia(inertia)
        self.n_thrusters = int(n_thrusters)
        self._wrench_ports = tuple(f"wrench{i}" for i in range(self.n_thrusters))
        self._wrenches = ReadMessages()  # each wrench's numbers, read once (a memo)
        self.io_schedule = FixedRate(rate_hz)
        self.disturbance = Disturbance()
        self._state_builder = StateMessageBuilder()
        self.lugre_step_s = math.inf  # the longest stable RK4 step at the hop's start (s)
        self._init_welds()

    @property
    def mass_kg(self) -> float:
        """The spacecraft's mass (kg): the constructor's, then the latest ``mass`` message's."""
        return float(self.params[P_MASS])

    @property
    def inertia_C_B(self) -> np.ndarray:
        """The whole inertia about the centre of mass (kg m^2, B axes; wheels' axial inertia included)."""
        return self.inertia_total_B

    @property
    def r_CB_B(self) -> np.ndarray:
        """The centre of mass from the state's origin (m, B): the state is the centre of mass's."""
        return np.zeros(3)

    @property
    def mu(self) -> float:
        """The gravitational parameter (m^3/s^2)."""
        return float(self.params[P_MU])

    def _set_inertia(self, inertia_B: np.ndarray) -> None:
        """inertia_B ([I_RW] with wheels), its inverse and the whole inertia (for the gravity gradient),
        written in place (a fleet form's rows may hold them)."""
        total = inertia_B + detlinalg.matmul(self.G.T * self.J, self.G) if self.n_wheels else inertia_B
        self.inertia_B[:] = inertia_B
        self.inertia_inv[:] = detlinalg.inv(inertia_B)
        self.inertia_total_B[:] = total

    def initial_state(self) -> np.ndarray:
        return self.x0.copy()

    def angular_momentum_B(self, x=None) -> np.ndarray:
        """H_B (N m s): body and wheels about the centre of mass, B components."""
        x = self.x if x is None else x
        return wheel_angular_momentum_B(self.inertia_B, self.G, self.J, x[10:13], x[13 : 13 + self.n_wheels])

    def effective_inertia(self) -> np.ndarray:
        """Each wheel's effective inertia about its axis (kg m^2): 1 / (1/J_i + g_i . [I_RW]^-1 g_i)."""
        return 1.0 / (1.0 / self.J + np.sum(detlinalg.matmul(self.G, self.inertia_inv) * self.G, axis=1))

    def check_fault(self, fault) -> None:
        if fault.kind in WHEEL_FAULTS:
            self.motors.check_fault(fault)

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
        fx = fy = fz = tx = ty = tz = 0.0
        ports, wrenches = self.ports, self._wrenches
        for port in self._wrench_ports:
            w = ports[port].value  # as self.read(port), one call less each
            if w is not None:
                wfx, wfy, wfz, wtx, wty, wtz = wrenches.get_read(port, w, wrench_numbers)
                fx, fy, fz = fx + wfx, fy + wfy, fz + wfz
                tx, ty, tz = tx + wtx, ty + wty, tz + wtz
        loads = self.loads
        loads[:] = 0.0
        loads[L_FORCE_B : L_FORCE_B + 3] = fx, fy, fz
        loads[L_TORQUE_B : L_TORQUE_B + 3] = tx, ty, tz
        m = self.take("mass")  # mass properties change only with a message
        if m is not None and m.mass_kg > 0 and len(m.inertia_B) == 9:
            self.params[P_MASS] = m.mass_kg
            if struct.pack("9d", *m.inertia_B) != self.inertia_B.tobytes():  # the same inertia: the same inverse
                self._set_inertia(np.array(m.inertia_B, dtype=float).reshape(3, 3))
        if self.n_wheels:
            cmd = self.read("torque_cmd")
            self.u[:] = self.motors.torques(None if cmd is None else cmd.torque_Nm)
            if self.bearings.n_states:
                self.lugre_step_s = self.bearings.max_step_s(self.x[13 : 13 + self.n_wheels], self.effective_inertia())
        if self.disturbance.acts_over(t0_ns):
            loads[6:9] = self.disturbance.force_N
            loads[9:12] = self.disturbance.torque_B

    def gravity_N(self, r_N: np.ndarray, t_s: float) -> np.ndarray:
        """Gravitational acceleration (m/s^2, frame N) at ``r_N`` (m) at ``t_s``."""
        return gravity_acceleration(np.asarray(r_N, dtype=float), float(t_s), self.params, self.C, self.S)

    def post_deriv(self, t_s: float) -> None:
        """The state's derivative; a primary's is its composite's and writes its followers' too."""
        if self._primary is not None:
            return  # the primary wrote this follower's derivative
        if self._welds:
            self._composite_derivative(t_s)
            return
        orbiting_derivative(
            t_s,
            self.x,
            self.xdot,
            self.params,
            self.loads,
            self.inertia_B,
            self.inertia_inv,
            self.inertia_total_B,
            self.C,
            self.S,
            self.G,
            self.J,
            self.u,
            self.friction_table,
            *self._work[:2],
        )

    def _composite_derivative(self, t_s: float) -> None:
        """The derivative of a primary carrying followers (see the module: the composite's
        equations about its centre of mass C, then the primary's own acceleration from C's)."""
        M, I_C, c = self.composite()
        x = self.x
        R = quat_to_dcm(x[6:10])
        w = x[10:13]
        params = self.params.copy()
        params[P_MASS] = M
        loads = np.zeros(N_LOADS)
        plates = []
        parts = [(self, np.zeros(3), np.eye(3))] + [(wd.follower, wd.r_FP_P, wd.R_PF) for wd in self._welds]
        for part, r_FP_P, R_PF in parts:  # each part's loads act at its own centre of mass
            arm_B = r_FP_P - c
            pl = part.loads
            f_B = detlinalg.matmul(R_PF, pl[L_FORCE_B : L_FORCE_B + 3])
            d_N = pl[L_DIST_FORCE_N : L_DIST_FORCE_N + 3]
            loads[L_FORCE_B : L_FORCE_B + 3] += f_B
            loads[L_TORQUE_B : L_TORQUE_B + 3] += detlinalg.matmul(R_PF, pl[L_TORQUE_B : L_TORQUE_B + 3]) + np.cross(
                arm_B, f_B
            )
            loads[L_DIST_FORCE_N : L_DIST_FORCE_N + 3] += d_N
            loads[L_DIST_TORQUE_B : L_DIST_TORQUE_B + 3] += detlinalg.matmul(
                R_PF, pl[L_DIST_TORQUE_B : L_DIST_TORQUE_B + 3]
            ) + np.cross(arm_B, detlinalg.matmul(R.T, d_N))
            if part is not self:
                params[P_CD_AREA] += part.cd_area_m2
                params[P_CR_AREA] += part.cr_area_m2
            for plate in part.drag_plates.reshape(-1, PLATE_PARAMS):  # into the primary's frame, about C
                moved = plate.copy()
                moved[PLATE_NORMAL : PLATE_NORMAL + 3] = detlinalg.matmul(R_PF, plate[PLATE_NORMAL : PLATE_NORMAL + 3])
                moved[PLATE_CENTRE : PLATE_CENTRE + 3] = arm_B + detlinalg.matmul(
                    R_PF, plate[PLATE_CENTRE : PLATE_CENTRE + 3]
                )
                plates.append(moved)
        if plates:
            params = np.concatenate([params[:N_PARAMS], *plates])
            params[P_N_PLATES] = len(plates)
        inertia_rw = I_C - detlinalg.matmul(self.G.T * self.J, self.G) if self.n_wheels else I_C
        x_C = x.copy()
        x_C[0:3] = x[0:3] + detlinalg.matmul(R, c)
        x_C[3:6] = x[3:6] + detlinalg.matmul(R, np.cross(w, c))
        xdot_C = np.empty_like(x)
        orbiting_derivative(
            t_s,
            x_C,
            xdot_C,
            params,
            loads,
            inertia_rw,
            detlinalg.inv(inertia_rw),
            I_C,
            self.C,
            self.S,
            self.G,
            self.J,
            self.u,
            self.friction_table,
            *self._work[:2],
        )
        xdot = self.xdot
        xdot[:] = xdot_C
        xdot[0:3] = x[3:6]
        xdot[3:6] = xdot_C[3:6] - detlinalg.matmul(R, np.cross(xdot_C[10:13], c) + np.cross(w, np.cross(w, c)))
        for wd in self._welds:
            wd.follower.xdot[0:13] = welded_follower_derivative(x[0:13], xdot[0:13], wd.r_FP_P, wd.q_FP)

    def check_weldable_follower(self) -> None:
        if self.n_wheels:
            raise ValueError(
                f"{self.name} has reaction wheels and cannot ride on another spacecraft as a "
                f"follower: make it the primary (a contact world's primary is the vehicle added to it first)"
            )

    # ------------------------------------------------------------------ compiled hops
    def hop_ready(self) -> bool:
        """A free spacecraft propagates itself (a composite needs its followers' kinematics)."""
        return not self._welds and self._primary is None

    @staticmethod
    def propagate_hop(bodies: list[OrbitingSpacecraft], steps_s, t0_s: float = 0.0) -> None:
        """RK4 over the sub-steps ``steps_s`` (s) from ``t0_s`` (s) for many spacecraft, loads
        latched (:func:`hopsim.dynamics.orbiting_body.rk4_hops`), one compiled call for each set
        that shares a gravity field and a state layout; v' published is the derivative at the
        hop's end. One spacecraft or many: the same arithmetic."""
        steps = np.array(steps_s, dtype=float)
        if len(bodies) == 1:  # its own arrays
            b = bodies[0]
            rk4_hop(
                t0_s,
                steps,
                b.x,
                b.xdot,
                b.params,
                b.loads,
                b.inertia_B,
                b.inertia_inv,
                b.inertia_total_B,
                b.C,
                b.S,
                b.G,
                b.J,
                b.u,
                b.friction_table,
                *b._work,
            )
            return
        batches: dict[tuple, list[OrbitingSpacecraft]] = {}
        for b in bodies:  # one field to one degree: the same coefficients (batch[0]'s)
            batches.setdefault((id(b.field), b.params[P_DEGREE], len(b.x), b.n_wheels, len(b.params)), []).append(b)
        for batch in batches.values():
            X = np.array([b.x for b in batch])
            Xdot = np.empty_like(X)
            rk4_hops(
                t0_s,
                steps,
                X,
                Xdot,
                np.array([b.params for b in batch]),
                np.array([b.loads for b in batch]),
                np.array([b.inertia_B for b in batch]),
                np.array([b.inertia_inv for b in batch]),
                np.array([b.inertia_total_B for b in batch]),
                batch[0].C,
                batch[0].S,
                np.array([b.G for b in batch]),
                np.array([b.J for b in batch]),
                np.array([b.u for b in batch]),
                np.array([b.friction_table for b in batch]),
            )
            for b, x, xdot in zip(batch, X, Xdot):
                b.x[:] = x
                b.xdot[:] = xdot

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """The attitude back on the unit sphere (the integrator drifts off it); raise if the LuGre
        bristles' integration went unstable over the hop; put welded followers back exactly on the
        composite."""
        if self._primary is not None:
            return  # the primary puts this follower on the composite
        self.x[6:10] = quat_normalize(self.x[6:10])
        self.place_followers()
        if self.bearings.n_states:
            self.bearings.check(self.name, self.x[13 + self.n_wheels :], self.lugre_step_s, (t1_ns - t0_ns) * 1e-9)

    def update_flow_outs(self, t_ns: int) -> None:
        x = self.x
        if self.wanted("state"):
            self.write("state", self._state_builder.build(self.name, t_ns, x[0:13], self.xdot[0:13], self.mass_kg))
        if self.n_wheels and self.wanted("wheels"):
            q = x[6:10]
            H_B = self.angular_momentum_B()
            k = self.n_wheels
            friction, _ = self.bearings.torques(x[13 : 13 + k], x[13 + k :])
            self.write(
                "wheels",
                ReactionWheelState(
                    vehicle=self.name,
                    t_ns=t_ns,
                    speed_radps=x[13 : 13 + k].tolist(),
                    motor_torque_Nm=self.u.tolist(),
                    friction_torque_Nm=friction.tolist(),
                    H_B=_v3(H_B),
                    H_N=_v3(detlinalg.matmul(quat_to_dcm(q), H_B)),
                ),
            )


__all__ = ["OrbitingSpacecraft"]
