"""Plots of a recording's signals against simulation time: a PNG (matplotlib) or a
self-contained interactive HTML page (plotly, its script inside the file: it opens offline)."""

from __future__ import annotations

from pathlib import Path

from hopsim.bus.atomic import replacing
from hopsim.view.columns import Signal


def plot_signals(signals: list[Signal], out: str | Path, title: str = "") -> Path:
    """One panel per signal, sharing the time axis (s); ``out``'s suffix picks the format. The
    file is written under its partial name and renamed over ``out`` when complete
    (:func:`hopsim.bus.atomic.replacing`)."""
    out = Path(out)
    if out.suffix not in (".png", ".svg", ".pdf", ".html"):
        raise ValueError(f"{out}: write .png, .svg, .pdf or .html")
    with replacing(out) as tmp:
        (_html if out.suffix == ".html" else _figure)(signals, tmp, title)
    return out


def _figure(signals: list[Signal], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(signals), 1, sharex=True, squeeze=False, figsize=(9, 2.2 + 1.8 * len(signals)))
    for ax, s in zip(axes[:, 0], signals):
        ax.plot(s.t_s, s.values, lw=1.0, drawstyle="steps-post" if len(s.values) < 2000 else "default")
        ax.set_ylabel(s.name, fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("simulation time (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _html(signals: list[Signal], out: Path, title: str) -> None:
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    fig = make_subplots(
        rows=len(signals), cols=1, shared_xaxes=True, vertical_spacing=0.04, subplot_titles=[s.name for s in signals]
    )
    for row, s in enumerate(signals, 1):
        fig.add_trace(go.Scattergl(x=s.t_s, y=s.values, mode="lines", name=s.name, line_shape="hv"), row=row, col=1)
    fig.update_xaxes(title_text="simulation time (s)", row=len(signals), col=1)
    fig.update_layout(title=title, height=220 + 200 * len(signals), showlegend=False)
    fig.write_html(out, include_plotlyjs=True, full_html=True)
