"""Model kinds (:mod:`hopsim.kernel.kind`): a law written once over one row gives the same bits for
one row and for many, against an independent statement of the law; every row loop has the one
shape the kernel allows; a kind's row survives snapshots and checkpoint files exactly."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.actors import formation
from hopsim.actors.formation import (
    NOISE_BLOCK,
    STATE_SENSOR,
    THRUSTER,
    FormationThruster,
    latch_command_rows,
    sample_state_rows,
)
from hopsim.kernel.kind import ONE, Field, Kind, as_bytes
from hopsim.kernel.state_codec import decode, encode

ROOT = Path(__file__).resolve().parent.parent / "hopsim"

finite = st.floats(-50.0, 50.0, allow_nan=False, allow_infinity=False)


def _thruster_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    table = THRUSTER.rows(n)
    table["max_thrust_N"] = rng.uniform(0.5, 3.0, n)
    table["min_thrust_N"] = rng.uniform(0.0, 0.4, n) * (rng.random(n) < 0.5)
    table["scale"] = np.where(rng.random(n) < 0.3, rng.uniform(0.0, 1.5, n), 1.0)
    table["force_N"] = rng.uniform(-1, 1, (n, 3))
    return table


def _latch_by_numpy(row, fresh: bool, cmd: np.ndarray, dt_s: float):
    """The thruster's law as FormationThruster's documentation states it, in numpy."""
    force = row["force_N"].copy()
    saturated = int(row["saturated_hops"])
    if fresh:
        lim = row["max_thrust_N"]
        if np.any(np.abs(cmd) > lim):
            saturated += 1
        force = np.clip(cmd, -lim, lim)
        force[np.abs(force) < row["min_thrust_N"]] = 0.0
        if row["scale"] != 1.0:
            force = force * row["scale"]
    impulse = row["impulse_Ns"] + (abs(force[0]) + abs(force[1]) + abs(force[2])) * dt_s
    return force, impulse, saturated


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), finite)
def test_the_thrusters_law_over_rows_is_its_law_row_by_row_and_numpys(n, seed, dt_s):
    rng = np.random.default_rng(seed)
    table = _thruster_rows(n, rng)
    fresh = rng.random(n) < 0.7
    cmd = rng.uniform(-4, 4, (n, 3))
    dt_s = abs(dt_s) / 10
    expected = [_latch_by_numpy(table[i], fresh[i], cmd[i], dt_s) for i in range(n)]
    one_by_one = table.copy()
    for i in range(n):  # a model alone: its one row through the same loop
        latch_command_rows(as_bytes(one_by_one[i : i + 1]), ONE, fresh[i : i + 1], cmd[i : i + 1], dt_s)
    latch_command_rows(as_bytes(table), np.arange(n), fresh, cmd, dt_s)
    assert table.tobytes() == one_by_one.tobytes()
    for i, (force, impulse, saturated) in enumerate(expected):
        assert table["force_N"][i].tobytes() == force.tobytes()
        assert table["impulse_Ns"][i] == impulse
        assert table["saturated_hops"][i] == saturated


def test_only_the_due_rows_change():
    rng = np.random.default_rng(3)
    table = _thruster_rows(6, rng)
    before = table.copy()
    due = np.array([1, 4])
    latch_command_rows(as_bytes(table), due, np.ones(6, bool), rng.uniform(-4, 4, (6, 3)), 0.1)
    untouched = [0, 2, 3, 5]
    assert table[untouched].tobytes() == before[untouched].tobytes()
    assert table[due].tobytes() != before[due].tobytes()


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_the_state_sensors_law_is_truth_plus_sigma_times_the_drawn_normals(n, seed):
    rng = np.random.default_rng(seed)
    table = STATE_SENSOR.rows(n)
    table["sigma"] = rng.uniform(0.0, 0.1, (n, 6)) * (rng.random((n, 1)) < 0.8)
    table["noisy"] = np.any(table["sigma"] > 0, axis=1)
    table["noise"] = rng.standard_normal((n, NOISE_BLOCK, 6))
    table["left"] = rng.integers(1, NOISE_BLOCK + 1, n)
    X, mass = rng.uniform(-1e3, 1e3, (n, 13)), rng.uniform(1, 100, n)
    one_by_one = table.copy()
    t_ns = 5 * 10**9
    for i in range(n):
        sample_state_rows(as_bytes(one_by_one[i : i + 1]), ONE, t_ns, X[i : i + 1], mass[i : i + 1])
    sample_state_rows(as_bytes(table), np.arange(n), t_ns, X, mass)
    assert table.tobytes() == one_by_one.tobytes()
    for i in range(n):
        row = one_by_one[i]
        nz = row["noise"][NOISE_BLOCK - (row["left"] + 1)] if row["noisy"] else np.zeros(6)
        truth = X[i, :6] + row["sigma"] * nz if row["noisy"] else X[i, :6]
        assert table["meas"][i, :6].tobytes() == truth.tobytes()
        assert table["meas"][i, 6] == mass[i]
    again = table.copy()  # asked again at the same instant: nothing changes
    sample_state_rows(as_bytes(again), np.arange(n), t_ns, X + 1, mass)
    assert again.tobytes() == table.tobytes()


def test_a_kinds_fields_are_the_models_attributes_and_its_snapshot_and_checkpoint_carry_the_row():
    class Body:
        name = "v0"

    t = FormationThruster("v0_thr", Body(), max_thrust_N=2.0, min_thrust_N=0.1)
    assert t.row.dtype == THRUSTER.dtype and t.row.shape == (1,)
    assert (t.max_thrust_N, t.min_thrust_N, t.scale, t.saturated_hops) == (2.0, 0.1, 1.0, 0)
    assert isinstance(t.saturated_hops, int) and isinstance(t.scale, float)
    t.force_N[1] = 0.5  # a view of the row
    assert t.row["force_N"][0, 1] == 0.5
    t.impulse_Ns = 3.25
    tree, blobs = encode({"own": vars(t)["row"]})  # as a checkpoint file holds it
    snap = t.snapshot()
    t.impulse_Ns, t.force_N = 9.0, [0.0, 0.0, 0.0]
    t.restore(snap)
    assert (t.impulse_Ns, t.force_N.tolist()) == (3.25, [0.0, 0.5, 0.0])
    back = decode(tree, blobs)["own"]
    assert back.dtype == THRUSTER.dtype and back.tobytes() == t.row.tobytes()


def test_a_kind_refuses_what_a_row_cannot_hold():
    with pytest.raises(ValueError, match="distinct"):
        Kind(Field("a"), Field("a"))
    with pytest.raises(ValueError, match="numbers only"):
        Field("b", "O")
    with pytest.raises(ValueError, match="identifier"):
        Field("_hidden")
    k = Kind(Field("x", default=2.5), Field("v", shape=(3,), unit="m/s", doc="velocity, N frame"))
    assert k.rows(2)["x"].tolist() == [2.5, 2.5]
    assert k.describe()[1] == ("v", "f8[3]", "m/s", "velocity, N frame")


def _row_loops() -> list[tuple[str, ast.FunctionDef]]:
    """Every compiled function named ``*_rows`` in hopsim's modules that declare a kind."""
    loops = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        if "Kind(" not in text or path.name == "kind.py":
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_rows"):
                loops.append((f"{path.relative_to(ROOT.parent)}:{node.name}", node))
    return loops


def test_every_row_loop_is_the_one_shape_calling_its_law_on_each_due_row():
    """``s = table.view(ROW)``; ``for j in range(due.shape[0])``: ``i = due[j]``; the law of
    ``s[i]`` and the other arguments' row i (or whole), nothing else: the law is the only code."""
    loops = _row_loops()
    assert loops, "the formation's kinds have row loops"
    for where, fn in loops:
        args = [a.arg for a in fn.args.args]
        assert args[:2] == ["table", "due"], where
        view, loop = fn.body[-2:]
        assert ast.unparse(view).startswith("s = table.view("), where
        assert ast.unparse(loop.iter) == "range(due.shape[0])", where
        first, call = loop.body
        assert ast.unparse(first) == "i = due[j]", where
        assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call), where
        law = call.value.func.id
        assert fn.name == law + "_rows", where
        passed = [ast.unparse(a) for a in call.value.args]
        assert passed[0] == "s[i]", where
        assert passed[1:] == [a if a in ("t_ns", "dt_s") else f"{a}[i]" for a in args[2:]], where


def test_the_formations_laws_are_written_once():
    """The formation's five models' laws exist in their modules only (the body's in
    ``hopsim.dynamics.rigid_body``): the row forms call their row loops and hold nothing else
    compiled than the ports' plumbing."""
    from hopsim.actors import formation_rows

    rows_text = inspect.getsource(formation_rows)
    for law in ("latch_command", "sample_state", "consensus_control", "admit_packets"):
        assert f"def {law}(" in inspect.getsource(formation)
        assert f"def {law}" not in rows_text and f"{law}_rows(" in rows_text
    compiled = [n.name for n in ast.parse(rows_text).body if isinstance(n, ast.FunctionDef) and n.decorator_list]
    assert sorted(compiled) == ["_fill_force", "_fill_rv_mass", "_forward", "_neighbour_slots"]
