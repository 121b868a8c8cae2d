"""Contact between vehicles: the proximity monitor, impacts, walls, docking and undocking.

DESIGN.md, "Islands interact only through the bus and through contact". A :class:`ContactWorld`
watches a set of spherical vehicles (each a :class:`~hopsim.actors.welding.Weldable`, e.g. a
:class:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics` in its own home island):

* **Proximity monitor.** At a fixed check rate (a :class:`~hopsim.kernel.monitor.Monitor`: the
  check instants are barriers of every watched island) it bounds how far each sphere can move
  before the next check: ``reach = R + s P + a_max P^2 / 2`` with ``P`` the check period, ``s``
  a bound on the centre's speed and ``a_max`` the vehicle's actuator acceleration bound. ``s`` is
  the centre's speed for a vehicle alone; inside a group of vehicles that may touch each other,
  impacts can pass energy around, so ``s`` becomes the speed the vehicle would have with all the
  group's kinetic energy (``sqrt(2E/m) + sqrt(2E/I_min) |r_CB|``), iterated until the groups stop
  growing. Pairs whose reach spheres overlap (a spatial-hash broad phase,
  :func:`hopsim.dynamics.contact.broadphase_pairs`), and docked pairs, are merged into one
  island (:func:`hopsim.kernel.merge.regroup`); islands whose vehicles can no longer touch split.
* **Impacts.** Inside a merged island each candidate pair has a zero-crossing on the gap between
  the spheres, so the contact is found by bisection to ``eps_s`` before it happens; the callback
  applies the impulse of :func:`hopsim.dynamics.contact.sphere_contact_impulse` (restitution,
  Coulomb friction, spin; linear and angular momentum conserved). Walls of the test volume are
  planes with their own restitution and friction, watched the same way for vehicles that can
  reach them.
* **Docking.** On contact, two vehicles with docking ports latch when the ports face each other
  within ``dock_angle_deg``, the port points are closer than ``dock_gap_m`` and they close no
  faster than ``dock_speed_mps`` (a docking mechanism's capture envelope): the vehicles are
  welded into one rigid composite whose velocity conserves their linear and angular momentum
  (:func:`hopsim.dynamics.contact.weld_state`). Each vehicle's thrusters keep pushing on it and
  the loads are summed on the composite; each vehicle still publishes its own state. A third
  vehicle can hit or dock with a composite. A :class:`DockCommand` with ``undock`` on
  ``<vehicle>/dock_cmd`` releases the latch (optionally with a separation speed).

Contacts, docks and undocks are recorded as kernel events (topic ``kernel/<kind>``, source
``kernel.<island>``; kinds CONTACT,
DOCK, UNDOCK, ISLAND_MERGE, ISLAND_SPLIT) with the impulse and speeds in the detail.

Contact needs its islands in one process with the monitor: on the ``ray`` backend with placement
``per-island`` or ``shards:K`` the islands of a contact world stay in the driver (their flow
models too; with ``per-model`` the flow models are Ray actors). Checkpoints cannot be taken while
islands are merged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hopsim.actors.welding import Weldable
from hopsim.dynamics import detlinalg
from hopsim.dynamics.contact import (
    apply_impulse,
    broadphase_pairs,
    point_velocity,
    port_alignment,
    relative_pose,
    sphere_contact_impulse,
    sphere_gap,
    wall_contact_impulse,
    wall_gap,
    weld_state,
)
from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.kernel import ContinuousModel, In
from hopsim.kernel.bounds import PeriodS, RateHz
from hopsim.kernel.merge import grouping, regroup
from hopsim.kernel.simtime import seconds
from hopsim.kernel.zero_crossing import ZeroCrossing
from hopsim.schemas import ContactDetail, DockCommand, KernelEvent

Vec3 = tuple[float, float, float]


class ContactParams(BaseModel):
    """Contact laws and the proximity monitor (SI units)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    restitution: float = Field(0.5, ge=0, le=1, description="vehicle-vehicle coefficient of restitution")
    friction: float = Field(0.0, ge=0, description="vehicle-vehicle Coulomb friction coefficient")
    wall_restitution: float = Field(0.5, ge=0, le=1)
    wall_friction: float = Field(0.0, ge=0)
    check_rate_hz: RateHz = Field(10.0, description="proximity checks per second")
    eps_s: PeriodS = Field(1e-9, description="contact instants are found to within this (s; 1 ns at least)")
    docking: bool = Field(True, description="vehicles with ports latch when the ports face each other")
    dock_angle_deg: float = Field(10.0, gt=0, le=180, description="largest angle between facing ports")
    dock_gap_m: float = Field(0.1, gt=0, description="largest distance between the port points")
    dock_speed_mps: float | None = Field(
        None, gt=0, description="largest closing speed the latch captures (m/s; faster: an impact); None: any"
    )
    volume_min_N: Vec3 | None = Field(None, description="walls: lower corner of the test volume (m)")
    volume_max_N: Vec3 | None = Field(None, description="walls: upper corner of the test volume (m)")


@dataclass(eq=False)
class ContactBody:
    """A vehicle taking part in contact: a sphere of ``radius_m`` about the body origin B."""

    model: Weldable
    island: str
    radius_m: float
    port_B: np.ndarray | None  # docking port direction (body frame), None: no port
    max_accel_mps2: float  # bound on the acceleration its own actuators can give
    index: int = 0

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def root(self) -> Weldable:
        """The vehicle integrating this one: its composite's primary, or itself."""
        return self.model.primary or self.model


class DockingPort(ContinuousModel):
    """Receives a vehicle's docking commands (``cmd``: :class:`DockCommand`) and acts on them at
    the barrier where they arrive. It has no states; it is continuous so that it lives in the
    process of the vehicle's dynamics, whose configuration it changes."""

    inputs = {"cmd": In(DockCommand, queue=True)}
    _FRAMEWORK_ATTRS = ContinuousModel._FRAMEWORK_ATTRS | {"world"}

    def __init__(self, name: str, vehicle: str, world: ContactWorld):
        super().__init__(name)
        self.vehicle = vehicle
        self.world = world

    def start_io_step(self, t0_ns: int, t1_ns: int | None) -> None:
        for cmd in self.drain("cmd"):
            if cmd.undock:
                self.world.undock(self.vehicle, cmd.from_vehicle or None, cmd.separation_speed_mps, t0_ns)


class ContactWorld:
    """Contact of spherical vehicles; see the module docstring. Build it with the scenario:

    world = ContactWorld(sim, ContactParams(...))
    world.add_body(dynamics, "sph1", radius_m=0.1, port_B=(1, 0, 0))
    ...
    world.attach()          # after the last body, before the run starts
    """

    def __init__(self, sim, params: ContactParams | None = None, name: str = "contact"):
        self.sim = sim
        self.params = params or ContactParams()
        self.name = name
        self.bodies: list[ContactBody] = []
        self._by_name: dict[str, ContactBody] = {}
        self._pairs: dict[tuple[int, int], ZeroCrossing] = {}
        self._walls: dict[tuple[int, int], ZeroCrossing] = {}
        self.contacts: list[dict] = []  # every impact, dock and undock, in order
        self.checks = 0
        self._period_s = 1.0 / self.params.check_rate_hz
        self._planes = self._wall_planes()
        if self._planes:
            sim.scene["volume_N"] = [
                list(map(float, self.params.volume_min_N)),
                list(map(float, self.params.volume_max_N)),
            ]

    # ------------------------------------------------------------------ assembly
    def add_body(
        self,
        model: Weldable,
        island: str,
        radius_m: float,
        port_B=None,
        max_accel_mps2: float = 0.0,
        dock_commands: bool = True,
    ) -> ContactBody:
        """Let ``model`` (in home island ``island``) touch the others; ``port_B`` is its docking
        port direction in the body frame (None: it cannot dock)."""
        if radius_m <= 0:
            raise ValueError(f"{model.name}: radius_m must be positive, got {radius_m}")
        if max_accel_mps2 < 0:
            raise ValueError(f"{model.name}: max_accel_mps2 must be >= 0, got {max_accel_mps2}")
        port = None
        if port_B is not None:
            port = np.asarray(port_B, dtype=float)
            if port.shape != (3,) or detlinalg.norm(port) == 0:
                raise ValueError(f"{model.name}: port_B must be a non-zero 3-vector, got {port_B}")
        body = ContactBody(model, island, float(radius_m), port, float(max_accel_mps2), len(self.bodies))
        self.bodies.append(body)
        drawn = {"radius_m": float(radius_m)}
        if port is not None:
            drawn["port_B"] = (port / detlinalg.norm(port)).tolist()
        self.sim.scene.setdefault("bodies", {})[model.name] = drawn
        self._by_name[model.name] = body
        if dock_commands:
            self.sim.add_model(
                DockingPort(f"{model.name}_dock", model.name, self), island, ties={"cmd": f"{model.name}/dock_cmd"}
            )
        return body

    def attach(self) -> None:
        """Install the proximity monitor over every body's island (before the run starts)."""
        islands = sorted({b.island for b in self.bodies})
        self.sim.add_monitor(self.name, self.params.check_rate_hz, islands, self.check)

    def _wall_planes(self) -> list[tuple[np.ndarray, np.ndarray]]:
        p = self.params
        if p.volume_min_N is None and p.volume_max_N is None:
            return []
        if p.volume_min_N is None or p.volume_max_N is None:
            raise ValueError("walls need both volume_min_N and volume_max_N")
        lo, hi = np.asarray(p.volume_min_N, float), np.asarray(p.volume_max_N, float)
        if np.any(hi <= lo):
            raise ValueError(f"volume_max_N {tuple(hi)} must exceed volume_min_N {tuple(lo)} on every axis")
        planes = []
        for axis in range(3):
            n = np.zeros(3)
            n[axis] = 1.0
            planes.append((lo.copy(), n.copy()))  # inward normals
            planes.append((hi.copy(), -n))
        return planes

    # ------------------------------------------------------------------ the proximity monitor
    def check(self, t_ns: int) -> None:
        """At a check instant: regroup the islands and watch the pairs and walls in reach."""
        self.checks += 1
        n = len(self.bodies)
        if n == 0:
            return
        centres = np.array([b.model.x[0:3] for b in self.bodies])
        speed = np.array([detlinalg.norm(b.model.x[3:6]) for b in self.bodies])
        P = self._period_s
        while True:
            reach = np.array([b.radius_m + s * P + 0.5 * b.max_accel_mps2 * P * P for b, s in zip(self.bodies, speed)])
            pairs = [tuple(p) for p in broadphase_pairs(centres, reach)]
            components = self._components(pairs)
            bound = self._speed_bounds(components)
            if np.all(bound <= speed):
                break
            speed = np.maximum(speed, bound)
        self._regroup(components)
        self._watch_pairs(pairs, t_ns)
        self._watch_walls(centres, reach, t_ns)

    def _components(self, pairs) -> list[list[int]]:
        """Connected components of bodies over candidate pairs and welds."""
        welds = [
            (b.index, self._by_name[b.model.primary.name].index) for b in self.bodies if b.model.primary is not None
        ]
        return connected_components(range(len(self.bodies)), [*pairs, *welds])

    def _speed_bounds(self, components) -> np.ndarray:
        """Speed bound of each sphere centre if all of its group's kinetic energy went to it."""
        bound = np.zeros(len(self.bodies))
        for comp in components:
            if len(comp) == 1:
                b = self.bodies[comp[0]]
                bound[comp[0]] = detlinalg.norm(b.model.x[3:6])
                continue
            energy = sum(_kinetic_energy(self.bodies[i].model) for i in comp)
            for i in comp:
                m = self.bodies[i].model
                i_min = float(np.min(detlinalg.eigvalsh(np.asarray(m.inertia_C_B, dtype=float))))
                bound[i] = math.sqrt(2 * energy / m.mass_kg) + math.sqrt(2 * energy / i_min) * detlinalg.norm(
                    np.asarray(m.r_CB_B, dtype=float)
                )
        return bound

    def _regroup(self, components) -> None:
        """Merge and split the home islands so that each component's vehicles share one island."""
        names = sorted({b.island for b in self.bodies})
        links = []
        for comp in components:
            homes = sorted({self.bodies[i].island for i in comp})
            links += [(homes[0], h) for h in homes[1:]]
        desired = connected_components(names, links)
        islands = {name: self.sim.islands[name] for name in names}
        current = {h.name: tuple(m.name for m in g) for g in grouping(islands.values()) for h in g}
        changed = [g for g in desired if current[g[0]] != tuple(g)]
        if not changed:
            return
        # an island being regrouped needs every one of its members placed: close over both groupings
        involved = {h for g in changed for h in g}
        while True:
            grown = {m for h in involved for m in current[h]}
            grown |= {h for g in desired if set(g) & grown for h in g}
            if grown <= involved:
                break
            involved |= grown
        regroup(self.sim, [[islands[h] for h in g] for g in desired if set(g) & involved])

    # ------------------------------------------------------------------ conditions
    def _watch_pairs(self, pairs, t_ns: int) -> None:
        wanted = set()
        for i, j in pairs:
            a, b = self.bodies[i], self.bodies[j]
            if a.root is b.root:
                continue  # welded together: no contact between them
            wanted.add((i, j))
            if (i, j) not in self._pairs:
                self._pairs[(i, j)] = self._pair_condition(a, b)
                if sphere_gap(a.model.x, b.model.x, a.radius_m, b.radius_m) <= 0.0:
                    self._resolve_pair(a, b, t_ns)  # already touching and closing: act now
            self._arm(self._pairs[(i, j)], a)
        for key in list(self._pairs):
            if key not in wanted:
                self._disarm(self._pairs.pop(key))

    def _watch_walls(self, centres, reach, t_ns: int) -> None:
        wanted = set()
        for b in self.bodies:
            for k, (point, normal) in enumerate(self._planes):
                if detlinalg.dot(centres[b.index] - point, normal) > reach[b.index]:
                    continue
                wanted.add((b.index, k))
                if (b.index, k) not in self._walls:
                    self._walls[(b.index, k)] = self._wall_condition(b, k)
                    if wall_gap(b.model.x, b.radius_m, point, normal) <= 0.0:
                        self._resolve_wall(b, k, t_ns)
                self._arm(self._walls[(b.index, k)], b)
        for key in list(self._walls):
            if key not in wanted:
                self._disarm(self._walls.pop(key))

    def _arm(self, zc: ZeroCrossing, body: ContactBody) -> None:
        island = self.sim.islands[body.island].current
        if zc not in island.zero_crossings:
            island.add_zero_crossing(zc)

    def _watches(self, zc: ZeroCrossing) -> bool:
        return any(z is zc for z in self._pairs.values()) or any(z is zc for z in self._walls.values())

    def _disarm(self, zc: ZeroCrossing) -> None:
        island = self.sim.islands[zc.island].current
        if zc in island.zero_crossings:
            island.zero_crossings.remove(zc)

    def _pair_condition(self, a: ContactBody, b: ContactBody) -> ZeroCrossing:
        ma, mb, ra, rb = a.model, b.model, a.radius_m, b.radius_m
        return self._condition(
            f"{a.name}|{b.name}",
            a,
            lambda t_ns: float(sphere_gap(ma.x, mb.x, ra, rb)),
            lambda t_ns: self._resolve_pair(a, b, t_ns),
        )

    def _wall_condition(self, b: ContactBody, k: int) -> ZeroCrossing:
        point, normal = self._planes[k]
        m, r = b.model, b.radius_m
        return self._condition(
            f"{b.name}|wall{k}",
            b,
            lambda t_ns: float(wall_gap(m.x, r, point, normal)),
            lambda t_ns: self._resolve_wall(b, k, t_ns),
        )

    def _condition(self, label: str, body: ContactBody, gap, resolve) -> ZeroCrossing:
        """A zero-crossing on ``gap`` that resolves the contact and keeps watching."""

        def touch(t_ns: int) -> None:
            resolve(t_ns)
            if self._watches(zc):  # not disarmed by the contact (a dock)
                self._arm(zc, body)

        zc = ZeroCrossing(
            f"{self.name}:{label}",
            gap,
            touch,
            "falling",
            max(1, seconds(self.params.eps_s)),
            island=body.island,
            restorable=False,
        )
        return zc

    # ------------------------------------------------------------------ impacts
    def _resolve_pair(self, a: ContactBody, b: ContactBody, t_ns: int) -> None:
        if a.root is b.root:
            return  # welded since the condition was armed: one body
        p = self.params
        xa, ma, Ia, ca = _composite_view(a.model)
        xb, mb, Ib, cb = _composite_view(b.model)
        n = (xb[0:3] - xa[0:3]) / detlinalg.norm(xb[0:3] - xa[0:3])
        J, point = sphere_contact_impulse(
            xa, ma, Ia, ca, a.radius_m, xb, mb, Ib, cb, b.radius_m, p.restitution, p.friction
        )
        before = detlinalg.dot(point_velocity(xb, point) - point_velocity(xa, point), n)
        if before >= 0.0:
            return  # touching but not closing: nothing to do
        if p.docking and a.port_B is not None and b.port_B is not None:
            angle, gap = port_alignment(a.model.x, b.model.x, a.port_B, b.port_B, a.radius_m, b.radius_m)
            slow = p.dock_speed_mps is None or -before <= p.dock_speed_mps
            if angle <= math.radians(p.dock_angle_deg) and gap <= p.dock_gap_m and slow:
                self._dock(a, b, t_ns, angle, gap, -before)
                return
        _apply(a.root, -J, point)
        _apply(b.root, J, point)
        after = detlinalg.dot(point_velocity(b.model.x, point) - point_velocity(a.model.x, point), n)
        self._record(
            KernelEvent.CONTACT,
            a,
            t_ns,
            a=a.name,
            b=b.name,
            impulse_Ns=J.tolist(),
            point_N=point.tolist(),
            normal_speed_before=before,
            normal_speed_after=after,
        )

    def _resolve_wall(self, b: ContactBody, k: int, t_ns: int) -> None:
        point, normal = self._planes[k]
        x, m, inertia, c = _composite_view(b.model)
        J, contact = wall_contact_impulse(
            x, m, inertia, c, b.radius_m, point, normal, self.params.wall_restitution, self.params.wall_friction
        )
        before = detlinalg.dot(point_velocity(x, contact), normal)
        if before >= 0.0:
            return
        _apply(b.root, J, contact)
        after = detlinalg.dot(point_velocity(b.model.x, contact), normal)
        self._record(
            KernelEvent.CONTACT,
            b,
            t_ns,
            a=b.name,
            b=f"wall{k}",
            impulse_Ns=J.tolist(),
            point_N=contact.tolist(),
            normal_speed_before=before,
            normal_speed_after=after,
        )

    # ------------------------------------------------------------------ docking
    def _dock(self, a: ContactBody, b: ContactBody, t_ns: int, angle: float, gap: float, closing: float) -> None:
        """Weld b's composite onto a's (they close at ``closing`` m/s): momentum-conserving latch."""
        pa, pb = a.root, b.root
        xa, ma, Ia, ca = _composite_view(pa)
        xb, mb, Ib, cb = _composite_view(pb)
        x_new, _, _ = weld_state(xa, ma, Ia, ca, xb, mb, Ib, cb)
        movers = [pb, *pb.followers]
        for f in movers:
            f.check_weldable_follower()  # before anything moves: a refusal leaves both as they were
        for f in pb.followers:
            pb.unweld(f)
        pa.x[0:13] = x_new
        for f in sorted(movers, key=lambda m: m.name):
            r_FP_P, q_FP = relative_pose(pa.x[0:13], f.x[0:13])
            pa.weld(f, r_FP_P, q_FP)
        for i, j in list(self._pairs):  # one body now: no contact within it
            if self.bodies[i].root is self.bodies[j].root:
                self._disarm(self._pairs.pop((i, j)))
        self._reset_integrator(a)
        self._record(
            KernelEvent.DOCK,
            a,
            t_ns,
            a=a.name,
            b=b.name,
            port_angle_deg=math.degrees(angle),
            port_gap_m=gap,
            primary=pa.name,
            normal_speed_before=-closing,
        )

    def undock(self, vehicle: str, from_vehicle: str | None, separation_speed_mps: float, t_ns: int) -> None:
        """Release ``vehicle`` from its composite (from one neighbour, or from all); the two parts
        separate at ``separation_speed_mps`` along the vehicle's port axis."""
        body = self._by_name[vehicle]
        root = body.root
        parts = [root, *root.followers]
        if len(parts) == 1:
            return  # not docked
        leaving = body.model
        for f in list(root.followers):
            root.unweld(f)
        staying = [p for p in parts if p is not leaving]
        if from_vehicle is not None and from_vehicle not in {p.name for p in staying}:
            raise ValueError(f"{vehicle} is not docked to {from_vehicle}")
        if len(staying) > 1:  # the rest stays docked, around a new primary
            new_root = min(staying, key=lambda m: m.name)
            for f in staying:
                if f is not new_root:
                    r, q = relative_pose(new_root.x[0:13], f.x[0:13])
                    new_root.weld(f, r, q)
        other = min(staying, key=lambda m: m.name)
        if separation_speed_mps > 0.0:
            self._separate(body, other.primary or other, separation_speed_mps)
        self._reset_integrator(body)
        self._record(
            KernelEvent.UNDOCK,
            body,
            t_ns,
            a=vehicle,
            b=",".join(sorted(p.name for p in staying)),
            separation_speed_mps=separation_speed_mps,
        )

    def _separate(self, body: ContactBody, other_root: Weldable, speed: float) -> None:
        """Equal and opposite impulse at the port point so that the parts' port points separate at
        ``speed`` along the port axis (linear and angular momentum conserved)."""
        m = body.model
        axis = detlinalg.matmul(quat_to_dcm(m.x[6:10]), body.port_B / detlinalg.norm(body.port_B))
        point = m.x[0:3] + body.radius_m * axis
        xa, ma, Ia, ca = _composite_view(m)
        xb, mb, Ib, cb = _composite_view(other_root)

        def separation(J):  # speed of the other part's port point away from this one's
            va = point_velocity(apply_impulse(xa, ma, Ia, ca, -J * axis, point), point)
            vb = point_velocity(apply_impulse(xb, mb, Ib, cb, J * axis, point), point)
            return detlinalg.dot(vb - va, axis)

        J = speed / (separation(1.0) - separation(0.0))
        _apply(m, -J * axis, point)
        _apply(other_root, J * axis, point)

    # ------------------------------------------------------------------ records
    def _reset_integrator(self, body: ContactBody) -> None:
        self.sim.islands[body.island].current.integrator.reset()

    def _record(self, kind: int, body: ContactBody, t_ns: int, **detail) -> None:
        entry = {"t_ns": t_ns, "kind": KernelEvent.Kind.Name(kind), **detail}
        self.contacts.append(entry)
        island = self.sim.islands[body.island].current
        island.kernel_event(
            kind, self.name, " ".join(f"{k}={_fmt(v)}" for k, v in detail.items()), contact=_contact_detail(detail)
        )


def _contact_detail(detail: dict) -> ContactDetail:
    """The fields of a contact, dock or undock record, as the kernel event's ``contact``."""
    d = ContactDetail(
        a=detail["a"],
        b=detail["b"],
        primary=detail.get("primary", ""),
        normal_speed_before_mps=detail.get("normal_speed_before", 0.0),
        normal_speed_after_mps=detail.get("normal_speed_after", 0.0),
        port_angle_deg=detail.get("port_angle_deg", 0.0),
        port_gap_m=detail.get("port_gap_m", 0.0),
        separation_speed_mps=detail.get("separation_speed_mps", 0.0),
    )
    for name in ("impulse_Ns", "point_N"):
        if name in detail:
            v = getattr(d, name)
            v.x, v.y, v.z = (float(c) for c in detail[name])
    return d


def connected_components(items, links) -> list[list]:
    """Connected components of ``items`` under ``links`` (pairs), each sorted, in sorted order."""
    parent = {i: i for i in items}

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    comps: dict = {}
    for i in items:
        comps.setdefault(find(i), []).append(i)
    return sorted(sorted(c) for c in comps.values())


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.9g}"
    if isinstance(v, list):
        return "[" + ",".join(f"{x:.9g}" for x in v) + "]"
    return str(v)


def _kinetic_energy(m: Weldable) -> float:
    """Kinetic energy (J) of one vehicle from its own mass properties."""
    x = m.x
    R = quat_to_dcm(x[6:10])
    w = x[10:13]
    inertia = np.asarray(m.inertia_C_B, dtype=float)
    v_C = x[3:6] + detlinalg.matmul(R, np.cross(w, m.r_CB_B))
    return 0.5 * m.mass_kg * detlinalg.dot(v_C, v_C) + 0.5 * detlinalg.dot(detlinalg.matmul(w, inertia), w)


def _composite_view(m: Weldable):
    """``(x, mass, inertia_C_B, r_CB_B)`` of the rigid body ``m`` belongs to (its composite when
    docked), seen from ``m``'s own frame: impacts on ``m`` act on all of it."""
    root = m.primary or m
    mass, inertia_P, r_C_P = root.composite()
    if root is m:
        return m.x[0:13].copy(), mass, inertia_P, r_C_P
    r_FP_P, q_FP = relative_pose(root.x[0:13], m.x[0:13])
    R_PF = quat_to_dcm(q_FP)
    return (
        m.x[0:13].copy(),
        mass,
        detlinalg.matmul(detlinalg.matmul(R_PF.T, inertia_P), R_PF),
        detlinalg.matmul(R_PF.T, r_C_P - r_FP_P),
    )


def _apply(root: Weldable, J_N: np.ndarray, point_N: np.ndarray) -> None:
    """Apply an impulse to the composite of ``root`` and put its followers back on it."""
    mass, inertia, r_C = root.composite()
    root.x[0:13] = apply_impulse(root.x[0:13].copy(), mass, inertia, r_C, np.asarray(J_N, float), point_N)
    root.place_followers()
