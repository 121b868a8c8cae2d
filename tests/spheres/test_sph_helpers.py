"""Shared fixtures of the SPHERES tests (no tests here): a scripted valve commander and one-vehicle islands."""

from __future__ import annotations

import numpy as np

from hopsim.actors.spheres.params import vehicle_params
from hopsim.actors.spheres.thrusters import ThrusterSimulator
from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.kernel import Model, Out, Simulation, VariableRate
from hopsim.schemas.spheres_pb2 import GmRequest, ThrusterCommand

MS = 1_000_000

# The seed's numbers, typed here independently of hopsim.actors.spheres.params.
SEED_THRUST_N = 0.0033 * 45.0 - 0.0049  # 0.1436 N at 45 psig
SEED_MASS_KG = 3.4447
SEED_INERTIA = np.diag([0.0204, 0.0170, 0.0190])
S, B = 0.01905, 0.080451
SEED_THRUSTERS = [  # position (m, body), direction
    ((S, -B, -B), (-1, 0, 0)),
    ((-S, -B, -B), (1, 0, 0)),
    ((-B, -S, -B), (0, 1, 0)),
    ((-B, S, -B), (0, -1, 0)),
    ((B, -B, S), (0, 0, -1)),
    ((B, -B, -S), (0, 0, 1)),
    ((B, S, B), (0, -1, 0)),
    ((B, -S, B), (0, 1, 0)),
    ((-B, B, S), (0, 0, -1)),
    ((-B, B, -S), (0, 0, 1)),
    ((S, B, B), (-1, 0, 0)),
    ((-S, B, B), (1, 0, 0)),
]


class Commander(Model):
    """Publishes scripted ThrusterCommands: plan = [(t_ns, mask, on_times or None)]."""

    outputs = {"cmd": Out(ThrusterCommand, queue=True)}
    io_schedule = VariableRate()

    def __init__(self, name, plan):
        super().__init__(name)
        self.plan = list(plan)

    def next_io_time(self, t):
        later = [p[0] for p in self.plan if p[0] > t]
        return min(later) if later else None

    def update_flow_outs(self, t):
        for tp, mask, on_times in self.plan:
            if tp == t:
                self.write("cmd", ThrusterCommand(vehicle="sph1", t_ns=t, mask=mask, on_time_ns=on_times or []))


def thruster_island(plan, overrides=None, seed=0, state_rate_hz=10.0, omega0=(0.0, 0.0, 0.0)):
    """A vehicle (dynamics + thruster simulator) driven by a Commander; returns (sim, body, thrusters)."""
    p = vehicle_params("spheres_6dof", overrides)
    sim = Simulation(seed=seed)
    island = sim.add_island("sph1", n_integration_steps=1)
    island.hop_log = []
    body = sim.add_model(
        RigidVehicleDynamics(
            "sph1", p.mass.mass_kg, np.diag(p.mass.inertia_diag_kgm2), omega_BN_B=omega0, rate_hz=state_rate_hz
        ),
        "sph1",
    )
    thr = sim.add_model(
        ThrusterSimulator("sph1_thrusters", body, p.thrusters),
        "sph1",
        ties={"cmd": "sph1/thrust_cmd", "valves": "sph1/valves"},
    )
    thr.switch_log = []
    sim.add_model(Commander("commander", plan), "sph1", ties={"cmd": "sph1/thrust_cmd"})
    return sim, body, thr


def bits(*thrusters: int) -> int:
    """The command mask of thrusters numbered 1..12."""
    m = 0
    for n in thrusters:
        m |= 1 << (n - 1)
    return m


def pulse(t_ns: int, width_ns: int, *thrusters: int):
    """A command at t_ns firing the given thrusters (1..12) for width_ns."""
    on = [0] * 12
    for n in thrusters:
        on[n - 1] = width_ns
    return (t_ns, bits(*thrusters), on)


class Requester(Model):
    """Publishes a GmRequest at each of the given instants (ns)."""

    outputs = {"request": Out(GmRequest, queue=True)}
    io_schedule = VariableRate()

    def __init__(self, name, times):
        super().__init__(name)
        self.times = list(times)

    def next_io_time(self, t):
        later = [x for x in self.times if x > t]
        return min(later) if later else None

    def update_flow_outs(self, t):
        if t in self.times:
            self.write("request", GmRequest(vehicle="sph1", t_ns=t))


def sensor_island(
    r0=(1.2, 1.1, 1.0),
    q0=(0, 0, 0, 1),
    v0=(0, 0, 0),
    omega0=(0, 0, 0),
    imu=None,
    testbed=None,
    requests=(),
    seed=0,
    extra=None,
    recorder=None,
):
    """A coasting vehicle with IMU and global metrology; returns (sim, body, imu, gm)."""
    from hopsim.actors.spheres.global_metrology import GlobalMetrologySimulator
    from hopsim.actors.spheres.imu import ImuSimulator
    from hopsim.actors.spheres.params import TestbedParams

    p = vehicle_params("spheres_6dof", imu)
    tb = testbed or TestbedParams()
    sim = Simulation(seed=seed, recorder=recorder)
    sim.add_island("sph1")
    body = sim.add_model(
        RigidVehicleDynamics(
            "sph1",
            p.mass.mass_kg,
            np.diag(p.mass.inertia_diag_kgm2),
            r_BN_N=r0,
            q_BN=q0,
            v_BN_N=v0,
            omega_BN_B=omega0,
            rate_hz=10.0,
        ),
        "sph1",
    )
    imu_model = sim.add_model(ImuSimulator("sph1_imu", body, p.imu), "sph1", ties={"imu": "sph1/imu"})
    gm = sim.add_model(
        GlobalMetrologySimulator("sph1_gm", body, tb, p.receivers),
        "sph1",
        ties={"request": "sph1/gm_request", "sync": "sph1/gm_sync", "ranges": "sph1/gm_ranges"},
    )
    sim.add_model(Requester("requester", requests), "sph1", ties={"request": "sph1/gm_request"})
    if extra is not None:
        extra(sim, body)
    return sim, body, imu_model, gm
