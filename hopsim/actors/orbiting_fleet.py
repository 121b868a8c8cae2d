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

:class:`OrbitingSpacecraftRows` is the spacecraft's row form in a row block
(:mod:`hopsim.kernel.blocks`): the same rows and the same compiled hop, for spacecraft whose
inputs are quiet (a message to one of them ends the block).
"""

from __future__ import annotations

import numpy as np

from hopsim.actors.rigid_fleet import STATE
from hopsim.dynamics.orbiting_body import P_DEGREE, P_MASS, rk4_rows, scratch
from hopsim.kernel.blocks import OutRows
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
        self._version: list[int] = []  # per row: the messages received at its last latch
        self._t0_last: list[int] = []  # per row: the start (ns) of its last hop
        self.X = self.Xdot = np.zeros((0, 0))
        self._work = None
        self._field = None

    def _adopted(self, model, row: int) -> None:
        """A model adopted now (its row ``row``): room for its row; it latches at this hop."""
        if self._work is None:
            self._field = (model.C, model.S)
            self._work = scratch(int(model.params[P_DEGREE]), model.n_wheels, len(model.x0))
        if len(self.X) < self.rows.capacity:  # filled at each hop
            n = self.rows.capacity
            self.X, self.Xdot = np.zeros((n, len(model.x0))), np.zeros((n, len(model.x0)))
        while len(self._version) <= row:
            self._version.append(-1)
            self._t0_last.append(0)
        self._version[row] = -1

    # ------------------------------------------------------------------ the hop
    def hop(self, models: list, versions: list[int], t0_ns: int, t1_ns: int, steps_s) -> None:
        """start_hop, RK4 over ``steps_s`` (s) from ``t0_ns`` and end_hop of every spacecraft in
        ``models`` (``versions``: the messages and faults each has received)."""
        if len(versions) != len(models):
            raise ValueError(f"{len(models)} spacecraft but {len(versions)} message counts")
        rows, adopted = self.rows.rows_of(models)
        for i in adopted:
            self._adopted(models[i], rows[i])
        version, t0_last = self._version, self._t0_last
        for m, received, row in zip(models, versions, rows):
            if received != version[row] or m.disturbance.until_ns > t0_last[row]:
                m.start_hop(t0_ns, t1_ns)
                version[row] = received
            t0_last[row] = t0_ns
        X = self.X
        for m, row in zip(models, rows):
            X[row] = m.x
        a = self.rows.arrays
        C, S = self._field
        rk4_rows(
            np.array(rows, dtype=np.int64),
            t0_ns / 1e9,
            np.array(steps_s, dtype=float),
            X,
            self.Xdot,
            a["params"],
            a["loads"],
            a["inertia_B"],
            a["inertia_inv"],
            a["inertia_total_B"],
            C,
            S,
            a["G"],
            a["J"],
            a["u"],
            a["friction_table"],
            *self._work,
        )
        Xdot = self.Xdot
        for m, row in zip(models, rows):
            m.x[:] = X[row]
            m.xdot[:] = Xdot[row]


class OrbitingSpacecraftRows:
    """The row form of :class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft` in a row
    block: the body of each block row. Its rows are the spacecraft's state ``X`` and derivative
    ``Xdot`` and the arrays its hop reads (``ROW_ATTRIBUTES``: parameters, the loads and wheel
    torques its start_hop latches, inertias, wheels), copied from the models after the block's
    first hop latched them with each spacecraft's own start_hop. A hop is
    :func:`~hopsim.dynamics.orbiting_body.rk4_rows` over every row, the fleet form's call; the
    latched loads hold because no message reaches the spacecraft while the block runs.
    Its output ``state`` is each row's 13 states with their derivative and the mass, as the
    scalar form publishes it; a spacecraft whose wheel state is read runs without a block."""

    inputs: dict = {}
    outputs = {"state": (STATE, 1)}
    outputs_only = True  # its update_flow_outs computes nothing but its outputs
    latches_loads = True  # its first hop latches as the spacecraft's start_hop does

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.latched = False
        self.models = models
        self.state = OutRows(STATE, n, 1)
        self.state.src[:, 0] = np.arange(n)
        self.rows = np.arange(n, dtype=np.int64)
        first = models[0]
        self.C, self.S = first.C, first.S
        self.work = scratch(int(first.params[P_DEGREE]), first.n_wheels, len(first.x))
        self.X, self.Xdot = np.zeros((n, len(first.x))), np.zeros((n, len(first.x)))
        self.arrays = {a: np.zeros((n, *np.shape(getattr(first, a)))) for a in ROW_ATTRIBUTES}

    @staticmethod
    def takes_input(port: str) -> bool:
        return False

    def qualifies(self, t_ns: int) -> bool:
        """Free spacecraft of one field, degree and layout (the fleet form's key), without LuGre
        bearings, no disturbance from now on."""
        key = OrbitingFleet.key(self.models[0])
        return key is not None and all(
            m.hop_ready()
            and OrbitingFleet.key(m) == key
            and m.field is self.models[0].field
            and m.disturbance.until_ns <= t_ns
            for m in self.models
        )

    def load(self) -> None:
        for i, m in enumerate(self.models):
            self.X[i], self.Xdot[i] = m.x, m.xdot
        self.latched = False

    def store(self) -> None:
        """The states back; the other rows are the models' own numbers, unchanged by a hop."""
        for i, m in enumerate(self.models):
            m.x[:] = self.X[i]
            m.xdot[:] = self.Xdot[i]

    def out_rows(self, port: str) -> OutRows:
        return self.state

    def update_flow_outs(self, t_ns: int, body) -> None:
        """Every row's state with the derivative of its hop's end and its mass (as published)."""
        payload = self.state.payload[:, 0]
        payload[:, :13] = self.X[:, :13]
        payload[:, 13:26] = self.Xdot[:, :13]
        payload[:, 26] = self.arrays["params"][:, P_MASS]
        self.state.msg_t[:, 0] = t_ns
        self.state.count[:] = 1

    def hop(self, t0_ns: int, t1_ns: int, steps_s: tuple, loaders: list) -> None:
        """Every row from t0 to t1 (ns) over ``steps_s`` (s): the scalar hop's RK4 and its end_hop's
        renormalised attitude (``loaders``: none load a spacecraft in a block)."""
        if not self.latched:  # the block's first hop: what the spacecraft's own latches
            for i, m in enumerate(self.models):
                m.start_hop(t0_ns, t1_ns)
                for a, rows in self.arrays.items():
                    rows[i] = getattr(m, a)
            self.latched = True
        a = self.arrays
        rk4_rows(
            self.rows,
            t0_ns / 1e9,
            np.array(steps_s, dtype=float),
            self.X,
            self.Xdot,
            a["params"],
            a["loads"],
            a["inertia_B"],
            a["inertia_inv"],
            a["inertia_total_B"],
            self.C,
            self.S,
            a["G"],
            a["J"],
            a["u"],
            a["friction_table"],
            *self.work,
        )


__all__ = ["OrbitingFleet", "OrbitingSpacecraftRows"]
