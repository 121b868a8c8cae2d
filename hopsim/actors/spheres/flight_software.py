"""The flight software of one SPHERES vehicle: the Standard Control Interface as one actor.

Tasks, from the highest priority:

1. Propulsion (1 kHz): pulse countdowns, minimum pulse, thrusters off during global metrology
   (:class:`PropulsionTask`, acting only at the ticks where its output changes).
2. Communications: incoming packets wait in their buffers until the controller reads them.
3. Controller (50 Hz, the control law on every 5th tick, i.e. 10 Hz): reads packets, runs the
   guest program, the PD position and attitude laws, the mixer and the pulse-width modulation,
   requests global metrology, broadcasts state and sends telemetry. The four controller ticks
   between law ticks have nothing to do here and are not simulated.
4. Background: state estimation from IMU samples and global-metrology ranges (:class:`Estimator`),
   as they arrive; or, with ``perfect_state``, the truth from the dynamics actor instead.

At one instant the propulsion task acts before the control law, so a pulse group set at a law
tick starts at the next propulsion tick (1 ms later).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopsim.actors.spheres import packets
from hopsim.actors.spheres.control import attitude_pd, body_force_pd
from hopsim.actors.spheres.estimator import Estimator
from hopsim.actors.spheres.global_metrology import ranges_array
from hopsim.actors.spheres.mixer import ThrusterMixer
from hopsim.actors.spheres.params import SpheresParams, TestbedParams
from hopsim.actors.spheres.programs import GuestProgram
from hopsim.actors.spheres.propulsion import PropulsionTask
from hopsim.kernel import In, Model, Out, VariableRate
from hopsim.kernel.simtime import NS_PER_S, seconds
from hopsim.schemas import VehicleState
from hopsim.schemas.spheres_pb2 import GmRanges, GmRequest, GmSync, ImuSamples, RadioPacket, ThrusterCommand


@dataclass
class PeerState:
    """The latest state a peer broadcast (STATE packets over STS)."""

    flag: int
    r_N: np.ndarray
    v_N: np.ndarray
    q_BN: np.ndarray
    omega_B: np.ndarray
    rx_ns: int


def _vec(v) -> dict:
    """A Vector3 field's value, for a message constructor (a dict is cheaper than a Vector3)."""
    x, y, z = v.tolist()
    return {"x": x, "y": y, "z": z}


class SpheresFlightSoftware(Model):
    """One vehicle's flight software.

    Inputs: ``truth`` (VehicleState, for perfect state), ``imu`` (ImuSamples), ``gm_sync``
    (GmSync), ``gm`` (GmRanges), ``sts_rx`` and ``stl_rx`` (RadioPacket).
    Outputs: ``thrust_cmd`` (ThrusterCommand), ``gm_request`` (GmRequest), ``sts_tx`` and
    ``stl_tx`` (RadioPacket), ``estimate`` (VehicleState: the state the controller used).

    Variable-rate I/O: the law ticks and the propulsion task's command instants. Feed-through:
    sensor data and IR syncs are handled the instant they arrive.
    """

    inputs = {
        "truth": In(VehicleState),
        "imu": In(ImuSamples, queue=True),
        "gm_sync": In(GmSync, queue=True),
        "gm": In(GmRanges, queue=True),
        "sts_rx": In(RadioPacket, queue=True),
        "stl_rx": In(RadioPacket, queue=True),
    }
    outputs = {
        "thrust_cmd": Out(ThrusterCommand, queue=True),
        "gm_request": Out(GmRequest, queue=True),
        "sts_tx": Out(RadioPacket, queue=True),
        "stl_tx": Out(RadioPacket, queue=True),
        "estimate": Out(VehicleState),
    }
    io_schedule = VariableRate()
    feed_through = True

    def __init__(
        self,
        name: str,
        vehicle: str,
        node_id: int,
        params: SpheresParams,
        testbed: TestbedParams,
        program: GuestProgram,
        r0_N,
        q0_BN=(0, 0, 0, 1),
        perfect_state: bool = False,
        wait_for_start: bool = False,
        node_ids: dict[str, int] | None = None,
    ):
        super().__init__(name)
        fsw = params.flight_software
        self.vehicle = vehicle
        self.node_id = node_id
        self.params = params
        self.program = program
        self.perfect_state = perfect_state
        self.node_ids = dict(node_ids or {})
        self.node_names = {v: k for k, v in self.node_ids.items()}
        self.law_period_ns = seconds(fsw.control_divider / fsw.controller_rate_hz)
        self.gm_period_ns = seconds(fsw.gm_request_period_s)
        self.broadcast_period_ns = seconds(1.0 / fsw.state_broadcast_rate_hz)
        self.telemetry_period_ns = seconds(1.0 / fsw.telemetry_rate_hz)
        self.blank_ns = seconds(fsw.gm_blank_s)
        self.mixer = ThrusterMixer(params, self.law_period_ns / NS_PER_S)
        self.propulsion = PropulsionTask(seconds(1.0 / fsw.propulsion_rate_hz), fsw.thrusters_off_during_gm)
        self.estimator = Estimator(params, testbed, 0, r0_N, np.zeros(3), q0_BN)
        self.inertia_B = np.diag(params.mass.inertia_diag_kgm2)
        self.kp_pos, self.kd_pos = float(fsw.kp_pos), float(fsw.kd_pos)  # 1/s^2, 1/s
        self.start_byte = params.radio.start_byte
        self.running = not wait_for_start
        self.started_ns: int | None = None
        self.peers: dict[str, PeerState] = {}
        self.pending_commands: dict[int, bytes] = {}  # sequence number -> command bytes awaiting GO
        self.next_law_ns = 0
        self.state_used = None
        self.out_cmds: list[ThrusterCommand] = []
        self.out_sts: list[bytes] = []
        self.out_stl: list[bytes] = []
        self.out_request = False
        self.out_estimate = False
        self.law_count = 0
        self.commands_executed: list[tuple[int, int]] = []

    # ------------------------------------------------------------------ timeline
    def next_io_time(self, t_ns: int) -> int | None:
        self.next_law_ns = (t_ns // self.law_period_ns + 1) * self.law_period_ns
        nxt = self.propulsion.next_command_time(t_ns)
        return self.next_law_ns if nxt is None else min(nxt, self.next_law_ns)

    def update_flow_outs(self, t_ns: int) -> None:
        # most calls find the queues empty: a queue is drained only when it holds messages
        # (draining an empty queue changes nothing)
        ports = self.ports
        if ports["imu"].queued:
            for batch in self.drain("imu"):
                # lists first ([:]): numpy reads a protobuf repeated field element by element, slowly
                self.estimator.imu_samples(batch.t_ns[:], np.array(batch.omega_B[:] + batch.accel_B[:]))
        if ports["gm_sync"].queued:
            for sync in self.drain("gm_sync"):
                self.propulsion.blank(sync.cycle_start_ns, sync.cycle_start_ns + self.blank_ns)
        self._propulsion_tick(t_ns)
        if not self.perfect_state and ports["gm"].queued:
            for msg in self.drain("gm"):
                self.estimator.gm_update(ranges_array(msg), list(msg.beacon_fire_ns), t_ns)
        if t_ns % self.law_period_ns == 0:
            self._law_tick(t_ns)
        self._flush(t_ns)

    # ------------------------------------------------------------------ propulsion
    def _propulsion_tick(self, t_ns: int) -> None:
        """The propulsion task's output at its tick t_ns (now, or the tick a new pulse group starts)."""
        cmd = self.propulsion.command_at(t_ns)
        if cmd is None:
            return
        mask, on_times = cmd
        self.estimator.command(t_ns, mask, on_times)
        self.out_cmds.append(ThrusterCommand(vehicle=self.vehicle, t_ns=t_ns, mask=mask, on_time_ns=on_times))

    # ------------------------------------------------------------------ controller
    def current_state(self, t_ns: int):
        """(r_N, v_N, q_BN, omega_B) the controller uses: the truth or the estimate at t_ns."""
        if self.perfect_state:
            s = self.read("truth")
            if s is not None:
                r, v, q, w = s.r_BN_N, s.v_BN_N, s.q_BN, s.omega_BN_B  # each sub-message read once
                return (
                    np.array([r.x, r.y, r.z]),
                    np.array([v.x, v.y, v.z]),
                    np.array([q.x, q.y, q.z, q.w]),
                    np.array([w.x, w.y, w.z]),
                )
        est = self.estimator
        est.propagate_to(t_ns)
        return est.r, est.v, est.q, est.omega  # the estimator replaces its arrays, never changes them

    def _law_tick(self, t_ns: int) -> None:
        self.law_count += 1
        self.propulsion.forget_before(t_ns)
        self._read_packets(t_ns)
        state = self.current_state(t_ns)
        self.state_used = state
        self.out_estimate = True
        t = t_ns / NS_PER_S
        if not self.running:
            return
        if self.started_ns is None:
            self.started_ns = t_ns
            self.program.start(t, state)
        ref = self.program.reference(t, state, self.peers)
        r, v, q, w = state
        force_B = body_force_pd(
            r,
            v,
            np.asarray(ref.r_N, dtype=float),
            np.asarray(ref.v_N, dtype=float),
            float(self.estimator.mass),
            self.kp_pos,
            self.kd_pos,
            bool(ref.control_z),
            q,
        )
        if ref.control_attitude:
            fsw = self.params.flight_software
            torque_B = attitude_pd(q, w, ref.q_BN, ref.omega_B, self.inertia_B, fsw.kp_att, fsw.kd_att)
        else:
            torque_B = np.zeros(3)
        start = self.propulsion.set_pulses(t_ns, self.mixer.pulse_widths_ns(force_B, torque_B))
        self._propulsion_tick(start)
        if not self.perfect_state and t_ns % self.gm_period_ns == 0:
            self.out_request = True
        if self.program.broadcast_to and t_ns % self.broadcast_period_ns == 0:
            data = packets.pack_state(self.program.broadcast_flag(t), r, v, q, w)
            for peer in self.program.broadcast_to:
                self._send("sts", self.node_ids[peer], packets.STATE, data, t_ns)
        if t_ns % self.telemetry_period_ns == 0:
            data = packets.pack_state(1 if self.running else 0, r, v, q, w)
            self._send("stl", packets.LAPTOP, packets.TELEMETRY, data, t_ns)

    # ------------------------------------------------------------------ communications
    def _send(self, channel: str, to: int, ptype: int, data: bytes, t_ns: int) -> None:
        frame = packets.encode_fields(to, self.node_id, ptype, (t_ns // 1_000_000) & 0xFFFF, data, self.start_byte)
        (self.out_sts if channel == "sts" else self.out_stl).append(frame)

    def _read_packets(self, t_ns: int) -> None:
        for port in ("sts_rx", "stl_rx"):
            if not self.ports[port].queued:
                continue
            for msg in self.drain(port):
                pkt = packets.decode(msg.frame, self.start_byte)
                if pkt is None or pkt.to not in (self.node_id, packets.BROADCAST):
                    continue
                self._handle(pkt, msg.rx_ns, t_ns)

    def _handle(self, pkt: packets.Packet, rx_ns: int, t_ns: int) -> None:
        if pkt.type == packets.STATE:
            flag, r, v, q, w = packets.unpack_state(pkt.data)
            name = self.node_names.get(pkt.source, str(pkt.source))
            self.peers[name] = PeerState(flag, r, v, q, w, rx_ns)
        elif pkt.type == packets.COMMAND and len(pkt.data) >= 2:
            self.pending_commands[pkt.data[0]] = pkt.data
            self._send("stl", pkt.source, packets.ACK, pkt.data, t_ns)
        elif pkt.type == packets.GO and pkt.data:
            command = self.pending_commands.pop(pkt.data[0], None)
            if command is not None:
                self._execute(command, t_ns)

    def _execute(self, command: bytes, t_ns: int) -> None:
        code = command[1]
        self.commands_executed.append((t_ns, code))
        if code == packets.CMD_START_TEST:
            self.running = True
        elif code == packets.CMD_STOP_TEST:
            self.running = False
            self._propulsion_tick(self.propulsion.set_pulses(t_ns, [0] * 12))

    # ------------------------------------------------------------------ outputs
    def _flush(self, t_ns: int) -> None:
        if self.out_cmds:
            for cmd in self.out_cmds:
                self.write("thrust_cmd", cmd)
            self.out_cmds = []
        if self.out_sts or self.out_stl:
            for channel, frames in (("sts", self.out_sts), ("stl", self.out_stl)):
                for frame in frames:
                    self.write(
                        f"{channel}_tx", RadioPacket(channel=channel, sender=self.vehicle, t_ns=t_ns, frame=frame)
                    )
            self.out_sts, self.out_stl = [], []
        if self.out_request:
            self.out_request = False
            self.write("gm_request", GmRequest(vehicle=self.vehicle, t_ns=t_ns))
        if self.out_estimate and self.state_used is not None:
            self.out_estimate = False
            if not self.wanted("estimate"):
                return
            r, v, q, w = self.state_used
            qx, qy, qz, qw = q.tolist()
            self.write(
                "estimate",
                VehicleState(
                    vehicle=self.vehicle,
                    t_ns=t_ns,
                    r_BN_N=_vec(r),
                    v_BN_N=_vec(v),
                    q_BN={"x": qx, "y": qy, "z": qz, "w": qw},
                    omega_BN_B=_vec(w),
                    mass=self.estimator.mass,
                ),
            )
