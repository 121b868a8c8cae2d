"""A SPHERES radio channel (STS or STL): half-duplex broadcast with a token ring.

Every node on the channel hears every frame and keeps those addressed to it (or to everyone).
Medium access is a token ring: the token (a 9-byte frame) passes from node to node in a fixed
order; the holder may send ``max_packets_per_token`` queued packets, then passes the token on.
Only the holder transmits, so frames never collide, and a frame of n bytes occupies the channel
for n * 8 / bitrate seconds (19.2 kbps).

The ring is simulated exactly but lazily: while nobody has traffic the token's position is a
closed-form function of time, so an idle channel costs nothing. When packets are waiting, each
one's transmission starts at the first arrival of the token at its sender after the packet was
handed over (and after the frames ahead of it), and the frame reaches the other nodes when its
last byte has been sent.

The channel latches the packets handed to it at its poll instants (``poll_period_s`` with
``poll_phase_ns``); the flight software and the laptop hand packets over on the same 10 Hz grid,
so latching delays none of them, and a transmission is committed only when it starts before the
next grid instant, when no packet can yet be unknown to the channel.

Per receiver, a frame may be lost (``loss_probability``) or hit by bit errors (``bit_error_rate``),
which the receiver's checksum check then rejects.

Faults: ``radio_loss`` (value = loss probability), ``radio_delay`` (value = extra delivery delay
in seconds), ``partition`` (``vehicles`` lists one side; frames between sides are lost), each for
``duration_s`` (0: until cleared).
"""

from __future__ import annotations

from collections import deque

from hopsim.actors.spheres import packets
from hopsim.actors.spheres.params import RadioParams
from hopsim.kernel import In, Model, Out, VariableRate
from hopsim.kernel.bounds import check_probability
from hopsim.kernel.faults import MAX_FAULT_TIME_S
from hopsim.kernel.simtime import NS_PER_S, seconds
from hopsim.schemas.spheres_pb2 import RadioPacket


def tx_port(node: str) -> str:
    return f"tx_{node}"


def rx_port(node: str) -> str:
    return f"rx_{node}"


class RadioChannel(Model):
    """One half-duplex broadcast channel shared by ``nodes`` (names, in token order).

    Ports, per node: input ``tx_<node>`` (RadioPacket, queue) and output ``rx_<node>``.
    ``node_ids`` maps node names to the addresses used in frames.
    """

    io_schedule = VariableRate()
    feed_through = False
    accepts_faults = {
        "radio_loss": ("value", "duration_s", "clear"),
        "radio_delay": ("value", "duration_s", "clear"),
        "partition": ("vehicles", "duration_s", "clear"),
    }

    def __init__(self, name: str, nodes: list[str], node_ids: dict[str, int], params: RadioParams):
        self.inputs = {tx_port(n): In(RadioPacket, queue=True) for n in nodes}
        self.outputs = {rx_port(n): Out(RadioPacket, queue=True) for n in nodes}
        super().__init__(name)
        if len(nodes) < 2:
            raise ValueError(f"{name}: a channel needs at least two nodes, got {nodes}")
        self.nodes = list(nodes)
        self.node_ids = dict(node_ids)
        self._tx_ports = [tx_port(n) for n in self.nodes]
        self._rx_ports = [rx_port(n) for n in self.nodes]
        self.params = params
        self.byte_ns = 8.0 * NS_PER_S / params.bitrate_bps
        self.token_ns = round(packets.OVERHEAD * self.byte_ns)
        self.poll_period_ns = seconds(params.poll_period_s)
        self.poll_phase_ns = int(params.poll_phase_ns)
        self.token_holder = 0  # index of the node the token reaches at token_time_ns
        self.token_time_ns = 0
        self.queues = [deque() for _ in nodes]  # (t_handed_ns, RadioPacket) per node
        self.in_flight: list[tuple[int, int, int, RadioPacket]] = []  # (deliver_ns, seq, sender, pkt)
        self.to_write: list[tuple[str, RadioPacket]] = []
        self.loss_probability = params.loss_probability
        self.extra_delay_ns = 0
        self.partition: set[str] | None = None
        self.fault_ends: dict[str, int] = {}
        self.sent = 0
        self.delivered = 0
        self.dropped = 0
        self.busy_ns = 0
        self._seq = 0

    # ------------------------------------------------------------------ token ring
    def _first_token_at(self, node: int, not_before_ns: int) -> int:
        """First arrival of the idle-circulating token at ``node`` at or after ``not_before_ns``."""
        n = len(self.nodes)
        first = self.token_time_ns + ((node - self.token_holder) % n) * self.token_ns
        if first >= not_before_ns:
            return first
        lap = n * self.token_ns
        laps = -(-(not_before_ns - first) // lap)
        return first + laps * lap

    def _commit(self, horizon_ns: int) -> None:
        """Start every transmission whose token opportunity comes before ``horizon_ns``."""
        while True:
            if not any(self.queues):
                return
            best = None
            for j, q in enumerate(self.queues):
                if q:
                    t_op = self._first_token_at(j, q[0][0])
                    if best is None or t_op < best[0]:
                        best = (t_op, j)
            if best is None or best[0] >= horizon_ns:
                return
            t_start, j = best
            t = t_start
            for _ in range(self.params.max_packets_per_token):
                if not self.queues[j] or self.queues[j][0][0] > t_start:
                    break
                _, pkt = self.queues[j].popleft()
                duration = round(len(pkt.frame) * self.byte_ns)
                t += duration
                self.busy_ns += duration
                self.sent += 1
                self.in_flight.append((t + self.extra_delay_ns, self._seq, j, pkt))
                self._seq += 1
            # the holder passes the token on: the next node has it once the token frame is sent
            self.token_holder = (j + 1) % len(self.nodes)
            self.token_time_ns = t + self.token_ns
            self.in_flight.sort()

    # ------------------------------------------------------------------ lifecycle
    def _next_poll(self, t_ns: int) -> int:
        base = t_ns - self.poll_phase_ns
        return (base // self.poll_period_ns + 1) * self.poll_period_ns + self.poll_phase_ns

    def next_io_time(self, t_ns: int) -> int | None:
        nxt = self._next_poll(t_ns)
        for d, _, _, _ in self.in_flight:  # by delivery time: the first one ahead
            if d > t_ns:
                nxt = min(nxt, d)
                break
        for e in self.fault_ends.values():
            if e > t_ns:
                nxt = min(nxt, e)
        return nxt

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        t = t1_ns
        if self.fault_ends:
            for kind, t_end in list(self.fault_ends.items()):
                if t_end <= t:
                    del self.fault_ends[kind]
                    self._clear(kind)
        ports = self.ports
        for j, port in enumerate(self._tx_ports):
            if not ports[port].queued:  # draining an empty queue changes nothing
                continue
            for pkt in self.drain(port):
                # a packet handed over between polls counts from now: the channel saw it now
                handed = pkt.t_ns if pkt.t_ns >= t - self.poll_phase_ns else t
                self.queues[j].append((handed, pkt))
        if any(self.queues):
            horizon = self._next_poll(t) - self.poll_phase_ns
            self._commit(max(horizon, t + 1))
        while self.in_flight and self.in_flight[0][0] <= t:
            deliver_ns, _, sender, pkt = self.in_flight.pop(0)
            self._broadcast(sender, pkt, deliver_ns)

    def _broadcast(self, sender: int, pkt: RadioPacket, deliver_ns: int) -> None:
        """Every other node hears the frame; those it is addressed to receive it."""
        src = self.nodes[sender]
        for j, node in enumerate(self.nodes):
            if j == sender:
                continue
            if self.partition is not None and ((src in self.partition) != (node in self.partition)):
                self.dropped += 1
                continue
            if self.loss_probability > 0.0 and self.rng.random() < self.loss_probability:
                self.dropped += 1
                continue
            frame = self._with_bit_errors(pkt.frame)
            to = frame[1] if len(frame) > 1 else None
            if to not in (self.node_ids[node], packets.BROADCAST):
                continue
            self.delivered += 1
            self.to_write.append(
                (
                    self._rx_ports[j],
                    RadioPacket(
                        channel=pkt.channel or self.name,
                        sender=pkt.sender,
                        t_ns=pkt.t_ns,
                        rx_ns=deliver_ns,
                        frame=frame,
                    ),
                )
            )

    def _with_bit_errors(self, frame: bytes) -> bytes:
        ber = self.params.bit_error_rate
        if ber <= 0.0:
            return frame
        flips = self.rng.random(len(frame) * 8) < ber
        if not flips.any():
            return frame
        data = bytearray(frame)
        for bit in flips.nonzero()[0]:
            data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data)

    def update_flow_outs(self, t_ns: int) -> None:
        for port, pkt in self.to_write:
            self.write(port, pkt)
        self.to_write = []

    # ------------------------------------------------------------------ faults
    def _clear(self, kind: str) -> None:
        if kind == "radio_loss":
            self.loss_probability = self.params.loss_probability
        elif kind == "radio_delay":
            self.extra_delay_ns = 0
        else:
            self.partition = None

    def check_fault(self, fault) -> None:
        if fault.clear:
            return
        if fault.kind == "radio_delay" and not 0 <= fault.value <= MAX_FAULT_TIME_S:
            raise ValueError(
                f"{self.name}: fault 'radio_delay': value is the added delay in s, in [0, "
                f"{MAX_FAULT_TIME_S:g}], got {fault.value:g}"
            )
        if fault.kind == "radio_loss":
            check_probability(
                fault.value, f"{self.name}: fault 'radio_loss': value (the probability that a receiver misses a frame)"
            )

    def on_fault(self, fault, t_ns: int) -> None:
        if fault.clear:
            self._clear(fault.kind)
            self.fault_ends.pop(fault.kind, None)
            return
        if fault.kind == "radio_loss":
            self.loss_probability = fault.value  # check_fault: in [0, 1]
        elif fault.kind == "radio_delay":
            self.extra_delay_ns = seconds(fault.value)  # check_fault: in [0, MAX_FAULT_TIME_S]
        else:
            self.partition = set(fault.vehicles)
        if fault.duration_s > 0:
            self.fault_ends[fault.kind] = t_ns + seconds(fault.duration_s)
