"""Outputs that replace a file only when they are complete.

Every file hopsim writes under a name the user gave (a recording, a checkpoint, a table, a plot,
a campaign's results, a layout, matrices) is written under a name of its own beside its target,
``<stem>.partial-<pid><suffix>`` (``runs/l.mcap`` is written as ``runs/l.partial-4242.mcap`` by
process 4242), pushed to disk (fsync) and renamed over the target (:func:`os.replace`) only when
it is complete. Until then the target is the old file, untouched; after any failure or kill it
is either the old file or the complete new one, never a part of either. The partial name keeps
the target's suffix, so a killed run's recording opens as it is (``hopsim inspect``, ``replay``,
``view``, Foxglove).

:func:`replacing` is the one way to write such an output: a context manager giving the partial
path, renamed over the target when the block ends well and removed when it raises.
:class:`PendingOutput` is the same in two steps, for a writer whose end is decided elsewhere (a
recording, closed when its run ends, well or not).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

PARTIAL = ".partial-"


class OutputError(OSError, ValueError):
    """A complete output could not be renamed over its target: the message names the target, the
    reason, and the partial file that holds the output."""

    def __init__(self, pending: PendingOutput, err: OSError):
        reason = err.strerror or str(err)
        super().__init__(f"cannot write {pending.target} ({reason}); what was written is kept at {pending.path}")
        self.path = pending.path


def partial_path(target: str | Path, pid: int | None = None) -> Path:
    """The name ``target`` is written under by process ``pid`` (default: this one) until complete:
    ``<stem>.partial-<pid><suffix>`` in the same directory."""
    target = Path(target)
    return target.with_name(f"{target.stem}{PARTIAL}{os.getpid() if pid is None else pid}{target.suffix}")


def partials_of(target: str | Path) -> list[Path]:
    """The partial files of ``target`` there are (a run writing it, or one killed or failed while
    writing it), the newest first."""
    target = Path(target)
    pattern = re.compile(re.escape(target.stem + PARTIAL) + r"\d+" + re.escape(target.suffix) + r"\Z")
    try:
        found = [p for p in target.parent.iterdir() if pattern.match(p.name)]
    except OSError:
        return []

    def modified(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(found, key=modified, reverse=True)


class PendingOutput:
    """``target``'s new content, written at :attr:`path` (its partial name) until :meth:`commit`
    renames it over ``target``; :meth:`discard` removes it instead."""

    def __init__(self, target: str | Path):
        self.target = Path(target)
        self.path = partial_path(self.target)

    def commit(self) -> Path:
        """Push the written file to disk and rename it over the target (then push the rename); an
        :class:`OutputError` when it cannot be (the file stays at :attr:`path`)."""
        try:
            _fsync(self.path)
            os.replace(self.path, self.target)
        except OSError as err:
            raise OutputError(self, err) from None
        _fsync_directory(self.target.parent)
        return self.target

    def discard(self) -> None:
        """Remove the partial file, if there is one; the target stays as it was."""
        with suppress(FileNotFoundError):
            self.path.unlink()


def commit_all(outputs: list[PendingOutput], threads: int = 8) -> list[Path]:
    """:meth:`PendingOutput.commit` for many outputs at once (an export's files): every file is
    pushed to disk first (by ``threads`` threads: each push waits on the disk), then each is
    renamed over its target, then each directory's renames are pushed, once per directory."""
    from concurrent.futures import ThreadPoolExecutor

    def step(action: Callable[[PendingOutput], None]) -> Callable[[PendingOutput], None]:
        def guarded(o: PendingOutput) -> None:
            try:
                action(o)
            except OSError as err:
                raise OutputError(o, err) from None

        return guarded

    with ThreadPoolExecutor(max(1, min(threads, len(outputs)))) as pool:
        list(pool.map(step(lambda o: _fsync(o.path)), outputs))
        list(pool.map(step(lambda o: os.replace(o.path, o.target)), outputs))
        list(pool.map(_fsync_directory, sorted({o.target.parent for o in outputs})))
    return [o.target for o in outputs]


@contextmanager
def replacing(target: str | Path) -> Iterator[Path]:
    """Write ``target`` through its partial name: ``with replacing(out) as tmp: write(tmp)``. The
    file written at ``tmp`` replaces ``target`` when the block ends well; when it raises, ``tmp``
    is removed and ``target`` is left as it was. A complete file that cannot be renamed over
    ``target`` is kept at ``tmp`` (:class:`OutputError` names it)."""
    pending = PendingOutput(target)
    pending.path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield pending.path
    except BaseException:
        pending.discard()
        raise
    pending.commit()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX; elsewhere the rename is all there is)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
