"""``A: CMD :: B: CMD``: commands to run on the hosts of the two clusters.

Segments are separated by ``::``; each starts with a host label ``A:``/``B:`` (host 0 of
the cluster) or ``A1:``/``B2:`` (host by index). A segment given as one word is run by
``sh -c`` (so ``'A: ping $LH_B0'`` in quotes expands the variable inside the namespace);
several words are run as they are. The first segment is the client: once all commands on
its host have exited, the other commands get ``grace_s`` to finish, then are stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from longhaul.emu import links, state
from longhaul.emu.topology import Emulator
from longhaul.errors import UserError
from longhaul.failover import Event

_LABEL_RE = re.compile(r"^([ABab])(\d*):(.*)$")


@dataclass
class HostCommand:
    side: str  # "a" or "b"
    index: int
    argv: list[str]

    @property
    def host(self) -> str:
        return f"{self.side.upper()}{self.index}"

    @property
    def text(self) -> str:
        return self.argv[2] if self.argv[:2] == ["sh", "-c"] else shlex.join(self.argv)


def parse(tokens: list[str], hosts: int) -> list[HostCommand]:
    """Split `A: cmd args :: B: cmd` into HostCommands (UserError on any malformed part)."""
    if tokens and tokens[0] == "--":
        tokens = tokens[1:]
    if not tokens:
        raise UserError("no command: give e.g. -- A: CMD :: B: CMD (host labels A:, B:, A1:, ...)")
    segments: list[list[str]] = [[]]
    for t in tokens:
        if t == "::":
            segments.append([])
        else:
            segments[-1].append(t)
    commands = []
    for seg in segments:
        if not seg:
            raise UserError("missing command around '::' (write -- A: CMD :: B: CMD)")
        m = _LABEL_RE.match(seg[0])
        if not m:
            raise UserError(f"'{seg[0]}' does not start with a host label (A:, B:, A1:, B2:, ...)")
        side, idx, rest = m.group(1).lower(), int(m.group(2) or 0), m.group(3)
        if idx >= hosts:
            raise UserError(f"host {side.upper()}{idx} does not exist (valid: {side.upper()}0..{side.upper()}{hosts - 1}; "
                            "use --hosts for more)")
        words = ([rest] if rest else []) + seg[1:]
        if not any(w.strip() for w in words):   # 'A: ' or A: '' ran `sh -c ''`: nothing, exit 0
            raise UserError(f"missing command after '{seg[0]}' (write -- A: CMD :: B: CMD)")
        argv = ["sh", "-c", words[0]] if len(words) == 1 else words
        commands.append(HostCommand(side, idx, argv))
    return commands


GRACE_S_RANGE = (0.0, 3600.0)
TIMEOUT_S_RANGE = (0.1, 86400.0)  # a day, as `emu mpi run`'s


def check_times(grace_s: float, timeout_s: float) -> None:
    """--grace-s and --timeout-s in their ranges (checked before any namespace exists)."""
    for option, value, (lo, hi) in (("--grace-s", grace_s, GRACE_S_RANGE), ("--timeout-s", timeout_s, TIMEOUT_S_RANGE)):
        if not lo <= value <= hi:  # also NaN
            raise UserError(f"{option}: {value:g} is out of range [{lo:g}, {hi:g}] s")


def run(emu: Emulator, commands: list[HostCommand], grace_s: float = 3.0, timeout_s: float = 3600.0,
        stream_output: bool = False, events: list[Event] | None = None,
        applied: list[dict] | None = None) -> list[dict]:
    """Start the commands (servers first, the client host's last), wait, return one record
    each: host, command, client (True for the client host's commands), exit_code, seconds,
    stopped (True if we had to stop it: a server after the grace time, anything at the
    timeout), stdout, stderr. Output goes to temporary files (a pipe could fill and stall a
    chatty program). ``events``: link failures (``longhaul.failover``) applied at their ``at_s``
    after the client starts, while the commands run; each one applied is appended to ``applied``
    with the run's time it took effect (``applied_s``)."""
    check_times(grace_s, timeout_s)
    client = (commands[0].side, commands[0].index)
    is_client = [(c.side, c.index) == client for c in commands]
    procs: dict[int, subprocess.Popen] = {}
    files: dict[int, tuple] = {}
    started: dict[int, float] = {}
    ended: dict[int, float] = {}
    stopped: set[int] = set()

    def start(i: int) -> None:
        c = commands[i]
        o = e = None
        if not stream_output:
            # Closed when the commands' output is collected, after the run.
            o, e = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")  # noqa: SIM115
            files[i] = (o, e)
        procs[i] = emu.popen(c.side, c.index, c.argv, stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                             text=True, start_new_session=True)
        started[i] = time.monotonic()

    servers = [i for i in range(len(commands)) if not is_client[i]]
    for i in servers:
        start(i)
    if servers:
        time.sleep(0.3)  # let servers bind before the clients start
    for i in range(len(commands)):
        if is_client[i]:
            start(i)
    started_at = time.monotonic()
    deadline = started_at + timeout_s
    pending = list(events or [])
    run_state = state.RunState(emu.name).load() if pending else None
    client_done_at = None
    while len(ended) < len(procs):
        now = time.monotonic()
        while run_state is not None and pending and now - started_at >= pending[0].at_s:
            e = pending.pop(0)
            done = links.set_link(run_state, e.link, e.action == "up")
            if applied is not None:
                applied.append({**e.record(), "applied_s": round(time.monotonic() - started_at, 3),
                                "changed_s": done["changed_s"]})
        for i, p in procs.items():
            if i not in ended and p.poll() is not None:
                ended[i] = now
        if client_done_at is None and all(i in ended for i in procs if is_client[i]):
            client_done_at = now
        if now > deadline or (client_done_at is not None and now > client_done_at + grace_s):
            for i, p in procs.items():
                if i not in ended:
                    stopped.add(i)
                    _stop(p)
                    ended[i] = time.monotonic()
        time.sleep(0.01)
    records = []
    for i, c in enumerate(commands):
        text = ["", ""]
        for k, f in enumerate(files.get(i, ())):
            f.seek(0)
            text[k] = f.read()
            f.close()
        records.append({"host": c.host, "command": c.text, "client": is_client[i], "exit_code": procs[i].returncode,
                        "seconds": round(ended[i] - started[i], 3), "stopped": i in stopped,
                        "stdout": text[0], "stderr": text[1]})
    return records


def _stop(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=1)
    except (OSError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
