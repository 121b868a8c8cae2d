"""Fuzz tests of two entry points a user's text reaches: campaign files and live commands.

- A campaign file (TOML), written from random tables of keys and values or a documented campaign
  with random changes, either loads as a campaign whose first run's parameters validate, or is
  refused with a ScenarioError carrying one line; nothing else is raised, whatever the content.
- A live client's commands (``fault`` and ``pace`` bodies of random JSON, some near a valid
  fault) are each answered, by their result or a one-line ValueError, and the run goes on to its
  end, as the live service relays them (hopsim.bus.live hands a client's JSON object to
  :meth:`Pacer.command`).

``make test`` runs the same examples every time; ``make fuzz`` new ones, more
(``HOPSIM_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import json
import math
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hopsim.scenarios import run_scenario
from hopsim.scenarios.montecarlo import load_campaign
from hopsim.scenarios.pacing import Pacer
from hopsim.scenarios.registry import ScenarioError

FUZZ_EXAMPLES = int(os.environ.get("HOPSIM_FUZZ_EXAMPLES", "50"))


def fuzz(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=FUZZ_EXAMPLES <= 50,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        database=None,
    )


# ------------------------------------------------------------------------------ campaign files
# (DOCUMENTED below is docs/montecarlo.md's campaign)
NAMES = st.sampled_from(
    [
        "scenario",
        "runs",
        "seed",
        "duration_s",
        "parameters",
        "dispersions",
        "retain",
        "same_seed",
        "altitude_m",
        "kind",
        "mean",
        "std",
        "low",
        "high",
        "values",
        "faults",
        "every",
        "outside",
        "lander",
        "formation",
        "n_vehicles",
        "vehicle_overrides.thrusters.pressure_psig",
        "x",
        "é",
    ]
)
SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["lander", "formation", "normal", "uniform", "choice", "grid", "sequence", "mvnormal"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(NAMES, inner, max_size=4)),
    max_leaves=12,
)


def toml_value(v) -> str:
    """A value as TOML text (an inline table for a dict)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_text(table: dict) -> str:
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in table.items())


DOCUMENTED = """scenario = "lander"
runs = 4
seed = 7
duration_s = 60

[parameters]
stop_on_touchdown = true

[dispersions.altitude_m]
kind = "normal"
mean = 100.0
std = 10.0

[dispersions."faults"]
kind = "choice"
values = [[], [{t_s = 5, target = "body", kind = "thrust_scale", value = 0.5}]]

[retain]
failed = true
outside = { touchdown_speed_mps = [0.0, 2.0] }
runs = [0]
"""


def loads_or_refuses(path) -> None:
    try:
        load_campaign(path)
    except ScenarioError as err:
        assert str(err) and "\n" not in str(err).strip(), str(err)


@fuzz(FUZZ_EXAMPLES)
@given(table=st.dictionaries(NAMES, VALUES, max_size=8))
def test_a_campaign_file_of_random_tables_loads_or_is_refused_in_one_line(tmp_path_factory, table):
    path = tmp_path_factory.mktemp("c") / "campaign.toml"
    path.write_text(toml_text(table))
    loads_or_refuses(path)


@fuzz(FUZZ_EXAMPLES)
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=len(DOCUMENTED)), st.text(max_size=6)), min_size=1, max_size=4
    )
)
def test_a_documented_campaign_changed_at_random_loads_or_is_refused_in_one_line(tmp_path_factory, edits):
    text = DOCUMENTED
    for at, inserted in edits:
        text = text[:at] + inserted + text[at + len(inserted) :]
    path = tmp_path_factory.mktemp("c") / "campaign.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    loads_or_refuses(path)


def test_the_documented_campaign_loads():
    """The campaign the fuzz tests change is a valid one (so their changes test the refusals)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "c.toml").write_text(DOCUMENTED)
        campaign = load_campaign(Path(d) / "c.toml")
    assert campaign.runs == 4 and {d.path for d in campaign.dispersions} == {"altitude_m", "faults"}


# ------------------------------------------------------------------------------ live commands
FAULT_FIELDS = {
    "target": st.one_of(st.sampled_from(["body", "altimeter", "controller", "nobody", ""]), st.text(max_size=8)),
    "kind": st.one_of(
        st.sampled_from(["thrust_scale", "disturbance", "sensor_bias", "stuck", "kill", "radio_delay"]),
        st.text(max_size=8),
    ),
    "index": st.one_of(st.integers(min_value=-5, max_value=2**40), st.floats(), st.text(max_size=3)),
    "value": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=3)),
    "duration_s": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-5)),
    "force_N": st.lists(st.one_of(st.floats(), st.integers(), st.text(max_size=2)), max_size=4),
    "torque_B": st.lists(st.floats(allow_nan=True), max_size=4),
    "clear": st.one_of(st.booleans(), st.integers()),
    "t_s": st.floats(),
    "extra": VALUES,
}
FAULT_BODIES = st.one_of(
    st.fixed_dictionaries({}, optional=FAULT_FIELDS),
    st.dictionaries(st.text(max_size=8), VALUES, max_size=5),
)
COMMANDS = st.lists(
    st.one_of(
        st.tuples(st.just("fault"), FAULT_BODIES),
        # paces the run could take are fast ones (a slow one would make the example last): those
        # below [1e-3, 1e6], beyond it, not numbers, and fast valid ones
        st.tuples(
            st.just("pace"),
            st.one_of(
                st.none(),
                st.floats(max_value=1e-3, exclude_max=True),
                st.sampled_from([math.nan, math.inf, -math.inf]),
                st.floats(min_value=1e6, exclude_min=True),
                st.floats(min_value=1e4, max_value=1e6),
                st.text(max_size=4),
                st.lists(st.integers(), max_size=2),
            ),
        ),
        st.tuples(st.sampled_from(["pause", "resume"]), st.none()),
    ),
    min_size=1,
    max_size=12,
)


@fuzz(FUZZ_EXAMPLES)
@given(commands=COMMANDS)
@example(commands=[("pace", 5e-324)])  # deadlines beyond the clock: the sleep overflowed, ending the run
def test_live_commands_of_random_content_are_each_answered_and_the_run_goes_on(commands):
    pacer = Pacer(None)
    answers = []
    for kind, body in [*commands, ("resume", None)]:  # the last: the run is not left paused
        answers.append(pacer.command(kind, body))
    result = run_scenario("lander", duration_s=2.0, pacer=pacer)
    assert result.end_time_s > 0
    for future in answers:
        assert future.done()
        err = future.exception()
        assert err is None or (isinstance(err, ValueError) and str(err) and "\n" not in str(err)), repr(err)
    late = pacer.command("fault", {"target": "body", "kind": "thrust_scale", "value": 0.5})
    assert isinstance(late.exception(), ValueError)  # after the end: the run has ended
