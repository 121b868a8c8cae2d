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


class Fleets:
    """An owner's fleet forms, one per (model class, key), made when a model first needs one."""

    def __init__(self):
        self._fleets: dict[tuple, Any] = {}
        self._of: dict[int, Any] = {}          # id(model) -> its fleet (None: the scalar path)
        self.calls = 0                         # fleet calls (the hops they took: the islands' fleet_hops)

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


__all__ = ["Fleets"]
