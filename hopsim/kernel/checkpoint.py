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

The file is data, not code (:mod:`hopsim.kernel.state_codec`): loading one never runs anything
from it. Layout, version 2::

    HOPSIM CHECKPOINT\n
    {"format": "hopsim-checkpoint-2", "body_bytes": N, "body_sha256": "...", "json_bytes": M}\n
    body: N bytes, zlib-compressed UTF-8 JSON of M bytes:
      {"description": {...the run: scenario, parameters, seed, versions...},
       "state": {"t_ns": ..., "islands": <tree>, "models": <tree>, ...},
       "blobs": [base64 of each array's bytes, ...]}

A file is written to a temporary name beside its place, flushed to disk and renamed, so that it
is whole or absent. :func:`load` checks the magic line, the format, the length and the SHA-256 of
the body before it reads anything else.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from hopsim.bus.atomic import replacing
from hopsim.kernel import state_codec
from hopsim.kernel.bounds import MAX_TIME_S
from hopsim.kernel.errors import CheckpointError, ContactInProgress  # noqa: F401  (raised by capture)
from hopsim.kernel.simtime import seconds

FORMAT = "hopsim-checkpoint-2"
MAGIC = b"HOPSIM CHECKPOINT\n"
MAX_HEADER_BYTES = 4096
MAX_JSON_BYTES = 16 << 30  # a checkpoint larger than this is refused as damaged or crafted
_ENCODED_IN_ORDER = ("events", "stop_callbacks", "injections", "islands", "models")  # one shared memo


def capture(sim, allow_contact: bool = False, copied: bool = True) -> dict[str, Any]:
    """The dynamic state of ``sim`` (started, not running) at its current barrier.

    While contact is being resolved (islands merged, or contact conditions armed) the state
    cannot be restored yet: this raises :class:`ContactInProgress`, unless ``allow_contact``
    (for a state hash), in which case merged islands are captured as one. ``copied`` False: the
    models' parts may be their own objects, for a state that is read at once and let go (a
    state hash), never kept or restored.
    """
    return {"format": FORMAT, **sim.capture_state(allow_contact, copied)}


class _PendingModels:
    """The models' snapshots of a loaded checkpoint, decoded once the rebuilt models are at hand
    (a function in a snapshot is taken from the rebuilt model at the same place)."""

    def __init__(self, decoder: Any, tree: Any):
        self._decoder, self._tree = decoder, tree

    def resolve(self, sim) -> dict[str, Any]:
        templates = {name: sim.model(name).snapshot() for name in sim.model_names()}
        return self._decoder(self._tree, "models", templates)


def restore(sim, state: dict[str, Any]) -> None:
    """Give ``sim`` (built by the same scenario, parameters and seed, not started) ``state``
    (:func:`capture`'s, or :func:`load`'s)."""
    if state.get("format") != FORMAT:
        raise CheckpointError(f"not a hopsim checkpoint of format {FORMAT} (got {state.get('format')!r})")
    check_times_and_states(state)
    if isinstance(state["models"], _PendingModels):
        try:
            state = {**state, "models": state["models"].resolve(sim)}
        except state_codec.StateCodecError as err:
            raise CheckpointError(f"the checkpoint's model state cannot be restored: {err}") from None
    sim.restore_state(state)


def check_times_and_states(state: dict[str, Any]) -> None:
    """A checkpoint's instants lie within the times a run may reach (:mod:`hopsim.kernel.bounds`)
    and its islands' continuous states are finite, as a run's are at every barrier; a
    :class:`CheckpointError` naming the first that is not."""
    end = seconds(MAX_TIME_S)
    times = {"t_ns": state.get("t_ns")}
    times.update({f"island {name!r}": isl.get("t") for name, isl in state.get("islands", {}).items()})
    for what, t in times.items():
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= end:
            raise CheckpointError(f"the checkpoint's time ({what}) {t!r} ns lies outside [0, {end}] ns")
    for name, isl in state["islands"].items():
        x = isl.get("x")
        if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or not np.isfinite(x).all():
            raise CheckpointError(f"the checkpoint's state of island {name!r} is not a vector of finite numbers")


def save(state: dict[str, Any], path, description: dict[str, Any]) -> None:
    """Write a checkpoint file (the run's ``description`` and ``state``), atomically (under its
    partial name, renamed when complete: :func:`hopsim.bus.atomic.replacing`)."""
    encoder = state_codec.Encoder()
    try:
        tree = {key: (encoder(value, key) if key in _ENCODED_IN_ORDER else value) for key, value in state.items()}
    except state_codec.StateCodecError as err:
        raise CheckpointError(f"this state cannot be written as a checkpoint: {err}") from None
    document = {
        "description": description,
        "state": tree,
        "blobs": [base64.b64encode(b).decode("ascii") for b in encoder.blobs],
    }
    text = json.dumps(document, separators=(",", ":"), allow_nan=False).encode("utf-8")
    body = zlib.compress(text, 6)
    header = {
        "format": FORMAT,
        "body_bytes": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "json_bytes": len(text),
    }
    with replacing(path) as tmp, open(tmp, "wb") as f:
        f.write(MAGIC)
        f.write(json.dumps(header, sort_keys=True).encode("ascii") + b"\n")
        f.write(body)


def load(path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(description, state) of a checkpoint file, checked whole before anything is read from it;
    a clear :class:`CheckpointError` if it is not one, is damaged, or is of another format."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint file {path}") from None
    except OSError as err:
        raise CheckpointError(f"cannot read {path}: {err.strerror}") from None
    if not data:
        raise CheckpointError(f"{path} is empty (0 bytes): not a readable hopsim checkpoint")
    if not data.startswith(MAGIC):
        if data[:1] == b"\x80":
            raise CheckpointError(
                f"{path} is a checkpoint of an older hopsim, written as a Python pickle, "
                f"which can run code when read; it is not loaded. Run the scenario again "
                f"with --checkpoint-every to write checkpoints of format {FORMAT}"
            )
        raise CheckpointError(f"{path} is not a readable hopsim checkpoint (no checkpoint header)")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    try:
        header = json.loads(data[len(MAGIC) : end]) if end > 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: the checkpoint header is damaged")
    if header.get("format") != FORMAT:
        raise CheckpointError(f"{path} is a checkpoint of format {header.get('format')!r}; this hopsim reads {FORMAT}")
    body = data[end + 1 :]
    if header.get("body_bytes") != len(body):
        raise CheckpointError(
            f"{path} is damaged or truncated: its body has {len(body)} bytes, the header "
            f"says {header.get('body_bytes')}"
        )
    if header.get("body_sha256") != hashlib.sha256(body).hexdigest():
        raise CheckpointError(f"{path} is damaged: the SHA-256 of its body does not match the header's")
    size = header.get("json_bytes")
    if not isinstance(size, int) or not 0 < size <= MAX_JSON_BYTES:
        raise CheckpointError(f"{path}: implausible size {size!r} in the checkpoint header")
    try:
        inflate = zlib.decompressobj()
        text = inflate.decompress(body, size)
        if len(text) != size or inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("the body does not inflate to the size the header gives")
        document = json.loads(text)
        description, tree = document["description"], document["state"]
        blobs = [base64.b64decode(b, validate=True) for b in document["blobs"]]
        if not isinstance(description, dict) or not isinstance(tree, dict):
            raise ValueError("description and state must be objects")
        decoder = state_codec.Decoder(blobs)
        state = {
            key: (decoder(value, key) if key in _ENCODED_IN_ORDER and key != "models" else value)
            for key, value in tree.items()
        }
        state["models"] = _PendingModels(decoder, tree["models"])
    except state_codec.StateCodecError as err:
        raise CheckpointError(f"{path}: {err}") from None
    except (ValueError, KeyError, TypeError, zlib.error) as err:
        raise CheckpointError(f"{path} is not a readable hopsim checkpoint ({type(err).__name__}: {err})") from None
    return description, state
