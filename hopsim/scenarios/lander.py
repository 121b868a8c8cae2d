"""The executive's flagship scenario: a lunar lander descends and touches down.

Island ``lander``: the body (continuous; touchdown is a zero-crossing on its height), a noisy
20 Hz altimeter, a 10 Hz descent controller, a 1 Hz battery fed by the body's power draw and a
2 Hz telemetry downlink. Island ``ground``: a ground station receiving the telemetry after the
radio latency. Every model is a real one; nothing is scripted.
"""

from __future__ import annotations

from pydantic import Field

from hopsim.actors.battery import Battery
from hopsim.actors.lander import Altimeter, DescentController, GroundStation, LanderBody, TelemetryDownlink
from hopsim.dynamics.integrators import make_integrator
from hopsim.kernel import Simulation, Tie
from hopsim.kernel.bounds import PeriodS, RateHz, TimeS
from hopsim.scenarios.registry import ScenarioParams, Success, scenario


class LanderParams(ScenarioParams):
    altitude_m: float = Field(100.0, gt=0, le=1e6, description="initial height above ground (m)")
    vertical_speed_mps: float = Field(0.0, ge=-1e4, le=1e4, description="initial vertical speed, up positive (m/s)")
    mass_kg: float = Field(50.0, ge=0.01, le=1e6, description="lander mass")
    gravity_mps2: float = Field(1.62, gt=0, le=100, description="lunar surface gravity by default")
    max_thrust_N: float = Field(150.0, gt=0, le=1e8, description="engine thrust at full throttle")
    battery_Wh: float = Field(69.1, gt=0, le=1e9, description="Dshell Battery's default capacity")
    altimeter_noise_m: float = Field(0.05, ge=0, le=1e4, description="1-sigma altimeter noise")
    altimeter_rate_hz: RateHz = Field(20.0, le=10_000, description="altimeter sample rate")
    control_rate_hz: RateHz = Field(10.0, le=10_000, description="descent controller rate")
    control_gain: float = Field(0.8, gt=0, le=1e3, description="throttle per m/s of descent-rate error")
    telemetry_rate_hz: RateHz = Field(2.0, le=10_000, description="telemetry downlink rate")
    radio_latency_s: TimeS = Field(0.05, le=3600, description="telemetry latency to the ground")
    integrator: str = Field("rk4", pattern="^(euler|rk4)$", description="euler or rk4")
    n_integration_steps: int = Field(2, ge=1, le=10_000, description="integration steps per hop")
    touchdown_eps_s: PeriodS = Field(1e-6, le=1.0, description="how close to touchdown the hop ends")
    stop_on_touchdown: bool = Field(False, description="end the run at touchdown")


SAFE_TOUCHDOWN_MPS = 2.0


def lander_outcome(sim: Simulation) -> dict:
    """Touchdown time and speed, energy used, and whether the landing was safe."""
    body, battery = sim.model("body"), sim.model("battery")
    landed = body.touched_down
    return {
        "landed": landed,
        "touchdown_s": body.touchdown_t_ns / 1e9 if landed else None,
        "touchdown_speed_mps": body.touchdown_speed_mps if landed else None,
        "energy_used_Wh": battery.total_power_Wh - battery.power_level_Wh,
        "safe": landed and body.touchdown_speed_mps <= SAFE_TOUCHDOWN_MPS,
    }


def lander_crashed(outcome: dict) -> str | None:
    """Why a run failed: a touchdown faster than a landing survives (None: no crash)."""
    speed = outcome.get("touchdown_speed_mps")
    if outcome.get("landed") and speed is not None and speed > SAFE_TOUCHDOWN_MPS:
        return f"crashed: touchdown at {speed:.3g} m/s, faster than the {SAFE_TOUCHDOWN_MPS:g} m/s a landing survives"
    return None


@scenario(
    "lander",
    LanderParams,
    "1-D lunar lander: controller, sensor, battery, touchdown zero-crossing, telemetry to a ground station",
    default_duration_s=60.0,
    outcome=lander_outcome,
    success=Success(f"no crash: no touchdown faster than {SAFE_TOUCHDOWN_MPS:g} m/s", lander_crashed),
)
def build_lander(sim: Simulation, p: LanderParams) -> None:
    sim.add_island("lander", integrator=make_integrator(p.integrator), n_integration_steps=p.n_integration_steps)
    sim.add_island("ground")
    body = sim.add_model(
        LanderBody("body", p.altitude_m, p.vertical_speed_mps, p.mass_kg, p.gravity_mps2, p.max_thrust_N),
        "lander",
        ties={"state": "lander/state", "throttle": "lander/throttle", "power_draw": "lander/power_draw"},
    )
    sim.add_model(
        Altimeter("altimeter", p.altimeter_noise_m, rate_hz=p.altimeter_rate_hz),
        "lander",
        ties={"state": "lander/state", "altitude": "lander/altitude"},
    )
    hover = p.mass_kg * p.gravity_mps2 / p.max_thrust_N
    sim.add_model(
        DescentController("controller", hover_throttle=hover, gain=p.control_gain, rate_hz=p.control_rate_hz),
        "lander",
        ties={"altitude": "lander/altitude", "battery": "lander/battery", "throttle": "lander/throttle"},
    )
    sim.add_model(
        Battery("battery", p.battery_Wh),
        "lander",
        ties={"load": "lander/power_draw", "source": "lander/solar", "state": "lander/battery"},
    )
    sim.add_model(
        TelemetryDownlink("downlink", p.telemetry_rate_hz),
        "lander",
        ties={
            "state": "lander/state",
            "battery": "lander/battery",
            "throttle": "lander/throttle",
            "telemetry": Tie("lander/telemetry", latency_s=p.radio_latency_s),
        },
    )
    sim.add_model(GroundStation("ground_station"), "ground", ties={"telemetry": "lander/telemetry"})

    def touchdown(t_ns: int) -> None:
        body.touch_down(t_ns)
        if p.stop_on_touchdown:
            sim.e_stop = True

    sim.add_zero_crossing(
        "touchdown", "lander", lambda t_ns: float(body.x[0]), touchdown, direction="falling", eps_s=p.touchdown_eps_s
    )
