"""A one-dimensional lander: body dynamics, altimeter, descent controller, telemetry, ground station.

These are the executive's example models: a continuous model whose touchdown is a zero-crossing,
a noisy multirate sensor, a controller, a battery load, and telemetry crossing to another island.
Heights are metres above the ground along the local vertical (up positive).

The body, the altimeter and the controller are kinds (:mod:`hopsim.kernel.kind`): their state is
declared (:data:`LANDER_BODY`, :data:`ALTIMETER`, :data:`DESCENT_CONTROLLER`) and their laws are
compiled functions of one row (:func:`vertical_acceleration`, :func:`sample_height`,
:func:`descent_command`), each called through its row loop. The telemetry downlink and the ground
station only copy messages: they stay Python models.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.dynamics import detrandom
from hopsim.kernel import ContinuousModel, FixedRate, In, Model, NoIo, Out
from hopsim.kernel.kind import ONE, Field, Kind, as_bytes
from hopsim.schemas import BatteryState, LanderTelemetry, Quaternion, Scalar, ThrottleCommand, Vector3, VehicleState

LANDER_BODY = Kind(
    Field("mass_kg", unit="kg", doc="constant mass"),
    Field("gravity", unit="m/s^2", doc="gravitational acceleration, down"),
    Field("max_thrust_N", unit="N", doc="thrust at full throttle"),
    Field("engine_power_W", unit="W", doc="electrical power of the engine valves at full throttle"),
    Field("avionics_power_W", unit="W", doc="electrical power drawn always"),
    Field("throttle", doc="the command latched for the hop, in [0, 1]"),
    Field("thrust_scale", default=1.0, doc="the thrust_scale fault's factor (1: nominal)"),
    Field("disturbance_N", unit="N", doc="the disturbance fault's vertical force, up positive"),
    Field("disturbance_until_ns", "i8", unit="ns", doc="the disturbance acts before this instant"),
    Field("disturbance_on", "?", doc="the disturbance latched for the hop (a step never splits a hop)"),
    Field("touched_down", "?", doc="on the ground: the motion has stopped"),
    Field("touchdown_t_ns", "i8", unit="ns", default=-1, doc="the instant of touchdown (-1: not yet)"),
    Field("touchdown_speed_mps", unit="m/s", default=np.nan, doc="the speed at touchdown (NaN: not yet)"),
)
LANDER_BODY_ROW = LANDER_BODY.dtype


@njit(cache=True)
def vertical_acceleration(s, x, xdot):
    """The lander's state derivative: ``x`` = (height m, vertical speed m/s, up positive) into
    ``xdot`` = (m/s, m/s^2); thrust ``throttle * max_thrust_N * thrust_scale`` plus the latched
    disturbance, minus gravity. Nothing moves once touched down."""
    if s.touched_down:
        xdot[0] = 0.0
        xdot[1] = 0.0
        return
    force = s.throttle * s.max_thrust_N * s.thrust_scale
    if s.disturbance_on:
        force += s.disturbance_N
    xdot[0] = x[1]
    xdot[1] = force / s.mass_kg - s.gravity


@njit(cache=True)
def vertical_acceleration_rows(table, due, x, xdot):
    """:func:`vertical_acceleration` of the due rows (see :mod:`hopsim.kernel.kind`)."""
    s = table.view(LANDER_BODY_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        vertical_acceleration(s[i], x[i], xdot[i])


class LanderBody(ContinuousModel):
    """Vertical motion of a lander of constant mass under gravity and its engine.

    States: ``h`` (m, height above ground) and ``v`` (m/s, up positive). The engine's thrust is
    ``throttle * max_thrust_N``, held over each hop (:func:`vertical_acceleration`). Outputs the
    vehicle state and the electrical power the engine valves draw.
    """

    kind = LANDER_BODY
    state_names = ("h", "v")
    inputs = {"throttle": In(ThrottleCommand)}
    outputs = {"state": Out(VehicleState), "power_draw": Out(Scalar)}
    io_schedule = FixedRate(20.0)
    feed_through = False
    accepts_faults = {"thrust_scale": ("value", "clear"), "disturbance": ("force_N", "duration_s", "clear")}

    def __init__(
        self,
        name: str,
        h0_m: float,
        v0_mps: float = 0.0,
        mass_kg: float = 50.0,
        gravity_mps2: float = 1.62,
        max_thrust_N: float = 150.0,
        engine_power_W: float = 60.0,
        avionics_power_W: float = 15.0,
        rate_hz: float = 20.0,
    ):
        super().__init__(name)
        if mass_kg <= 0:
            raise ValueError(f"{name}: mass_kg must be positive, got {mass_kg}")
        self.h0, self.v0 = h0_m, v0_mps
        self.mass_kg, self.gravity = mass_kg, gravity_mps2
        self.max_thrust_N, self.engine_power_W, self.avionics_power_W = max_thrust_N, engine_power_W, avionics_power_W
        self.io_schedule = FixedRate(rate_hz)

    def initial_state(self):
        return [self.h0, self.v0]

    def on_fault(self, fault, t_ns: int) -> None:
        """thrust_scale: engine thrust times ``value``; disturbance: ``force_N.z`` for ``duration_s``."""
        if fault.kind == "thrust_scale":
            self.thrust_scale = 1.0 if fault.clear else fault.value
        elif fault.kind == "disturbance":
            self.disturbance_N = 0.0 if fault.clear else fault.force_N.z
            if fault.duration_s > 0 and not fault.clear:
                self.disturbance_until_ns = t_ns + round(fault.duration_s * 1e9)
                self.request_barrier(self.disturbance_until_ns)
            else:
                self.disturbance_until_ns = 2**62

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Latch the throttle command for the hop (discrete state)."""
        cmd = self.read("throttle")
        self.throttle = 0.0 if (cmd is None or self.touched_down) else min(max(cmd.throttle, 0.0), 1.0)
        self.disturbance_on = t0_ns < self.disturbance_until_ns

    def post_deriv(self, t_s: float) -> None:
        vertical_acceleration_rows(as_bytes(self.row), ONE, self.x[None], self.xdot[None])

    def touch_down(self, t_ns: int) -> None:
        """Called by the touchdown zero-crossing: the lander stops on the ground."""
        self.touched_down = True
        self.touchdown_t_ns = t_ns
        self.touchdown_speed_mps = abs(float(self.x[1]))
        self.x[1] = 0.0

    def update_flow_outs(self, t_ns: int) -> None:
        h, v = float(self.x[0]), float(self.x[1])
        a = 0.0 if self.touched_down else float(self.xdot[1])
        self.write(
            "state",
            VehicleState(
                vehicle=self.name,
                t_ns=t_ns,
                r_BN_N=Vector3(z=h),
                v_BN_N=Vector3(z=v),
                q_BN=Quaternion(w=1.0),
                omega_BN_B=Vector3(),
                a_BN_N=Vector3(z=a),
                mass=self.mass_kg,
            ),
        )
        self.write("power_draw", Scalar(value=self.avionics_power_W + self.throttle * self.engine_power_W, unit="W"))


ALTIMETER = Kind(
    Field("noise_m", unit="m", doc="1-sigma white noise of a sample"),
    Field("bias_m", unit="m", doc="added to every sample"),
    Field("fault_bias_m", unit="m", doc="the sensor_bias fault's bias, added too"),
    Field("noise_scale", default=1.0, doc="the noise_scale fault's factor on the noise"),
    Field("dropout", "?", doc="the dropout fault: no sample is published"),
    Field("draw", doc="the standard normal drawn for the next sample"),
    Field("measured_m", unit="m", default=np.nan, doc="the last sample (NaN: none yet)"),
)
ALTIMETER_ROW = ALTIMETER.dtype


@njit(cache=True)
def sample_height(s, height_m):
    """One sample of the true height (m): plus both biases and noise times the drawn normal."""
    s.measured_m = height_m + s.bias_m + s.fault_bias_m + s.noise_m * s.noise_scale * s.draw


@njit(cache=True)
def sample_height_rows(table, due, height_m):
    """:func:`sample_height` of the due rows (see :mod:`hopsim.kernel.kind`)."""
    s = table.view(ALTIMETER_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        sample_height(s[i], height_m[i])


class Altimeter(Model):
    """Radar altimeter: height with white noise (seeded) and a bias, sampled each I/O step
    (:func:`sample_height`)."""

    kind = ALTIMETER
    inputs = {"state": In(VehicleState)}
    outputs = {"altitude": Out(Scalar)}
    io_schedule = FixedRate(20.0)
    feed_through = False
    accepts_faults = {"sensor_bias": ("value", "clear"), "noise_scale": ("value", "clear"), "dropout": ("clear",)}

    def __init__(self, name: str, noise_m: float = 0.05, bias_m: float = 0.0, rate_hz: float = 20.0):
        super().__init__(name)
        self.noise_m, self.bias_m = noise_m, bias_m
        self.io_schedule = FixedRate(rate_hz)

    def on_fault(self, fault, t_ns: int) -> None:
        """sensor_bias adds ``value`` m; noise_scale multiplies the noise; dropout stops the samples."""
        if fault.kind == "sensor_bias":
            self.fault_bias_m = 0.0 if fault.clear else fault.value
        elif fault.kind == "noise_scale":
            self.noise_scale = 1.0 if fault.clear else fault.value
        elif fault.kind == "dropout":
            self.dropout = not fault.clear

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Sample the true height at the end of the step (sets measured_m)."""
        state = self.read("state")
        if state is not None:
            self.draw = detrandom.standard_normal(self.rng)  # the draw, taken by the model
            sample_height_rows(as_bytes(self.row), ONE, np.array([state.r_BN_N.z]))

    def update_flow_outs(self, t_ns: int) -> None:
        if not self.dropout:
            self.write("altitude", Scalar(value=self.measured_m, unit="m"))


DESCENT_CONTROLLER = Kind(
    Field("hover_throttle", doc="the throttle that balances gravity"),
    Field("gain", unit="1/(m/s)", doc="throttle per m/s of speed error"),
    Field("k_h", unit="1/s", doc="reference descent speed per metre of height"),
    Field("max_descent", unit="m/s", doc="the fastest reference descent"),
    Field("touchdown", unit="m/s", doc="the slowest reference descent"),
    Field("alpha", doc="weight of the new finite difference in the speed estimate"),
    Field("has_prev", "?", doc="whether a height was measured before"),
    Field("h_prev", unit="m", doc="the height measured before"),
    Field("v_est", unit="m/s", doc="the estimated vertical speed, up positive"),
    Field("throttle", doc="the command, in [0, 1]"),
)
DESCENT_CONTROLLER_ROW = DESCENT_CONTROLLER.dtype


@njit(cache=True)
def descent_command(s, h_m, dt_s, battery_empty):
    """The throttle command from a measured height ``h_m`` (m) after a step of ``dt_s`` (s): the
    speed estimate (a filtered finite difference of heights), the reference speed
    ``-k_h h`` limited to [-max_descent, -touchdown], a proportional law about hover; no thrust
    with an empty battery."""
    if s.has_prev:
        v_fd = (h_m - s.h_prev) / dt_s
        s.v_est = s.alpha * v_fd + (1.0 - s.alpha) * s.v_est
    s.h_prev = h_m
    s.has_prev = True
    v_ref = -min(max(s.k_h * h_m, s.touchdown), s.max_descent)
    cmd = s.hover_throttle + s.gain * (v_ref - s.v_est)
    if battery_empty:
        cmd = 0.0
    s.throttle = min(max(cmd, 0.0), 1.0)


@njit(cache=True)
def descent_command_rows(table, due, h_m, dt_s, battery_empty):
    """:func:`descent_command` of the due rows (see :mod:`hopsim.kernel.kind`)."""
    s = table.view(DESCENT_CONTROLLER_ROW)
    for j in range(due.shape[0]):
        i = due[j]
        descent_command(s[i], h_m[i], dt_s, battery_empty[i])


class DescentController(Model):
    """Tracks a descent-rate profile with a proportional law on the estimated vertical speed.

    The reference speed is ``-k_h * h``, limited to [-max_descent_mps, -touchdown_mps]. The speed
    is estimated by a filtered finite difference of the altimeter's heights. Throttle is cut when
    the battery is empty (:func:`descent_command`). Feed-through: no (the command is computed in
    end_io_step).
    """

    kind = DESCENT_CONTROLLER
    inputs = {"altitude": In(Scalar), "battery": In(BatteryState)}
    outputs = {"throttle": Out(ThrottleCommand)}
    io_schedule = FixedRate(10.0)
    feed_through = False

    def __init__(
        self,
        name: str,
        hover_throttle: float,
        gain: float = 0.8,
        k_h: float = 0.25,
        max_descent_mps: float = 8.0,
        touchdown_mps: float = 1.0,
        filter_alpha: float = 0.5,
        rate_hz: float = 10.0,
    ):
        super().__init__(name)
        self.hover_throttle, self.gain, self.k_h = hover_throttle, gain, k_h
        self.max_descent, self.touchdown = max_descent_mps, touchdown_mps
        self.alpha = filter_alpha
        self.io_schedule = FixedRate(rate_hz)

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Update the speed estimate and the throttle command (sets v_est, h_prev, throttle)."""
        alt = self.read("altitude")
        if alt is None or alt.value != alt.value:  # nothing measured yet (NaN)
            return
        battery = self.read("battery")
        empty = battery is not None and battery.power_level_Wh <= 0.0
        dt_s = (t1_ns - t0_ns) * 1e-9
        descent_command_rows(as_bytes(self.row), ONE, np.array([alt.value]), dt_s, np.array([empty]))

    def update_flow_outs(self, t_ns: int) -> None:
        self.write("throttle", ThrottleCommand(throttle=self.throttle))


class TelemetryDownlink(Model):
    """Packs the lander's state and battery into telemetry frames at its own rate.

    No feed-through: a frame is sampled at the downlink's I/O steps, not at every new input.
    """

    inputs = {"state": In(VehicleState), "battery": In(BatteryState), "throttle": In(ThrottleCommand)}
    outputs = {"telemetry": Out(LanderTelemetry, queue=True)}
    io_schedule = FixedRate(2.0)
    feed_through = False

    def __init__(self, name: str, rate_hz: float = 2.0):
        super().__init__(name)
        self.io_schedule = FixedRate(rate_hz)

    def update_flow_outs(self, t_ns: int) -> None:
        state, battery, cmd = self.read("state"), self.read("battery"), self.read("throttle")
        if state is None:
            return
        self.write(
            "telemetry",
            LanderTelemetry(
                altitude_m=state.r_BN_N.z,
                vertical_speed_mps=state.v_BN_N.z,
                throttle=cmd.throttle if cmd else 0.0,
                power_level_Wh=battery.power_level_Wh if battery else 0.0,
                touched_down=state.v_BN_N.z == 0.0 and state.a_BN_N.z == 0.0,
            ),
        )


class GroundStation(Model):
    """Receives telemetry frames (a queue) in its own island; keeps the count and the last frame."""

    inputs = {"telemetry": In(LanderTelemetry, queue=True)}
    io_schedule = NoIo()

    def __init__(self, name: str):
        super().__init__(name)
        self.frames = 0
        self.last: LanderTelemetry | None = None
        self.arrivals_ns: list[int] = []

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Take the frames that arrived (sets frames, last, arrivals_ns)."""
        for frame in self.drain("telemetry"):
            self.frames += 1
            self.last = frame
            self.arrivals_ns.append(t1_ns)
