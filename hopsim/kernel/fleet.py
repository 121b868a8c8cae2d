"""Fleet forms: the instances of one kind of model in one process, held as struct-of-arrays and
advanced with one compiled call.

DESIGN.md ("Models and actors"): a model class may have a fleet form beside its scalar form. The
scalar form stays the reference and the way a first model is written; the fleet form holds the N
instances' states and parameters as rows of arrays and runs a lifecycle phase over every due row
in one call, with the scalar form's per-row compiled function, so the result is the scalar
form's bit for bit. Each instance stays a model object (its name, ports, topics, generator,
snapshot): its arrays are views of its rows.

In this kernel a fleet form takes over the *hop* of the islands of a rate group
(:mod:`hopsim.kernel.rate_group`) whose hops end at one instant: an island qualifies when one
model propagates its continuous state with its own compiled hop (``propagate_hop``, RK4), every
other state of the island has a derivative constant over a hop (a tank's:
``state_rate_constant_over_hop``, advanced by the island itself) and no other model has
``end_hop`` (:attr:`Island.fleet_body`). Instead of each island's compiled hop and end_hop, the
kernel makes one call per fleet and sub-steps:

    fleet.hop(models, versions, t0_ns, t1_ns, steps_s)

Loads. A fleet form whose class says ``latches_loads = True`` (the default) runs its models'
start_hop itself; nothing else may then load the body (no model of the island has pre_deriv, and
no other start_hop but the tank-like models', which the kernel calls). ``versions[i]`` counts
the messages and faults ``models[i]`` has received so far: such a fleet may latch an instance's
inputs again only when its count moved (reading protobuf messages is Python), as long as what it
then computes is exactly what the scalar ``start_hop`` would. With ``latches_loads = False`` the
kernel gathers each island's loads first, as for the scalar compiled hop (every start_hop, then
every pre_deriv once, into the body's accumulators), and the fleet only propagates. Outside a
rate group, and with ``Simulation(fleets=False)``, every island runs the scalar path.

Fleet forms today: :class:`~hopsim.actors.orbiting_fleet.OrbitingFleet` (latches itself) and
:class:`~hopsim.actors.rigid_fleet.RigidFleet` (the kernel gathers).

A model class names its fleet form with the class attribute ``fleet_form``: a class taking no
arguments, with

    key(model) -> hashable or None   instances with equal keys share one fleet (arrays of one
                                     shape); None: this instance has no fleet form
    hop(models, versions, t0_ns, t1_ns, steps_s)     as above
    latches_loads: bool              class attribute, True unless the kernel is to gather loads
"""

from __future__ import annotations

from typing import Any

import numpy as np


class FleetRows:
    """The rows of a fleet form: for each model it advances, one row of each array attribute in
    ``attributes`` (the model's own arrays, which become views of its row, so that its scalar
    methods and its snapshot see the fleet's numbers). A model is adopted at its first call, and
    again when its arrays were replaced behind the fleet's back (a restore replaces all of a
    model's attributes at once; the model's own code writes them in place): its values move in.
    Room doubles as models come; the fleet sizes its other per-row arrays on :attr:`capacity`."""

    def __init__(self, attributes: tuple[str, ...]):
        self.attributes = attributes
        self.models: list = []
        self.arrays: dict[str, np.ndarray] = {}
        self.capacity = 0
        self._row: dict[int, int] = {}  # id(model) -> row
        self._views: list[tuple] = []  # per row: the views the model holds

    def row(self, model) -> tuple[int, bool]:
        """(the model's row, whether it was adopted now: a new model, or replaced arrays)."""
        row = self._row.get(id(model))
        if row is not None and getattr(model, self.attributes[0]) is self._views[row][0]:
            return row, False
        if row is None:
            if len(self.models) == self.capacity:
                self._grow(model)
            row = len(self.models)
            self.models.append(model)
            self._views.append(())
            self._row[id(model)] = row
        for name in self.attributes:
            self.arrays[name][row] = getattr(model, name)
        self._point(model, row)
        return row, True

    def rows_of(self, models: list) -> tuple[list[int], list[int]]:
        """(each model's row, the indices in ``models`` of those adopted now): :meth:`row` for
        each, with one call for all."""
        known, views, first = self._row.get, self._views, self.attributes[0]
        rows, adopted = [], []
        for i, model in enumerate(models):
            row = known(id(model))
            if row is None or getattr(model, first) is not views[row][0]:
                row, _ = self.row(model)
                adopted.append(i)
            rows.append(row)
        return rows, adopted

    def _grow(self, model) -> None:
        """Room for twice as many rows (every model already adopted points at the new arrays)."""
        n = max(8, 2 * len(self.models))
        old, self.arrays = self.arrays, {}
        for name in self.attributes:
            grown = np.zeros((n, *np.shape(getattr(model, name))))
            if self.models:
                grown[: len(self.models)] = old[name][: len(self.models)]
            self.arrays[name] = grown
        self.capacity = n
        for r, m in enumerate(self.models):
            self._point(m, r)

    def _point(self, model, row: int) -> None:
        """Make the model's row attributes views of ``row``."""
        views = tuple(self.arrays[name][row] for name in self.attributes)
        for name, view in zip(self.attributes, views, strict=True):
            setattr(model, name, view)
        self._views[row] = views


class Fleets:
    """An owner's fleet forms, one per (model class, key), made when a model first needs one."""

    def __init__(self):
        self._fleets: dict[tuple, Any] = {}
        self._of: dict[int, Any] = {}  # id(model) -> its fleet (None: the scalar path)
        self.calls = 0  # fleet calls (the hops they took: the islands' fleet_hops)

    def fleet_of(self, model) -> Any | None:
        """The fleet form that advances ``model`` (None: the model class has none for it)."""
        key = id(model)
        if key in self._of:
            return self._of[key]
        form = getattr(type(model), "fleet_form", None)
        fleet = None
        if form is not None:
            sub = form.key(model)
            if sub is not None:
                fleet = self._fleets.get((type(model), sub))
                if fleet is None:
                    fleet = self._fleets[(type(model), sub)] = form()
        self._of[key] = fleet
        return fleet

    def counted(self) -> None:
        """One fleet call."""
        self.calls += 1


__all__ = ["FleetRows", "Fleets"]
