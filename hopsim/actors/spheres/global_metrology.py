"""The global-metrology simulator of one SPHERES vehicle: ultrasound ranges from the beacons.

Timing follows the prototype-compatible metrology simulator: a transmit cycle starts every
``ir_period`` (153 ms) on a grid shared by every vehicle; only the requests received before a
cycle starts are served by it. In a served cycle the vehicle sees the IR sync at the cycle start,
beacon k fires at ``5 + 20 k`` ms, and the ranges of the whole cycle are delivered at 105 ms. The
request-to-data latency is therefore 105 to 258 ms.

A range is what the receiver's time-of-flight counter measures: the speed of sound times the time
from the beacon's firing to the pulse's arrival at the receiver, which moves meanwhile. The pose
and rates at the firing instant come from the vehicle's integrated trajectory: at the end of the
hop that contains the firing, the state is carried back to it with that hop's constant loads
(every force and torque is constant in body axes within a hop, so the acceleration and angular
acceleration of the hop's end hold over it, up to their slow rotation with the body: well
below a micrometre over a 100 ms hop). The receiver's motion over the few milliseconds of flight
is taken as rigid motion at the firing instant's rates.

A reading is kept only if the transmitter angle (from the beacon's axis to the face) and the
receiver angle (from the face's outward normal to the beacon) are within their limits; otherwise
it is -1. The limits are evaluated per face, at the face's centre, as in the simulator listing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.actors.messages import gm_range_values, gm_ranges
from hopsim.actors.spheres.frames import dcm_c, from_rotvec_c, normalized_c, quat_mul_c
from hopsim.actors.spheres.params import ReceiverParams, TestbedParams
from hopsim.actors.spheres.sensor_faults import SENSOR_FAULTS, SensorFaults
from hopsim.dynamics import detlinalg, detmath, detrandom
from hopsim.kernel import ContinuousModel, In, Out, VariableRate
from hopsim.kernel.simtime import seconds
from hopsim.schemas.spheres_pb2 import GmRanges, GmRequest, GmSync

NO_READING = -1.0


class ReceiverGeometry:
    """Receiver positions (faces x receivers x 3, m, in B), face centres and outward normals."""

    def __init__(self, params: ReceiverParams):
        self.positions_B = np.array(params.positions_B, dtype=float)
        self.n_faces, self.n_receivers = self.positions_B.shape[:2]
        self.flat_B = self.positions_B.reshape(-1, 3)
        self.centres_B = self.positions_B.mean(axis=1)
        normals = []
        for f in range(self.n_faces):
            p = self.positions_B[f]
            n = np.cross(p[1] - p[0], p[2] - p[0])
            n /= detlinalg.norm(n)
            normals.append(n if detlinalg.dot(n, self.centres_B[f]) > 0 else -n)
        self.normals_B = np.array(normals)
        self.cos_max_rx = detmath.cos(float(np.radians(params.max_rx_angle_deg)))


class BeaconLayout:
    """Beacon positions and pointing directions (N) with the transmitter angle limit."""

    def __init__(self, testbed: TestbedParams):
        self.positions_N = np.array(testbed.beacon_positions_N, dtype=float)
        self.directions_N = np.array(testbed.directions(), dtype=float)
        self.cos_max_tx = detmath.cos(float(np.radians(testbed.max_tx_angle_deg)))
        self.speed_of_sound = testbed.speed_of_sound_mps


def beacon_ranges(
    beacon: int, layout: BeaconLayout, receivers: ReceiverGeometry, r_N, v_N, q_BN, omega_B, iterations: int = 3
) -> np.ndarray:
    """Ranges (m) from one beacon to every receiver (faces x receivers), -1 where not visible.

    ``r_N, v_N, q_BN, omega_B`` are the vehicle's pose and rates when the beacon fires.
    """
    out = _ranges(
        layout.positions_N[beacon],
        layout.directions_N[beacon],
        layout.cos_max_tx,
        layout.speed_of_sound,
        receivers.flat_B,
        receivers.centres_B,
        receivers.normals_B,
        receivers.cos_max_rx,
        receivers.n_receivers,
        np.asarray(r_N, float),
        np.asarray(v_N, float),
        np.asarray(q_BN, float),
        np.asarray(omega_B, float),
        iterations,
    )
    return out.reshape(receivers.n_faces, receivers.n_receivers)


@njit(cache=True, fastmath=False, error_model="numpy")
def _ranges(p_b, tx_dir, cos_max_tx, c, rx_B, centres_B, normals_B, cos_max_rx, n_rx, r, v, q, omega_B, iterations):
    R = dcm_c(q)
    n = rx_B.shape[0]
    out = np.empty(n)
    omega_N = detlinalg.matmul(R, omega_B)
    rate = np.sqrt(detlinalg.dot(omega_N, omega_N))
    k = omega_N / rate if rate > 0.0 else omega_N
    k_x_s = np.empty(3)
    for f in range(centres_B.shape[0]):
        # visibility of the face, at the firing instant
        to_face = r + detlinalg.matmul(R, centres_B[f]) - p_b
        to_face = to_face / np.sqrt(detlinalg.dot(to_face, to_face))
        seen = (detlinalg.dot(to_face, tx_dir) >= cos_max_tx) and (
            detlinalg.dot(detlinalg.matmul(R, normals_B[f]), -to_face) >= cos_max_rx
        )
        for j in range(f * n_rx, (f + 1) * n_rx):
            if not seen:
                out[j] = -1.0
                continue
            s = detlinalg.matmul(R, rx_B[j])
            d = p_b - (r + s)
            tau = np.sqrt(detlinalg.dot(d, d)) / c
            # the pulse meets the receiver where it has moved to: c tau = |p_b - p_rx(tau)|
            for _ in range(iterations):
                moved = s
                if rate > 0.0:
                    th = rate * tau
                    cos_th = detmath.cos(th)
                    k_x_s[0] = k[1] * s[2] - k[2] * s[1]  # np.cross(k, s), its products and differences
                    k_x_s[1] = k[2] * s[0] - k[0] * s[2]
                    k_x_s[2] = k[0] * s[1] - k[1] * s[0]
                    moved = s * cos_th + k_x_s * detmath.sin(th) + k * detlinalg.dot(k, s) * (1.0 - cos_th)
                d = p_b - (r + v * tau + moved)
                tau = np.sqrt(detlinalg.dot(d, d)) / c
            out[j] = c * tau
    return out


@njit(cache=True, fastmath=False, error_model="numpy")
def _state_back(x, xd, dt):
    """(r_N, v_N, q_BN, omega_B) dt seconds before the state x (with derivatives xd), at the
    hop's constant acceleration and angular acceleration."""
    a, wdot = xd[3:6], xd[10:13]
    r = x[0:3] - x[3:6] * dt + 0.5 * a * dt * dt
    v = x[3:6] - a * dt
    w = x[10:13] - wdot * dt
    mean_w = x[10:13] - 0.5 * wdot * dt
    q = normalized_c(quat_mul_c(x[6:10], from_rotvec_c(-mean_w * dt)))
    return r, v, q, w


@njit(cache=True, fastmath=False, error_model="numpy")
def _measure_back(
    ranges,
    beacon,
    x,
    xd,
    dt,
    positions_N,
    directions_N,
    cos_max_tx,
    c,
    rx_B,
    centres_B,
    normals_B,
    cos_max_rx,
    iterations,
):
    """:func:`_ranges` from beacon ``beacon`` at the state :func:`_state_back` gives, written into
    ``ranges[beacon]`` (faces x receivers, m; one compiled call per firing)."""
    r, v, q, w = _state_back(x, xd, dt)
    n_faces, n_rx = ranges.shape[1], ranges.shape[2]
    out = _ranges(
        positions_N[beacon],
        directions_N[beacon],
        cos_max_tx,
        c,
        rx_B,
        centres_B,
        normals_B,
        cos_max_rx,
        n_rx,
        r,
        v,
        q,
        w,
        iterations,
    )
    for f in range(n_faces):
        for j in range(n_rx):
            ranges[beacon, f, j] = out[f * n_rx + j]


class GlobalMetrologySimulator(ContinuousModel):
    """Ultrasound time-of-flight ranges of one vehicle, from every beacon to every receiver.

    Input ``request`` (GmRequest, queue). Outputs ``sync`` (GmSync: the IR pulse that starts a
    served cycle) and ``ranges`` (GmRanges: metres, [beacon][face][receiver], -1 for no reading).

    Variable-rate I/O: the cycle boundaries (every 153 ms, where requests are latched) and, in a
    served cycle, the delivery. Each firing is measured when the hop containing it ends.

    Faults: ``sensor_bias`` (value m added to every range), ``noise_scale``, ``dropout`` (value =
    probability that a range is lost), each for ``duration_s`` (0: until cleared).
    """

    inputs = {"request": In(GmRequest, queue=True)}
    outputs = {"sync": Out(GmSync, queue=True), "ranges": Out(GmRanges, queue=True)}
    io_schedule = VariableRate()
    feed_through = False
    accepts_faults = SENSOR_FAULTS

    def __init__(self, name: str, body, testbed: TestbedParams, receivers: ReceiverParams, vehicle: str | None = None):
        super().__init__(name)
        self.body = body
        self.vehicle = vehicle or body.name
        self.testbed = testbed
        self.layout = BeaconLayout(testbed)
        self.receivers = ReceiverGeometry(receivers)
        self.period_ns = seconds(testbed.ir_period_s)
        self.first_ns = seconds(testbed.first_beacon_delay_s)
        self.spacing_ns = seconds(testbed.beacon_spacing_s)
        self.delivery_ns = seconds(testbed.delivery_delay_s)
        self.n_beacons = testbed.n_beacons
        self.cycle_start: int | None = None  # start of the cycle being served
        self.fire_ns: list[int] = []
        self.ranges = np.full((self.n_beacons, self.receivers.n_faces, self.receivers.n_receivers), NO_READING)
        self.sync_due = False
        self.delivery_due = False
        self.faults = SensorFaults(1)
        self.cycles_served = 0

    def _next_boundary(self, t_ns: int) -> int:
        return (t_ns // self.period_ns + 1) * self.period_ns

    def next_io_time(self, t_ns: int) -> int | None:
        nxt = self._next_boundary(t_ns)
        if self.cycle_start is not None and self.cycle_start + self.delivery_ns > t_ns:
            nxt = min(nxt, self.cycle_start + self.delivery_ns)
        return nxt

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """At a cycle boundary latch the requests; at the delivery release the ranges."""
        t = t1_ns
        if t % self.period_ns == 0 and self.cycle_start is None and self.drain("request"):
            self.cycle_start = t
            self.fire_ns = [t + self.first_ns + k * self.spacing_ns for k in range(self.n_beacons)]
            self.ranges[:] = NO_READING
            self.sync_due = True
        if self.cycle_start is not None and t == self.cycle_start + self.delivery_ns:
            self.delivery_due = True

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Measure the firings that fell inside the hop (t0, t1]."""
        fire_ns = self.fire_ns  # in time order
        if not fire_ns or fire_ns[-1] <= t0_ns or fire_ns[0] > t1_ns:
            return
        for k, t_fire in enumerate(fire_ns):
            if t0_ns < t_fire <= t1_ns:
                self._measure(k, t_fire, t1_ns)

    def state_at(self, t_ns: int, t1_ns: int):
        """(r_N, v_N, q_BN, omega_B) at t_ns inside the hop that ends at t1_ns (the current state)."""
        return _state_back(self.body.x, self.body.xdot_last, (t1_ns - t_ns) * 1e-9)

    def _measure(self, beacon: int, t_ns: int, t1_ns: int) -> None:
        # self.ranges[beacon] = beacon_ranges(beacon, ..., *self.state_at(t_ns, t1_ns)), in one compiled call
        layout, rx = self.layout, self.receivers
        _measure_back(
            self.ranges,
            beacon,
            self.body.x,
            self.body.xdot_last,
            (t1_ns - t_ns) * 1e-9,
            layout.positions_N,
            layout.directions_N,
            layout.cos_max_tx,
            layout.speed_of_sound,
            rx.flat_B,
            rx.centres_B,
            rx.normals_B,
            rx.cos_max_rx,
            3,
        )
        faults = self.faults
        faults.expire(t_ns)
        noise = self.testbed.range_noise_m * faults.noise_scale
        if noise > 0.0 or faults.bias[0] != 0.0 or faults.dropout > 0.0:
            self._perturb(self.ranges[beacon], noise)

    def _perturb(self, ranges: np.ndarray, noise: float) -> None:
        """Add the range noise (RMS ``noise``, m) and the faults' bias and dropouts to the readings
        ``ranges`` (one beacon's, faces x receivers, changed in place)."""
        seen = ranges >= 0.0
        if noise > 0.0:
            ranges[seen] += noise * detrandom.standard_normal(self.rng, int(seen.sum()))
        if self.faults.bias[0] != 0.0:
            ranges[seen] += self.faults.bias[0]
        if self.faults.dropout > 0.0:
            lost = self.rng.random(ranges.shape) < self.faults.dropout
            ranges[lost & seen] = NO_READING

    def update_flow_outs(self, t_ns: int) -> None:
        if self.sync_due:
            self.sync_due = False
            self.write(
                "sync",
                GmSync(
                    vehicle=self.vehicle,
                    cycle_start_ns=self.cycle_start,
                    data_due_ns=self.cycle_start + self.delivery_ns,
                    beacon_fire_ns=self.fire_ns,
                ),
            )
        if self.delivery_due:
            self.delivery_due = False
            self.write("ranges", gm_ranges(self.vehicle, self.cycle_start, self.fire_ns, self.ranges))
            self.cycle_start = None
            self.fire_ns = []
            self.cycles_served += 1

    def check_fault(self, fault) -> None:
        self.faults.check(fault)

    def on_fault(self, fault, t_ns: int) -> None:
        self.faults.apply(fault, t_ns)


def ranges_array(msg: GmRanges) -> np.ndarray:
    """The ranges of a GmRanges message as an array [beacon][face][receiver] (m, -1: none)."""
    return gm_range_values(msg).reshape(msg.n_beacons, msg.n_faces, msg.n_receivers)
