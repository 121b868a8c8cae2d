"""What an island host hands the driver's recorder for a window, in the order it recorded it.

A host records two kinds of things (:mod:`hopsim.kernel.distributed.host`): envelopes, one by
one, and its row blocks' instants as columns (:class:`~hopsim.bus.recorder.EncodedColumns`:
arrays and one buffer of payload bytes, no object per message). Both travel as they are: runs of
envelopes as :class:`~hopsim.bus.packed.EnvelopeBlock` s, columns as their arrays. A block's
routes (:class:`~hopsim.bus.recorder.RowChannels`, one prototype envelope per output and row)
travel once, with the first columns that use them; later columns name them by number, and the
driver keeps its copy (whose channel ids its recorder fills in).
"""
from __future__ import annotations

from typing import Any

from hopsim.bus.packed import EnvelopeBlock
from hopsim.bus.recorder import EncodedColumns, RowChannels


class ColumnsSender:
    """A host's side: packs what it recorded in a window, numbering each block's routes."""

    def __init__(self):
        self._numbers: dict[int, tuple[int, RowChannels]] = {}    # id -> (number, the routes: kept alive)

    def pack(self, recorded: list[tuple[Any, bool | None]]) -> list[tuple]:
        """``recorded`` [(envelope, queue) or (EncodedColumns, None)], in order, as parts:
        ("envelopes", EnvelopeBlock) for each run of envelopes, ("columns", number, routes the
        first time else None, t_ns, counts, seqs, starts, offsets, data) for each instant of a block."""
        parts: list[tuple] = []
        run: list[tuple] = []
        for item, queue in recorded:
            if queue is not None:
                run.append((item, queue))
                continue
            if run:
                parts.append(("envelopes", EnvelopeBlock.pack(run)))
                run = []
            number = self._numbers.get(id(item.channels))
            new = number is None
            if new:
                number = self._numbers[id(item.channels)] = (len(self._numbers), item.channels)
            parts.append(("columns", number[0], item.channels if new else None, item.t_ns, item.counts, item.seqs,
                          item.starts, item.offsets, item.data))
        if run:
            parts.append(("envelopes", EnvelopeBlock.pack(run)))
        return parts


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
            _, number, channels, t_ns, counts, seqs, starts, offsets, data = part
            if channels is not None:
                self._channels[number] = channels.received()
            items.append((t_ns, EncodedColumns(t_ns, self._channels[number], counts, seqs, starts, offsets, data),
                          None))
        return items


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
