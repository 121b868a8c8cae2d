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
from it. Its state is decoded against the rebuilt scenario's: each model's snapshot against the
freshly built model's own (the attributes it has, and for each the kind of value: the same
class, message type, array dtype, a kind's row of the same shape), each island's against the
island's parts, so that a file can give a model no attribute it lacks and no object of another
class than the one it holds. Sizes and decoding work are bounded (:data:`MAX_JSON_BYTES`,
:data:`MAX_INFLATION`, :data:`hopsim.kernel.state_codec.MAX_DEPTH`,
:data:`~hopsim.kernel.state_codec.MAX_ITEMS`): a crafted file is refused with a
:class:`CheckpointError`, never read at the cost of the machine's memory. Layout, version 2::

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
from hopsim.bus.envelope import Envelope
from hopsim.kernel import state_codec
from hopsim.kernel.bounds import MAX_TIME_S
from hopsim.kernel.errors import CheckpointError, ContactInProgress  # noqa: F401  (raised by capture)
from hopsim.kernel.simtime import seconds

FORMAT = "hopsim-checkpoint-2"
MAGIC = b"HOPSIM CHECKPOINT\n"
MAX_HEADER_BYTES = 4096
# What a checkpoint's body may inflate to. The largest built-in scenario (formation, 500 models)
# writes 1.5 MB of JSON; 256 MiB holds a hundred times as many models, and loading that much
# takes about 1 GiB of memory (the text, the parsed tree, the arrays). A file that claims more is
# refused before anything is inflated.
MAX_JSON_BYTES = 256 << 20
# Deflate codes at most 258 bytes in about 2 bits: no zlib body inflates to more than about 1032
# times its size, and hopsim's own checkpoints inflate 3 to 12 times. A header that claims more
# than that of its body lies.
MAX_INFLATION = 1032
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


# The templates of the kernel's parts of a checkpoint (Simulation.capture_state and
# Island.capture_state write them): what each entry may hold
_INT = state_codec.INT
_OPTIONAL_INT = state_codec.AnyOf(_INT, state_codec.NULL)
_ENVELOPE = Envelope(_INT, _INT, "", "", _INT, _INT, state_codec.ANY_MESSAGE)
_KERNEL_PARTS = {
    "events": {"": _INT},  # timed event -> its instant
    "stop_callbacks": [_INT],
    "injections": [state_codec.Parts(("envelope", _ENVELOPE), ("queued", True))],
}
_DELIVERY = state_codec.Parts(
    *(("instant", _INT), ("priority", _INT), ("source", ""), ("sequence", _INT), ("rank", _INT)),
    *(("envelope", _ENVELOPE), ("model", ""), ("port", "")),
)
_SLOT = state_codec.Parts(
    *(("sequence", _INT), ("I/O steps", _INT), ("last I/O step", _OPTIONAL_INT), ("next I/O step", _OPTIONAL_INT)),
    *(("fresh", True), ("forced", True), ("triggered", True)),
)


def _island_template(island) -> state_codec.Record:
    """What an island's part of a checkpoint may hold (its integrator: an object of the rebuilt
    island's integrator's class, its attributes of the kinds that one's are)."""
    return state_codec.Record(
        {
            "t": _INT,
            "x": np.zeros(0),
            "io": [state_codec.Parts(("instant", _INT), ("model", ""))],
            "inbox": [_DELIVERY],
            "stops": [_INT],
            "requested": [state_codec.Parts(("instant", _INT), ("island", ""))],
            "zero_crossings": [""],
            "integrator": island.integrator,
            "stats": {"": _INT},
            "kernel_seq": _INT,
            "slots": {"": _SLOT},
        },
        "part",
    )


def _snapshot_template(model) -> Any:
    """What a model's snapshot may hold: the freshly built model's own snapshot, whose
    attributes (:meth:`Model.snapshot`: attributes, ports, generator) are the only ones a file
    may give it, each of the kind it holds; a port holds its own message type."""
    snap = model.snapshot()
    ports = getattr(model, "ports", None)
    if not (isinstance(snap, tuple) and len(snap) == 3 and isinstance(snap[0], dict) and isinstance(snap[1], dict)):
        return snap  # a model's own form of snapshot: decoded against it as it is
    port_templates = {}
    for name, st in snap[1].items():
        port = ports.get(name) if isinstance(ports, dict) else None
        spec = getattr(port, "spec", None)
        if isinstance(st, tuple) and len(st) == 5 and spec is not None:  # InPort.state()
            msg = spec.msg_type()
            st = state_codec.Parts(
                ("message", state_codec.AnyOf(state_codec.NULL, msg)),
                ("publish time", _INT),
                ("freshness", _INT),
                ("seen", _INT),
                ("queue", [msg]),
            )
        port_templates[name] = st
    return state_codec.Parts(
        ("", state_codec.Record(snap[0], "attribute")),
        ("", state_codec.Record(port_templates, "port")),
        ("generator state", snap[2]),
    )


class _Pending:
    """The state of a loaded checkpoint, decoded when the rebuilt scenario is at hand, against
    its own (a function in a snapshot is taken from the rebuilt model at the same place); each
    restore decodes it anew, so that no two simulations share its objects."""

    def __init__(self, tree: dict[str, Any], blobs: list[bytes]):
        self._tree, self._blobs = tree, blobs

    def kernel_parts(self, decoder: state_codec.Decoder) -> dict[str, Any]:
        """The kernel's parts (timed events, stop callbacks, injections), in the order they were
        written (one memo is shared by all the parts)."""
        return {
            key: decoder.decode_against(self._tree[key], key, _KERNEL_PARTS[key], own_references=False)
            for key in _ENCODED_IN_ORDER[:3]
        }

    def resolve(self, sim) -> dict[str, Any]:
        decoder = state_codec.Decoder(self._blobs)
        parts = self.kernel_parts(decoder)
        islands = state_codec.Record({name: _island_template(isl) for name, isl in sim.islands.items()}, "island")
        models = state_codec.Record({name: _snapshot_template(sim.model(name)) for name in sim.model_names()}, "model")
        # an island may share an envelope with the injections; a model's snapshot is its own
        parts["islands"] = decoder.decode_against(self._tree["islands"], "", islands, own_references=False)
        parts["models"] = decoder.decode_against(self._tree["models"], "", models)
        return parts


def restore(sim, state: dict[str, Any]) -> None:
    """Give ``sim`` (built by the same scenario, parameters and seed, not started) ``state``
    (:func:`capture`'s, or :func:`load`'s). A loaded state that does not fit the rebuilt
    scenario is refused with a :class:`CheckpointError` that says where."""
    if state.get("format") != FORMAT:
        raise CheckpointError(f"not a hopsim checkpoint of format {FORMAT} (got {state.get('format')!r})")
    pending = state.get("models")
    if not isinstance(pending, _Pending):
        check_times_and_states(state)
        sim.restore_state(state)
        return
    try:
        state = {**state, **pending.resolve(sim)}
    except state_codec.StateCodecError as err:
        raise CheckpointError(f"the checkpoint's state does not fit the rebuilt scenario: {err}") from None
    check_kernel_parts(state)
    check_times_and_states(state)
    try:
        sim.restore_state(state)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError) as err:
        # what the parts' types allow and the rebuilt scenario still cannot take (an island's
        # state vector of another length, a model's generator state numpy refuses, a mass of
        # zero that the island's first plan divides by)
        raise CheckpointError(
            f"the checkpoint's state does not fit the rebuilt scenario ({type(err).__name__}: {err})"
        ) from None


def check_kernel_parts(state: dict[str, Any]) -> None:
    """The kernel's counters of a loaded checkpoint are of their types, and the instants it
    has yet to reach lie after the run's start (the rest is decoded against templates)."""
    kinds = {"seed": int, "e_stop": bool, "scenario_seq": int, "published": int, "monitors": dict}
    for key, kind in kinds.items():
        value = state.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise CheckpointError(f"the checkpoint's {key!r} is not a {kind.__name__} (got {type(value).__name__})")
    for name, k in state["monitors"].items():
        if not isinstance(name, str) or not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise CheckpointError(f"the checkpoint's monitor {name!r} has no valid index ({k!r})")
    # the instants it has yet to reach (timed events, I/O steps, deliveries, stops): 64-bit
    # integers (their templates), and none before the run's start
    later = [(f"timed event {name!r}", t) for name, t in state["events"].items()]
    for name, isl in state["islands"].items():
        later += [(f"island {name!r}: I/O step", t) for t, _ in isl.get("io", ())]
        later += [(f"island {name!r}: delivery", d[0]) for d in isl.get("inbox", ())]
        later += [(f"island {name!r}: stop", t) for t in isl.get("stops", ())]
        later += [(f"island {name!r}: requested barrier", r[0]) for r in isl.get("requested", ())]
    for what, t in later:
        if t < 0:
            raise CheckpointError(f"the checkpoint's instant ({what}) {t!r} ns lies before the run's start")


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
        if path.stat().st_size > len(MAGIC) + MAX_HEADER_BYTES + MAX_JSON_BYTES:
            raise CheckpointError(
                f"{path} holds {path.stat().st_size:,} bytes: more than a checkpoint may "
                f"({MAX_JSON_BYTES >> 20} MiB of state); refused as damaged or crafted"
            )
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
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_JSON_BYTES:
        raise CheckpointError(
            f"{path}: the checkpoint header gives its state {size!r} bytes; a checkpoint holds at "
            f"most {MAX_JSON_BYTES:,} (refused as damaged or crafted)"
        )
    if size > MAX_INFLATION * len(body) + 64:
        raise CheckpointError(
            f"{path}: the checkpoint header gives its state {size:,} bytes, more than its "
            f"{len(body):,}-byte body can inflate to (refused as damaged or crafted)"
        )
    try:
        inflate = zlib.decompressobj()
        text = inflate.decompress(body, size)
        if len(text) != size or inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("the body does not inflate to the size the header gives")
        document = json.loads(text)
        if not isinstance(document, dict):
            raise ValueError("the body is not an object")
        description, tree, blobs = document["description"], document["state"], document["blobs"]
        if not isinstance(description, dict) or not isinstance(tree, dict) or not isinstance(blobs, list):
            raise ValueError("description and state must be objects, blobs a list")
        state_codec.check_names(tree)  # only hopsim's classes and messages, before anything is built
        blobs = [base64.b64decode(b, validate=True) for b in blobs]
        pending = _Pending(tree, blobs)
        state = {key: value for key, value in tree.items() if key not in _ENCODED_IN_ORDER}
        state.update(pending.kernel_parts(state_codec.Decoder(blobs)))  # refused here if crafted
        for key in ("islands", "models"):
            if not isinstance(tree.get(key), dict):
                raise ValueError(f"the state has no {key!r}")
        state["islands"] = state["models"] = pending
    except state_codec.StateCodecError as err:
        raise CheckpointError(f"{path}: {err}") from None
    except RecursionError:
        raise CheckpointError(f"{path} is not a readable hopsim checkpoint (its state nests too deep)") from None
    except (ValueError, KeyError, TypeError, zlib.error) as err:
        raise CheckpointError(f"{path} is not a readable hopsim checkpoint ({type(err).__name__}: {err})") from None
    return description, state
