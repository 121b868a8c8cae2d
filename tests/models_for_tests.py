"""Small models used by the kernel tests (each does one observable thing)."""

from __future__ import annotations

from hopsim.kernel import ContinuousModel, FixedRate, In, Model, NoIo, Out, VariableRate
from hopsim.schemas import Scalar


class IoRecorder(Model):
    """Records the instants of its I/O-step calls."""

    def __init__(self, name, schedule=None):
        super().__init__(name)
        if schedule is not None:
            self.io_schedule = schedule
        self.ends, self.starts, self.ufos = [], [], []

    def end_io_step(self, t0, t1):
        self.ends.append((t0, t1))

    def start_io_step(self, t0, t1):
        self.starts.append((t0, t1))

    def update_flow_outs(self, t):
        self.ufos.append(t)


class VariableStepper(IoRecorder):
    """Variable-rate I/O at the given instants (ns), then no further trigger."""

    io_schedule = VariableRate()

    def __init__(self, name, instants):
        super().__init__(name)
        self.instants = list(instants)

    def next_io_time(self, t):
        later = [x for x in self.instants if x > t]
        return later[0] if later else None


class FallingBody(ContinuousModel):
    """h'' = -g; counts its derivative calls; bounces with restitution when told."""

    state_names = ("h", "v")
    outputs = {"height": Out(Scalar)}
    io_schedule = NoIo()

    def __init__(self, name, h0=100.0, v0=0.0, g=9.81):
        super().__init__(name)
        self.h0, self.v0, self.g = h0, v0, g
        self.pre_calls = 0
        self.post_calls = 0

    def initial_state(self):
        return [self.h0, self.v0]

    def pre_deriv(self, t):
        self.pre_calls += 1

    def post_deriv(self, t):
        self.post_calls += 1
        self.xdot[0] = self.x[1]
        self.xdot[1] = -self.g

    def update_flow_outs(self, t):
        self.write("height", Scalar(value=float(self.x[0])))


class Gain(Model):
    """y = c * x + d * u, with x a discrete state advanced once per I/O step."""

    inputs = {"u": In(Scalar)}
    outputs = {"y": Out(Scalar)}

    def __init__(self, name, c, d, x0=1.0, feed_through=None, rate_hz=1.0):
        super().__init__(name)
        self.c, self.d, self.x = c, d, x0
        self.io_schedule = FixedRate(rate_hz)
        if feed_through is not None:
            self.feed_through = feed_through
        self.outputs_seen = []

    def end_io_step(self, t0, t1):
        self.x += 1.0

    def update_flow_outs(self, t):
        u = self.read("u")
        y = self.c * self.x + self.d * (u.value if u is not None else 0.0)
        self.outputs_seen.append((t, y))
        self.write("y", Scalar(value=y))


class Source(Model):
    """Publishes a constant (or a scheduled sequence of) scalar at its rate."""

    outputs = {"y": Out(Scalar)}

    def __init__(self, name, value, rate_hz=1.0):
        super().__init__(name)
        self.value = value
        self.io_schedule = FixedRate(rate_hz)

    def update_flow_outs(self, t):
        self.write("y", Scalar(value=self.value(t) if callable(self.value) else self.value))


class QueueSource(Source):
    """Like Source, on a queue topic (every message delivered once)."""

    outputs = {"y": Out(Scalar, queue=True)}
