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

from typing import Any

import cloudpickle

from hopsim.kernel.errors import CheckpointError, ContactInProgress  # noqa: F401  (raised by capture)

FORMAT = "hopsim-checkpoint-1"


def capture(sim, allow_contact: bool = False) -> dict[str, Any]:
    """The dynamic state of ``sim`` (started, not running) at its current barrier.

    While contact is being resolved (islands merged, or contact conditions armed) the state
    cannot be restored yet: this raises :class:`ContactInProgress`, unless ``allow_contact``
    (for a state hash), in which case merged islands are captured as one.
    """
    return {"format": FORMAT, **sim.capture_state(allow_contact)}


def restore(sim, state: dict[str, Any]) -> None:
    """Give ``sim`` (built by the same scenario, parameters and seed, not started) ``state``."""
    if state.get("format") != FORMAT:
        raise CheckpointError(f"not a hopsim checkpoint of format {FORMAT} (got {state.get('format')!r})")
    sim.restore_state(state)


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
