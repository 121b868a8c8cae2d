"""Rates of a body welded to another (a docked vehicle riding on its composite's primary).

The follower F is fixed to the primary P at ``r_FP_P`` (its origin from P's, in P) with attitude
``q_FP`` (``R(q_FP)`` maps F components to P components); its state is
:func:`hopsim.dynamics.contact.welded_follower_state`. Its time derivative, from the primary's::

    rdot_F     = v_P + R_P (omega_P x r_FP_P)
    vdot_F     = a_P + R_P (omegadot_P x r_FP_P + omega_P x (omega_P x r_FP_P))
    qdot_F     = 1/2 q_F (x) (omega_F, 0),   q_F = q_P (x) q_FP,  omega_F = R(q_FP)^T omega_P
    omegadot_F = R(q_FP)^T omegadot_P
"""

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics.spatial import quat_multiply, quat_rate, quat_to_dcm


def welded_follower_derivative(x_P: np.ndarray, xdot_P: np.ndarray, r_FP_P: np.ndarray, q_FP: np.ndarray) -> np.ndarray:
    """Time derivative of the follower's 13-state given the primary's state and derivative."""
    R_P = quat_to_dcm(x_P[6:10])
    w_P, dw_P = x_P[10:13], xdot_P[10:13]
    R_FP = quat_to_dcm(q_FP)
    xd = np.empty(13)
    xd[0:3] = x_P[3:6] + detlinalg.matmul(R_P, np.cross(w_P, r_FP_P))
    xd[3:6] = xdot_P[3:6] + detlinalg.matmul(R_P, np.cross(dw_P, r_FP_P) + np.cross(w_P, np.cross(w_P, r_FP_P)))
    xd[6:10] = quat_rate(quat_multiply(x_P[6:10], q_FP), detlinalg.matmul(R_FP.T, w_P))
    xd[10:13] = detlinalg.matmul(R_FP.T, dw_P)
    return xd
