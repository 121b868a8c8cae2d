"""SPHERES sample runs of the MIT simulator (seed 001, sections 4.1 and 4.4).

``leader_follower``: the leader (sph1) holds 5 s, then flies a 40 cm square parallel to XY with
10 s raised-cosine sides and 10 s holds at the corners, broadcasting its state over STS at 10 Hz;
the follower (sph2) tracks the leader's broadcast state minus 30 cm in X. Both start on the
laptop's START command (acknowledged, then GO over STL). No noise, as in the seed's run.

``cooperative_docking``: on the air table (1-g mode, 3 DOF), the leader holds station and
broadcasts its state (OFF for 5 s, then ON); the follower rotates 90 degrees about Z in 6 s, then
closes in Y to 21 cm between centres in 10 s while tracking the leader in X; at 25 s both move
-30 cm in X.

Islands: one per vehicle (dynamics, thrusters, IMU, global metrology, flight software), ``comm``
(the STS and STL channels) and ``ground`` (the laptop).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

import numpy as np
from pydantic import Field, field_validator, model_validator

from hopsim.actors.spheres import packets
from hopsim.actors.spheres.assembly import LAPTOP_NAME, add_comm, add_vehicle
from hopsim.actors.spheres.frames import from_yaw, yaw
from hopsim.actors.spheres.params import SpheresParams, TestbedParams, flatten_overrides, vehicle_params
from hopsim.actors.spheres.programs import DockingFollower, DockingLeader, Follower, LeaderSquare, square_maneuvers
from hopsim.dynamics import detlinalg
from hopsim.kernel import Simulation
from hopsim.kernel.bounds import Probability, TimeS
from hopsim.scenarios.registry import ScenarioParams, Success, from_command_line, scenario
from hopsim.schemas.spheres_pb2 import GroundCommand

Vec3 = tuple[float, float, float]
Offset = Annotated[float, Field(ge=-10, le=10)]  # a displacement inside a test volume (m)
NODE_IDS = {LAPTOP_NAME: packets.LAPTOP, "sph1": 1, "sph2": 2}


# vehicle and test-bed parameters a scenario parameter of its own sets (an override of one would
# silently win over that parameter, or lose to it)
OWNED_BY = {
    "thrusters.noise_fraction": "thrust_noise",
    "imu.noise_on": "imu_noise",
    "radio.loss_probability": "radio_loss",
    "range_noise_m": "range_noise_m",
}


def _own_overrides(overrides: dict[str, Any], name: str, params: type) -> dict[str, Any]:
    """``overrides`` as dotted keys, none of them one that a scenario parameter sets (naming it),
    text from the command line as the parameter's type wants it (vectors from ``1,2,3``)."""
    try:
        flat = flatten_overrides(overrides)
    except ValueError as err:
        raise ValueError(f"{name}.{err}") from None
    for key, value in flat.items():
        if key in OWNED_BY:
            raise ValueError(f"{name}.{key} is set by the parameter {OWNED_BY[key]}: set {OWNED_BY[key]} instead")
        annotation = _annotation_at(params, key)
        if isinstance(value, str) and annotation is not None:
            flat[key] = from_command_line(annotation, value, f"{name}.{key}")
    return flat


def _annotation_at(params: type, dotted: str):
    """The type of a dotted parameter path of a parameter set's class (None: no such path)."""
    annotation = params
    for part in dotted.split("."):
        field = getattr(annotation, "model_fields", {}).get(part)
        if field is None:
            return None
        annotation = field.annotation
    return annotation


def _value_at(params, dotted: str):
    """The value of a dotted parameter path in a parameter set (tuples as lists, as JSON has them)."""
    for part in dotted.split("."):
        params = getattr(params, part)
    return json.loads(json.dumps(params))


class SpheresCommon(ScenarioParams):
    vehicle_type: str = Field("spheres_6dof", description="spheres_6dof (ISS) or spheres_air_table (1 g)")
    vehicle_overrides: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "overrides of the vehicle parameter set (mass, thrusters, imu, receivers, radio, "
            "flight_software), dotted or nested: --set vehicle_overrides.thrusters.pressure_psig=40"
        ),
    )
    testbed_overrides: dict[str, Any] = Field(
        default_factory=dict,
        description=("overrides of the test bed (beacon_positions_N, volume_min_N, volume_max_N, ...)"),
    )
    perfect_state: bool = Field(False, description="the controller uses the truth, bypassing the estimator")
    sensors: bool | None = Field(None, description="simulate the IMU and metrology (default: not perfect_state)")
    thrust_noise: float = Field(
        0.0, ge=0, le=1, description="per-firing 1-sigma thrust noise fraction (0.01 in the seed)"
    )
    imu_noise: bool = Field(False, description="IMU noise on (NOISE_ON)")
    range_noise_m: float = Field(0.0, ge=0, le=10, description="1-sigma noise per ultrasound range (m)")
    radio_loss: Probability = Field(0.0, description="probability that a receiver misses a frame")
    start_command_s: TimeS | None = Field(0.5, description="when the laptop sends START; None: start at once")
    n_integration_steps: int = Field(1, ge=1, le=10_000, description="integration steps per hop")

    @field_validator("vehicle_type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        vehicle_params(v)  # a ValueError naming the types otherwise
        return v

    @field_validator("vehicle_overrides")
    @classmethod
    def _vehicle_overrides_act(cls, v: dict[str, Any], info) -> dict[str, Any]:
        """Each override names a vehicle parameter and takes a value it can hold; kept as dotted
        keys with the values as applied (what the recording lists is what the run uses)."""
        flat = _own_overrides(v, "vehicle_overrides", SpheresParams)
        kinds = [k for k in flat if k.partition(".")[0] in ("vehicle_type", "version")]
        if kinds:
            raise ValueError(f"vehicle_overrides.{kinds[0]} is not an override: choose the vehicle with vehicle_type")
        if "vehicle_type" not in info.data:
            return flat  # the vehicle type is refused on its own
        try:
            applied = vehicle_params(info.data["vehicle_type"], flat)
        except ValueError as err:
            raise ValueError(f"vehicle_overrides.{err}") from None
        return {k: _value_at(applied, k) for k in flat}

    @field_validator("testbed_overrides")
    @classmethod
    def _testbed_overrides_act(cls, v: dict[str, Any]) -> dict[str, Any]:
        flat = _own_overrides(v, "testbed_overrides", TestbedParams)
        try:
            applied = TestbedParams().with_overrides(flat)
        except ValueError as err:
            raise ValueError(f"testbed_overrides.{err}") from None
        return {k: _value_at(applied, k) for k in flat}

    def testbed(self) -> TestbedParams:
        return TestbedParams(range_noise_m=self.range_noise_m).with_overrides(self.testbed_overrides)

    def params_for(self):
        overrides = {
            "thrusters.noise_fraction": self.thrust_noise,
            "imu.noise_on": self.imu_noise,
            "radio.loss_probability": self.radio_loss,
            **self.vehicle_overrides,
        }
        return vehicle_params(self.vehicle_type, overrides), self.testbed()

    def check_inside_volume(self, **positions_m: Vec3) -> None:
        """Each start position lies inside the test volume (its metrology and walls hold there)."""
        tb = self.testbed()
        for name, r in positions_m.items():
            if not all(lo <= x <= hi for x, lo, hi in zip(r, tb.volume_min_N, tb.volume_max_N)):
                raise ValueError(
                    f"{name} {tuple(r)} lies outside the test volume {tb.volume_min_N} to {tb.volume_max_N} m "
                    f"(testbed_overrides.volume_min_N, volume_max_N)"
                )

    def schedule(self):
        if self.start_command_s is None:
            return None
        return [
            (self.start_command_s, GroundCommand(vehicle=v, command=packets.CMD_START_TEST, args=b"\x01"))
            for v in ("sph1", "sph2")
        ]


class LeaderFollowerParams(SpheresCommon):
    leader_start_m: Vec3 = Field((1.30, 1.15, 1.15), description="seed: MASTER at (1.30, 1.15, 1.15) m")
    follower_start_m: Vec3 = Field((1.00, 1.15, 1.15), description="seed: SLAVE at (1.00, 1.15, 1.15) m")
    follower_offset_m: tuple[Offset, Offset, Offset] = Field(
        (-0.30, 0.0, 0.0), description="follower target = leader state + this"
    )
    square_side_m: float = Field(0.40, gt=0, le=10, description="side of the leader's square")
    move_s: TimeS = Field(10.0, ge=0.1, description="duration of each side's move")
    hold_s: TimeS = Field(10.0, description="dwell at each corner")
    first_hold_s: TimeS = Field(5.0, description="dwell before the first move")
    attitude_control: bool = Field(
        False,
        description=(
            "hold the start attitude too; the seed's run controlled position only (thrust noise off, "
            "the opposing pairs apply no torque)"
        ),
    )

    @model_validator(mode="after")
    def _starts_inside(self):
        self.check_inside_volume(leader_start_m=self.leader_start_m, follower_start_m=self.follower_start_m)
        return self


FORMATION_BOUND_M = 0.10  # the follower's measured worst tracking error is 8.2 cm (estimated state)


def leader_follower_outcome(sim: Simulation) -> dict:
    """Final tracking error (m), propellant used by each vehicle (g), whether the formation held."""
    p = sim.scenario_params
    leader, follower = sim.model("sph1"), sim.model("sph2")
    error = detlinalg.norm(follower.r_BN_N - (leader.r_BN_N + np.asarray(p.follower_offset_m, dtype=float)))
    used = {v: 1e3 * float(np.sum(sim.model(f"{v}_thrusters").propellant_used_kg)) for v in ("sph1", "sph2")}
    return {
        "tracking_error_m": error,
        "leader_propellant_g": used["sph1"],
        "follower_propellant_g": used["sph2"],
        "formation_held": error <= FORMATION_BOUND_M,
    }


def formation_lost(outcome: dict) -> str | None:
    """Why a run failed: the follower ended farther from its place than the formation allows."""
    if outcome.get("formation_held"):
        return None
    return f"formation lost: tracking error {outcome['tracking_error_m']:.3g} m, above {FORMATION_BOUND_M:g} m"


@scenario(
    "leader_follower",
    LeaderFollowerParams,
    "SPHERES leader flies a 40 cm square, follower tracks its broadcast state minus 30 cm (seed 4.1)",
    default_duration_s=85.0,
    outcome=leader_follower_outcome,
    success=Success(f"formation held: final tracking error at most {FORMATION_BOUND_M:g} m", formation_lost),
)
def build_leader_follower(sim: Simulation, p: LeaderFollowerParams) -> None:
    params, testbed = p.params_for()
    sensors = (not p.perfect_state) if p.sensors is None else p.sensors
    wait = p.start_command_s is not None
    leader = LeaderSquare(
        square_maneuvers(p.square_side_m, p.move_s, p.hold_s, p.first_hold_s),
        broadcast_to=("sph2",),
        control_attitude=p.attitude_control,
    )
    follower = Follower("sph1", p.follower_offset_m, control_attitude=p.attitude_control)
    for name, program, r0 in (("sph1", leader, p.leader_start_m), ("sph2", follower, p.follower_start_m)):
        add_vehicle(
            sim,
            name,
            NODE_IDS[name],
            params,
            testbed,
            program,
            r0,
            perfect_state=p.perfect_state,
            wait_for_start=wait,
            node_ids=NODE_IDS,
            sensors=sensors,
            n_integration_steps=p.n_integration_steps,
        )
    add_comm(sim, ["sph1", "sph2"], NODE_IDS, params, p.schedule())


class CooperativeDockingParams(SpheresCommon):
    vehicle_type: str = Field("spheres_air_table", description="the seed's run was on the air table (1 g)")
    leader_start_m: Vec3 = Field((1.30, 1.40, 1.15), description="the leader's start in the test volume")
    leader_yaw_deg: float = Field(
        -90.0, ge=-360, le=360, description="the leader's port (+x body) faces -Y, the follower"
    )
    follower_start_m: Vec3 = Field((1.30, 0.90, 1.15), description="Y offset: 50 cm below the leader")
    follower_yaw_deg: float = Field(
        0.0, ge=-360, le=360, description="yaw offset: the follower turns +90 deg to face the leader"
    )
    yaw_change_deg: float = Field(90.0, ge=-360, le=360, description="the follower's turn before it closes in")
    gap_m: float = Field(0.21, gt=0, le=10, description="final distance between centres")
    x_step_m: Offset = Field(-0.30, description="both move this far in X at 25 s")

    @model_validator(mode="after")
    def _starts_inside(self):
        self.check_inside_volume(leader_start_m=self.leader_start_m, follower_start_m=self.follower_start_m)
        return self


def cooperative_docking_outcome(sim: Simulation) -> dict:
    """The approach along Y at the end: the gap between the centres (m) and its error against
    ``gap_m``, the offset across it in X (m), the follower's yaw (deg; +90 faces the leader), and
    the propellant used by each vehicle (g)."""
    p = sim.scenario_params
    leader, follower = sim.model("sph1"), sim.model("sph2")
    gap = float(leader.r_BN_N[1] - follower.r_BN_N[1])
    used = {v: 1e3 * float(np.sum(sim.model(f"{v}_thrusters").propellant_used_kg)) for v in ("sph1", "sph2")}
    return {
        "gap_m": gap,
        "gap_error_m": gap - p.gap_m,
        "x_offset_m": float(follower.r_BN_N[0] - leader.r_BN_N[0]),
        "follower_yaw_deg": math.degrees(yaw(follower.q_BN)),
        "leader_propellant_g": used["sph1"],
        "follower_propellant_g": used["sph2"],
    }


@scenario(
    "cooperative_docking",
    CooperativeDockingParams,
    "SPHERES follower turns 90 deg and closes to 21 cm of a station-keeping leader (seed 4.4)",
    default_duration_s=40.0,
    outcome=cooperative_docking_outcome,
)
def build_cooperative_docking(sim: Simulation, p: CooperativeDockingParams) -> None:
    params, testbed = p.params_for()
    sensors = (not p.perfect_state) if p.sensors is None else p.sensors
    wait = p.start_command_s is not None
    leader = DockingLeader(broadcast_to=("sph2",), x_step_m=p.x_step_m)
    follower = DockingFollower(
        "sph1", yaw_change_rad=math.radians(p.yaw_change_deg), gap_m=p.gap_m, x_step_m=p.x_step_m
    )
    for name, program, r0, yaw_deg in (
        ("sph1", leader, p.leader_start_m, p.leader_yaw_deg),
        ("sph2", follower, p.follower_start_m, p.follower_yaw_deg),
    ):
        add_vehicle(
            sim,
            name,
            NODE_IDS[name],
            params,
            testbed,
            program,
            r0,
            q0_BN=tuple(from_yaw(math.radians(yaw_deg))),
            perfect_state=p.perfect_state,
            wait_for_start=wait,
            node_ids=NODE_IDS,
            sensors=sensors,
            n_integration_steps=p.n_integration_steps,
        )
    add_comm(sim, ["sph1", "sph2"], NODE_IDS, params, p.schedule())
