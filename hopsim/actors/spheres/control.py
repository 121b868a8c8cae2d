"""PD position and attitude control laws of the SPHERES Standard Control Interface.

Gains are accelerations per unit error, so the same gains suit any mass: the position law asks
for the force ``m * (kp * (r_ref - r) + kd * (v_ref - v))`` (N, in N) and the attitude law for
the torque ``I * (kp * theta_err + kd * (omega_ref - omega))`` (N m, in B), where ``theta_err``
is the rotation vector that takes the body to its reference attitude, in body components.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.actors.spheres.frames import dcm_c, quat_conj, quat_mul, to_rotvec
from hopsim.dynamics import detlinalg


def position_pd(r_N, v_N, r_ref_N, v_ref_N, mass_kg: float, kp: float, kd: float) -> np.ndarray:
    """Force command (N, inertial components)."""
    return mass_kg * (kp * (np.asarray(r_ref_N) - r_N) + kd * (np.asarray(v_ref_N) - v_N))


@njit(cache=True, fastmath=False, error_model="numpy")
def body_force_pd(r_N, v_N, r_ref_N, v_ref_N, mass_kg, kp, kd, control_z, q_BN):
    """:func:`position_pd`'s force with its Z component zeroed unless ``control_z``, in body
    components (N): ``dcm(q_BN).T @ force_N``, compiled (the same element-wise operations, and
    the product by :func:`hopsim.dynamics.detlinalg.matmul`)."""
    force_N = mass_kg * (kp * (r_ref_N - r_N) + kd * (v_ref_N - v_N))
    if not control_z:
        force_N[2] = 0.0
    return detlinalg.matmul(dcm_c(q_BN).T, force_N)


def attitude_pd(q_BN, omega_B, q_ref_BN, omega_ref_B, inertia_B, kp: float, kd: float) -> np.ndarray:
    """Torque command (N m, body components) about the centre of mass."""
    theta_B = to_rotvec(quat_mul(quat_conj(q_BN), q_ref_BN))
    return detlinalg.matmul(
        np.asarray(inertia_B, dtype=float), kp * theta_B + kd * (np.asarray(omega_ref_B, dtype=float) - omega_B)
    )
