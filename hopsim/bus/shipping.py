"""What an island host hands the driver's recorder for a window, in the order it recorded it.

A host records two kinds of things (:mod:`hopsim.kernel.distributed.host`): envelopes, one by
one, and its row blocks' instants as columns (:class:`~hopsim.bus.recorder.EncodedColumns`:
arrays and one buffer of payload bytes, no object per message). Both travel as they are: runs of
envelopes as :class:`~hopsim.bus.packed.EnvelopeBlock` s, columns as their arrays. A block's
routes (:class:`~hopsim.bus.recorder.RowChannels`, one prototype envelope per output and row)
travel once, with the first columns that use them; later columns name them by number, and the
driver keeps its copy (whose channel ids its recorder fills in) until the host says the block is
gone (a block re-forms after a fault, a contact or a run's return, each forming with routes of
its own).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from hopsim.bus.packed import EnvelopeBlock
from hopsim.bus.recorder import EncodedColumns, RowChannels


class ColumnsSender:
    """A host's side: packs what it recorded in a window, numbering each block's routes while the
    block lives (a number is never used again)."""

    def __init__(self):
        self._numbers: dict[int, int] = {}  # id(routes) -> number, while the routes live
        self._alive: dict[int, weakref.ref] = {}  # number -> the routes
        self._next = 0
        self._gone: list[int] = []  # numbers whose routes died since the last pack

    def pack(self, recorded: list[tuple[Any, bool | None]]) -> list[tuple]:
        """``recorded`` [(envelope, queue) or (EncodedColumns, None)], in order, as parts:
        ("forget", numbers) first if routes numbered before are gone, then ("envelopes",
        EnvelopeBlock) for each run of envelopes and ("columns", number, routes the first time else
        None, t_ns, counts, seqs, starts, offsets, data) for each instant of a block."""
        parts: list[tuple] = []
        if self._gone:
            parts.append(("forget", self._gone))
            self._gone = []
        run: list[tuple] = []
        for item, queue in recorded:
            if queue is not None:
                run.append((item, queue))
                continue
            if run:
                parts.append(("envelopes", EnvelopeBlock.pack(run)))
                run = []
            number, new = self._number(item.channels)
            parts.append(
                (
                    "columns",
                    number,
                    item.channels if new else None,
                    item.t_ns,
                    item.counts,
                    item.seqs,
                    item.starts,
                    item.offsets,
                    item.data,
                )
            )
        if run:
            parts.append(("envelopes", EnvelopeBlock.pack(run)))
        return parts

    def _number(self, channels: RowChannels) -> tuple[int, bool]:
        """The number of a block's routes, and whether it is new (the routes travel with it)."""
        number = self._numbers.get(id(channels))
        if number is not None:
            return number, False  # (an entry's routes are alive: no other object has their id)
        number = self._next
        self._next += 1
        self._numbers[id(channels)] = number
        self._alive[number] = weakref.ref(channels, functools.partial(self._died, id(channels), number))
        return number, True

    def _died(self, key: int, number: int, _ref) -> None:
        """The routes numbered ``number`` are gone (their block ended): the driver forgets them too."""
        del self._numbers[key], self._alive[number]
        self._gone.append(number)

    def known(self) -> int:
        """How many blocks' routes are numbered now (those of the blocks alive)."""
        return len(self._numbers)


class ColumnsReceiver:
    """The driver's side for one host: the parts back as [(t_ns, EncodedEnvelope or
    EncodedColumns, queue or None)], in order."""

    def __init__(self):
        self._channels: dict[int, RowChannels] = {}

    def unpack(self, parts: list[tuple]) -> list[tuple]:
        items: list[tuple] = []
        for part in parts:
            if part[0] == "envelopes":
                items.extend((env.t_ns, env, queue) for env, queue in part[1].unpack())
                continue
            if part[0] == "forget":
                for number in part[1]:
                    del self._channels[number]
                continue
            _, number, channels, t_ns, counts, seqs, starts, offsets, data = part
            if channels is not None:
                self._channels[number] = channels.received()
            items.append(
                (t_ns, EncodedColumns(t_ns, self._channels[number], counts, seqs, starts, offsets, data), None)
            )
        return items

    def known(self) -> int:
        """How many blocks' routes this side holds."""
        return len(self._channels)


def record_items(recorder, items: list[tuple]) -> None:
    """Hand [(t_ns, envelope or EncodedColumns, queue or None)] to ``recorder`` in that order
    (columns to a recorder that takes none as their envelopes, one by one)."""
    takes_columns = hasattr(recorder, "record_columns")
    for _t, item, queue in items:
        if queue is not None:
            recorder.record(item, queue=queue)
        elif takes_columns:
            recorder.record_columns(item)
        else:
            for env, q in item.envelopes_with_queues():
                recorder.record(env, queue=q)


__all__ = ["ColumnsReceiver", "ColumnsSender", "record_items"]
