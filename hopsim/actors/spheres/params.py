"""Every constant of a SPHERES vehicle and of its test bed, in one versioned parameter set.

A :class:`SpheresParams` holds the constants of one vehicle *type* (mass properties, thrusters,
IMU, ultrasound receivers, radio, flight software). A :class:`TestbedParams` holds those of the
test volume (beacon layout, speed of sound, metrology cycle timing). Both are frozen pydantic
models; :func:`vehicle_params` returns a named type with optional overrides, written with dotted
keys (``{"thrusters.pressure_psig": 40}``), which is how scenarios override them.

Units are SI (m, kg, s, N, rad) unless a field name says otherwise (``_psig``, ``_deg``, ``_g``,
``_ug``). Vectors are body-frame (B) for vehicle geometry and test-bed (N) for beacons.

Sources (the MIT SPHERES simulator, seed 001): mass properties (Tables 2.1, 2.2), thruster
geometry and the thrust law (thruster-simulator listing), valve delays, pulse limits and rates
(``Spheres_constants.h``), IMU specifications (Tables 2.3, 2.4), metrology timing (metrology
simulator listing), radio rates and packet format (section 2.5). Values the seed leaves out are
chosen here and marked "not in the seed" with the reason for the choice.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hopsim.kernel.bounds import PeriodS, Probability, RateHz, TimeS

PARAMS_VERSION = "spheres-1.0"
G0 = 9.80665  # standard gravity (m/s^2), to convert g and micro-g specs
PSI_TO_PA = 6894.757

_S = 0.01905  # thruster offset along its own axis (m), listing SMALL_LEN
_B = 0.080451  # thruster offset across its axis (m), listing BIG_LEN

# Thrusters 1..12 of the thruster-simulator listing: position of the nozzle in B (m) and the
# direction of the force it applies to the vehicle (unit, in B).
THRUSTER_POSITIONS_B = (
    (_S, -_B, -_B),
    (-_S, -_B, -_B),
    (-_B, -_S, -_B),
    (-_B, _S, -_B),
    (_B, -_B, _S),
    (_B, -_B, -_S),
    (_B, _S, _B),
    (_B, -_S, _B),
    (-_B, _B, _S),
    (-_B, _B, -_S),
    (_S, _B, _B),
    (-_S, _B, _B),
)
THRUSTER_DIRECTIONS_B = (
    (-1.0, 0.0, 0.0),
    (1.0, 0.0, 0.0),
    (0.0, 1.0, 0.0),
    (0.0, -1.0, 0.0),
    (0.0, 0.0, -1.0),
    (0.0, 0.0, 1.0),
    (0.0, -1.0, 0.0),
    (0.0, 1.0, 0.0),
    (0.0, 0.0, -1.0),
    (0.0, 0.0, 1.0),
    (-1.0, 0.0, 0.0),
    (1.0, 0.0, 0.0),
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


Vec3 = tuple[float, float, float]
MAX_TESTBED_M = 1e4  # a test bed's coordinates (m): 10 km, beyond any laboratory or range
TestbedCoordinate = Annotated[float, Field(ge=-MAX_TESTBED_M, le=MAX_TESTBED_M)]
TestbedPoint = tuple[TestbedCoordinate, TestbedCoordinate, TestbedCoordinate]  # a point of the N frame (m)


class MassProperties(_Frozen):
    """Mass properties of the vehicle with a full tank (kg, kg m^2 about the CM, in B)."""

    mass_kg: float = Field(3.4447, gt=0, description="Table 2.1, 6-DOF prototype")
    inertia_diag_kgm2: Vec3 = Field((0.0204, 0.0170, 0.0190), description="Table 2.1 (Ixx, Iyy, Izz)")
    r_CB_B: Vec3 = Field((0.0, 0.0, 0.0), description="CM offset from the geometric centre (CM_POS_*)")
    radius_m: float = Field(0.1, gt=0, description="RADIUS of the simulator listing")


class ThrusterParams(_Frozen):
    """Twelve cold-gas thrusters fed by a regulated CO2 tank.

    Thrust per open valve is ``thrust_slope_N_per_psi * pressure_psig + thrust_offset_N``
    (0.1436 N at 45 psig) unless ``thrust_override_N`` gives a level per thruster.
    """

    positions_B: tuple[Vec3, ...] = THRUSTER_POSITIONS_B
    directions_B: tuple[Vec3, ...] = THRUSTER_DIRECTIONS_B
    pressure_psig: float = Field(45.0, ge=0, le=50, description="regulator setting (PRESSURE)")
    thrust_slope_N_per_psi: float = 0.0033
    thrust_offset_N: float = -0.0049
    thrust_override_N: tuple[float, ...] | None = Field(None, description="12 levels replacing the law")
    on_delay_s: TimeS = Field(0.006, ge=0, description="THRUSTER_ON_DELAY: valve opening delay")
    off_delay_s: TimeS = Field(0.0, ge=0, description="THRUSTER_OFF_DELAY")
    noise_fraction: float = Field(
        0.0,
        ge=0,
        description="per-firing 1-sigma thrust noise; the listing's THRUST_NOISE_LEVEL is 0.01 with NOISE_ON false",
    )
    propellant_kg: float = Field(0.172, ge=0, description="about 5% of the vehicle mass (section 1.3)")
    isp_s: float = Field(
        51.1,
        gt=0,
        description=(
            "not in the seed: chosen so that one thruster firing continuously empties the tank in "
            "10 min, the seed's tank life: 0.1436 N * 600 s / (0.172 kg * g0)"
        ),
    )
    planar: bool = Field(False, description="1-g air-table mode: body Fz, Tx and Ty are dropped")

    @field_validator("positions_B", "directions_B")
    @classmethod
    def _twelve(cls, v):
        if len(v) != 12:
            raise ValueError(f"SPHERES has 12 thrusters, got {len(v)} entries")
        return v

    @field_validator("thrust_override_N")
    @classmethod
    def _twelve_levels(cls, v):
        if v is not None and len(v) != 12:
            raise ValueError(f"thrust_override_N needs 12 levels, got {len(v)}")
        return v

    @property
    def thrust_N(self) -> float:
        """Thrust of one open valve from the pressure law (N)."""
        return self.thrust_slope_N_per_psi * self.pressure_psig + self.thrust_offset_N

    def levels_N(self) -> tuple[float, ...]:
        """Thrust of each of the 12 valves when open (N)."""
        if self.thrust_override_N is not None:
            return tuple(float(x) for x in self.thrust_override_N)
        return (self.thrust_N,) * 12


class ImuParams(_Frozen):
    """Three BEI Gyrochip II gyros and a Honeywell Q-Flex 3-axis accelerometer, body-aligned."""

    sample_spacing_s: PeriodS = Field(0.018, gt=0, description="IMU_DELAY: one sample per 18 ms")
    delivery_period_s: PeriodS = Field(
        0.1,
        gt=0,
        description=(
            "samples reach the flight software in batches at this period, aligned with the 10 Hz "
            "control law (each sample keeps its own time stamp); set it to sample_spacing_s to "
            "deliver every sample at its instant"
        ),
    )
    gyro_range_deg_s: float = Field(50.0, gt=0, description="Table 2.4")
    accel_range_g: float = Field(20.0, gt=0, description="Table 2.3")
    gyro_noise_density_deg_s_rthz: float = Field(0.05, ge=0, description="Table 2.4, DC-100 Hz")
    gyro_bandwidth_hz: RateHz = Field(100.0, gt=0)
    accel_noise_band_ug: tuple[float, ...] = Field(
        (20.0, 200.0), description=("Table 2.3: RMS noise in each band (0-10 Hz, 10-500 Hz), combined root-sum-square")
    )
    accel_resolution_ug: float = Field(5.0, gt=0, description="Table 2.3 threshold/resolution")
    gyro_scale_mV_per_deg_s: float = Field(30.0, gt=0, description="Table 2.4")
    gyro_output_step_mV: float = Field(
        1.0, gt=0, description=("the simulator sends integer millivolts, so a gyro reading moves in 1 mV steps")
    )
    accel_scale_error: float = Field(0.018, ge=0, description="Table 2.3 scale-factor tolerance")
    gyro_scale_error: float = Field(0.02, ge=0, description="Table 2.4 scale-factor tolerance")
    accel_bias_g: float = Field(0.020, ge=0, description="Table 2.3 bias bound")
    gyro_bias_deg_s: float = Field(1.5, ge=0, description="Table 2.4: 0.045 V / 30 mV/(deg/s)")
    randomize_errors: bool = Field(
        False, description=("draw each axis' bias and scale-factor error once, uniformly within the bounds above")
    )
    noise_on: bool = Field(False, description="NOISE_ON of the listing (off in the sample runs)")
    gravity_mps2: float = Field(0.0, ge=0, description="specific force of the air table's support")

    @property
    def gyro_noise_rms_rad_s(self) -> float:
        """RMS of one gyro sample: density times the square root of the bandwidth (rad/s)."""
        return math.radians(self.gyro_noise_density_deg_s_rthz * math.sqrt(self.gyro_bandwidth_hz))

    @property
    def accel_noise_rms_mps2(self) -> float:
        """RMS of one accelerometer sample: the band RMS values combined (m/s^2)."""
        return math.sqrt(sum(b * b for b in self.accel_noise_band_ug)) * 1e-6 * G0

    @property
    def gyro_step_rad_s(self) -> float:
        return math.radians(self.gyro_output_step_mV / self.gyro_scale_mV_per_deg_s)

    @property
    def accel_step_mps2(self) -> float:
        return self.accel_resolution_ug * 1e-6 * G0


def _default_receivers() -> tuple[tuple[Vec3, ...], ...]:
    """Three receivers per face, on the six faces +X, +Y, +Z, -X, -Y, -Z at 0.1 m from the centre.

    Not in the seed (RX_POS is referenced but never listed): each face carries its receivers at
    offsets (-a, -a), (+a, -a), (-a, +a) along the face's two tangent axes, a = 0.025 m, so the
    three are never collinear and their plane's normal is the face normal.
    """
    faces = []
    a, d = 0.025, 0.1
    for axis, sign in ((0, 1), (1, 1), (2, 1), (0, -1), (1, -1), (2, -1)):
        n = [0.0, 0.0, 0.0]
        n[axis] = float(sign)
        u = [0.0, 0.0, 0.0]
        u[(axis + 1) % 3] = 1.0
        v = [n[1] * u[2] - n[2] * u[1], n[2] * u[0] - n[0] * u[2], n[0] * u[1] - n[1] * u[0]]
        rx = []
        for su, sv in ((-a, -a), (a, -a), (-a, a)):
            rx.append(tuple(d * n[k] + su * u[k] + sv * v[k] for k in range(3)))
        faces.append(tuple(rx))
    return tuple(faces)


class ReceiverParams(_Frozen):
    """Ultrasound receivers of one vehicle: ``positions_B[face][receiver]`` (m, in B)."""

    positions_B: tuple[tuple[Vec3, ...], ...] = Field(default_factory=_default_receivers)
    max_rx_angle_deg: float = Field(100.0, gt=0, le=180, description="MAX_RX_ANGLE of the listing")

    @property
    def n_faces(self) -> int:
        return len(self.positions_B)

    @property
    def n_receivers(self) -> int:
        return len(self.positions_B[0])


class RadioParams(_Frozen):
    """Both radio channels: STS (vehicle to vehicle, 916.5 MHz) and STL (vehicle to laptop, 868.35 MHz)."""

    bitrate_bps: float = Field(19200.0, gt=0, description="maximum rate of both channels")
    start_byte: int = Field(0xA5, ge=0, le=255, description="not in the seed: the frame start marker")
    max_packets_per_token: int = Field(1, ge=1, le=1000, description="packets a node sends per token hold")
    loss_probability: Probability = Field(0.0, description="a receiver misses a packet")
    bit_error_rate: Probability = Field(0.0, description="per transmitted bit, per receiver")
    poll_period_s: PeriodS = Field(
        0.1,
        gt=0,
        description=(
            "the channel latches the packets handed to it at these instants; the flight software "
            "and the laptop hand over packets on the same 10 Hz grid"
        ),
    )
    poll_phase_ns: int = Field(
        2, ge=0, le=1_000_000_000, description="after the senders' grid and the 1 ns island crossing"
    )
    ack_timeout_s: PeriodS = Field(0.5, gt=0, description="not in the seed: resend after this")
    max_resends: int = Field(5, ge=0, le=1000)


class FlightSoftwareParams(_Frozen):
    """The Standard Control Interface: rates, pulse limits, control gains, estimator gains."""

    propulsion_rate_hz: RateHz = Field(1000.0, gt=0, description="thruster interrupt: 1 ms resolution")
    controller_rate_hz: RateHz = Field(50.0, gt=0, description="CTRL_RATE: the controller interrupt")
    control_divider: int = Field(5, ge=1, le=1000, description="the control law runs every 5th controller tick")
    pw_min_s: TimeS = Field(0.005, ge=0, description="PW_MIN (the listing's comment says seconds; it is ms)")
    pw_max_s: PeriodS = Field(0.1, gt=0, description="PW_MAX = 1/(CTRL_RATE/5)")
    deadband_s: TimeS = Field(
        0.001, ge=0, description=("not in the seed (CMD_DB): thrust times shorter than this are not fired")
    )
    pulse_offset_s: TimeS = Field(
        0.006,
        ge=0,
        description=(
            "added to every fired pulse so that its impulse survives the valve's 6 ms opening delay "
            "(the seed's PW_MIN offset plays this role; 5 ms alone would yield no impulse)"
        ),
    )
    thrusters_off_during_gm: bool = Field(True, description="propulsion task blanks during ultrasound")
    gm_blank_s: TimeS = Field(
        0.105,
        ge=0,
        description="blanking after the IR sync: the last beacon "
        "fires at 85 ms and its pulse has crossed the volume by 105 ms",
    )
    gm_request_period_s: PeriodS = Field(0.5, gt=0, description="global metrology every 500 ms")
    kp_pos: float = Field(
        0.25,
        ge=0,
        description="position gain (1/s^2); the seed's call is control_position_PD(0.25, 0.25) with units not given",
    )
    kd_pos: float = Field(0.7, ge=0, description="velocity gain (1/s), damping ratio 0.7 at 0.5 rad/s")
    kp_att: float = Field(1.0, ge=0, description="attitude gain (1/s^2)")
    kd_att: float = Field(1.4, ge=0, description="rate gain (1/s), damping ratio 0.7 at 1 rad/s")
    state_broadcast_rate_hz: RateHz = Field(10.0, gt=0, description="leader state over STS")
    telemetry_rate_hz: RateHz = Field(1.0, gt=0, description="state telemetry to the laptop over STL")
    est_pos_gain: float = Field(0.7, ge=0, le=1, description="share of a GM position innovation taken")
    est_vel_gain: float = Field(0.3, ge=0, description="velocity correction per GM period (1/period)")
    est_att_gain: float = Field(0.7, ge=0, le=1, description="share of a GM attitude innovation taken")
    est_bias_gain: float = Field(0.1, ge=0, description="gyro-bias correction per GM period")
    est_use_accelerometer: bool = Field(
        False,
        description=(
            "propagate with the accelerometer; the seed's leader-follower run used the commanded "
            "thruster force instead (propagate_state modified), which is the default"
        ),
    )
    gm_max_residual_m: float = Field(0.01, gt=0, description="a pose fix is rejected above this RMS")


class SpheresParams(_Frozen):
    """The complete, versioned parameter set of one SPHERES vehicle type."""

    vehicle_type: str
    version: str = PARAMS_VERSION
    mass: MassProperties = MassProperties()
    thrusters: ThrusterParams = ThrusterParams()
    imu: ImuParams = ImuParams()
    receivers: ReceiverParams = ReceiverParams()
    radio: RadioParams = RadioParams()
    flight_software: FlightSoftwareParams = FlightSoftwareParams()

    def with_overrides(self, overrides: dict[str, Any] | None) -> SpheresParams:
        """A copy with dotted-key overrides applied and validated, e.g. ``{"imu.noise_on": True}``."""
        return _apply_overrides(self, overrides)


def _default_beacons() -> tuple[Vec3, ...]:
    """Five beacons on corners of the default 2.3 m cube: a regular tetrahedron plus one more."""
    L = 2.3
    return ((0.0, 0.0, L), (L, 0.0, 0.0), (L, L, L), (0.0, L, 0.0), (L, L, 0.0))


class TestbedParams(_Frozen):
    """The test volume and its ultrasound beacons (N frame, m).

    Not in the seed (TX_POS and TX_DIR are referenced but never listed). The default volume is
    the cube [0, 2.3 m]^3, which puts the seed's listed start positions (1.30, 1.15, 1.15) and
    (1.00, 1.15, 1.15) near its centre; five beacons sit on corners (four of them a regular
    tetrahedron, for well-conditioned fixes) and point at the centre, so every point of the
    volume lies within 55 degrees of every beacon's axis.
    """

    __test__ = False  # not a pytest class

    volume_min_N: TestbedPoint = (0.0, 0.0, 0.0)
    volume_max_N: TestbedPoint = (2.3, 2.3, 2.3)
    beacon_positions_N: tuple[TestbedPoint, ...] = Field(default_factory=_default_beacons)
    beacon_directions_N: tuple[Vec3, ...] | None = Field(None, description="None: each points at the centre")
    max_tx_angle_deg: float = Field(90.0, gt=0, le=180, description="MAX_TX_ANGLE of the listing")
    speed_of_sound_mps: float = Field(344.54, gt=0, description="sqrt(1.40*287*(22.3+273.14)) of the listing")
    ir_period_s: PeriodS = Field(0.153, gt=0, description="IR_PERIOD: a transmit cycle every 153 ms")
    first_beacon_delay_s: TimeS = Field(0.005, ge=0, description="5 ms after the IR pulse")
    beacon_spacing_s: PeriodS = Field(0.020, gt=0, description="20 ms between beacons")
    range_noise_m: float = Field(0.0, ge=0, description="1-sigma per range; corrected ranges are good to 3 mm")

    @property
    def n_beacons(self) -> int:
        return len(self.beacon_positions_N)

    @property
    def delivery_delay_s(self) -> float:
        """Ranges reach the vehicle this long after the cycle start: 5 + 20 * 5 = 105 ms."""
        return self.first_beacon_delay_s + self.beacon_spacing_s * self.n_beacons

    def directions(self) -> tuple[Vec3, ...]:
        """Unit pointing direction of every beacon (N)."""
        if self.beacon_directions_N is not None:
            dirs = self.beacon_directions_N
        else:
            c = [(lo + hi) / 2 for lo, hi in zip(self.volume_min_N, self.volume_max_N)]
            dirs = tuple(tuple(c[k] - p[k] for k in range(3)) for p in self.beacon_positions_N)
        out = []
        for d in dirs:
            n = math.sqrt(sum(x * x for x in d))
            out.append(tuple(x / n for x in d))
        return tuple(out)

    def with_overrides(self, overrides: dict[str, Any] | None) -> TestbedParams:
        return _apply_overrides(self, overrides)


# --------------------------------------------------------------------------- vehicle types
def _six_dof() -> SpheresParams:
    return SpheresParams(vehicle_type="spheres_6dof")


def _air_table() -> SpheresParams:
    """The prototype on its air carriage (Table 2.2, ONE_G): 3 DOF, body z vertical."""
    return SpheresParams(
        vehicle_type="spheres_air_table",
        mass=MassProperties(mass_kg=5.5299, inertia_diag_kgm2=(0.0204, 0.0170, 0.0311)),
        thrusters=ThrusterParams(planar=True),
        imu=ImuParams(gravity_mps2=G0),
    )


VEHICLE_TYPES = {"spheres_6dof": _six_dof, "spheres_air_table": _air_table}


def vehicle_params(vehicle_type: str = "spheres_6dof", overrides: dict[str, Any] | None = None) -> SpheresParams:
    """The parameter set of a named vehicle type, with dotted-key overrides."""
    try:
        base = VEHICLE_TYPES[vehicle_type]()
    except KeyError:
        raise ValueError(
            f"unknown SPHERES vehicle type {vehicle_type!r}; choose one of {', '.join(sorted(VEHICLE_TYPES))}"
        ) from None
    return base.with_overrides(overrides)


def flatten_overrides(overrides: dict[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """Overrides as dotted keys: ``{"thrusters": {"pressure_psig": 40}}`` and
    ``{"thrusters.pressure_psig": 40}`` are the same override. A key given twice (once in each
    form) is a ValueError naming it."""
    flat: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        path = f"{prefix}{key}"
        items = flatten_overrides(value, path + ".") if isinstance(value, dict) and value else {path: value}
        for k, v in items.items():
            if k in flat:
                raise ValueError(f"{k} is given twice")
            flat[k] = v
    return flat


def _apply_overrides(model: BaseModel, overrides: dict[str, Any] | None, name: str = ""):
    """``model`` with ``overrides`` (dotted keys, or nested dicts) applied and validated; a
    ValueError naming the full path of the first bad one otherwise (``name`` is put before it)."""
    if not overrides:
        return model
    where = f"{name}." if name else ""
    nested: dict[str, dict[str, Any]] = {}
    flat: dict[str, Any] = {}
    for key, value in flatten_overrides(overrides).items():
        head, _, rest = key.partition(".")
        fields = type(model).model_fields
        if head not in fields:
            raise ValueError(
                f"{where + head}: there is no parameter {head!r} in {type(model).__name__}; it has {', '.join(fields)}"
            )
        group = getattr(model, head)
        if isinstance(group, BaseModel):
            if not rest:
                raise ValueError(
                    f"{where + head} is a group of parameters ({', '.join(type(group).model_fields)}): "
                    f"set one of them, e.g. {where + head}.{next(iter(type(group).model_fields))}=..."
                )
            nested.setdefault(head, {})[rest] = value
        elif rest:
            raise ValueError(f"{where + head} is one parameter, not a group: it has no {rest!r}")
        else:
            flat[head] = value
    data = model.model_dump()
    data.update(flat)
    for head, sub in nested.items():
        data[head] = _apply_overrides(getattr(model, head), sub, where + head).model_dump()
    try:
        return type(model).model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        path = where + ".".join(map(str, e["loc"]))
        msg = e["msg"].removeprefix("Value error, ")
        raise ValueError(f"{path}: {msg} (got {e.get('input')!r})") from None
