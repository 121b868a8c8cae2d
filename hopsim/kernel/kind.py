"""Model kinds: a model's state declared once, its laws written once over one row.

A *kind* is a model class whose state is declared as typed, united fields::

    class FormationThruster(ContinuousModel):
        kind = Kind(
            Field("max_thrust_N", unit="N", doc="per-axis limit"),
            Field("force_N", shape=(3,), unit="N", doc="latched force, inertial frame"),
            Field("saturated_hops", "i8", doc="hops whose command was clipped"),
        )

The declaration is a numpy structured dtype (:attr:`Kind.dtype`). Every instance holds its state
as one row of it (``model.row``, an array of one record, created by :class:`Model`'s constructor);
each field reads and writes as an attribute of the model (``model.force_N`` is a view of the row's
field, ``model.saturated_hops`` a Python number). Snapshots, checkpoints and state hashes carry
the row like any other attribute.

A kind's laws are numba functions of one record (``s.force_N[0]``, ``s.saturated_hops += 1``), of
its input rows, its generator's draws (drawn beforehand, by the model, into its row) and time. A
law is run by a *row loop*: a compiled loop over the due rows of a table of records, handed in as
bytes (:func:`as_bytes`; numba's dispatch of a structured array costs tens of microseconds, that
of bytes one) and viewed as records inside::

    @njit(cache=True)
    def latch_command_rows(table, due, fresh, cmd_N, dt_s):
        s = table.view(THRUSTER)
        for j in range(due.shape[0]):
            i = due[j]
            latch_command(s[i], fresh[i], cmd_N[i], dt_s)

A model alone calls the loop over its one row (``due`` = :data:`ONE`); a block of a rate group's
vehicles (:mod:`hopsim.kernel.blocks`) calls the same loop over all its rows. The arithmetic is the
same code for one row and for many, so grouping changes no bit of the result. Each law has one row
loop, written beside it (numba caches neither closures nor functions taking a compiled function as
an argument, so the loop cannot be generated or passed the law; ``tests/test_kinds.py`` holds every
loop to this shape).

A table of a kind's rows, for many models, is :meth:`Kind.rows`; :meth:`Kind.gather` and
:meth:`Kind.scatter` copy the models' rows into it and back, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# The due rows of a model alone: its one row.
ONE = np.zeros(1, np.int64)


@dataclass(frozen=True)
class Field:
    """One field of a kind's state: ``name``, numpy ``type`` (``"f8"`` float64, ``"i8"`` int64,
    ``"?"`` bool), ``shape`` (``()`` a number), ``unit`` and meaning (``doc``, with the frame of a
    vector), and the ``default`` a new row holds (every element)."""

    name: str
    type: str = "f8"
    shape: tuple[int, ...] = ()
    unit: str = ""
    doc: str = ""
    default: Any = 0

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"field name {self.name!r} must be a public Python identifier")
        if np.dtype(self.type).hasobject:
            raise ValueError(f"field {self.name}: a row holds numbers only, not {self.type!r}")


class Kind:
    """The state declaration of a model kind: its :class:`Field` s, in order."""

    def __init__(self, *fields: Field):
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"a kind's fields must have distinct names: {names}")
        self.fields = fields
        self.dtype = np.dtype([(f.name, f.type, f.shape) for f in fields])
        self._defaults = [(f.name, f.default) for f in fields if np.any(f.default)]

    def rows(self, n: int) -> np.ndarray:
        """``n`` new rows, each field at its default."""
        table = np.zeros(n, self.dtype)
        for name, default in self._defaults:
            table[name] = default
        return table

    def gather(self, models: list) -> np.ndarray:
        """A table of the models' rows, in order (copies)."""
        table = np.empty(len(models), self.dtype)
        for i, m in enumerate(models):
            table[i] = m.row[0]
        return table

    @staticmethod
    def scatter(table: np.ndarray, models: list) -> None:
        """Each model's row back from the table: the exact bytes."""
        for i, m in enumerate(models):
            m.row[0] = table[i]

    def __set_name__(self, owner: type, name: str) -> None:
        """Each field becomes an attribute of the model class (unless the class defines one)."""
        for f in self.fields:
            if f.name not in vars(owner):
                setattr(owner, f.name, _array_field(f.name) if f.shape else _number_field(f.name))

    def describe(self) -> list[tuple[str, str, str, str]]:
        """(name, type and shape, unit, meaning) of each field, for documentation."""
        return [(f.name, f.type + (str(list(f.shape)) if f.shape else ""), f.unit, f.doc) for f in self.fields]


def as_bytes(table: np.ndarray) -> np.ndarray:
    """A table of records as the bytes a row loop takes (a view: the loop writes into the table)."""
    return table.view(np.uint8)


def _number_field(name: str) -> property:
    def get(self):
        return self.row[name][0].item()

    def put(self, value) -> None:
        self.row[name][0] = value

    return property(get, put, doc=f"the row's field ``{name}``")


def _array_field(name: str) -> property:
    def get(self):
        return self.row[name][0]  # a view: writing into it writes the row

    def put(self, value) -> None:
        self.row[name][0] = value

    return property(get, put, doc=f"the row's field ``{name}`` (a view of it)")


__all__ = ["ONE", "Field", "Kind", "as_bytes"]
