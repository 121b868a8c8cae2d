"""Plots of a recording's signals against simulation time: a PNG (matplotlib) or a
self-contained interactive HTML page (plotly, its script inside the file: it opens offline).

A signal of more than :data:`MAX_FILE_POINTS` samples is drawn from the minimum and the maximum of
each of ``MAX_FILE_POINTS // 2`` runs of samples (:func:`decimate`): what a plot of that width
shows, spikes included, at a cost that does not grow with the recording.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from hopsim.bus.atomic import replacing
from hopsim.view.columns import Signal

MAX_FILE_POINTS = 200_000  # points of one signal in a plot file


def decimate(t: np.ndarray, v: np.ndarray, max_points: int = MAX_FILE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points of (t, v): each of ``max_points // 2`` runs of consecutive
    samples (of equal length, the last one shorter) keeps its minimum and its maximum, in time
    order (spikes survive, as a plot at that width shows them); a run of NaN only keeps its first."""
    n = len(t)
    if n <= max_points:
        return t, v
    buckets = max(1, max_points // 2)
    size = -(-n // buckets)
    runs = -(-n // size)
    padded = np.full(runs * size, np.nan)
    padded[:n] = v
    padded = padded.reshape(runs, size)
    finite = np.isfinite(padded)
    low = np.argmin(np.where(finite, padded, np.inf), axis=1)
    high = np.argmax(np.where(finite, padded, -np.inf), axis=1)  # a run of NaN only: 0 and 0
    start = np.arange(runs) * size
    keep = np.unique(np.concatenate([start + low, start + high]))
    keep = keep[keep < n]
    return t[keep], v[keep]


def plot_signals(signals: list[Signal], out: str | Path, title: str = "") -> Path:
    """One panel per signal, sharing the time axis (s); ``out``'s suffix picks the format. The
    file is written under its partial name and renamed over ``out`` when complete
    (:func:`hopsim.bus.atomic.replacing`). Each signal is drawn from at most
    :data:`MAX_FILE_POINTS` points (:func:`decimate`)."""
    out = Path(out)
    if out.suffix not in (".png", ".svg", ".pdf", ".html"):
        raise ValueError(f"{out}: write .png, .svg, .pdf or .html")
    signals = [shown(s) for s in signals]
    with replacing(out) as tmp:
        (_html if out.suffix == ".html" else _figure)(signals, tmp, title)
    return out


def shown(signal: Signal, max_points: int = MAX_FILE_POINTS) -> Signal:
    """``signal``, or, with more than ``max_points`` samples, what a plot draws of it (:func:`decimate`)."""
    if len(signal.values) <= max_points:
        return signal
    t_ns, values = decimate(signal.t_ns, signal.values, max_points)
    return Signal(signal.name, t_ns, values, signal.sources)


def _figure(signals: list[Signal], out: Path, title: str) -> None:
    from matplotlib.figure import Figure  # not pyplot: the caller's backend and figures stay as they are

    fig = Figure(figsize=(9, 2.2 + 1.8 * len(signals)))
    axes = fig.subplots(len(signals), 1, sharex=True, squeeze=False)
    for ax, s in zip(axes[:, 0], signals):
        ax.plot(s.t_s, s.values, lw=1.0, drawstyle="steps-post" if len(s.values) < 2000 else "default")
        ax.set_ylabel(s.name, fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("simulation time (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def _html(signals: list[Signal], out: Path, title: str) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=len(signals), cols=1, shared_xaxes=True, vertical_spacing=0.04, subplot_titles=[s.name for s in signals]
    )
    for row, s in enumerate(signals, 1):
        fig.add_trace(go.Scattergl(x=s.t_s, y=s.values, mode="lines", name=s.name, line_shape="hv"), row=row, col=1)
    fig.update_xaxes(title_text="simulation time (s)", row=len(signals), col=1)
    fig.update_layout(title=title, height=220 + 200 * len(signals), showlegend=False)
    from plotly.offline import get_plotlyjs

    page = _PAGE.format(
        title=html.escape(title or "hopsim plot"),
        plotly=get_plotlyjs(),
        fallback=_NO_WEBGL_SCRIPT,
        figure=fig.to_html(include_plotlyjs=False, full_html=False),
    )
    out.write_text(page, encoding="utf-8")


# The page of an HTML plot: plotly.js, then (before the figure is drawn) a check that the browser
# gives WebGL, which plotly's scattergl traces draw with. Without it (turned off, or blocked on its
# GPU) plotly.js fails with "e is not a function" and leaves a blank page: the check draws the
# traces as SVG lines instead, and says why above them.
_NO_WEBGL_SCRIPT = """
(function () {
  var gl = null;
  try {
    var canvas = document.createElement("canvas");
    gl = canvas.getContext("webgl2") || canvas.getContext("webgl");
  } catch (err) { gl = null; }
  window.hopsimWebGL = Boolean(gl);
  if (gl) return;
  var newPlot = Plotly.newPlot;
  Plotly.newPlot = function (div, data) {
    var rest = Array.prototype.slice.call(arguments, 2);
    var plain = (data || []).map(function (trace) {
      return trace.type === "scattergl" ? Object.assign({}, trace, {type: "scatter"}) : trace;
    });
    return newPlot.apply(Plotly, [div, plain].concat(rest));
  };
  document.addEventListener("DOMContentLoaded", function () {
    document.getElementById("no-webgl").hidden = false;
  });
})();
"""
_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<script type="text/javascript">{plotly}</script>
<script type="text/javascript">{fallback}</script>
</head>
<body style="margin: 0; font: 13px/1.35 system-ui, sans-serif">
<div id="no-webgl" role="alert" hidden
 style="margin: 8px; padding: 8px 12px; border: 1px solid #c62828; background: #fff3f0">
<b>This page needs WebGL for fast plots</b>, and this browser has it turned off or cannot provide it: the
plots below are drawn without it, which is slower with many points. Turn on graphics (hardware)
acceleration in the browser's settings (Chrome, Edge: Settings &rsaquo; System; Firefox:
<code>about:config</code>, <code>webgl.disabled</code> set to false), or open the file in another browser.
</div>
{figure}
</body>
</html>
"""
