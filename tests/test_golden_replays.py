"""Recordings made by the kernel before rate groups and fleet forms (the tree of 2026-11-22, before
kernel v2: islands advanced one by one, no fleet forms) replay ``identical`` on today's kernel,
which groups islands and hands their hops to fleet forms by default: the golden files in
``tests/data/golden`` (each built-in scenario of that time, short, one with radio loss and
latency) are compared envelope by envelope and byte for byte with a fresh run of the same
scenario, parameters and seed (``hopsim replay``). A change that alters any of these streams must
say why and record the files again from the earlier tree."""

from pathlib import Path

import pytest

from hopsim.scenarios.replay import replay_recording

GOLDEN = sorted((Path(__file__).parent / "data" / "golden").glob("*.mcap"))


def test_the_golden_set_is_there():
    assert {p.stem for p in GOLDEN} >= {
        "lander",
        "formation",
        "formation_lossy",
        "leader_follower",
        "cooperative_docking",
        "pileup",
        "collision",
        "passive_docking",
        "deploy_boom",
    }


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_a_recording_from_before_kernel_v2_replays_identical(path):
    result = replay_recording(path)
    assert result.mode == "full" and result.compared > 50
    assert result.identical, result.difference
