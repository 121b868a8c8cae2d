"""Reaction wheels on a rigid body: the body's angular acceleration and the wheels' spin
accelerations, with bearing friction (compiled; Schaub and Junkins, Analytical Mechanics of
Space Systems, 4th ed., section 4.5).

Frames and symbols (SI units):

- B, the body frame; every vector here has B components;
- ``omega`` = omega_BN_B, the body's angular velocity relative to the inertial frame (rad/s);
- wheel i spins about the unit axis g_i (row i of ``G``, body frame) at ``Omega_i`` relative to
  the body (rad/s), with axial inertia J_i (kg m^2);
- [I_RW] (``inertia_B``, kg m^2): the spacecraft's inertia about its centre of mass including the
  wheels except their axial inertia (Schaub and Junkins' [I_RW]); ``inertia_inv`` its inverse;
- u_i, the motor torque on wheel i (N m); f_i, its bearing friction (N m);
- L_B, the external torque on the spacecraft about its centre of mass (N m).

With h_i = J_i (g_i . omega + Omega_i) the wheels' spin momenta (N m s),

    H_B           = [I_RW] omega + sum_i h_i g_i                      (total angular momentum)
    [I_RW] omega' = L_B - omega x H_B - sum_i g_i (u_i - f_i)
    h_i'          = u_i - f_i,     Omega_i' = (u_i - f_i) / J_i - g_i . omega'

Friction (:class:`BearingFriction`), one of :data:`FRICTION_MODELS`:

- ``"coulomb_viscous"`` (:func:`wheel_friction`): viscous c_i Omega_i plus Coulomb F_i opposing
  the spin, ramped linearly within ``coulomb_speed_radps`` of zero so that the derivative stays
  continuous (a stopped wheel does not chatter). No state.
- ``"lugre"`` (:func:`lugre_friction`): the LuGre model (Canudas de Wit, Olsson, Astrom and
  Lischinsky, "A new model for control of systems with friction", IEEE Trans. Automatic Control
  40(3), 1995), with one bristle deflection z_i (rad) per wheel as a continuous state.

Motor and friction torques are internal: with L_B = 0 the total angular momentum
H_N = R(q_BN) H_B is constant.

Motors (:class:`WheelMotors`): the commanded torques limited to the motors' maximum, with the
faults :data:`WHEEL_FAULTS`.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics._jit import compiled, compiled_borrowing


def wheel_axes(name: str, axes_B) -> np.ndarray:
    """The wheels' unit spin axes (k x 3, body frame) from one or more non-zero 3-vectors."""
    G = np.array(axes_B, dtype=float).reshape(-1, 3)
    norms = np.sqrt(np.sum(G * G, axis=1))
    if len(G) == 0 or np.any(~np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError(f"{name}: axes_B must be one or more non-zero 3-vectors (body frame)")
    return G / norms[:, None]


def per_wheel(name: str, what: str, value, k: int, positive: bool = False, negative_ok: bool = False) -> np.ndarray:
    """``value`` (one number, or one per wheel) as k floats, checked: positive, finite
    (``negative_ok``) or non-negative."""
    v = np.broadcast_to(np.asarray(value, dtype=float), (k,)).copy()
    if (
        not np.isfinite(v).all()
        or (positive and (v <= 0).any())
        or (not positive and not negative_ok and (v < 0).any())
    ):
        need = "positive" if positive else ("finite" if negative_ok else "non-negative")
        raise ValueError(f"{name}: {what} must be {need} (one value, or one per wheel), got {value}")
    return v


@compiled_borrowing
def wheel_friction_into(Omega, viscous_Nms, coulomb_Nm, coulomb_speed_radps, out):
    """:func:`wheel_friction` into ``out`` (N m, one per wheel)."""
    for i in range(len(Omega)):
        ramp = Omega[i] / coulomb_speed_radps[i]
        ramp = 1.0 if ramp > 1.0 else (-1.0 if ramp < -1.0 else ramp)
        out[i] = viscous_Nms[i] * Omega[i] + coulomb_Nm[i] * ramp


@compiled
def wheel_friction(Omega, viscous_Nms, coulomb_Nm, coulomb_speed_radps):
    """Bearing friction torque on each wheel (N m), opposing its spin rate ``Omega`` (rad/s)."""
    out = np.empty(len(Omega))
    wheel_friction_into(Omega, viscous_Nms, coulomb_Nm, coulomb_speed_radps, out)
    return out


@compiled_borrowing
def lugre_friction_into(
    Omega,
    z,
    stiffness_Nmprad,
    damping_Nmsprad,
    viscous_Nms,
    coulomb_Nm,
    static_Nm,
    stribeck_speed_radps,
    f_out,
    z_dot_out,
):
    """:func:`lugre_friction` into ``f_out`` (N m) and ``z_dot_out`` (rad/s)."""
    for i in range(len(Omega)):
        v = Omega[i]
        ratio = v / stribeck_speed_radps[i]
        g = coulomb_Nm[i] + (static_Nm[i] - coulomb_Nm[i]) * detmath.exp(-(ratio * ratio))
        z_dot = v - stiffness_Nmprad[i] * abs(v) * z[i] / g
        f_out[i] = stiffness_Nmprad[i] * z[i] + damping_Nmsprad[i] * z_dot + viscous_Nms[i] * v
        z_dot_out[i] = z_dot


@compiled
def lugre_friction(
    Omega, z, stiffness_Nmprad, damping_Nmsprad, viscous_Nms, coulomb_Nm, static_Nm, stribeck_speed_radps
):
    """(F, z') of the LuGre model (Canudas de Wit et al. 1995, whose sigma_0 g(v) is g(v) here) for
    each wheel:

        g(v) = F_c + (F_s - F_c) exp(-(v / v_s)^2)
        z'   = v - sigma_0 |v| z / g(v)
        F    = sigma_0 z + sigma_1 z' + sigma_2 v

    ``Omega`` v, the spin rate relative to the body (rad/s); ``z`` the bristle deflection (rad);
    ``stiffness_Nmprad`` sigma_0 (N m/rad); ``damping_Nmsprad`` sigma_1 (N m s/rad);
    ``viscous_Nms`` sigma_2 (N m s/rad); ``coulomb_Nm`` F_c and ``static_Nm`` F_s (N m, both
    positive); ``stribeck_speed_radps`` v_s (rad/s). F (N m) is the friction torque opposing the
    spin, z' (rad/s). At constant v, z settles to g(v) sign(v) / sigma_0 and F to the Stribeck
    curve g(v) sign(v) + sigma_2 v; near rest (|z| << F_c / sigma_0) F is a spring of stiffness
    sigma_0 on the wheel's angle.
    """
    f, z_dot = np.empty(len(Omega)), np.empty(len(Omega))
    lugre_friction_into(
        Omega, z, stiffness_Nmprad, damping_Nmsprad, viscous_Nms, coulomb_Nm, static_Nm, stribeck_speed_radps, f, z_dot
    )
    return f, z_dot


FRICTION_MODELS = ("coulomb_viscous", "lugre")
# fraction of RK4's stability limit on the negative real axis (2.78) and the imaginary axis (2.83)
# used for :meth:`BearingFriction.max_step_s`
_RK4_STABLE = 2.5
_NO_STATES = np.zeros(0)


class BearingFriction:
    """The bearing friction of k wheels: ``model`` one of :data:`FRICTION_MODELS`, parameters
    one value or one per wheel, checked.

    ``"coulomb_viscous"`` (:func:`wheel_friction`): ``viscous_Nms`` (N m s/rad), ``coulomb_Nm``
    (N m), ``coulomb_speed_radps`` (rad/s, positive). No state.

    ``"lugre"`` (:func:`lugre_friction`): sigma_2 = ``viscous_Nms``, F_c = ``coulomb_Nm`` (positive),
    F_s = ``static_Nm`` (N m, positive; None: F_c, no Stribeck peak), v_s =
    ``stribeck_speed_radps`` (rad/s, positive; None: 0.1), sigma_0 = ``bristle_stiffness_Nmprad``
    (N m/rad, positive, required), sigma_1 = ``bristle_damping_Nmsprad`` (N m s/rad,
    non-negative; None: 0); ``coulomb_speed_radps`` is not used. One state per wheel, the bristle
    deflection z_i (rad), starting at 0. These four parameters are an error with the other model.

    The bristles make the equations stiff. Linearised, a wheel of effective inertia J_eff
    (1/J_eff = 1/J_i + g_i . [I_RW]^-1 g_i) has the modes (1/s) -sigma_0 |Omega| / g(Omega)
    (sliding), +-i sqrt(sigma_0 / J_eff) (the pre-sliding spring) and -(sigma_1 + sigma_2) / J_eff
    (overdamped bristles). RK4 is stable only with steps shorter than about 2.8 / |mode| (its
    stability limit on the real and on the imaginary axis): :meth:`max_step_s` gives
    2.5 / |fastest mode| (s), e.g. 5e-5 s for sigma_0 = 1 N m/rad, F_c = 2e-3 N m and
    Omega = 100 rad/s, 0.05 s for sigma_0 = 0.05 N m/rad and Omega = 2 rad/s. A fixed-step
    island needs n_integration_steps >= hop / max_step_s; adaptive integrators shorten their
    steps themselves. An unstable integration does not go unnoticed: the exact z stays within
    max(F_c, F_s) / sigma_0 (the boundedness of z shown by Canudas de Wit et al. 1995), and
    :meth:`check`, called by the models at the end of every hop, raises when the integrated z
    leaves it by more than half of it.
    """

    def __init__(
        self,
        name: str,
        k: int,
        model: str = "coulomb_viscous",
        viscous_Nms=0.0,
        coulomb_Nm=0.0,
        coulomb_speed_radps=0.1,
        static_Nm=None,
        stribeck_speed_radps=None,
        bristle_stiffness_Nmprad=None,
        bristle_damping_Nmsprad=None,
    ):
        if model not in FRICTION_MODELS:
            raise ValueError(f"{name}: friction must be one of {list(FRICTION_MODELS)}, got {model!r}")
        lugre_only = {
            "static_Nm": static_Nm,
            "stribeck_speed_radps": stribeck_speed_radps,
            "bristle_stiffness_Nmprad": bristle_stiffness_Nmprad,
            "bristle_damping_Nmsprad": bristle_damping_Nmsprad,
        }
        given = [what for what, value in lugre_only.items() if value is not None]
        if model != "lugre" and given:
            raise ValueError(f"{name}: {', '.join(given)}: parameters of friction 'lugre', not of {model!r}")
        if model == "lugre" and bristle_stiffness_Nmprad is None:
            raise ValueError(
                f"{name}: friction 'lugre' needs bristle_stiffness_Nmprad (sigma_0, N m/rad); "
                f"it sets the integration step (see BearingFriction)"
            )
        self.model = model
        self.viscous = per_wheel(name, "viscous_Nms", viscous_Nms, k)
        self.coulomb = per_wheel(name, "coulomb_Nm", coulomb_Nm, k, positive=model == "lugre")
        self.coulomb_speed = per_wheel(name, "coulomb_speed_radps", coulomb_speed_radps, k, positive=True)
        self.n_states = 0
        if model == "lugre":
            self.static = per_wheel(name, "static_Nm", coulomb_Nm if static_Nm is None else static_Nm, k, positive=True)
            self.stribeck_speed = per_wheel(
                name,
                "stribeck_speed_radps",
                0.1 if stribeck_speed_radps is None else stribeck_speed_radps,
                k,
                positive=True,
            )
            self.stiffness = per_wheel(name, "bristle_stiffness_Nmprad", bristle_stiffness_Nmprad, k, positive=True)
            self.damping = per_wheel(
                name, "bristle_damping_Nmsprad", 0.0 if bristle_damping_Nmsprad is None else bristle_damping_Nmsprad, k
            )
            self.z_bound = np.maximum(self.coulomb, self.static) / self.stiffness
            self.n_states = k

    def table(self) -> np.ndarray:
        """The parameters as one row per wheel (k x 7): viscous, Coulomb, Coulomb ramp speed, static,
        Stribeck speed, bristle stiffness, bristle damping (the columns ``F_*`` of
        :mod:`hopsim.dynamics.orbiting_body`; the last four zero for ``"coulomb_viscous"``)."""
        k = len(self.viscous)
        lugre = self.n_states > 0
        columns = [self.viscous, self.coulomb, self.coulomb_speed] + (
            [self.static, self.stribeck_speed, self.stiffness, self.damping] if lugre else [np.zeros(k)] * 4
        )
        return np.ascontiguousarray(np.stack(columns, axis=1))

    def torques(self, Omega: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(f, z'): the friction torque on each wheel (N m) at spin rates ``Omega`` (rad/s) and
        bristle deflections ``z`` (rad; empty for ``"coulomb_viscous"``), and z' (rad/s)."""
        if self.n_states == 0:
            return wheel_friction(Omega, self.viscous, self.coulomb, self.coulomb_speed), _NO_STATES
        return lugre_friction(
            Omega, z, self.stiffness, self.damping, self.viscous, self.coulomb, self.static, self.stribeck_speed
        )

    def max_step_s(self, Omega: np.ndarray, J_eff: np.ndarray) -> float:
        """The longest stable RK4 step (s) at spin rates ``Omega`` (rad/s), 2.5 over the fastest
        linearised mode (see the class); ``J_eff`` the wheels' effective inertias (kg m^2).
        Infinite for ``"coulomb_viscous"``."""
        if self.n_states == 0:
            return math.inf
        ratio = Omega / self.stribeck_speed
        g = self.coulomb + (self.static - self.coulomb) * detmath.exp_array(-(ratio * ratio))
        rates = np.concatenate(
            [self.stiffness * np.abs(Omega) / g, np.sqrt(self.stiffness / J_eff), (self.damping + self.viscous) / J_eff]
        )
        return _RK4_STABLE / float(rates.max())

    def check(self, name: str, z: np.ndarray, max_step_s: float, hop_s: float) -> None:
        """Raise if the bristle deflections ``z`` (rad) at the end of a hop of ``hop_s`` (s) left
        their bound max(F_c, F_s) / sigma_0 (by half of it) or are not finite: the integration
        was unstable (see the class). ``max_step_s``: :meth:`max_step_s` at the hop's start."""
        if self.n_states == 0 or np.all(np.abs(z) <= 1.5 * self.z_bound):
            return
        i = int(np.argmax(np.where(np.isfinite(z), np.abs(z) / self.z_bound, np.inf)))
        raise RuntimeError(
            f"{name}: the LuGre friction's integration is unstable: wheel {i}'s bristle deflection is {z[i]:.3g} rad, "
            f"beyond its bound max(F_c, F_s) / sigma_0 = {self.z_bound[i]:.3g} rad. The bristles' stiffness sets the "
            f"step: RK4 needs steps under about {max_step_s:.3g} s at the wheel speeds of the hop's start, and the "
            f"hop was {hop_s:.3g} s (take more n_integration_steps, an adaptive integrator, or a smaller "
            f"bristle_stiffness_Nmprad)"
        )


WHEEL_FAULTS = {"wheel_failed": ("index", "clear"), "torque_scale": ("index", "value", "clear")}


class WheelMotors:
    """The motors of k wheels: commanded torques limited to ``max_torque_Nm`` (N m, one value or
    one per wheel), and the faults :data:`WHEEL_FAULTS` (fields of :class:`hopsim.schemas.Fault`):

    - ``wheel_failed``: wheel ``index`` (0 .. k-1, -1 for all) gives no motor torque (its bearing
      still drags); ``clear`` repairs it;
    - ``torque_scale``: wheel ``index``'s motor torque times ``value`` (finite); ``clear``: 1.
    """

    def __init__(self, name: str, k: int, max_torque_Nm):
        self.name = name
        self.max_torque = per_wheel(name, "max_torque_Nm", max_torque_Nm, k, positive=True)
        self.torque_scale = np.ones(k)
        self.failed = np.zeros(k, dtype=bool)

    def check_fault(self, fault) -> None:
        """Raise on a ``wheel_failed`` or ``torque_scale`` fault for a wheel it does not have, or
        with a scale that is not finite (changes nothing)."""
        k = len(self.failed)
        if k == 0:
            raise ValueError(f"{self.name}: fault {fault.kind!r}: it has no reaction wheels (axes_B)")
        if not -1 <= fault.index < k:
            raise ValueError(
                f"{self.name}: fault {fault.kind!r}: no wheel {fault.index}; it has {k} (index "
                f"0 .. {k - 1}, or -1 for all)"
            )
        if fault.kind == "torque_scale" and not fault.clear and not math.isfinite(fault.value):
            raise ValueError(f"{self.name}: fault 'torque_scale': value must be a finite scale, got {fault.value}")

    def on_fault(self, fault) -> None:
        """Apply a ``wheel_failed`` or ``torque_scale`` fault; raise on one :meth:`check_fault`
        refuses."""
        self.check_fault(fault)
        wheels = slice(None) if fault.index < 0 else fault.index
        if fault.kind == "wheel_failed":
            self.failed[wheels] = not fault.clear
        elif fault.clear:
            self.torque_scale[wheels] = 1.0
        else:
            self.torque_scale[wheels] = fault.value

    def torques(self, command_Nm) -> np.ndarray:
        """The motor torques u (N m): ``command_Nm`` (one per wheel; missing or not finite: 0;
        None: all 0) limited to the maximum, times the scale, 0 on failed wheels."""
        k = len(self.failed)
        u = [0.0] * k
        if command_Nm is not None:
            for i, c in enumerate(command_Nm[:k]):
                u[i] = c if math.isfinite(c) else 0.0
        # plain floats for a few wheels (numpy's clip and where cost tens of microseconds a call):
        # the same limit, product and zero per wheel
        limits, scales, failed = self.max_torque.tolist(), self.torque_scale.tolist(), self.failed.tolist()
        return np.array([0.0 if failed[i] else min(max(u[i], -limits[i]), limits[i]) * scales[i] for i in range(k)])


@compiled_borrowing
def wheel_angular_momentum_xyz(inertia_B, G, J, w0, w1, w2, Omega):
    """H_B (N m s, B components) of :func:`wheel_angular_momentum_B` as a tuple, ``omega`` = (w0, w1, w2)."""
    H0 = inertia_B[0, 0] * w0 + inertia_B[0, 1] * w1 + inertia_B[0, 2] * w2
    H1 = inertia_B[1, 0] * w0 + inertia_B[1, 1] * w1 + inertia_B[1, 2] * w2
    H2 = inertia_B[2, 0] * w0 + inertia_B[2, 1] * w1 + inertia_B[2, 2] * w2
    for i in range(len(J)):
        g0, g1, g2 = G[i, 0], G[i, 1], G[i, 2]
        h = J[i] * (g0 * w0 + g1 * w1 + g2 * w2 + Omega[i])
        H0 += h * g0
        H1 += h * g1
        H2 += h * g2
    return H0, H1, H2


@compiled
def wheel_angular_momentum_B(inertia_B, G, J, omega, Omega):
    """H_B = [I_RW] omega + sum_i J_i (g_i . omega + Omega_i) g_i (N m s, B components)."""
    H0, H1, H2 = wheel_angular_momentum_xyz(inertia_B, G, J, omega[0], omega[1], omega[2], Omega)
    return np.array([H0, H1, H2])


@compiled_borrowing
def wheel_accelerations_into(
    inertia_B, inertia_inv, G, J, omega, Omega, motor_Nm, friction_Nm, L0, L1, L2, omega_dot, Omega_dot
):
    """:func:`wheel_accelerations` into ``omega_dot`` (3) and ``Omega_dot`` (k), the external
    torque L_B = (L0, L1, L2) (N m, B)."""
    w0, w1, w2 = omega[0], omega[1], omega[2]
    H0, H1, H2 = wheel_angular_momentum_xyz(inertia_B, G, J, w0, w1, w2, Omega)
    b0 = L0 - (w1 * H2 - w2 * H1)
    b1 = L1 - (w2 * H0 - w0 * H2)
    b2 = L2 - (w0 * H1 - w1 * H0)
    for i in range(len(J)):
        u = motor_Nm[i] - friction_Nm[i]
        b0 -= G[i, 0] * u
        b1 -= G[i, 1] * u
        b2 -= G[i, 2] * u
    d0 = inertia_inv[0, 0] * b0 + inertia_inv[0, 1] * b1 + inertia_inv[0, 2] * b2
    d1 = inertia_inv[1, 0] * b0 + inertia_inv[1, 1] * b1 + inertia_inv[1, 2] * b2
    d2 = inertia_inv[2, 0] * b0 + inertia_inv[2, 1] * b1 + inertia_inv[2, 2] * b2
    omega_dot[0], omega_dot[1], omega_dot[2] = d0, d1, d2
    for i in range(len(J)):
        Omega_dot[i] = (motor_Nm[i] - friction_Nm[i]) / J[i] - (G[i, 0] * d0 + G[i, 1] * d1 + G[i, 2] * d2)


@compiled
def wheel_accelerations(inertia_B, inertia_inv, G, J, omega, Omega, motor_Nm, friction_Nm, torque_B):
    """(omega', Omega') (rad/s^2): the body's angular acceleration omega_BN_B' and the wheels'
    spin accelerations relative to the body, from the module's equations.

    ``G`` (k x 3) the wheels' unit axes (B), ``J`` (k) their axial inertias (kg m^2), ``omega``
    (rad/s, B), ``Omega`` (k, rad/s), ``motor_Nm`` u and ``friction_Nm`` f (k, N m, see
    :func:`wheel_friction`), ``torque_B`` L_B (N m, B) the external torque about the centre of mass.
    """
    omega_dot, Omega_dot = np.empty(3), np.empty(len(J))
    wheel_accelerations_into(
        inertia_B,
        inertia_inv,
        G,
        J,
        omega,
        Omega,
        motor_Nm,
        friction_Nm,
        torque_B[0],
        torque_B[1],
        torque_B[2],
        omega_dot,
        Omega_dot,
    )
    return omega_dot, Omega_dot


__all__ = [
    "FRICTION_MODELS",
    "WHEEL_FAULTS",
    "BearingFriction",
    "WheelMotors",
    "lugre_friction",
    "lugre_friction_into",
    "per_wheel",
    "wheel_accelerations",
    "wheel_accelerations_into",
    "wheel_angular_momentum_B",
    "wheel_axes",
    "wheel_friction",
    "wheel_friction_into",
]
