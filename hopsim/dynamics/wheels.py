"""Reaction wheels on a rigid body: the body's angular acceleration and the wheels' spin
accelerations, with bearing friction (pure NumPy; Schaub and Junkins, Analytical Mechanics of
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

Friction: viscous c_i Omega_i plus Coulomb F_i opposing the spin, ramped linearly within
``coulomb_speed_radps`` of zero so that the derivative stays continuous (a stopped wheel does
not chatter). Motor and friction torques are internal: with L_B = 0 the total angular momentum
H_N = R(q_BN) H_B is constant.
"""
from __future__ import annotations

import numpy as np


def wheel_axes(name: str, axes_B) -> np.ndarray:
    """The wheels' unit spin axes (k x 3, body frame) from one or more non-zero 3-vectors."""
    G = np.array(axes_B, dtype=float).reshape(-1, 3)
    norms = np.linalg.norm(G, axis=1)
    if len(G) == 0 or np.any(~np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError(f"{name}: axes_B must be one or more non-zero 3-vectors (body frame)")
    return G / norms[:, None]


def per_wheel(name: str, what: str, value, k: int, positive: bool = False, negative_ok: bool = False) -> np.ndarray:
    """``value`` (one number, or one per wheel) as k floats, checked: positive, finite
    (``negative_ok``) or non-negative."""
    v = np.broadcast_to(np.asarray(value, dtype=float), (k,)).copy()
    if not np.all(np.isfinite(v)) or (positive and np.any(v <= 0)) or (not positive and not negative_ok
                                                                       and np.any(v < 0)):
        need = "positive" if positive else ("finite" if negative_ok else "non-negative")
        raise ValueError(f"{name}: {what} must be {need} (one value, or one per wheel), got {value}")
    return v


def wheel_friction(Omega: np.ndarray, viscous_Nms: np.ndarray, coulomb_Nm: np.ndarray,
                   coulomb_speed_radps: np.ndarray) -> np.ndarray:
    """Bearing friction torque on each wheel (N m), opposing its spin rate ``Omega`` (rad/s)."""
    ramp = np.clip(Omega / coulomb_speed_radps, -1.0, 1.0)
    return viscous_Nms * Omega + coulomb_Nm * ramp


def wheel_angular_momentum_B(inertia_B: np.ndarray, G: np.ndarray, J: np.ndarray, omega: np.ndarray,
                             Omega: np.ndarray) -> np.ndarray:
    """H_B = [I_RW] omega + sum_i J_i (g_i . omega + Omega_i) g_i (N m s, B components)."""
    h = J * (G @ omega + Omega)
    return inertia_B @ omega + G.T @ h


def wheel_accelerations(inertia_B: np.ndarray, inertia_inv: np.ndarray, G: np.ndarray, J: np.ndarray,
                        omega: np.ndarray, Omega: np.ndarray, motor_Nm: np.ndarray, friction_Nm: np.ndarray,
                        torque_B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(omega', Omega') (rad/s^2): the body's angular acceleration omega_BN_B' and the wheels'
    spin accelerations relative to the body, from the module's equations.

    ``G`` (k x 3) the wheels' unit axes (B), ``J`` (k) their axial inertias (kg m^2), ``omega``
    (rad/s, B), ``Omega`` (k, rad/s), ``motor_Nm`` u and ``friction_Nm`` f (k, N m, see
    :func:`wheel_friction`), ``torque_B`` L_B (N m, B) the external torque about the centre of mass.
    """
    wheel_torque = motor_Nm - friction_Nm
    H = wheel_angular_momentum_B(inertia_B, G, J, omega, Omega)
    # omega x H written out: np.cross costs ~10 us a call, the same products and differences
    w0, w1, w2 = omega
    H0, H1, H2 = H
    omega_x_H = np.array([w1 * H2 - w2 * H1, w2 * H0 - w0 * H2, w0 * H1 - w1 * H0])
    omega_dot = inertia_inv @ (torque_B - omega_x_H - G.T @ wheel_torque)
    return omega_dot, wheel_torque / J - G @ omega_dot


__all__ = ["per_wheel", "wheel_accelerations", "wheel_angular_momentum_B", "wheel_axes", "wheel_friction"]
