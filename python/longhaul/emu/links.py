"""Taking the parallel links of a running emulator down and up: ``longhaul emu link down|up K``
from another terminal, and the timed events of a failover drill.

The run's state directory holds the control file ``links-down`` (the links to keep down, by
number); a change is written there under a lock and the data plane is sent SIGUSR2, which makes
it read the file, cut or restore the links, and publish its statistics, whose ``links`` list
this module waits on: a change is done when the data plane says so. The data plane's side is in
crates/longhaul-wan/src/control.rs.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time

from longhaul.emu import state
from longhaul.errors import UserError

#: The control file in the run's state directory.
CONTROL_FILE = "links-down"
#: How long the data plane may take to confirm a change (it does so within milliseconds).
CONFIRM_TIMEOUT_S = 3.0


def running_runs() -> list[str]:
    """Names of the runs whose controller and data plane are alive."""
    if not state.STATE_ROOT.is_dir():
        return []
    names = []
    for d in sorted(state.STATE_ROOT.iterdir()):
        st = state.RunState(d.name).load()
        if d.is_dir() and st.data and st.process_alive("controller") and st.process_alive("dataplane"):
            names.append(d.name)
    return names


def find_run(name: str | None) -> state.RunState:
    """The running emulator named ``name`` (or the only one running when ``name`` is None)."""
    runs = running_runs()
    if name is None:
        if not runs:
            raise UserError("no emulator is running (start one, e.g. `longhaul emu shell --wan-links 4 --name drill`)")
        if len(runs) > 1:
            raise UserError(f"{len(runs)} emulators are running ({', '.join(runs)}): say which with --name")
        name = runs[0]
    state.check_name(name)
    if name not in runs:
        raise UserError(f"no emulator named '{name}' is running (running: {', '.join(runs) or 'none'})")
    return state.RunState(name).load()


def _stats(st: state.RunState) -> dict:
    try:
        return json.loads((st.dir / "stats.json").read_text())
    except (OSError, ValueError):
        return {}


def status(st: state.RunState) -> list[dict]:
    """One record per link: link, up, carrier (whether the hosts see it), changes, changed_s."""
    return [{k: link.get(k) for k in ("link", "up", "carrier", "changes", "changed_s")}
            for link in _stats(st).get("links", [])]


def _names(links: list[int]) -> str:
    return ", ".join(map(str, links)) or "none"


def set_link(st: state.RunState, link: int, up: bool) -> dict:
    """Take ``link`` down (``up`` False) or bring it back; the link's record once the data plane
    has done it. A link that does not exist, or is already in that state: UserError with the range
    and the links' states."""
    control = st.dir / CONTROL_FILE
    with open(st.dir / "links.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        links = status(st)
        if not links:
            raise UserError(f"the emulator '{st.name}' has not published its links yet; try again")
        n = len(links)
        if not 0 <= link < n:
            raise UserError(f"link {link} does not exist: the emulator '{st.name}' has wan_links = {n} "
                            f"(valid: 0..{n - 1})")
        down = [r["link"] for r in links if not r["up"]]
        if (link not in down) == up:
            raise UserError(f"link {link} is already {'up' if up else 'down'} (links down: {_names(down)}; "
                            f"up: {_names([r['link'] for r in links if r['up']])})")
        want = sorted(set(down) - {link}) if up else sorted({*down, link})
        tmp = control.with_suffix(".tmp")
        tmp.write_text(" ".join(map(str, want)) + "\n")
        os.replace(tmp, control)
        if not st.process_alive("dataplane"):
            raise UserError(f"the emulator '{st.name}' has no data plane running (it is being torn down)")
        os.kill(st.data["dataplane_pid"], signal.SIGUSR2)
        return _confirmed(st, link, up)


def _confirmed(st: state.RunState, link: int, up: bool) -> dict:
    deadline = time.monotonic() + CONFIRM_TIMEOUT_S
    while time.monotonic() < deadline:
        stats = _stats(st)
        if stats.get("control_error"):
            raise UserError(f"the data plane refused the change: {stats['control_error']}")
        records = stats.get("links", [])
        if link < len(records) and records[link]["up"] == up:
            return {k: records[link].get(k) for k in ("link", "up", "carrier", "changes", "changed_s")}
        time.sleep(0.005)
    raise UserError(f"the data plane did not confirm link {link} {'up' if up else 'down'} within "
                    f"{CONFIRM_TIMEOUT_S:g} s")
