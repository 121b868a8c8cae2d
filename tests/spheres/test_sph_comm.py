"""Radio: the packet format and checksum, the token ring's timing at 19.2 kbps, half-duplex
broadcast with destination filtering, loss and partition faults, acknowledged commands."""

import numpy as np
import pytest

from hopsim.actors.spheres import packets
from hopsim.actors.spheres.params import RadioParams
from hopsim.actors.spheres.radio import RadioChannel, rx_port, tx_port
from hopsim.kernel import In, Model, NoIo, Simulation
from hopsim.scenarios.catalog import get_scenario
from hopsim.schemas import Fault
from hopsim.schemas.spheres_pb2 import RadioPacket

NODES = ["n1", "n2", "n3"]
IDS = {"n1": 1, "n2": 2, "n3": 3}
TOKEN_S = 9 * 8 / 19200  # a token frame: 7 header + 2 checksum bytes


def test_frame_layout_and_checksum():
    data = bytes([200, 100, 7])
    frame = packets.encode(packets.Packet(to=2, source=1, type=packets.TELEMETRY, time_ms=0x1234, data=data))
    assert frame == bytes([0xA5, 2, 1, packets.TELEMETRY, 0x12, 0x34, 3, 200, 100, 7, 0x01, 0x33])
    assert packets.decode(frame) == packets.Packet(2, 1, packets.TELEMETRY, 0x1234, data)
    bad = bytearray(frame)
    bad[8] ^= 0x10  # a data bit: the checksum catches it
    assert packets.decode(bytes(bad)) is None
    bad = bytearray(frame)
    bad[2] ^= 0x01  # a header bit: the data sum cannot see it
    assert packets.decode(bytes(bad)).source == 0
    state = packets.pack_state(1, [1.3, 1.15, 1.15], [0.01, 0, 0], [0, 0, 0, 1], [0, 0, 0.1])
    flag, r, _v, _q, w = packets.unpack_state(state)
    assert flag == 1 and np.allclose(r, [1.3, 1.15, 1.15]) and np.allclose(w, [0, 0, 0.1], atol=1e-7)


class Sink(Model):
    inputs = {"rx": In(RadioPacket, queue=True)}
    io_schedule = NoIo()

    def __init__(self, name):
        super().__init__(name)
        self.got = []

    def end_io_step(self, t0, t1):
        self.got += [(t1, p) for p in self.drain("rx")]


def channel(params=None):
    sim = Simulation(seed=3)
    sim.add_island("comm")
    ch = sim.add_model(
        RadioChannel("sts", NODES, IDS, params or RadioParams()),
        "comm",
        ties={**{tx_port(n): f"{n}/tx" for n in NODES}, **{rx_port(n): f"{n}/rx" for n in NODES}},
    )
    sinks = {}
    for n in NODES:
        sim.add_island(n)
        sinks[n] = sim.add_model(Sink(f"{n}_sink"), n, ties={"rx": f"{n}/rx"})
    return sim, ch, sinks


def send(sim, src, to, n_data, t_s):
    frame = packets.encode(packets.Packet(IDS.get(to, to), IDS[src], packets.TELEMETRY, 0, bytes(n_data)))
    sim.inject(f"{src}/tx", RadioPacket(channel="sts", sender=src, t_ns=round(t_s * 1e9), frame=frame), t_s)
    return len(frame)


def first_token(node_index, t_s):
    """The idle ring: the token reaches node k at k * token + m * 3 * token."""
    m = 0
    while node_index * TOKEN_S + m * 3 * TOKEN_S < t_s - 1e-12:
        m += 1
    return node_index * TOKEN_S + m * 3 * TOKEN_S


@pytest.mark.parametrize("n_data,t_s", [(0, 0.3), (52, 0.3), (200, 0.7), (13, 0.5)])
def test_a_packet_of_n_bytes_arrives_after_its_token_wait_and_n_x_8_over_19200(n_data, t_s):
    sim, _ch, sinks = channel()
    n = send(sim, "n2", "n3", n_data, t_s)
    sim.advance_to(1.0)
    ((t_rx, pkt),) = sinks["n3"].got
    arrival = (t_rx - 1) / 1e9  # one nanosecond to cross islands
    assert arrival - t_s >= n * 8 / 19200
    assert arrival == pytest.approx(first_token(1, t_s) + n * 8 / 19200, abs=2e-9)
    assert pkt.rx_ns == t_rx - 1 and pkt.frame == packets.encode(
        packets.Packet(3, 2, packets.TELEMETRY, 0, bytes(n_data))
    )
    assert sinks["n1"].got == [] and sinks["n2"].got == []  # filtered on destination


def test_the_channel_is_half_duplex_one_frame_at_a_time_in_token_order():
    sim, _ch, sinks = channel()
    n1 = send(sim, "n1", 255, 40, 0.2)
    n3 = send(sim, "n3", 255, 40, 0.2)
    n2 = send(sim, "n2", 255, 40, 0.2)
    sim.advance_to(1.0)
    got = sorted((t, p.sender) for s in sinks.values() for t, p in s.got)
    senders = [s for _, s in got]
    assert sorted(set(senders)) == ["n1", "n2", "n3"] and len(got) == 6  # broadcast: both others hear it
    t1 = first_token(0, 0.2) + n1 * 8 / 19200
    t2 = t1 + TOKEN_S + n2 * 8 / 19200
    t3 = t2 + TOKEN_S + n3 * 8 / 19200
    arrivals = {s: (t - 1) / 1e9 for t, s in got}
    assert arrivals == pytest.approx({"n1": t1, "n2": t2, "n3": t3}, abs=2e-9)


def test_loss_and_partition_faults_drop_frames():
    sim, _ch, sinks = channel()
    sim.schedule_fault(Fault(target="sts", kind="radio_loss", value=1.0, duration_s=0.2), 0.1)
    sim.schedule_fault(Fault(target="sts", kind="partition", vehicles=["n1"]), 0.5)
    send(sim, "n2", "n3", 10, 0.2)  # lost
    send(sim, "n2", "n3", 10, 0.4)  # delivered
    send(sim, "n2", "n1", 10, 0.6)  # across the partition: lost
    send(sim, "n2", "n3", 10, 0.7)  # same side: delivered
    sim.advance_to(1.0)
    assert [round(p.t_ns / 1e6) for _, p in sinks["n3"].got] == [400, 700]
    assert sinks["n1"].got == []


def test_bit_errors_are_caught_by_the_receivers_checksum():
    sim, _ch, sinks = channel(RadioParams(bit_error_rate=0.02))
    for k in range(20):
        send(sim, "n1", "n2", 30, 0.1 + 0.1 * k)
    sim.advance_to(3.0)
    decoded = [packets.decode(p.frame) for _, p in sinks["n2"].got]
    assert sum(d is None for d in decoded) > 10  # 312 bits each: ~99.8 % are hit


def test_a_lost_command_is_resent_and_executed_after_ack_and_go():
    spec = get_scenario("leader_follower")
    p = spec.make_params({"perfect_state": True})
    sim = Simulation(seed=0)
    spec.build(sim, p)
    sim.schedule_fault(Fault(target="stl", kind="radio_loss", value=1.0, duration_s=0.5), 0.45)
    sim.advance_to(2.0)
    laptop = sim.model("laptop")
    assert len(laptop.completed) == 2 and not laptop.outstanding
    for done in laptop.completed:
        assert [t / 1e9 for t in done.sent_ns] == pytest.approx([0.5, 1.0])  # resent after 0.5 s
        assert done.acked_ns > 1.0e9
    for v in ("sph1", "sph2"):
        fsw = sim.model(f"{v}_fsw")
        ((t_exec, code),) = fsw.commands_executed
        assert code == packets.CMD_START_TEST and 1.0e9 < t_exec < 1.5e9


def test_a_delay_fault_postpones_delivery():
    sim, _ch, sinks = channel()
    sim.schedule_fault(Fault(target="sts", kind="radio_delay", value=0.05, duration_s=0.3), 0.1)
    n = send(sim, "n2", "n3", 20, 0.2)
    send(sim, "n2", "n3", 20, 0.6)  # after the fault's end: on time
    sim.advance_to(1.0)
    (t1, _), (t2, _) = sinks["n3"].got
    end1 = first_token(1, 0.2) + n * 8 / 19200
    assert (t1 - 1) / 1e9 == pytest.approx(end1 + 0.05, abs=2e-9)
    # after sending, n2 passed the token to n3; it comes back to n2 every three token frames
    back = end1 + TOKEN_S + 2 * TOKEN_S
    back += np.ceil((0.6 - back) / (3 * TOKEN_S)) * 3 * TOKEN_S
    assert (t2 - 1) / 1e9 == pytest.approx(back + n * 8 / 19200, abs=2e-9)
