"""The fast paths of the formation actors and of the vehicle dynamics give, bit for bit, what the
plain code gives: messages built from their wire format, block draws of the sensor noise, the
quaternion fix folded into the single-vehicle compiled hop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hopsim.actors.formation import StateSensor
from hopsim.actors.messages import (
    STATE_WIRE_SIZE,
    _encode_state,
    inertial_force,
    position_velocity_state,
    vehicle_state,
)
from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.dynamics import detrandom
from hopsim.kernel.model import ModelContext, model_rng
from hopsim.schemas import VehicleState, Wrench

SPECIALS = [0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan, 5e-324, -1e308]


def _values(rng: np.random.Generator, n: int) -> list[float]:
    """n doubles, about a third of them special (zeros of both signs, infinities, nan, denormal)."""
    v = rng.standard_normal(n).tolist()
    for i in range(n):
        if rng.random() < 0.35:
            v[i] = SPECIALS[rng.integers(len(SPECIALS))]
    return v


def _fields(msg, name, values) -> None:
    """Set a sub-message's fields one by one (the plain way)."""
    sub = getattr(msg, name)
    for f, v in zip("xyzw", values):
        setattr(sub, f, v)


def _same(a, b) -> bool:
    return a.SerializeToString() == b.SerializeToString() and a.SerializeToString(
        deterministic=True
    ) == b.SerializeToString(deterministic=True)


def test_vehicle_state_is_the_message_set_field_by_field():
    rng = np.random.default_rng(7)
    for k in range(500):
        x, xd = _values(rng, 13), _values(rng, 13)
        mass = [50.0, 0.0, -0.0, 4.2][k % 4]
        t_ns = int(rng.integers(0, 2**62)) if k % 5 else 0
        plain = VehicleState(vehicle=f"v{k}", t_ns=t_ns, mass=mass)
        _fields(plain, "r_BN_N", x[0:3])
        _fields(plain, "v_BN_N", x[3:6])
        _fields(plain, "q_BN", x[6:10])
        _fields(plain, "omega_BN_B", x[10:13])
        _fields(plain, "a_BN_N", xd[3:6])
        _fields(plain, "omega_dot_BN_B", xd[10:13])
        assert _same(vehicle_state(f"v{k}", t_ns, x, xd, mass), plain)
        wire = np.zeros(STATE_WIRE_SIZE, dtype=np.uint8)
        _encode_state(np.array(x), np.array(xd), mass, wire)
        encoded = VehicleState.FromString(wire.tobytes())
        encoded.vehicle, encoded.t_ns = f"v{k}", t_ns
        assert _same(encoded, plain)


def test_position_velocity_state_is_the_message_set_field_by_field():
    rng = np.random.default_rng(8)
    for k in range(500):
        y = _values(rng, 7)
        plain = VehicleState(vehicle="v03", t_ns=1000 * k, mass=y[6])
        _fields(plain, "r_BN_N", y[0:3])
        _fields(plain, "v_BN_N", y[3:6])
        built = position_velocity_state("v03", 1000 * k, *y)
        assert _same(built, plain)
        assert built.HasField("r_BN_N") and built.HasField("v_BN_N") and not built.HasField("q_BN")


def test_inertial_force_is_the_wrench_set_field_by_field():
    rng = np.random.default_rng(9)
    for _ in range(500):
        f = _values(rng, 3)
        plain = Wrench(body="v12", frame=Wrench.INERTIAL)
        _fields(plain, "force", f)
        built = inertial_force("v12", *f)
        assert _same(built, plain)
        assert built.HasField("force") and not built.HasField("torque")


class _Body:
    """What a StateSensor reads of its dynamics actor."""

    def __init__(self):
        self.name, self.mass_kg, self.x = "v00", 50.0, np.zeros(13)


def _sensor(seed: int) -> StateSensor:
    s = StateSensor("v00_nav", _Body(), 1.0, position_noise_m=0.01, velocity_noise_mps=0.0005)
    s.bind(ModelContext("v00_nav", "v00", seed, model_rng(seed, "v00_nav"), {}))
    return s


def _sample(s: StateSensor, t_ns: int, x: np.ndarray) -> VehicleState:
    s.body.x[:] = x
    s._may_write = True
    s.update_flow_outs(t_ns)
    s._may_write = False
    msg = s._outbox.pop()[1]
    s._outbox.clear()
    return msg


def test_sensor_noise_is_one_draw_of_six_per_sample_across_blocks_and_restores():
    seed = 11
    sensor = _sensor(seed)
    reference = model_rng(seed, "v00_nav")  # what the sensor's generator gives sample by sample
    sigma = np.array([0.01] * 3 + [0.0005] * 3)
    truth = np.random.default_rng(0).standard_normal((3 * StateSensor.NOISE_BLOCK + 5, 13))
    snap, first = None, []
    for k, x in enumerate(truth):
        if k == StateSensor.NOISE_BLOCK + 3:
            snap = (k, sensor.snapshot())  # in the middle of the second block
        y = x[0:6].copy()
        y += sigma * detrandom.standard_normal(reference, 6)
        msg = _sample(sensor, k * 10**9, x)
        r, v = msg.r_BN_N, msg.v_BN_N
        assert [r.x, r.y, r.z, v.x, v.y, v.z] == y.tolist()  # bit for bit
        if snap is not None:
            first.append(msg.SerializeToString())
    # back to the middle of a block: the same noise again
    k0, state = snap
    sensor.restore(state)
    again = [_sample(sensor, k * 10**9, truth[k]).SerializeToString() for k in range(k0, len(truth))]
    assert first == again


@pytest.mark.parametrize("steps", [(0.5,), (0.25, 0.25, 0.5)])
def test_single_hop_with_its_quaternion_fix_matches_the_batch_hop_and_end_hop(steps):
    def body(name):
        b = RigidVehicleDynamics(
            name,
            4.2,
            np.diag([0.0229, 0.0242, 0.0214]),
            r_CB_B=(0.01, -0.02, 0.005),
            r_BN_N=(1.0, 2.0, 3.0),
            v_BN_N=(0.1, -0.2, 0.3),
            q_BN=(0.1, 0.2, 0.3, 0.9),
            omega_BN_B=(0.3, -0.5, 0.7),
        )
        b.x, b.xdot = b.initial_state(), np.zeros(13)
        return b

    single, batched, other = body("a"), body("b"), body("c")
    for k in range(20):
        for b in (single, batched, other):
            b.start_hop(0, 1)
            b.add_force_N(np.array([0.3, -0.1, 0.2 * k]), point_B=None)
            b.add_force_B(np.array([0.05, 0.02, -0.01]), point_B=np.array([0.1, 0.0, 0.05]))
            b.add_torque_B(np.array([0.001, -0.002, 0.0005 * k]))
        RigidVehicleDynamics.propagate_hop([single], steps)
        RigidVehicleDynamics.propagate_hop([batched, other], steps)
        for b in (single, batched, other):
            b.end_hop(0, 1)
        assert single.x.tobytes() == batched.x.tobytes()
        assert single.xdot.tobytes() == batched.xdot.tobytes()
        assert single.xdot_last.tobytes() == batched.xdot_last.tobytes()
        assert not single._quat_fixed
