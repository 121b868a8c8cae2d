"""Typed rows (hopsim.schemas.rows) and their encoder (hopsim.schemas.wire) against protobuf itself.

Every message type of hopsim's schemas, found from the *_pb2 modules (a new schema is covered
without editing this file), and a test-only schema with every scalar type, proto3 ``optional``,
``oneof``, unpacked repeated fields, maps of every key kind and a field number of the largest size:
random messages -> rows -> encoder bytes must equal ``SerializeToString(deterministic=True)``, and
the rows must give the messages back.
"""

from __future__ import annotations

import functools
import importlib
import math
import pkgutil

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hopsim.schemas
from hopsim.schemas import (
    Envelope,
    JointStates,
    KernelEvent,
    Quaternion,
    RunMetadata,
    Scalar,
    Vector3,
    VehicleState,
    Wrench,
)
from hopsim.schemas.rows import DEFAULT_CAPACITY, StringTable, row_dtype, row_layout
from hopsim.schemas.spheres_pb2 import ValveState, ValveSwitch


def hopsim_message_types():
    """Every top-level message type of hopsim's *_pb2 modules."""
    found = []
    for info in pkgutil.iter_modules(hopsim.schemas.__path__):
        if info.name.endswith("_pb2"):
            module = importlib.import_module(f"hopsim.schemas.{info.name}")
            found += module.DESCRIPTOR.message_types_by_name.values()
    return sorted(found, key=lambda d: d.full_name)


# -- a test-only schema: what hopsim's schemas do not use yet ----------------------------------------
_SCALARS = [
    ("double", FD.TYPE_DOUBLE),
    ("float", FD.TYPE_FLOAT),
    ("int64", FD.TYPE_INT64),
    ("uint64", FD.TYPE_UINT64),
    ("int32", FD.TYPE_INT32),
    ("fixed64", FD.TYPE_FIXED64),
    ("fixed32", FD.TYPE_FIXED32),
    ("bool", FD.TYPE_BOOL),
    ("string", FD.TYPE_STRING),
    ("bytes", FD.TYPE_BYTES),
    ("uint32", FD.TYPE_UINT32),
    ("enum", FD.TYPE_ENUM),
    ("sfixed32", FD.TYPE_SFIXED32),
    ("sfixed64", FD.TYPE_SFIXED64),
    ("sint32", FD.TYPE_SINT32),
    ("sint64", FD.TYPE_SINT64),
]
_MAPS = [
    ("int32", "string"),
    ("uint64", "double"),
    ("bool", "int32"),
    ("sint64", "message"),
    ("string", "bytes"),
    ("fixed32", "enum"),
    ("sfixed64", "float"),
    ("int64", "sint32"),
]
_PKG = "hopsim_rows_test"


def _test_schema():
    """The test-only schema's message descriptors, in a pool of their own."""
    f = descriptor_pb2.FileDescriptorProto(name="hopsim_rows_test.proto", package=_PKG, syntax="proto3")
    color = f.enum_type.add(name="Color")
    for name, number in [("RED", 0), ("GREEN", 1), ("NEGATIVE", -3)]:
        color.value.add(name=name, number=number)
    types = dict(_SCALARS)

    def add(message, name, number, type_name, label=FD.LABEL_OPTIONAL):
        field = message.field.add(name=name, number=number, label=label)
        if type_name == "message":
            field.type, field.type_name = FD.TYPE_MESSAGE, f".{_PKG}.Inner"
        else:
            field.type = types[type_name]
            if type_name == "enum":
                field.type_name = f".{_PKG}.Color"
        return field

    leaf = f.message_type.add(name="Leaf")
    add(leaf, "x", 1, "double")
    inner = f.message_type.add(name="Inner")
    add(inner, "a", 1, "int32")
    add(inner, "vals", 2, "sint32", FD.LABEL_REPEATED)
    inner.field.add(name="leaf", number=3, label=FD.LABEL_OPTIONAL, type=FD.TYPE_MESSAGE, type_name=f".{_PKG}.Leaf")
    node = f.message_type.add(name="Node")  # contains itself: no fixed row layout
    node.field.add(name="next", number=1, label=FD.LABEL_OPTIONAL, type=FD.TYPE_MESSAGE, type_name=f".{_PKG}.Node")

    m = f.message_type.add(name="AllTypes")
    number = 1
    for name, _ in _SCALARS:
        add(m, f"s_{name}", number, name)
        add(m, f"r_{name}", number + 1, name, FD.LABEL_REPEATED)
        number += 2
    for name in ["double", "float", "int32", "string", "bool", "sint64", "enum", "bytes"]:
        m.oneof_decl.add(name=f"_o_{name}")  # proto3 optional: a synthetic oneof of one field
        field = add(m, f"o_{name}", number, name)
        field.proto3_optional, field.oneof_index = True, len(m.oneof_decl) - 1
        number += 1
    for name in ["int32", "double", "sint64", "bool"]:
        add(m, f"u_{name}", number, name, FD.LABEL_REPEATED).options.packed = False
        number += 1
    add(m, "inner", number, "message")
    add(m, "inners", number + 1, "message", FD.LABEL_REPEATED)
    number += 2
    for key, value in _MAPS:
        entry = m.nested_type.add(name=f"M{key.title()}{value.title()}Entry")
        entry.options.map_entry = True
        add(entry, "key", 1, key)
        add(entry, "value", 2, value)
        m.field.add(
            name=f"m_{key}_{value}",
            number=number,
            label=FD.LABEL_REPEATED,
            type=FD.TYPE_MESSAGE,
            type_name=f".{_PKG}.AllTypes.{entry.name}",
        )
        number += 1
    add(m, "far", 536_870_911, "int64")  # the largest field number: a 5-byte tag
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {name: pool.FindMessageTypeByName(f"{_PKG}.{name}") for name in ["AllTypes", "Inner", "Leaf", "Node"]}


def _oneof_schema():
    """A message with a oneof (of its own: a real oneof must come before the synthetic oneofs of the
    proto3 optionals in AllTypes)."""
    f = descriptor_pb2.FileDescriptorProto(name="hopsim_rows_oneof.proto", package=f"{_PKG}_oneof", syntax="proto3")
    choice = f.message_type.add(name="Choice")
    choice.oneof_decl.add(name="choice")
    members = [("c_int32", FD.TYPE_INT32), ("c_string", FD.TYPE_STRING), ("c_double", FD.TYPE_DOUBLE)]
    for number, (name, type_) in enumerate(members, start=1):
        choice.field.add(name=name, number=number, label=FD.LABEL_OPTIONAL, type=type_, oneof_index=0)
    choice.field.add(name="tail", number=4, label=FD.LABEL_OPTIONAL, type=FD.TYPE_SINT32)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return pool.FindMessageTypeByName(f"{_PKG}_oneof.Choice")


TEST_SCHEMA = _test_schema()
CHOICE = _oneof_schema()


# -- random messages from a descriptor ------------------------------------------------------------------
_INT_RANGES = {
    FD.TYPE_INT32: 32,
    FD.TYPE_SINT32: 32,
    FD.TYPE_SFIXED32: 32,
    FD.TYPE_INT64: 64,
    FD.TYPE_SINT64: 64,
    FD.TYPE_SFIXED64: 64,
}
_UINT_RANGES = {FD.TYPE_UINT32: 32, FD.TYPE_FIXED32: 32, FD.TYPE_UINT64: 64, FD.TYPE_FIXED64: 64}
_DOUBLE_EDGES = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, -1.7976931348623157e308]


@functools.cache
def scalar_values(fd):
    """Values of field ``fd``'s type, with its edges (zero, extremes, -0.0, NaN, infinities) often."""
    if fd.type in _INT_RANGES:
        bits = _INT_RANGES[fd.type]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return st.sampled_from([0, -1, 1, lo, hi]) | st.integers(lo, hi)
    if fd.type in _UINT_RANGES:
        hi = (1 << _UINT_RANGES[fd.type]) - 1
        return st.sampled_from([0, 1, 127, 128, hi]) | st.integers(0, hi)
    if fd.type == FD.TYPE_DOUBLE:
        return st.sampled_from(_DOUBLE_EDGES) | st.floats()
    if fd.type == FD.TYPE_FLOAT:
        return st.sampled_from(_DOUBLE_EDGES[:6]) | st.floats(width=32)
    if fd.type == FD.TYPE_BOOL:
        return st.booleans()
    if fd.type == FD.TYPE_ENUM:  # proto3 enums are open: any int32
        return st.sampled_from([v.number for v in fd.enum_type.values]) | st.integers(-(1 << 31), (1 << 31) - 1)
    if fd.type == FD.TYPE_STRING:
        return st.sampled_from(["", "sph1", "véhicule ✈ 🚀"]) | st.text(max_size=6)
    return st.sampled_from([b"", b"\x00", b"\xff\x00\x80"]) | st.binary(max_size=6)


@functools.cache
def messages(descriptor, most=4):
    """Messages of ``descriptor`` with random fields (repeated ones up to ``most`` elements)."""
    return _messages(descriptor, most)


@st.composite
def _messages(draw, descriptor, most):
    msg = message_factory.GetMessageClass(descriptor)()
    for fd in descriptor.fields:
        target = getattr(msg, fd.name) if fd.is_repeated or fd.type == FD.TYPE_MESSAGE else None
        if fd.type == FD.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry:
            key, value = fd.message_type.fields_by_number[1], fd.message_type.fields_by_number[2]
            values = messages(value.message_type) if value.type == FD.TYPE_MESSAGE else scalar_values(value)
            for k, v in draw(st.dictionaries(scalar_values(key), values, max_size=most)).items():
                if value.type == FD.TYPE_MESSAGE:
                    target[k].CopyFrom(v)
                else:
                    target[k] = v
        elif fd.is_repeated:
            element = messages(fd.message_type) if fd.type == FD.TYPE_MESSAGE else scalar_values(fd)
            target.extend(draw(st.lists(element, max_size=most)))
        elif fd.type == FD.TYPE_MESSAGE:
            if draw(st.booleans()):
                target.SetInParent()  # set, even when all its fields stay zero
                target.CopyFrom(draw(messages(fd.message_type)))
        elif draw(st.booleans()):
            setattr(msg, fd.name, draw(scalar_values(fd)))
    return msg


def wire(msg) -> bytes:
    return msg.SerializeToString(deterministic=True)


def round_trip(msgs, capacities=None):
    """Encode ``msgs`` as rows in one call; check the bytes and the messages that come back."""
    layout = row_layout(msgs[0].DESCRIPTOR, capacities)
    strings = StringTable()
    rows = layout.rows_from_messages(msgs, strings)
    assert layout.encode_each(rows, strings) == [wire(m) for m in msgs]
    for msg, row in zip(msgs, rows):
        back = layout.message_from_row(row, strings)
        assert back == msg
        assert wire(back) == wire(msg)
    return layout, rows, strings


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("descriptor", hopsim_message_types(), ids=lambda d: d.full_name)
@settings(max_examples=12, **_SETTINGS)
@given(data=st.data())
def test_random_messages_encode_as_protobuf_does(descriptor, data):
    round_trip(data.draw(st.lists(messages(descriptor), min_size=1, max_size=4)))


@pytest.mark.parametrize(
    "descriptor", [TEST_SCHEMA["AllTypes"], TEST_SCHEMA["Inner"], CHOICE], ids=lambda d: d.full_name
)
@settings(max_examples=30, **_SETTINGS)
@given(data=st.data())
def test_every_field_kind_encodes_as_protobuf_does(descriptor, data):
    round_trip(data.draw(st.lists(messages(descriptor, most=3), min_size=1, max_size=3)))


def test_every_hopsim_type_is_covered():
    names = {d.full_name for d in hopsim_message_types()}
    assert {"hopsim.VehicleState", "hopsim.RunMetadata", "hopsim.ValveState", "hopsim.Envelope"} <= names
    assert len([n for n in names if n.startswith("hopsim.")]) >= 30


# -- edge cases, each against protobuf -------------------------------------------------------------------
def test_negative_zero_is_written_positive_zero_is_not():
    assert wire(Scalar(value=-0.0)) != b""
    assert wire(Scalar(value=0.0)) == b""
    round_trip([Scalar(value=-0.0), Scalar(value=0.0)])
    round_trip([VehicleState(mass=-0.0, r_BN_N=Vector3(y=-0.0))])


def test_nan_and_infinities():
    _layout, rows, _strings = round_trip([Scalar(value=v) for v in [math.nan, -math.nan, math.inf, -math.inf]])
    assert np.isnan(rows["value"][:2]).all() and list(rows["value"][2:]) == [math.inf, -math.inf]
    nan_payload = np.array([0x7FF0000000000001], np.uint64).view(np.float64)[0]  # a signalling NaN
    round_trip([Scalar(value=float(nan_payload))])


def test_empty_repeated_fields_are_left_out():
    _layout, rows, _ = round_trip([JointStates(t_ns=5), JointStates(q=[0.0]), JointStates()])
    assert list(rows["q_count"]) == [0, 1, 0]
    assert wire(JointStates(t_ns=5)) == b"\x08\x05"


def test_unset_and_set_but_zero_submessages_differ():
    unset, zero = Wrench(), Wrench()
    zero.force.SetInParent()
    layout, rows, strings = round_trip([unset, zero, Wrench(force=Vector3(x=0.0), torque=Vector3(z=-0.0))])
    assert list(rows["has_force"]) == [False, True, True]
    assert layout.encode_each(rows[:2], strings) == [b"", b"\x12\x00"]
    assert not layout.message_from_row(rows[0], strings).HasField("force")
    assert layout.message_from_row(rows[1], strings).HasField("force")


def test_integer_extremes():
    i32, i64, u64 = (1 << 31) - 1, (1 << 63) - 1, (1 << 64) - 1
    round_trip(
        [
            Envelope(priority=-1),
            Envelope(priority=-(i32 + 1)),
            Envelope(priority=i32),
            Envelope(t_ns=-(i64 + 1), deliver_ns=i64, seq=u64),
            Envelope(seq=1 << 63),
        ]
    )
    round_trip([KernelEvent(kind=-7), KernelEvent(kind=KernelEvent.UNDOCK)])
    round_trip([RunMetadata(seed=u64)])
    assert len(wire(Envelope(priority=-1))) == 11  # tag + a negative int32 sign-extended to 10 bytes


def test_strings_empty_non_ascii_and_shared():
    msgs = [
        VehicleState(vehicle=""),
        VehicleState(vehicle="véhicule ✈ 🚀"),
        VehicleState(vehicle="sph1"),
        VehicleState(vehicle="sph1", t_ns=1),
        Envelope(payload=b"\x00\xff" * 40, topic="é/state"),
    ]
    round_trip(msgs[:4])
    round_trip(msgs[4:])
    layout = row_layout(VehicleState)
    strings = StringTable()
    rows = layout.rows_from_messages([VehicleState(vehicle="sph1")] * 100, strings)
    assert len(strings) == 2 and set(rows["vehicle"]) == {1}  # "" and "sph1": each value once


def test_maps_and_repeated_submessages():
    meta = RunMetadata(scenario="s", versions={"numpy": "2.4", "": "", "Zeta": "1", "é": "x", "hopsim": "0.1"})
    valves = ValveState(
        vehicle="v", planned=[ValveSwitch(), ValveSwitch(t_ns=5, open=True), ValveSwitch()], thrust_N=[0.0, -0.0, 1.5]
    )
    round_trip([meta, RunMetadata()])
    round_trip([ValveState(), valves])
    # the installed protobuf (upb) writes string keys by bytes, a key before its own prefixes
    _, rows, strings = round_trip([RunMetadata(versions={"": "", "a": "", "b": "", "ab": ""})])
    entries = rows[0]["versions"][: rows[0]["versions_count"]]
    assert [strings.text_at(k) for k in entries["key"]] == ["ab", "a", "b", ""]


def test_repeated_field_over_capacity_is_refused():
    layout = row_layout(JointStates, capacities={"q": 3})
    rows, strings = layout.empty(1), StringTable()
    with pytest.raises(
        ValueError,
        match=r"hopsim.JointStates.q holds 4 elements, more than its row capacity 3.*"
        r"capacities=\{'q': 4\}",
    ):
        layout.row_from_message(JointStates(q=[1, 2, 3, 4]), rows[0], strings)
    layout.row_from_message(JointStates(q=[1, 2, 3]), rows[0], strings)
    assert layout.encode_each(rows, strings) == [wire(JointStates(q=[1, 2, 3]))]
    rows[0]["q_count"] = 4  # a row filled by hand: the encoder checks it too
    with pytest.raises(ValueError, match=r"row 0: hopsim.JointStates.q holds 4 elements, more than its capacity 3"):
        layout.encode(rows, strings)
    event = row_layout(KernelEvent, capacities={"fault.vehicles": 1, "members": 2})
    with pytest.raises(ValueError, match=r"hopsim.Fault.vehicles holds 2 .*capacities=\{'fault.vehicles': 2\}"):
        event.row_from_message(KernelEvent(fault={"vehicles": ["a", "b"]}), event.empty(1)[0], strings)


def test_row_checks_in_the_encoder():
    layout, strings = row_layout(VehicleState), StringTable()
    rows = layout.empty(3)
    rows[2]["vehicle"] = 7
    with pytest.raises(
        ValueError,
        match=r"row 2: hopsim.VehicleState.vehicle holds string index 7, not in the "
        r"string table \(0..0\)",
    ):
        layout.encode(rows, strings)
    meta = row_layout(RunMetadata)
    rows = meta.rows_from_messages([RunMetadata(versions={"a": "1", "b": "2"})], strings)
    rows[0]["versions"][[0, 1]] = rows[0]["versions"][[1, 0]]
    with pytest.raises(ValueError, match=r"entry 1.s key does not come after entry 0.s"):
        meta.encode(rows, strings)
    with pytest.raises(TypeError, match="rows of dtype"):
        meta.encode(layout.empty(1), strings)


def test_layout_errors_name_the_field():
    with pytest.raises(ValueError, match=r"capacities given for \['qq'\].*'joints', 'q', 'tau', 'u'"):
        row_layout(JointStates, capacities={"qq": 3})
    with pytest.raises(NotImplementedError, match=r"hopsim_rows_test.Node.next: a message type that contains itself"):
        row_layout(TEST_SCHEMA["Node"])


def test_row_layout_of_vehicle_state():
    dtype = row_dtype(VehicleState)
    assert dtype.names == (
        "vehicle",
        "t_ns",
        "r_BN_N",
        "has_r_BN_N",
        "v_BN_N",
        "has_v_BN_N",
        "q_BN",
        "has_q_BN",
        "omega_BN_B",
        "has_omega_BN_B",
        "a_BN_N",
        "has_a_BN_N",
        "omega_dot_BN_B",
        "has_omega_dot_BN_B",
        "mass",
    )
    assert dtype["vehicle"] == np.int32 and dtype["t_ns"] == np.int64 and dtype["mass"] == np.float64
    assert dtype["q_BN"].names == ("x", "y", "z", "w")
    joints = row_dtype(JointStates, {"q": 7})
    assert joints["q"].shape == (7,) and joints["tau"].shape == (DEFAULT_CAPACITY,) and joints["q_count"] == np.uint32
    layout = row_layout(VehicleState)
    assert layout.encode_each(layout.empty(2), StringTable()) == [b"", b""]  # zeroed rows: default messages
    assert "hopsim.VehicleState.omega_BN_B.x" in layout.describe()


def test_one_call_encodes_a_mixed_batch():
    rng = np.random.default_rng(7)
    specials = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-300]
    msgs = []
    for i in range(600):
        v = rng.normal(size=9) * 10.0 ** rng.integers(-3, 6)
        v[rng.random(9) < 0.3] = specials[i % len(specials)]
        msg = VehicleState(
            vehicle=f"v{i % 13}" if i % 5 else "", t_ns=int(rng.integers(-(1 << 62), 1 << 62)), mass=v[0]
        )
        if i % 3:
            msg.r_BN_N.CopyFrom(Vector3(x=v[1], y=v[2], z=v[3]))
        if i % 4:
            msg.q_BN.CopyFrom(Quaternion(x=v[4], w=v[5]))
        if i % 7 == 0:
            msg.omega_BN_B.SetInParent()
        msgs.append(msg)
    layout, rows, strings = round_trip(msgs)
    data, offsets = layout.encode(rows, strings)
    assert offsets[0] == 0 and offsets[-1] == len(data) == sum(len(wire(m)) for m in msgs)
    assert layout.encode_each(rows[::2], strings) == [wire(m) for m in msgs[::2]]  # a strided view
    empty, offsets = layout.encode(rows[:0], strings)
    assert len(empty) == 0 and list(offsets) == [0]


def test_output_larger_than_the_rows_grows_the_buffer():
    payloads = [bytes(range(256)) * (1 + i % 50) for i in range(200)]
    round_trip([Envelope(t_ns=i, topic="v/state", payload=p) for i, p in enumerate(payloads)])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(0, 300), st.integers(0, 2**64 - 1)))
def test_the_python_varint_is_protobufs(n):
    """hopsim.schemas.wire.varint (the scene's and the messages' Python writers use it): the bytes
    protobuf writes for a uint64 field, after its one-byte tag."""
    from hopsim.schemas.wire import varint

    if n == 0:
        assert varint(0) == b"\x00"  # (proto3 writes no field for a zero)
    else:
        assert b"\x28" + varint(n) == Envelope(seq=n).SerializeToString()
