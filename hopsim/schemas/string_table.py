"""The string table of typed rows: each distinct string or bytes value stored once, rows hold its index."""

from __future__ import annotations

import numpy as np


class StringTable:
    """The strings and bytes values of rows, each distinct value stored once.

    A row's string or bytes field holds the value's index here (``intern``). Index 0 is the empty
    value. The table only grows: indexes held by rows stay valid for the table's life. Strings are
    stored as their UTF-8 bytes, so ``"a"`` and ``b"a"`` share an index.
    """

    def __init__(self):
        self._index: dict[bytes, int] = {b"": 0}
        self._values: list[bytes] = [b""]
        self._data = np.zeros(1024, np.uint8)  # the values back to back
        self._starts = np.zeros(64, np.int64)  # value i is _data[_starts[i]:_starts[i + 1]]
        self._used = 0

    def __len__(self) -> int:
        return len(self._values)

    def intern(self, value: str | bytes) -> int:
        """The index of ``value``, added if new."""
        key = value.encode() if isinstance(value, str) else bytes(value)
        i = self._index.get(key)
        if i is not None:
            return i
        i = len(self._values)
        end = self._used + len(key)
        if end > len(self._data):
            self._data = _grown(self._data, end)
        if i + 2 > len(self._starts):
            self._starts = _grown(self._starts, i + 2)
        self._data[self._used : end] = np.frombuffer(key, np.uint8)
        self._starts[i + 1] = end
        self._used = end
        self._index[key] = i
        self._values.append(key)
        return i

    def bytes_at(self, i: int) -> bytes:
        return self._values[i]

    def text_at(self, i: int) -> str:
        return self._values[i].decode()

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(data, starts)`` for the encoder: value ``i`` is ``data[starts[i]:starts[i + 1]]``."""
        return self._data[: self._used], self._starts[: len(self._values) + 1]


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` in a buffer of at least ``size`` elements (twice its length at least), zero beyond it."""
    grown = np.zeros(max(size, 2 * len(array)), array.dtype)
    grown[: len(array)] = array
    return grown
