"""The thruster simulator of one SPHERES vehicle: 12 valves, their delays, thrust and propellant.

Geometry (body frame B, from the geometric centre): thruster i sits at ``positions_B[i]`` and
pushes the vehicle along ``directions_B[i]``. Its torque about the centre of mass C is
``(r_i - r_CB_B) x d_i`` per newton. Thrust per open valve comes from the tank pressure law, a
per-thruster override, per-firing noise (drawn from the actor's own generator when a valve
opens) and ``thrust_scale`` faults.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
from numba import njit

from hopsim.actors.messages import set_vector3
from hopsim.actors.spheres.params import G0, ThrusterParams
from hopsim.actors.spheres.thruster_memo import CommandLookahead, PlanMemo, WrenchMemo
from hopsim.actors.spheres.valves import NUM_THRUSTERS, ValveTimeline
from hopsim.dynamics import detlinalg, detrandom
from hopsim.kernel import ContinuousModel, In, Out, VariableRate
from hopsim.kernel.simtime import NS_PER_S, seconds
from hopsim.schemas.spheres_pb2 import ThrusterCommand, ValveState, ValveSwitch


class ThrusterGeometry:
    """Positions, directions and torque arms of the 12 thrusters as numpy arrays (m, unit, m)."""

    def __init__(self, params: ThrusterParams, r_CB_B=(0.0, 0.0, 0.0)):
        self.positions_B = np.array(params.positions_B, dtype=float)
        self.directions_B = np.array(params.directions_B, dtype=float)
        self.directions_B /= np.sqrt(np.sum(self.directions_B * self.directions_B, axis=1))[:, None]
        self.set_centre_of_mass(r_CB_B)

    def set_centre_of_mass(self, r_CB_B) -> None:
        self.r_CB_B = np.array(r_CB_B, dtype=float)
        self.r_CB_list = self.r_CB_B.tolist()
        self.torque_per_N = np.cross(self.positions_B - self.r_CB_B, self.directions_B)

    def wrench(self, thrust_N) -> tuple[np.ndarray, np.ndarray]:
        """Net force (N, B) and torque about the CM (N m, B) for per-thruster thrust levels."""
        thrust = np.asarray(thrust_N, dtype=float)
        return detlinalg.matmul(thrust, self.directions_B), detlinalg.matmul(thrust, self.torque_per_N)


class ThrusterSimulator(ContinuousModel):
    """Valves, thrust and propellant of one vehicle, applying its wrench to the dynamics actor.

    Input ``cmd`` (ThrusterCommand, queue): the propulsion task's valve commands; a command takes
    effect at its own ``t_ns`` (the propulsion tick it was stamped with), which may be later than
    its arrival.
    Output ``valves`` (ValveState): valve states, wrench, propellant and the planned transitions,
    written when a command arrives and at the model's own I/O steps.

    I/O is variable-rate: ``next_io_time`` is the next valve transition, or None when every valve
    is at rest, so a quiet vehicle adds no barrier. A command also asks for a barrier at each
    transition it plans, so the island never integrates across a valve switch. Valve states
    change in ``start_hop`` and hold over the hop; ``pre_deriv`` applies the net force at the CM
    and the net torque about it (precomputed from every open thruster's force at its position).

    Faults: ``thruster_stuck_off`` and ``thruster_stuck_on`` (index 0..11, or -1 for all),
    ``thrust_scale`` (index, value = scale), each for ``duration_s`` (0: until cleared).
    """

    inputs = {"cmd": In(ThrusterCommand, queue=True, trigger=True)}
    outputs = {"valves": Out(ValveState)}
    io_schedule = VariableRate()
    feed_through = True
    accepts_faults = {
        "thruster_stuck_off": ("index", "duration_s", "clear"),
        "thruster_stuck_on": ("index", "duration_s", "clear"),
        "thrust_scale": ("index", "value", "duration_s", "clear"),
    }
    loads_constant_over_hop = True  # valves switch only at barriers

    def __init__(self, name: str, body, params: ThrusterParams, vehicle: str | None = None):
        super().__init__(name)
        self.body = body
        self.params = params
        self.vehicle = vehicle or body.name
        self.geometry = ThrusterGeometry(params, body.r_CB_B)
        self.levels_N = np.array(params.levels_N(), dtype=float)
        self.noise_factor = np.ones(NUM_THRUSTERS)
        self.scale = np.ones(NUM_THRUSTERS)
        self.stuck_open = np.zeros(NUM_THRUSTERS, dtype=bool)  # faults
        self.stuck_closed = np.zeros(NUM_THRUSTERS, dtype=bool)
        self.fault_clears: list[tuple[int, str, int]] = []  # (t_ns, kind, index)
        self.timeline = ValveTimeline(seconds(params.on_delay_s), seconds(params.off_delay_s))
        self.thrust_N = np.zeros(NUM_THRUSTERS)  # of each thruster over the current hop
        self._thrust_list = [0.0] * NUM_THRUSTERS  # the same as a list
        self._stuck = False  # any stuck_open / stuck_closed fault set
        self._propellant_total_kg = 0.0  # propellant_used_kg.sum()
        self.force_B = np.zeros(3)
        self.torque_B = np.zeros(3)
        self.firing = False
        self.impulse_Ns = np.zeros(NUM_THRUSTERS)  # per thruster since the start
        self.propellant_used_kg = np.zeros(NUM_THRUSTERS)
        self.mass0_kg = body.mass_kg
        self.t_flow_ns = 0
        self.io_pending: int | None = None
        self.pending_cmds: list[tuple[int, int, list[int] | None]] = []  # (t_ns, mask, on-times)
        self.hops_across_events = 0
        self.switch_log: list[tuple[int, int, bool]] | None = None  # set to a list to record
        self._stale = True
        # what would be computed again otherwise (hopsim.actors.spheres.thruster_memo)
        self._wrenches = WrenchMemo()
        self._lookahead = CommandLookahead()
        self._switch_times_memo = PlanMemo()
        self._switch_entries_memo = PlanMemo()

    # ------------------------------------------------------------------ valve bookkeeping
    def _switched(self, transitions) -> None:
        """Draw each opening valve's thrust noise; log the transitions if asked to."""
        if not (self.params.noise_fraction > 0.0 or self.switch_log is not None):
            return  # neither noise nor a log: nothing to do per transition
        for t_ns, i, is_open in transitions:
            if is_open and self.params.noise_fraction > 0.0:
                self.noise_factor[i] = 1.0 + self.params.noise_fraction * detrandom.standard_normal(self.rng)
                self._wrenches.thrust_changed()
            if self.switch_log is not None:
                self.switch_log.append((t_ns, i + 1, is_open))

    def _thrusting(self) -> list[bool]:
        """Whether each thruster pushes: its valve is open or stuck open, and it is not stuck closed."""
        open_ = self.timeline.valve_open
        if self._stuck:
            return ((np.array(open_, dtype=bool) | self.stuck_open) & ~self.stuck_closed).tolist()
        return open_

    def _effective_thrust(self) -> list[float]:
        """Thrust (N) of each thruster over the coming hop: level x scale x firing noise where it
        pushes, none anywhere once the propellant is spent."""
        open_ = self._thrusting()
        if not any(open_) or self._propellant_total_kg >= self.params.propellant_kg:
            return [0.0] * NUM_THRUSTERS
        levels, scale, noise = self.levels_N.tolist(), self.scale.tolist(), self.noise_factor.tolist()
        return [levels[i] * scale[i] * noise[i] if o else 0.0 for i, o in enumerate(open_)]

    def _update_wrench(self) -> None:
        """Thrust list and array, firing flag and wrench (force N and torque N m, B, about the
        CM) of the valves as they are now. Without stuck valves and with propellant left they are
        a function of the open mask while the thrust levels hold: remembered per mask."""
        by_mask = not self._stuck and self._propellant_total_kg < self.params.propellant_kg
        if by_mask:
            entry = self._wrenches.of_mask(self.timeline.open_mask)
            if entry is not None and not (entry[1] and self._centre_of_mass_moved()):
                self._thrust_list, self.firing, self.thrust_N, self.force_B, self.torque_B = entry
                return
        self._compute_wrench()
        if by_mask:
            self._wrenches.keep_mask(
                self.timeline.open_mask, (self._thrust_list, self.firing, self.thrust_N, self.force_B, self.torque_B)
            )

    def _compute_wrench(self) -> None:
        """:meth:`_update_wrench` from the valves, levels, scales, noise factors and arms."""
        thrust = self._effective_thrust()
        self._thrust_list = thrust
        self.thrust_N = np.array(thrust)
        self.firing = any(thrust)
        if self.firing:
            if self._centre_of_mass_moved():
                self.geometry.set_centre_of_mass(self.body.r_CB_B)
                self._wrenches.arms_changed()
            self.force_B, self.torque_B = self._wrenches.wrench(thrust, self._wrench_of_thrust)
        else:
            self.force_B = np.zeros(3)
            self.torque_B = np.zeros(3)

    def _centre_of_mass_moved(self) -> bool:
        return self.geometry.r_CB_list != self.body.r_CB_B.tolist()

    def _wrench_of_thrust(self) -> tuple[np.ndarray, np.ndarray]:
        """Force (N) and torque about the CM (N m), body frame, of ``thrust_N`` (in-plane only
        on the air table)."""
        force, torque = self.geometry.wrench(self.thrust_N)
        if self.params.planar:
            force[2] = 0.0
            torque[0] = torque[1] = 0.0
        return force, torque

    def _account_propellant(self, t_ns: int) -> None:
        """Propellant burnt from the last account (``t_flow_ns``) to ``t_ns`` at the thrust held
        meanwhile (nothing unless firing); updates the mass and ``t_flow_ns``."""
        if t_ns > self.t_flow_ns and self.firing:
            total = _burn(
                self.impulse_Ns,
                self.propellant_used_kg,
                self.thrust_N,
                (t_ns - self.t_flow_ns) / NS_PER_S,
                self.params.isp_s * G0,
            )
            self._propellant_total_kg = total
            self.body.mass_kg = self.mass0_kg - total
        self.t_flow_ns = t_ns

    def planned(self) -> list[tuple[int, int, bool]]:
        """Valve transitions (t_ns, thruster index, opens) that the commands received so far imply."""
        return list(self._planned_view())

    def _planned_view(self) -> list[tuple[int, int, bool]]:
        """:meth:`planned` without the copy (callers must not change it); a new list whenever
        the plan may have changed."""
        if not self.pending_cmds:
            return self.timeline.planned_view()
        return self._lookahead.planned(self.timeline, self.pending_cmds)

    def _switch_times(self) -> list[int]:
        """Sorted instants of the planned transitions and fault ends (callers must not change
        the list)."""
        return self._switch_times_memo.get(self._planned_view(), self._times_of)

    def _times_of(self, planned: list[tuple[int, int, bool]]) -> list[int]:
        times = {t for t, _, _ in planned}
        if self.fault_clears:
            times.update(t for t, _, _ in self.fault_clears)
        return sorted(times)

    def _ask_barriers(self, t_ns: int) -> None:
        """Barriers at every planned transition before the I/O instant the kernel already has."""
        for ts in self._switch_times():
            if ts > t_ns and (self.io_pending is None or ts < self.io_pending):
                self.request_barrier(ts)

    # ------------------------------------------------------------------ lifecycle
    def next_io_time(self, t_ns: int) -> int | None:
        times = self._switch_times()
        k = bisect_right(times, t_ns)
        self.io_pending = times[k] if k < len(times) else None
        return self.io_pending

    def _settle(self, t_ns: int, before_activations: bool = False) -> None:
        """Bring valves, fault ends, propellant and wrench to ``t_ns`` (idempotent at one instant);
        ``before_activations`` leaves the valve switches due at t_ns for commands arriving now."""
        self._account_propellant(t_ns)
        if (
            not self._stale
            and self.timeline.next_event_ns > t_ns
            and not (self.pending_cmds and self.pending_cmds[0][0] <= t_ns)
            and not (self.fault_clears and self.fault_clears[0][0] <= t_ns)
        ):
            self.timeline.t_ns = t_ns
            return
        changed = self._stale
        while self.pending_cmds and self.pending_cmds[0][0] <= t_ns:
            self.timeline, applied = self._lookahead.apply(self.timeline, self.pending_cmds.pop(0))
            self._switched(applied)
            changed = True
            if not self.pending_cmds:
                self._lookahead.hand_plan_to(self.timeline)
        while self.fault_clears and self.fault_clears[0][0] <= t_ns:
            _, kind, index = self.fault_clears.pop(0)
            self._clear_fault(kind, index)
            self._switch_times_memo.forget()
            changed = True
        switched = self.timeline.advance(t_ns, before_activations)
        if switched:
            self._switched(switched)
            self._lookahead.forget_plan()
        if changed or switched:
            self._update_wrench()
            self._stale = False

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Valve states for the hop [t0, t1): transitions and fault ends up to t0 take effect."""
        self._settle(t0_ns)
        if self.timeline.next_event_ns < t1_ns or (self.pending_cmds and self.pending_cmds[0][0] < t1_ns):
            switches = self._planned_view()
            if switches and switches[0][0] < t1_ns:
                self.hops_across_events += 1  # only if nothing asked for a barrier at a switch

    def pre_deriv(self, t_s: float) -> None:
        if self.firing:
            self.body.add_force_B(self.force_B)
            self.body.add_torque_B(self.torque_B)

    def update_flow_outs(self, t_ns: int) -> None:
        # most calls find the queue empty (draining an empty queue changes nothing)
        commands = self.drain("cmd") if self.ports["cmd"].queued else None
        if commands:
            # the valve switches due now wait until the new commands are in
            self._settle(t_ns, before_activations=True)
            for cmd in commands:
                self.pending_cmds.append((max(cmd.t_ns, t_ns), cmd.mask, list(cmd.on_time_ns) or None))
            if len(self.pending_cmds) > 1:
                self.pending_cmds.sort(key=lambda c: c[0])
            self._lookahead.forget_plan()
            self._stale = True
            self._ask_barriers(t_ns)
        # (without commands, one settle does what the two would: the same transitions in the
        # same order, and the same wrench)
        self._settle(t_ns)
        if self.wanted("valves"):
            self.write("valves", self._valve_state(t_ns))

    def _valve_state(self, t_ns: int) -> ValveState:
        switches = self._switch_entries_memo.get(self._planned_view(), _switch_entries)
        msg = ValveState(
            vehicle=self.vehicle,
            t_ns=t_ns,
            open_mask=self.timeline.open_mask,
            thrust_N=self._thrust_list,
            propellant_used_kg=self.propellant_used_kg.tolist(),
            mass_kg=self.body.mass_kg,
            planned=switches,
        )
        set_vector3(msg.force_B, self.force_B.tolist())
        set_vector3(msg.torque_B, self.torque_B.tolist())
        return msg

    # ------------------------------------------------------------------ faults
    def _indices(self, index: int) -> range:
        if index == -1:
            return range(NUM_THRUSTERS)
        if not 0 <= index < NUM_THRUSTERS:
            raise ValueError(f"{self.name}: thruster index must be 0..11 or -1, got {index}")
        return range(index, index + 1)

    def _clear_fault(self, kind: str, index: int) -> None:
        for i in self._indices(index):
            if kind == "thrust_scale":
                self.scale[i] = 1.0
                self._wrenches.thrust_changed()
            elif kind == "thruster_stuck_on":
                self.stuck_open[i] = False
            else:
                self.stuck_closed[i] = False
        self._stuck = bool(self.stuck_open.any() or self.stuck_closed.any())

    def check_fault(self, fault) -> None:
        self._indices(fault.index)  # a thruster it has, or -1

    def on_fault(self, fault, t_ns: int) -> None:
        self._settle(t_ns)
        if fault.clear:
            self._clear_fault(fault.kind, fault.index)
        else:
            for i in self._indices(fault.index):
                if fault.kind == "thruster_stuck_off":
                    self.stuck_closed[i] = True
                elif fault.kind == "thruster_stuck_on":
                    self.stuck_open[i] = True
                else:
                    self.scale[i] = fault.value
                    self._wrenches.thrust_changed()
            self._stuck = bool(self.stuck_open.any() or self.stuck_closed.any())
            if fault.duration_s > 0:
                t_clear = t_ns + seconds(fault.duration_s)
                self.fault_clears.append((t_clear, fault.kind, fault.index))
                self.fault_clears.sort()
                self._switch_times_memo.forget()
                self._ask_barriers(t_ns)
        self._stale = True
        self._settle(t_ns)


def _switch_entries(planned: list[tuple[int, int, bool]]) -> list[ValveSwitch]:
    """A plan's entries of ValveState.planned (thrusters numbered from 1)."""
    return [ValveSwitch(t_ns=t, thruster=i + 1, open=o) for t, i, o in planned]


@njit(cache=True, fastmath=False, error_model="numpy")
def _burn(impulse_Ns, used_kg, thrust_N, dt_s, isp_g0):
    """Adds ``thrust_N * dt_s`` to each thruster's impulse (N s) and sets its propellant used to
    impulse / (Isp g0) (kg), both in place; returns the total propellant used (kg), summed in
    the order numpy's ``sum`` of 12 numbers takes (eight partial sums paired, then the rest),
    so that it is ``used_kg.sum()`` bit for bit (test_sph_fast_paths.py checks it)."""
    for i in range(12):
        impulse_Ns[i] += thrust_N[i] * dt_s
        used_kg[i] = impulse_Ns[i] / isp_g0
    u = used_kg
    return (((u[0] + u[1]) + (u[2] + u[3])) + ((u[4] + u[5]) + (u[6] + u[7]))) + u[8] + u[9] + u[10] + u[11]
