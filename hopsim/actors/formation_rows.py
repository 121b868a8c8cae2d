"""Row forms of the formation's models (:mod:`hopsim.actors.formation`): each model kind's rows
(one per vehicle of a block, :mod:`hopsim.kernel.blocks`) and its ports as arrays, run over all
rows at once.

The thruster, the state sensor, the radio and the flight software are kinds
(:mod:`hopsim.kernel.kind`): each form holds its kind's table of rows and calls the laws' own row
loops, written once in the model's module; what is here is the ports' plumbing (messages into
input rows, output rows into messages, packets forwarded, senders to neighbour slots). Loading
and storing copy each model's row exactly (``tests/test_blocks.py`` compares snapshots and
streams).

Payload rows (what a port carries inside a block, float64):

- ``RV_MASS`` (VehicleState with position, velocity and mass): ``r_BN_N`` (m), ``v_BN_N`` (m/s),
  mass (kg); the message's ``t_ns`` and ``vehicle`` in the rows' ``msg_t`` and ``src`` columns;
- ``FORCE`` (Wrench of an inertial force at the centre of mass): ``force`` (N, inertial).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.actors.formation import (
    FLIGHT_SOFTWARE,
    RADIO,
    STATE_SENSOR,
    THRUSTER,
    StateSensor,
    admit_packets_rows,
    consensus_control_rows,
    latch_command_rows,
    sample_state_rows,
)
from hopsim.actors.messages import inertial_force, position_velocity_state
from hopsim.kernel.blocks import InRows, OutRows, PayloadLayout, UniformDraws
from hopsim.kernel.kind import as_bytes
from hopsim.kernel.simtime import NS_PER_S
from hopsim.schemas import VehicleState, Wrench


def _rv_message(payload: np.ndarray, t_ns: int, vehicle: str):
    p = payload.tolist()
    return position_velocity_state(vehicle, int(t_ns), *p[:6], p[6])


def _rv_payload(msg) -> tuple[list[float], int, str]:
    r, v = msg.r_BN_N, msg.v_BN_N
    return [r.x, r.y, r.z, v.x, v.y, v.z, msg.mass], msg.t_ns, msg.vehicle


def _force_message(payload: np.ndarray, t_ns: int, vehicle: str):
    fx, fy, fz = payload.tolist()
    return inertial_force(vehicle, fx, fy, fz)


def _force_payload(msg) -> tuple[list[float], int, str]:
    f = msg.force
    return [f.x, f.y, f.z], -1, msg.body


@njit(cache=True)
def _fill_rv_mass(rows, payload, msg_t, src, count, string_of_row):
    """VehicleState rows (vehicle, t_ns, r_BN_N, v_BN_N, mass) of an output's messages."""
    m = 0
    for j in range(count.shape[0]):
        for c in range(count[j]):
            p = payload[j, c]
            row = rows[m]
            row.vehicle = string_of_row[src[j, c]]
            row.t_ns = msg_t[j, c]
            row.r_BN_N.x, row.r_BN_N.y, row.r_BN_N.z = p[0], p[1], p[2]
            row.v_BN_N.x, row.v_BN_N.y, row.v_BN_N.z = p[3], p[4], p[5]
            row.has_r_BN_N = True
            row.has_v_BN_N = True
            row.mass = p[6]
            m += 1
    return m


@njit(cache=True)
def _fill_force(rows, payload, msg_t, src, count, string_of_row):
    """Wrench rows (body, an inertial force at the centre of mass) of an output's messages."""
    m = 0
    for j in range(count.shape[0]):
        for c in range(count[j]):
            p = payload[j, c]
            row = rows[m]
            row.body = string_of_row[src[j, c]]
            row.force.x, row.force.y, row.force.z = p[0], p[1], p[2]
            row.has_force = True
            row.frame = 1  # Wrench.INERTIAL
            m += 1
    return m


RV_MASS = PayloadLayout("rv_mass", 7, _rv_message, _rv_payload, VehicleState, _fill_rv_mass)
FORCE = PayloadLayout("force", 3, _force_message, _force_payload, Wrench, _fill_force)


# ----------------------------------------------------------------------------- thruster
class ThrusterRows:
    """:class:`FormationThruster` over rows (its kind's table, :data:`THRUSTER`): input ``cmd``
    (FORCE). Each hop, :func:`latch_command_rows` over every row, the forces into the bodies'."""

    inputs = {"cmd": FORCE}
    outputs: dict = {}

    def __init__(self, models: list, row_of: dict[str, int]):
        self.models, self.row_of, self.names = models, row_of, list(row_of)
        self.cmd = InRows(FORCE, len(models))
        self.table = THRUSTER.rows(len(models))
        self.due = np.arange(len(models))

    def load(self) -> None:
        self.table = THRUSTER.gather(self.models)
        for i, m in enumerate(self.models):
            self.cmd.load(i, m.ports["cmd"], 0, self.row_of)

    def store(self) -> None:
        THRUSTER.scatter(self.table, self.models)
        for i, m in enumerate(self.models):
            self.cmd.store(i, m.ports["cmd"], 0, self.names)

    @staticmethod
    def takes_input(port: str) -> bool:
        return port == "cmd"

    def in_rows(self, port: str) -> tuple[InRows, int]:
        return self.cmd, 0

    def qualifies(self, t_ns: int) -> bool:
        """Each thruster pushes its own island's body (the block's row)."""
        return all(m.body.name == self.names[i] for i, m in enumerate(self.models))

    def start_hop(self, t0_ns: int, t1_ns: int, body) -> None:
        """Latch every row's command; its force into the body's inertial-force rows."""
        c = self.cmd
        fresh = c.freshness[:, 0] != c.seen[:, 0]
        c.seen[:, 0] = c.freshness[:, 0]
        table = self.table
        latch_command_rows(as_bytes(table), self.due, fresh, c.value[:, 0], (t1_ns - t0_ns) / NS_PER_S)
        body.force_N += table["force_N"]  # each row's own sum, as the body's add_force_N


# ----------------------------------------------------------------------------- sensor
class SensorRows:
    """:class:`StateSensor` over rows (its kind's table, :data:`STATE_SENSOR`): output ``meas``
    (RV_MASS)."""

    inputs: dict = {}
    outputs = {"meas": (RV_MASS, 1)}

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models, self.row_of = models, row_of
        self.meas = OutRows(RV_MASS, n, 1)
        self.meas.src[:, 0] = [row_of[m.vehicle] for m in models]
        self.table = STATE_SENSOR.rows(n)
        self.due = np.arange(n)

    def load(self) -> None:
        self.table = STATE_SENSOR.gather(self.models)

    def store(self) -> None:
        STATE_SENSOR.scatter(self.table, self.models)
        for m in self.models:
            if m.last_t_ns >= 0:
                m._msg = position_velocity_state(m.vehicle, m.last_t_ns, *m.meas.tolist())

    @staticmethod
    def takes_input(port: str) -> bool:
        return False

    def out_rows(self, port: str) -> OutRows:
        return self.meas

    def qualifies(self, t_ns: int) -> bool:
        """Each sensor measures its own island's body (the block's row)."""
        names = list(self.row_of)
        return all(m.body.name == m.vehicle == names[i] for i, m in enumerate(self.models))

    def update_flow_outs(self, t_ns: int, body) -> None:
        """One sample per row of the body's state, new normals drawn a block at a time from each
        model's own generator when its block is used up."""
        table = self.table
        for i in np.flatnonzero(table["noisy"] & (table["left"] == 0) & (table["last_t_ns"] != t_ns)).tolist():
            StateSensor.draw(table, i, self.models[i].rng)
        sample_state_rows(as_bytes(table), self.due, t_ns, body.X, body.mass)
        self.meas.payload[:, 0] = table["meas"]
        self.meas.msg_t[:, 0] = table["last_t_ns"]
        self.meas.count[:] = 1


# ----------------------------------------------------------------------------- radio
@njit(cache=True)
def _forward(passed, value, value_t, value_src, out_payload, out_t, out_src, out_count):
    """Each row's packets that passed, in port order, onto its output rows."""
    for i in range(passed.shape[0]):
        c = 0
        for k in range(passed.shape[1]):
            if passed[i, k]:
                out_payload[i, c] = value[i, k]
                out_t[i, c] = value_t[i, k]
                out_src[i, c] = value_src[i, k]
                c += 1
        out_count[i] = c


class RadioRows:
    """:class:`NeighbourRadio` over rows (its kind's table, :data:`RADIO`): inputs ``n0 ..
    n{K-1}`` (RV_MASS, K the most ports of any row), output ``rx`` (RV_MASS queue, at most K per
    instant)."""

    outputs = {"rx": (RV_MASS, None)}  # capacity: the ports

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models, self.row_of, self.names = models, row_of, list(row_of)
        self.n_ports = np.array([len(m._ports) for m in models], np.int64)
        k = int(self.n_ports.max(initial=1))
        self.inputs = {f"n{j}": RV_MASS for j in range(k)}
        self.ports_in = InRows(RV_MASS, n, k)  # one column per port
        self.rx = OutRows(RV_MASS, n, k)
        self.passed = np.zeros((n, k), np.bool_)
        self.table = RADIO.rows(n)
        self.due = np.arange(n)
        self.draws = UniformDraws([m.rng for m in models])

    @staticmethod
    def takes_input(port: str) -> bool:
        return port[:1] == "n" and port[1:].isdigit()

    def in_rows(self, port: str) -> tuple[InRows, int]:
        return self.ports_in, int(port[1:])

    def out_rows(self, port: str) -> OutRows:
        return self.rx

    def qualifies(self, t_ns: int) -> bool:
        """Ports named n0, n1, ... in order; generators whose draws can be taken ahead."""
        return all(
            m._ports == tuple(f"n{k}" for k in range(len(m._ports))) and UniformDraws.exact_for(m.rng)
            for m in self.models
        )

    def load(self) -> None:
        self.table = RADIO.gather(self.models)
        for i, m in enumerate(self.models):
            for k, port in enumerate(m._ports):
                self.ports_in.load(i, m.ports[port], k, self.row_of)

    def store(self) -> None:
        self.draws.settle()
        RADIO.scatter(self.table, self.models)
        for i, m in enumerate(self.models):
            for k, port in enumerate(m._ports):
                self.ports_in.store(i, m.ports[port], k, self.names)

    def update_flow_outs(self, t_ns: int, body) -> None:
        p, o, draws, loss = self.ports_in, self.rx, self.draws, self.table["loss"]
        fresh = p.freshness != p.seen
        p.seen[:] = p.freshness
        drawing = np.flatnonzero((loss > 0.0) & (loss < 1.0) & (draws.used + self.n_ports > draws.ahead))
        if drawing.size:
            draws.ensure(drawing, self.n_ports[drawing])
        drawn = draws.used.reshape(-1, 1)  # a view: the law counts its draws into it
        admit_packets_rows(as_bytes(self.table), self.due, fresh, draws.values, drawn, self.passed)
        _forward(self.passed, p.value, p.msg_t, p.src, o.payload, o.msg_t, o.src, o.count)


# ----------------------------------------------------------------------------- flight software
@njit(cache=True)
def _neighbour_slots(src, count, nb_src, slot):
    """Each queued packet's neighbour slot: the k with nb_src[i, k] == its sender's row."""
    for i in range(count.shape[0]):
        for p in range(count[i]):
            for k in range(nb_src.shape[1]):
                if nb_src[i, k] == src[i, p]:
                    slot[i, p] = k


class FlightSoftwareRows:
    """:class:`FormationFlightSoftware` over rows (its kind's table, :data:`FLIGHT_SOFTWARE`):
    inputs ``meas`` (RV_MASS) and ``rx`` (RV_MASS queue), outputs ``thrust`` (FORCE) and ``air``
    (RV_MASS). ``row_of`` maps a vehicle name to its block row (the packets' senders)."""

    inputs = {"meas": RV_MASS, "rx": RV_MASS}
    outputs = {"thrust": (FORCE, 1), "air": (RV_MASS, 1)}

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models, self.row_of, self.names_of_rows = models, row_of, list(row_of)
        k = max((len(m.neighbours) for m in models), default=1) or 1
        self.nb_src = np.full((n, k), -1, np.int64)
        for i, m in enumerate(models):
            self.nb_src[i, : len(m.neighbours)] = [row_of[name] for name in m.neighbours]
        self.meas = InRows(RV_MASS, n, 1)
        self.rx = InRows(RV_MASS, n, 1, queue_capacity=4 * k)
        self.slot = np.zeros(self.rx.queue_src.shape, np.int64)
        self.thrust, self.air = OutRows(FORCE, n, 1), OutRows(RV_MASS, n, 1)
        self.thrust.src[:, 0] = [row_of.get(m.vehicle, -1) for m in models]
        self.table = FLIGHT_SOFTWARE.rows(n)
        self.due = np.arange(n)

    def load(self) -> None:
        self.table = FLIGHT_SOFTWARE.gather(self.models)
        for i, m in enumerate(self.models):
            self.meas.load(i, m.ports["meas"], 0, self.row_of)
            self.rx.load(i, m.ports["rx"], 0, self.row_of)

    def store(self) -> None:
        FLIGHT_SOFTWARE.scatter(self.table, self.models)
        for i, m in enumerate(self.models):
            self.meas.store(i, m.ports["meas"], 0, self.names_of_rows)
            self.rx.store(i, m.ports["rx"], 0, self.names_of_rows)

    @staticmethod
    def takes_input(port: str) -> bool:
        return port in ("meas", "rx")

    def in_rows(self, port: str) -> tuple[InRows, int]:
        return (self.meas if port == "meas" else self.rx), 0

    def out_rows(self, port: str) -> OutRows:
        return self.thrust if port == "thrust" else self.air

    def qualifies(self, t_ns: int) -> bool:
        """Every control step at the block's instants; each vehicle its own island's."""
        return all(m.vehicle == self.names_of_rows[i] for i, m in enumerate(self.models))

    def update_flow_outs(self, t_ns: int, body) -> None:
        me, rx, th, air, table = self.meas, self.rx, self.thrust, self.air, self.table
        _neighbour_slots(rx.queue_src, rx.queued, self.nb_src, self.slot)
        meas = me.value[:, 0]
        consensus_control_rows(as_bytes(table), self.due, t_ns, meas, rx.queue, rx.queue_msg_t, self.slot, rx.queued)
        rx.queued[:] = 0  # drained
        rx.seen[:, 0] = rx.freshness[:, 0]
        acted = table["acted"]
        th.payload[:, 0] = table["thrust_N"]
        th.count[:] = acted
        air.payload[:, 0] = meas
        air.msg_t[:, 0] = me.msg_t[:, 0]
        air.count[:] = acted
        air.src[:, 0] = me.src[:, 0]
