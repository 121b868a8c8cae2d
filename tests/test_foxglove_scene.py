"""A recording carries Foxglove's view of the run: one foxglove.FrameTransforms per instant with the
vehicles' poses, and a foxglove.SceneUpdate with their bodies and trails, decodable from the
schemas embedded in the file, outside the stream (its hash and its replay are untouched)."""
import numpy as np
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

from hopsim.bus import read_metadata
from hopsim.scenarios import run_scenario


def test_the_scene_shows_the_recorded_poses_and_leaves_the_stream_alone(tmp_path):
    path = tmp_path / "lf.mcap"
    recorded = run_scenario("leader_follower", duration_s=25.0, out=path)
    in_memory = run_scenario("leader_follower", duration_s=25.0, keep_stream=True)
    assert recorded.stream_sha256 == in_memory.stream_sha256
    assert read_metadata(path)["hopsim.result"]["message_count"] == str(len(in_memory.recorder.envelopes))

    states, transforms, scenes, derived_schemas = {}, {}, [], set()
    with open(path, "rb") as f:
        # decoded with the schemas stored in the file, as Foxglove decodes them
        for schema, channel, message, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            if channel.metadata.get("derived") == "foxglove":
                derived_schemas.add(schema.name)
                if schema.name == "foxglove.FrameTransforms":
                    assert message.log_time not in transforms          # one per instant
                    transforms[message.log_time] = msg
                else:
                    scenes.append(msg)
            elif schema.name == "hopsim.VehicleState":
                states.setdefault(message.log_time, {})[msg.vehicle] = msg
    assert derived_schemas == {"foxglove.FrameTransforms", "foxglove.SceneUpdate"}
    assert sorted(transforms) == sorted(states) and len(states) > 100
    for t_ns, by_vehicle in states.items():
        tfs = {tf.child_frame_id: tf for tf in transforms[t_ns].transforms}
        assert sorted(tfs) == sorted(by_vehicle)
        for name, s in by_vehicle.items():
            tf = tfs[name]
            assert tf.parent_frame_id == "world"
            assert tf.timestamp.seconds * 10**9 + tf.timestamp.nanos == t_ns
            assert [tf.translation.x, tf.translation.y, tf.translation.z] == [s.r_BN_N.x, s.r_BN_N.y, s.r_BN_N.z]
            assert [tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w] == [s.q_BN.x, s.q_BN.y, s.q_BN.z,
                                                                                    s.q_BN.w]
    bodies = {e.id: e for u in scenes for e in u.entities if e.id.startswith("body/")}
    assert sorted(bodies) == ["body/sph1", "body/sph2"]
    assert all(b.frame_locked and b.frame_id == b.id[5:] and len(b.cubes) == 1 for b in bodies.values())
    trails = [e for u in scenes for e in u.entities if e.id == "trail/sph1"]
    assert len(trails) >= 20                                      # re-sent every simulated second
    last = np.array([[p.x, p.y, p.z] for p in trails[-1].lines[0].points])
    first_r = states[min(states)]["sph1"].r_BN_N
    assert last[0].tolist() == [first_r.x, first_r.y, first_r.z] and len(last) > 20
