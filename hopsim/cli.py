"""The ``hopsim`` command: list and run scenarios."""

from __future__ import annotations

import re
from pathlib import Path

import typer
import typer.rich_utils
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

PIPED_WIDTH = 160  # columns of what is written to a pipe or a file (help, tables)
_TYPER_WIDTH = typer.rich_utils.MAX_WIDTH  # what typer took from TERMINAL_WIDTH (None: the terminal's)


def _fit_output() -> None:
    """Output that goes to a pipe or a file is laid out PIPED_WIDTH columns wide (rich's default
    there is 80, which cuts option and parameter names short: ``--checkpoint-eve…``), unless
    COLUMNS or TERMINAL_WIDTH says otherwise."""
    import os
    import sys

    piped = not (os.environ.get("COLUMNS") or os.environ.get("TERMINAL_WIDTH") or sys.stdout.isatty())
    typer.rich_utils.MAX_WIDTH = PIPED_WIDTH if piped else _TYPER_WIDTH
    console.width = PIPED_WIDTH if piped else None  # None: the terminal's, or COLUMNS


def _plain_flags(params: list) -> list:
    """``params`` with every flag shown in help as a flag (typer writes ``<bool>`` beside a
    boolean option, as if it took a value)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Group(typer.core.TyperGroup):
    """Typer's group, its help and its commands' laid out by :func:`_fit_output` and
    :func:`_plain_flags`."""

    def main(self, *args, **kwargs):
        _fit_output()
        return super().main(*args, **kwargs)

    def get_params(self, ctx):
        return _plain_flags(super().get_params(ctx))

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, _Group):  # a group does it itself
            _plain_flags(command.get_params(ctx))
        return command


app = typer.Typer(
    cls=_Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="hopsim: formations of small spacecraft as a discrete-event actor simulation.",
)
console = Console()
err = Console(stderr=True, soft_wrap=True)  # an error is one line, whatever the width: paths and names stay whole


def _parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--set takes key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


class CompileNotice:
    """Says when numba compiles (a first run, or a first run after an upgrade) and how long it
    took: nothing compiles in silence. Later runs load the compiled kernels from the cache
    (``__pycache__`` beside the sources) and print nothing."""

    def __init__(self):
        from numba.core import event

        self.count, self.seconds, self._depth, self._t0, self._reported = 0, 0.0, 0, 0.0, 0
        listener = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                listener.started()

            def on_end(self, ev):
                listener.ended()

        self._listener = _Listener()
        event.register("numba:compile", self._listener)

    def started(self) -> None:
        import time

        if self._depth == 0:
            if self.count == 0:
                err.print("compiling numerical kernels (first run only; later runs load them from the cache)...")
            self._t0 = time.perf_counter()
        self._depth += 1

    def ended(self) -> None:
        import time

        self._depth -= 1
        self.count += 1  # every function, those compiled for another too
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._t0
            if self.count // 40 != self._reported:
                self._reported = self.count // 40
                err.print(f"  ... {self.count} functions, {self.seconds:.0f} s")

    def close(self) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        if self.count:
            err.print(
                f"compiled numerical kernels in {self.seconds:.1f} s ({self.count} functions; cached for later runs)"
            )


def _plain_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one plain sentence (no source file, no line of code)."""
    err.print("[yellow]warning:[/yellow] " + escape(str(message)))


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        console.print(f"hopsim {version('hopsim')}")
        raise typer.Exit()


def _compile_ahead_of(name: str) -> None:
    """Compile ``name``'s kernels ahead on every core if this machine has not yet (see
    :mod:`hopsim.scenarios.compile_ahead`); if that cannot be done they compile at their first call."""
    from hopsim.scenarios.compile_ahead import compile_ahead

    try:
        compile_ahead(name, report=err.print)
    except Exception as e:  # e.g. no process can be started here
        err.print(
            "[yellow]warning:[/yellow] "
            + escape(f"the kernels were not compiled ahead ({type(e).__name__}: {e}); they compile at their first call")
        )


@app.callback()
def main_options(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print hopsim's version and exit"
    ),
) -> None:
    """hopsim: formations of small spacecraft as a discrete-event actor simulation."""
    import warnings

    warnings.showwarning = _plain_warning
    notice = CompileNotice()
    ctx.call_on_close(notice.close)


UNITS = (  # the longest suffix that fits first
    ("_rad_s", "rad/s"),
    ("_per_s", "1/s"),
    ("_kgpm3", "kg/m^3"),
    ("_m2", "m^2"),
    ("_mps2", "m/s^2"),
    ("_mps", "m/s"),
    ("_kgm2", "kg m^2"),
    ("_Wh", "Wh"),
    ("_hz", "Hz"),
    ("_deg", "deg"),
    ("_rad", "rad"),
    ("_kg", "kg"),
    ("_N", "N"),
    ("_m", "m"),
    ("_s", "s"),
    ("_psig", "psig"),
)


def unit_of(name: str) -> str:
    """The unit a parameter's name carries in its suffix (``altitude_m`` -> m), or ''."""
    for suffix, unit in UNITS:
        if name.endswith(suffix):
            return unit
    return ""


def _type_name(annotation) -> str:
    """A parameter's type as it reads (``tuple[float, float, float]``, ``float | None``), without
    the bounds its annotation carries (an error names them)."""
    import types
    from typing import Annotated, Literal, Union, get_args, get_origin

    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def _default_text(field) -> str:
    from pydantic_core import PydanticUndefined

    if field.default is PydanticUndefined:
        return "(required)" if field.default_factory is None else repr(field.default_factory())
    return repr(field.default)


@app.command("scenarios")
def scenarios_cmd(name: str | None = typer.Argument(None, help="a scenario: show its parameters")) -> None:
    """List the built-in scenarios, or every parameter of one (type, unit, default, description)."""
    from hopsim.scenarios import ScenarioError, all_scenarios, get_scenario

    if name is None:
        table = Table(
            Column("scenario", no_wrap=True),
            "duration",
            "what flies",
            title="hopsim scenarios (details: hopsim scenarios NAME)",
        )
        for spec in all_scenarios():
            table.add_row(spec.name, f"{spec.default_duration_s:g} s", spec.summary)
        console.print(table)
        return
    try:
        spec = get_scenario(name)
    except ScenarioError as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    console.print(f"[bold]{spec.name}[/bold]: {spec.summary} (default duration {spec.default_duration_s:g} s)")
    table = Table(Column("parameter", no_wrap=True), "type", "unit", "default", "description")  # names whole
    for key, field in spec.params.model_fields.items():
        table.add_row(key, _type_name(field.annotation), unit_of(key), _default_text(field), field.description or "")
    console.print(table)
    console.print(f"Set one with --set KEY=VALUE (vectors: --set KEY=1,2,3); faults: hopsim faults {spec.name}")


@app.command("faults")
def faults_cmd(name: str = typer.Argument(..., help="scenario name")) -> None:
    """The fault targets of a scenario (its models), the kinds each accepts and the fields each reads."""
    from hopsim.kernel import Simulation
    from hopsim.kernel.faults import FAULT_FIELDS, fault_kinds
    from hopsim.scenarios import ScenarioError, get_scenario

    try:
        spec = get_scenario(name)
        sim = Simulation()
        spec.build(sim, spec.make_params({}))
    except ScenarioError as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    table = Table(
        Column("target", no_wrap=True),
        Column("kind", no_wrap=True),
        "fields it reads",
        title=f"faults of {name} (every model also accepts kill)",
    )
    for slot in sim.slots():
        kinds = {k: v for k, v in fault_kinds(slot.cls).items() if k in slot.accepts_faults}  # kill apart
        for kind, fields in kinds.items():
            table.add_row(slot.name, kind, ", ".join(fields) or "-")
    console.print(table)
    console.print("Fields: " + "; ".join(f"{f}: {d}" for f, d in FAULT_FIELDS.items()))
    console.print(
        "Give one with --fault t=S,target=MODEL,kind=KIND[,field=value...] (vectors: force_N=[1,0,0]; vehicles=a+b)"
    )


@app.command("run")
def run_cmd(
    name: str = typer.Argument(..., help="scenario name (see `hopsim scenarios`)"),
    duration: float | None = typer.Option(None, help="simulated seconds (default: the scenario's)"),
    seed: int = typer.Option(0, help="run seed; every model's generator derives from it"),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter, key=value (repeatable)"),
    out: Path | None = typer.Option(None, help="record every envelope to this MCAP file"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace an existing --out file (only by a complete recording: a run that fails leaves it as it was)",
    ),
    backend: str = typer.Option("local", help="runtime: local (in-process) or ray"),
    placement: str | None = typer.Option(None, help="with --backend ray: per-island (default), per-model or shards:K"),
    ray_address: str | None = typer.Option(None, help="connect to an existing Ray cluster"),
    progress: bool = typer.Option(True, help="show a progress bar"),
    fault: list[str] = typer.Option([], help="t=S,target=MODEL,kind=KIND[,index=I,value=V,duration=S] (repeatable)"),
    checkpoint_every: float | None = typer.Option(None, help="write a checkpoint every S simulated seconds"),
    checkpoint_dir: Path = typer.Option(Path("checkpoints"), help="where checkpoints go"),
    cpu: bool = typer.Option(False, help="measure and print each actor's share of CPU time"),
    batching: bool = typer.Option(
        False, help="propagate islands whose hops coincide as one batch (same result, bit for bit)"
    ),
    rate_groups: bool = typer.Option(
        True, help="advance islands on one periodic schedule with one barrier per instant (same result, bit for bit)"
    ),
    fleets: bool = typer.Option(
        True, help="propagate a rate group's hops through the models' fleet forms (same result, bit for bit)"
    ),
    row_blocks: bool = typer.Option(
        True,
        help="run a rate group's alike members kind by kind over rows, where "
        "their models have row forms (same result, bit for bit)",
    ),
    stats: bool = typer.Option(
        False, "--stats", help="also print the kernel's statistics (islands, barriers, hops, deliveries, Ray windows)"
    ),
    verbose: bool = typer.Option(False, "--verbose", help="let Ray print its notices and its workers' output"),
    pace: float | None = typer.Option(
        None, help="run at this many times real time (1: real time); the recorded stream is the same"
    ),
    live: bool = typer.Option(
        False,
        "--live",
        help="serve the run over Foxglove's WebSocket protocol while it "
        "runs, and take commands (pause, resume, pace, fault; a fault its target cannot take is "
        "refused and the run goes on; a pause ends when the clients that asked for it disconnect)",
    ),
    live_host: str = typer.Option("127.0.0.1", help="with --live: the address to serve on"),
    live_port: int = typer.Option(8765, min=0, max=65535, help="with --live: the port (0: a free one)"),
    live_token: str | None = typer.Option(
        None,
        help="with --live: the token every client must give (ws://HOST:PORT/?token=T), on any address, "
        "loopback included (default: none on loopback, one drawn on another address)",
    ),
    kernel_events: str = typer.Option(
        "events",
        help="kernel events recorded: events (zero-crossings, faults, "
        "contacts, docks, merges, stops) or all (also every "
        "barrier of every island)",
    ),
    layout: bool = typer.Option(
        False, "--layout", help="with --out: also write a Foxglove layout beside the recording (FILE.layout.json)"
    ),
) -> None:
    """Run a scenario and, with --out, record it."""
    _check_out(out, force)
    if layout and out is not None:
        from hopsim.view.layout import layout_path

        _check_out(layout_path(out), force)
    if checkpoint_every is not None:
        _check_checkpoint_dir(checkpoint_dir)
    if backend == "ray":
        from hopsim.kernel.distributed.ray_runtime import set_verbose

        set_verbose(verbose)
    from hopsim.scenarios import ScenarioError, run_scenario
    from hopsim.scenarios.registry import FaultSpec
    from hopsim.scenarios.runner import check_run

    overrides: dict = _parse_sets(set_)
    try:
        if fault:
            overrides["faults"] = [FaultSpec.parse(f).model_dump() for f in fault]
        # a bad parameter, seed or duration is reported before anything compiles
        check_run(name, overrides, seed, duration, checkpoint_every)
        pacer, server = _pacing(pace, live, live_host, live_port, live_token, out, backend)
        _compile_ahead_of(name)
        try:
            result = run_scenario(
                name,
                overrides,
                seed=seed,
                duration_s=duration,
                out=out,
                backend=backend,
                progress=progress and not live,
                ray_address=ray_address,
                checkpoint_every_s=checkpoint_every,
                checkpoint_dir=checkpoint_dir,
                cpu_accounting=cpu,
                placement=placement,
                batching=batching,
                rate_groups=rate_groups,
                fleets=fleets,
                pacer=pacer,
                tap=server.tap if server else None,
                kernel_events=kernel_events,
                row_blocks=row_blocks,
            )
        finally:
            if server is not None:
                server.stop()
    except (ScenarioError, ValueError) as e:
        err.print("[red]error:[/red] " + escape(_error_text(e)))
        raise typer.Exit(2) from None
    except KeyboardInterrupt as e:  # Ctrl-C: where the recording so far is
        err.print("[red]interrupted[/red]" + escape("".join(f"; {n}" for n in getattr(e, "__notes__", ()))))
        raise typer.Exit(130) from None
    _report(result, stats)
    if layout and out is not None:
        from hopsim.view.layout import write_layout

        console.print(f"Foxglove layout: {write_layout(out, live=live).resolve()}")
    if "pacing" in result.stats:
        p = result.stats["pacing"]
        console.print(
            f"pacing: {p['ticks']} ticks, {p['overruns']} overruns, lateness p50 {p['lateness_p50_ms']:.3f} ms, "
            f"p99 {p['lateness_p99_ms']:.3f} ms; live faults sent: {p['live_faults']}"
        )


def _pacing(pace, live, host, port, token, out, backend):
    """The pacer and the live server a run asked for (None, None: neither)."""
    if pace is None and not live:
        return None, None
    from hopsim.scenarios.pacing import Pacer, check_factor

    if pace is not None:
        check_factor(pace)
    if backend != "local":
        raise ValueError("--pace and --live run on the local backend (drop --backend ray)")
    if live and out is None:
        raise ValueError("--live records what the run receives (faults sent live are part of the run): give --out FILE")
    pacer = Pacer(pace)
    if not live:
        return pacer, None
    from hopsim.bus.live import LiveServer

    server = LiveServer(pacer, host, port, token)
    console.print(
        f"live: {server.url} (Foxglove: open connection, Foxglove WebSocket); "
        f"parameters pace and paused; services pause, resume, pace, fault"
    )
    return pacer, server


@app.command("resume")
def resume_cmd(
    checkpoint_file: Path = typer.Argument(..., help="a checkpoint written by `hopsim run --checkpoint-every`"),
    out: Path | None = typer.Option(None, help="record the rest of the run to this MCAP file"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace an existing --out file (only by a complete recording: a run that fails leaves it as it was)",
    ),
    duration: float | None = typer.Option(None, help="end time (default: the original run's)"),
    checkpoint_every: float | None = typer.Option(
        None, help="write a checkpoint every S simulated seconds (default: none; not the original run's)"
    ),
    checkpoint_dir: Path | None = typer.Option(None, help="where checkpoints go (default: the checkpoint's directory)"),
    progress: bool = typer.Option(True, help="show a progress bar"),
    stats: bool = typer.Option(False, "--stats", help="also print the kernel's statistics"),
) -> None:
    """Continue a run from a checkpoint; the stream equals the uninterrupted run's from there on."""
    _check_out(out, force)
    if checkpoint_every is not None:
        _check_checkpoint_dir(checkpoint_dir or checkpoint_file.parent)
    from hopsim.kernel.checkpoint import CheckpointError
    from hopsim.scenarios.runner import resume_run

    try:
        result = resume_run(
            checkpoint_file,
            out=out,
            duration_s=duration,
            progress=progress,
            checkpoint_dir=checkpoint_dir,
            checkpoint_every_s=checkpoint_every,
        )
    except (CheckpointError, ValueError) as e:  # (a ScenarioError is a ValueError)
        err.print("[red]error:[/red] " + escape(_error_text(e)))
        raise typer.Exit(2) from None
    _report(result, stats)


ISLANDS_LISTED = 12  # more islands than this are summed up in one line


def _check_out(out: Path | None, force: bool, option: str = "--out") -> None:
    """A file already at ``out`` is replaced only when asked (``--force``), and then only by a
    complete new one: every output is written under its partial name beside its target and
    renamed over it when complete (:mod:`hopsim.bus.atomic`)."""
    if out is None:
        return
    if out.is_dir():  # no file is renamed over a directory, --force or not
        err.print(f"[red]error:[/red] {escape(str(out))} is a directory: give {option} a file name")
        raise typer.Exit(2)
    if out.exists() and not force:
        err.print(f"[red]error:[/red] {escape(str(out))} exists: give --force to replace it, or another {option}")
        raise typer.Exit(2)
    _check_writable(out, option)


def _check_writable(out: Path, option: str) -> None:
    """That a file can be made beside ``out`` (where its partial file goes, its directory made if
    missing, as the output's own writer does): tried, and removed."""
    from hopsim.bus.atomic import partial_path

    probe = partial_path(out)
    try:
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.open("xb").close()
        probe.unlink()
    except OSError as e:
        err.print(f"[red]error:[/red] cannot write {escape(str(out))} ({e.strerror}): give another {option}")
        raise typer.Exit(2) from None


def _check_checkpoint_dir(directory: Path) -> None:
    """``--checkpoint-dir`` names a directory (made if missing) this process can write in."""
    if directory.exists() and not directory.is_dir():
        err.print(f"[red]error:[/red] --checkpoint-dir {escape(str(directory))} is a file: name a directory")
        raise typer.Exit(2)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        err.print(f"[red]error:[/red] cannot make --checkpoint-dir {escape(str(directory))} ({e.strerror})")
        raise typer.Exit(2) from None
    _check_writable(directory / "probe.ckpt", "--checkpoint-dir")


def _error_text(e: BaseException) -> str:
    """An error and its notes (where a failed run's recording is) as one line."""
    return "; ".join([str(e), *getattr(e, "__notes__", ())])


def _report(result, stats: bool = False) -> None:
    speed = result.simulated_s / result.wall_s if result.wall_s > 0 else float("inf")
    part = "" if result.resumed_at_s is None else f" (from the checkpoint at {result.resumed_at_s:g} s)"
    console.print(
        f"{result.scenario}: {result.simulated_s:g} s simulated{part} in {result.wall_s:.2f} s wall "
        f"({speed:.0f}x real time), stop: {result.stop_reason}, {result.message_count} messages"
    )
    if result.outcome:
        table = Table("outcome", "value", title=None, show_header=True)
        for key, value in result.outcome.items():
            table.add_row(key, f"{value:.6g}" if isinstance(value, float) else str(value))
        console.print(table)
    if stats:
        _report_stats(result)
    if result.cpu:
        console.print(
            "CPU share per actor: "
            + ", ".join(f"{n} {v['share']:.1%}" for n, v in sorted(result.cpu.items(), key=lambda kv: -kv[1]["share"]))
        )
    if result.out:
        console.print(f"recording: {result.out.resolve()}  (sha256 of stream {result.stream_sha256[:16]}...)")


def _report_stats(result) -> None:
    islands = result.stats["islands"]
    if len(islands) <= ISLANDS_LISTED:
        for island, s in islands.items():
            console.print(
                f"  island {island}: {s['barriers']} barriers, {s['hops']} hops, "
                f"{s['deliveries']} deliveries, {s['rollbacks']} rollbacks"
            )
    else:
        barriers = sorted(s["barriers"] for s in islands.values())
        total = {k: sum(s[k] for s in islands.values()) for k in ("hops", "deliveries", "rollbacks")}
        lo, hi = barriers[0], barriers[-1]
        console.print(
            f"  {len(islands):,} islands: {lo if lo == hi else f'{lo} to {hi}'} barriers each, "
            f"{total['hops']:,} hops, {total['deliveries']:,} deliveries, "
            f"{total['rollbacks']:,} rollbacks in all"
        )
    for schedule, g in result.stats.get("rate_groups", {}).items():
        console.print(
            f"  rate group ({schedule}): {g['instants']:,} instants, {g['member_barriers']:,} member "
            f"barriers, {g['joins']:,} joins, {g['leaves']:,} leaves, "
            f"{g.get('block_instants', 0):,} instants as row blocks"
        )
    fleet = result.stats.get("fleets")
    if fleet and fleet["calls"]:
        console.print(f"  fleet forms: {fleet['hops']:,} hops in {fleet['calls']:,} calls")
    sync = result.stats.get("sync")
    if sync:
        lookahead = "none" if sync["lookahead_s"] is None else f"{sync['lookahead_s']:g} s"
        console.print(
            f"  Ray hosts: {len(sync['host_cpu_s'])}, {sync['windows']:,} windows "
            f"({sync['pipelined_windows']:,} pipelined, lookahead {lookahead}), "
            f"{sync['crossing_messages']:,} messages between hosts, "
            f"{sync['wait_s']:.2f} s waiting at windows"
        )
    for rec in result.stats.get("recoveries", []):
        console.print(
            f"  recovered: actor {rec['actor']} killed at {rec['t_s']:g} s, run resumed from "
            f"the checkpoint at {rec['resumed_from_s']:g} s"
        )


@app.command("replay")
def replay_cmd(
    file: Path = typer.Argument(..., help="a recording made by `hopsim run --out`"),
    live: str | None = typer.Option(
        None, help="partial replay: only these actors run (comma-separated); every other input comes from the recording"
    ),
    playback_only: bool = typer.Option(False, help="nothing live: republish the recorded outputs"),
    set_: list[str] = typer.Option([], "--set", help="change a scenario parameter for the replay"),
    out: Path | None = typer.Option(None, help="record the replayed run (diverged or not) to this MCAP file"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace an existing --out file (only by a complete recording: a run that fails leaves it as it was)",
    ),
    checkpoint: Path | None = typer.Option(
        None,
        "--checkpoint",
        metavar="CKPT",
        help="a resumed run's recording: the checkpoint file it was resumed from (checked by its SHA-256)",
    ),
) -> None:
    """Re-run a recording and compare: prints 'identical' or the first envelope that differs."""
    if out is not None and out.resolve() == file.resolve():
        err.print("[red]error:[/red] " + escape(f"--out {out} is the recording being replayed: give another file"))
        raise typer.Exit(2)
    _check_out(out, force)
    from hopsim.bus.atomic import OutputError
    from hopsim.scenarios.replay import ReplayError, replay_recording

    live_names = [] if playback_only else ([n.strip() for n in live.split(",") if n.strip()] if live else None)
    try:
        result = replay_recording(file, live_names, _parse_sets(set_), out=out, checkpoint=checkpoint)
    except (ReplayError, OutputError) as e:
        err.print(f"[red]error:[/red] {escape(str(e))}")  # a recording's text is not markup
        raise typer.Exit(2) from None
    if not result.report.complete:
        console.print(f"[yellow]{escape(result.report.summary())}[/yellow]")
    if out is not None:
        console.print(f"replayed run recorded: {out.resolve()}")
    if result.skipped_ns:
        spans = ", ".join(
            f"{'the start' if a < 0 else f'{a / 1e9:g} s'} to {b / 1e9:g} s" for a, b in result.skipped_ns[:10]
        )
        console.print(f"not compared (damaged parts of the recording): {spans}", markup=False)
    if result.identical:
        console.print(f"identical: {result.compared} envelopes ({result.mode} replay, {result.wall_s:.2f} s wall)")
        return
    console.print(f"[red]diverged[/red] ({result.mode} replay): {escape(str(result.difference))}")
    console.print(result.machines(), markup=False)
    raise typer.Exit(1)


@app.command("campaign")
def campaign_cmd(
    name: str = typer.Argument(..., help="scenario name"),
    fault: list[str] = typer.Option(..., help="one run per fault: t=S,target=MODEL,kind=KIND[,...]"),
    seed: int = typer.Option(0, help="the seed of every run (runs differ by their fault only)"),
    duration: float | None = typer.Option(None),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter, key=value"),
    table: Path = typer.Option(Path("runs/campaign.md"), help="where the table goes (.md or .csv)"),
    directory: Path | None = typer.Option(
        None,
        "--dir",
        help="keep the Monte Carlo campaign here "
        "(results.csv, summary, plots; an interrupted campaign in it is "
        "resumed)",
    ),
    backend: str = typer.Option("local", help="local (one process) or ray (one task per run)"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace an existing --table file, and a --dir that holds another campaign (its files are removed)",
    ),
) -> None:
    """Run a scenario once without faults and once per --fault; tabulate the outcomes (a Monte
    Carlo campaign whose dispersion is the fault list, every run with the same seed)."""
    from hopsim.scenarios import ScenarioError
    from hopsim.scenarios.campaign import fault_campaign, format_cell, run_campaign, write_table
    from hopsim.scenarios.montecarlo import CampaignDirectory
    from hopsim.scenarios.registry import FaultSpec

    _check_out(table, force, "--table")
    try:
        specs = [FaultSpec.parse(f) for f in fault]
        overrides = _parse_sets(set_)
        if directory is not None:  # refused before anything runs, as the table
            CampaignDirectory(directory).check(fault_campaign(name, specs, seed, duration, overrides), force)
        _compile_ahead_of(name)
        rows = run_campaign(
            name,
            specs,
            seed=seed,
            duration_s=duration,
            overrides=overrides,
            directory=directory,
            backend=backend,
            force=force,
        )
    except (ScenarioError, ValueError) as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    metrics = list(dict.fromkeys(k for r in rows for k in r.outcome))
    out = Table("run", *metrics, "error")
    for r in rows:
        out.add_row(escape(r.label), *[format_cell(r.outcome.get(m)) for m in metrics], escape(r.error or "-"))
    console.print(out)
    try:
        write_table(rows, table)
    except OSError as e:  # an OutputError names the table and where it is kept
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    console.print(f"table: {table.resolve()}" + (f"; campaign: {directory.resolve()}" if directory else ""))


@app.command("plot")
def plot_cmd(
    file: Path = typer.Argument(..., help="a recording"),
    signals: list[str] = typer.Argument(
        ..., help="TOPIC.FIELD[.FIELD...] (e.g. sph1/state.omega_BN_B.z); an element of a repeated number: FIELD[I]"
    ),
    out: Path = typer.Option(Path("plot.png"), help="the plot: .png, .svg, .pdf, or .html (interactive, offline)"),
    csv_out: Path | None = typer.Option(
        None, "--csv", help="also write the columns (t_s and each signal) to this CSV file"
    ),
    force: bool = typer.Option(False, "--force", metavar="", help="replace an existing --out or --csv file"),
) -> None:
    """Plot fields of a recording against simulation time (read column by column)."""
    from contextlib import nullcontext

    from hopsim.bus.atomic import replacing
    from hopsim.view.columns import ColumnReader, ColumnsReport, SignalError, read_signals
    from hopsim.view.plots import plot_signals, shown

    _check_out(out, force)
    _check_out(csv_out, force, "--csv")
    report = ColumnsReport()
    drawn, lines = [], []
    try:
        if out.suffix not in (".png", ".svg", ".pdf", ".html"):
            raise ValueError(f"{out}: write .png, .svg, .pdf or .html")
        reader = ColumnReader(file, report)
        # one signal's samples held at a time: written to the CSV file, then kept as drawn
        with replacing(csv_out) if csv_out is not None else nullcontext() as tmp, _ColumnsFile(tmp) as columns:
            for name in signals:
                s = read_signals(reader, [name])[name]
                columns.write(s)
                t0, t1 = (s.t_s[0], s.t_s[-1]) if len(s.t_s) else (0, 0)
                lines.append(f"{s.name}: {len(s.values)} samples, {t0:g}-{t1:g} s")
                drawn.append(shown(s))
            path = plot_signals(drawn, out, title=file.name)
    except (SignalError, ValueError) as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    if report.damaged_chunks:
        err.print(f"[yellow]warning:[/yellow] {report.damaged_chunks} damaged chunk(s) of {report.chunks} skipped")
    for line in lines:
        console.print(line, markup=False)
    if csv_out is not None:
        console.print(f"columns: {csv_out.resolve()}")
    console.print(f"plot: {path.resolve()}")


class _ColumnsFile:
    """The CSV file of ``hopsim plot --csv`` at ``path`` (None: none): one row per sample of each
    signal: signal, t_s, value (signals may be sampled at different times), written signal by
    signal in blocks."""

    BLOCK = 100_000  # rows formatted at once

    def __init__(self, path: Path | None):
        import csv

        self.file = open(path, "w", newline="") if path is not None else None  # noqa: SIM115 (closed by close())
        if self.file is not None:
            self.writer = csv.writer(self.file)
            self.writer.writerow(["signal", "t_s", "value"])

    def write(self, s) -> None:
        import csv
        import io

        if self.file is None:
            return
        # the rows csv.writer writes (the name quoted where it must be; a number never is), a
        # block at a time: formatting every value (repr, exact) is most of the cost
        name = io.StringIO()
        csv.writer(name, lineterminator="").writerow([s.name])
        row = (name.getvalue().replace("{", "{{").replace("}", "}}") + ",{!r},{!r}\r\n").format
        for a in range(0, len(s.values), self.BLOCK):
            t, v = s.t_s[a : a + self.BLOCK].tolist(), s.values[a : a + self.BLOCK].tolist()
            self.file.write("".join(map(row, t, v)))

    def __enter__(self) -> _ColumnsFile:
        return self

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            self.file.close()


@app.command("layout")
def layout_cmd(
    file: str = typer.Argument(..., help="a recording, or a built-in scenario (its shipped layout)"),
    out: Path | None = typer.Option(
        None,
        help="the layout file (default: FILE.layout.json beside the "
        "recording; SCENARIO.layout.json here for a scenario)",
    ),
    live: bool = typer.Option(False, "--live", help="with a recording: add the live panels (pace, pause, fault)"),
    force: bool = typer.Option(False, "--force", metavar="", help="replace an existing layout file"),
) -> None:
    """Write a Foxglove layout: 3-D scene, positions, contacts, kernel events (and live panels)."""
    import shutil

    from hopsim.bus.atomic import replacing
    from hopsim.view.columns import SignalError
    from hopsim.view.layout import builtin_layout, layout_path, write_layout

    shipped = builtin_layout(file)
    scenario = not Path(file).exists() and shipped.exists()
    if Path(file).exists() or scenario:
        _check_out(out or (Path(f"{file}.layout.json") if scenario else layout_path(file)), force)
    try:
        if scenario:
            path = out or Path(f"{file}.layout.json")
            with replacing(path) as tmp:
                shutil.copyfile(shipped, tmp)
        elif not Path(file).exists():
            err.print(
                "[red]error:[/red] "
                + escape(f"{file} is neither a recording nor a built-in scenario (see `hopsim scenarios`)")
            )
            raise typer.Exit(2)
        else:
            path = write_layout(file, out, live)
    except (SignalError, OSError) as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    console.print(f"Foxglove layout: {Path(path).resolve()} (Foxglove: Layouts, Import from file)")


def builtin_layouts() -> dict[str, str]:
    """The shipped layouts' text, built from each built-in scenario's topics (with live panels):
    ``python -c "from hopsim.cli import write_builtin_layouts; write_builtin_layouts()"`` writes them."""
    from hopsim.scenarios import all_scenarios
    from hopsim.scenarios.runner import describe_scenario
    from hopsim.view.layout import foxglove_layout, scene_frame

    layouts = {}
    for spec in all_scenarios():
        if spec.build.__module__.startswith("hopsim."):
            topics, scene = describe_scenario(spec.name)
            layouts[spec.name] = foxglove_layout(topics, live=True, frame=scene_frame(scene)).to_json()
    return layouts


def write_builtin_layouts() -> None:
    from hopsim.view.layout import LAYOUTS

    LAYOUTS.mkdir(exist_ok=True)
    for name, text in builtin_layouts().items():
        (LAYOUTS / f"{name}.json").write_text(text + "\n")


def _scene_chief(info: dict) -> str | None:
    """The chief a recording's scenario names for its Hill frame (``scene_json``), if any."""
    import json

    try:
        chief = json.loads(info.get("run", {}).get("scene_json", "{}")).get("hill_chief")
    except (TypeError, ValueError, AttributeError):
        return None
    return chief if isinstance(chief, str) else None


@app.command("view")
def view_cmd(
    file: Path = typer.Argument(..., help="a recording, or a Monte Carlo campaign directory (with --run)"),
    run: int | None = typer.Option(None, help="in a campaign directory: the retained run to open"),
    host: str = typer.Option(
        "127.0.0.1",
        help="the address to serve on (another than 127.0.0.1 makes the recording readable from the network)",
    ),
    port: int = typer.Option(0, min=0, max=65535, help="the port (0: a free one)"),
    browser: bool = typer.Option(True, help="open the page in the default browser"),
    follow: bool = typer.Option(
        False,
        "--follow",
        help="a recording still being written (a live run's --out): the page shows what it holds as it grows",
    ),
    hill: str | None = typer.Option(
        None,
        metavar="CHIEF",
        help="show the vehicles relative to vehicle CHIEF, "
        "in its Hill frame (LVLH: x radial, y along-track, z orbit normal)",
    ),
) -> None:
    """Open a recording in the browser: the vehicles in 3-D, playback, events, plots (offline)."""
    import webbrowser

    from hopsim.view.columns import SignalError
    from hopsim.view.server import RunView, serve

    growing = _being_written(file) if follow and run is None else None
    path = growing or _recording_to_view(file, run)
    if growing is not None:
        console.print(
            escape(f"following {growing} (a run writing {file.name}: it becomes {file.name} when the run ends)")
        )
    try:
        view = RunView(path, follow=follow, hill_of=hill, then=file if growing else None)
    except (SignalError, OSError, ValueError) as e:
        err.print("[red]error:[/red] " + escape(f"{path}: {e}"))
        raise typer.Exit(2) from None
    try:
        server = serve(view, host, port)
    except OSError as e:
        err.print(
            "[red]error:[/red] " + escape(f"cannot serve on {host}:{port}: {e.strerror or e}; pick another --port")
        )
        raise typer.Exit(2) from None
    url = f"http://{host}:{server.server_address[1]}/"
    p = view.poses
    console.print(
        f"{path.name}: {len(p.vehicles)} vehicles, {len(p.t_s)} instants"
        + (f", in the Hill frame of {hill}" if hill else "")
        + (f" (every {p.every}th recorded instant)" if p.every > 1 else "")
        + f", {len(view.events)} events"
    )
    named = _scene_chief(view.info)
    if named and not hill:
        # the chief's name is the recording's text, not markup
        console.print(
            f"(its scenario flies around {named}: --hill {named} shows the others in its Hill frame)", markup=False
        )
    if view.report.damaged_chunks:
        err.print(
            f"[yellow]warning:[/yellow] {view.report.damaged_chunks} damaged chunk(s) of {view.report.chunks} skipped"
        )
    console.print(f"viewer: {url}  (Ctrl-C to stop)")
    console.file.flush()  # the address reaches a pipe now, not when the server stops
    if browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _being_written(file: Path) -> Path | None:
    """The partial file of ``file`` a run is writing (:mod:`hopsim.bus.atomic`), if one is newer
    than ``file``; else None."""
    from hopsim.bus.atomic import partials_of

    partials = partials_of(file)
    if not partials:
        return None
    try:
        if file.stat().st_mtime > partials[0].stat().st_mtime:
            return None
    except OSError:
        pass  # no file yet: the run's first
    return partials[0]


def _recording_to_view(file: Path, run: int | None) -> Path:
    """The recording ``hopsim view`` opens: ``file``, or a campaign's retained run."""
    from hopsim.bus.recording_file import recording_file_problem

    if not file.exists():
        err.print("[red]error:[/red] " + escape(f"no such file or directory {file}"))
        raise typer.Exit(2)
    if not file.is_dir():
        if run is not None:
            err.print("[red]error:[/red] " + escape(f"--run picks a run of a campaign directory; {file} is a file"))
            raise typer.Exit(2)
        problem = recording_file_problem(file)  # a FIFO or a device is refused unopened
        if problem is not None:
            err.print("[red]error:[/red] " + escape(problem))
            raise typer.Exit(2)
        return file
    from hopsim.scenarios import ScenarioError
    from hopsim.scenarios.montecarlo import CampaignDirectory

    directory = CampaignDirectory(file)
    kept = sorted(directory.path.glob("recordings/run_*.mcap"))
    if run is None:
        err.print(
            "[red]error:[/red] " + escape(f"{file} is a directory: name a retained run with --run ({_runs_text(kept)})")
        )
        raise typer.Exit(2)
    try:
        directory.campaign()
    except ScenarioError as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    path = directory.recording(run)
    if not path.exists():
        err.print(
            "[red]error:[/red] "
            + escape(
                f"run {run} was not retained ({_runs_text(kept)}); record it with "
                f"`hopsim montecarlo rerun {file} --run {run} --out run.mcap`, then `hopsim view run.mcap`"
            )
        )
        raise typer.Exit(2)
    return path


def _runs_text(kept: list[Path]) -> str:
    if not kept:
        return "no run was retained"
    runs = [str(int(p.stem.split("_")[1])) for p in kept]
    return "retained runs: " + ", ".join(runs[:20]) + (" ..." if len(runs) > 20 else "")


@app.command("inspect")
def inspect_cmd(file: Path = typer.Argument(..., help="a recording")) -> None:
    """Say what a recording holds and whether it is complete (reads damaged files too)."""
    from hopsim.bus.reading import survey_recording

    topics, report = survey_recording(file)  # the messages counted, not kept: memory bounded
    if report.not_a_file:  # missing, a directory, a FIFO: nothing was read
        err.print("[red]error:[/red] " + escape(str(report.problem)))
        raise typer.Exit(2)
    # a recording's text is the file's, not markup
    console.print(report.summary(), markup=False)
    for name, meta in report.metadata.items():
        text = ", ".join(f"{k}={v}" for k, v in meta.items() if k != "versions")
        console.print(f"  {name}: {text}", markup=False)
    for topic, n in sorted(topics.items()):
        console.print(f"  {topic}: {n}", markup=False)
    if not report.complete:
        raise typer.Exit(1)


@app.command("export")
def export_cmd(
    file: Path = typer.Argument(..., help="a recording"),
    to: Path = typer.Option(..., "--to", help="the directory: one Parquet file per topic, <topic>.parquet"),
    topics: str | None = typer.Option(
        None, "--topics", help="comma-separated topics or patterns (e.g. 'v*/state'); default: every topic"
    ),
    fields: str | None = typer.Option(
        None, "--fields", help="comma-separated fields (e.g. r_BN_N,mass; a message names its leaves); default: all"
    ),
    force: bool = typer.Option(False, "--force", metavar="", help="replace files already in the directory"),
) -> None:
    """Write a recording's topics as Parquet files: one column per leaf field, plus t_ns and t_s."""
    from hopsim.bus.frames import FrameError, export

    def items(text):
        return [t.strip() for t in text.split(",") if t.strip()] if text else None

    try:
        report = export(file, to, items(topics), items(fields), force)
    except (FrameError, OSError) as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    if report.damaged_chunks:
        err.print(
            f"[yellow]warning:[/yellow] {report.damaged_chunks} damaged chunk(s) of {report.chunks} skipped"
            + (f" ({escape(report.stopped)})" if report.stopped else "")
        )
    for topic, why in report.left_out.items():
        err.print(f"[yellow]warning:[/yellow] {escape(topic)} left out: {escape(why)}")
    rows = sum(report.topics.values())
    console.print(f"{len(report.files)} topics, {rows} rows: {to.resolve()}", markup=False)


montecarlo_app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    help="Monte Carlo campaigns: dispersed runs, a table, a summary, plots, retained recordings.",
)
app.add_typer(montecarlo_app, name="montecarlo")


def _parse_dispersion(text: str) -> dict:
    """``PATH=KIND:ARGS``: normal:MEAN,STD[,LOW,HIGH], uniform:LOW,HIGH, sequence:START,STEP,
    list:V;V;..., choice:V;V;..., constant:V (V in JSON, or a plain word)."""
    import json

    path, sep, spec = text.partition("=")
    kind, colon, args = spec.partition(":")
    if not sep or not colon or not path:
        raise typer.BadParameter(f"--disperse takes PATH=KIND:ARGS (e.g. altitude_m=normal:250,10), got {text!r}")

    def value(v: str):
        try:
            return json.loads(v)
        except ValueError:
            return v

    numbers = {"normal": ("mean", "std", "low", "high"), "uniform": ("low", "high"), "sequence": ("start", "step")}
    if kind in numbers:
        parts = [a for a in args.split(",") if a.strip()]
        try:
            nums = [float(a) for a in parts]
        except ValueError:
            raise typer.BadParameter(f"--disperse {text!r}: {kind} takes numbers separated by commas") from None
        return {"path": path, "knob": {"kind": kind, **dict(zip(numbers[kind], nums, strict=False))}}
    if kind in ("list", "choice"):
        return {"path": path, "knob": {"kind": kind, "values": [value(v) for v in args.split(";")]}}
    if kind == "constant":
        return {"path": path, "knob": {"kind": kind, "value": value(args)}}
    raise typer.BadParameter(
        f"--disperse {text!r}: unknown kind {kind!r}; choose normal, uniform, sequence, "
        f"list, choice or constant (mvnormal and grid: in a campaign file)"
    )


@app.command("linearize")
def linearize_cmd(
    name: str = typer.Argument(..., help="scenario name"),
    at: float = typer.Option(..., "--at", help="simulated time (s) of the operating point"),
    states: str = typer.Option(..., help="continuous states, comma-separated: MODEL.STATE or MODEL.* (e.g. sph1.*)"),
    inputs: str = typer.Option(
        "",
        help="inputs, comma-separated: MODEL.ATTRIBUTE[I], a model's public "
        "numeric attribute (e.g. sph1.disturbance_force_N[0])",
    ),
    outputs: str = typer.Option("", help="outputs, comma-separated: MODEL.PORT.FIELD (e.g. sph1.state.omega_BN_B.x)"),
    scheme: str = typer.Option("central2", help="central2 (O(h^2)), central4 (O(h^4)) or richardson"),
    eps: float = typer.Option(1e-6, help="finite-difference step (units of each element)"),
    eps1: float = typer.Option(0.0, help="relative step: h = eps + eps1 * eps * |value| (0 with richardson)"),
    seed: int = typer.Option(0, help="run seed"),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter, key=value (repeatable)"),
    fault: list[str] = typer.Option([], help="a fault before T, as for `hopsim run` (repeatable)"),
    out: Path | None = typer.Option(None, help="write A, B, C, D and their names to this .npz file"),
    force: bool = typer.Option(False, "--force", metavar="", help="replace an existing --out file"),
) -> None:
    """Linearize a scenario about its state at --at: A, B, C, D by finite differences."""
    import numpy as np

    from hopsim.kernel.bounds import check_seed, check_time_s
    from hopsim.scenarios import ScenarioError, get_scenario
    from hopsim.scenarios.linearize import linearize
    from hopsim.scenarios.registry import FaultSpec

    def names(text: str) -> list[str]:
        return [n.strip() for n in re.split(r",(?![^\[]*\])", text) if n.strip()]

    _check_out(out, force)
    overrides: dict = _parse_sets(set_)
    try:
        if fault:
            overrides["faults"] = [FaultSpec.parse(f).model_dump() for f in fault]
        get_scenario(name).make_params(overrides)
        check_seed(seed, "--seed")
        check_time_s(at, "--at")
        _compile_ahead_of(name)
        lin = linearize(
            name,
            at,
            names(states),
            names(inputs),
            names(outputs),
            overrides,
            seed=seed,
            scheme=scheme,
            eps=eps,
            eps1=eps1,
        )
    except (ScenarioError, ValueError) as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    for label, matrix, rows, cols in (
        ("A", lin.A, lin.states, lin.states),
        ("B", lin.B, lin.states, lin.inputs),
        ("C", lin.C, lin.outputs, lin.states),
        ("D", lin.D, lin.outputs, lin.inputs),
    ):
        if matrix.size == 0:
            continue
        table = Table(label, *cols, title=f"{label} ({scheme}, eps={eps:g}) at {at:g} s")
        for row_name, row in zip(rows, matrix):
            table.add_row(row_name, *[f"{v:.6g}" for v in row])
        console.print(table)
    for j, name_j in enumerate(lin.inputs):
        if not np.any(lin.B[:, j]) and not np.any(lin.D[:, j]):
            err.print(
                f"[yellow]warning:[/yellow] input {name_j} has no effect at {at:g} s (its columns of B and D "
                f"are zero); an input switched on by a fault needs that fault before --at"
            )
    if out:
        try:
            lin.save(out)
        except OSError as e:  # an OutputError names the file and where it is kept
            err.print("[red]error:[/red] " + escape(str(e)))
            raise typer.Exit(2) from None
        console.print(f"matrices: {out.resolve()}")


@montecarlo_app.command("run")
def montecarlo_run_cmd(
    target: str = typer.Argument(..., help="a campaign file (.toml) or a scenario name"),
    runs: int | None = typer.Option(None, help="number of runs (with a scenario name: required)"),
    seed: int | None = typer.Option(None, help="campaign seed; every run's seed and draws derive from it"),
    duration: float | None = typer.Option(None, help="simulated seconds of each run"),
    set_: list[str] = typer.Option([], "--set", help="fixed scenario parameter, key=value (repeatable)"),
    disperse: list[str] = typer.Option([], help="PATH=KIND:ARGS, e.g. altitude_m=normal:250,10 (repeatable)"),
    directory: Path = typer.Option(
        Path("runs/montecarlo"), "--dir", help="the campaign directory (an interrupted campaign in it is resumed)"
    ),
    backend: str = typer.Option("local", help="local (one process) or ray (one task per run)"),
    ray_address: str | None = typer.Option(None, help="with --backend ray: a cluster to use"),
    retain: list[int] = typer.Option([], "--retain-run", help="also record this run (repeatable)"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace another campaign in --dir (its files are removed; the same campaign resumes without it)",
    ),
) -> None:
    """Run a Monte Carlo campaign; resume it if the directory holds it half done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from hopsim.bus.atomic import OutputError
    from hopsim.scenarios import ScenarioError
    from hopsim.scenarios.montecarlo import CampaignDirectory, load_campaign, make_campaign, run_campaign

    try:
        if target.endswith(".toml"):
            campaign = load_campaign(target)
            data = campaign.model_dump()
        else:
            if runs is None:
                raise ScenarioError("a campaign over a scenario name needs --runs N (or give a campaign file)")
            data = {"scenario": target, "runs": runs}
        for key, value in (("runs", runs), ("seed", seed), ("duration_s", duration)):
            if value is not None:
                data[key] = value
        data["parameters"] = {**data.get("parameters", {}), **_parse_sets(set_)}
        data["dispersions"] = list(data.get("dispersions", [])) + [_parse_dispersion(d) for d in disperse]
        if retain:
            data["retain"] = {
                **data.get("retain", {}),
                "runs": sorted(set(data.get("retain", {}).get("runs", [])) | set(retain)),
            }
        campaign = make_campaign(data, target)
        CampaignDirectory(directory).check(campaign, force)  # a resume, or refused, before anything runs
    except ScenarioError as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    _compile_ahead_of(campaign.scenario)
    failed = 0
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeRemainingColumn(),
        console=console,
    ) as bar:
        task = bar.add_task(campaign.scenario, total=campaign.runs, failed=0)

        def on_row(row, done, total):
            nonlocal failed
            failed += row["status"] != "ok"
            bar.update(task, completed=done, failed=failed)

        try:
            rows = run_campaign(
                campaign, directory, backend=backend, ray_address=ray_address, on_row=on_row, force=force
            )
        except (ScenarioError, OutputError) as e:
            err.print("[red]error:[/red] " + escape(str(e)))
            raise typer.Exit(2) from None
    console.print((directory / "summary.md").read_text())
    console.print(
        f"{len(rows)} runs, {sum(r['status'] != 'ok' for r in rows)} failed; table: "
        f"{(directory / 'results.csv').resolve()}"
    )


@montecarlo_app.command("rerun")
def montecarlo_rerun_cmd(
    directory: Path = typer.Argument(..., help="a campaign directory"),
    run: int = typer.Option(..., help="the run to run again"),
    out: Path | None = typer.Option(None, help="record it to this MCAP file"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace an existing --out file (only by a complete recording: a run that fails leaves it as it was)",
    ),
) -> None:
    """Run one run of a campaign again, alone; it equals its row (same seed, parameters, stream)."""
    _check_out(out, force)
    from hopsim.bus.atomic import OutputError
    from hopsim.scenarios import ScenarioError
    from hopsim.scenarios.montecarlo import rerun

    try:
        row = rerun(directory, run, out)
    except (ScenarioError, OutputError) as e:
        err.print("[red]error:[/red] " + escape(str(e)))
        raise typer.Exit(2) from None
    console.print(escape(f"run {run}: {row['status']} {row['error']}".rstrip()))
    for key, value in {**row["parameters"], **row["outcome"]}.items():
        console.print(f"  {key}: {value}")
    console.print(f"  stream sha256: {row['stream_sha256']}")
    if out:
        console.print(f"recording: {out.resolve()}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
