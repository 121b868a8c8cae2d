"""How faults reach models: the queue each model listens on, and the fault every model accepts.

A fault is an ordinary bus message (:class:`hopsim.schemas.Fault`) on ``faults/<model>``; the
kernel hands it to the model's ``on_fault`` at the barrier where it arrives, except ``kill``,
which the kernel carries out itself (the actor's process dies).
"""

from __future__ import annotations

from hopsim.kernel.bounds import (
    MAX_FAULT_VALUE,
    MAX_FORCE_N,
    MAX_TIME_S,
    MAX_TORQUE_NM,
    check_magnitude,
    check_time_s,
)

FAULT_PORT = "__faults__"  # the hidden input on which a model receives its faults
KILL = "kill"  # the fault every model accepts: its process dies
# the longest time a fault may give (its duration_s, a radio delay), in s: about 32 years, beyond
# any run, and in nanoseconds added to any instant still far inside the kernel's 64-bit times
MAX_FAULT_TIME_S = MAX_TIME_S


def fault_topic(model_name: str) -> str:
    """The queue on which a model receives its faults."""
    return f"faults/{model_name}"


# every field of a Fault message a model may read, beside ``target`` and ``kind``
FAULT_FIELDS = {
    "index": "which unit: thruster 0..11, sensor axis; -1 for all",
    "value": "the magnitude: a scale, a bias, a probability or a delay (s), by kind",
    "duration_s": "how long it lasts (s); 0 until cleared",
    "vehicles": "the vehicles on one side of a radio partition",
    "force_N": "disturbance force (N, inertial frame N)",
    "torque_B": "disturbance torque about the centre of mass (N m, body frame B)",
    "clear": "end this kind of fault instead of starting one",
}


def fault_kinds(model_cls) -> dict[str, tuple[str, ...]]:
    """The fault kinds a model class accepts, each with the Fault fields it reads (``kill``, which
    every model accepts, reads none). A class may list kinds only (a tuple): then each reads every
    field, as far as anyone can tell."""
    accepts = model_cls.accepts_faults
    if isinstance(accepts, dict):
        kinds = {kind: tuple(fields) for kind, fields in accepts.items()}
    else:
        kinds = {kind: tuple(FAULT_FIELDS) for kind in accepts}
    kinds[KILL] = ()
    return kinds


def check_payload(fault) -> None:
    """Raise ValueError naming the fault and the field unless every number of ``fault`` lies
    within its bound (:mod:`hopsim.kernel.bounds`): its value, its duration, each axis of its
    force and torque. ``fault`` is a :class:`hopsim.schemas.Fault` or a
    :class:`~hopsim.scenarios.registry.FaultSpec`: the one check of both."""
    what = f"fault {fault.kind!r} on {fault.target!r}:"
    check_magnitude(fault.value, MAX_FAULT_VALUE, "", f"{what} value")
    check_time_s(fault.duration_s, f"{what} duration_s")
    for field, bound, unit in (("force_N", MAX_FORCE_N, " N"), ("torque_B", MAX_TORQUE_NM, " N m")):
        v = getattr(fault, field)
        xyz = (v.x, v.y, v.z) if hasattr(v, "x") else tuple(v)
        for axis, component in zip("xyz", xyz):
            check_magnitude(component, bound, unit, f"{what} {field}.{axis}")
