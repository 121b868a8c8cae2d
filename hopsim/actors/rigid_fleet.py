"""The fleet form of :class:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics`: many free
vehicles' hops in one compiled call (:mod:`hopsim.kernel.fleet`).

The fleet holds one row per vehicle of: the state and its derivative, the mass, the inertia about
the centre of mass and the centre of mass's offset, and the three load accumulators (inertial
force, body force, body torque). A vehicle's ``inertia_C_B``, ``r_CB_B`` and accumulators are
views of its row, so the force models that add into them in ``pre_deriv`` (thrusters, the
disturbance) fill the row; ``x`` and ``xdot`` stay its island's and are copied in and out around
the compiled call.

Unlike the orbiting spacecraft's fleet, this one latches nothing itself (``latches_loads`` is
False): the kernel gathers every member island's loads first, as for the scalar form's compiled
hop (every start_hop, then every pre_deriv once: :meth:`Island.gather_fleet_loads`). A hop of N
vehicles is then :func:`hopsim.dynamics.rigid_body.rk4_hop_rows`: the scalar form's
:func:`~hopsim.dynamics.rigid_body.rk4_hop` row by row, end_hop's quaternion fix included, the
accumulators emptied. Welded vehicles (a composite) do not take the compiled hop at all.
A vehicle whose arrays were replaced (a restore replaces all of them at once) is adopted again.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.actors.messages import vehicle_state
from hopsim.dynamics.rigid_body import STATE_SIZE, rk4_hop_rows
from hopsim.kernel.blocks import OutRows, PayloadLayout
from hopsim.kernel.fleet import FleetRows
from hopsim.schemas import VehicleState

# the vehicle's arrays that live in the fleet's rows
ROW_ATTRIBUTES = ("inertia_C_B", "r_CB_B", "gathered_force_N", "gathered_force_B", "gathered_torque_B")


class RigidFleet:
    """Free rigid vehicles (see the module)."""

    latches_loads = False  # the kernel gathers each island's loads before the call

    @staticmethod
    def key(model):
        """Every rigid vehicle has rows of one shape: one fleet."""
        return ()

    def __init__(self):
        self.rows = FleetRows(ROW_ATTRIBUTES)
        self.mass = np.zeros(0)
        self.X = self.Xdot = np.zeros((0, STATE_SIZE))

    def _row(self, model) -> int:
        row, adopted = self.rows.row(model)
        if adopted and len(self.X) < self.rows.capacity:  # filled at each hop
            n = self.rows.capacity
            self.mass, self.X, self.Xdot = np.zeros(n), np.zeros((n, STATE_SIZE)), np.zeros((n, STATE_SIZE))
        return row

    # ------------------------------------------------------------------ the hop
    def hop(self, models: list, versions: list[int], t0_ns: int, t1_ns: int, steps_s) -> None:
        """RK4 over ``steps_s`` (s) and end_hop of every vehicle in ``models``, their loads
        gathered (``versions`` is not needed: nothing is latched here)."""
        rows = [self._row(m) for m in models]
        X, mass = self.X, self.mass
        for m, row in zip(models, rows, strict=True):
            X[row] = m.x
            mass[row] = m.mass_kg
        a = self.rows.arrays
        rk4_hop_rows(
            np.array(rows, dtype=np.int64),
            tuple(steps_s),
            X,
            self.Xdot,
            mass,
            a["inertia_C_B"],
            a["r_CB_B"],
            a["gathered_force_N"],
            a["gathered_force_B"],
            a["gathered_torque_B"],
        )
        Xdot = self.Xdot
        for m, row in zip(models, rows, strict=True):
            m.x[:] = X[row]
            m.xdot[:] = Xdot[row]
            m.xdot_last = Xdot[row].copy()


__all__ = ["RigidFleet"]


def _state_message(payload, t_ns: int, vehicle: str):
    return vehicle_state(vehicle, int(t_ns), payload[:13].tolist(), payload[13:26].tolist(), float(payload[26]))


def _state_payload(msg) -> tuple[list[float], int, str]:
    r, v, q, w, a, wd = msg.r_BN_N, msg.v_BN_N, msg.q_BN, msg.omega_BN_B, msg.a_BN_N, msg.omega_dot_BN_B
    xdot = [0.0] * 13
    xdot[3:6], xdot[10:13] = [a.x, a.y, a.z], [wd.x, wd.y, wd.z]
    return (
        [r.x, r.y, r.z, v.x, v.y, v.z, q.x, q.y, q.z, q.w, w.x, w.y, w.z, *xdot, msg.mass],
        msg.t_ns,
        msg.vehicle,
    )


@njit(cache=True)
def _fill_state(rows, payload, msg_t, src, count, string_of_row):
    """The published VehicleState rows: r, v, q, omega from the state, a and omega_dot from its
    derivative, the mass (see vehicle_state)."""
    m = 0
    for j in range(count.shape[0]):
        for c in range(count[j]):
            p = payload[j, c]
            row = rows[m]
            row.vehicle = string_of_row[src[j, c]]
            row.t_ns = msg_t[j, c]
            row.r_BN_N.x, row.r_BN_N.y, row.r_BN_N.z = p[0], p[1], p[2]
            row.v_BN_N.x, row.v_BN_N.y, row.v_BN_N.z = p[3], p[4], p[5]
            row.q_BN.x, row.q_BN.y, row.q_BN.z, row.q_BN.w = p[6], p[7], p[8], p[9]
            row.omega_BN_B.x, row.omega_BN_B.y, row.omega_BN_B.z = p[10], p[11], p[12]
            row.a_BN_N.x, row.a_BN_N.y, row.a_BN_N.z = p[16], p[17], p[18]
            row.omega_dot_BN_B.x, row.omega_dot_BN_B.y, row.omega_dot_BN_B.z = p[23], p[24], p[25]
            row.has_r_BN_N = row.has_v_BN_N = row.has_q_BN = row.has_omega_BN_B = True
            row.has_a_BN_N = row.has_omega_dot_BN_B = True
            row.mass = p[26]
            m += 1
    return m


# the published state in a row: the 13 states, their 13 derivatives, the mass (kg)
STATE = PayloadLayout("state", 2 * STATE_SIZE + 1, _state_message, _state_payload, VehicleState, _fill_state)


class RigidVehicleRows:
    """The row form of :class:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics` in a row
    block (:mod:`hopsim.kernel.blocks`): the body of each block row. Its rows are the state ``X``
    and derivative ``Xdot`` (13 per row), the mass (kg), the inertia about the centre of mass
    (kg m^2, body axes), the centre of mass's offset (m, body axes) and the load accumulators
    (``force_N`` N inertial, ``force_B`` N body, ``torque_B`` N m body), which the block's loading
    forms fill in their ``start_hop``. A hop is :func:`rk4_hop_rows` over every row, as the fleet
    form's. Its output ``state`` (read in a block by a recorder only) is each row's state with the
    derivative of its hop's end and its mass, as the scalar form publishes it."""

    inputs: dict = {}
    outputs = {"state": (STATE, 1)}
    outputs_only = True  # its update_flow_outs computes nothing but its outputs

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models = models
        self.state = OutRows(STATE, n, 1)
        self.state.src[:, 0] = np.arange(n)
        self.rows = np.arange(n, dtype=np.int64)
        self.X, self.Xdot = np.zeros((n, STATE_SIZE)), np.zeros((n, STATE_SIZE))
        self.mass, self.inertia, self.r_CB = np.zeros(n), np.zeros((n, 3, 3)), np.zeros((n, 3))
        self.force_N, self.force_B, self.torque_B = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))

    @staticmethod
    def takes_input(port: str) -> bool:
        return False

    def qualifies(self, t_ns: int) -> bool:
        """Free vehicles (not welded), no disturbance from now on, nothing gathered."""
        return all(
            m.hop_ready()
            and m.disturbance_until_ns <= t_ns
            and not m.gathered_force_N.any()
            and not m.gathered_force_B.any()
            and not m.gathered_torque_B.any()
            for m in self.models
        )

    def load(self) -> None:
        for i, m in enumerate(self.models):
            self.X[i], self.Xdot[i], self.mass[i] = m.x, m.xdot, m.mass_kg
            self.inertia[i], self.r_CB[i] = m.inertia_C_B, m.r_CB_B

    def store(self) -> None:
        for i, m in enumerate(self.models):
            m.x[:] = self.X[i]
            m.xdot[:] = self.Xdot[i]
            m.xdot_last = self.Xdot[i].copy()
            m._disturbed = False

    def out_rows(self, port: str) -> OutRows:
        return self.state

    def update_flow_outs(self, t_ns: int, body) -> None:
        """Every row's state with the derivative of its hop's end and its mass (as published)."""
        payload = self.state.payload[:, 0]
        payload[:, :STATE_SIZE] = self.X
        payload[:, STATE_SIZE : 2 * STATE_SIZE] = self.Xdot
        payload[:, 2 * STATE_SIZE] = self.mass
        self.state.msg_t[:, 0] = t_ns
        self.state.count[:] = 1

    def hop(self, t0_ns: int, t1_ns: int, steps_s: tuple, loaders: list) -> None:
        """Every row from t0 to t1 (ns) over ``steps_s`` (s), the loads of ``loaders`` gathered first."""
        for form in loaders:
            form.start_hop(t0_ns, t1_ns, self)
        rk4_hop_rows(
            self.rows,
            steps_s,
            self.X,
            self.Xdot,
            self.mass,
            self.inertia,
            self.r_CB,
            self.force_N,
            self.force_B,
            self.torque_B,
        )
