"""Link failure events of a scenario: the ``[[events]]`` list, one schema for the emulator and the
simulator (docs/reference/scenario-files.md, "Link failover").

A scenario with ``path.wan_links = N`` has links ``0 .. N-1``; each event takes one of them down
(unplugged: the fibre is cut) or up (plugged back) at ``at_s`` seconds after the workload starts::

    [[events]]
    at_s = 5.0         # 0 < at_s < the run's duration_s
    link = 1           # 0 .. wan_links - 1
    action = "down"    # "down" | "up"

Events are applied in time order; a link must be up to go down and down to come up (all of them
may be down at once: an outage). Between two events the links up are constant: ``phases`` cuts the
run there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from longhaul.errors import UserError

ACTIONS = ("down", "up")
EVENT_KEYS = ("at_s", "link", "action")
#: Most events in one scenario (a drill of a few failures and repairs; bounds what a file can ask).
MAX_EVENTS = 1000


@dataclass(frozen=True)
class Event:
    at_s: float
    link: int
    action: str

    def record(self) -> dict:
        return {"at_s": self.at_s, "link": self.link, "action": self.action}


def _field(raw: dict, key: str, where: str):
    if key not in raw:
        raise UserError(f"{where}: missing '{key}' (an event has at_s, link and action)")
    return raw[key]


def parse(raw_events, links: int, duration_s: float, where: str = "events", length: str = "duration_s") -> list[Event]:
    """The events of a scenario (a list of tables), checked against ``links`` links and a run of
    ``duration_s`` seconds (``length``: what sets it, for messages); ``where`` names them in
    messages (``scenario f.toml: events``). Any fault is a UserError naming the event
    (``events[2].link``) and the valid range."""
    if raw_events is None:
        return []
    if not isinstance(raw_events, list):
        raise UserError(f"{where}: give a list of tables ([[events]] with at_s, link, action)")
    if len(raw_events) > MAX_EVENTS:
        raise UserError(f"{where}: {len(raw_events)} events; at most {MAX_EVENTS}")
    events = []
    for i, raw in enumerate(raw_events):
        at = f"{where}[{i}]"
        if not isinstance(raw, dict):
            raise UserError(f"{at}: give a table with at_s, link and action")
        unknown = sorted(set(raw) - set(EVENT_KEYS))
        if unknown:
            raise UserError(f"{at}: unknown key '{unknown[0]}' (an event has {', '.join(EVENT_KEYS)})")
        t, link, action = (_field(raw, k, at) for k in EVENT_KEYS)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 < t < duration_s:
            raise UserError(f"{at}.at_s: {t!r} is outside the run (valid: 0 < at_s < {length} = {duration_s:g} s)")
        if isinstance(link, bool) or not isinstance(link, int) or not 0 <= link < links:
            raise UserError(f"{at}.link: {link!r} does not exist (valid: 0..{links - 1} for wan_links = {links})")
        if action not in ACTIONS:
            raise UserError(f"{at}.action: {action!r} is not one of {', '.join(repr(a) for a in ACTIONS)}")
        events.append((float(t), i, Event(float(t), link, action)))
    ordered = [e for _, _, e in sorted(events, key=lambda x: (x[0], x[1]))]
    check_sequence(ordered, links, where)
    return ordered


def check_sequence(events: list[Event], links: int, where: str = "events") -> None:
    """Each event changes its link: down only when up, up only when down."""
    up = [True] * links
    for e in events:
        want = e.action == "up"
        if up[e.link] == want:
            state = "up" if want else "down"
            raise UserError(f"{where}: at {e.at_s:g} s link {e.link} is already {state} "
                            f"(links down then: {_names([k for k in range(links) if not up[k]])})")
        up[e.link] = want


def _names(links: list[int]) -> str:
    return ", ".join(map(str, links)) or "none"


@dataclass(frozen=True)
class Phase:
    """A stretch of the run between two events: ``from_s`` to ``to_s`` with ``links_up``."""

    index: int
    from_s: float
    to_s: float
    links_up: tuple[int, ...]
    event: Event | None   # the event that began it (None for the first)


def phases(events: list[Event], links: int, duration_s: float) -> list[Phase]:
    """The run cut at its events (several at one time make one cut)."""
    up = set(range(links))
    out: list[Phase] = []
    start, began = 0.0, None
    for e in events + [None]:
        t = duration_s if e is None else e.at_s
        if t > start:
            out.append(Phase(len(out), start, t, tuple(sorted(up)), began))
            start = t
        if e is not None:
            (up.discard if e.action == "down" else up.add)(e.link)
            began = e
    return out
