"""The headless Chromium that drives the viewer's page in hopsim's tests and benchmarks.

Debian's ``chromium`` package (``/usr/bin/chromium``; ``HOPSIM_CHROMIUM`` names another), started
by Playwright through its ``executable_path`` option. The flags keep it off the network (a closed
network refuses its background connections) and give it software WebGL (SwiftShader) where the
machine has no GPU.
"""

from __future__ import annotations

import os
import shutil

FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-swiftshader",
    "--use-angle=swiftshader",
]


def chromium_path() -> str | None:
    """The Chromium executable, or None if there is none."""
    named = os.environ.get("HOPSIM_CHROMIUM")
    if named:
        return named if os.path.exists(named) else None
    return shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def chromium_args() -> list[str]:
    return list(FLAGS)


__all__ = ["FLAGS", "chromium_args", "chromium_path"]
