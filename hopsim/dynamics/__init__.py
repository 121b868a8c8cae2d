"""Numerics of hopsim: rigid bodies, articulated multibody trees, integrators, profiles.

This subpackage imports nothing else of hopsim. Conventions (see DESIGN.md):

* SI units; names ``r_BN_N`` = position of B relative to N, expressed in N.
* Attitude quaternions are scalar-last ``(x, y, z, w)``, normalized with ``w >= 0``;
  ``R(q_BN)`` maps body components to inertial ones, ``v_N = R(q_BN) v_B``.
* Spatial vectors are angular first, then linear: velocity ``[omega; v]``,
  force ``[moment; force]``.
* Inertia tensors are positive definite (products of inertia as they appear in the tensor).
"""
