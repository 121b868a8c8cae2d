"""Spacecraft in orbit in a row block (hopsim.kernel.blocks with
hopsim.actors.orbiting_fleet.OrbitingSpacecraftRows): the same states, bit for bit, and the same
recording, byte for byte, as each spacecraft's own barriers."""

import math

import numpy as np
import pytest

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.bus.recorder import McapRecorder
from hopsim.dynamics.gravity import EARTH_RADIUS
from hopsim.dynamics.integrators import RK4
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spherical_harmonics import ggm03s
from hopsim.kernel import Simulation
from hopsim.schemas import ReactionWheelCommand

BETA = math.radians(35.26)
AXES_B = [
    [math.cos(BETA) * math.cos(az), math.cos(BETA) * math.sin(az), math.sin(BETA)]
    for az in np.radians([0.0, 90.0, 180.0, 270.0])
]


def _simulation(n: int, blocks: bool, wheels: bool = True, recorder=None, degree: int = 8) -> Simulation:
    field = ggm03s()
    sim = Simulation(seed=1, row_blocks=blocks, recorder=recorder)
    for i in range(n):
        r, v = state_from_elements(
            EARTH_RADIUS + 500e3 + 1e3 * i, 0.001 * i, 0.9 + 0.01 * i, 0.3 * i, 0.1, 0.7 * i, field.mu
        )
        name = f"sc{i}"
        sim.add_island(name, integrator=RK4(), n_integration_steps=2)
        wheel_args = (
            dict(
                axes_B=AXES_B,
                J_kgm2=0.08,
                Omega_radps=[100.0, -50.0, 20.0, 0.0],
                max_torque_Nm=0.2,
                viscous_Nms=1e-5,
                coulomb_Nm=5e-4,
            )
            if wheels
            else {}
        )
        sim.add_model(
            OrbitingSpacecraft(
                name,
                r,
                v,
                500.0,
                [[400.0, 0.0, 0.0], [0.0, 300.0, 0.0], [0.0, 0.0, 200.0]],
                omega_BN_B=(0.001, -0.002, 0.001),
                field=field,
                degree=degree,
                cd_area_m2=4.4,
                rho0_kgpm3=4e-13,
                h0_m=500e3,
                scale_height_m=60e3,
                cr_area_m2=2.6,
                gravity_gradient=True,
                rate_hz=1.0,
                **wheel_args,
            ),
            name,
            ties={"torque_cmd": "fleet/rw_cmd"} if wheels else {},
        )
    if wheels:
        sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=[0.01, -0.01, 0.005, 0.0]), 0.0)
        sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=[0.0, 0.02, 0.0, -0.01]), 13.0)
    return sim


def _block_instants(sim: Simulation) -> int:
    return sum(g["block_instants"] for g in sim.stats()["rate_groups"].values())


@pytest.mark.parametrize("n, degree", [(6, 8), (3, 2)])
def test_spacecraft_in_a_block_fly_the_same_bits(n, degree):
    """Six spacecraft with degree-8 gravity, drag, solar pressure, the gravity gradient and four
    wheels (three with degree 2), two hops per instant, a wheel command from outside mid-run
    (the block ends, the spacecraft latch it, a block forms again): every state bit for bit."""
    on, off = _simulation(n, True, degree=degree), _simulation(n, False, degree=degree)
    for t in (7.0, 30.0):
        on.advance_to(t)
        off.advance_to(t)
        for i in range(n):
            a, b = on.model(f"sc{i}"), off.model(f"sc{i}")
            assert a.x.tobytes() == b.x.tobytes() and a.xdot.tobytes() == b.xdot.tobytes(), (t, i)
            assert a.u.tobytes() == b.u.tobytes()
    assert _block_instants(off) == 0 and _block_instants(on) >= 20


def test_a_recorded_formation_in_orbit_writes_the_same_file_in_a_block(tmp_path):
    """Without wheels the spacecraft's state is its only output: recorded from the block's rows,
    the file is the one the spacecraft's own barriers write."""
    files = {}
    for blocks in (True, False):
        files[blocks] = tmp_path / f"{blocks}.mcap"
        sim = _simulation(5, blocks, wheels=False, recorder=McapRecorder(files[blocks]))
        sim.advance_to(25.0)
        assert (_block_instants(sim) >= 15) == blocks
        sim.recorder.close()
    assert files[True].read_bytes() == files[False].read_bytes()
