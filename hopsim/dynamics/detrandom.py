"""Random draws that give the same bits on every CPU.

numpy's ``Generator.random`` turns 53 bits of its bit generator into a float by integer
arithmetic and one exact multiplication: the same on every machine. Its ``standard_normal``
does not quite: the ziggurat's rare tail draws (about one in 4,000) are computed with the C
library's ``log1p``, whose last bit depends on the CPU, and ``multivariate_normal`` factors the
covariance with LAPACK. The draws here take uniform numbers from ``rng.random`` and shape them
with :mod:`hopsim.dynamics.detmath` and :mod:`hopsim.dynamics.detlinalg` only.

Normal numbers come from the Box-Muller transform: two uniform numbers ``u1`` in (0, 1] and
``u2`` in [0, 1) give ``sqrt(-2 log u1) cos(2 pi u2)`` and ``sqrt(-2 log u1) sin(2 pi u2)``,
in that order. ``n`` normal numbers consume ``2 ceil(n / 2)`` uniform numbers.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics._jit import compiled
from hopsim.dynamics.detlinalg import cholesky_semidefinite, matmul

TWO_PI = 2.0 * math.pi


@compiled
def box_muller(u, out):
    """Fill ``out`` (n values) with standard normal numbers shaped from ``u`` (``2 ceil(n/2)``
    uniform numbers in [0, 1))."""
    n = out.shape[0]
    for k in range((n + 1) // 2):
        radius = math.sqrt(-2.0 * detmath.log(1.0 - u[2 * k]))
        angle = TWO_PI * u[2 * k + 1]
        out[2 * k] = radius * detmath.cos(angle)
        if 2 * k + 1 < n:
            out[2 * k + 1] = radius * detmath.sin(angle)


def standard_normal(rng: np.random.Generator, size=None):
    """Standard normal numbers from ``rng``: one float (``size`` None) or an array of ``size``."""
    if size is None:
        shape, n = None, 1
    elif isinstance(size, (int, np.integer)):
        shape, n = (int(size),), int(size)
    else:
        shape = tuple(int(k) for k in size)
        n = math.prod(shape)
    out = np.empty(n)
    if n:
        box_muller(rng.random(2 * ((n + 1) // 2)), out)
    if shape is None:
        return float(out[0])
    return out if len(shape) == 1 else out.reshape(shape)


def normal(rng: np.random.Generator, loc=0.0, scale=1.0, size=None):
    """Normal numbers of mean ``loc`` and standard deviation ``scale`` (``loc + scale * z``)."""
    if size is None and np.ndim(loc) == 0 and np.ndim(scale) == 0:
        return float(loc) + float(scale) * standard_normal(rng)
    if size is None:
        size = np.broadcast_shapes(np.shape(loc), np.shape(scale))
    return np.asarray(loc, dtype=float) + np.asarray(scale, dtype=float) * standard_normal(rng, size)


def multivariate_normal(rng: np.random.Generator, mean, cov) -> np.ndarray:
    """One vector from the normal distribution of ``mean`` and covariance ``cov`` (positive
    semi-definite): ``mean + L z`` with ``L = cholesky_semidefinite(cov)`` and ``z`` standard normal."""
    mean = np.asarray(mean, dtype=float)
    L = cholesky_semidefinite(np.ascontiguousarray(cov, dtype=float))
    return mean + matmul(L, standard_normal(rng, mean.shape[0]))
