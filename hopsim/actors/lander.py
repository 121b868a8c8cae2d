"""A one-dimensional lander: body dynamics, altimeter, descent controller, telemetry, ground station.

These are the executive's example models: a continuous model whose touchdown is a zero-crossing,
a noisy multirate sensor, a controller, a battery load, and telemetry crossing to another island.
Heights are metres above the ground along the local vertical (up positive).
"""

from __future__ import annotations

from hopsim.dynamics import detrandom
from hopsim.kernel import ContinuousModel, FixedRate, In, Model, NoIo, Out
from hopsim.schemas import BatteryState, LanderTelemetry, Quaternion, Scalar, ThrottleCommand, Vector3, VehicleState


class LanderBody(ContinuousModel):
    """Vertical motion of a lander of constant mass under gravity and its engine.

    States: ``h`` (m, height above ground) and ``v`` (m/s, up positive). The engine's thrust is
    ``throttle * max_thrust_N``, held over each hop. Outputs the vehicle state and the electrical
    power the engine valves draw.
    """

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
        self.throttle = 0.0
        self.touched_down = False
        self.touchdown_t_ns = -1
        self.touchdown_speed_mps = float("nan")
        self.io_schedule = FixedRate(rate_hz)
        self.thrust_scale = 1.0
        self.disturbance_N = 0.0  # vertical force, up positive, while active
        self.disturbance_until_ns = 0
        self.disturbance_on = False  # latched per hop: a step input never splits a hop

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
        if self.touched_down:
            self.xdot[:] = 0.0
            return
        force = self.throttle * self.max_thrust_N * self.thrust_scale
        if self.disturbance_on:
            force += self.disturbance_N
        self.xdot[0] = self.x[1]
        self.xdot[1] = force / self.mass_kg - self.gravity

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


class Altimeter(Model):
    """Radar altimeter: height with white noise (seeded) and a bias, sampled each I/O step."""

    inputs = {"state": In(VehicleState)}
    outputs = {"altitude": Out(Scalar)}
    io_schedule = FixedRate(20.0)
    feed_through = False
    accepts_faults = {"sensor_bias": ("value", "clear"), "noise_scale": ("value", "clear"), "dropout": ("clear",)}

    def __init__(self, name: str, noise_m: float = 0.05, bias_m: float = 0.0, rate_hz: float = 20.0):
        super().__init__(name)
        self.noise_m, self.bias_m = noise_m, bias_m
        self.fault_bias_m = 0.0
        self.noise_scale = 1.0
        self.dropout = False
        self.measured_m = float("nan")
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
            noise = self.noise_m * self.noise_scale * detrandom.standard_normal(self.rng)
            self.measured_m = state.r_BN_N.z + self.bias_m + self.fault_bias_m + noise

    def update_flow_outs(self, t_ns: int) -> None:
        if not self.dropout:
            self.write("altitude", Scalar(value=self.measured_m, unit="m"))


class DescentController(Model):
    """Tracks a descent-rate profile with a proportional law on the estimated vertical speed.

    The reference speed is ``-k_h * h``, limited to [-max_descent_mps, -touchdown_mps]. The speed
    is estimated by a filtered finite difference of the altimeter's heights. Throttle is cut when
    the battery is empty. Feed-through: no (the command is computed in end_io_step).
    """

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
        self.h_prev: float | None = None
        self.v_est = 0.0
        self.throttle = 0.0
        self.io_schedule = FixedRate(rate_hz)

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Update the speed estimate and the throttle command (sets v_est, h_prev, throttle)."""
        alt = self.read("altitude")
        if alt is None or alt.value != alt.value:  # nothing measured yet (NaN)
            return
        h = alt.value
        if self.h_prev is not None:
            v_fd = (h - self.h_prev) / ((t1_ns - t0_ns) * 1e-9)
            self.v_est = self.alpha * v_fd + (1.0 - self.alpha) * self.v_est
        self.h_prev = h
        v_ref = -min(max(self.k_h * h, self.touchdown), self.max_descent)
        cmd = self.hover_throttle + self.gain * (v_ref - self.v_est)
        battery = self.read("battery")
        if battery is not None and battery.power_level_Wh <= 0.0:
            cmd = 0.0
        self.throttle = min(max(cmd, 0.0), 1.0)

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
