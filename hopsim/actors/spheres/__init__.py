"""The MIT SPHERES simulator (seed 001) as hopsim actors.

- :mod:`params`: the versioned parameter set of each vehicle type and of the test bed.
- :mod:`thrusters` (with :mod:`valves`): 12 cold-gas thrusters, valve delays, propellant.
- :mod:`imu`, :mod:`global_metrology`: inertial sensors and ultrasound time-of-flight ranges.
- :mod:`radio`, :mod:`packets`, :mod:`ground_station`: token-ring channels, frames, the laptop.
- :mod:`flight_software` (with :mod:`propulsion`, :mod:`control`, :mod:`mixer`,
  :mod:`estimator`, :mod:`pose_solver`, :mod:`thrust_prediction`, :mod:`programs`): the
  Standard Control Interface and the sample runs' guest code.
- :mod:`assembly`: a vehicle's island, the radio channels and the laptop, wired together.
"""

from hopsim.actors.spheres.assembly import SpheresVehicle, add_comm, add_vehicle
from hopsim.actors.spheres.flight_software import SpheresFlightSoftware
from hopsim.actors.spheres.global_metrology import GlobalMetrologySimulator
from hopsim.actors.spheres.ground_station import GroundStation
from hopsim.actors.spheres.imu import ImuSimulator
from hopsim.actors.spheres.params import SpheresParams, TestbedParams, vehicle_params
from hopsim.actors.spheres.radio import RadioChannel
from hopsim.actors.spheres.thrusters import ThrusterSimulator

__all__ = [
    "GlobalMetrologySimulator",
    "GroundStation",
    "ImuSimulator",
    "RadioChannel",
    "SpheresFlightSoftware",
    "SpheresParams",
    "SpheresVehicle",
    "TestbedParams",
    "ThrusterSimulator",
    "add_comm",
    "add_vehicle",
    "vehicle_params",
]
