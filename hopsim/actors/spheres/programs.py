"""Guest programs run by the flight software's control law (the Standard Control Interface).

A program turns the test time and what the vehicle knows (its state, its peers' broadcast
states) into a :class:`Reference` for the PD laws, and may ask for its state to be broadcast to
peers. Programs here reproduce the seed's sample runs (Appendix B):

- :class:`LeaderSquare`: hold 5 s, then a 40 cm square parallel to XY, each side a 10 s
  raised-cosine move followed by a 10 s hold; Z force command zero and, as in the seed's code
  (``control_position_PD`` and ``mix_simple`` only), no attitude control unless asked for.
- :class:`Follower`: the leader's broadcast position and velocity plus an offset (-30 cm in X).
- :class:`DockingLeader` / :class:`DockingFollower`: section 4.4's cooperative docking.

Positions are metres in the test-bed frame N, attitudes q_BN, times seconds of test time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hopsim.actors.spheres.frames import from_yaw, quat_mul, yaw
from hopsim.dynamics import detmath

ON, OFF = 1, 0


@dataclass
class Reference:
    """What the PD laws track: position, velocity (N), attitude and body rate."""

    r_N: np.ndarray
    v_N: np.ndarray
    q_BN: np.ndarray
    omega_B: np.ndarray = field(default_factory=lambda: np.zeros(3))
    control_z: bool = True  # False: the Z force command is zero (gCommand[Z] = 0)
    control_attitude: bool = True


def raised_cosine(t: float, duration: float, amplitude):
    """Displacement and rate of f(t) = A (1 - cos(pi t / T)) / 2, held at A after T."""
    amplitude = np.asarray(amplitude, dtype=float)
    if t >= duration:
        return amplitude.copy(), np.zeros_like(amplitude)
    w = math.pi / duration
    if amplitude.ndim != 1:
        return amplitude * (1.0 - detmath.cos(w * t)) / 2.0, amplitude * w * detmath.sin(w * t) / 2.0
    # element by element in floats, the operations and order of the array expressions above
    c, s = 1.0 - detmath.cos(w * t), detmath.sin(w * t)
    amp = amplitude.tolist()
    return np.array([a * c / 2.0 for a in amp]), np.array([a * w * s / 2.0 for a in amp])


class GuestProgram:
    """Base class: hold the state the test started in."""

    broadcast_to: tuple[str, ...] = ()  # peers that receive this vehicle's state over STS

    def start(self, t: float, state) -> None:
        r, _v, q, _w = state
        self.r0, self.q0 = np.array(r), np.array(q)

    def reference(self, t: float, state, peers: dict) -> Reference:
        return Reference(self.r0.copy(), np.zeros(3), self.q0.copy())

    def broadcast_flag(self, t: float) -> int:
        return ON


@dataclass(frozen=True)
class Maneuver:
    duration_s: float
    move_N: tuple[float, float, float] = (0.0, 0.0, 0.0)  # zero: a hold


def square_maneuvers(
    side_m: float = 0.4, move_s: float = 10.0, hold_s: float = 10.0, first_hold_s: float = 5.0
) -> list[Maneuver]:
    """The leader's maneuver list: +Y, +X, -Y, -X sides with holds, then hold indefinitely."""
    plan = [Maneuver(first_hold_s)]
    for move in ((0, side_m, 0), (side_m, 0, 0), (0, -side_m, 0), (-side_m, 0, 0)):
        plan += [Maneuver(move_s, move), Maneuver(hold_s)]
    plan[-1] = Maneuver(math.inf)
    return plan


class LeaderSquare(GuestProgram):
    """Flies :func:`square_maneuvers` from the position held at the test start."""

    def __init__(
        self,
        maneuvers: list[Maneuver] | None = None,
        broadcast_to: tuple[str, ...] = (),
        control_z: bool = False,
        control_attitude: bool = False,
    ):
        self.maneuvers = maneuvers or square_maneuvers()
        self.broadcast_to = tuple(broadcast_to)
        self.control_z = control_z
        self.control_attitude = control_attitude

    def start(self, t: float, state) -> None:
        super().start(t, state)
        self.t0 = t
        corner = self.r0.copy()
        self.corners_N = [corner.copy()]
        for m in self.maneuvers:
            if any(m.move_N):
                corner = corner + np.array(m.move_N)
                self.corners_N.append(corner.copy())
        # the start of maneuver k: r0 plus the moves before it, added one by one (N, m)
        self.bases_N = [self.r0.copy()]
        for m in self.maneuvers:
            self.bases_N.append(self.bases_N[-1] + np.array(m.move_N))

    def reference(self, t: float, state, peers: dict) -> Reference:
        elapsed = t - self.t0
        for k, m in enumerate(self.maneuvers):
            if elapsed < m.duration_s:
                d, rate = raised_cosine(elapsed, m.duration_s, m.move_N)
                return Reference(
                    self.bases_N[k] + d,
                    rate,
                    self.q0.copy(),
                    control_z=self.control_z,
                    control_attitude=self.control_attitude,
                )
            elapsed -= m.duration_s
        return Reference(
            self.bases_N[-1].copy(),
            np.zeros(3),
            self.q0.copy(),
            control_z=self.control_z,
            control_attitude=self.control_attitude,
        )


class Follower(GuestProgram):
    """Tracks a leader's broadcast position and velocity plus ``offset_N``."""

    def __init__(
        self, leader: str, offset_N=(-0.30, 0.0, 0.0), control_z: bool = False, control_attitude: bool = False
    ):
        self.leader = leader
        self.offset = np.array(offset_N, dtype=float)
        self.control_z = control_z
        self.control_attitude = control_attitude

    def reference(self, t: float, state, peers: dict) -> Reference:
        peer = peers.get(self.leader)
        r, v = (self.r0.copy(), np.zeros(3)) if peer is None else (peer.r_N + self.offset, peer.v_N.copy())
        return Reference(r, v, self.q0.copy(), control_z=self.control_z, control_attitude=self.control_attitude)


class DockingLeader(GuestProgram):
    """Holds station and broadcasts its state, OFF for the first 5 s and ON after; moves
    ``x_step_m`` in X at ``x_step_s`` (section 4.4, the master's code)."""

    def __init__(
        self, broadcast_to: tuple[str, ...], off_s: float = 5.0, x_step_s: float = 25.0, x_step_m: float = -0.30
    ):
        self.broadcast_to = tuple(broadcast_to)
        self.off_s, self.x_step_s, self.x_step_m = off_s, x_step_s, x_step_m

    def start(self, t: float, state) -> None:
        super().start(t, state)
        self.t0 = t

    def broadcast_flag(self, t: float) -> int:
        return OFF if t - self.t0 < self.off_s else ON

    def reference(self, t: float, state, peers: dict) -> Reference:
        r = self.r0.copy()
        if t - self.t0 >= self.x_step_s:
            r[0] += self.x_step_m
        return Reference(r, np.zeros(3), self.q0.copy(), control_z=False)


class DockingFollower(GuestProgram):
    """Section 4.4's follower, counted from the first ON state received from the leader:

    rotate ``yaw_change_rad`` about Z along a raised cosine at ``yaw_rate`` peak average (6 s for
    90 deg at 15 deg/s), allotted ``rotate_s``; from ``rotate_s`` close in Y along a raised
    cosine of ``approach_s`` to the leader's Y minus ``gap_m`` (plus half the leader's Y drift),
    tracking the leader in X; at ``x_step_s`` move ``x_step_m`` in X and hold.
    """

    def __init__(
        self,
        leader: str,
        yaw_change_rad: float = math.pi / 2,
        yaw_rate_rad_s: float = math.radians(15),
        rotate_s: float = 10.0,
        approach_s: float = 10.0,
        gap_m: float = 0.21,
        x_step_s: float = 25.0,
        x_step_m: float = -0.30,
    ):
        self.leader = leader
        self.yaw_change = yaw_change_rad
        self.rotation_s = abs(yaw_change_rad / yaw_rate_rad_s)
        self.rotate_s, self.approach_s, self.gap_m = rotate_s, approach_s, gap_m
        self.x_step_s, self.x_step_m = x_step_s, x_step_m
        self.t_on: float | None = None

    def start(self, t: float, state) -> None:
        super().start(t, state)
        self.yaw0 = yaw(self.q0)
        self.r_ref = self.r0.copy()
        self.v_ref = np.zeros(3)
        self.q_ref = self.q0.copy()
        self.w_ref = np.zeros(3)
        self.approach = None
        self.stepped = False

    def reference(self, t: float, state, peers: dict) -> Reference:
        peer = peers.get(self.leader)
        if self.t_on is None and peer is not None and peer.flag == ON:
            self.t_on = t
        if self.t_on is not None:
            k = t - self.t_on
            if k < self.rotate_s:
                ang, rate = raised_cosine(k, self.rotation_s, self.yaw_change)
                self.q_ref = quat_mul(from_yaw(float(ang)), self.q0)
                self.w_ref = np.array([0.0, 0.0, float(rate)])
            else:
                self.q_ref = quat_mul(from_yaw(self.yaw_change), self.q0)
                self.w_ref = np.zeros(3)
            if self.rotate_s <= k < self.x_step_s and peer is not None:
                if self.approach is None:
                    self.approach = (k, float(state[0][1]), float(peer.r_N[1]))
                k0, y0, y_leader0 = self.approach
                target = y_leader0 - y0 - self.gap_m
                dy, vy = raised_cosine(k - k0, self.approach_s, target)
                if k - k0 < self.approach_s:
                    self.r_ref[1] = y0 + float(dy) + 0.5 * (peer.r_N[1] - y_leader0)
                    self.v_ref[1] = float(vy)
                else:
                    self.r_ref[1] = peer.r_N[1] - self.gap_m
                    self.v_ref[1] = 0.0
                self.r_ref[0] = peer.r_N[0]
                self.v_ref[0] = peer.v_N[0]
            elif k >= self.x_step_s and not self.stepped:
                self.stepped = True
                if peer is not None:
                    self.r_ref[1] = peer.r_N[1] - self.gap_m
                self.v_ref[1] = 0.0
                self.r_ref[0] = float(state[0][0]) + self.x_step_m
                self.v_ref[0] = 0.0
        return Reference(self.r_ref.copy(), self.v_ref.copy(), self.q_ref.copy(), self.w_ref.copy(), control_z=False)
