"""Welds: docked vehicles as one rigid composite, a *primary* and its *followers*.

A vehicle model that can dock (:class:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics`,
:class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`) mixes in :class:`Weldable`, which
keeps who is welded to whom and where. The primary integrates the composite; a follower's state
rides on it kinematically (:func:`hopsim.dynamics.contact.welded_follower_state` and
:func:`hopsim.dynamics.weld.welded_follower_derivative`). Welds are made and broken at barriers
only (by :class:`hopsim.actors.contact.ContactWorld`), never inside a hop.

A weldable model provides, besides its state ``x`` (whose first 13 entries are ``r_BN_N``,
``v_BN_N``, ``q_BN``, ``omega_BN_B`` of its origin B): ``mass_kg`` (kg), ``inertia_C_B``
(kg m^2, its whole inertia about its centre of mass, B axes) and ``r_CB_B`` (m, its centre of mass
from B, in B).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopsim.dynamics.contact import composite_mass_properties, welded_follower_state
from hopsim.dynamics.spatial import quat_normalize, quat_to_dcm


@dataclass(eq=False)
class Weld:
    """A follower fixed to a primary: its origin at ``r_FP_P`` (m, in P), attitude ``q_FP``."""

    follower: Weldable
    r_FP_P: np.ndarray
    q_FP: np.ndarray

    @property
    def R_PF(self) -> np.ndarray:
        """Maps the follower's body components to the primary's."""
        return quat_to_dcm(self.q_FP)


class Weldable:
    """Who a vehicle is welded to (see the module). Call :meth:`_init_welds` in ``__init__`` and
    list ``_welds`` and ``_primary_weld`` among the model's framework attributes (links between
    models, not snapshot state)."""

    # set by _init_welds
    _welds: list[Weld]
    _primary: Weldable | None
    _primary_weld: Weld | None

    def _init_welds(self) -> None:
        self._welds = []  # followers welded to this vehicle (primary)
        self._primary = None
        self._primary_weld = None  # this vehicle's weld, when it is a follower

    @property
    def primary(self) -> Weldable | None:
        """The vehicle this one is welded to (None when free or itself a primary)."""
        return self._primary

    @property
    def followers(self) -> list[Weldable]:
        """The vehicles welded to this one (it is their primary), in welding order."""
        return [w.follower for w in self._welds]

    def weld(self, follower: Weldable, r_FP_P, q_FP) -> None:
        """Fix ``follower`` to this vehicle at ``r_FP_P`` (m, in this body's frame) with attitude
        ``q_FP`` relative to it; velocities must already be on one rigid field (set this vehicle's
        state to the composite's first: :func:`hopsim.dynamics.contact.weld_state`)."""
        if follower is self or follower._primary is not None or follower._welds or self._primary is not None:
            raise ValueError(f"cannot weld {follower.name} to {self.name}: weld free vehicles to a primary")
        follower.check_weldable_follower()
        w = Weld(follower, np.asarray(r_FP_P, dtype=float), quat_normalize(np.asarray(q_FP, dtype=float)))
        self._welds.append(w)
        follower._primary, follower._primary_weld = self, w
        follower.x[0:13] = welded_follower_state(self.x[0:13], w.r_FP_P, w.q_FP)

    def check_weldable_follower(self) -> None:
        """Raise ValueError if this vehicle cannot ride on another one as a follower."""

    def unweld(self, follower: Weldable) -> None:
        """Free ``follower``: it keeps its current state (on the composite's velocity field)."""
        self._welds = [w for w in self._welds if w.follower is not follower]
        follower._primary = follower._primary_weld = None

    def composite(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(mass kg, inertia about the composite's centre of mass in this body's frame kg m^2,
        that centre of mass from this body's origin in this frame m) of this vehicle and
        everything welded to it."""
        M, I_C, r_C = self.mass_kg, self.inertia_C_B, self.r_CB_B
        for w in self._welds:
            f = w.follower
            M, I_C, r_C = composite_mass_properties(M, I_C, r_C, f.mass_kg, f.inertia_C_B, f.r_CB_B, w.r_FP_P, w.R_PF)
        return M, I_C, r_C

    def place_followers(self) -> None:
        """Put every follower exactly back on this (primary) vehicle's composite."""
        for w in self._welds:
            w.follower.x[0:13] = welded_follower_state(self.x[0:13], w.r_FP_P, w.q_FP)


__all__ = ["Weld", "Weldable"]
