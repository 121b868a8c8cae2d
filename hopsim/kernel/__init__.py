"""The hop executive: models, islands, barriers, hops, events, zero-crossings and runtimes."""

from hopsim.kernel.errors import CausalityError
from hopsim.kernel.events import TimedEvent
from hopsim.kernel.executive import Simulation, Tie
from hopsim.kernel.fsm import FSM
from hopsim.kernel.island import Island
from hopsim.kernel.model import ContinuousModel, DefaultRate, FixedRate, Memo, Model, ModelContext, NoIo, VariableRate
from hopsim.kernel.ordering import AlgebraicLoopError
from hopsim.kernel.ports import In, Out
from hopsim.kernel.runtime import LocalRuntime
from hopsim.kernel.simtime import NS_PER_S, PeriodicSchedule, seconds, to_seconds
from hopsim.kernel.zero_crossing import ZeroCrossing

__all__ = [
    "FSM",
    "NS_PER_S",
    "AlgebraicLoopError",
    "CausalityError",
    "ContinuousModel",
    "DefaultRate",
    "FixedRate",
    "In",
    "Island",
    "LocalRuntime",
    "Memo",
    "Model",
    "ModelContext",
    "NoIo",
    "Out",
    "PeriodicSchedule",
    "Simulation",
    "Tie",
    "TimedEvent",
    "VariableRate",
    "ZeroCrossing",
    "seconds",
    "to_seconds",
]
