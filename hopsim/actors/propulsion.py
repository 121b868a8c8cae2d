"""Thrusters and the fuel tank that feeds them (Dshell's FixedThruster, PulsedThruster,
ThrottledThruster, PulsedThrusterBlowdown's law, FuelTank and FuelManifold).

A thruster at ``position_B`` (m, body frame, relative to the spacecraft's centre of mass) pushes
along the unit ``direction_B`` with ``level_N`` (N) while it fires, and burns propellant at
``level / (isp_s * g0)`` (kg/s, g0 = 9.80665 m/s^2). It publishes its ``wrench`` (force in the body
frame and its torque r x F about the centre of mass, N and N m) and its propellant ``flow``
(kg/s) whenever either changes, and reads the tank's ``fuel_remaining`` (kg): with none left it
does not fire (the tank's value is the one it last published, Dshell's one-step lag that avoids an
algebraic loop). Commands come every ``period_s`` from ``phase_s`` (the thruster's I/O step) and act at the
instant they arrive (a thruster has feed-through, as Dshell's fire with no delay); a command holds
until the next one replaces it:

- :class:`FixedThruster`: ``on`` (Scalar, > 0 fires) holds for the whole step;
- :class:`PulsedThruster`: ``on_time`` (Scalar, s) fires from the start of the step for
  min(on_time, period); a command shorter than ``min_on_time_s`` is raised to it (the minimum
  impulse bit, ``level * min_on_time_s``), and 0 is off. The pulse ends exactly: the thruster's
  next I/O instant is the pulse's end;
- :class:`ThrottledThruster`: ``throttle`` (Scalar, 0..1) sets the level
  ``min_level + throttle * (max_level - min_level)`` for the step (0: off);
- :class:`BlowdownThruster`: ``on`` as :class:`FixedThruster`, fed by a blowdown tank (below).

Faults: ``thruster_stuck_on`` and ``thruster_stuck_off`` (until cleared), ``thrust_scale``
(``value``).

:class:`BlowdownThruster` (Dshell's PulsedThrusterBlowdown law, with FixedThruster's on/off
commands): the tank has no pressure regulator; a gas cushion pushes the propellant out and expands
as it leaves. With ``load_kg`` of propellant on board (density rho, kg/m^3) the gas fills
``gas_volume_m3`` (V0) at the pressure p0; once m_used = ``load_kg`` - fuel_remaining has left, the
gas fills V = V0 + m_used / rho and

    p / p0 = (V0 / V)^gamma      (gamma = 1: isothermal, a slow blowdown; up to 5/3: adiabatic)

(the blowdown law p V^gamma = const, e.g. Brown, Spacecraft Propulsion, AIAA 1996). Thrust and Isp
follow Dshell's power laws level = level_C p^level_exp and isp = isp_C p^isp_exp, normalised at p0:

    F = level_N (p / p0)^thrust_exponent,   Isp = isp_s (p / p0)^isp_exponent.

The defaults (1, 0) are the first approximation of the textbooks: F = C_F A_t p_c (Sutton and
Biblarz, Rocket Propulsion Elements, ch. 3) with the chamber pressure p_c a fixed fraction of the
feed pressure, and Isp (set by c* and C_F) nearly independent of it. The pressure comes from the
tank's last published ``fuel_remaining`` (the same one-step lag; none yet: the load), so F and Isp
are held between the thruster's updates (its I/O instants and the tank's publications).

:class:`FuelManifold` (Dshell's FuelManifold): the thrusters on its ``flow0``... (kg/s) draw from
one or several tanks, in proportion to weights, an empty tank's share going to the others; it
publishes each tank's flow and the tanks' total ``fuel_remaining``. With one tank the thrusters
may read the tank's ``fuel_remaining`` directly; with several they read the manifold's, a loop of
feed-through models (thruster -> manifold -> thruster) declared broken: one update late.

:class:`FuelTank` integrates its propellant mass m_f' = -sum of the flows it receives (each held
between messages, which end hops, so the integral is exact), and publishes (when they change) the
propellant left and the spacecraft's mass properties, linear in the fill fraction f = m_f /
capacity between empty and full (Dshell's FuelTank): mass = dry + m_f, centre of mass and inertia
interpolated, ``r_CB_B = empty + f (full - empty)``, ``I = I_empty + f (I_full - I_empty)`` (both
about the centre of mass). Inside a hop in which a thruster keeps firing, the integrated mass may
run below zero; the outputs clamp it at 0 (thrusters stop at their next step), and a scenario
that needs the exact instant adds a zero-crossing on the state ``fuel_kg``.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.actors.held_messages import HeldMessages
from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.spatial import cross_xyz
from hopsim.kernel import ContinuousModel, FixedRate, In, Model, NoIo, Out, VariableRate
from hopsim.schemas import MassProperties, Scalar, Vector3, Wrench

G0 = 9.80665  # standard gravity (m/s^2), the Isp convention
UNIT_INERTIA = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def _vector(name: str, what: str, value, unit: bool = False) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    if v.shape != (3,) or not np.isfinite(v).all() or (unit and detlinalg.norm(v) == 0):
        raise ValueError(f"{name}: {what} must be a finite{' non-zero' if unit else ''} 3-vector, got {value}")
    return v / detlinalg.norm(v) if unit else v


def _positive(name: str, what: str, value: float) -> float:
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name}: {what} must be a positive number, got {value}")
    return value


def _non_negative(name: str, what: str, value: float) -> float:
    value = float(value)
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"{name}: {what} must be a finite number >= 0, got {value}")
    return value


def _count(name: str, what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: {what} must be an integer >= 1 (one input per thruster), got {value!r}")
    return int(value)


class ThrusterBase(Model):
    """What every thruster shares (see the module); subclasses say how a command sets the level
    and for how long it fires."""

    outputs = {"wrench": Out(Wrench, on_change=True), "flow": Out(Scalar, on_change=True)}
    io_schedule = VariableRate()
    feed_through = True
    accepts_faults = {
        "thruster_stuck_on": ("clear",),
        "thruster_stuck_off": ("clear",),
        "thrust_scale": ("value", "clear"),
    }
    command_port = "cmd"

    def __init__(
        self,
        name: str,
        body: str,
        level_N: float,
        isp_s: float,
        direction_B,
        position_B=(0.0, 0.0, 0.0),
        period_s: float = 1.0,
        phase_s: float = 0.0,
    ):
        # a command triggers: its arrival is an I/O step, where the firing's end becomes the next one
        self.inputs = {self.command_port: In(Scalar, trigger=True), "fuel_remaining": In(Scalar)}
        super().__init__(name)
        self.body = body
        self.level_N = _positive(name, "level_N", level_N)
        self.isp_s = _positive(name, "isp_s", isp_s)
        self.direction_B = _vector(name, "direction_B", direction_B, unit=True)
        self.position_B = _vector(name, "position_B", position_B)
        self.period_ns = round(_positive(name, "period_s", period_s) * 1e9)
        if not (np.isfinite(phase_s) and 0 <= phase_s < period_s):
            raise ValueError(f"{name}: phase_s must lie in [0, period_s), got {phase_s}")
        self.phase_ns = round(phase_s * 1e9)  # command instants: phase + k period
        self.stuck_on = self.stuck_off = False
        self.scale = 1.0
        self.firing_level_N = 0.0  # thrust over the current interval (N)
        self.off_ns = 0  # when the current firing ends (ns)
        self.step_level_N = 0.0  # level commanded for the current step (N)
        self._held = HeldMessages()  # the last wrench and flow built (a memo)

    # ------------------------------------------------------------------ schedule
    def next_io_time(self, t_ns: int) -> int | None:
        """The end of the current firing, else the next command instant, or None while the held
        command fires nothing (nothing can change until a new command comes, and a command
        triggers a step). Asked as a step ends, before this instant's update_flow_outs: at a
        command instant the firing that starts now is the held command's (a command arriving now
        asks again)."""
        tick = ((t_ns - self.phase_ns) // self.period_ns + 1) * self.period_ns + self.phase_ns
        level, duration = self._held_command()
        off_ns = self.off_ns
        if (t_ns - self.phase_ns) % self.period_ns == 0:
            off_ns = t_ns + min(duration, self.period_ns)
        if t_ns < off_ns < tick:
            return off_ns
        return tick if level > 0.0 else None

    def _held_command(self) -> tuple[float, int]:
        """(level N, firing duration ns) the held command sets for a step; (0, 0) before any."""
        cmd = self.read(self.command_port)
        return self.command(cmd) if cmd is not None else (0.0, 0)

    def _step_firing(self, t_ns: int) -> tuple[float, int]:
        """(level N, end ns) of the firing the held command sets for the step starting at ``t_ns``."""
        level, duration = self._held_command()
        return level, t_ns + min(duration, self.period_ns)

    def on_fault(self, fault, t_ns: int) -> None:
        if fault.kind == "thruster_stuck_on":
            self.stuck_on = not fault.clear
        elif fault.kind == "thruster_stuck_off":
            self.stuck_off = not fault.clear
        elif fault.kind == "thrust_scale":
            self.scale = 1.0 if fault.clear else fault.value

    def command(self, msg) -> tuple[float, int]:
        """(level N, firing duration ns) a command sets for the step; override."""
        raise NotImplementedError

    def update_flow_outs(self, t_ns: int) -> None:
        """The thrust from now to the next instant, and what it burns. At a command instant it also
        sets the step's firing (``step_level_N``, ``off_ns``) from the command just received."""
        if (t_ns - self.phase_ns) % self.period_ns == 0:
            self.step_level_N, self.off_ns = self._step_firing(t_ns)
        fuel = self.read("fuel_remaining")
        dry = fuel is not None and fuel.value <= 0.0
        level = self.step_level_N if t_ns < self.off_ns else 0.0
        if self.stuck_on:
            level = self.level_N
        if self.stuck_off or dry:
            level = 0.0
        thrust_factor, isp_s = self.performance(None if fuel is None else fuel.value)
        level *= self.scale * thrust_factor
        self.firing_level_N = level
        wrench, flow = self._held.get((level, isp_s), self.messages)
        self.write("wrench", wrench)
        self.write("flow", flow)

    def messages(self, level_N: float, isp_s: float) -> tuple[Wrench, Scalar]:
        """The wrench (force along ``direction_B`` and its torque about the centre of mass, body
        frame, N and N m) and the propellant flow (kg/s) of a firing at ``level_N`` (N) with
        ``isp_s`` (s)."""
        wrench = Wrench(body=self.body, frame=Wrench.BODY)
        force = wrench.force.x, wrench.force.y, wrench.force.z = [level_N * d for d in self.direction_B.tolist()]
        wrench.torque.x, wrench.torque.y, wrench.torque.z = cross_xyz(self.position_B.tolist(), force)
        return wrench, Scalar(value=level_N / (isp_s * G0), unit="kg/s")

    def performance(self, fuel_kg: float | None) -> tuple[float, float]:
        """(thrust factor, Isp s) with ``fuel_kg`` (kg, the tank's last value; None: none yet):
        1 and ``isp_s`` for a regulated feed; :class:`BlowdownThruster` overrides it."""
        return 1.0, self.isp_s


class FixedThruster(ThrusterBase):
    """On/off for a whole step: command ``on`` > 0 fires at ``level_N``."""

    command_port = "on"

    def command(self, msg) -> tuple[float, int]:
        return (self.level_N, self.period_ns) if msg.value > 0 else (0.0, 0)


class PulsedThruster(ThrusterBase):
    """Fires for ``on_time`` s from the start of a step, at least ``min_on_time_s`` (the minimum
    impulse bit), at most the step."""

    command_port = "on_time"

    def __init__(
        self,
        name: str,
        body: str,
        level_N: float,
        isp_s: float,
        direction_B,
        position_B=(0.0, 0.0, 0.0),
        period_s: float = 1.0,
        min_on_time_s: float = 0.01,
        phase_s: float = 0.0,
    ):
        super().__init__(name, body, level_N, isp_s, direction_B, position_B, period_s, phase_s)
        self.min_on_ns = round(_positive(name, "min_on_time_s", min_on_time_s) * 1e9)

    def command(self, msg) -> tuple[float, int]:
        if not (math.isfinite(msg.value) and msg.value > 0):
            return 0.0, 0
        return self.level_N, max(round(msg.value * 1e9), self.min_on_ns)


class ThrottledThruster(ThrusterBase):
    """``throttle`` in [0, 1] sets ``min_level_N + throttle (level_N - min_level_N)``; 0 is off."""

    command_port = "throttle"

    def __init__(
        self,
        name: str,
        body: str,
        level_N: float,
        isp_s: float,
        direction_B,
        position_B=(0.0, 0.0, 0.0),
        period_s: float = 1.0,
        min_level_N: float = 0.0,
        phase_s: float = 0.0,
    ):
        super().__init__(name, body, level_N, isp_s, direction_B, position_B, period_s, phase_s)
        if not (np.isfinite(min_level_N) and 0 <= min_level_N <= self.level_N):
            raise ValueError(f"{name}: min_level_N must lie in [0, level_N], got {min_level_N}")
        self.min_level_N = float(min_level_N)

    def command(self, msg) -> tuple[float, int]:
        throttle = float(np.clip(msg.value, 0.0, 1.0)) if np.isfinite(msg.value) else 0.0
        if throttle == 0.0:
            return 0.0, 0
        return self.min_level_N + throttle * (self.level_N - self.min_level_N), self.period_ns


class BlowdownThruster(FixedThruster):
    """On/off as :class:`FixedThruster`; ``level_N`` (N) and ``isp_s`` (s) hold with ``load_kg``
    (kg) on board and fall with the pressure of its blowdown tank (see the module):
    ``gas_volume_m3`` (m^3) of gas with that load, ``propellant_density_kgpm3`` (kg/m^3),
    ``thrust_exponent`` and ``isp_exponent`` (>= 0), ``gamma`` in [1, 5/3]."""

    def __init__(
        self,
        name: str,
        body: str,
        level_N: float,
        isp_s: float,
        direction_B,
        position_B=(0.0, 0.0, 0.0),
        period_s: float = 1.0,
        phase_s: float = 0.0,
        *,
        load_kg: float,
        gas_volume_m3: float,
        propellant_density_kgpm3: float,
        thrust_exponent: float = 1.0,
        isp_exponent: float = 0.0,
        gamma: float = 1.0,
    ):
        super().__init__(name, body, level_N, isp_s, direction_B, position_B, period_s, phase_s)
        self.load_kg = _positive(name, "load_kg", load_kg)
        self.gas_volume_m3 = _positive(name, "gas_volume_m3", gas_volume_m3)
        self.propellant_density_kgpm3 = _positive(name, "propellant_density_kgpm3", propellant_density_kgpm3)
        self.thrust_exponent = _non_negative(name, "thrust_exponent", thrust_exponent)
        self.isp_exponent = _non_negative(name, "isp_exponent", isp_exponent)
        if not (np.isfinite(gamma) and 1.0 <= gamma <= 5.0 / 3.0):
            raise ValueError(
                f"{name}: gamma must lie in [1, 5/3] (1: isothermal, 1.4: nitrogen, 5/3: helium, "
                f"adiabatic), got {gamma}"
            )
        self.gamma = float(gamma)

    def pressure_ratio(self, fuel_kg: float) -> float:
        """p / p0 with ``fuel_kg`` (kg) left: (V0 / (V0 + m_used / rho))^gamma, the fuel clamped
        to [0, ``load_kg``]."""
        used = self.load_kg - min(max(fuel_kg, 0.0), self.load_kg)
        return detmath.pow(self.gas_volume_m3 / (self.gas_volume_m3 + used / self.propellant_density_kgpm3), self.gamma)

    def performance(self, fuel_kg: float | None) -> tuple[float, float]:
        """((p / p0)^thrust_exponent, isp_s (p / p0)^isp_exponent); no tank value yet: the load's."""
        if fuel_kg is None:
            return 1.0, self.isp_s
        ratio = self.pressure_ratio(fuel_kg)
        return detmath.pow(ratio, self.thrust_exponent), self.isp_s * detmath.pow(ratio, self.isp_exponent)


class FuelTank(ContinuousModel):
    """A tank feeding ``n_thrusters`` thrusters (inputs ``flow0``...) and the spacecraft's mass
    properties (see the module)."""

    outputs = {"fuel_remaining": Out(Scalar, on_change=True), "mass": Out(MassProperties, on_change=True)}
    feed_through = False
    state_rate_constant_over_hop = True  # the draw is latched for the hop (start_hop)

    def __init__(
        self,
        name: str,
        n_thrusters: int,
        fuel_kg: float,
        capacity_kg: float,
        dry_mass_kg: float,
        cm_empty_B=(0.0, 0.0, 0.0),
        cm_full_B=(0.0, 0.0, 0.0),
        inertia_empty_B=UNIT_INERTIA,
        inertia_full_B=UNIT_INERTIA,
        rate_hz: float = 1.0,
    ):
        if int(n_thrusters) < 1:
            raise ValueError(f"{name}: a tank feeds at least one thruster, got n_thrusters = {n_thrusters}")
        self.inputs = {f"flow{i}": In(Scalar) for i in range(int(n_thrusters))}
        self.state_names = ("fuel_kg",)
        super().__init__(name)
        self.capacity_kg = _positive(name, "capacity_kg", capacity_kg)
        if not (np.isfinite(fuel_kg) and 0 <= fuel_kg <= self.capacity_kg):
            raise ValueError(f"{name}: fuel_kg must lie in [0, capacity_kg = {self.capacity_kg}], got {fuel_kg}")
        self.fuel0_kg = float(fuel_kg)
        self.dry_mass_kg = _positive(name, "dry_mass_kg", dry_mass_kg)
        self.cm_empty_B, self.cm_full_B = _vector(name, "cm_empty_B", cm_empty_B), _vector(name, "cm_full_B", cm_full_B)
        self.inertia_empty_B = np.array(inertia_empty_B, dtype=float).reshape(3, 3)
        self.inertia_full_B = np.array(inertia_full_B, dtype=float).reshape(3, 3)
        for what, m in (("inertia_empty_B", self.inertia_empty_B), ("inertia_full_B", self.inertia_full_B)):
            if not np.isfinite(m).all() or (detlinalg.eigvalsh(0.5 * (m + m.T)) <= 0).any():
                raise ValueError(f"{name}: {what} must be a symmetric positive definite 3x3 matrix (kg m^2)")
        self.io_schedule = FixedRate(rate_hz)
        self.flow_kgps = 0.0
        self._held = HeldMessages()  # the last fuel and mass messages built (a memo)

    def initial_state(self) -> np.ndarray:
        return np.array([self.fuel0_kg])

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Latch the total flow for the hop (flows change only with a message, which ends a hop)."""
        total = 0.0
        for port in self.ports.values():  # flow0...: as self.read(port), one call less each
            msg = port.value
            if msg is not None:
                flow = msg.value
                if 0.0 < flow < math.inf:  # a negative or non-finite flow counts 0
                    total += flow
        self.flow_kgps = total if self.x[0] > 0.0 else 0.0

    def post_deriv(self, t_s: float) -> None:
        self.xdot[0] = -self.flow_kgps

    def mass_properties(self, fuel_kg: float) -> tuple[float, list[float], list[list[float]]]:
        """(mass kg, r_CB_B m as 3 floats, inertia about the CM kg m^2 as 3 rows of 3 floats) with
        ``fuel_kg`` on board: empty + f (full - empty), element by element."""
        f = min(max(fuel_kg, 0.0), self.capacity_kg) / self.capacity_kg
        cm = [e + f * (full - e) for e, full in zip(self.cm_empty_B.tolist(), self.cm_full_B.tolist())]
        inertia = [
            [e + f * (full - e) for e, full in zip(row_empty, row_full)]
            for row_empty, row_full in zip(self.inertia_empty_B.tolist(), self.inertia_full_B.tolist())
        ]
        return self.dry_mass_kg + max(fuel_kg, 0.0), cm, inertia

    def update_flow_outs(self, t_ns: int) -> None:
        fuel, mass = self._held.get((max(float(self.x[0]), 0.0),), self.messages)
        self.write("fuel_remaining", fuel)
        self.write("mass", mass)

    def messages(self, fuel_kg: float) -> tuple[Scalar, MassProperties]:
        """The ``fuel_remaining`` and ``mass`` messages with ``fuel_kg`` (kg, >= 0) on board."""
        mass, cm, inertia = self.mass_properties(fuel_kg)
        return Scalar(value=fuel_kg, unit="kg"), MassProperties(
            mass_kg=mass,
            fuel_kg=fuel_kg,
            r_CB_B=Vector3(x=cm[0], y=cm[1], z=cm[2]),
            inertia_B=[i for row in inertia for i in row],
        )


class FuelManifold(Model):
    """Thrusters feeding from one or several tanks (Dshell's FuelManifold, see the module).

    Inputs ``flow0``... (kg/s, one per thruster) and ``remaining0``... (kg, each tank's
    ``fuel_remaining``; a tank not heard from yet counts as not empty). Outputs ``tank_flow0``...
    (kg/s, one per tank) and ``fuel_remaining`` (kg, the tanks' sum, for the thrusters).

    The thrusters' total flow F (a missing, non-finite or negative flow counts 0, as in
    :class:`FuelTank`) is drawn from the tanks in proportion to ``draw_weights`` w_j (one per tank,
    default one tank): tank j gets F w_j / sum_k w_k over the tanks that are not empty, so that an
    empty tank's share goes to the others (Dshell's rescaling "to a total flow rate of 1"); with
    every tank empty, none. Thrusters that read ``fuel_remaining`` close a loop of feed-through
    models (thruster -> manifold -> thruster): declare it broken (``sim.add_break(topic)``) and
    they see the sum one update late, as Dshell's discrete fuel state."""

    io_schedule = NoIo()  # it runs when a flow or a tank's remaining fuel reaches it
    feed_through = True

    def __init__(self, name: str, n_thrusters: int, draw_weights=(1.0,)):
        n = _count(name, "n_thrusters", n_thrusters)
        w = np.asarray(draw_weights, dtype=float)
        if w.ndim != 1 or w.size < 1 or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(
                f"{name}: draw_weights must be one finite weight >= 0 per tank, not all 0, got {draw_weights!r}"
            )
        self.inputs = {
            **{f"flow{i}": In(Scalar) for i in range(n)},
            **{f"remaining{j}": In(Scalar) for j in range(w.size)},
        }
        self.outputs = {**{f"tank_flow{j}": Out(Scalar) for j in range(w.size)}, "fuel_remaining": Out(Scalar)}
        super().__init__(name)
        self.n_thrusters, self.n_tanks = n, int(w.size)
        self.draw_weights = tuple(w.tolist())

    def update_flow_outs(self, t_ns: int) -> None:
        total = 0.0
        for i in range(self.n_thrusters):
            msg = self.read(f"flow{i}")
            if msg is not None and np.isfinite(msg.value):
                total += max(msg.value, 0.0)
        remaining = [self.read(f"remaining{j}") for j in range(self.n_tanks)]
        weights = [0.0 if r is not None and not r.value > 0.0 else w for r, w in zip(remaining, self.draw_weights)]
        share = sum(weights)
        for j, w in enumerate(weights):
            self.write(f"tank_flow{j}", Scalar(value=total * w / share if share > 0.0 else 0.0, unit="kg/s"))
        fuel = sum(max(r.value, 0.0) for r in remaining if r is not None and np.isfinite(r.value))
        self.write("fuel_remaining", Scalar(value=fuel, unit="kg"))


__all__ = [
    "G0",
    "BlowdownThruster",
    "FixedThruster",
    "FuelManifold",
    "FuelTank",
    "PulsedThruster",
    "ThrottledThruster",
    "ThrusterBase",
]
