"""Crafted checkpoints, with a valid checksum, are restored or refused with hopsim's own error,
never another exception, in bounded time and memory.

A checkpoint's state is decoded against the rebuilt scenario's (each model's snapshot against the
freshly built model's own): a model is given no attribute it lacks and no value of another kind
than the one it holds; sizes and decoding work are bounded; how many checkpoints a resumed run
writes is the user's choice, not the file's. The fuzz test (hypothesis) crafts and mutates real
checkpoints of two scenarios; ``make test`` runs 50 examples, ``make fuzz`` many more
(``HOPSIM_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hopsim.cli import app
from hopsim.kernel import checkpoint, state_codec
from hopsim.kernel.checkpoint import MAGIC, MAX_JSON_BYTES, CheckpointError
from hopsim.kernel.distributed import make_runtime
from hopsim.kernel.kind import Field, Kind
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.runner import ScenarioRun, check_description, resume_run, run_scenario

FUZZ_EXAMPLES = int(os.environ.get("HOPSIM_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=10_000,  # ms per example: well under a second each on an idle machine
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=FUZZ_EXAMPLES <= 50,  # make test: the same examples every run; make fuzz: new ones
)
SECONDS = 5.0  # the longest a crafted checkpoint may take to be restored or refused
runner = CliRunner()


# ------------------------------------------------------------------------------- files
def read_document(path: Path) -> dict:
    return json.loads(zlib.decompress(path.read_bytes()[len(MAGIC) :].split(b"\n", 1)[1]))


def write_checkpoint(path: Path, document: dict | bytes, json_bytes: int | None = None) -> Path:
    """A checkpoint file with a correct header and checksum, as :func:`checkpoint.save` makes
    them (``json_bytes``: what the header claims the body inflates to, if not the truth)."""
    text = document if isinstance(document, bytes) else json.dumps(document).encode()
    body = zlib.compress(text, 6)
    header = {
        "format": checkpoint.FORMAT,
        "body_bytes": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "json_bytes": len(text) if json_bytes is None else json_bytes,
    }
    path.write_bytes(MAGIC + json.dumps(header, sort_keys=True).encode("ascii") + b"\n" + body)
    return path


def restore(path: Path, times: int = 1):
    """Load ``path`` and restore it into its rebuilt scenario (``times`` over), as ``hopsim
    resume`` does before it runs on; the restored simulation."""
    description, state = checkpoint.load(path)
    check_description(description, path)
    spec = get_scenario(description["scenario"])
    params = spec.make_params(description["overrides"])
    for _ in range(times):
        run = ScenarioRun(spec, params, description["seed"], make_runtime("local"), None, None, False, None)
        sim = run.build(state)
    return sim


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """A checkpoint of the lander (plain attributes, messages, a log) and of two SPHERES (objects,
    data classes, deques, parameter models), each 1 s into its run."""
    directory = tmp_path_factory.mktemp("crafted")
    found = {}
    for name in ("lander", "leader_follower"):
        run_scenario(name, {}, seed=1, duration_s=2.0, checkpoint_every_s=1.0, checkpoint_dir=directory)
        (found[name],) = directory.glob(f"{name}_*.ckpt")
    return found


def changed(path: Path, tmp_path: Path, change) -> Path:
    """A copy of checkpoint ``path`` whose document ``change`` edited in place."""
    document = read_document(path)
    change(document)
    return write_checkpoint(tmp_path / "crafted.ckpt", document)


def model_attributes(document: dict, model: str) -> list:
    """The [name, value] pairs of ``model``'s attributes in a checkpoint's document."""
    for name, snapshot in document["state"]["models"]["dict"]:
        if name == model:
            return snapshot["tuple"][0]["dict"]
    raise KeyError(model)


def set_attribute(document: dict, model: str, attribute: str, node) -> None:
    pairs = model_attributes(document, model)
    for pair in pairs:
        if pair[0] == attribute:
            pair[1] = node
            return
    pairs.append([attribute, node])


# ------------------------------------------------------------------------------- attributes
def test_the_intact_checkpoints_restore(checkpoints):
    for path in checkpoints.values():
        assert restore(path, times=2).now == 1_000_000_000  # a loaded state restores again


def test_an_attribute_the_model_lacks_is_refused(checkpoints, tmp_path):
    path = changed(checkpoints["lander"], tmp_path, lambda d: set_attribute(d, "controller", "log", {"list": []}))
    with pytest.raises(CheckpointError, match=r"model 'controller', attribute 'log': the rebuilt scenario has no such"):
        restore(path)
    # nor a framework attribute, nor a name given twice
    for name in ("ctx", "__class__", "row"):
        path = changed(
            checkpoints["lander"], tmp_path, lambda d, n=name: model_attributes(d, "controller").append([n, None])
        )
        with pytest.raises(CheckpointError, match=r"model 'controller', attribute"):
            restore(path)


def test_an_object_of_another_class_than_the_model_holds_is_refused(checkpoints, tmp_path, monkeypatch):
    """The crafted state that made a run append to a campaign's files: a hopsim object of another
    class (with an ``append``) where the model holds a list."""
    monkeypatch.chdir(tmp_path)
    campaign = {"object": ["hopsim.scenarios.montecarlo", "CampaignDirectory", [["path", {"bytes": ""}]]]}
    for model, attribute, expected in [
        ("ground_station", "arrivals_ns", "expected a list"),
        ("ground_station", "last", "plain data"),  # None in the fresh model: plain data only
        ("body", "h0", "expected a number"),
    ]:
        path = changed(
            checkpoints["lander"], tmp_path, lambda d, m=model, a=attribute: set_attribute(d, m, a, campaign)
        )
        with pytest.raises(CheckpointError, match=rf"model '{model}', attribute '{attribute}': holds a hopsim"):
            restore(path)
        with pytest.raises(CheckpointError, match=expected):
            restore(path)
    assert list(tmp_path.iterdir()) == [tmp_path / "crafted.ckpt"]


def test_a_value_of_another_kind_is_refused_naming_the_place_and_what_was_expected(checkpoints, tmp_path):
    scalar = {"message": ["hopsim.Scalar", ""]}
    for scenario, model, attribute, node, expected in [
        ("lander", "body", "h0", "1.5", "holds a string; expected a number"),
        ("leader_follower", "sph1_thrusters", "firing", 0, "holds an integer; expected a bool"),
        ("lander", "ground_station", "arrivals_ns", {"tuple": []}, "holds a tuple; expected a list"),
        (
            "lander",
            "body",
            "io_schedule",
            {"object": ["hopsim.kernel.model", "NoIo", []]},
            "holds a hopsim.kernel.model.NoIo; expected a hopsim.kernel.model.FixedRate",
        ),
    ]:
        path = changed(
            checkpoints[scenario], tmp_path, lambda d, m=model, a=attribute, n=node: set_attribute(d, m, a, n)
        )
        with pytest.raises(CheckpointError, match=rf"model '{model}', attribute '{attribute}': {expected}"):
            restore(path)

    def port_message(document):  # a port of hopsim.VehicleState given a Scalar
        for name, snapshot in document["state"]["models"]["dict"]:
            if name == "altimeter":
                ports = snapshot["tuple"][1]["dict"]
                ports[0][1]["tuple"][0] = scalar

    with pytest.raises(
        CheckpointError, match=r"model 'altimeter', port 'state', message: .*hopsim.Scalar.*VehicleState"
    ):
        restore(changed(checkpoints["lander"], tmp_path, port_message))


def test_a_kind_row_is_of_its_kind_and_shape():
    """A model kind's state is one structured row: another dtype or shape is refused."""
    kind = Kind(Field("force_N", shape=(3,)), Field("hops", "i8"))
    template = state_codec.Parts(("", state_codec.Record({"row": kind.rows(1)}, "attribute")))
    for value, expected in [
        (kind.rows(2), r"and shape \(2,\); expected a numpy array of dtype .* of shape \(1,\)"),
        (np.zeros(1, [("force_N", "<f8", (3,))]), "expected a numpy array of dtype"),
        (np.zeros(1), "expected a numpy array of dtype"),
    ]:
        tree, blobs = state_codec.encode(({"row": value},))
        with pytest.raises(state_codec.StateCodecError, match=rf"model 'm', attribute 'row': holds a .*{expected}"):
            state_codec.Decoder(blobs).decode_against(tree, "model 'm'", template)
    tree, blobs = state_codec.encode(({"row": kind.rows(1)},))
    (own,) = state_codec.Decoder(blobs).decode_against(tree, "model 'm'", template)
    assert own["row"].dtype == kind.dtype and own["row"].shape == (1,)


def test_a_model_refers_to_no_value_of_another_part(checkpoints, tmp_path):
    """A reference from a model's snapshot to a value decoded in the kernel's parts (an island's
    integrator) is refused: a snapshot is its own."""

    def refer(document):
        integrator = document["state"]["islands"]["dict"][0][1]["dict"]
        node = next(v for k, v in integrator if k == "integrator")
        set_attribute(document, "body", "h0", {"ref": node["id"]})

    with pytest.raises(CheckpointError, match="belongs to another part of the state"):
        restore(changed(checkpoints["lander"], tmp_path, refer))


# ------------------------------------------------------------------------------- sizes and work
def test_a_body_that_claims_or_inflates_to_too_much_is_refused_before_it_is_inflated(checkpoints, tmp_path):
    text = json.dumps(read_document(checkpoints["lander"])).encode()
    zeros = zlib.compress(bytes(2 << 20), 9)  # 2 MiB of zeros in about 2 KB
    path = tmp_path / "big.ckpt"
    for claimed, message in [
        (2 << 30, "holds at most"),  # the 2 GiB a crafted body once inflated to
        (MAX_JSON_BYTES + 1, "holds at most"),
        (200 << 20, "more than its .*-byte body can inflate to"),  # deflate's ratio is at most ~1032
    ]:
        header = {
            "format": checkpoint.FORMAT,
            "body_bytes": len(zeros),
            "body_sha256": hashlib.sha256(zeros).hexdigest(),
            "json_bytes": claimed,
        }
        path.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + zeros)
        t0 = time.perf_counter()
        with pytest.raises(CheckpointError, match=message):
            checkpoint.load(path)
        assert time.perf_counter() - t0 < 1.0
    # a body that inflates to more than its header claims is cut there, and refused
    with pytest.raises(CheckpointError, match="does not inflate to the size the header gives"):
        checkpoint.load(write_checkpoint(path, text, json_bytes=len(text) // 2))


@pytest.mark.parametrize(
    "state, message",
    [
        ("[" * 100_000 + "]" * 100_000, "nests too deep|not an object"),
        (json.dumps(100_000 * [{"list": None}]), "not a readable"),
    ],
)
def test_deep_or_wide_json_is_refused(tmp_path, state, message):
    text = ('{"description": {}, "blobs": [], "state": ' + state + "}").encode()
    with pytest.raises(CheckpointError, match=message):
        checkpoint.load(write_checkpoint(tmp_path / "deep.ckpt", text))


def test_decoding_work_is_bounded():
    deep = {"list": []}
    for _ in range(state_codec.MAX_DEPTH + 5):
        deep = {"list": [deep]}
    with pytest.raises(state_codec.StateCodecError, match="nests deeper"):
        state_codec.Decoder([]).decode_against(deep, "x", state_codec.FREE)
    for _ in range(state_codec.MAX_DEPTH + 5):
        deep = {"list": [deep]}  # (a level of the tree is up to four of JSON)
    with pytest.raises(state_codec.StateCodecError, match="nests deeper"):
        state_codec.check_names(deep)
    wide = {"list": [0] * (state_codec.MAX_ITEMS + 1)}
    with pytest.raises(state_codec.StateCodecError, match="at most 1,000,000"):
        state_codec.Decoder([]).decode_against(wide, "x", state_codec.FREE)
    # integers that hash alike (n * (2**61 - 1)) would make a set of them quadratic to build
    colliding = {"set": [k * (2**61 - 1) for k in range(1, 50_000)]}
    t0 = time.perf_counter()
    with pytest.raises(state_codec.StateCodecError, match="lies outside"):
        state_codec.Decoder([]).decode_against(colliding, "x", state_codec.FREE)
    assert time.perf_counter() - t0 < 1.0


# ------------------------------------------------------------------------------- how many files
def test_a_resumed_run_writes_the_checkpoints_the_user_asks_for_not_those_the_file_names(checkpoints, tmp_path):
    """The file's period (here one checkpoint per 100 ms) is that of the run that wrote it: a
    resume writes none unless asked, and then at the period asked."""

    def often(document):
        document["description"]["checkpoint_every_s"] = 0.1

    path = changed(checkpoints["lander"], tmp_path, often)
    written = tmp_path / "written"
    resume_run(path, duration_s=3.0, checkpoint_dir=written)
    assert not written.exists() or not list(written.iterdir())
    resume_run(path, duration_s=3.0, checkpoint_dir=written, checkpoint_every_s=1.0)
    assert sorted(p.name for p in written.glob("*.ckpt")) == ["lander_t00000002.000000000.ckpt"]
    res = runner.invoke(app, ["resume", str(path), "--duration", "3", "--checkpoint-every", "0.5", "--no-progress"])
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in tmp_path.glob("lander_*.ckpt"))
    assert names == [
        "lander_t00000001.500000000.ckpt",
        "lander_t00000002.000000000.ckpt",
        "lander_t00000002.500000000.ckpt",
    ]


# ------------------------------------------------------------------------------- fuzz
def _paths(node, path=()):
    """Every place in a JSON document (the paths of its values)."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*path, i))


def _deep(levels: int):
    node = {"list": []}
    for _ in range(levels):
        node = {"list": [node]}
    return node


_HOSTILE = [
    None,
    True,
    -1,
    2**64,
    10**30,
    "x",
    1.5,
    [],
    {},
    [1, 2, 3],
    {"zz": 1},
    {"object": ["hopsim.scenarios.montecarlo", "CampaignDirectory", [["path", "."]]]},
    {"object": ["os", "system", []]},
    {"object": ["hopsim.actors.spheres.pose_solver", "PoseFix", [["evil", 1]]]},
    {"object": ["hopsim.kernel.model", "Model", [["__class__", {"type": ["hopsim.kernel.model", "Model"]}]]]},
    {"named_tuple": ["hopsim.kernel.model", "Memo", []]},
    {"pydantic": ["hopsim.scenarios.lander", "LanderParams", {"dict": [["h0", {"f": "0x1p+2000"}]]}]},
    {"type": ["hopsim.scenarios.montecarlo", "CampaignDirectory"]},
    {"builtin_type": "eval"},
    {"message_type": "hopsim.Scalar"},
    {"function": "print"},
    {"ref": 0},
    {"ref": 10**9},
    {"ref": [1]},
    {"id": 0, "list": []},
    {"id": "x", "list": []},
    {"array": ["<f8", [10**9], 0]},
    {"array": ["|O", [1], 0]},
    {"array": [[["a", [["b", "<f8", [10**6]]]]], [1], 0]},
    {"array": ["<f8", [-1], 0]},
    {"array": ["<U1000000000", [1], 0]},
    {"scalar": ["<f8", 10**6]},
    {"bytes": "***"},
    {"f": "zz"},
    {"f": "nan"},
    {"f": 1},
    {"message": ["hopsim.VehicleState", base64.b64encode(b"\xff" * 40).decode()]},
    {"message": ["hopsim.VehicleState", base64.b64encode(b"\x1a\x7f" * 60).decode()]},
    {"message": ["google.protobuf.Any", ""]},
    {"message": "x"},
    {"dict": [[{"list": []}, 1]]},
    {"dict": [[1, 2, 3]]},
    {"dict": "ab"},
    {"dict": [[{"f": "nan"}, 1]]},
    {"set": [{"list": []}]},
    {"set": [2**70]},
    {"deque": [], "maxlen": -1},
    {"deque": [1], "maxlen": 10**30},
    {"generator": ["PCG64", {"dict": [["state", 1]]}]},
    {"generator": ["eval", None]},
    {"tuple": "abc"},
    {"list": "abc"},
    {"list": [[1]]},
    {"unknown": 1},
    _deep(150),
    _deep(20),
]
_MUTATION = st.one_of(
    st.tuples(st.just("replace"), st.integers(0, 10**6), st.sampled_from(range(len(_HOSTILE)))),
    st.tuples(st.just("swap"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("drop"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("number"), st.integers(0, 10**6), st.sampled_from([-1, 0, 2**63, -(2**63) - 1, 10**20])),
    st.tuples(st.just("bytes"), st.integers(0, 10**6), st.integers(0, 255)),
)


def _mutate(document: dict, text: bytes, mutation) -> dict | bytes:
    kind, where, arg = mutation
    if kind == "bytes":  # the JSON text itself, one byte changed
        at = where % len(text)
        return text[:at] + bytes([arg]) + text[at + 1 :]
    paths = [p for p in _paths(document["state"]) if p]
    path = paths[where % len(paths)]
    parent = document["state"]
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    if kind == "replace":
        parent[key] = json.loads(json.dumps(_HOSTILE[arg]))
    elif kind == "swap":
        other = paths[arg % len(paths)]
        node = document["state"]
        for step in other:
            node = node[step]
        parent[key] = json.loads(json.dumps(node))
    elif kind == "drop":
        del parent[key]
    elif isinstance(parent[key], int) and not isinstance(parent[key], bool):
        parent[key] = arg
    return document


@FUZZ
@given(
    scenario=st.sampled_from(["lander", "leader_follower"]),
    mutations=st.lists(_MUTATION, min_size=1, max_size=3),
)
def test_crafted_checkpoints_restore_or_are_refused(checkpoints, tmp_path, scenario, mutations):
    original = read_document(checkpoints[scenario])
    document: dict | bytes = original
    for mutation in mutations:
        if isinstance(document, bytes):
            break
        text = json.dumps(document).encode()
        document = _mutate(json.loads(text), text, mutation)
    path = write_checkpoint(tmp_path / "fuzzed.ckpt", document)
    t0 = time.perf_counter()
    try:
        restore(path)
    except CheckpointError as err:
        assert str(err)
    except ValueError as err:  # a scenario's own refusal of its parameters (ScenarioError)
        assert type(err).__name__ == "ScenarioError" and str(err)
    assert time.perf_counter() - t0 < SECONDS


def test_hopsim_resume_refuses_a_crafted_checkpoint_without_a_traceback(checkpoints, tmp_path):
    campaign = {"object": ["hopsim.scenarios.montecarlo", "CampaignDirectory", [["path", "."]]]}
    path = changed(
        checkpoints["lander"], tmp_path, lambda d: set_attribute(d, "ground_station", "arrivals_ns", campaign)
    )
    res = runner.invoke(app, ["resume", str(path), "--no-progress"])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "attribute 'arrivals_ns': holds a hopsim.scenarios.montecarlo" in text, text
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit))
