"""Playback: a stand-in that republishes a model's recorded outputs at their recorded instants.

Partial replay keeps some actors live and replaces every other one by a :class:`Playback` with
the same name and output ports, so the live actors receive exactly the inputs they received in
the recorded run (same instants, same sequence numbers, same payload bytes).
"""

from __future__ import annotations

import bisect
from typing import Any

from hopsim.kernel.model import Model, VariableRate


class Playback(Model):
    """Publishes ``messages`` [(t_ns, port, payload)] of one recorded source, in order."""

    io_schedule = VariableRate()
    feed_through = False

    def __init__(self, name: str, outputs: dict, messages: list[tuple[int, str, Any]]):
        super().__init__(name)
        self.outputs = dict(outputs)
        self.inputs = {}
        self.ports = {}
        self._messages = messages
        self._times = sorted({t for t, _, _ in messages})
        self._next = 0

    def snapshot(self):
        """A playback's only state is how far it has got (the messages are fixed data)."""
        return self._next

    def restore(self, snapshot) -> None:
        self._next = snapshot

    def on_fault(self, fault, t_ns: int) -> None:
        """The recorded outputs already carry the fault's effect."""

    def next_io_time(self, t_ns: int) -> int | None:
        i = bisect.bisect_right(self._times, t_ns)
        return self._times[i] if i < len(self._times) else None

    def update_flow_outs(self, t_ns: int) -> None:
        msgs = self._messages
        while self._next < len(msgs) and msgs[self._next][0] < t_ns:
            self._next += 1
        while self._next < len(msgs) and msgs[self._next][0] == t_ns:
            _, port, payload = msgs[self._next]
            self.write(port, payload)
            self._next += 1


class PlaybackPlan:
    """Which models stay live, and the recorded outputs of the others, by source name."""

    def __init__(self, live: set[str], recorded_by_source: dict[str, list[tuple[int, str, Any]]]):
        self.live = set(live)
        self.recorded = recorded_by_source  # source -> [(t_ns, topic, payload)]
        self.replaced: list[str] = []

    def stand_in(self, model: Model, out_topics: dict[str, str]) -> Model:
        """``model`` itself if live, else its playback (recorded topics mapped back to ports)."""
        if model.name in self.live:
            return model
        port_of = {topic: port for port, topic in out_topics.items()}
        messages = [
            (t, port_of[topic], payload) for t, topic, payload in self.recorded.get(model.name, []) if topic in port_of
        ]
        self.replaced.append(model.name)
        stand_in = Playback(model.name, model.outputs, messages)
        stand_in.accepts_faults = tuple(model.accepts_faults)  # faults for it are recorded, then ignored
        return stand_in
