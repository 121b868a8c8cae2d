"""The topic registry: which port publishes to which topic and who subscribes.

Topics are named ``<island-or-vehicle>/<signal>``. A topic is either a *signal* (latest value
wins; at most one publishing model) or a *queue* (every message delivered once, in order; any
number of publishers). All ports on a topic carry the same protobuf type.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class WiringError(ValueError):
    """A port tie that cannot work; the message names the port, the topic and the fix."""


@dataclass(frozen=True)
class Subscription:
    island: str
    model: str
    port: str


@dataclass
class Topic:
    name: str
    msg_type: type
    queue: bool
    publishers: list[str] = field(default_factory=list)  # model names (or "scenario")
    subscribers: list[Subscription] = field(default_factory=list)

    @property
    def type_name(self) -> str:
        return self.msg_type.DESCRIPTOR.full_name


KERNEL_SOURCE = "kernel"  # the source of the kernel's own events; an island's are "kernel.<island>"


def kernel_topic(kind: int) -> str:
    """The topic of a kernel event of ``kind`` (``hopsim.KernelEvent.Kind``): ``kernel/<kind>``,
    lower case (``kernel/zero_crossing``): one topic per kind, whatever island it comes from."""
    from hopsim.schemas import KernelEvent

    return f"kernel/{KernelEvent.Kind.Name(kind).lower()}"


def is_kernel_source(source: str) -> bool:
    return source == KERNEL_SOURCE or source.startswith(KERNEL_SOURCE + ".")


def check_topic_name(name: str) -> None:
    parts = name.split("/")
    if len(parts) < 2 or not all(parts):
        raise WiringError(f"topic {name!r} must look like '<island-or-vehicle>/<signal>'")


class TopicRegistry:
    """All topics of a simulation, built while models are added."""

    def __init__(self):
        self.topics: dict[str, Topic] = {}

    def _topic(self, name: str, msg_type: type, queue: bool, who: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:  # a name is checked when its topic is made
            check_topic_name(name)
            topic = self.topics[name] = Topic(name, msg_type, queue)
            return topic
        if topic.msg_type is not msg_type:
            raise WiringError(
                f"{who} carries {msg_type.DESCRIPTOR.full_name} but topic {name!r} carries "
                f"{topic.type_name}; tie it to another topic"
            )
        if topic.queue != queue:
            kinds = ("signal", "queue")
            raise WiringError(
                f"{who} is a {kinds[queue]} but topic {name!r} is a {kinds[topic.queue]}; declare both ports alike"
            )
        return topic

    def add_publisher(self, name: str, msg_type: type, queue: bool, model: str) -> Topic:
        topic = self._topic(name, msg_type, queue, f"output of {model}")
        if not queue and topic.publishers and model not in topic.publishers:
            raise WiringError(
                f"signal topic {name!r} already has publisher {topic.publishers[0]!r}; "
                f"{model!r} cannot publish there too (declare a queue or use another topic)"
            )
        if model not in topic.publishers:
            topic.publishers.append(model)
        return topic

    def add_subscriber(self, name: str, msg_type: type, queue: bool, sub: Subscription) -> Topic:
        topic = self._topic(name, msg_type, queue, f"input {sub.model}.{sub.port}")
        topic.subscribers.append(sub)
        return topic

    def get(self, name: str) -> Topic:
        try:
            return self.topics[name]
        except KeyError:
            raise WiringError(f"no topic {name!r}; known topics: {sorted(self.topics)}") from None
