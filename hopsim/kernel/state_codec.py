"""Simulation state as data: a tagged tree of plain values that decoding never executes.

A checkpoint holds every model's snapshot and every island's timeline: numbers, strings, numpy
arrays, protobuf messages, envelopes and objects of hopsim's own classes (a valve timeline, an
estimator, parameter sets). :func:`encode` turns such a value into a JSON-able tree plus a list
of byte blobs (array contents); :func:`decode` turns them back. Decoding creates only:

- JSON's own values, lists, tuples, dicts, sets, deques and bytes;
- numpy arrays and scalars of non-object dtypes, from their bytes;
- protobuf messages of hopsim's schemas, parsed from their wire bytes;
- objects of classes defined in ``hopsim`` modules, created without calling ``__init__`` and
  given their attributes one by one (pydantic models are validated from their fields);
- numpy random generators, from their bit generator's state.

Nothing named in the data is called, and a class outside ``hopsim`` is refused, so a crafted file
can make decoding fail but not run code. Functions are structure, not state: the scenario that is
rebuilt before a checkpoint is restored makes them again. A function in a snapshot is encoded by
name only, and decodes to the function found at the same place in a *template* (the freshly built
model's own snapshot); without one, or if the rebuilt model has none there, decoding fails and
says where.

A file's state is decoded against a schema: the rebuilt scenario's own value at each place
(:meth:`Decoder.decode_against`; the checkpoint module gives each model's freshly built snapshot,
and the kernel's parts). An entry must then be of the kind the template holds there: the same
class (no other object is built), the same protobuf message type, a numpy array of the same dtype
(and shape, for a structured array: a model kind's row), a number where a number is, the same
kind of container; a table of named entries (a model's attributes and ports, the scenario's
models) takes no name the template lacks. Where the template says nothing (None, an empty
container, a log's later records) only plain data may stand, and data classes of hopsim's state
packages (a solver's fix). Every refusal names the place and what was expected there. Decoding
nests at most :data:`MAX_DEPTH` levels and a container holds at most :data:`MAX_ITEMS` entries.

Shared references are kept (a value met twice is encoded once and referred to), so a decoded
snapshot has the same aliasing as the one captured. Sets are written sorted by their encoding, so
that equal states give equal trees in every process (PYTHONHASHSEED changes set order).
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import importlib
import inspect
import json
import types
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError, Message

__all__ = [
    *("StateCodecError", "Encoder", "Decoder", "encode", "decode", "canonical_json", "check_names"),
    *("FREE", "NULL", "INT", "ANY_MESSAGE", "AnyOf", "Parts", "Record", "MAX_DEPTH", "MAX_ITEMS"),
]

_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)


class StateCodecError(ValueError):
    """A value that cannot be written as data, or data that cannot be read back; says where."""


def _class_path(cls: type) -> tuple[str, str]:
    return cls.__module__, cls.__qualname__


def _hopsim_class(module: str, qualname: str, where: str) -> type:
    """The class ``module.qualname``, only if it is a class defined in a hopsim module."""
    if not (module == "hopsim" or module.startswith("hopsim.")) or "<" in qualname:
        raise StateCodecError(f"{where}: class {module}.{qualname} is not one of hopsim's; refused")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise StateCodecError(f"{where}: no class {module}.{qualname} in this version of hopsim ({err})") from None
    if not isinstance(obj, type) or obj.__module__ != module:
        raise StateCodecError(f"{where}: {module}.{qualname} is not a class defined there; refused")
    return obj


def _message_class(full_name: str, where: str) -> type:
    from hopsim import schemas

    cls = schemas.message_class(full_name)
    if cls is None:
        raise StateCodecError(f"{where}: no protobuf message type {full_name!r} in hopsim's schemas")
    return cls


def _is_pydantic(obj: Any) -> bool:
    return hasattr(type(obj), "model_fields") and hasattr(obj, "model_dump")


class Encoder:
    """Encodes values into trees; one encoder's trees share one table of values met before, so
    several trees written by it decode with one :class:`Decoder`, in the same order."""

    def __init__(self):
        self.blobs: list[bytes] = []
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps encoded objects alive, so that ids stay unique

    def blob(self, data: bytes) -> int:
        self.blobs.append(data)
        return len(self.blobs) - 1

    def remember(self, obj: Any, node: dict) -> dict:
        self.memo[id(obj)] = len(self.memo)
        self.keep.append(obj)
        node["id"] = self.memo[id(obj)]
        return node

    def __call__(self, obj: Any, where: str) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and type(obj) is int:
            return obj
        if isinstance(obj, float) and type(obj) is float:
            return {"f": obj.hex()}  # exact, -0.0 and nan included
        ref = self.memo.get(id(obj))
        if ref is not None:
            return {"ref": ref}
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise StateCodecError(f"{where}: a numpy array of Python objects is not data")
            arr = np.ascontiguousarray(obj)
            return self.remember(
                obj, {"array": [np.lib.format.dtype_to_descr(arr.dtype), list(arr.shape), self.blob(arr.tobytes())]}
            )
        if isinstance(obj, np.generic):
            if obj.dtype.hasobject:
                raise StateCodecError(f"{where}: a numpy object scalar is not data")
            return {"scalar": [np.lib.format.dtype_to_descr(obj.dtype), self.blob(obj.tobytes())]}
        if isinstance(obj, bytes):
            return {"bytes": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, Message):
            return self.remember(
                obj,
                {
                    "message": [
                        obj.DESCRIPTOR.full_name,
                        base64.b64encode(obj.SerializeToString(deterministic=True)).decode("ascii"),
                    ]
                },
            )
        if isinstance(obj, list):
            node = self.remember(obj, {"list": None})
            node["list"] = [self(v, f"{where}[{i}]") for i, v in enumerate(obj)]
            return node
        if isinstance(obj, tuple) and type(obj) is not tuple:  # a NamedTuple of hopsim's
            module, qualname = _class_path(type(obj))
            if not (module == "hopsim" or module.startswith("hopsim.")) or not hasattr(obj, "_fields"):
                raise StateCodecError(f"{where}: a {module}.{qualname} tuple is not data hopsim can write")
            node = self.remember(obj, {"named_tuple": [module, qualname, None]})
            node["named_tuple"][2] = [self(v, f"{where}.{f}") for f, v in zip(obj._fields, obj, strict=True)]
            return node
        if isinstance(obj, tuple) and type(obj) is tuple:
            node = self.remember(obj, {"tuple": None})
            node["tuple"] = [self(v, f"{where}[{i}]") for i, v in enumerate(obj)]
            return node
        if isinstance(obj, dict) and type(obj) is dict:
            node = self.remember(obj, {"dict": None})
            node["dict"] = [[self(k, f"{where} key"), self(v, f"{where}[{k!r}]")] for k, v in obj.items()]
            return node
        if isinstance(obj, (set, frozenset)) and type(obj) in (set, frozenset):
            kind = "set" if type(obj) is set else "frozenset"
            node = self.remember(obj, {kind: None})
            items = [self(v, f"{where} item") for v in obj]
            node[kind] = sorted(items, key=canonical_json)
            return node
        if isinstance(obj, collections.deque):
            node = self.remember(obj, {"deque": None, "maxlen": obj.maxlen})
            node["deque"] = [self(v, f"{where}[{i}]") for i, v in enumerate(obj)]
            return node
        if isinstance(obj, np.random.Generator):
            return self.remember(
                obj, {"generator": [type(obj.bit_generator).__name__, self(obj.bit_generator.state, f"{where}.state")]}
            )
        if isinstance(obj, _FUNCTION_TYPES) or (
            callable(obj)
            and not isinstance(obj, type)
            and not hasattr(obj, "__dict__")
            and not hasattr(obj, "__slots__")
        ):
            return {"function": getattr(obj, "__qualname__", repr(obj))}
        if isinstance(obj, type):
            if issubclass(obj, Message):
                return {"message_type": obj.DESCRIPTOR.full_name}
            module, qualname = _class_path(obj)
            if module == "builtins":
                return {"builtin_type": qualname}
            return {"type": [module, qualname]}
        return self.encode_object(obj, where)

    def encode_object(self, obj: Any, where: str) -> dict:
        cls = type(obj)
        module, qualname = _class_path(cls)
        if not (module == "hopsim" or module.startswith("hopsim.")) or "<" in qualname:
            raise StateCodecError(
                f"{where}: a {module}.{qualname} is not data hopsim can write "
                f"(only hopsim's own classes, numpy arrays, protobuf messages and "
                f"plain values are)"
            )
        if _is_pydantic(obj):
            fields = obj.model_dump(mode="python")
            return self.remember(obj, {"pydantic": [module, qualname, self(fields, f"{where}")]})
        node = self.remember(obj, {"object": [module, qualname, None]})
        attrs: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name in getattr(klass, "__slots__", ()):
                if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                    attrs[name] = getattr(obj, name)
        if hasattr(obj, "__dict__"):
            attrs.update(vars(obj))
        node["object"][2] = [[name, self(value, f"{where}.{name}")] for name, value in attrs.items()]
        return node


def encode(value: Any, where: str = "state") -> tuple[Any, list[bytes]]:
    """(tree, blobs): ``value`` as a JSON-able tree and the byte blobs its arrays refer to."""
    enc = Encoder()
    return enc(value, where), enc.blobs


# ----------------------------------------------------------------------------- decoding

# Limits of the work one decoding may do, whatever the data: a tree nests no deeper than
# MAX_DEPTH levels (a model's snapshot nests about ten: attributes, objects, containers, a
# message), and no container holds more than MAX_ITEMS entries (a model's longest lists, its
# logs of arrivals, hold thousands). The data's size is bounded before decoding, by the file's
# (see hopsim.kernel.checkpoint: what a body may inflate to).
MAX_DEPTH = 100
MAX_ITEMS = 1_000_000
# Dict keys and set items are plain values (an object's hash and equality would be hopsim code
# run on crafted data), and integers among them lie within +-2**62: Python hashes an integer to
# itself modulo 2**61 - 1, so larger ones could be chosen to collide, and make a set of them
# quadratic to build.
MAX_KEY_INT = 2**62


class _Free:
    """The template of a place the rebuilt model says nothing of (None there, or a container
    that held nothing yet): plain data only."""

    def __repr__(self) -> str:
        return "plain data (numbers, strings, arrays, protobuf messages, containers of them)"


class _Null:
    """The template of a place that holds None and nothing else."""

    def __repr__(self) -> str:
        return "None"


class _Int:
    """The template of a place that holds an integer of 64 bits (a kernel's instant or count)."""

    def __repr__(self) -> str:
        return "an integer"


class _AnyMessage:
    """The template of a place that holds a protobuf message of one of hopsim's schemas."""

    def __repr__(self) -> str:
        return "a protobuf message"


FREE, NULL, INT, ANY_MESSAGE = _Free(), _Null(), _Int(), _AnyMessage()


class _Entry:
    """The template of an entry of a sequence (a list's, a deque's, a set's), or of an entry a
    container's template has no counterpart for (beyond a tuple's length, under a key it lacks):
    the entry is of a kind the template's entries are (its class, message type, container), and
    what the entry holds may also be plain data. A log's records change shape as a run goes (an
    estimator's history: a state, then a block of rows), which the one record a fresh model holds
    cannot show."""

    def __init__(self, inner: Any):
        self.inner = inner


class Parts:
    """The template of a tuple of fixed parts, each named (for messages) with its template, and
    each exactly of its kind (within a log's entry too): a model's snapshot (attributes, ports,
    generator), a port's state, the kernel's records."""

    def __init__(self, *parts: tuple[str, Any]):
        self.names = tuple(name for name, _ in parts)
        self.templates = tuple(template for _, template in parts)

    def __repr__(self) -> str:
        return f"a tuple of {', '.join(self.names)}"


class Record:
    """The template of a table of named entries, each with its own template (a model's
    attributes, its ports; the models of a scenario): a name the template lacks is refused."""

    def __init__(self, fields: dict[str, Any], what: str):
        self.fields, self.what = fields, what

    def __repr__(self) -> str:
        return f"a table of {self.what}s"


class AnyOf:
    """The template of a place that may hold what any of ``options`` may (the first that fits)."""

    def __init__(self, *options: Any):
        self.options = options

    def __repr__(self) -> str:
        return " or ".join(_expected(o) for o in self.options)


# hopsim's own classes that may stand where a template says nothing (a value a model made during
# its run: a solver's fix, a peer's last state): data classes and named tuples of the packages
# that hold simulation state, never of those that write files or talk to processes
_VALUE_PACKAGES = ("hopsim.actors.", "hopsim.dynamics.", "hopsim.kernel.")
_NOT_VALUE_PACKAGES = ("hopsim.kernel.distributed.",)
_FREE_TAGS = frozenset(
    {"none", "bool", "int", "str", "f", "bytes", "array", "scalar", "message"}
    | {"list", "tuple", "dict", "set", "frozenset", "deque"}
)
_TAGS = (
    *("f", "ref", "array", "scalar", "bytes", "message", "list", "tuple", "named_tuple", "dict", "set"),
    *("frozenset", "deque", "generator", "function", "message_type", "builtin_type", "type", "pydantic", "object"),
)
_NUMBER_TAGS = frozenset({"int", "f", "scalar"})


def _tag(node: Any) -> str:
    """What kind of entry ``node`` is (the key that says so, for a tagged entry)."""
    if node is None:
        return "none"
    if isinstance(node, bool):
        return "bool"
    if isinstance(node, int):
        return "int"
    if isinstance(node, str):
        return "str"
    if isinstance(node, dict):
        for tag in _TAGS:
            if tag in node:
                return tag
    return f"raw {type(node).__name__}"


def _named(node: Any, tag: str) -> str:
    """``node`` described for a message: its tag, and the class or message type it names."""
    try:
        if tag in ("object", "named_tuple", "pydantic", "type"):
            return f"a {node[tag][0]}.{node[tag][1]}"
        if tag == "message":
            return f"a protobuf {node[tag][0]}"
    except (TypeError, IndexError, KeyError):
        pass
    return {"none": "None", "f": "a float", "int": "an integer", "str": "a string"}.get(tag, f"a {tag}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _expected(tmpl: Any) -> str:
    """What a template allows, for a message."""
    if tmpl is None or isinstance(tmpl, (_Free, _Null, _Int, _AnyMessage, AnyOf)):
        return repr(tmpl if tmpl is not None else FREE)
    if isinstance(tmpl, bool):
        return "a bool"
    if _is_number(tmpl):
        return "a number"
    if isinstance(tmpl, np.ndarray):
        shape = f" of shape {tmpl.shape}" if tmpl.dtype.names else ""
        return f"a numpy array of dtype {np.lib.format.dtype_to_descr(tmpl.dtype)}{shape}"
    if isinstance(tmpl, Message):
        return f"a protobuf {tmpl.DESCRIPTOR.full_name}"
    if isinstance(tmpl, (Record, Parts)):
        return repr(tmpl)
    if _is_function(tmpl):
        return "a function (the rebuilt scenario's)"
    if isinstance(tmpl, type):
        return f"the class {tmpl.__module__}.{tmpl.__qualname__}"
    cls = type(tmpl)
    return f"a {cls.__qualname__}" if cls.__module__ == "builtins" else f"a {cls.__module__}.{cls.__qualname__}"


def _is_function(obj: Any) -> bool:
    """Whether :class:`Encoder` writes ``obj`` as a function (by name only)."""
    return isinstance(obj, _FUNCTION_TYPES) or (
        callable(obj) and not isinstance(obj, type) and not hasattr(obj, "__dict__") and not hasattr(obj, "__slots__")
    )


def _is_value_class(cls: type) -> bool:
    """A class whose objects may stand where a template says nothing (see _VALUE_PACKAGES)."""
    module = cls.__module__
    if not module.startswith(_VALUE_PACKAGES) or module.startswith(_NOT_VALUE_PACKAGES) or _is_pydantic_class(cls):
        return False
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def _is_pydantic_class(cls: type) -> bool:
    return hasattr(cls, "model_fields") and hasattr(cls, "model_validate")


def _attributes(obj: Any) -> dict[str, Any]:
    """An object's attributes as :meth:`Encoder.encode_object` writes them (slots and dict)."""
    attrs: dict[str, Any] = {}
    for klass in reversed(type(obj).__mro__):
        for name in getattr(klass, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                attrs[name] = getattr(obj, name)
    if hasattr(obj, "__dict__"):
        attrs.update(vars(obj))
    return attrs


def _check_key(key: Any, where: str, depth: int = 0) -> None:
    """A dict key or set item is a plain value (see MAX_KEY_INT)."""
    if isinstance(key, int) and not isinstance(key, bool):
        if not -MAX_KEY_INT <= key <= MAX_KEY_INT:
            raise StateCodecError(f"{where}: integer key {key} lies outside +-2**62")
    elif (
        isinstance(key, (tuple, frozenset))
        and depth < 8
        and (type(key) in (tuple, frozenset) or hasattr(key, "_fields"))
    ):
        if hasattr(key, "_fields") and type(key).__hash__ is not tuple.__hash__:
            raise StateCodecError(f"{where}: a {type(key).__qualname__} is not a plain key")
        for item in key:
            _check_key(item, where, depth + 1)
    elif not isinstance(key, (type(None), bool, float, str, bytes)):
        raise StateCodecError(f"{where}: a {type(key).__qualname__} is not a plain key or set item")


class Decoder:
    """Decodes the trees of one :class:`Encoder`, in the order it wrote them.

    Through :meth:`decode_against` it decodes against a template (the value as the rebuilt
    scenario holds it): each entry must be of the kind the template holds at its place, and a
    refusal names the place and what was expected there.
    """

    def __init__(self, blobs: list[bytes]):
        self.blobs = blobs
        self.memo: dict[int, Any] = {}
        self.schema = False
        self.depth = 0
        self.lenient = 0  # inside entries of sequences: what they hold may also be plain data
        self.foreign: set = set()  # with a schema: the values a reference may not name (decode_against)
        self._kinds: dict[int, tuple] = {}  # a template container's distinct kinds of entries

    def blob(self, index: Any, where: str) -> bytes:
        if not isinstance(index, int) or not 0 <= index < len(self.blobs):
            raise StateCodecError(f"{where}: refers to data block {index!r}, which the file does not hold")
        return self.blobs[index]

    def remember(self, node: dict, obj: Any) -> Any:
        if "id" in node:
            ident = node["id"]
            if not isinstance(ident, int) or isinstance(ident, bool) or ident in self.memo:
                raise StateCodecError(f"malformed value number {ident!r}")
            self.memo[ident] = obj
        return obj

    def decode_against(self, node: Any, where: str, template: Any, own_references: bool = True) -> Any:
        """``node`` decoded against ``template`` (the schema): see :class:`Decoder`. With
        ``own_references`` a reference may only name a value decoded by this call."""
        self.schema, self.foreign = True, set(self.memo) if own_references else set()
        try:
            return self(node, where, template)
        finally:
            self.schema, self.foreign = False, set()

    def __call__(self, node: Any, where: str, template: Any = None) -> Any:
        if self.depth >= MAX_DEPTH:
            raise StateCodecError(f"{where}: the state nests deeper than {MAX_DEPTH} levels")
        self.depth += 1
        entry = isinstance(template, _Entry)
        if entry:
            template = template.inner
        try:
            if self.schema:
                template = self.fit(node, where, template)
            if node is None or isinstance(node, (bool, str, int)):
                return node
            if not isinstance(node, dict):
                raise StateCodecError(f"{where}: unexpected {type(node).__name__} in the state tree")
            self.lenient += entry
            try:
                value = self.decode_node(node, where, template)
            finally:
                self.lenient -= entry
            if self.schema and "ref" in node:
                self.fit_value(value, where, template)
            return value
        except StateCodecError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, DecodeError) as err:
            raise StateCodecError(f"{where}: malformed state entry ({type(err).__name__}: {err})") from None
        except RecursionError:
            raise StateCodecError(f"{where}: the state entry nests too deep") from None
        finally:
            self.depth -= 1

    # ------------------------------------------------------------------ the schema
    def fit(self, node: Any, where: str, tmpl: Any) -> Any:
        """The template to decode ``node`` with, if it may stand where ``tmpl`` is; a
        StateCodecError naming the place and what was expected there otherwise."""
        try:
            return self._fit(node, where, tmpl)
        except StateCodecError:
            if not self.lenient or tmpl is None or isinstance(tmpl, _Free):
                raise
            try:
                return self._fit(node, where, FREE)
            except StateCodecError:
                pass
            raise

    def _fit(self, node: Any, where: str, tmpl: Any) -> Any:
        tag = _tag(node)
        if tag == "ref":
            return tmpl  # checked once found (fit_value)
        if isinstance(tmpl, AnyOf):
            for option in tmpl.options:
                try:
                    return self._fit(node, where, option)
                except StateCodecError:
                    continue
            raise StateCodecError(f"{where}: holds {_named(node, tag)}; expected {tmpl!r}")
        if tmpl is None or isinstance(tmpl, _Free):
            if tag in _FREE_TAGS:
                return FREE
            if tag in ("object", "named_tuple") and isinstance(node[tag], list) and len(node[tag]) == 3:
                module, qualname, _ = node[tag]
                if (
                    isinstance(module, str)
                    and isinstance(qualname, str)
                    and _is_value_class(_hopsim_class(module, qualname, where))
                ):
                    return FREE
            raise StateCodecError(
                f"{where}: holds {_named(node, tag)}, where the rebuilt model holds nothing to say "
                f"what may stand: expected {FREE!r}, or a data class of hopsim's state"
            )
        ok = self._fits(node, tag, tmpl)
        if not ok:
            raise StateCodecError(f"{where}: holds {_named(node, tag)}; expected {_expected(tmpl)}")
        return tmpl

    @staticmethod
    def _fits(node: Any, tag: str, tmpl: Any) -> bool:
        """Whether an entry tagged ``tag`` may stand where ``tmpl`` is (its class, message type
        or container; an array's dtype and a number's kind are checked once decoded)."""
        if isinstance(tmpl, _Null):
            return tag == "none"
        if isinstance(tmpl, _Int):
            return tag == "int" and -(2**63) <= node < 2**63
        if isinstance(tmpl, _AnyMessage):
            return tag == "message"
        if isinstance(tmpl, (bool, np.bool_)):
            return tag in ("bool", "scalar")  # (a numpy bool: its dtype is checked once decoded)
        if _is_number(tmpl):
            return tag in _NUMBER_TAGS
        if isinstance(tmpl, str):
            return tag == "str"
        if isinstance(tmpl, bytes):
            return tag == "bytes"
        if isinstance(tmpl, np.ndarray):
            return tag == "array"
        if isinstance(tmpl, np.generic):
            return tag == "scalar"
        if isinstance(tmpl, Message):
            return tag == "message" and node["message"][0] == tmpl.DESCRIPTOR.full_name
        if isinstance(tmpl, type):
            return tag in ("type", "message_type", "builtin_type")
        if isinstance(tmpl, collections.deque):
            return tag == "deque" and node.get("maxlen") == tmpl.maxlen
        if isinstance(tmpl, np.random.Generator):
            return tag == "generator" and node["generator"][0] == type(tmpl.bit_generator).__name__
        container = {list: "list", tuple: "tuple", dict: "dict", set: "set", frozenset: "frozenset"}.get(type(tmpl))
        if container is not None:
            return tag == container
        if isinstance(tmpl, tuple) and hasattr(tmpl, "_fields"):
            return tag == "named_tuple" and node["named_tuple"][:2] == list(_class_path(type(tmpl)))
        if _is_pydantic(tmpl):
            return tag == "pydantic" and node["pydantic"][:2] == list(_class_path(type(tmpl)))
        if isinstance(tmpl, Record):
            return tag == "dict"
        if isinstance(tmpl, Parts):
            return tag == "tuple" and len(node["tuple"]) == len(tmpl.templates)
        if _is_function(tmpl):
            return tag == "function"
        return tag == "object" and node["object"][:2] == list(_class_path(type(tmpl)))

    def fit_value(self, value: Any, where: str, tmpl: Any) -> None:
        """A decoded value (an array, a scalar, one referred to) may stand where ``tmpl`` is."""
        try:
            self._fit_value(value, where, tmpl)
        except StateCodecError:
            if not self.lenient:
                raise
            self._fit_value(value, where, FREE)

    def _fit_value(self, value: Any, where: str, tmpl: Any) -> None:
        if isinstance(tmpl, AnyOf):
            for option in tmpl.options:
                try:
                    return self._fit_value(value, where, option)
                except StateCodecError:
                    continue
            raise StateCodecError(f"{where}: holds a {type(value).__qualname__}; expected {tmpl!r}")
        if tmpl is None or isinstance(tmpl, _Free):
            # an array or a scalar; or a value met before in this part, which its first place
            # admitted (a model's current item, one of the list it also holds)
            ok = True
        elif isinstance(tmpl, _Null):
            ok = value is None
        elif isinstance(tmpl, _Int):
            ok = type(value) is int and -(2**63) <= value < 2**63
        elif isinstance(tmpl, _AnyMessage):
            ok = isinstance(value, Message)
        elif isinstance(tmpl, (bool, np.bool_)):
            ok = isinstance(value, (bool, np.bool_))
        elif _is_number(tmpl):
            ok = _is_number(value) and (not isinstance(value, np.generic) or value.dtype.kind in "iuf")
            if ok and isinstance(tmpl, np.generic):
                ok = isinstance(value, np.generic) and value.dtype == tmpl.dtype
        elif isinstance(tmpl, np.ndarray):
            ok = isinstance(value, np.ndarray) and value.dtype == tmpl.dtype
            ok = ok and (not tmpl.dtype.names or value.shape == tmpl.shape)  # a kind's row: its shape
        elif isinstance(tmpl, (Record, Parts)):
            ok = False  # written in place, never referred to
        elif _is_function(tmpl) or isinstance(tmpl, type):
            ok = value is tmpl
        else:
            ok = type(value) is type(tmpl)
        if not ok:
            got = type(value).__qualname__
            if isinstance(value, np.ndarray):
                got = f"numpy array of dtype {np.lib.format.dtype_to_descr(value.dtype)} and shape {value.shape}"
            raise StateCodecError(f"{where}: holds a {got}; expected {_expected(tmpl)}")

    def _kinds_of(self, container: Any, keys: bool = False) -> tuple:
        """One entry of each kind a template container holds (by type, dtype, message type): of
        a dict, its values (or its ``keys``)."""
        key = (id(container), keys)
        kinds = self._kinds.get(key)
        if kinds is None:
            seen: dict[Any, Any] = {}
            values = container if keys or not isinstance(container, dict) else container.values()
            for v in values:
                dtype = v.dtype if isinstance(v, (np.ndarray, np.generic)) else None
                kind = (type(v), dtype, v.DESCRIPTOR.full_name if isinstance(v, Message) else None)
                seen.setdefault(kind, v)
                if len(seen) > 16:
                    break
            kinds = self._kinds[key] = (container, tuple(seen.values()))  # (kept alive with its id)
        return kinds[1]

    def entry_template(self, tmpl: Any, i: int | None = None, key: Any = None, keyed: bool = False) -> Any:
        """The template of an entry of a container whose template is ``tmpl``: the entry at the
        same place (index ``i``, or ``key`` when ``keyed``), else any of the kinds it holds."""
        if not self.schema:
            if keyed:
                return tmpl.get(key) if isinstance(tmpl, dict) and _hashable(key) else None
            if i is not None and isinstance(tmpl, (list, tuple)) and i < len(tmpl):
                return tmpl[i]
            return None
        if tmpl is None or isinstance(tmpl, _Free):
            return FREE
        if keyed and isinstance(tmpl, dict) and _hashable(key) and key in tmpl:
            return tmpl[key]
        if not keyed and i is not None and type(tmpl) is tuple and i < len(tmpl):
            return tmpl[i]  # a tuple's entries are each of their own kind
        if not isinstance(tmpl, (dict, list, tuple, set, frozenset, collections.deque)):
            return FREE  # (a container where the template holds another kind, in a lenient entry)
        kinds = self._kinds_of(tmpl)
        if not kinds:
            return FREE
        if not keyed and i is not None and isinstance(tmpl, (list, collections.deque)) and i < len(tmpl):
            kinds = (tmpl[i], *kinds)  # the entry at the same place first (a function there)
        return _Entry(kinds[0] if len(kinds) == 1 else AnyOf(*kinds))

    def key_template(self, tmpl: Any) -> Any:
        if not self.schema:
            return None
        if not isinstance(tmpl, dict) or not tmpl:
            return FREE
        kinds = self._kinds_of(tmpl, keys=True)
        return kinds[0] if len(kinds) == 1 else AnyOf(*kinds)

    # ------------------------------------------------------------------ entries
    def items(self, node: dict, tag: str, where: str) -> list:
        items = node[tag]
        if not isinstance(items, list):
            raise StateCodecError(f"{where}: a {tag} entry whose items are not a list")
        if len(items) > MAX_ITEMS:
            raise StateCodecError(f"{where}: a {tag} of {len(items):,} entries (at most {MAX_ITEMS:,})")
        return items

    def decode_node(self, node: dict, where: str, template: Any) -> Any:
        if "f" in node:
            return float.fromhex(node["f"])
        if "ref" in node:
            ref = node["ref"]
            if not isinstance(ref, int) or isinstance(ref, bool) or ref not in self.memo:
                raise StateCodecError(f"{where}: refers to value {ref!r} before it is complete")
            if self.schema and ref in self.foreign:
                raise StateCodecError(f"{where}: refers to value {ref!r}, which belongs to another part of the state")
            return self.memo[ref]
        if "array" in node:
            descr, shape, index = node["array"]
            dtype = np.lib.format.descr_to_dtype(descr)
            if dtype.hasobject:
                raise StateCodecError(f"{where}: object arrays are refused")
            arr = np.frombuffer(self.blob(index, where), dtype=dtype).reshape(shape).copy()
            if self.schema:
                self.fit_value(arr, where, template)
            return self.remember(node, arr)
        if "scalar" in node:
            descr, index = node["scalar"]
            dtype = np.lib.format.descr_to_dtype(descr)
            if dtype.hasobject:
                raise StateCodecError(f"{where}: object scalars are refused")
            value = np.frombuffer(self.blob(index, where), dtype=dtype)[0]
            if self.schema:
                self.fit_value(value, where, template)
            return value
        if "bytes" in node:
            return base64.b64decode(node["bytes"], validate=True)
        if "message" in node:
            full_name, data = node["message"]
            msg = _message_class(full_name, where)()
            msg.ParseFromString(base64.b64decode(data, validate=True))
            return self.remember(node, msg)
        if "list" in node:
            out: list = self.remember(node, [])
            items = self.items(node, "list", where)
            out.extend(self(v, f"{where}[{i}]", self.entry_template(template, i)) for i, v in enumerate(items))
            return out
        if "tuple" in node and isinstance(template, Parts):
            parts = zip(template.names, template.templates, self.items(node, "tuple", where), strict=True)
            lenient, self.lenient = self.lenient, 0  # each part exactly of its kind
            try:
                value = tuple(self(v, f"{where}, {name}" if name else where, tmpl) for name, tmpl, v in parts)
            finally:
                self.lenient = lenient
            return self.remember(node, value)
        if "tuple" in node:
            items = self.items(node, "tuple", where)
            value = tuple(self(v, f"{where}[{i}]", self.entry_template(template, i)) for i, v in enumerate(items))
            return self.remember(node, value)
        if "named_tuple" in node:
            module, qualname, values = node["named_tuple"]
            cls = _hopsim_class(module, qualname, where)
            if not (issubclass(cls, tuple) and hasattr(cls, "_fields")) or len(values) != len(cls._fields):
                raise StateCodecError(f"{where}: {module}.{qualname} is not a named tuple of {len(values)} fields")
            own = template if type(template) is cls else None
            items = [
                self(v, f"{where}.{f}", getattr(own, f, FREE if self.schema else None))
                for f, v in zip(cls._fields, values, strict=True)
            ]
            return self.remember(node, tuple.__new__(cls, items))
        if "dict" in node and isinstance(template, Record):
            return self.decode_record(node, where, template)
        if "dict" in node:
            out_d: dict = self.remember(node, {})
            key_template = self.key_template(template)
            for entry in self.items(node, "dict", where):
                k, v = entry
                key = self(k, f"{where} key", key_template)
                if self.schema:
                    _check_key(key, f"{where} key")
                out_d[key] = self(v, f"{where}[{key!r}]", self.entry_template(template, key=key, keyed=True))
            return out_d
        if "set" in node or "frozenset" in node:
            kind = "set" if "set" in node else "frozenset"
            items = [self(v, f"{where} item", self.entry_template(template)) for v in self.items(node, kind, where)]
            for item in items if self.schema else ():
                _check_key(item, f"{where} item")
            return self.remember(node, set(items) if kind == "set" else frozenset(items))
        if "deque" in node:
            dq: collections.deque = self.remember(node, collections.deque(maxlen=node.get("maxlen")))
            items = self.items(node, "deque", where)
            dq.extend(self(v, f"{where}[{i}]", self.entry_template(template, i)) for i, v in enumerate(items))
            return dq
        if "generator" in node:
            kind, state = node["generator"]
            bit_generator = getattr(np.random, kind, None) if isinstance(kind, str) else None
            if not (isinstance(bit_generator, type) and issubclass(bit_generator, np.random.BitGenerator)):
                raise StateCodecError(f"{where}: unknown bit generator {kind!r}")
            bg = bit_generator()
            bg.state = self(state, f"{where}.state", FREE if self.schema else None)
            return self.remember(node, np.random.Generator(bg))
        if "function" in node:
            if callable(template) and not isinstance(template, type):
                return template
            raise StateCodecError(
                f"{where}: the checkpoint holds a function ({node['function']}) here, and the "
                f"rebuilt scenario has none at this place to take instead; functions are "
                f"rebuilt by the scenario, never read from a file"
            )
        if "message_type" in node:
            return self._type_fits(_message_class(node["message_type"], where), where, template)
        if "builtin_type" in node:
            allowed = {
                t.__name__: t for t in (int, float, bool, str, bytes, list, tuple, dict, set, frozenset, type(None))
            }
            if node["builtin_type"] not in allowed:
                raise StateCodecError(f"{where}: builtin type {node['builtin_type']!r} refused")
            return self._type_fits(allowed[node["builtin_type"]], where, template)
        if "type" in node:
            module, qualname = node["type"]
            return self._type_fits(_hopsim_class(module, qualname, where), where, template)
        if "pydantic" in node:
            module, qualname, fields = node["pydantic"]
            cls = _hopsim_class(module, qualname, where)
            if not hasattr(cls, "model_validate"):
                raise StateCodecError(f"{where}: {module}.{qualname} is not a parameter model")
            return self.remember(node, cls.model_validate(self(fields, where, FREE if self.schema else None)))
        if "object" in node:
            return self.decode_object(node, where, template)
        raise StateCodecError(f"{where}: unknown entry with keys {sorted(node)}")

    def decode_record(self, node: dict, where: str, template: Record) -> dict:
        """A table of named entries, each decoded against its own template; a name the
        template lacks is refused, naming it and those it has."""
        out: dict = self.remember(node, {})
        for entry in self.items(node, "dict", where):
            name, value = entry
            place = f"{where}, {template.what} {name!r}" if where else f"{template.what} {name!r}"
            if not isinstance(name, str) or name not in template.fields:
                known = ", ".join(sorted(template.fields)) or "none"
                raise StateCodecError(f"{place}: the rebuilt scenario has no such {template.what} (it has: {known})")
            if name in out:
                raise StateCodecError(f"{place}: given twice")
            out[name] = self(value, place, template.fields[name])
        return out

    def _type_fits(self, cls: type, where: str, template: Any) -> type:
        if self.schema and cls is not template:
            raise StateCodecError(f"{where}: holds the class {cls.__qualname__}; expected {_expected(template)}")
        return cls

    def decode_object(self, node: dict, where: str, template: Any) -> Any:
        module, qualname, attrs = node["object"]
        cls = _hopsim_class(module, qualname, where)
        if not isinstance(attrs, list) or len(attrs) > MAX_ITEMS:
            raise StateCodecError(f"{where}: the attributes of a {module}.{qualname} are not a list of pairs")
        # with a schema: the attributes the rebuilt object has, and what each may hold; an object
        # where the template says nothing (a data class) holds its fields, each plain data
        free = self.schema and (template is None or isinstance(template, _Free))
        known = _attributes(template) if self.schema and not free else None
        fields = {f.name for f in dataclasses.fields(cls)} if free and dataclasses.is_dataclass(cls) else None
        obj = cls.__new__(cls)
        self.remember(node, obj)
        set_attribute = object.__setattr__
        for name, value in attrs:
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
                raise StateCodecError(f"{where}: attribute name {name!r} refused")
            if not self.schema:
                tmpl = getattr(template, name, None) if template is not None else None
            elif known is not None and name in known:
                tmpl = known[name]
            elif fields is not None:
                if name not in fields:
                    raise StateCodecError(f"{where}: {module}.{qualname} has no field {name!r}")
                tmpl = FREE
            elif callable(own := inspect.getattr_static(cls, name, None)) or hasattr(own, "__get__"):
                raise StateCodecError(f"{where}: attribute {name!r} would hide {qualname}.{name}")
            else:
                tmpl = FREE  # one the object makes as it runs (a program's start): plain data
            set_attribute(obj, name, self(value, f"{where}.{name}", tmpl))
        return obj


def check_names(tree: Any, where: str = "state") -> None:
    """Refuse, before anything is decoded, a tree that names a class outside hopsim or a message
    type outside its schemas, or that nests deeper than decoding goes (a walk, not a recursion:
    any depth of JSON is walked in bounded stack)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > 4 * MAX_DEPTH:  # a level of the tree is at most four of JSON (an object's attribute)
            raise StateCodecError(f"{where}: the state nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, list):
            stack.extend((item, depth + 1) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        for tag in ("object", "named_tuple", "pydantic", "type"):
            named = node.get(tag)
            if isinstance(named, list) and len(named) >= 2 and isinstance(named[0], str) and isinstance(named[1], str):
                _hopsim_class(named[0], named[1], where)
        message = node.get("message")
        if isinstance(message, list) and message and isinstance(message[0], str):
            _message_class(message[0], where)
        stack.extend((value, depth + 1) for value in node.values())


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def decode(tree: Any, blobs: list[bytes], template: Any = None, where: str = "state") -> Any:
    """The value :func:`encode` gave ``tree`` and ``blobs`` for; functions are taken from
    ``template`` (the same value as the rebuilt scenario has it) at the same place."""
    return Decoder(blobs)(tree, where, template)


def canonical_json(tree: Any) -> str:
    """A tree as JSON with sorted keys and no spaces: equal trees, equal text."""
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), allow_nan=False)
