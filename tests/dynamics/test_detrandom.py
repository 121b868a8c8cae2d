"""hopsim.dynamics.detrandom: the Box-Muller draws are standard normal (checked against SciPy's
distribution), consume the documented number of uniform numbers, and take their bits from the
generator's exact uniform numbers only."""

import math

import numpy as np
from scipy import stats

from hopsim.dynamics import detmath, detrandom


def test_draws_are_standard_normal():
    z = detrandom.standard_normal(np.random.default_rng(5), 200_000)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    assert stats.normaltest(z).pvalue > 1e-3


def test_each_pair_is_box_muller_of_two_uniform_numbers():
    rng, twin = np.random.default_rng(9), np.random.default_rng(9)
    z = detrandom.standard_normal(rng, 5)
    u = twin.random(6)  # 5 draws consume 2 * ceil(5 / 2) uniform numbers
    for k in range(3):
        r = math.sqrt(-2.0 * detmath.log(1.0 - u[2 * k]))
        assert z[2 * k] == r * detmath.cos(2.0 * math.pi * u[2 * k + 1])
        if 2 * k + 1 < 5:
            assert z[2 * k + 1] == r * detmath.sin(2.0 * math.pi * u[2 * k + 1])
    assert rng.random() == twin.random()  # both generators are at the same place


def test_shapes_scalars_and_scaling():
    rng = np.random.default_rng(1)
    assert isinstance(detrandom.standard_normal(rng), float)
    assert detrandom.standard_normal(rng, (4, 3)).shape == (4, 3)
    assert detrandom.normal(rng, [1.0, 2.0], 0.0).tolist() == [1.0, 2.0]
    a, b = np.random.default_rng(2), np.random.default_rng(2)
    assert detrandom.normal(a, 3.0, 2.0) == 3.0 + 2.0 * detrandom.standard_normal(b)


def test_multivariate_draws_have_the_asked_covariance():
    rng = np.random.default_rng(3)
    cov = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    x = np.array([detrandom.multivariate_normal(rng, [1.0, -1.0, 5.0], cov) for _ in range(40_000)])
    assert np.allclose(np.cov(x.T), cov, atol=0.05) and np.all(x[:, 2] == 5.0)
    assert np.allclose(x.mean(axis=0), [1.0, -1.0, 5.0], atol=0.03)
