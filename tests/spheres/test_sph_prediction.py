"""The flight software's thrust prediction and valve timeline: batched and incremental forms agree."""

import numpy as np
from test_sph_helpers import MS

from hopsim.actors.spheres.params import vehicle_params
from hopsim.actors.spheres.thrust_prediction import ThrustPredictor
from hopsim.actors.spheres.valves import ValveTimeline

COMMANDS = [  # (t_ns, mask, on-times in ns)
    (0, 0b000000000011, [40 * MS, 25 * MS] + [0] * 10),
    (30 * MS, 0b000000110000, [0] * 4 + [100 * MS, 3 * MS] + [0] * 6),
    (200 * MS, 0b100000000001, [60 * MS] + [0] * 10 + [150 * MS]),
    (260 * MS, 0b100000000001, [60 * MS] + [0] * 10 + [150 * MS]),
]


def _predictor(commands):
    pred = ThrustPredictor(vehicle_params("spheres_6dof"))
    for t, mask, on_times in commands:
        pred.command(t, mask, on_times)
    return pred


def test_impulse_moment_many_matches_one_interval_at_a_time():
    edges = [0, 7 * MS, 18 * MS, 36 * MS, 54 * MS, 90 * MS, 135 * MS, 230 * MS, 280 * MS, 400 * MS]
    a, b = edges[:-1], edges[1:]
    I_many, M_many = _predictor(COMMANDS).impulse_moment_many(a, b)
    one = _predictor(COMMANDS)
    for k, (a_k, b_k) in enumerate(zip(a, b)):
        I, M = one.impulse_moment(a_k, b_k)
        np.testing.assert_allclose(I_many[k], I, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(M_many[k], M, rtol=1e-12, atol=1e-18)
    assert np.abs(I_many).sum() > 0.0


def test_repeated_command_keeps_the_planned_transitions():
    once, twice = ValveTimeline(6 * MS, 0), ValveTimeline(6 * MS, 0)
    once.command(0, 0b11, None)
    twice.command(0, 0b11, None)
    twice.command(3 * MS, 0b11, None)
    assert once.planned() == twice.planned() == [(6 * MS, 0, True), (6 * MS, 1, True)]
