"""Checkpoints: the whole dynamic state of a simulation at a barrier, and its restoration.

A checkpoint is taken when a run has returned (every island is then at the same barrier, with
no hop propagated ahead). It holds every model's snapshot (own attributes, port states,
generator), every island's continuous state, timeline (I/O instants, timed events, pending
deliveries, stops), active zero-crossings, integrator and counters, and the kernel's pending
events. Restoring builds the scenario again (same parameters and seed, so the same models,
wiring and callbacks) and overwrites its dynamic state; running on then gives the same stream as
never stopping.

Timed events and zero-crossings are matched by name with those the scenario build registers;
one created by a callback during the run cannot be restored and makes :func:`capture` fail with
its name.
"""
from __future__ import annotations

import copy
import heapq
from typing import Any

import cloudpickle
import simpy

from hopsim.kernel.errors import CheckpointError, ContactInProgress
from hopsim.kernel.island import InstantWakes

FORMAT = "hopsim-checkpoint-1"


def capture(sim, allow_contact: bool = False) -> dict[str, Any]:
    """The dynamic state of ``sim`` (started, not running) at its current barrier.

    While contact is being resolved (islands merged, or contact conditions armed) the state
    cannot be restored yet: this raises :class:`ContactInProgress`, unless ``allow_contact``
    (for a state hash), in which case merged islands are captured as one.
    """
    if not sim._started:
        raise CheckpointError("a checkpoint needs a started run; advance it first")
    now = sim.now
    busy = sorted(isl.name for isl in sim.islands.values()
                  if not getattr(isl, "remote", False)
                  and (isl.absorbed_into is not None or len(isl.members) > 1
                       or any(not zc.restorable for zc in isl.zero_crossings)))
    if busy and not allow_contact:
        raise ContactInProgress(f"islands {busy} are resolving contact at {now / 1e9:.9g} s (merged, or "
                                f"watching a contact); checkpoints of contact in progress are not supported yet")
    events = {}
    for name, ev in sim._events.items():
        if ev.transient or ev.cancelled:
            continue
        if not ev.from_build:
            raise CheckpointError(f"timed event {name!r} was created during the run; only events the "
                                  f"scenario registers can be restored from a checkpoint")
        events[name] = ev.t_ns
    islands, models = {}, {}
    for name, isl in sim.islands.items():
        if getattr(isl, "absorbed_into", None) is not None:
            continue                     # its models and states are part of the island it merged into
        part = isl.capture_state() if getattr(isl, "remote", False) else capture_island(isl, now)
        islands[name] = part["island"]
        models.update(part["models"])
    return {
        "format": FORMAT,
        "t_ns": now,
        "seed": sim.seed,
        "e_stop": sim.e_stop,
        "scenario_seq": sim._scenario_seq,
        "published": sim._publish_counts,
        "events": events,
        "stop_callbacks": [i for i, _ in sim._stop_callbacks],
        "injections": [(env, queue) for env, queue in sim._injections],
        "islands": islands,
        "models": models,
    }


def capture_island(isl, now: int | None = None) -> dict[str, Any]:
    """One island's part of a checkpoint: its timeline and state, and its models' snapshots."""
    now = isl.sim.now if now is None else now
    if isl.t != now or isl._propagated:
        raise CheckpointError(f"island {isl.name!r} is not settled at {now} ns (at {isl.t} ns)")
    island = {
        "t": isl.t,
        "x": isl._x.copy(),
        "io": [(t, slot.name) for t, _, slot in isl._io_heap],
        "inbox": [(d, p, src, seq, rank, env, slot.name, port)
                  for d, p, src, seq, rank, env, slot, port in isl._inbox],
        "stops": list(isl._stops),
        "requested": list(isl._requested),
        "zero_crossings": [zc.name for zc in isl.zero_crossings],
        "integrator": copy.deepcopy(isl.integrator),
        "stats": dict(isl.stats),
        "kernel_seq": isl._kernel_seq,
        "slots": {s.name: (s.seq, s.io_k, s.io_prev, s.io_next, s.fresh, s.force_ufo, s.triggered)
                  for s in isl.slots},
    }
    return {"island": island, "models": {s.name: s.call("snapshot") for s in isl.slots}}


def restore(sim, state: dict[str, Any]) -> None:
    """Give ``sim`` (built by the same scenario, parameters and seed, not started) ``state``."""
    if state.get("format") != FORMAT:
        raise CheckpointError(f"not a hopsim checkpoint of format {FORMAT} (got {state.get('format')!r})")
    if sim._started:
        raise CheckpointError("restore into a freshly built simulation, before it is started")
    if state["seed"] != sim.seed:
        raise CheckpointError(f"the checkpoint was taken with seed {state['seed']}, the simulation "
                              f"has seed {sim.seed}")
    missing = set(state["models"]) ^ set(sim._slots)
    if missing:
        raise CheckpointError(f"the scenario's models differ from the checkpoint's: {sorted(missing)}")
    now = state["t_ns"]
    sim._prepare()
    sim.env = simpy.Environment(initial_time=now)
    sim._instant_wakes = InstantWakes(sim.env)
    sim.e_stop = state["e_stop"]
    sim._scenario_seq = state["scenario_seq"]
    sim._publish_counts = state["published"]
    sim._stop_callbacks = [(i, fn) for i, fn in sim._stop_callbacks if i in set(state["stop_callbacks"])]
    for name, slot in sim._slots.items():
        slot.call("restore", state["models"][name])

    for name, ev in list(sim._events.items()):
        if name not in state["events"]:
            ev.cancelled = True
            del sim._events[name]
            continue
        ev.t_ns = state["events"][name]
    unknown = set(state["events"]) - set(sim._events)
    if unknown:
        raise CheckpointError(f"the scenario no longer registers timed event(s) {sorted(unknown)}")

    for name, isl in sim.islands.items():
        st = state["islands"][name]
        isl.t = st["t"]
        isl._x[:] = st["x"]
        isl._initial = False
        isl._pending_end = None
        isl._propagated = False
        isl.integrator = st["integrator"]
        isl.stats = dict(st["stats"])
        isl._kernel_seq = st["kernel_seq"]
        isl._stops = list(st["stops"])
        heapq.heapify(isl._stops)
        isl._requested = list(st["requested"])
        heapq.heapify(isl._requested)
        by_name = isl.by_name
        isl._io_heap = [(t, by_name[n].order, by_name[n]) for t, n in st["io"]]
        heapq.heapify(isl._io_heap)
        isl._inbox = [(d, p, src, seq, rank, env, by_name[n], port)
                      for d, p, src, seq, rank, env, n, port in st["inbox"]]
        heapq.heapify(isl._inbox)
        zcs = {zc.name: zc for zc in isl.zero_crossings}
        lost = set(st["zero_crossings"]) - set(zcs)
        if lost:
            raise CheckpointError(f"island {name!r}: zero-crossing(s) {sorted(lost)} were registered "
                                  f"during the run and cannot be restored")
        isl.zero_crossings = [zcs[n] for n in st["zero_crossings"]]
        for sname, (seq, io_k, io_prev, io_next, fresh, force, triggered) in st["slots"].items():
            s = by_name[sname]
            s.seq, s.io_k, s.io_prev, s.io_next, s.fresh, s.force_ufo = seq, io_k, io_prev, io_next, fresh, force
            s.triggered = triggered
        isl._events = [(ev.t_ns, ev.priority, ev.seq, ev) for ev in sim._events.values() if ev.island == name]
        heapq.heapify(isl._events)

    for ev in sim._events.values():
        if ev.island is None:
            sim.env.timeout(ev.t_ns - now, value=ev).callbacks.append(sim._fire_global)
    sim._injections = []
    for env, queue in state["injections"]:
        sim._schedule_injection_record(env, queue)
    sim._place()
    for isl in sim.islands.values():
        isl.resume()


def save(state: dict[str, Any], path, description: dict[str, Any]) -> None:
    """Write a checkpoint file: the run's description (scenario, parameters, ...) and its state."""
    with open(path, "wb") as f:
        cloudpickle.dump({"description": description, "state": state}, f)


def load(path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(description, state) of a checkpoint file; a clear error if it is not one."""
    try:
        with open(path, "rb") as f:
            blob = cloudpickle.load(f)
        return blob["description"], blob["state"]
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint file {path}") from None
    except Exception as err:
        raise CheckpointError(f"{path} is not a readable hopsim checkpoint ({type(err).__name__}: {err})") from None
