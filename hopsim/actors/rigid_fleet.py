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

from hopsim.dynamics.rigid_body import STATE_SIZE, rk4_hop_rows
from hopsim.kernel.fleet import FleetRows

# the vehicle's arrays that live in the fleet's rows
ROW_ATTRIBUTES = ("inertia_C_B", "r_CB_B", "gathered_force_N", "gathered_force_B", "gathered_torque_B")


class RigidFleet:
    """Free rigid vehicles (see the module)."""

    latches_loads = False           # the kernel gathers each island's loads before the call

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
        if adopted and len(self.X) < self.rows.capacity:        # filled at each hop
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
        rk4_hop_rows(np.array(rows, dtype=np.int64), tuple(steps_s), X, self.Xdot, mass, a["inertia_C_B"],
                     a["r_CB_B"], a["gathered_force_N"], a["gathered_force_B"], a["gathered_torque_B"])
        Xdot = self.Xdot
        for m, row in zip(models, rows, strict=True):
            m.x[:] = X[row]
            m.xdot[:] = Xdot[row]
            m.xdot_last = Xdot[row].copy()


__all__ = ["RigidFleet"]


class RigidVehicleRows:
    """The row form of :class:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics` in a row
    block (:mod:`hopsim.kernel.blocks`): the body of each block row. Its rows are the state ``X``
    and derivative ``Xdot`` (13 per row), the mass (kg), the inertia about the centre of mass
    (kg m^2, body axes), the centre of mass's offset (m, body axes) and the load accumulators
    (``force_N`` N inertial, ``force_B`` N body, ``torque_B`` N m body), which the block's loading
    forms fill in their ``start_hop``. A hop is :func:`rk4_hop_rows` over every row, as the fleet
    form's. It publishes nothing in a block (its ``state`` must be read by nothing there)."""

    inputs: dict = {}
    outputs: dict = {}

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models = models
        self.rows = np.arange(n, dtype=np.int64)
        self.X, self.Xdot = np.zeros((n, STATE_SIZE)), np.zeros((n, STATE_SIZE))
        self.mass, self.inertia, self.r_CB = np.zeros(n), np.zeros((n, 3, 3)), np.zeros((n, 3))
        self.force_N, self.force_B, self.torque_B = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))

    @staticmethod
    def takes_input(port: str) -> bool:
        return False

    def qualifies(self, t_ns: int) -> bool:
        """Free vehicles (not welded), no disturbance from now on, nothing gathered."""
        return all(m.hop_ready() and m.disturbance_until_ns <= t_ns and not m.gathered_force_N.any()
                   and not m.gathered_force_B.any() and not m.gathered_torque_B.any() for m in self.models)

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

    def hop(self, t0_ns: int, t1_ns: int, steps_s: tuple, loaders: list) -> None:
        """Every row from t0 to t1 (ns) over ``steps_s`` (s), the loads of ``loaders`` gathered first."""
        for form in loaders:
            form.start_hop(t0_ns, t1_ns, self)
        rk4_hop_rows(self.rows, steps_s, self.X, self.Xdot, self.mass, self.inertia, self.r_CB, self.force_N,
                     self.force_B, self.torque_B)
