"""Actors of a large formation of free-flyers keeping a ring or lattice shape by consensus.

One vehicle is one island of five models (all of them at the control rate, so that the island has
one barrier and one hop per control period):

- the vehicle's :class:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics` (named after the
  vehicle), publishing the true state on ``<v>/state`` at the control rate;
- :class:`FormationThruster` (continuous): the actuator. It latches the commanded inertial force
  at the start of each hop, clips each axis to ``max_thrust_N`` (and zeroes an axis below
  ``min_thrust_N``: the minimum a valve can deliver), and applies it, constant across the hop,
  in ``pre_deriv``. Thrust constant across a hop means no barrier of its own;
- :class:`StateSensor` (continuous, reads the dynamics actor in its own process): a noisy
  measurement of the own position and velocity (white, from the sensor's own seeded generator)
  at every control step, on ``<v>/meas``;
- :class:`NeighbourRadio`: the receiving radio. Each neighbour's flight software broadcasts its
  measured state on ``<neighbour>/air``; the broadcast tie's latency is the link latency, a whole
  number of control periods (see :func:`radio_delay_periods`), so that a packet reaches its
  receivers exactly at one of their control barriers and creates no barrier of its own. Each
  receiver loses each packet with probability ``loss`` (one draw per packet from the receiving
  radio's own generator) and forwards the others on ``<v>/rx``. A vehicle subscribes only to
  its neighbours' ``air`` topics (ring: 2, square lattice: 2 to 4);
- :class:`FormationFlightSoftware`: the consensus law below, at the control rate; it writes the
  force command (``<v>/thrust``, Wrench in N) and broadcasts its measured state (``<v>/air``).

Consensus law (symmetric, time-matched). Vehicle ``i`` with neighbours ``N_i`` and nominal slot
positions ``p`` commands the acceleration

    a_i = sum_{j in N_i} [ -kp (x_i(s) - x_j(s) - (p_i - p_j)) - kd (v_i(s) - v_j(s)) ]

where ``x_j(s), v_j(s)`` is neighbour j's latest broadcast (measured at instant ``s``) and
``x_i(s), v_i(s)`` is vehicle i's own broadcast *of the same instant*, kept in a short history.
Pairing the two sides at the same instant makes the pair term of (i, j) the exact negative of
that of (j, i), so with equal masses, no packet loss and no saturation the thrusts sum to zero
and the centroid moves at constant velocity, noise or not (the noise is in the shared
measurements, which both sides use alike). The fixed point is the nominal shape translated with
the centroid: ``x_i - x_j -> p_i - p_j``, ``v_i -> v_centroid(0)``. With gains
``kp = w^2 / lambda_max``, ``kd = 2 zeta w / lambda_max`` (``lambda_max = 2 * max degree`` bounds
the graph Laplacian's largest eigenvalue), the fastest shape mode has natural frequency at most
``w`` and damping ``zeta``; a mode of Laplacian eigenvalue ``lambda`` has ``w sqrt(lambda/lambda_max)``
and ``zeta sqrt(lambda/lambda_max)``.

Fallback: a neighbour whose latest packet is older than ``stale_after_s`` (or whose instant has left
the own history) is left out of the sum. Until the first packets arrive the vehicle coasts (zero
thrust). When no neighbour has been heard from for ``stale_after_s`` -- e.g. with radio loss 1 --
the flight software brakes to rest in the inertial frame with its own measured velocity,
``a_i = -brake_gain * v_i(now)``, and holds (absolute) station: the shape no longer converges.
Packet loss and saturation break the symmetry, so the centroid then drifts slightly.

Each model names a row form (``row_form``, :mod:`hopsim.actors.formation_rows`), with which a
rate group runs its vehicles' instants as a row block (:mod:`hopsim.kernel.blocks`). The
thruster, the state sensor, the radio and the flight software are kinds
(:mod:`hopsim.kernel.kind`): their state a declared row, their laws (:func:`latch_command`,
:func:`sample_state`, :func:`admit_packets`, :func:`consensus_control`) written once here and
run by the same row loop for the model alone and for a block.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import ClassVar

import numpy as np
from numba import njit

from hopsim.actors.messages import inertial_force, position_velocity_state
from hopsim.dynamics import detmath, detrandom
from hopsim.kernel import ContinuousModel, FixedRate, In, Model, NoIo, Out
from hopsim.kernel.bounds import check_probability
from hopsim.kernel.kind import ONE, Field, Kind, as_bytes
from hopsim.kernel.simtime import NS_PER_S
from hopsim.schemas import VehicleState, Wrench

# ----------------------------------------------------------------------------- geometry


def vehicle_names(n: int) -> list[str]:
    """``v0 .. v{n-1}`` zero-padded to the same width, so that names sort like indices."""
    width = len(str(max(n - 1, 0)))
    return [f"v{i:0{width}d}" for i in range(n)]


def lattice_columns(n: int) -> int:
    return max(1, math.ceil(math.sqrt(n)))


def slot_positions(n: int, layout: str, spacing_m: float) -> np.ndarray:
    """Nominal positions (n x 3, m) centred on the origin, in the XY plane.

    ``ring``: a regular n-gon whose sides are ``spacing_m`` (radius ``spacing / (2 sin(pi/n))``).
    ``lattice``: a square grid of ``ceil(sqrt(n))`` columns filled row by row, pitch ``spacing_m``.
    """
    if n < 1:
        raise ValueError(f"a formation needs at least one vehicle, got {n}")
    if layout == "ring":
        if n == 1:
            p = np.zeros((1, 3))
        elif n == 2:
            p = np.array([[-0.5 * spacing_m, 0.0, 0.0], [0.5 * spacing_m, 0.0, 0.0]])
        else:
            radius = spacing_m / (2.0 * detmath.sin(math.pi / n))
            angle = 2.0 * math.pi * np.arange(n) / n
            p = np.stack([radius * detmath.cos_array(angle), radius * detmath.sin_array(angle), np.zeros(n)], axis=1)
    elif layout == "lattice":
        cols = lattice_columns(n)
        idx = np.arange(n)
        p = np.stack([(idx % cols) * spacing_m, (idx // cols) * spacing_m, np.zeros(n)], axis=1)
        p -= p.mean(axis=0)
    else:
        raise ValueError(f"layout must be 'ring' or 'lattice', not {layout!r}")
    return p


def neighbours(n: int, layout: str) -> list[list[int]]:
    """Neighbour indices of every vehicle: ring (i-1, i+1), lattice (the 4 grid neighbours present).
    The relation is symmetric (j in N_i iff i in N_j)."""
    if layout == "ring":
        return [sorted({(i - 1) % n, (i + 1) % n} - {i}) for i in range(n)]
    if layout == "lattice":
        cols = lattice_columns(n)
        out = []
        for i in range(n):
            r, c = divmod(i, cols)
            cand = []
            if c > 0:
                cand.append(i - 1)
            if c < cols - 1 and i + 1 < n:
                cand.append(i + 1)
            if r > 0:
                cand.append(i - cols)
            if i + cols < n:
                cand.append(i + cols)
            out.append(sorted(cand))
        return out
    raise ValueError(f"layout must be 'ring' or 'lattice', not {layout!r}")


def consensus_gains(bandwidth_rad_s: float, damping_ratio: float, max_degree: int) -> tuple[float, float]:
    """(kp [1/s^2], kd [1/s]) per neighbour, so that the fastest shape mode has natural frequency
    at most ``bandwidth_rad_s`` and damping ``damping_ratio`` (Laplacian eigenvalues <= 2 d_max)."""
    lam_max = 2.0 * max(max_degree, 1)
    return bandwidth_rad_s * bandwidth_rad_s / lam_max, 2.0 * damping_ratio * bandwidth_rad_s / lam_max


def period_ns(rate_hz: float) -> int:
    """The control period in ns; the rate must give a whole number of nanoseconds."""
    period = Fraction(NS_PER_S) / Fraction(rate_hz).limit_denominator(10**9)  # as PeriodicSchedule
    if period.denominator != 1 or period < 1:
        raise ValueError(
            f"the control period 1/{rate_hz:g} s = {float(period):.3f} ns is not a whole "
            f"number of nanoseconds (e.g. 0.5, 1, 2, 4, 5, 8, 10 Hz are)"
        )
    return int(period)


def radio_delay_periods(latency_s: float, rate_hz: float) -> int:
    """Control periods a broadcast takes: the first control step at or after send + latency,
    and at least the next one (a message to another island arrives no earlier than 1 ns later)."""
    return max(1, math.ceil(latency_s * rate_hz - 1e-9))


# ----------------------------------------------------------------------------- models


THRUSTER = Kind(
    Field("max_thrust_N", unit="N", doc="per-axis limit of the commanded force"),
    Field("min_thrust_N", unit="N", doc="an axis commanded below it is zeroed (the least a valve delivers)"),
    Field("scale", default=1.0, doc="the thrust_scale fault's factor (1: nominal)"),
    Field("force_N", shape=(3,), unit="N", doc="the force latched for the hop, inertial frame"),
    Field("impulse_Ns", unit="N s", doc="sum of |F_axis| dt over the hops: the propellant measure"),
    Field("saturated_hops", "i8", doc="hops whose command was clipped"),
)
THRUSTER_ROW = THRUSTER.dtype  # as the row loops see it


@njit(cache=True)
def latch_command(s, fresh, cmd_N, dt_s):
    """A thruster's start of hop over ``dt_s`` (s): a ``fresh`` command ``cmd_N`` (N, inertial) is
    clipped per axis to +-max_thrust_N, an axis under min_thrust_N zeroed, the rest scaled, and
    latched as ``force_N``; the hop's impulse is counted. ``np.clip``'s arithmetic (a NaN stays)."""
    if fresh:
        fx, fy, fz = cmd_N[0], cmd_N[1], cmd_N[2]
        lim = s.max_thrust_N
        if abs(fx) > lim or abs(fy) > lim or abs(fz) > lim:
            s.saturated_hops += 1
            fx = lim if fx > lim else (-lim if fx < -lim else fx)
            fy = lim if fy > lim else (-lim if fy < -lim else fy)
            fz = lim if fz > lim else (-lim if fz < -lim else fz)
        low = s.min_thrust_N
        if low > 0.0:
            fx = 0.0 if abs(fx) < low else fx
            fy = 0.0 if abs(fy) < low else fy
            fz = 0.0 if abs(fz) < low else fz
        k = s.scale
        if k != 1.0:
            fx, fy, fz = fx * k, fy * k, fz * k
        s.force_N[0], s.force_N[1], s.force_N[2] = fx, fy, fz
    else:
        fx, fy, fz = s.force_N[0], s.force_N[1], s.force_N[2]
    s.impulse_Ns += (abs(fx) + abs(fy) + abs(fz)) * dt_s


@njit(cache=True)
def latch_command_rows(table, due, fresh, cmd_N, dt_s):
    """:func:`latch_command` of the due rows (see :mod:`hopsim.kernel.kind`)."""
    s = table.view(THRUSTER_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        latch_command(s[i], fresh[i], cmd_N[i], dt_s)


_FRESH, _HELD = np.ones(1, np.bool_), np.zeros(1, np.bool_)
_NO_COMMAND = np.zeros((1, 3))


class FormationThruster(ContinuousModel):
    """A proportional thruster cluster with per-axis saturation, fixed in inertial axes.

    Input ``cmd`` (Wrench, force in N, INERTIAL frame). At the start of every hop the latest
    command is latched (:func:`latch_command`): each axis is clipped to +-``max_thrust_N`` and
    zeroed below ``min_thrust_N``; the force is then applied at the centre of mass, constant over
    the hop. State (:data:`THRUSTER`): the latched ``force_N``, ``impulse_Ns`` (sum of |F_axis|
    dt, the propellant measure), ``saturated_hops``.
    """

    kind = THRUSTER
    inputs: ClassVar[dict[str, In]] = {"cmd": In(Wrench)}
    accepts_faults = {"thrust_scale": ("value", "clear")}
    row_form = "hopsim.actors.formation_rows:ThrusterRows"  # in a row block (hopsim.kernel.blocks)
    loads_constant_over_hop = True  # the commanded force is held across a hop

    def __init__(self, name: str, body, max_thrust_N: float, min_thrust_N: float = 0.0):
        super().__init__(name)
        if max_thrust_N <= 0 or min_thrust_N < 0 or min_thrust_N > max_thrust_N:
            raise ValueError(
                f"{name}: need 0 <= min_thrust_N <= max_thrust_N and max_thrust_N > 0, "
                f"got {min_thrust_N}, {max_thrust_N}"
            )
        self.body = body
        self.max_thrust_N = float(max_thrust_N)
        self.min_thrust_N = float(min_thrust_N)

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        cmd = self.ports["cmd"].take()  # as self.take("cmd"), one call less
        if cmd is None:
            fresh, cmd_N = _HELD, _NO_COMMAND
        else:
            f = cmd.force
            fresh, cmd_N = _FRESH, np.array(((f.x, f.y, f.z),))
        latch_command_rows(as_bytes(self.row), ONE, fresh, cmd_N, (t1_ns - t0_ns) / NS_PER_S)

    def pre_deriv(self, t_s: float) -> None:
        self.body.add_force_N(self.force_N)

    def on_fault(self, fault, t_ns: int) -> None:
        self.scale = 1.0 if fault.clear else float(fault.value)


NOISE_BLOCK = 32  # a state sensor's normals are drawn this many samples at a time

STATE_SENSOR = Kind(
    Field("sigma", shape=(6,), unit="m, m/s", doc="1-sigma white noise per axis: r_BN_N, then v_BN_N"),
    Field("noisy", "?", doc="whether any sigma is above 0"),
    Field("noise", shape=(NOISE_BLOCK, 6), doc="standard normals drawn ahead, a sample's six per row, in draw order"),
    Field("left", "i8", doc="samples of ``noise`` not used yet (its last ``left`` rows)"),
    Field("last_t_ns", "i8", unit="ns", default=-1, doc="the instant of the last sample"),
    Field("samples", "i8", doc="samples taken"),
    Field("meas", shape=(7,), unit="m, m/s, kg", doc="the last sample: r_BN_N, v_BN_N (N frame), mass"),
)
STATE_SENSOR_ROW = STATE_SENSOR.dtype


@njit(cache=True)
def sample_state(s, t_ns, x, mass_kg):
    """A state sensor's sample at ``t_ns`` of the body's state ``x`` (r_BN_N m, v_BN_N m/s first)
    and mass (kg): the truth plus sigma times the next six drawn normals, into ``meas``; once per
    instant, however often asked. The normals must have been drawn (:meth:`StateSensor.draw`)."""
    if t_ns == s.last_t_ns:
        return
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    if s.noisy:
        nz = s.noise[NOISE_BLOCK - s.left]
        s.left -= 1
        g = s.sigma
        x0, x1, x2 = x0 + g[0] * nz[0], x1 + g[1] * nz[1], x2 + g[2] * nz[2]
        x3, x4, x5 = x3 + g[3] * nz[3], x4 + g[4] * nz[4], x5 + g[5] * nz[5]
    m = s.meas
    m[0], m[1], m[2], m[3], m[4], m[5], m[6] = x0, x1, x2, x3, x4, x5, mass_kg
    s.last_t_ns = t_ns
    s.samples += 1


@njit(cache=True)
def sample_state_rows(table, due, t_ns, X, mass_kg):
    """:func:`sample_state` of the due rows, row i of the bodies' states ``X`` and masses."""
    s = table.view(STATE_SENSOR_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        sample_state(s[i], t_ns, X[i], mass_kg[i])


class StateSensor(ContinuousModel):
    """Noisy own position and velocity at the control rate (a relative-navigation filter's output).

    Output ``meas`` (VehicleState with ``r_BN_N``, ``v_BN_N``, ``t_ns``): the truth of the body at
    the control step plus white noise of 1-sigma ``position_noise_m`` and ``velocity_noise_mps``
    per axis, drawn from this model's own generator (6 normals per sample, position first):
    :func:`sample_state`.

    The normals (:func:`hopsim.dynamics.detrandom.standard_normal`) are drawn ``NOISE_BLOCK``
    samples at a time (one ``standard_normal(rng, (k, 6))`` gives the same numbers as k calls of
    ``standard_normal(rng, 6)``, for a tenth of the cost) and kept in the row (:data:`STATE_SENSOR`),
    which snapshots and checkpoints carry with the generator's state, so that the noise of every
    sample is the one drawn one sample at a time, however the run is cut.
    """

    kind = STATE_SENSOR
    outputs: ClassVar[dict[str, Out]] = {"meas": Out(VehicleState)}
    feed_through = False
    row_form = "hopsim.actors.formation_rows:SensorRows"
    NOISE_BLOCK: ClassVar[int] = NOISE_BLOCK

    def __init__(self, name: str, body, rate_hz: float, position_noise_m: float = 0.0, velocity_noise_mps: float = 0.0):
        super().__init__(name)
        self.body = body
        self.vehicle = body.name
        self.io_schedule = FixedRate(rate_hz)
        self.sigma = [position_noise_m] * 3 + [velocity_noise_mps] * 3
        self.noisy = bool(np.any(self.sigma > 0))
        self._msg = None

    @staticmethod
    def draw(table: np.ndarray, i: int, rng: np.random.Generator) -> None:
        """Row i's next block of normals, from its model's generator, when its block is used up."""
        row = table[i]  # a view of the row
        if row["noisy"] and row["left"] == 0:
            row["noise"] = detrandom.standard_normal(rng, (NOISE_BLOCK, 6))
            row["left"] = NOISE_BLOCK

    def update_flow_outs(self, t_ns: int) -> None:
        if t_ns != self.last_t_ns:  # one sample per instant, however often asked
            body = self.body
            self.draw(self.row, 0, self.rng)
            sample_state_rows(as_bytes(self.row), ONE, t_ns, body.x.reshape(1, -1), np.array((body.mass_kg,)))
            self._msg = position_velocity_state(self.vehicle, t_ns, *self.meas.tolist())
        self.write("meas", self._msg)


MAX_NEIGHBOURS = 4  # a lattice's; a ring has 2
HISTORY = 64  # own broadcasts a flight software keeps: stale_after_s * control_rate_hz + 2 at most
COAST, CONSENSUS, BRAKE = 0, 1, 2  # its modes
MODES = ("coast", "consensus", "brake")

RADIO = Kind(
    Field("configured_loss", doc="the probability of losing a packet, as configured"),
    Field("loss", doc="the probability of losing a packet now (fault radio_loss)"),
    Field("received", "i8", doc="packets forwarded"),
    Field("lost", "i8", doc="packets lost"),
)
RADIO_ROW = RADIO.dtype


@njit(cache=True)
def admit_packets(s, fresh, uniforms, drawn, passed):
    """A receiving radio's instant: each port k with a ``fresh`` packet passes (``passed[k]``) or
    is lost with probability ``loss``; a uniform draw per packet when 0 < loss < 1, the next of
    ``uniforms`` (from index ``drawn[0]``, which counts them)."""
    for k in range(fresh.shape[0]):
        passed[k] = False
        if not fresh[k]:
            continue
        p = s.loss
        if p >= 1.0:
            s.lost += 1
            continue
        if p > 0.0:
            u = uniforms[drawn[0]]
            drawn[0] += 1
            if u < p:
                s.lost += 1
                continue
        s.received += 1
        passed[k] = True


@njit(cache=True)
def admit_packets_rows(table, due, fresh, uniforms, drawn, passed):
    """:func:`admit_packets` of the due rows."""
    s = table.view(RADIO_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        admit_packets(s[i], fresh[i], uniforms[i], drawn[i], passed[i])


class NeighbourRadio(Model):
    """The receiving radio of one vehicle: one input per neighbour's broadcast, loss per packet.

    Inputs ``n0, n1, ...`` (VehicleState, one per neighbour, tied to ``<neighbour>/air``); output
    ``rx`` (VehicleState queue): the packets that got through, in port order. Each arriving packet
    is lost with probability ``loss`` (one uniform draw per packet from this radio's own
    generator; none when ``loss`` is 0 or 1): :func:`admit_packets`. Fault ``radio_loss``: value =
    new probability (``clear`` restores the configured one). State: :data:`RADIO`.
    """

    kind = RADIO
    outputs: ClassVar[dict[str, Out]] = {"rx": Out(VehicleState, queue=True)}
    io_schedule = NoIo()
    feed_through = True
    accepts_faults = {"radio_loss": ("value", "clear")}
    row_form = "hopsim.actors.formation_rows:RadioRows"

    def __init__(self, name: str, n_neighbours: int, loss: float = 0.0):
        self.inputs = {f"n{k}": In(VehicleState) for k in range(n_neighbours)}
        super().__init__(name)
        self.configured_loss = self.loss = float(check_probability(loss, f"{name}: loss"))
        self._ports = tuple(self.inputs)

    def update_flow_outs(self, t_ns: int) -> None:
        ports = self.ports
        packets = [ports[port].take() for port in self._ports]
        fresh = np.array([[m is not None for m in packets]], np.bool_)
        n = int(fresh.sum())
        drawing = 0.0 < self.loss < 1.0 and n > 0
        uniforms = self.rng.random((1, n)) if drawing else np.zeros((1, 1))
        passed = np.zeros_like(fresh)
        admit_packets_rows(as_bytes(self.row), ONE, fresh, uniforms, np.zeros((1, 1), np.int64), passed)
        for msg, through in zip(packets, passed[0].tolist(), strict=True):
            if through:
                self.write("rx", msg)

    def check_fault(self, fault) -> None:
        if not fault.clear:
            check_probability(fault.value, f"{self.name}: fault 'radio_loss': value (the loss probability)")

    def on_fault(self, fault, t_ns: int) -> None:
        self.loss = self.configured_loss if fault.clear else float(fault.value)  # in [0, 1]: check_fault


FLIGHT_SOFTWARE = Kind(
    Field("period_ns", "i8", unit="ns", doc="the control period"),
    Field("stale_ns", "i8", unit="ns", doc="a broadcast older than this is left out"),
    Field("kp", unit="1/s^2", doc="position gain per neighbour"),
    Field("kd", unit="1/s", doc="velocity gain per neighbour"),
    Field("brake_gain", unit="1/s", doc="braking gain when no neighbour is heard from"),
    Field("mass_kg", unit="kg", doc="the mass the commanded force is computed for"),
    Field("offsets_m", shape=(MAX_NEIGHBOURS, 3), unit="m", doc="p_i - p_j per neighbour slot, N frame"),
    Field("heard_t_ns", "i8", (MAX_NEIGHBOURS,), "ns", "instant of each neighbour's latest broadcast (-1: none)", -1),
    Field("heard_rv", shape=(MAX_NEIGHBOURS, 6), unit="m, m/s", doc="each neighbour's latest broadcast r, v (N)"),
    Field("heard_order", "i8", (MAX_NEIGHBOURS,), doc="neighbour slots in the order first heard from"),
    Field("n_heard", "i8", doc="neighbours heard from"),
    Field("own_t_ns", "i8", (HISTORY,), "ns", "own broadcasts' instants, a ring from own_head"),
    Field("own_rv", shape=(HISTORY, 6), unit="m, m/s", doc="own broadcasts' r, v (N), the same ring"),
    Field("own_head", "i8", doc="the ring's oldest entry"),
    Field("n_own", "i8", doc="own broadcasts kept"),
    Field("last_t_ns", "i8", unit="ns", default=-1, doc="the last control step"),
    Field("mode", "i8", doc="COAST, CONSENSUS or BRAKE"),
    Field("steps", "i8", (3,), doc="control steps in each mode"),
    Field("pairs_used", "i8", doc="neighbour pairs summed over all steps"),
    Field("accel", shape=(3,), unit="m/s^2", doc="the last commanded acceleration, N frame"),
    Field("thrust_N", shape=(3,), unit="N", doc="the last commanded force, N frame"),
    Field("acted", "?", doc="whether the last call was a control step (thrust and air written)"),
)
FLIGHT_SOFTWARE_ROW = FLIGHT_SOFTWARE.dtype


@njit(cache=True)
def consensus_control(s, t_ns, meas_rv, rx_rv, rx_t_ns, rx_slot, n_rx):
    """The consensus law of the module docstring at ``t_ns``: absorb the ``n_rx`` packets received
    (neighbour slot, instant, r and v), then at a control step (once each) the consensus sum over
    the neighbours in the order first heard from, each paired with the own broadcast of the same
    instant; brake without any, coast until the first packets can have arrived. ``meas_rv``: the
    own measured r (m), v (m/s), N frame."""
    heard_t, heard_rv = s.heard_t_ns, s.heard_rv
    for p in range(n_rx):  # the latest packet per neighbour
        k, sent = rx_slot[p], rx_t_ns[p]
        if heard_t[k] < 0:
            s.heard_order[s.n_heard] = k
            s.n_heard += 1
        elif sent <= heard_t[k]:
            continue
        heard_t[k] = sent
        for c in range(6):
            heard_rv[k, c] = rx_rv[p, c]
    s.acted = False
    if t_ns % s.period_ns != 0 or t_ns == s.last_t_ns:
        return  # control steps only, once each (messages are absorbed meanwhile)
    s.last_t_ns = t_ns
    own_t, own_rv, cap = s.own_t_ns, s.own_rv, HISTORY
    head, n_own = s.own_head, s.n_own
    at = (head + n_own) % cap
    own_t[at] = t_ns
    for c in range(6):
        own_rv[at, c] = meas_rv[c]
    n_own += 1
    while own_t[head] < t_ns - s.stale_ns:  # oldest first
        head = (head + 1) % cap
        n_own -= 1
    s.own_head, s.n_own = head, n_own
    kp, kd, offsets, order = s.kp, s.kd, s.offsets_m, s.heard_order
    ax = ay = az = 0.0
    used = 0
    for q in range(s.n_heard):
        k = order[q]
        h = -1
        for e in range(n_own):
            at = (head + e) % cap
            if own_t[at] == heard_t[k]:
                h = at
        if h < 0:  # too old (or from before this vehicle's history)
            continue
        ax -= kp * ((own_rv[h, 0] - heard_rv[k, 0]) - offsets[k, 0]) + kd * (own_rv[h, 3] - heard_rv[k, 3])
        ay -= kp * ((own_rv[h, 1] - heard_rv[k, 1]) - offsets[k, 1]) + kd * (own_rv[h, 4] - heard_rv[k, 4])
        az -= kp * ((own_rv[h, 2] - heard_rv[k, 2]) - offsets[k, 2]) + kd * (own_rv[h, 5] - heard_rv[k, 5])
        used += 1
    if used:
        s.mode = CONSENSUS
    elif t_ns < s.stale_ns:
        s.mode = COAST  # the first packets are still on their way
    else:
        s.mode = BRAKE
        g = s.brake_gain
        ax, ay, az = -g * meas_rv[3], -g * meas_rv[4], -g * meas_rv[5]
    s.steps[s.mode] += 1
    s.pairs_used += used
    s.accel[0], s.accel[1], s.accel[2] = ax, ay, az
    m = s.mass_kg
    s.thrust_N[0], s.thrust_N[1], s.thrust_N[2] = m * ax, m * ay, m * az
    s.acted = True


@njit(cache=True)
def consensus_control_rows(table, due, t_ns, meas_rv, rx_rv, rx_t_ns, rx_slot, n_rx):
    """:func:`consensus_control` of the due rows."""
    s = table.view(FLIGHT_SOFTWARE_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        consensus_control(s[i], t_ns, meas_rv[i], rx_rv[i], rx_t_ns[i], rx_slot[i], n_rx[i])


class FormationFlightSoftware(Model):
    """The consensus law of the module docstring (:func:`consensus_control`), at the control rate.

    Inputs ``meas`` (own measured state, VehicleState) and ``rx`` (neighbour broadcasts, queue);
    outputs ``thrust`` (Wrench, inertial force in N) and ``air`` (the own measured state,
    broadcast; its tie carries the radio latency). ``offsets_m`` maps each neighbour's name (at
    most :data:`MAX_NEIGHBOURS`) to ``p_i - p_j``, the nominal relative position of this vehicle
    from it. State: :data:`FLIGHT_SOFTWARE`.
    """

    kind = FLIGHT_SOFTWARE
    inputs: ClassVar[dict[str, In]] = {"meas": In(VehicleState), "rx": In(VehicleState, queue=True)}
    outputs: ClassVar[dict[str, Out]] = {"thrust": Out(Wrench), "air": Out(VehicleState)}
    row_form = "hopsim.actors.formation_rows:FlightSoftwareRows"

    def __init__(
        self,
        name: str,
        vehicle: str,
        mass_kg: float,
        rate_hz: float,
        offsets_m: dict[str, tuple[float, float, float]],
        kp: float,
        kd: float,
        brake_gain_per_s: float,
        stale_after_s: float,
    ):
        super().__init__(name)
        if len(offsets_m) > MAX_NEIGHBOURS:
            raise ValueError(f"{name}: at most {MAX_NEIGHBOURS} neighbours, got {len(offsets_m)}")
        self.vehicle = vehicle
        self.io_schedule = FixedRate(rate_hz)
        self.neighbours = tuple(offsets_m)  # slot k: the k-th
        self._slot = {n: k for k, n in enumerate(self.neighbours)}
        self.mass_kg = float(mass_kg)
        self.period_ns = period_ns(rate_hz)
        self.stale_ns = max(round(stale_after_s * NS_PER_S), self.period_ns)
        if self.stale_ns // self.period_ns + 2 > HISTORY:
            raise ValueError(
                f"{name}: stale_after_s x control_rate_hz must be at most {HISTORY - 2} "
                f"(got {stale_after_s:g} s at {rate_hz:g} Hz); lower stale_after_s"
            )
        for k, off in enumerate(offsets_m.values()):
            self.offsets_m[k] = off
        self.kp, self.kd, self.brake_gain = float(kp), float(kd), float(brake_gain_per_s)

    @property
    def mode_name(self) -> str:
        """The mode of the last control step: coast, consensus or brake."""
        return MODES[self.mode]

    @property
    def steps_by_mode(self) -> dict[str, int]:
        """Control steps taken in each mode, by name."""
        return dict(zip(MODES, self.steps.tolist(), strict=True))

    def update_flow_outs(self, t_ns: int) -> None:
        packets = self.ports["rx"].drain()
        n = len(packets)
        rx_rv, rx_t, rx_slot = (
            np.zeros((1, max(n, 1), 6)),
            np.zeros((1, max(n, 1)), np.int64),
            np.zeros((1, max(n, 1)), np.int64),
        )
        for p, pkt in enumerate(packets):
            r, v = pkt.r_BN_N, pkt.v_BN_N
            rx_rv[0, p] = (r.x, r.y, r.z, v.x, v.y, v.z)
            rx_t[0, p], rx_slot[0, p] = pkt.t_ns, self._slot[pkt.vehicle]
        meas = self.ports["meas"].read()
        meas_rv = np.zeros((1, 6))
        if meas is not None:
            r, v = meas.r_BN_N, meas.v_BN_N
            meas_rv[0] = (r.x, r.y, r.z, v.x, v.y, v.z)
        consensus_control_rows(as_bytes(self.row), ONE, t_ns, meas_rv, rx_rv, rx_t, rx_slot, np.array((n,)))
        if self.acted:
            self.write("thrust", inertial_force(self.vehicle, *self.thrust_N.tolist()))
            self.write("air", meas)
