"""Row forms of the formation's models (:mod:`hopsim.actors.formation`): each model kind's state
as arrays, one row per vehicle of a block (:mod:`hopsim.kernel.blocks`), run over all rows at once.

The thruster and the state sensor are kinds (:mod:`hopsim.kernel.kind`): their forms hold the
kind's table of rows and call the laws' own row loops, written once in the model's module; what
is here is the ports' plumbing. The radio's and the flight software's forms still carry their
law a second time, as compiled functions over the rows whose body is the scalar model's code for
one row (the same IEEE operations in the same order, the same draws from the model's own
generator), and :meth:`store` gives each model back exactly the state (attributes, ports) the
scalar run would hold (``tests/test_blocks.py`` compares snapshots and streams).

Payload rows (what a port carries inside a block, float64):

- ``RV_MASS`` (VehicleState with position, velocity and mass): ``r_BN_N`` (m), ``v_BN_N`` (m/s),
  mass (kg); the message's ``t_ns`` and ``vehicle`` in the rows' ``msg_t`` and ``src`` columns;
- ``FORCE`` (Wrench of an inertial force at the centre of mass): ``force`` (N, inertial).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.actors.formation import (
    STATE_SENSOR,
    THRUSTER,
    StateSensor,
    latch_command_rows,
    sample_state_rows,
)
from hopsim.actors.messages import inertial_force, position_velocity_state
from hopsim.kernel.kind import as_bytes
from hopsim.kernel.blocks import InRows, OutRows, PayloadLayout, UniformDraws
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
def _radio_receive(
    uniforms,
    used,
    n_ports,
    value,
    value_t,
    value_src,
    freshness,
    seen,
    loss,
    received,
    lost,
    out_payload,
    out_t,
    out_src,
    out_count,
):
    """NeighbourRadio.update_flow_outs of every row: each port's new packet, lost with the
    row's probability (one uniform draw from the row's generator when 0 < loss < 1: the row's
    next in ``uniforms``, see UniformDraws)."""
    for i in range(n_ports.shape[0]):
        c = 0
        for k in range(n_ports[i]):
            if freshness[i, k] == seen[i, k]:
                continue
            seen[i, k] = freshness[i, k]
            p = loss[i]
            if p >= 1.0:
                lost[i] += 1
                continue
            if p > 0.0:
                u = uniforms[i, used[i]]
                used[i] += 1
                if u < p:
                    lost[i] += 1
                    continue
            received[i] += 1
            out_payload[i, c] = value[i, k]
            out_t[i, c] = value_t[i, k]
            out_src[i, c] = value_src[i, k]
            c += 1
        out_count[i] = c


class RadioRows:
    """:class:`NeighbourRadio` over rows: inputs ``n0 .. n{K-1}`` (RV_MASS, K the most ports of
    any row), output ``rx`` (RV_MASS queue, at most K per instant)."""

    outputs = {"rx": (RV_MASS, None)}  # capacity: the ports

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models, self.row_of, self.names = models, row_of, list(row_of)
        self.n_ports = np.array([len(m._ports) for m in models], np.int64)
        k = int(self.n_ports.max(initial=1))
        self.inputs = {f"n{j}": RV_MASS for j in range(k)}
        self.ports_in = InRows(RV_MASS, n, k)  # one column per port
        self.rx = OutRows(RV_MASS, n, k)
        self.loss, self.configured = np.zeros(n), np.zeros(n)
        self.received, self.lost = np.zeros(n, np.int64), np.zeros(n, np.int64)
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
        for i, m in enumerate(self.models):
            self.loss[i], self.configured[i] = m.loss, m.configured_loss
            self.received[i], self.lost[i] = m.received, m.lost
            for k, port in enumerate(m._ports):
                self.ports_in.load(i, m.ports[port], k, self.row_of)

    def store(self) -> None:
        self.draws.settle()
        for i, m in enumerate(self.models):
            m.loss = float(self.loss[i])
            m.received, m.lost = int(self.received[i]), int(self.lost[i])
            for k, port in enumerate(m._ports):
                self.ports_in.store(i, m.ports[port], k, self.names)

    def update_flow_outs(self, t_ns: int, body) -> None:
        p, o, draws = self.ports_in, self.rx, self.draws
        drawing = np.flatnonzero((self.loss > 0.0) & (self.loss < 1.0) & (draws.used + self.n_ports > draws.ahead))
        if drawing.size:
            draws.ensure(drawing, self.n_ports[drawing])
        _radio_receive(
            draws.values,
            draws.used,
            self.n_ports,
            p.value,
            p.msg_t,
            p.src,
            p.freshness,
            p.seen,
            self.loss,
            self.received,
            self.lost,
            o.payload,
            o.msg_t,
            o.src,
            o.count,
        )


# ----------------------------------------------------------------------------- flight software
@njit(cache=True)
def _fsw_control(
    t_ns,
    period_ns,
    stale_ns,
    kp,
    kd,
    brake,
    mass,
    meas,
    meas_t,
    rx,
    rx_t,
    rx_src,
    rx_n,
    nb_src,
    offsets,
    lat_s,
    lat_rv,
    lat_order,
    lat_n,
    hist_t,
    hist_rv,
    hist_head,
    hist_n,
    last_t,
    mode,
    steps,
    pairs_used,
    accel,
    thrust,
    air,
    air_t,
    written,
):
    """FormationFlightSoftware.update_flow_outs of every row (see the model for the law):
    absorb the drained packets, then at a control step the consensus sum over the neighbours in
    the order they were first heard from, paired with the own broadcast of the same instant."""
    cap = hist_t.shape[1]
    for i in range(meas.shape[0]):
        for p in range(rx_n[i]):  # drain rx: the latest packet per neighbour
            k = -1
            for q in range(nb_src.shape[1]):
                if nb_src[i, q] == rx_src[i, p]:
                    k = q
            s = rx_t[i, p]
            if lat_s[i, k] < 0:
                lat_order[i, lat_n[i]] = k
                lat_n[i] += 1
                lat_s[i, k] = s
                lat_rv[i, k] = rx[i, p, :6]
            elif s > lat_s[i, k]:
                lat_s[i, k] = s
                lat_rv[i, k] = rx[i, p, :6]
        rx_n[i] = 0
        if t_ns % period_ns[i] != 0 or t_ns == last_t[i]:
            written[i] = 0  # not a control step: nothing written
            continue
        last_t[i] = t_ns
        own = meas[i]
        pos = (hist_head[i] + hist_n[i]) % cap
        hist_t[i, pos] = t_ns
        hist_rv[i, pos] = own[:6]
        hist_n[i] += 1
        horizon = t_ns - stale_ns[i]
        while hist_t[i, hist_head[i]] < horizon:
            hist_head[i] = (hist_head[i] + 1) % cap
            hist_n[i] -= 1
        ax = 0.0
        ay = 0.0
        az = 0.0
        used = 0
        for q in range(lat_n[i]):
            k = lat_order[i, q]
            s = lat_s[i, k]
            h = -1
            for e in range(hist_n[i]):
                at = (hist_head[i] + e) % cap
                if hist_t[i, at] == s:
                    h = at
            if h < 0:
                continue
            xi, yi, zi = hist_rv[i, h, 0], hist_rv[i, h, 1], hist_rv[i, h, 2]
            ui, vi, wi = hist_rv[i, h, 3], hist_rv[i, h, 4], hist_rv[i, h, 5]
            xj, yj, zj = lat_rv[i, k, 0], lat_rv[i, k, 1], lat_rv[i, k, 2]
            uj, vj, wj = lat_rv[i, k, 3], lat_rv[i, k, 4], lat_rv[i, k, 5]
            ox, oy, oz = offsets[i, k, 0], offsets[i, k, 1], offsets[i, k, 2]
            ax -= kp[i] * ((xi - xj) - ox) + kd[i] * (ui - uj)
            ay -= kp[i] * ((yi - yj) - oy) + kd[i] * (vi - vj)
            az -= kp[i] * ((zi - zj) - oz) + kd[i] * (wi - wj)
            used += 1
        if used:
            mode[i] = 1
        elif t_ns < stale_ns[i]:
            mode[i] = 0
        else:
            mode[i] = 2
            g = brake[i]
            ax, ay, az = -g * own[3], -g * own[4], -g * own[5]
        steps[i, mode[i]] += 1
        pairs_used[i] += used
        accel[i, 0], accel[i, 1], accel[i, 2] = ax, ay, az
        m = mass[i]
        thrust[i, 0] = m * ax
        thrust[i, 1] = m * ay
        thrust[i, 2] = m * az
        air[i] = own
        air_t[i] = meas_t[i]
        written[i] = 1


MODES = ("coast", "consensus", "brake")


class FlightSoftwareRows:
    """:class:`FormationFlightSoftware` over rows: inputs ``meas`` (RV_MASS) and ``rx`` (RV_MASS
    queue), outputs ``thrust`` (FORCE) and ``air`` (RV_MASS). ``row_of`` maps a vehicle name to its
    block row (the packets' senders)."""

    inputs = {"meas": RV_MASS, "rx": RV_MASS}
    outputs = {"thrust": (FORCE, 1), "air": (RV_MASS, 1)}

    def __init__(self, models: list, row_of: dict[str, int]):
        n = len(models)
        self.models, self.row_of, self.names_of_rows = models, row_of, list(row_of)
        k = max((len(m.offsets) for m in models), default=1) or 1
        self.names = [list(m.offsets) for m in models]
        self.nb_src = np.full((n, k), -1, np.int64)
        self.offsets = np.zeros((n, k, 3))
        for i, m in enumerate(models):
            for q, (name, off) in enumerate(m.offsets.items()):
                self.nb_src[i, q] = row_of[name]
                self.offsets[i, q] = off
        self.meas = InRows(RV_MASS, n, 1)
        self.rx = InRows(RV_MASS, n, 1, queue_capacity=4 * k)
        self.thrust, self.air = OutRows(FORCE, n, 1), OutRows(RV_MASS, n, 1)
        self.thrust.src[:, 0] = [row_of.get(m.vehicle, -1) for m in models]
        f = np.array
        self.period = f([m.period_ns for m in models], np.int64)
        self.stale = f([m.stale_ns for m in models], np.int64)
        self.kp, self.kd = f([m.kp for m in models], float), f([m.kd for m in models], float)
        self.brake, self.mass = f([m.brake_gain for m in models], float), f([m.mass_kg for m in models], float)
        h = int((self.stale // self.period).max(initial=0)) + 2
        self.lat_s, self.lat_rv = np.full((n, k), -1, np.int64), np.zeros((n, k, 6))
        self.lat_order, self.lat_n = np.zeros((n, k), np.int64), np.zeros(n, np.int64)
        self.hist_t, self.hist_rv = np.zeros((n, h), np.int64), np.zeros((n, h, 6))
        self.hist_head, self.hist_n = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.last_t, self.mode = np.full(n, -1, np.int64), np.zeros(n, np.int64)
        self.steps, self.pairs_used, self.accel = np.zeros((n, 3), np.int64), np.zeros(n, np.int64), np.zeros((n, 3))

    def load(self) -> None:
        cap = self.hist_t.shape[1]
        for i, m in enumerate(self.models):
            names = self.names[i]
            self.lat_s[i], self.lat_n[i] = -1, len(m.latest)
            for q, (name, (s, rv)) in enumerate(m.latest.items()):
                k = names.index(name)
                self.lat_order[i, q], self.lat_s[i, k], self.lat_rv[i, k] = k, s, rv
            if len(m.history) > cap:
                raise ValueError(f"{m.name}: {len(m.history)} broadcasts kept, more than {cap}")
            self.hist_head[i], self.hist_n[i] = 0, len(m.history)
            for e, (t, rv) in enumerate(m.history.items()):
                self.hist_t[i, e], self.hist_rv[i, e] = t, rv
            self.last_t[i], self.mode[i] = m._t, MODES.index(m.mode)
            self.steps[i] = [m.steps[x] for x in MODES]
            self.pairs_used[i], self.accel[i] = m.pairs_used, m.accel
            self.meas.load(i, m.ports["meas"], 0, self.row_of)
            self.rx.load(i, m.ports["rx"], 0, self.row_of)

    def store(self) -> None:
        cap = self.hist_t.shape[1]
        for i, m in enumerate(self.models):
            names = self.names[i]
            m.latest = {
                names[k]: (int(self.lat_s[i, k]), tuple(self.lat_rv[i, k].tolist()))
                for k in self.lat_order[i, : self.lat_n[i]].tolist()
            }
            m.history = {}
            for e in range(int(self.hist_n[i])):
                at = (int(self.hist_head[i]) + e) % cap
                m.history[int(self.hist_t[i, at])] = tuple(self.hist_rv[i, at].tolist())
            m._t, m.mode = int(self.last_t[i]), MODES[int(self.mode[i])]
            m.steps = dict(zip(MODES, self.steps[i].tolist(), strict=True))
            m.pairs_used, m.accel = int(self.pairs_used[i]), tuple(self.accel[i].tolist())
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
        me, rx, th, air = self.meas, self.rx, self.thrust, self.air
        _fsw_control(
            t_ns,
            self.period,
            self.stale,
            self.kp,
            self.kd,
            self.brake,
            self.mass,
            me.value[:, 0],
            me.msg_t[:, 0],
            rx.queue,
            rx.queue_msg_t,
            rx.queue_src,
            rx.queued,
            self.nb_src,
            self.offsets,
            self.lat_s,
            self.lat_rv,
            self.lat_order,
            self.lat_n,
            self.hist_t,
            self.hist_rv,
            self.hist_head,
            self.hist_n,
            self.last_t,
            self.mode,
            self.steps,
            self.pairs_used,
            self.accel,
            th.payload[:, 0],
            air.payload[:, 0],
            air.msg_t[:, 0],
            th.count,
        )
        rx.seen[:, 0] = rx.freshness[:, 0]  # drained
        air.count[:] = th.count
        air.src[:, 0] = me.src[:, 0]
