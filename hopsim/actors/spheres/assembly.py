"""Assemble SPHERES vehicles, their radio channels and the laptop into a simulation.

Each vehicle is one island named after it: the dynamics integrator actor (named after the
vehicle), its thruster simulator, IMU and global-metrology simulators (continuous models of the
island: they act on, or read, the dynamics actor in its own process), and its flight software.
The radio channels (``sts`` between vehicles, ``stl`` between vehicles and the laptop) form the
island ``comm``; the laptop is the island ``ground``.

Topics of vehicle ``v``: ``v/state`` (truth), ``v/thrust_cmd``, ``v/valves``, ``v/imu``,
``v/gm_request``, ``v/gm_sync``, ``v/gm_ranges``, ``v/estimate``, ``v/sts_tx``, ``v/sts_rx``,
``v/stl_tx``, ``v/stl_rx``; of the laptop ``ground/stl_tx``, ``ground/stl_rx``, ``ground/commands``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopsim.actors.spheres.flight_software import SpheresFlightSoftware
from hopsim.actors.spheres.global_metrology import GlobalMetrologySimulator
from hopsim.actors.spheres.ground_station import GroundStation
from hopsim.actors.spheres.imu import ImuSimulator
from hopsim.actors.spheres.params import SpheresParams, TestbedParams
from hopsim.actors.spheres.programs import GuestProgram
from hopsim.actors.spheres.radio import RadioChannel, rx_port, tx_port
from hopsim.actors.spheres.thrusters import ThrusterSimulator
from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.schemas.spheres_pb2 import GroundCommand

LAPTOP_NAME = "laptop"


@dataclass
class SpheresVehicle:
    """The models of one assembled vehicle."""

    name: str
    node_id: int
    body: RigidVehicleDynamics
    thrusters: ThrusterSimulator
    imu: ImuSimulator | None
    metrology: GlobalMetrologySimulator | None
    fsw: SpheresFlightSoftware


def add_vehicle(
    sim,
    name: str,
    node_id: int,
    params: SpheresParams,
    testbed: TestbedParams,
    program: GuestProgram,
    r0_N,
    q0_BN=(0.0, 0.0, 0.0, 1.0),
    perfect_state: bool = False,
    wait_for_start: bool = False,
    node_ids: dict[str, int] | None = None,
    sensors: bool = True,
    n_integration_steps: int = 1,
    state_rate_hz: float = 10.0,
) -> SpheresVehicle:
    """One vehicle's island. With ``sensors`` False (perfect state only) no IMU or metrology."""
    sim.add_island(name, n_integration_steps=n_integration_steps)
    m = params.mass
    body = sim.add_model(
        RigidVehicleDynamics(
            name, m.mass_kg, np.diag(m.inertia_diag_kgm2), m.r_CB_B, r_BN_N=r0_N, q_BN=q0_BN, rate_hz=state_rate_hz
        ),
        name,
        ties={"state": f"{name}/state"},
    )
    thrusters = sim.add_model(
        ThrusterSimulator(f"{name}_thrusters", body, params.thrusters),
        name,
        ties={"cmd": f"{name}/thrust_cmd", "valves": f"{name}/valves"},
    )
    imu = metrology = None
    if sensors:
        imu = sim.add_model(ImuSimulator(f"{name}_imu", body, params.imu), name, ties={"imu": f"{name}/imu"})
        metrology = sim.add_model(
            GlobalMetrologySimulator(f"{name}_gm", body, testbed, params.receivers),
            name,
            ties={"request": f"{name}/gm_request", "sync": f"{name}/gm_sync", "ranges": f"{name}/gm_ranges"},
        )
    fsw = SpheresFlightSoftware(
        f"{name}_fsw",
        name,
        node_id,
        params,
        testbed,
        program,
        r0_N,
        q0_BN,
        perfect_state=perfect_state or not sensors,
        wait_for_start=wait_for_start,
        node_ids=node_ids,
    )
    sim.add_model(
        fsw,
        name,
        ties={
            "truth": f"{name}/state",
            "imu": f"{name}/imu",
            "gm_sync": f"{name}/gm_sync",
            "gm": f"{name}/gm_ranges",
            "sts_rx": f"{name}/sts_rx",
            "stl_rx": f"{name}/stl_rx",
            "thrust_cmd": f"{name}/thrust_cmd",
            "gm_request": f"{name}/gm_request",
            "sts_tx": f"{name}/sts_tx",
            "stl_tx": f"{name}/stl_tx",
            "estimate": f"{name}/estimate",
        },
    )
    return SpheresVehicle(name, node_id, body, thrusters, imu, metrology, fsw)


def add_comm(
    sim,
    vehicles: list[str],
    node_ids: dict[str, int],
    params: SpheresParams,
    schedule: list[tuple[float, GroundCommand]] | None = None,
):
    """The ``comm`` island (channels ``sts`` and ``stl``) and the ``ground`` island (the laptop).

    Returns (sts, stl, laptop).
    """
    sim.add_island("comm")
    sim.add_island("ground")
    sts = sim.add_model(
        RadioChannel("sts", vehicles, node_ids, params.radio),
        "comm",
        ties={**{tx_port(v): f"{v}/sts_tx" for v in vehicles}, **{rx_port(v): f"{v}/sts_rx" for v in vehicles}},
    )
    stl_nodes = [*vehicles, LAPTOP_NAME]
    stl = sim.add_model(
        RadioChannel("stl", stl_nodes, node_ids, params.radio),
        "comm",
        ties={
            **{tx_port(v): f"{v}/stl_tx" for v in vehicles},
            **{rx_port(v): f"{v}/stl_rx" for v in vehicles},
            tx_port(LAPTOP_NAME): "ground/stl_tx",
            rx_port(LAPTOP_NAME): "ground/stl_rx",
        },
    )
    laptop = sim.add_model(
        GroundStation(LAPTOP_NAME, node_ids, params.radio, schedule),
        "ground",
        ties={"rx": "ground/stl_rx", "tx": "ground/stl_tx", "commands": "ground/commands"},
    )
    return sts, stl, laptop
