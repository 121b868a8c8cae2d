"""Numerics of hopsim: rigid bodies, articulated multibody trees, integrators, profiles.

This subpackage imports nothing else of hopsim. Conventions (see DESIGN.md):

* SI units; names ``r_BN_N`` = position of B relative to N, expressed in N.
* Attitude quaternions are scalar-last ``(x, y, z, w)``, normalized with ``w >= 0``;
  ``R(q_BN)`` maps body components to inertial ones, ``v_N = R(q_BN) v_B``.
* Spatial vectors are angular first, then linear: velocity ``[omega; v]``,
  force ``[moment; force]``.
* Inertia tensors are positive definite (products of inertia as they appear in the tensor).
"""

from hopsim.dynamics.algorithms import (
    aba,
    aba_batch,
    center_of_mass,
    composite_body_inertias,
    configuration_rate,
    crba,
    forward_kinematics,
    frame_jacobian,
    hybrid_dynamics,
    jacobian_transpose_times,
    joint_reaction_forces,
    kinetic_energy,
    mass_properties,
    minv,
    normalize_configuration,
    rnea,
    spatial_momentum,
    state_derivative,
    station_jacobian,
)
from hopsim.dynamics.constraints import (
    Closures,
    closure_jacobian,
    closure_residual,
    closure_wrenches,
    constrained_rk4,
    constrained_state_derivative,
    constraint_dynamics,
    project_configuration,
    project_velocity,
)
from hopsim.dynamics.convex import ConvexShape, collide, penalty_force, penalty_wrenches
from hopsim.dynamics.integrators import (
    DOP853,
    RK4,
    DormandPrince54,
    Euler,
    IntegratorStats,
    StepSizeError,
    make_integrator,
)
from hopsim.dynamics.profiles import MoveProfile, ProfileTiming, profile_timing, rotation_profile, translation_profile
from hopsim.dynamics.rigid_body import (
    pack_state,
    rigid_body_derivative,
    rigid_body_derivatives_batch,
    rigid_body_kinetic_energy,
    rigid_body_momentum,
    rigid_body_rk4_step,
    rigid_body_rk4_step_batch,
)
from hopsim.dynamics.topology import attach_subtree, detach_subtree
from hopsim.dynamics.tree import MultibodyTree, Pose, TreeArrays, pose

__all__ = [
    "DOP853",
    "RK4",
    "Closures",
    "ConvexShape",
    "DormandPrince54",
    "Euler",
    "IntegratorStats",
    "MoveProfile",
    "MultibodyTree",
    "Pose",
    "ProfileTiming",
    "StepSizeError",
    "TreeArrays",
    "aba",
    "aba_batch",
    "attach_subtree",
    "center_of_mass",
    "closure_jacobian",
    "closure_residual",
    "closure_wrenches",
    "collide",
    "composite_body_inertias",
    "configuration_rate",
    "constrained_rk4",
    "constrained_state_derivative",
    "constraint_dynamics",
    "crba",
    "detach_subtree",
    "forward_kinematics",
    "frame_jacobian",
    "hybrid_dynamics",
    "jacobian_transpose_times",
    "joint_reaction_forces",
    "kinetic_energy",
    "make_integrator",
    "mass_properties",
    "minv",
    "normalize_configuration",
    "pack_state",
    "penalty_force",
    "penalty_wrenches",
    "pose",
    "profile_timing",
    "project_configuration",
    "project_velocity",
    "rigid_body_derivative",
    "rigid_body_derivatives_batch",
    "rigid_body_kinetic_energy",
    "rigid_body_momentum",
    "rigid_body_rk4_step",
    "rigid_body_rk4_step_batch",
    "rnea",
    "rotation_profile",
    "spatial_momentum",
    "state_derivative",
    "station_jacobian",
    "translation_profile",
]
