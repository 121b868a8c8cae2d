"""A Foxglove layout for a recording (or a live run): what to open it with in the Foxglove app.

:func:`foxglove_layout` builds it with the Foxglove SDK's layout types from the recording's own
topics, so it fits any scenario: a 3-D panel on the ``world`` frame (for a formation in orbit whose
scenario names a chief, on the chief's Hill frame ``hill/<chief>``, where relative orbits are seen
as flown) showing ``viz/scene`` (bodies, the test volume), ``viz/trails``, ``viz/trails_recent`` and
``viz/trail_tips`` (trails' histories, recent parts and tips) and ``viz/transforms`` (poses); plots of the first
vehicles' positions (``r_BN_N``, m,
frame N) and, when there are contacts, of their normal speeds before and after; the kernel's
events as raw messages; and for a live run the Parameters panel (``pace``, ``paused``) and a
service-call panel that sends a fault. ``hopsim layout FILE`` and ``hopsim run ... --layout``
write it as JSON beside the recording; Foxglove imports it from its layout menu. The layouts of
the built-in scenarios (built from their topics, with the live panels) ship in
``hopsim/view/layouts``: ``hopsim layout SCENARIO`` writes one out.
"""

from __future__ import annotations

import json
from pathlib import Path

import foxglove.layouts as fl

from hopsim.bus.atomic import replacing
from hopsim.bus.scene import RECENT_TRAILS_TOPIC, SCENE_TOPIC, TRAIL_TIPS_TOPIC, TRAILS_TOPIC, WORLD, hill_frame_name
from hopsim.view.columns import topics

PLOTTED_VEHICLES = 3


def _path(topic: str, fields: str) -> str:
    """A Foxglove message path: the topic quoted (hopsim's topics do not start with '/')."""
    return f'"{topic}".{fields}'


def foxglove_layout(topics: dict[str, str], live: bool = False, frame: str = WORLD) -> fl.Layout:
    """The layout for a run whose topics (``{topic: type}``) are these; its 3-D panel on ``frame``."""
    states = sorted(t for t, kind in topics.items() if kind == "hopsim.VehicleState" and t.endswith("/state"))
    three_d = fl.ThreeDeePanel(
        title="vehicles",
        config=fl.ThreeDeeConfig(
            follow_tf=frame,
            follow_mode="follow-none",
            topics={
                topic: fl.BaseRendererSceneUpdateTopicSettings(visible=True)
                for topic in (SCENE_TOPIC, TRAILS_TOPIC, RECENT_TRAILS_TOPIC, TRAIL_TIPS_TOPIC)
            },
        ),
    )
    series = [
        fl.PlotSeries(value=_path(t, f"r_BN_N.{axis}"), label=f"{t.split('/')[0]} {axis}", line_interpolation="step")
        for t in states[:PLOTTED_VEHICLES]
        for axis in "xyz"
    ]
    side: list[fl.SplitItem] = [
        fl.SplitItem(
            content=fl.PlotPanel(title="positions r_BN_N (m)", config=fl.PlotConfig(paths=series, show_legend=True))
        )
    ]
    if "kernel/contact" in topics:
        side.append(
            fl.SplitItem(
                content=fl.PlotPanel(
                    title="contacts: normal speed (m/s)",
                    config=fl.PlotConfig(
                        paths=[
                            fl.PlotSeries(
                                value=_path("kernel/contact", "contact.normal_speed_before_mps"), label="before"
                            ),
                            fl.PlotSeries(
                                value=_path("kernel/contact", "contact.normal_speed_after_mps"), label="after"
                            ),
                        ],
                        show_legend=True,
                    ),
                )
            )
        )
    events = sorted(t for t in topics if t.startswith("kernel/"))
    if events:
        side.append(
            fl.SplitItem(
                content=fl.RawMessagesPanel(
                    title="kernel events", config=fl.RawMessagesConfig(topic_path=f'"{events[0]}"')
                )
            )
        )
    if live:
        side.append(
            fl.SplitItem(
                content=fl.TabContainer(
                    tabs=[
                        fl.TabItem(title="pace", content=fl.ParametersPanel(title="pace and pause")),
                        fl.TabItem(
                            title="fault",
                            content=fl.ServiceCallPanel(
                                title="send a fault",
                                config=fl.ServiceCallConfig(
                                    service_name="fault",
                                    button_text="send",
                                    request_payload=json.dumps({"target": "", "kind": "", "value": 0.0}),
                                ),
                            ),
                        ),
                    ]
                )
            )
        )
    return fl.Layout(
        content=fl.SplitContainer(
            direction="row",
            items=[
                fl.SplitItem(proportion=3, content=three_d),
                fl.SplitItem(proportion=2, content=fl.SplitContainer(direction="column", items=side)),
            ],
        )
    )


LAYOUTS = Path(__file__).parent / "layouts"


def builtin_layout(scenario: str) -> Path:
    """The layout shipped for a built-in scenario (``hopsim/view/layouts/<scenario>.json``)."""
    return LAYOUTS / f"{scenario}.json"


def write_layout(recording: str | Path, out: str | Path | None = None, live: bool = False) -> Path:
    """Write the layout of ``recording`` to ``out`` (default: beside it, :func:`layout_path`),
    under its partial name until complete (:func:`hopsim.bus.atomic.replacing`)."""
    recording = Path(recording)
    out = Path(out) if out is not None else layout_path(recording)
    text = foxglove_layout(topics(recording), live, scene_frame(recording_scene(recording))).to_json()
    with replacing(out) as tmp:
        tmp.write_text(text)
    return out


def layout_path(recording: str | Path) -> Path:
    """Where a recording's layout goes by default: beside it, ``<name>.layout.json``."""
    return Path(recording).with_suffix(".layout.json")


def recording_scene(recording: str | Path) -> dict:
    """The scene a recording's run described (its ``scene_json`` metadata; {} if none)."""
    from mcap.exceptions import McapError

    from hopsim.bus.recorder import RUN_METADATA, read_metadata

    try:
        scene = json.loads(read_metadata(recording).get(RUN_METADATA, {}).get("scene_json", "{}"))
    except (ValueError, OSError, McapError):  # a damaged or unfinished file: no scene
        return {}
    return scene if isinstance(scene, dict) else {}


def scene_frame(scene: dict) -> str:
    """The frame to show a scene in: its chief's Hill frame if it names one, else the world."""
    chief = scene.get("hill_chief")
    return hill_frame_name(chief) if isinstance(chief, str) else WORLD


__all__ = ["LAYOUTS", "builtin_layout", "foxglove_layout", "recording_scene", "scene_frame", "write_layout"]
