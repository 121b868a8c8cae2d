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

Shared references are kept (a value met twice is encoded once and referred to), so a decoded
snapshot has the same aliasing as the one captured. Sets are written sorted by their encoding, so
that equal states give equal trees in every process (PYTHONHASHSEED changes set order).
"""

from __future__ import annotations

import base64
import collections
import importlib
import json
import types
from typing import Any

import numpy as np
from google.protobuf.message import Message

__all__ = ["StateCodecError", "Encoder", "Decoder", "encode", "decode", "canonical_json"]

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


class Decoder:
    """Decodes the trees of one :class:`Encoder`, in the order it wrote them."""

    def __init__(self, blobs: list[bytes]):
        self.blobs = blobs
        self.memo: dict[int, Any] = {}

    def blob(self, index: Any, where: str) -> bytes:
        if not isinstance(index, int) or not 0 <= index < len(self.blobs):
            raise StateCodecError(f"{where}: refers to data block {index!r}, which the file does not hold")
        return self.blobs[index]

    def remember(self, node: dict, obj: Any) -> Any:
        if "id" in node:
            self.memo[node["id"]] = obj
        return obj

    def __call__(self, node: Any, where: str, template: Any = None) -> Any:
        if node is None or isinstance(node, (bool, str)):
            return node
        if isinstance(node, int):
            return node
        if not isinstance(node, dict):
            raise StateCodecError(f"{where}: unexpected {type(node).__name__} in the state tree")
        try:
            return self.decode_node(node, where, template)
        except StateCodecError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as err:
            raise StateCodecError(f"{where}: malformed state entry ({type(err).__name__}: {err})") from None

    def decode_node(self, node: dict, where: str, template: Any) -> Any:
        if "f" in node:
            return float.fromhex(node["f"])
        if "ref" in node:
            if node["ref"] not in self.memo:
                raise StateCodecError(f"{where}: refers to value {node['ref']!r} before it is complete")
            return self.memo[node["ref"]]
        if "array" in node:
            descr, shape, index = node["array"]
            dtype = np.lib.format.descr_to_dtype(descr)
            if dtype.hasobject:
                raise StateCodecError(f"{where}: object arrays are refused")
            arr = np.frombuffer(self.blob(index, where), dtype=dtype).reshape(shape).copy()
            return self.remember(node, arr)
        if "scalar" in node:
            descr, index = node["scalar"]
            dtype = np.lib.format.descr_to_dtype(descr)
            if dtype.hasobject:
                raise StateCodecError(f"{where}: object scalars are refused")
            return np.frombuffer(self.blob(index, where), dtype=dtype)[0]
        if "bytes" in node:
            return base64.b64decode(node["bytes"], validate=True)
        if "message" in node:
            full_name, data = node["message"]
            msg = _message_class(full_name, where)()
            msg.ParseFromString(base64.b64decode(data, validate=True))
            return self.remember(node, msg)
        if "list" in node:
            out: list = self.remember(node, [])
            tmpl = template if isinstance(template, list) else None
            out.extend(
                self(v, f"{where}[{i}]", tmpl[i] if tmpl is not None and i < len(tmpl) else None)
                for i, v in enumerate(node["list"])
            )
            return out
        if "tuple" in node:
            tmpl = template if isinstance(template, tuple) else None
            items = tuple(
                self(v, f"{where}[{i}]", tmpl[i] if tmpl is not None and i < len(tmpl) else None)
                for i, v in enumerate(node["tuple"])
            )
            return self.remember(node, items)
        if "named_tuple" in node:
            module, qualname, values = node["named_tuple"]
            cls = _hopsim_class(module, qualname, where)
            if not (issubclass(cls, tuple) and hasattr(cls, "_fields")) or len(values) != len(cls._fields):
                raise StateCodecError(f"{where}: {module}.{qualname} is not a named tuple of {len(values)} fields")
            items = [
                self(v, f"{where}.{f}", getattr(template, f, None)) for f, v in zip(cls._fields, values, strict=True)
            ]
            return self.remember(node, tuple.__new__(cls, items))
        if "dict" in node:
            out_d: dict = self.remember(node, {})
            tmpl = template if isinstance(template, dict) else {}
            for k, v in node["dict"]:
                key = self(k, f"{where} key")
                out_d[key] = self(v, f"{where}[{key!r}]", tmpl.get(key) if _hashable(key) else None)
            return out_d
        if "set" in node or "frozenset" in node:
            kind = "set" if "set" in node else "frozenset"
            items = [self(v, f"{where} item") for v in node[kind]]
            return self.remember(node, set(items) if kind == "set" else frozenset(items))
        if "deque" in node:
            dq: collections.deque = self.remember(node, collections.deque(maxlen=node.get("maxlen")))
            dq.extend(self(v, f"{where}[{i}]") for i, v in enumerate(node["deque"]))
            return dq
        if "generator" in node:
            kind, state = node["generator"]
            bit_generator = getattr(np.random, kind, None)
            if not (isinstance(bit_generator, type) and issubclass(bit_generator, np.random.BitGenerator)):
                raise StateCodecError(f"{where}: unknown bit generator {kind!r}")
            bg = bit_generator()
            bg.state = self(state, f"{where}.state")
            return self.remember(node, np.random.Generator(bg))
        if "function" in node:
            if callable(template):
                return template
            raise StateCodecError(
                f"{where}: the checkpoint holds a function ({node['function']}) here, and the "
                f"rebuilt scenario has none at this place to take instead; functions are "
                f"rebuilt by the scenario, never read from a file"
            )
        if "message_type" in node:
            return _message_class(node["message_type"], where)
        if "builtin_type" in node:
            allowed = {
                t.__name__: t for t in (int, float, bool, str, bytes, list, tuple, dict, set, frozenset, type(None))
            }
            if node["builtin_type"] not in allowed:
                raise StateCodecError(f"{where}: builtin type {node['builtin_type']!r} refused")
            return allowed[node["builtin_type"]]
        if "type" in node:
            module, qualname = node["type"]
            return _hopsim_class(module, qualname, where)
        if "pydantic" in node:
            module, qualname, fields = node["pydantic"]
            cls = _hopsim_class(module, qualname, where)
            if not hasattr(cls, "model_validate"):
                raise StateCodecError(f"{where}: {module}.{qualname} is not a parameter model")
            return self.remember(node, cls.model_validate(self(fields, where)))
        if "object" in node:
            module, qualname, attrs = node["object"]
            cls = _hopsim_class(module, qualname, where)
            obj = cls.__new__(cls)
            self.remember(node, obj)
            set_attribute = object.__setattr__
            for name, value in attrs:
                if not isinstance(name, str):
                    raise StateCodecError(f"{where}: attribute name {name!r} is not a string")
                tmpl = getattr(template, name, None) if template is not None else None
                set_attribute(obj, name, self(value, f"{where}.{name}", tmpl))
            return obj
        raise StateCodecError(f"{where}: unknown entry with keys {sorted(node)}")


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
