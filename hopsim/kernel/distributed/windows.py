"""Conservative windowed synchronization of island hosts (Ray ``per-island`` and ``shards:K``).

In lockstep every barrier of an island in another process costs the driver a round trip. Here
the driver finds the earliest instant ``T`` at which anything is pending (in any host, or among
its own events), and every host runs all the barriers of its islands in ``[T, T + L - 1]`` in
parallel, where the *lookahead* ``L`` is the least latency of any message that can cross from one
host to another (at least 1 ns: a message between islands is never seen in the instant it is
published). No message published inside a window can reach another host inside it, so each host
computes exactly what it would compute in lockstep. One round trip per host and window carries
the window's end and the messages from other hosts to enqueue first; back come the window's
envelopes (for the recorder), the messages for other hosts, and the host's next pending instant.

*Pipelined windows.* While windows are dense (each starts where the previous one ended and
every host runs in it, as in a formation whose vehicles all have a barrier in every window), the
driver submits window k + 1 before window k's replies are back, handing each host the window-k
replies of the hosts that can send messages to it, as Ray object refs. Ray starts the host's
window once they exist, and the host enqueues the messages for its islands itself; the driver
records and accounts window k while the hosts run k + 1, so it is off the critical path between
windows. A window that follows a gap (sparse activity, e.g. a lookahead of 1 ns) is placed by
the driver from the replies.

Islands watched by a monitor (contact) stay in the driver, with the monitor: the driver runs
them, its global timed events and its injections after the hosts have run the window, up to the
same end. A window also ends at the driver's next global timed event, so that it fires with
every island at its instant (it may inject messages or stop the run). Windows are used unless the run has
stop callbacks (they are evaluated after every barrier, which needs lockstep).

``e_stop`` set in a host ends the run at that instant: the host finishes the instant and goes no
further, the driver records nothing later and gives every island a final barrier there, as in
lockstep. Islands in *other* hosts may already have run past it, to the end of the stop's window
or, if they cannot hear from the stopping host, of the pipelined window after it (a host handed
the stopping host's reply runs nothing in that one). Their later envelopes are dropped, but their
state, and their final barrier at the stop, would differ from lockstep. Their replies tell, and
``overshoot_at`` then holds the stop's instant; the runner runs again from its
last checkpoint with ``stop_cap`` at that instant: no window ends after it, so no host runs past
the stop.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from operator import itemgetter

from hopsim.bus.shipping import ColumnsReceiver, record_items
from hopsim.kernel.distributed.host import ALL_ISLANDS, HOST, host_lost_errors
from hopsim.kernel.errors import ActorKilled, CausalityError

TIMED_OPS = ("enqueue", "add_stop", "add_event")  # operations whose first argument is an instant
DRIVER = -1  # the "host" of the islands that stay in the driver


def crossing_links(sim, host_of: dict[str, int]) -> dict[tuple[int, int], int]:
    """(source host, target host) -> the least latency (ns, at least 1) of a message from a model
    in the source host to a subscriber in the target host, for every pair that messages can cross."""
    links: dict[tuple[int, int], int] = {}
    for slot in sim.slots():
        source = host_of[slot.home.name]
        for topic, latency, _, _ in slot.out_topics.values():
            for sub in sim.topics.topics[topic].subscribers:
                target = host_of[sub.island]
                if target != source:
                    lat = max(latency, 1)
                    links[source, target] = min(lat, links.get((source, target), lat))
    return links


class WindowedSync:
    """The driver's side: the hosts, the operations queued for each, and the window loop."""

    def __init__(self, sim, proxies: dict):
        self.sim = sim
        hosts: dict[int, object] = {}
        for proxy in proxies.values():
            hosts.setdefault(id(proxy.host), proxy.host)
            proxy.sync = self
        self.hosts = list(hosts.values())
        self._index = {key: i for i, key in enumerate(hosts)}
        self.host_of = {
            name: self._index[id(proxies[name].host)] if name in proxies else DRIVER for name in sim.islands
        }
        links = crossing_links(sim, self.host_of)
        self.lookahead_ns = min(links.values()) if links else None  # None: no message can cross
        self._feeds = [sorted({src for src, dst in links if dst == i}) for i in range(len(self.hosts))]
        self._pending: list[list[tuple]] = [[] for _ in self.hosts]
        self._received = [ColumnsReceiver() for _ in self.hosts]  # what each host recorded
        self._next: list[int | None] = [sim.now for _ in self.hosts]  # None: nothing pending
        self.overshoot_at: int | None = None  # an e_stop instant that other hosts ran past
        self.stop_cap: int | None = None  # when running again to such an instant: windows end there
        self._has_driver_islands = any(h == DRIVER for h in self.host_of.values())
        self._dense_from: int | None = None  # the last window's end + 1: where a dense run goes on
        self.stats = {
            "windows": 0,
            "pipelined_windows": 0,
            "host_calls": 0,
            "wait_s": 0.0,
            "crossing_messages": 0,
            "host_cpu_s": [0.0] * len(self.hosts),
            "critical_path_cpu_s": 0.0,
            "lookahead_s": None if self.lookahead_ns is None else self.lookahead_ns / 1e9,
            "islands_in_driver": sorted(n for n, h in self.host_of.items() if h == DRIVER),
        }

    # ------------------------------------------------------------------ operations for hosts
    def send(self, host, op: tuple) -> None:
        """Queue ``op`` (island, operation, args) for ``host``'s next window."""
        i = self._index[id(host)]
        self._pending[i].append(op)
        _name, kind, args = op
        t = args[0] if kind in TIMED_OPS else self.sim.now
        if self._next[i] is None or t < self._next[i]:
            self._next[i] = t

    def take_pending(self, host) -> list[tuple]:
        """The queued operations of ``host`` (a direct call takes them along)."""
        i = self._index[id(host)]
        ops, self._pending[i] = self._pending[i], []
        if ops:
            self._next[i] = self.sim.now  # unknown until its next window reports it
        return ops

    # ------------------------------------------------------------------ the loop
    def run_until(self, t_stop: int) -> str:
        """:meth:`Simulation.advance_to` for islands in hosts: windows until ``t_stop`` (ns)."""
        sim = self.sim
        for island in self._driver_islands():
            island.add_stop(t_stop)
            island.resume()
        for host in self.hosts:  # one operation per host, not one per island
            self.send(host, (ALL_ISLANDS, "stop_and_resume", (t_stop,)))
        ahead: _Window | None = None  # the window submitted before the current one's replies
        try:
            while True:
                limit = t_stop if sim.halted_at is None else sim.halted_at
                if ahead is not None:
                    window, ahead = ahead, None
                else:
                    start = min([t for t in self._next if t is not None] + [sim.env.peek()])
                    if start > limit:
                        break
                    end = limit if self.lookahead_ns is None else min(limit, start + self.lookahead_ns - 1)
                    if self.stop_cap is not None and start <= self.stop_cap:
                        end = min(end, self.stop_cap)  # no host runs past a known stop
                    window = self._submit(start, min(end, max(start, self._next_global_event())))
                ahead_end = self._pipelined_end(window, limit)
                self._dense_from = window.end + 1
                if ahead_end is not None:
                    ahead = self._submit(window.end + 1, ahead_end, after=window)
                self._finish(window)
                if sim.halted_at is not None and ahead is not None:
                    self._discard(ahead, sim.halted_at)  # the run ended in ``window``
                    ahead = None
        finally:
            if ahead is not None:
                self._discard(ahead)
            for island in self._driver_islands():
                island.settle(sim.now)
            for host in self.hosts:
                self.send(host, (ALL_ISLANDS, "settle", (sim.now,)))
        # the last instant is final, unless hosts ran past a stop (the runner runs it again)
        if sim.recorder is not None and self.overshoot_at is None:
            sim.recorder.flush()
        return sim.stop_reason if sim.halted_at is not None else "time"

    def island_stats(self) -> tuple[dict[str, dict], list[dict[str, dict]]]:
        """Every island's counters, and each host's rate groups' and fleet forms' counters
        (``HostServices.group_stats``): one call per host, all hosts at once."""
        import ray

        refs = [
            h.call.remote(self.sim.now, [*self.take_pending(h), (ALL_ISLANDS, "stats", ()), (HOST, "group_stats", ())])
            for h in self.hosts
        ]
        stats = {isl.name: dict(isl.stats) for isl in self._driver_islands()}
        groups = []
        for reply in ray.get(refs):
            if reply[0] == "killed":
                raise ActorKilled(reply[1], reply[2], reply[3])
            stats.update(reply[-1][-2])
            groups.append(reply[-1][-1])
        return stats, groups

    def _driver_islands(self) -> list:
        return [isl for name, isl in self.sim.islands.items() if self.host_of[name] == DRIVER]

    def _next_global_event(self) -> int | float:
        """The instant of the driver's next global timed event that may act on islands."""
        return self.sim.next_global_event_ns()

    def _pipelined_end(self, window: _Window, limit: int) -> int | None:
        """The end of the window after ``window`` if it may be submitted now, before ``window``'s
        replies are back; else None.

        It may when windows are dense, as in a formation whose hosts all have a barrier in
        every window: ``window`` follows the previous one without a gap and every host runs in
        it (sparse windows are placed where the next activity is, which needs the replies). It
        may not when nothing may cross the hosts' boundary instant by instant through the driver
        while it is behind: islands in the driver, a global timed event at or before ``window``'s
        end, a known stop, or the run's end reached."""
        if (
            self.lookahead_ns is None
            or self.stop_cap is not None
            or self.sim.halted_at is not None
            or self._has_driver_islands
            or window.start != self._dense_from
            or len(window.hosts) < len(self.hosts)
        ):
            return None
        start = window.end + 1
        event = self._next_global_event()
        if start > limit or event <= window.end:
            return None
        return min(limit, start + self.lookahead_ns - 1, max(start, event))

    def _submit(self, start: int, end: int, after: _Window | None = None) -> _Window:
        """Ask the hosts to run the window [start, end] (ns): those with something due by ``end``,
        or, after ``after`` (a window whose replies are not back yet), every host, each handed
        the crossing parts of ``after`` of the hosts that can send to it (Ray passes them over
        once they exist)."""
        if after is None:
            due = [i for i, t in enumerate(self._next) if t is not None and t <= end]
        else:
            due = list(range(len(self.hosts)))
            after.consumed = True  # its messages between hosts travel with this window
            parts = dict(zip(after.hosts, after.crossing, strict=True))
        window = _Window(start, end, due)
        for i in due:
            ops, self._pending[i] = self._pending[i], []
            call = self.hosts[i].run_window.options(num_returns=2)
            if after is None:
                crossing, reply = call.remote(end, ops)
            else:
                crossing, reply = call.remote(end, ops, True, *[parts[j] for j in self._feeds[i]])
            window.crossing.append(crossing)
            window.replies.append(reply)
        self.stats["windows"] += 1
        self.stats["host_calls"] += len(due)
        self.stats["pipelined_windows"] += after is not None
        return window

    def _discard(self, window: _Window, stop: int | None = None) -> None:
        """Wait for a window submitted ahead of the run's end, so that no host is still busy with
        it, and drop its replies. After a ``stop`` (ns), a host handed the stopping host's reply
        ran nothing in it, and so did the stopping host; a host that cannot hear from the
        stopping host ran on past the stop: ``overshoot_at`` says so, as for a host that ran past
        a stop in the stop's own window."""
        import ray

        try:
            replies = ray.get(window.replies)
        except ray.exceptions.RayError:
            return  # a host died: the run is being given up or recovered already
        for i, reply in zip(window.hosts, replies, strict=True):
            if reply[0] != "killed":
                self._received[i].unpack(reply[0])  # its blocks' routes, for the windows after it
        if stop is not None and self.overshoot_at is None and any(r[0] != "killed" and r[7] > stop for r in replies):
            self.overshoot_at = stop

    def _finish(self, window: _Window) -> None:
        """The replies of ``window``: record, route the messages between hosts (unless the next
        window took them along), then the driver catches up to the window's end."""
        import ray

        sim, end = self.sim, window.end
        t0 = time.perf_counter()
        try:
            replies = ray.get(window.replies)
        except host_lost_errors() as err:
            raise ActorKilled("an island host", sim.now) from err
        self.stats["wait_s"] += time.perf_counter() - t0  # the driver blocked at the window
        for reply in replies:
            if reply[0] == "killed":
                _, actor, t_ns, key = reply
                sim.handled_kills.add(key)
                raise ActorKilled(actor, t_ns, key)
        stops = [r[3] for r in replies if r[3] is not None]
        cut = min(stops) if stops else end
        if stops and self.overshoot_at is None and any(r[7] > cut for r in replies):
            self.overshoot_at = cut
        for i, reply in zip(window.hosts, replies, strict=True):
            self._next[i] = reply[4]
            self.stats["host_cpu_s"][i] += reply[6]
        if replies:
            self.stats["critical_path_cpu_s"] += max(r[6] for r in replies)
        items = []
        for i, (parts, crossing, forgotten, _, _, published, _, _) in zip(window.hosts, replies, strict=True):
            items += self._received[i].unpack(parts)
            sim.count_published(published)
            for target, deliver_ns, env, model, port, rank in crossing:
                if env.t_ns > cut:
                    continue  # published after the run stopped
                if deliver_ns <= end:
                    raise CausalityError(
                        f"a message on {env.topic!r} from {env.source} at {env.t_ns} ns "
                        f"reaches island {target!r} at {deliver_ns} ns, inside the window "
                        f"ending at {end} ns (lookahead {self.lookahead_ns} ns)"
                    )
                if self.host_of[target] == DRIVER:
                    sim.islands[target].enqueue(deliver_ns, env, sim.slot(model), port, rank)
                elif not window.consumed:
                    op = (target, "enqueue", (deliver_ns, env, model, port, rank))
                    self.send(self.hosts[self.host_of[target]], op)
                self.stats["crossing_messages"] += 1
            for name in forgotten:
                ev = sim.find_event(name)
                if ev is not None:
                    sim.forget_event(ev)
        self._catch_up(cut, items)
        if stops and sim.halted_at is None:
            sim.e_stop = True
            sim.check_stop()

    def _catch_up(self, cut: int, items: list) -> None:
        """Run the driver's islands and events up to ``cut``, then record what the window
        recorded (the hosts' envelopes and blocks' columns, [(t_ns, item, queue)], and the
        driver's envelopes) up to it, in time order (the recorder orders each instant's envelopes
        itself)."""
        sim, env = self.sim, self.sim.env
        recorder = sim.recorder
        if recorder is not None:
            sim.recorder = collector = _Collector()
        try:
            env.timeout(cut - env.now)  # the driver's clock ends the window at cut
            while env.peek() <= cut:
                if sim.halted_at is not None and env.peek() > sim.halted_at:
                    break
                env.step()
        finally:
            sim.recorder = recorder
        if recorder is None:
            return
        items += [(env_.t_ns, env_, queue) for env_, queue in collector.envelopes]
        items.sort(key=itemgetter(0))
        last = cut if sim.halted_at is None else min(cut, sim.halted_at)
        record_items(recorder, items[: bisect_right(items, last, key=itemgetter(0))])


class _Window:
    """A window submitted to the hosts: [start, end] (ns), the hosts that run it (indices), their
    two reply parts (Ray object refs), and whether the next window took its crossing parts."""

    __slots__ = ("consumed", "crossing", "end", "hosts", "replies", "start")

    def __init__(self, start: int, end: int, hosts: list[int]):
        self.start, self.end, self.hosts = start, end, hosts
        self.crossing: list = []
        self.replies: list = []
        self.consumed = False


class _Collector:
    """Stands in for the recorder while the driver runs a window: keeps the envelopes, so that
    they are recorded in time order with the hosts' envelopes of the same window."""

    def __init__(self):
        self.envelopes: list[tuple] = []

    def record(self, env, latency_ns: int = 0, queue: bool = False) -> None:
        self.envelopes.append((env, queue))

    def flush(self) -> None:
        pass
