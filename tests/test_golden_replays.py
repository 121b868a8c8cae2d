"""Recordings of stream format 2 (``tests/data/golden``: each built-in scenario, short, one with
radio loss and latency) replay ``identical``, envelope by envelope and byte for byte, on today's
tree and on any machine: the streams do not depend on the CPU (``docs/determinism.md``). A change
that alters any of these streams raises the stream format (``hopsim.bus.recorder.STREAM_FORMAT``),
says why in CHANGELOG.md and records the files again (``python tests/data/golden/record.py``)."""

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
        "orbit_formation",
        "rendezvous",
        "constellation",
    }


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_a_golden_recording_replays_identical(path):
    result = replay_recording(path)
    assert result.mode == "full" and result.compared > 50
    assert result.identical, result.difference
