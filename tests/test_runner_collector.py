"""run_scenario keeps the objects from before a run out of the cyclic collector's passes while the
run lasts, and gives every one of them back after it (hopsim.scenarios.runner)."""

from __future__ import annotations

import gc
import weakref

from hopsim.scenarios import runner


class _Cycle:
    """An object that refers to itself: only the cyclic collector frees it."""

    def __init__(self):
        self.me = self


def _watching_the_run(monkeypatch):
    """Record what the collector holds frozen while a run advances."""
    seen: list[int] = []
    advance = runner.ScenarioRun.advance

    def watched(self, *args, **kwargs):
        seen.append(gc.get_freeze_count())
        return advance(self, *args, **kwargs)

    monkeypatch.setattr(runner.ScenarioRun, "advance", watched)
    return seen


def test_a_run_defers_the_collector_and_gives_everything_back(monkeypatch):
    seen = _watching_the_run(monkeypatch)
    before = _Cycle()
    gone = weakref.ref(before)
    assert gc.get_freeze_count() == 0
    runner.run_scenario("lander", duration_s=1.0)
    assert seen and seen[0] > 0  # the objects from before were out of its passes
    assert gc.get_freeze_count() == 0  # ... and are the collector's again
    del before
    gc.collect()
    assert gone() is None  # garbage from before the run is still collected


def test_a_process_that_froze_objects_itself_is_left_as_it_is(monkeypatch):
    seen = _watching_the_run(monkeypatch)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        runner.run_scenario("lander", duration_s=1.0)
        # nothing more frozen for the run (frozen objects may still be freed: the count only falls)
        assert len(seen) == 1 and seen[0] <= frozen
        assert gc.get_freeze_count() > 0  # and what the process froze is still frozen
    finally:
        gc.unfreeze()
