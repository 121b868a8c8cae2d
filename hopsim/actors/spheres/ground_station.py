"""The laptop: sends acknowledged commands to the vehicles and receives their telemetry (STL).

A command goes out as a COMMAND packet ``[sequence, code, args...]``; the vehicle answers with
an ACK carrying the same bytes; a matching ACK makes the laptop send GO ``[sequence]``, on which
the vehicle executes the command. Without a good ACK within ``ack_timeout_s`` the command is
resent, up to ``max_resends`` times. Telemetry is not acknowledged; frames failing the checksum
are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hopsim.actors.spheres import packets
from hopsim.actors.spheres.params import RadioParams
from hopsim.kernel import In, Model, Out, VariableRate
from hopsim.kernel.simtime import seconds
from hopsim.schemas.spheres_pb2 import GroundCommand, RadioPacket


@dataclass
class Outstanding:
    vehicle: str
    payload: bytes
    sent_ns: list[int] = field(default_factory=list)
    acked_ns: int | None = None


class GroundStation(Model):
    """The laptop.

    Inputs: ``rx`` (RadioPacket from the STL channel), ``commands`` (GroundCommand, queue: from
    the scenario or injected while running); a message on either is handled when it arrives.
    Output: ``tx`` (RadioPacket to the STL channel). ``schedule`` lists (t_s, GroundCommand) to
    send at t_s. Variable-rate I/O: the scheduled sends, the resend deadlines, and a watchdog
    every ``watchdog_period_s`` (which catches the deadlines of commands sent on arrival).
    """

    inputs = {"rx": In(RadioPacket, queue=True, trigger=True), "commands": In(GroundCommand, queue=True, trigger=True)}
    outputs = {"tx": Out(RadioPacket, queue=True)}
    io_schedule = VariableRate()
    feed_through = False

    def __init__(
        self,
        name: str,
        node_ids: dict[str, int],
        params: RadioParams,
        schedule: list[tuple[float, GroundCommand]] | None = None,
        watchdog_period_s: float = 1.0,
    ):
        super().__init__(name)
        self.watchdog_ns = seconds(watchdog_period_s)
        self.node_ids = dict(node_ids)
        self.names = {v: k for k, v in node_ids.items()}
        self.params = params
        self.schedule = sorted(((seconds(t), c) for t, c in (schedule or [])), key=lambda x: x[0])
        self.timeout_ns = seconds(params.ack_timeout_s)
        self.seq = 0
        self.outstanding: dict[int, Outstanding] = {}
        self.completed: list[Outstanding] = []
        self.failed: list[Outstanding] = []
        self.telemetry: dict[str, list[tuple[int, tuple]]] = {}
        self.bad_frames = 0
        self.to_send: list[bytes] = []

    def _frame(self, to: int, ptype: int, data: bytes, t_ns: int) -> bytes:
        return packets.encode(
            packets.Packet(to, packets.LAPTOP, ptype, (t_ns // 1_000_000) & 0xFFFF, data), self.params.start_byte
        )

    def _send_command(self, cmd: GroundCommand, t_ns: int) -> None:
        self.seq = (self.seq + 1) % 256
        payload = bytes([self.seq, cmd.command]) + bytes(cmd.args)
        self.outstanding[self.seq] = Outstanding(cmd.vehicle, payload, [t_ns])
        self.to_send.append(self._frame(self.node_ids[cmd.vehicle], packets.COMMAND, payload, t_ns))

    def next_io_time(self, t_ns: int) -> int | None:
        times = [(t_ns // self.watchdog_ns + 1) * self.watchdog_ns]
        if self.schedule:
            times.append(self.schedule[0][0])
        times += [out.sent_ns[-1] + self.timeout_ns for out in self.outstanding.values()]
        return min(x for x in times if x > t_ns)

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        t = t1_ns
        for msg in self.drain("rx"):
            pkt = packets.decode(msg.frame, self.params.start_byte)
            if pkt is None or pkt.to != packets.LAPTOP:
                self.bad_frames += pkt is None
                continue
            if pkt.type == packets.ACK and pkt.data:
                out = self.outstanding.get(pkt.data[0])
                if out is not None and out.payload == pkt.data and out.acked_ns is None:
                    out.acked_ns = t
                    self.to_send.append(self._frame(pkt.source, packets.GO, bytes([pkt.data[0]]), t))
                    self.completed.append(self.outstanding.pop(pkt.data[0]))
            elif pkt.type == packets.TELEMETRY:
                name = self.names.get(pkt.source, str(pkt.source))
                self.telemetry.setdefault(name, []).append((msg.rx_ns, packets.unpack_state(pkt.data)))
        while self.schedule and self.schedule[0][0] <= t:
            self._send_command(self.schedule.pop(0)[1], t)
        for cmd in self.drain("commands"):
            self._send_command(cmd, t)
        for seq, out in list(self.outstanding.items()):
            if t - out.sent_ns[-1] >= self.timeout_ns:
                if len(out.sent_ns) > self.params.max_resends:
                    self.failed.append(self.outstanding.pop(seq))
                    continue
                out.sent_ns.append(t)
                self.to_send.append(self._frame(self.node_ids[out.vehicle], packets.COMMAND, out.payload, t))

    def update_flow_outs(self, t_ns: int) -> None:
        for frame in self.to_send:
            self.write("tx", RadioPacket(channel="stl", sender=self.name, t_ns=t_ns, frame=frame))
        self.to_send = []
