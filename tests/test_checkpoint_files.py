"""Checkpoint files are data: they round-trip every value a snapshot holds, refuse anything that
could run code, and are refused whole when damaged."""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import math
import pickle
import random
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.kernel import state_codec
from hopsim.kernel.checkpoint import MAGIC, CheckpointError, load
from hopsim.kernel.state_codec import StateCodecError, decode, encode
from hopsim.scenarios.runner import resume_run, run_scenario
from hopsim.schemas import Vector3, VehicleState

S = 1_000_000_000


def roundtrip(value, template=None):
    tree, blobs = encode(value)
    text = json.dumps(tree, allow_nan=False)  # what a file holds: strict JSON
    return decode(json.loads(text), blobs, template)


def same(a, b) -> bool:
    """Equal values of equal types (floats bit for bit, so -0.0 != 0.0 and nan == nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple, collections.deque)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
arrays = st.builds(
    lambda vals, dt: np.array(vals).astype(dt),
    st.lists(st.integers(min_value=0, max_value=255) | st.floats(width=32), max_size=6),
    st.sampled_from(["<f8", "<f4", "<i8", "<u1", ">f8"]),
)
values = st.recursive(
    scalars | arrays,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=4),
    ),
    max_leaves=20,
)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # nan and inf cast to integers
@settings(max_examples=150, deadline=None)
@given(values)
def test_any_plain_value_round_trips_exactly(value):
    assert same(roundtrip(value), value)


def test_shared_references_stay_shared_and_special_values_survive():
    shared = [1.0, -0.0]
    arr = np.arange(6.0).reshape(2, 3)
    msg = VehicleState(vehicle="sph1", t_ns=5)
    msg.r_BN_N.CopyFrom(Vector3(x=-0.0, y=math.nan, z=math.inf))
    value = {
        "a": shared,
        "b": shared,
        "arr": arr,
        "view_again": arr,
        "msg": msg,
        "t": (shared, 3),
        "set": {"b", "a"},
        "dq": collections.deque([1, 2], maxlen=3),
        "rng": np.random.default_rng(7),
        "scalar": np.float64(2.5),
    }
    back = roundtrip(value)
    assert back["a"] is back["b"] and back["t"][0] is back["a"]
    assert back["arr"] is back["view_again"] and same(back["arr"], arr)
    assert back["msg"].SerializeToString(deterministic=True) == msg.SerializeToString(deterministic=True)
    assert back["set"] == {"a", "b"} and back["dq"].maxlen == 3 and list(back["dq"]) == [1, 2]
    assert back["rng"].standard_normal() == np.random.default_rng(7).standard_normal()
    assert type(back["scalar"]) is np.float64 and back["scalar"] == 2.5


def test_sets_encode_alike_whatever_their_order():
    a, b = {"x", "y", "zz", "w"}, set()
    for item in ["zz", "w", "y", "x"]:
        b.add(item)
    assert state_codec.canonical_json(encode(a)[0]) == state_codec.canonical_json(encode(b)[0])


def test_functions_come_from_the_rebuilt_scenario_never_from_the_file():
    def guard():
        return True

    def rebuilt_guard():
        return False

    tree, blobs = encode({"fsm": [guard]})
    assert decode(tree, blobs, {"fsm": [rebuilt_guard]})["fsm"][0] is rebuilt_guard
    with pytest.raises(StateCodecError, match=r"state\['fsm'\]\[0\].*function"):
        decode(tree, blobs, None)


@pytest.mark.parametrize(
    "node, what",
    [
        ({"object": ["os", "system", []]}, "not one of hopsim's"),
        ({"object": ["subprocess", "Popen", []]}, "not one of hopsim's"),
        ({"object": ["hopsim.cli", "main", []]}, "not a class"),
        ({"pydantic": ["builtins", "eval", {"dict": []}]}, "not one of hopsim's"),
        ({"type": ["importlib", "import_module"]}, "not one of hopsim's"),
        ({"message": ["google.protobuf.Any", ""]}, "no protobuf message type"),
        ({"array": ["|O", [1], 0]}, "object arrays are refused"),
        ({"builtin_type": "eval"}, "refused"),
        ({"generator": ["eval", {"dict": []}]}, "unknown bit generator"),
        ({"ref": 99}, "before it is complete"),
        ({"array": ["<f8", [2], 5]}, "data block"),
    ],
)
def test_crafted_entries_are_refused(node, what):
    with pytest.raises(StateCodecError, match=what):
        decode(node, [b"\0" * 8])


def write_checkpoint(path, document: dict) -> None:
    """A checkpoint file made by hand, with a correct header and checksum."""
    text = json.dumps(document).encode()
    body = zlib.compress(text)
    header = {
        "format": "hopsim-checkpoint-2",
        "body_bytes": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "json_bytes": len(text),
    }
    path.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + body)


class _RunsCode:
    def __reduce__(self):
        import os

        return (os.system, ("touch HACKED",))


def test_a_checkpoint_that_would_run_code_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = tmp_path / "old.ckpt"
    old.write_bytes(pickle.dumps({"description": {}, "state": _RunsCode()}))
    with pytest.raises(CheckpointError, match="pickle, which can run code"):
        load(old)
    crafted = tmp_path / "crafted.ckpt"
    write_checkpoint(
        crafted,
        {
            "description": {"scenario": "lander"},
            "blobs": [],
            "state": {
                "format": "hopsim-checkpoint-2",
                "t_ns": 0,
                "islands": {"object": ["os", "system", [["x", "touch HACKED"]]]},
                "models": {"dict": []},
            },
        },
    )
    with pytest.raises(CheckpointError, match="not one of hopsim's"):
        load(crafted)
    assert not (tmp_path / "HACKED").exists()


@pytest.fixture(scope="module")
def lander_checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpt")
    full = run_scenario(
        "lander",
        {"stop_on_touchdown": False},
        seed=4,
        duration_s=20.0,
        keep_stream=True,
        checkpoint_every_s=10.0,
        checkpoint_dir=directory,
        progress=False,
    )
    files = sorted(directory.glob("lander_*.ckpt"))
    assert len(files) == 1
    return full, files[0]


def test_a_resumed_checkpoint_file_gives_the_uninterrupted_stream(lander_checkpoint):
    full, path = lander_checkpoint
    assert path.read_bytes().startswith(MAGIC)
    resumed = resume_run(path, keep_stream=True, progress=False)
    after = [e.to_bytes() for e in full.recorder.envelopes if e.t_ns > 10 * S]
    assert len(after) > 100 and resumed.recorder.stream_bytes() == after


def test_every_damaged_byte_is_refused_whole(lander_checkpoint, tmp_path):
    _, path = lander_checkpoint
    data = path.read_bytes()
    rnd = random.Random(20)
    damaged = tmp_path / "damaged.ckpt"
    offsets = sorted(rnd.sample(range(len(data)), 40))
    for offset in offsets:
        flipped = bytearray(data)
        flipped[offset] ^= 1 << rnd.randrange(8)
        damaged.write_bytes(bytes(flipped))
        with pytest.raises(CheckpointError):
            load(damaged)
    for cut in [*sorted(rnd.sample(range(len(data)), 20)), 0]:
        damaged.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match=r"empty|damaged|truncated|header|not a readable"):
            load(damaged)


def test_checkpoint_files_are_written_whole_with_no_temporary_left(lander_checkpoint):
    _, path = lander_checkpoint
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []
    header = json.loads(path.read_bytes()[len(MAGIC) :].split(b"\n", 1)[0])
    assert header["format"] == "hopsim-checkpoint-2"
    body = zlib.decompress(path.read_bytes()[len(MAGIC) :].split(b"\n", 1)[1])
    document = json.loads(body)
    assert len(body) == header["json_bytes"] and set(document) == {"description", "state", "blobs"}
    blobs = [base64.b64decode(b, validate=True) for b in document["blobs"]]
    sizes = {}  # each blob is whole: the bytes of the array (or number) that refers to it

    def walk(node):
        if isinstance(node, dict):
            if "array" in node and isinstance(node["array"], list):
                descr, shape, index = node["array"]
                sizes[index] = np.lib.format.descr_to_dtype(descr).itemsize * math.prod(shape)
            elif "scalar" in node and isinstance(node["scalar"], list):
                descr, index = node["scalar"]
                sizes[index] = np.lib.format.descr_to_dtype(descr).itemsize
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document["state"])
    assert sorted(sizes) == list(range(len(blobs))) and [len(b) for b in blobs] == [sizes[i] for i in range(len(blobs))]


def test_a_checkpoint_of_other_versions_or_a_bad_description_is_refused(lander_checkpoint, tmp_path):
    from hopsim.kernel import checkpoint

    _, path = lander_checkpoint
    description, _ = load(path)
    doc = json.loads(zlib.decompress(path.read_bytes()[len(MAGIC) :].split(b"\n", 1)[1]))
    for change, message in [
        ({"versions": {**description["versions"], "numpy": "1.0.0"}}, "numpy 1.0.0 there"),
        ({"duration_s": -1.0}, r"duration must lie in \[1e-09, 1e\+09\] s"),
        ({"seed": 2**128}, r"seed must be an integer in \[0, 2\*\*128 - 1\]"),
        ({"seed": "3"}, "'seed'"),
        ({"scenario": None}, "'scenario'"),
    ]:
        other = tmp_path / "other.ckpt"
        write_checkpoint(other, {**doc, "description": {**description, **change}})
        with pytest.raises(checkpoint.CheckpointError, match=message):
            resume_run(other, progress=False)


def test_final_state_hash_is_the_same_whatever_pythonhashseed(tmp_path):
    """A SPHERES run's snapshots hold sets and parameter models; their hash must not follow the
    per-process string hashing."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; from hopsim.scenarios.runner import run_scenario; from hopsim.bus import read_metadata;"
        "run_scenario('leader_follower', {}, duration_s=2, out=sys.argv[1]);"
        "print(read_metadata(sys.argv[1])['hopsim.result']['final_state_sha256'])"
    )
    hashes = set()
    for seed in ("1", "2", "12345"):
        out = tmp_path / f"run{seed}.mcap"
        done = subprocess.run(
            [sys.executable, "-c", code, str(out)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 0, done.stderr
        hashes.add(done.stdout.strip())
    assert len(hashes) == 1 and len(hashes.pop()) == 64


def test_the_state_hash_reads_the_models_own_objects_and_hashes_what_their_copies_would(monkeypatch):
    """state_hash encodes the models' state as it is (``checkpoint.capture(copied=False)``) where
    a model keeps Model.snapshot, and asks a model that overrides it: the trees are those of the
    copied snapshots, fleet rows (views into a fleet's arrays) included."""
    from hopsim.actors.orbit_formation import SlotKeeper
    from hopsim.kernel import checkpoint
    from hopsim.kernel.model import Model

    asked = []

    def own_snapshot(self):
        asked.append(self.name)
        return Model.snapshot(self)

    monkeypatch.setattr(SlotKeeper, "snapshot", own_snapshot)  # a model with a snapshot of its own
    sim = run_scenario("orbit_formation", {"n_vehicles": 3}, duration_s=60.0, keep_sim=True).sim
    asked.clear()
    read = checkpoint.capture(sim, allow_contact=True, copied=False)
    kept = checkpoint.capture(sim, allow_contact=True)
    assert sorted(asked) == sorted(2 * ["d0_fsw", "d1_fsw", "d2_fsw"])  # once per capture: its own method
    in_place = [
        name
        for name, snap in read["models"].items()
        if any(v is getattr(sim.model(name), k) for k, v in snap[0].items())
    ]
    assert len(in_place) > 10  # read in place, not copied
    for name in kept["models"]:
        (tree_read, blobs_read), (tree_kept, blobs_kept) = (
            encode(read["models"][name], name),
            encode(kept["models"][name], name),
        )
        assert state_codec.canonical_json(tree_read) == state_codec.canonical_json(tree_kept), name
        assert blobs_read == blobs_kept, name
