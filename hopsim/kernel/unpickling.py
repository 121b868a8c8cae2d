"""Objects that stay fast after unpickling.

Pickle restores an object by filling its ``__dict__`` at once. In CPython 3.11+ that turns the
object's attributes from inline values into an ordinary dict, and every attribute read on it
then misses the interpreter's fastest path: islands shipped to a Ray host ran about 25% slower
than the same islands built in place. Setting the attributes one by one keeps them inline.

A class with more attributes than CPython keeps inline (30) has an ordinary dict from its 31st
on, however it was made; the kernel's busiest such classes (:class:`~hopsim.kernel.slot.Slot`,
:class:`~hopsim.kernel.island.Island`, :class:`~hopsim.kernel.executive.Simulation`) declare
``__slots__`` instead, and pickle gives their state as a pair (the ``__dict__`` part, the
``__slots__`` part), which :func:`set_attributes` takes too.
"""

from __future__ import annotations


def set_attributes(obj, state: dict | tuple) -> None:
    """Give ``obj`` the attributes in ``state`` one by one (``__dict__`` is left untouched):
    a dict, or pickle's pair for a class with ``__slots__`` (either part may be None)."""
    set_attribute = object.__setattr__
    for part in state if isinstance(state, tuple) else (state,):
        for name, value in (part or {}).items():
            set_attribute(obj, name, value)


class InlineAttributes:
    """Mixin: unpickling (and ``copy``) restores attributes one by one, keeping them inline."""

    __slots__ = ()  # a subclass without __slots__ has its __dict__ as usual

    def __setstate__(self, state: dict | tuple) -> None:
        set_attributes(self, state)
