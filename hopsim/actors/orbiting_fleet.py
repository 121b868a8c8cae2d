"""The fleet form of :class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`: many
spacecraft's hops in one compiled call (:mod:`hopsim.kernel.fleet`).

The fleet holds one row per spacecraft of: the state and its derivative, the parameters, the
latched loads, the inertias (``inertia_B``, its inverse, the total), the wheels' axes, axial
inertias, motor torques and friction parameters. A spacecraft's own ``params``, ``loads``,
inertias, ``G``, ``J``, ``u`` and ``friction_table`` are views of its row (the scalar code writes
them in place), so its scalar methods and its snapshot see the same numbers; ``x`` and ``xdot``
stay its island's and are copied in and out around the compiled call.

A hop of N spacecraft (:meth:`OrbitingFleet.hop`) is the scalar form's start_hop, compiled RK4
hop (:func:`hopsim.dynamics.orbiting_body.rk4_hop`) and end_hop for each, in one call
(:func:`hopsim.dynamics.orbiting_body.rk4_rows`):

- start_hop latches the thrusters' wrenches, the mass properties and the wheel command from the
  ports. It is the scalar method itself, run only for a spacecraft that received a message or a
  fault since its last hop, or whose disturbance may act (its end is a barrier; while it might
  act, every hop latches again). Otherwise the row still holds what start_hop would latch: the
  same messages give the same sums.
- end_hop puts the attitude back on the unit sphere (the same compiled ``quat_normalize``).

Spacecraft with LuGre bearings (their stable step is checked every hop) have no fleet form.
A spacecraft whose arrays were replaced (a restore replaces all of them at once; the model's own
code writes them in place) is adopted again, and latches.
"""
from __future__ import annotations

import numpy as np

from hopsim.dynamics.orbiting_body import P_DEGREE, rk4_rows, scratch
from hopsim.kernel.fleet import FleetRows

# the spacecraft's arrays that live in the fleet's rows
ROW_ATTRIBUTES = ("params", "loads", "inertia_B", "inertia_inv", "inertia_total_B", "G", "J", "u", "friction_table")


class OrbitingFleet:
    """Spacecraft of one gravity field, degree and state layout (see the module)."""

    @staticmethod
    def key(model):
        """Spacecraft sharing a key share arrays of one shape (wheels, drag plates) and one field;
        LuGre: no fleet."""
        if model.bearings.n_states:
            return None
        return (id(model.field), int(model.C.shape[0]), len(model.x0), model.n_wheels, len(model.params))

    def __init__(self):
        self.rows = FleetRows(ROW_ATTRIBUTES)
        self._version: list[int] = []         # per row: the messages received at its last latch
        self._t0_last: list[int] = []         # per row: the start (ns) of its last hop
        self.X = self.Xdot = np.zeros((0, 0))
        self._work = None
        self._field = None

    def _row(self, model) -> int:
        """The model's row; a model adopted now latches at this hop."""
        row, adopted = self.rows.row(model)
        if adopted:
            if self._work is None:
                self._field = (model.C, model.S)
                self._work = scratch(int(model.params[P_DEGREE]), model.n_wheels, len(model.x0))
            if len(self.X) < self.rows.capacity:            # filled at each hop
                n = self.rows.capacity
                self.X, self.Xdot = np.zeros((n, len(model.x0))), np.zeros((n, len(model.x0)))
            while len(self._version) <= row:
                self._version.append(-1)
                self._t0_last.append(0)
            self._version[row] = -1
        return row

    # ------------------------------------------------------------------ the hop
    def hop(self, models: list, versions: list[int], t0_ns: int, t1_ns: int, steps_s) -> None:
        """start_hop, RK4 over ``steps_s`` (s) from ``t0_ns`` and end_hop of every spacecraft in
        ``models`` (``versions``: the messages and faults each has received)."""
        rows = []
        version, t0_last = self._version, self._t0_last
        for m, received in zip(models, versions, strict=True):
            row = self._row(m)
            if received != version[row] or m.disturbance.until_ns > t0_last[row]:
                m.start_hop(t0_ns, t1_ns)
                version[row] = received
            t0_last[row] = t0_ns
            rows.append(row)
        X = self.X
        for m, row in zip(models, rows, strict=True):
            X[row] = m.x
        a = self.rows.arrays
        C, S = self._field
        rk4_rows(np.array(rows, dtype=np.int64), t0_ns / 1e9, np.array(steps_s, dtype=float), X, self.Xdot,
                 a["params"], a["loads"], a["inertia_B"], a["inertia_inv"], a["inertia_total_B"], C, S, a["G"],
                 a["J"], a["u"], a["friction_table"], *self._work)
        Xdot = self.Xdot
        for m, row in zip(models, rows, strict=True):
            m.x[:] = X[row]
            m.xdot[:] = Xdot[row]


__all__ = ["OrbitingFleet"]
