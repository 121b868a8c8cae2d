"""The bus: topics, envelopes, ordering, delivery and recording."""

from hopsim.bus.envelope import Envelope
from hopsim.bus.recorder import McapRecorder, MemoryRecorder, read_envelopes, read_metadata
from hopsim.bus.topics import Subscription, Topic, TopicRegistry, WiringError

__all__ = [
    "Envelope",
    "McapRecorder",
    "MemoryRecorder",
    "Subscription",
    "Topic",
    "TopicRegistry",
    "WiringError",
    "read_envelopes",
    "read_metadata",
]
