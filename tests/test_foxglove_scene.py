"""A recording carries Foxglove's view of the run: one foxglove.FrameTransforms per instant with the
vehicles' poses, and a foxglove.SceneUpdate with their bodies and trails, decodable from the
schemas embedded in the file, outside the stream (its hash and its replay are untouched)."""

from datetime import UTC

import numpy as np
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

from hopsim.bus import read_metadata
from hopsim.scenarios import run_scenario


def test_the_scene_shows_the_recorded_poses_and_leaves_the_stream_alone(tmp_path):
    """Transforms at every instant equal to the vehicles' truth states (not their estimates, which
    are VehicleStates too), bodies, and trails whose latest history and tip before any instant hold
    every trail point up to it, as a player that seeks there shows them."""
    from hopsim.bus.scene import TRAIL_EVERY_NS

    path = tmp_path / "lf.mcap"
    recorded = run_scenario("leader_follower", duration_s=25.0, out=path)
    in_memory = run_scenario("leader_follower", duration_s=25.0, keep_stream=True)
    assert recorded.stream_sha256 == in_memory.stream_sha256
    assert read_metadata(path)["hopsim.result"]["message_count"] == str(len(in_memory.recorder.envelopes))

    states, estimates, transforms, scenes, derived = {}, {}, {}, [], set()
    with open(path, "rb") as f:
        # decoded with the schemas stored in the file, as Foxglove decodes them
        for schema, channel, message, msg in make_reader(
            f, decoder_factories=[DecoderFactory()]
        ).iter_decoded_messages():
            if channel.metadata.get("derived") == "foxglove":
                derived.add((channel.topic, schema.name))
                if schema.name == "foxglove.FrameTransforms":
                    assert message.log_time not in transforms  # one per instant
                    transforms[message.log_time] = msg
                else:
                    scenes.append((message.log_time, channel.topic, msg))
            elif channel.topic.endswith("/state"):
                states.setdefault(message.log_time, {})[msg.vehicle] = msg
            elif channel.topic.endswith("/estimate"):
                estimates.setdefault(message.log_time, {})[msg.vehicle] = msg
    assert derived == {
        ("viz/transforms", "foxglove.FrameTransforms"),
        ("viz/scene", "foxglove.SceneUpdate"),
        ("viz/trails", "foxglove.SceneUpdate"),
        ("viz/trails_recent", "foxglove.SceneUpdate"),
        ("viz/trail_tips", "foxglove.SceneUpdate"),
    }
    assert sorted(transforms) == sorted(states) and len(states) > 100
    differs = 0
    for t_ns, by_vehicle in states.items():
        tfs = {tf.child_frame_id: tf for tf in transforms[t_ns].transforms}
        assert sorted(tfs) == sorted(by_vehicle)
        for name, s in by_vehicle.items():
            tf = tfs[name]
            assert tf.parent_frame_id == "world"
            assert tf.timestamp.seconds * 10**9 + tf.timestamp.nanos == t_ns
            assert [tf.translation.x, tf.translation.y, tf.translation.z] == [s.r_BN_N.x, s.r_BN_N.y, s.r_BN_N.z]
            assert [tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w] == [
                s.q_BN.x,
                s.q_BN.y,
                s.q_BN.z,
                s.q_BN.w,
            ]
            e = estimates.get(t_ns, {}).get(name)
            differs += e is not None and e.r_BN_N.x != s.r_BN_N.x
    assert differs > 50  # the estimates published at the same instants are not what is drawn
    bodies = {e.id: e for _, _, u in scenes for e in u.entities if e.id.startswith("body/")}
    assert sorted(bodies) == ["body/sph1", "body/sph2"]
    assert all(b.frame_locked and b.frame_id == b.id[5:] and len(b.cubes) == 1 for b in bodies.values())

    # the trail points: the first truth state, then each at least half a tip period after the last taken
    taken, last = [], None
    for t_ns in sorted(states):
        if last is None or t_ns - last >= TRAIL_EVERY_NS // 2:
            r = states[t_ns]["sph1"].r_BN_N
            taken.append((t_ns, [r.x, r.y, r.z]))
            last = t_ns
    topic_of = {"trail": "viz/trails", "trail_recent": "viz/trails_recent", "trail_tip": "viz/trail_tips"}
    sends = {}
    for t_ns, topic, u in scenes:
        for e in u.entities:
            kind, _, vehicle = e.id.partition("/")
            if kind in topic_of and vehicle == "sph1":
                assert e.frame_id == "world" and topic == topic_of[kind]
                sends.setdefault(kind, []).append((t_ns, [[p.x, p.y, p.z] for p in e.lines[0].points]))
    assert [len(sends[k]) for k in topic_of] == [1, 3, 26]  # every 60 s, 10 s, 1 s
    t0 = min(states)  # log times: the scenario's epoch + simulation time
    for seek_ns in range(t0, t0 + 25 * 10**9 + 1, 10**9 // 4):
        history, recent, tip = ([pts for t, pts in sends[k] if t <= seek_ns][-1] for k in topic_of)
        assert recent[0] == history[-1] and tip[0] == recent[-1]
        shown = history + recent[1:] + tip[1:]
        sent_by = max(t for t, _ in sends["trail_tip"] if t <= seek_ns)
        assert shown == [r for t, r in taken if t <= sent_by], seek_ns


def test_trails_seen_from_any_instant_are_whole_and_their_bytes_are_protobufs():
    """Two vehicles over 900 s at irregular instants (one absent for a while, a third arriving
    late): seeking anywhere, each trail's latest history, recent part and tip (decoded by
    protobuf) join into its last TRAIL_POINTS points up to the history and every point since; the
    latest message on viz/scene holds every body and the test volume; and
    every message the scene writes is protobuf's deterministic serialization of itself (extreme
    coordinates: -0.0, subnormals, inf, NaN)."""
    import math
    import random

    from hopsim.bus.scene import TRAIL_EVERY_NS, TRAIL_POINTS, FoxgloveScene
    from hopsim.schemas import Vector3, VehicleState

    rng = random.Random(3)
    scene = FoxgloveScene()
    extremes = [0.0, -0.0, 5e-324, -math.inf, math.nan, 1e300]
    taken = {}  # vehicle -> [(t_ns, point)] as the module says
    sends = {}  # (kind, vehicle) -> [(t_ns, points)]
    scenes = []  # viz/scene: (t_ns, entity ids)
    scene.set_volume((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0))
    t_ns = 0

    def collect(messages):
        for topic, t, message_type, data in messages:
            msg = message_type.FromString(data)
            assert msg.SerializeToString(deterministic=True) == data, topic
            if topic == "viz/transforms":
                continue
            if topic == "viz/scene":
                scenes.append((t, sorted(e.id for e in msg.entities)))
            for e in msg.entities:
                kind, _, vehicle = e.id.partition("/")
                if kind.startswith("trail"):
                    sends.setdefault((kind, vehicle), []).append(
                        (t, [p.SerializeToString() for p in e.lines[0].points])
                    )

    while t_ns < 900 * 10**9:
        t_ns += rng.choice([250_000_000, 500_000_000, 1_000_000_000, 1_700_000_000])
        present = ["a"] + (["b"] if not 100e9 < t_ns < 160e9 else []) + (["c"] if t_ns > 200e9 else [])
        datas = []
        for name in present:
            r = [rng.choice(extremes) if rng.random() < 0.1 else rng.uniform(-1e3, 1e3) for _ in range(3)]
            state = VehicleState(vehicle=name, t_ns=t_ns, r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]))
            datas.append(state.SerializeToString(deterministic=True))
            seen = taken.setdefault(name, [])
            if not seen or t_ns - seen[-1][0] >= TRAIL_EVERY_NS // 2:
                seen.append((t_ns, state.r_BN_N.SerializeToString()))
        collect(scene.flush_encoded())
        scene.take(t_ns, present, datas)
    collect(scene.flush_encoded())

    # the bodies and the volume, whole in each message (the latest one is the whole scene)
    assert [ids for _, ids in scenes] == [["body/a", "body/b", "volume"], ["body/a", "body/b", "body/c", "volume"]]
    assert 200e9 < scenes[1][0] < 202e9
    for name, points in taken.items():
        lines = [sends[kind, name] for kind in ("trail", "trail_recent", "trail_tip")]
        assert len(lines[0]) >= 11 and len(points) > TRAIL_POINTS
        assert name != "a" or len(points) > 2 * TRAIL_POINTS  # the trail's array made room
        for seek_ns in range(0, t_ns + 1, 10**9 // 2):
            if seek_ns < lines[0][0][0]:
                continue
            (h_ns, history), (_, recent), (tip_ns, tip) = (
                [(t, p) for t, p in line if t <= seek_ns][-1] for line in lines
            )
            assert recent[0] == history[-1] and tip[0] == recent[-1]
            expected = [p for t, p in points if t <= h_ns][-TRAIL_POINTS:] + [
                p for t, p in points if h_ns < t <= tip_ns
            ]
            assert history + recent[1:] + tip[1:] == expected, (name, seek_ns)


def test_log_times_are_the_epoch_plus_simulation_time(tmp_path):
    from datetime import datetime

    import pytest
    from typer.testing import CliRunner

    from hopsim.bus.reading import read_recording
    from hopsim.cli import app

    path = tmp_path / "lander.mcap"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "run",
            "lander",
            "--duration",
            "5",
            "--set",
            "epoch_utc=2026-03-01T06:30:00Z",
            "--out",
            str(path),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    epoch = int(datetime(2026, 3, 1, 6, 30, tzinfo=UTC).timestamp()) * 10**9
    with open(path, "rb") as f:
        stats = make_reader(f).get_summary().statistics
    assert stats.message_start_time == epoch and stats.message_end_time == epoch + 5 * 10**9
    envelopes, report = read_recording(path)
    assert envelopes[0].t_ns == 0 and report.last_t_ns == 5 * 10**9
    assert "identical" in runner.invoke(app, ["replay", str(path)]).output
    with open(path, "rb") as f:
        stamps = [
            tf.timestamp.seconds * 10**9 + tf.timestamp.nanos - m.log_time
            for _, c, m, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(
                topics=["viz/transforms"]
            )
            for tf in msg.transforms
        ]
    assert stamps and set(stamps) == {0}
    for bad, why in [("2026-13-01", "not an ISO 8601"), ("1900-01-01T00:00:00Z", "outside 1970-2200")]:
        res = runner.invoke(app, ["run", "lander", "--duration", "1", "--set", f"epoch_utc={bad}"])
        assert res.exit_code == 2 and why in " ".join(res.output.split()), res.output
    from hopsim.scenarios import ScenarioError, get_scenario

    with pytest.raises((ScenarioError, ValueError), match="not an ISO 8601"):
        get_scenario("lander").make_params({"epoch_utc": "yesterday"})


def test_a_chiefs_hill_frame_and_the_relative_trails_in_it():
    """A chief on an inclined circular orbit and a deputy placed at known positions in its Hill
    frame: the scene's ``hill/chief`` transform maps those Hill positions onto the deputy's
    recorded inertial ones, and the deputy's Hill trail holds them (orbit frames of
    hopsim.dynamics and SciPy's rotations as the references)."""
    from scipy.spatial.transform import Rotation

    from hopsim.bus.scene import FoxgloveScene
    from hopsim.dynamics.orbit_frames import hill_dcm, inertial_to_hill
    from hopsim.schemas import Vector3, VehicleState

    mu, a, inc = 3.986004418e14, 6.9e6, 0.9
    n = np.sqrt(mu / a**3)
    scene = FoxgloveScene()
    scene.set_hill_chief("chief")
    placed, transforms, trails = [], [], []
    for k in range(6):
        t_ns = k * 10_000_000_000
        th = n * t_ns / 1e9
        r_c = a * np.array([np.cos(th), np.sin(th) * np.cos(inc), np.sin(th) * np.sin(inc)])
        v_c = a * n * np.array([-np.sin(th), np.cos(th) * np.cos(inc), np.cos(th) * np.sin(inc)])
        rho = np.array([50.0 * np.sin(0.4 * k), 200.0 - 15.0 * k, 30.0])
        r_d = r_c + hill_dcm(r_c, v_c).T @ rho
        placed.append((r_c, v_c, r_d))
        for name, r, v in (("chief", r_c, v_c), ("d0", r_d, v_c)):
            state = VehicleState(
                vehicle=name, t_ns=t_ns, r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]), v_BN_N=Vector3(x=v[0], y=v[1], z=v[2])
            )
            state.q_BN.w = 1.0
            for topic, _, msg in scene.observe(t_ns, "hopsim.VehicleState", state, name):
                (transforms if topic == "viz/transforms" else trails).append(msg)
    for topic, _, msg in scene.flush():
        (transforms if topic == "viz/transforms" else trails).append(msg)
    assert len(transforms) == 6
    for (r_c, v_c, r_d), tfs in zip(placed, transforms):
        tf = {t.child_frame_id: t for t in tfs.transforms}["hill/chief"]
        assert tf.parent_frame_id == "world"
        assert [tf.translation.x, tf.translation.y, tf.translation.z] == r_c.tolist()
        R_NH = Rotation.from_quat([tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w])
        rho = inertial_to_hill(r_c, v_c, r_d, v_c)[0]
        np.testing.assert_allclose(r_c + R_NH.apply(rho), r_d, rtol=0, atol=1e-6)  # m
    hill_trails = [e for u in trails for e in u.entities if e.id.startswith("hill_trail")]
    assert hill_trails and all(e.frame_id == "hill/chief" for e in hill_trails)
    assert not [e for e in hill_trails if e.id.endswith("/chief")]
    history, recent, tip = (
        [[p.x, p.y, p.z] for p in [e for e in hill_trails if e.id == f"{kind}/d0"][-1].lines[0].points]
        for kind in ("hill_trail", "hill_trail_recent", "hill_trail_tip")
    )
    points = np.array(history + recent[1:] + tip[1:])  # the whole trail (see the first test)
    expected = np.array([inertial_to_hill(r_c, v_c, r_d, v_c)[0] for r_c, v_c, r_d in placed])
    np.testing.assert_allclose(points, expected, rtol=0, atol=1e-6)


def test_the_transforms_bytes_are_protobufs_serialization():
    """The scene writes each instant's FrameTransforms from the states' own bytes: the same bytes
    as protobuf's deterministic serialization of the message built field by field, with zero,
    negative-zero and unset coordinates, instants at 0 and on whole seconds, names that make
    a transform longer than a one-byte length, and a state published by a model other than the
    vehicle it names (not drawn)."""
    import random

    from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms

    from hopsim.bus.scene import FoxgloveScene
    from hopsim.schemas import VehicleState

    rng = random.Random(5)
    values = [0.0, -0.0, 1.0, -2.5e-300, 7.25e12, float("inf")]
    for case in range(300):
        poses = {}
        for k in range(rng.choice([1, 1, 2, 5])):
            name = rng.choice(["v", "sph1", "ü" * 40, f"deputy_{k:03d}" * rng.choice([1, 9])])
            state = VehicleState(vehicle=name)
            for vector in (state.r_BN_N, state.q_BN):
                for axis in ("x", "y", "z", "w")[: len(vector.DESCRIPTOR.fields)]:
                    if rng.random() < 0.8:
                        setattr(vector, axis, rng.choice([*values, rng.uniform(-10000.0, 10000.0)]))
            poses[name] = state
        stamp = rng.choice([0, 1_000_000_000, 50_000_000, rng.randrange(2**62)])
        expected = FrameTransforms()
        for name in sorted(poses):
            s, tf = poses[name], expected.transforms.add()
            tf.timestamp.seconds, tf.timestamp.nanos = divmod(stamp, 1_000_000_000)
            tf.parent_frame_id, tf.child_frame_id = "world", name
            tf.translation.x, tf.translation.y, tf.translation.z = s.r_BN_N.x, s.r_BN_N.y, s.r_BN_N.z
            tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w = s.q_BN.x, s.q_BN.y, s.q_BN.z, s.q_BN.w
        scene = FoxgloveScene(epoch_ns=stamp - 7)
        names = [*poses, "v"]  # the last: published by another model, not drawn
        scene.take(
            7, names, [poses[n].SerializeToString() for n in poses] + [VehicleState(vehicle="w").SerializeToString()]
        )
        transforms = [data for topic, _, _, data in scene.flush_encoded() if topic == "viz/transforms"]
        assert transforms == [expected.SerializeToString(deterministic=True)], case
