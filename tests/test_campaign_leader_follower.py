"""A fault campaign on the SPHERES leader-follower run tabulates what each fault did."""

from hopsim.scenarios.campaign import run_campaign, write_table
from hopsim.scenarios.registry import FaultSpec


def test_dead_follower_thrusters_break_the_formation(tmp_path):
    faults = [FaultSpec(t_s=20.0, target="sph2_thrusters", kind="thruster_stuck_off", index=-1)]
    base, dead = run_campaign("leader_follower", faults, seed=0, overrides={"perfect_state": True})
    assert base.outcome["formation_held"] and base.outcome["tracking_error_m"] < 0.05
    assert not dead.outcome["formation_held"] and dead.outcome["tracking_error_m"] > 0.5
    # the follower stops spending propellant when its valves stay shut; the leader is untouched
    assert dead.outcome["follower_propellant_g"] < base.outcome["follower_propellant_g"]
    assert dead.outcome["leader_propellant_g"] == base.outcome["leader_propellant_g"]
    write_table([base, dead], tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text().splitlines()[0].startswith("run,tracking_error_m")
