"""The versioned parameter sets: the seed's values, overrides, validation."""

import math

import pytest

from hopsim.actors.spheres.params import PARAMS_VERSION, TestbedParams, vehicle_params


def test_vehicle_types_carry_the_seeds_mass_properties_and_a_version():
    six = vehicle_params("spheres_6dof")
    table = vehicle_params("spheres_air_table")
    assert (six.mass.mass_kg, six.mass.inertia_diag_kgm2) == (3.4447, (0.0204, 0.0170, 0.0190))
    assert (table.mass.mass_kg, table.mass.inertia_diag_kgm2[2]) == (5.5299, 0.0311)
    assert table.thrusters.planar and not six.thrusters.planar
    assert six.version == table.version == PARAMS_VERSION


def test_derived_values_follow_the_seed():
    p = vehicle_params()
    assert p.imu.gyro_noise_rms_rad_s == pytest.approx(math.radians(0.5))
    assert p.imu.accel_noise_rms_mps2 == pytest.approx(201.0e-6 * 9.80665, rel=1e-3)
    tb = TestbedParams()
    assert tb.delivery_delay_s == pytest.approx(0.105)
    assert tb.speed_of_sound_mps == pytest.approx(math.sqrt(1.40 * 287 * (22.3 + 273.14)), abs=0.01)
    for d in tb.directions():
        assert math.isclose(sum(x * x for x in d), 1.0)


def test_dotted_overrides_are_validated():
    p = vehicle_params("spheres_6dof", {"thrusters.pressure_psig": 30, "imu.noise_on": True})
    assert p.thrusters.thrust_N == pytest.approx(0.0033 * 30 - 0.0049)
    assert p.imu.noise_on and p.mass.mass_kg == 3.4447
    with pytest.raises(ValueError, match="no parameter 'thrusterz'"):
        vehicle_params("spheres_6dof", {"thrusterz.pressure_psig": 30})
    with pytest.raises(ValueError):
        vehicle_params("spheres_6dof", {"thrusters.pressure_psig": 80})  # regulator limit
    with pytest.raises(ValueError, match="12"):
        vehicle_params("spheres_6dof", {"thrusters.thrust_override_N": [0.1] * 11})
    with pytest.raises(ValueError, match="spheres_6dof"):
        vehicle_params("spheres_moon")
    tb = TestbedParams().with_overrides({"speed_of_sound_mps": 340.0})
    assert tb.speed_of_sound_mps == 340.0
