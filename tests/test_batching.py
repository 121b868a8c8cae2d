"""Islands whose hops coincide propagate as one compiled batch: an optimization that must not
change a single bit of the recorded stream (DESIGN.md, "Islands, hops and the kernel")."""

from __future__ import annotations

import pytest

from hopsim.scenarios.runner import run_scenario


@pytest.mark.parametrize(
    "name, overrides, duration",
    [
        ("formation", {"n_vehicles": 12, "layout": "ring"}, 20.0),
        ("leader_follower", {}, 12.0),
        ("pileup", {"n_vehicles": 12}, 3.0),
    ],
)
def test_batching_changes_no_bit_of_the_stream(name, overrides, duration):
    runs = [run_scenario(name, overrides, duration_s=duration, keep_stream=True, batching=b) for b in (True, False)]
    assert runs[0].message_count == runs[1].message_count > 0
    assert runs[0].stream_sha256 == runs[1].stream_sha256


def test_a_batch_really_groups_islands():
    from hopsim.kernel import executive
    from hopsim.kernel import island as island_module

    sizes = []
    original = island_module.propagate_together

    def spy(islands, t1, *rest):
        sizes.append(len(islands))
        return original(islands, t1, *rest)

    # lone islands' wakes batch through the island module, a rate group through the executive's
    island_module.propagate_together = executive.propagate_together = spy
    try:
        run_scenario("formation", {"n_vehicles": 8}, duration_s=5.0, batching=True)
        run_scenario("formation", {"n_vehicles": 8}, duration_s=5.0, batching=True, rate_groups=False)
    finally:
        island_module.propagate_together = executive.propagate_together = original
    assert max(sizes) >= 8 and sizes.count(8) >= 8
