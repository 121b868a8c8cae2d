"""What a Ray island host ships to the driver's recorder per window (hopsim.bus.shipping), without
Ray: the parts a host packs, unpacked as the driver does, give back every envelope and column in
order, and a block's routes are held on both sides only while the block lives."""

from __future__ import annotations

import pickle

import numpy as np

from hopsim.bus.packed import EncodedEnvelope
from hopsim.bus.recorder import EncodedColumns, RowChannels
from hopsim.bus.shipping import ColumnsReceiver, ColumnsSender
from hopsim.schemas import VehicleState, Wrench


def _routes(tag: str, n: int = 3) -> RowChannels:
    prototypes = [
        EncodedEnvelope(
            0, 10**9 * (p % 2), f"{tag}{p}", f"{tag}{p}/state", 0, p - 1, b"", VehicleState if p % 2 else Wrench
        )
        for p in range(n)
    ]
    return RowChannels(prototypes, [p == 2 for p in range(n)], list(range(n)), frozenset())


def _columns(routes: RowChannels, t_ns: int, rng) -> EncodedColumns:
    n = len(routes.prototypes)
    counts = rng.integers(0, 3, n)
    payloads = [rng.bytes(int(rng.integers(0, 40))) for _ in range(int(counts.sum()))]
    return EncodedColumns(
        t_ns,
        routes,
        counts,
        rng.integers(0, 1000, n),
        np.concatenate(([0], np.cumsum(counts)[:-1])),
        np.concatenate(([0], np.cumsum([len(p) for p in payloads]))).astype(np.int64),
        b"".join(payloads),
    )


def _envelope(t_ns: int, seq: int) -> EncodedEnvelope:
    return EncodedEnvelope(t_ns, t_ns + 1, "gs", "gs/cmd", seq, 0, b"\x08\x01", Wrench)


def _shipped(parts: list[tuple]) -> list[tuple]:
    """The parts as the driver gets them from another process (Ray pickles them)."""
    return pickle.loads(pickle.dumps(parts))


def _same(a: EncodedColumns, b: EncodedColumns) -> None:
    assert a.t_ns == b.t_ns and a.data == b.data
    for name in ("counts", "seqs", "starts", "offsets"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert [e.topic for e in a.channels.prototypes] == [e.topic for e in b.channels.prototypes]
    assert a.channels.queues == b.channels.queues


def test_windows_round_trip_in_order_and_routes_travel_once():
    rng = np.random.default_rng(5)
    sender, receiver = ColumnsSender(), ColumnsReceiver()
    a, b = _routes("a"), _routes("b", 4)
    sent_routes = 0
    for w in range(6):
        t = w * 10**9
        recorded = [
            (_envelope(t, w), False),
            (_columns(a, t, rng), None),
            (_envelope(t, w + 100), True),
            (_columns(b, t, rng), None),
        ]
        parts = sender.pack(recorded)
        sent_routes += sum(1 for p in parts if p[0] == "columns" and p[2] is not None)
        items = receiver.unpack(_shipped(parts))
        assert [t_ns for t_ns, _, _ in items] == [t] * 4
        assert [(i.seq, q) for _, i, q in (items[0], items[2])] == [(w, False), (w + 100, True)]
        _same(items[1][1], recorded[1][0])
        _same(items[3][1], recorded[3][0])
    assert sent_routes == 2  # each block's routes in the first window only


def test_the_routes_of_ended_blocks_are_forgotten_on_both_sides():
    """A block re-formed 50 times (a new RowChannels each time, the old one dropped as its block
    ends): both sides hold the live blocks' routes only, and the columns after a forming name the
    new routes, never an old number."""
    rng = np.random.default_rng(6)
    sender, receiver = ColumnsSender(), ColumnsReceiver()
    steady = _routes("s")  # a block alive throughout
    numbers = set()
    for k in range(50):
        reformed = _routes(f"r{k}_")
        parts = sender.pack([(_columns(steady, k, rng), None), (_columns(reformed, k, rng), None)])
        numbers.add(parts[-1][1])
        items = receiver.unpack(_shipped(parts))
        assert items[1][1].channels.prototypes[0].source == f"r{k}_0"
        del reformed, parts, items  # the block ends: nothing holds its routes
        assert sender.known() == 1  # the steady block's
    parts = sender.pack([(_columns(steady, 50, rng), None)])
    assert parts[0][0] == "forget"
    receiver.unpack(_shipped(parts))
    assert receiver.known() == 1 and len(numbers) == 50
