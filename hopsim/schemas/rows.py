"""Typed rows: a message type's fields as a numpy structured dtype, generated from its descriptor.

A *row* holds one message in fixed-size fields; an array of rows holds many, and
:meth:`RowLayout.encode` turns all of them into protobuf wire bytes in one compiled call (the
bytes of ``SerializeToString(deterministic=True)``, exactly)::

    layout = row_layout(VehicleState)              # or row_layout(JointStates, capacities={"q": 30})
    strings = StringTable()
    rows = layout.empty(n)
    layout.row_from_message(msg, rows[0], strings)
    data, offsets = layout.encode(rows, strings)   # message i: data[offsets[i]:offsets[i + 1]]
    layout.message_from_row(rows[0], strings) == msg

Layout of a row (fields in declaration order; a name here is the protobuf field's name):

- a number is its numpy type: double ``f8``, float ``f4``, int64/sint64/sfixed64 ``i8``,
  uint64/fixed64 ``u8``, int32/sint32/sfixed32 ``i4``, uint32/fixed32 ``u4``, bool ``?``, an enum
  ``i4`` (its number; proto3 enums are open, so any int32);
- a string or bytes field is an ``i4`` index into a :class:`StringTable` that travels with the rows
  (index 0 is always the empty string, so a zeroed row holds empty strings); the table keeps each
  distinct value once, so a vehicle name repeated in every row costs four bytes per row;
- a singular sub-message is a nested structured field of the sub-message's own row layout, plus a
  ``has_<name>`` bool: protobuf writes a set sub-message even when all its fields are zero;
- a proto3 ``optional`` scalar, and a member of a ``oneof``, also get a ``has_<name>`` bool;
- a repeated field (numbers, strings, sub-messages) is an array of fixed capacity plus a
  ``<name>_count`` uint32: the first ``count`` elements are the field's; the capacity is
  :data:`DEFAULT_CAPACITY` unless the caller gives one per field path (``{"fault.vehicles": 4}``);
  a message with more elements than that is refused with an error naming the field;
- a map is a repeated field of its entries, each a ``(key, value)`` row, held in the order that
  deterministic serialization writes them (see ``hopsim.schemas.wire``; :meth:`RowLayout.row_from_message`
  sorts them so); the encoder refuses entries out of that order or a key held twice.

A zeroed row is the default message (it encodes to no bytes). Rows are aligned structured arrays
(``align=True``) so that a numba function can read them field by field.

Not representable: a message type that contains itself (no fixed size) and proto2 groups; both
raise :class:`NotImplementedError` naming the message and field. Unknown fields of a message are
not carried into its row.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from hopsim.schemas import wire
from hopsim.schemas.string_table import StringTable

__all__ = ["DEFAULT_CAPACITY", "RowLayout", "StringTable", "row_dtype", "row_layout"]

DEFAULT_CAPACITY = 16

FD = FieldDescriptor
# protobuf field type -> (numpy type of the row field, wire kind)
_SCALARS = {
    FD.TYPE_DOUBLE: ("f8", wire.FIXED),
    FD.TYPE_FLOAT: ("f4", wire.FIXED),
    FD.TYPE_INT64: ("i8", wire.VARINT),
    FD.TYPE_UINT64: ("u8", wire.VARINT),
    FD.TYPE_INT32: ("i4", wire.VARINT_I32),
    FD.TYPE_FIXED64: ("u8", wire.FIXED),
    FD.TYPE_FIXED32: ("u4", wire.FIXED),
    FD.TYPE_BOOL: ("?", wire.VARINT),
    FD.TYPE_UINT32: ("u4", wire.VARINT),
    FD.TYPE_ENUM: ("i4", wire.VARINT_I32),
    FD.TYPE_SFIXED32: ("i4", wire.FIXED),
    FD.TYPE_SFIXED64: ("i8", wire.FIXED),
    FD.TYPE_SINT32: ("i4", wire.ZIGZAG),
    FD.TYPE_SINT64: ("i8", wire.ZIGZAG),
    FD.TYPE_STRING: ("i4", wire.BYTES),
    FD.TYPE_BYTES: ("i4", wire.BYTES),
}


@dataclass
class _Field:
    """One protobuf field of a message layout."""

    descriptor: FieldDescriptor
    kind: int  # wire kind
    dtype: object  # numpy type of one value (a structured dtype for a sub-message)
    presence: bool = False  # has a has_<name> flag
    repeated: bool = False
    capacity: int = 0
    sub: MessageLayout | None = None  # sub-message (or map entry) layout
    always: bool = False  # a map entry's key or value: written even when zero

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def is_map(self) -> bool:
        return self.repeated and self.sub is not None and self.sub.is_map_entry


@dataclass
class MessageLayout:
    """The row layout of one message type (a sub-message's, or the root's: see :class:`RowLayout`)."""

    descriptor: Descriptor
    dtype: np.dtype
    fields: list[_Field]
    path: str  # field path from the root ("" for the root)
    message_class: type = field(init=False)

    def __post_init__(self):
        self.message_class = message_factory.GetMessageClass(self.descriptor)

    @property
    def is_map_entry(self) -> bool:
        return self.descriptor.GetOptions().map_entry

    # -- message -> row ------------------------------------------------------------------------
    def fill(self, msg, row, strings: StringTable) -> None:
        """Write ``msg`` into ``row`` (every field, so a reused row keeps nothing of its past)."""
        for f in self.fields:
            name = f.name
            if f.is_map:
                items = sorted(getattr(msg, name).items(), key=f.sub.wire_order)
                entries = self._elements(f, row, len(items))
                for j, (key, value) in enumerate(items):
                    f.sub.fill_entry(key, value, entries[j], strings)
            elif f.repeated:
                values = getattr(msg, name)
                elements = self._elements(f, row, len(values))
                if f.sub is not None:
                    for j, value in enumerate(values):
                        f.sub.fill(value, elements[j], strings)
                elif f.kind == wire.BYTES:
                    elements[: len(values)] = [strings.intern(v) for v in values]
                else:
                    elements[: len(values)] = values
            elif f.sub is not None:
                present = msg.HasField(name)
                row["has_" + name] = present
                if present:
                    f.sub.fill(getattr(msg, name), row[name], strings)
                else:
                    f.sub.clear(row[name])
            else:
                value = getattr(msg, name)
                row[name] = strings.intern(value) if f.kind == wire.BYTES else value
                if f.presence:
                    row["has_" + name] = msg.HasField(name)

    def wire_order(self, item) -> tuple:
        """Sort key of a map entry ``(key, value)``: the order of :mod:`hopsim.schemas.wire` (``SORT``)."""
        key = item[0]
        if self.fields[0].kind == wire.BYTES:
            return (*(key.encode() if isinstance(key, str) else key), 256)  # a prefix after its extensions
        return (-(int(key) % (1 << (8 * self.fields[0].dtype.itemsize))),)

    def fill_entry(self, key, value, row, strings: StringTable) -> None:
        """Write one map entry into its row."""
        key_field, value_field = self.fields
        row["key"] = strings.intern(key) if key_field.kind == wire.BYTES else key
        if value_field.sub is not None:
            row["has_value"] = True
            value_field.sub.fill(value, row["value"], strings)
        else:
            row["value"] = strings.intern(value) if value_field.kind == wire.BYTES else value

    def _elements(self, f: _Field, row, n: int):
        """The element array of repeated field ``f`` of ``row``, its count set to ``n`` and its unused tail zeroed."""
        if n > f.capacity:
            where = f"{self.path}.{f.name}".lstrip(".")
            raise ValueError(
                f"{self.descriptor.full_name}.{f.name} holds {n} elements, more than its row capacity "
                f"{f.capacity}; give a larger one: row_layout(..., capacities={{{where!r}: {n}}})"
            )
        row[f.name + "_count"] = n
        elements = row[f.name]
        elements[n:] = 0
        return elements

    def clear(self, row) -> None:
        """Zero every field of ``row`` (the default message)."""
        for name in self.dtype.names:
            row[name] = 0

    # -- row -> message ------------------------------------------------------------------------
    def message(self, row, strings: StringTable):
        """The message that ``row`` holds."""
        msg = self.message_class()
        for f in self.fields:
            name = f.name
            if f.repeated:
                n = int(row[name + "_count"])
                if n > f.capacity:
                    raise ValueError(
                        f"{self.descriptor.full_name}.{name}: the row's count {n} is over its capacity {f.capacity}"
                    )
                elements = row[name][:n]
                target = getattr(msg, name)
                if f.is_map:
                    for entry in elements:
                        f.sub.put_entry(target, entry, strings)
                elif f.sub is not None:
                    for element in elements:
                        target.add().CopyFrom(f.sub.message(element, strings))
                elif f.kind == wire.BYTES:
                    target.extend(_string_value(f, int(i), strings) for i in elements)
                else:
                    target.extend(elements.tolist())
            elif f.sub is not None:
                if row["has_" + name]:
                    sub = getattr(msg, name)
                    sub.SetInParent()
                    sub.CopyFrom(f.sub.message(row[name], strings))
            elif not f.presence or row["has_" + name]:
                value = row[name]
                setattr(msg, name, _string_value(f, int(value), strings) if f.kind == wire.BYTES else value.item())
        return msg

    def put_entry(self, target, row, strings: StringTable) -> None:
        """Add the map entry held by ``row`` to the map ``target``."""
        key_field, value_field = self.fields
        key = _string_value(key_field, int(row["key"]), strings) if key_field.kind == wire.BYTES else row["key"].item()
        if value_field.sub is not None:
            target[key].CopyFrom(value_field.sub.message(row["value"], strings))
        elif value_field.kind == wire.BYTES:
            target[key] = _string_value(value_field, int(row["value"]), strings)
        else:
            target[key] = row["value"].item()


def _string_value(f: _Field, index: int, strings: StringTable):
    if f.descriptor.type == FD.TYPE_STRING:
        return strings.text_at(index)
    return strings.bytes_at(index)


class RowLayout:
    """A message type's rows: their dtype, the encoder's program, and conversion to and from messages.

    Build it with :func:`row_layout` (cached per message type and capacities).
    """

    def __init__(self, descriptor: Descriptor, capacities: dict[str, int] | None = None):
        capacities = dict(capacities or {})
        used: set[str] = set()
        self.root = _layout(descriptor, "", capacities, used, ())
        unknown = sorted(set(capacities) - used)
        if unknown:
            raise ValueError(
                f"{descriptor.full_name}: capacities given for {unknown}, which are not repeated fields; "
                f"its repeated fields: {sorted(_repeated_paths(self.root)) or 'none'}"
            )
        self.descriptor = descriptor
        self.message_class = self.root.message_class
        self.dtype = self.root.dtype
        self.program, self.lines = wire.build_program(self.root)
        self.depth = wire.nesting(self.root)

    def __repr__(self) -> str:
        return f"RowLayout({self.descriptor.full_name}, {self.dtype.itemsize} bytes per row)"

    def empty(self, n: int) -> np.ndarray:
        """``n`` rows of default messages."""
        return np.zeros(n, self.dtype)

    def row_from_message(self, msg, row, strings: StringTable) -> None:
        """Write ``msg`` into ``row`` (an element of an array of this layout's rows, e.g. ``rows[i]``);
        its strings go into ``strings``. Raises ValueError when a repeated field is over its capacity."""
        if msg.DESCRIPTOR is not self.descriptor:
            raise TypeError(f"a {msg.DESCRIPTOR.full_name} given to the row layout of {self.descriptor.full_name}")
        self._check(row)
        self.root.fill(msg, row, strings)

    def message_from_row(self, row, strings: StringTable):
        """The message held by ``row``, its strings looked up in ``strings``."""
        self._check(row)
        return self.root.message(row, strings)

    def rows_from_messages(self, messages, strings: StringTable) -> np.ndarray:
        """An array of rows holding ``messages``, in order."""
        rows = self.empty(len(messages))
        for i, msg in enumerate(messages):
            self.row_from_message(msg, rows[i], strings)
        return rows

    def encode(self, rows: np.ndarray, strings: StringTable) -> tuple[np.ndarray, np.ndarray]:
        """The wire bytes of every row, in one buffer: ``(data, offsets)``, message ``i`` being
        ``data[offsets[i]:offsets[i + 1]]`` (uint8 and int64 arrays; ``len(offsets) == len(rows) + 1``).
        ``data`` is a view into a working buffer of about the rows' own size.

        Raises ValueError for a row whose repeated count is over its capacity, whose string index
        is not in ``strings``, or whose map entries are not in wire order.
        """
        self._check(rows)
        rows = np.ascontiguousarray(rows).reshape(-1)
        if not rows.flags.writeable:
            rows = rows.copy()
        data, starts = strings.arrays()
        ends = np.empty(self.depth + 1, np.int64)
        error = np.zeros(4, np.int64)
        offsets = np.zeros(len(rows) + 1, np.int64)
        out = np.empty(max(len(rows) * self.dtype.itemsize, 256), np.uint8)
        rows_left, q = len(rows), len(out)
        while True:
            q = wire.encode_rows(
                self.program,
                rows.view(np.uint8),
                self.dtype.itemsize,
                data,
                starts,
                ends,
                error,
                offsets,
                out,
                rows_left,
                q,
            )
            if error[0] != wire.NEED_ROOM:
                break
            rows_left = int(error[2]) + 1  # the rows after it are written, at out[q:]
            grown = np.empty(max(2 * len(out), len(out) + int(error[3])), np.uint8)
            grown[len(grown) - (len(out) - q) :] = out[q:]
            q += len(grown) - len(out)
            out = grown
            error[:] = 0
        if error[0] != wire.NO_ERROR:
            raise ValueError(self._error_text(error, len(strings)))
        offsets = (len(out) - q) - offsets  # from distances to the end, to offsets from the first message
        out = out[q:]
        return out, offsets

    def encode_each(self, rows: np.ndarray, strings: StringTable) -> list[bytes]:
        """The wire bytes of every row, one ``bytes`` each."""
        data, offsets = self.encode(rows, strings)
        buffer = data.tobytes()
        bounds = offsets.tolist()
        return [buffer[a:b] for a, b in itertools.pairwise(bounds)]

    def describe(self) -> str:
        """The encoder's program as text: one line per field occurrence (see :mod:`hopsim.schemas.wire`)."""
        return wire.describe(self.program, self.lines)

    def _check(self, rows) -> None:
        if rows.dtype != self.dtype:
            raise TypeError(
                f"rows of dtype {rows.dtype} given to the row layout of {self.descriptor.full_name}; "
                f"make them with row_layout(...).empty(n)"
            )

    def _error_text(self, error, n_strings: int) -> str:
        code, line, row, value = (int(v) for v in error)
        field = re.sub(r"\[\d+\]$", "", self.lines[line])  # a repeated sub-message's field, not its element
        if code == wire.OVER_CAPACITY:
            return (
                f"row {row}: {field} holds {value} elements, more than its capacity "
                f"{int(self.program[line, wire.CAPACITY])}"
            )
        if code == wire.UNORDERED_KEYS:
            return (
                f"row {row}: {field}: entry {value}'s key does not come after entry {value - 1}'s; "
                f"a row holds a map's entries in wire order, each key once (row_from_message does so)"
            )
        value = value - (1 << 32) if value >= 1 << 31 else value
        return f"row {row}: {self.lines[line]} holds string index {value}, not in the string table (0..{n_strings - 1})"


_LAYOUTS: dict[tuple[str, tuple], RowLayout] = {}


def row_layout(message_type, capacities: dict[str, int] | None = None) -> RowLayout:
    """The row layout of ``message_type`` (a generated message class or its descriptor).

    ``capacities`` maps the path of a repeated field (``"q"``, ``"fault.vehicles"``; a map counts
    entries) to the elements a row holds; other repeated fields hold :data:`DEFAULT_CAPACITY`.
    """
    descriptor = getattr(message_type, "DESCRIPTOR", message_type)
    key = (descriptor.full_name, tuple(sorted((capacities or {}).items())))
    layout = _LAYOUTS.get(key)
    if layout is None or layout.descriptor is not descriptor:
        layout = _LAYOUTS[key] = RowLayout(descriptor, capacities)
    return layout


def row_dtype(message_type, capacities: dict[str, int] | None = None) -> np.dtype:
    """The structured dtype of ``message_type``'s rows."""
    return row_layout(message_type, capacities).dtype


def _layout(
    descriptor: Descriptor, path: str, capacities: dict[str, int], used: set[str], outer: tuple[str, ...]
) -> MessageLayout:
    """Build the layout of ``descriptor`` found at field path ``path`` (``outer``: the types enclosing it)."""
    outer = (*outer, descriptor.full_name)
    names = {f.name for f in descriptor.fields}
    is_entry = descriptor.GetOptions().map_entry
    fields, entries = [], []
    for fd in descriptor.fields:
        where = f"{descriptor.full_name}.{fd.name}"
        sub_path = f"{path}.{fd.name}".lstrip(".")
        if fd.type == FD.TYPE_GROUP:
            raise NotImplementedError(f"{where}: groups have no row layout")
        if fd.type == FD.TYPE_MESSAGE:
            if fd.message_type.full_name in outer:
                raise NotImplementedError(f"{where}: a message type that contains itself has no fixed row layout")
            sub = _layout(fd.message_type, sub_path, capacities, used, outer)
            f = _Field(fd, wire.MESSAGE, sub.dtype, presence=not fd.is_repeated, sub=sub)
        else:
            numpy_type, kind = _SCALARS[fd.type]
            f = _Field(fd, kind, np.dtype(numpy_type), presence=fd.has_presence and not fd.is_repeated)
        f.always = is_entry
        if fd.is_repeated:
            f.repeated = True
            f.capacity = capacities.get(sub_path, DEFAULT_CAPACITY)
            used.add(sub_path)
            if not isinstance(f.capacity, int) or f.capacity < 1:
                raise ValueError(f"{where}: capacity {f.capacity!r}; give a positive int")
            entries.append((fd.name, f.dtype, (f.capacity,)))
            extra = [(fd.name + "_count", np.dtype("u4"))]
        else:
            entries.append((fd.name, f.dtype))
            extra = [("has_" + fd.name, np.dtype("?"))] if f.presence else []
        for name, _ in extra:
            if name in names:
                raise ValueError(f"{where}: its row field {name!r} would collide with the field of that name")
        entries += extra
        fields.append(f)
    return MessageLayout(descriptor, np.dtype(entries, align=True), fields, path)


def _repeated_paths(layout: MessageLayout):
    for f in layout.fields:
        if f.repeated:
            yield f"{layout.path}.{f.name}".lstrip(".")
        if f.sub is not None:
            yield from _repeated_paths(f.sub)
