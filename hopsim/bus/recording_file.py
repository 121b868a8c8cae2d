"""What every reader of a recording accepts: a regular file.

A directory cannot be read as one; a character device (``/dev/zero``) says its size is 0 and
never ends; a FIFO blocks its reader until a writer comes. So ``inspect``, ``replay``, ``plot``,
``view``, ``export``, ``layout`` and the library's readers look at what the path is (:func:`os.stat`,
which neither opens nor blocks) before they open it, and refuse anything but a regular file with
one line: ``runs/x is a directory, not a recording file``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def recording_file_problem(path: str | Path) -> str | None:
    """None when ``path`` is a regular file (or a link to one); else why it cannot be read as a
    recording, as one sentence naming it: ``no such file X``, ``X is a FIFO, not a recording
    file``, ``cannot read X (Permission denied)``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"no such file {path}"
    except OSError as err:
        return f"cannot read {path} ({err.strerror or err})"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{path} is {kind}, not a recording file"


def check_recording_file(path: str | Path, error: type[Exception] = ValueError) -> Path:
    """``path`` if it is a regular file; else ``error`` with :func:`recording_file_problem`'s sentence."""
    problem = recording_file_problem(path)
    if problem is not None:
        raise error(problem)
    return Path(path)
