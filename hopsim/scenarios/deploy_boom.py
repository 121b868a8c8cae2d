"""A free-flying hub extends and retracts a prescribed boom with each translation profile.

One island: the hub (free joint) with a boom on a prescribed slider, integrated by the
articulated-body algorithm; a sequencer sends the four moves (bang-bang, bang-coast-bang,
smoothed bang-bang, smoothed bang-coast-bang). With no external load the system's momentum is
conserved, so the hub recoils against every move of the boom.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from hopsim.actors.articulated import ArticulatedDynamics
from hopsim.actors.sequencer import MoveSequencer
from hopsim.dynamics import MultibodyTree, detlinalg, pose, spatial_momentum
from hopsim.dynamics.integrators import make_integrator
from hopsim.dynamics.profiles import MoveProfile
from hopsim.kernel import Simulation
from hopsim.kernel.bounds import MAX_TIME_S, RateHz, TimeS
from hopsim.scenarios.registry import ScenarioError, ScenarioParams, scenario

Inertia = Annotated[float, Field(gt=0, le=1e9)]  # a principal moment of inertia (kg m^2)
Length = Annotated[float, Field(ge=-100, le=100)]  # a place on the hub or the boom (m)


class DeployBoomParams(ScenarioParams):
    hub_mass_kg: float = Field(20.0, gt=0, le=1e6, description="mass of the free-flying hub")
    hub_inertia_kgm2: tuple[Inertia, Inertia, Inertia] = Field(
        (0.8, 0.9, 1.0), description="hub's principal inertia about its centre of mass"
    )
    boom_mass_kg: float = Field(2.0, gt=0, le=1e6, description="mass of the boom")
    boom_inertia_kgm2: tuple[Inertia, Inertia, Inertia] = Field(
        (0.001, 0.05, 0.05), description="boom's principal inertia about its centre of mass"
    )
    boom_root_m: tuple[Length, Length, Length] = Field((0.25, 0.0, 0.0), description="slider origin in the hub frame")
    boom_offset_m: tuple[Length, Length, Length] = Field(
        (0.0, 0.0, 0.0), description="boom centre of mass off the slider axis"
    )
    accel_max_mps2: float = Field(
        0.02, ge=1e-6, le=100, description="the profiles' largest acceleration along the slider"
    )
    stroke_m: float = Field(0.5, ge=1e-3, le=100, description="length of the longest move")
    coast_s: TimeS = Field(2.0, ge=0, description="coast of the bang-coast-bang moves")
    smoothing_s: TimeS = Field(1.0, ge=0, description="smoothing of the smoothed moves")
    gap_s: TimeS = Field(2.0, ge=0, description="rest between moves")
    state_rate_hz: RateHz = Field(10.0, le=10_000, description="rate of the hub's published state")
    integrator: str = Field("rk4", pattern="^(rk4|dopri54|dop853)$", description="rk4, dopri54 or dop853")
    n_integration_steps: int = Field(4, ge=1, le=10_000, description="integration steps per hop")


def in_parameter_names(message: str) -> str:
    """A profile's error in the names of this scenario's parameters."""
    for name, parameter in (
        ("coast_bang_duration", "coast_s"),
        ("smoothing_duration", "smoothing_s"),
        ("accel_max", "accel_max_mps2"),
    ):
        message = message.replace(name, parameter)
    return message


def boom_moves(p: DeployBoomParams) -> list[tuple[float, MoveProfile]]:
    """Extend, retract, extend, retract: one move with each of the four profiles."""
    a, L = p.accel_max_mps2, p.stroke_m
    legs = [
        (0.0, L, 0.0, 0.0),
        (L, 0.2 * L, p.coast_s, 0.0),
        (0.2 * L, L, 0.0, p.smoothing_s),
        (L, 0.0, p.coast_s, p.smoothing_s),
    ]
    moves, t = [], 1.0
    for start, end, coast, smooth in legs:
        try:
            move = MoveProfile(start, end, a, coast, smooth, kind="translation")
        except ValueError as err:
            raise ScenarioError(f"deploy_boom: {in_parameter_names(str(err))}") from None
        if not move.duration <= MAX_TIME_S:
            raise ScenarioError(
                f"deploy_boom: a move of stroke_m {abs(end - start):g} m at accel_max_mps2 {a:g} with a bang of "
                f"coast_s {coast:g} s lasts {move.duration:g} s, beyond {MAX_TIME_S:g} s: give a longer coast_s, or 0"
            )
        moves.append((t, move))
        t += move.duration + p.gap_s
    return moves


def boom_tree(p: DeployBoomParams) -> MultibodyTree:
    tree = MultibodyTree()
    tree.add_body("hub", joint="free", mass=p.hub_mass_kg, inertia_C_B=np.diag(p.hub_inertia_kgm2))
    tree.add_body(
        "boom",
        parent="hub",
        joint="slider",
        axis=(1.0, 0.0, 0.0),
        mass=p.boom_mass_kg,
        r_CB_B=p.boom_offset_m,
        inertia_C_B=np.diag(p.boom_inertia_kgm2),
        inb_to_joint=pose(translation=p.boom_root_m),
        prescribed=True,
    )
    return tree


def deploy_boom_outcome(sim: Simulation) -> dict:
    dyn = sim.model("spacecraft")
    h = spatial_momentum(dyn.arrays, dyn.Q, dyn.U)
    return {
        "boom_extension_m": float(dyn.Q[dyn.tree.q_slice("boom")][0]),
        "hub_position_m": dyn.Q[4:7].tolist(),
        "momentum_norm": detlinalg.norm(h),
    }


@scenario(
    "deploy_boom",
    DeployBoomParams,
    "free-flying hub extending a prescribed boom with each of the "
    "four translation profiles (articulated-body dynamics)",
    default_duration_s=180.0,
    outcome=deploy_boom_outcome,
)
def build_deploy_boom(sim: Simulation, p: DeployBoomParams) -> None:
    sim.add_island("spacecraft", integrator=make_integrator(p.integrator), n_integration_steps=p.n_integration_steps)
    tree = boom_tree(p)
    sim.add_model(
        ArticulatedDynamics("spacecraft", tree, rate_hz=p.state_rate_hz),
        "spacecraft",
        ties={
            "profiles": "spacecraft/boom_profile",
            "hub_state": "spacecraft/hub_state",
            "joints": "spacecraft/joints",
        },
    )
    sim.add_model(
        MoveSequencer("boom_sequencer", "boom", boom_moves(p)),
        "spacecraft",
        ties={"profiles": "spacecraft/boom_profile"},
    )
