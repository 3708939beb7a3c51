"""Run names and state directories, so that every namespace and process a run creates can
be found and removed later, by the run itself, by its reaper, or by ``longhaul emu clean``.

A run named NAME owns the namespaces ``NAME-a0 .. NAME-b<N-1>`` (and ``NAME-swa``/``NAME-swb``
with more than one host) and records them, with the pids of its controller, data plane and
reaper (and their start times, so a reused pid is never mistaken), in
``/run/longhaul-emu/NAME/state.json`` BEFORE creating anything. ``clean`` removes only runs
recorded there whose controller is gone.
"""

from __future__ import annotations

import glob
import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path

from longhaul.emu import system
from longhaul.errors import UserError

STATE_ROOT = Path(os.environ.get("LONGHAUL_EMU_STATE", "/run/longhaul-emu"))
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,9}$")  # + "-swa" stays within 15-char interface/ns names


def new_name() -> str:
    return "lh" + secrets.token_hex(3)


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise UserError(f"--name: '{name}' must be 1-10 lowercase letters/digits starting with a letter")
    return name


def start_time(pid: int) -> int | None:
    """Kernel start time of `pid` (clock ticks since boot), None if no such process. A process
    that has exited and waits for its parent to reap it (a zombie) is no process: a controller
    killed by a parent that has not waited for it yet is dead, and its run is ``clean``'s."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def alive(pid: int | None, started: int | None) -> bool:
    return pid is not None and started is not None and start_time(pid) == started


class RunState:
    def __init__(self, name: str):
        self.name = name
        self.dir = STATE_ROOT / name
        self.path = self.dir / "state.json"
        self.data: dict = {}

    def load(self) -> RunState:
        try:
            self.data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}
        return self

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)

    def set_process(self, role: str, pid: int) -> None:
        self.data[f"{role}_pid"] = pid
        self.data[f"{role}_start"] = start_time(pid)
        self.save()

    def process_alive(self, role: str) -> bool:
        return alive(self.data.get(f"{role}_pid"), self.data.get(f"{role}_start"))


def existing_namespaces() -> set[str]:
    out = system.ip("netns", "list", check=False)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def claim(name: str, namespaces: list[str]) -> RunState:
    """Record a new run before anything is created; refuse if the names are taken."""
    st = RunState(name)
    taken = sorted(set(namespaces) & existing_namespaces())
    if st.path.exists() or taken:
        holder = st.load().data.get("controller_pid")
        why = f"namespace {taken[0]} exists" if taken else "its state directory exists"
        raise UserError(f"an emulator named '{name}' already exists ({why}{f', controller pid {holder}' if holder else ''}); "
                        "choose another --name or run `longhaul emu clean`")
    st.data = {"name": name, "namespaces": namespaces, "created": time.time()}
    st.set_process("controller", os.getpid())
    return st


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def teardown(st: RunState) -> dict:
    """Remove everything the run recorded: data plane, processes in its namespaces, the
    namespaces (their links go with them), the state directory. Safe to call twice."""
    killed = 0
    if st.process_alive("dataplane"):
        _kill(st.data["dataplane_pid"], signal.SIGTERM)
        for _ in range(100):
            if not st.process_alive("dataplane"):
                break
            time.sleep(0.01)
        _kill(st.data["dataplane_pid"], signal.SIGKILL)
    present = existing_namespaces()
    namespaces = [ns for ns in st.data.get("namespaces", []) if ns in present]
    for ns in namespaces:
        for pid in system.ip("netns", "pids", ns, check=False).split():
            _kill(int(pid), signal.SIGKILL)
            killed += 1
    for ns in namespaces:
        for _ in range(50):  # a just-killed process may hold the namespace for a moment
            try:
                system.ip("netns", "del", ns)
                break
            except system.CommandFailed:
                time.sleep(0.02)
    _remove_session_dirs(st.name)
    shutil.rmtree(st.dir, ignore_errors=True)
    return {"name": st.name, "namespaces_removed": len(namespaces), "processes_killed": killed}


def _remove_session_dirs(name: str) -> None:
    """Directories named after the run in ``$TMPDIR``: Open MPI's session directories of its hosts,
    ``ompi.NAME-a0.UID`` ..., which an orted killed with its namespace (Ctrl-C, SIGTERM, kill -9 of
    the controller) leaves, and a failover drill's transfer files, ``longhaul-NAME-drill``. The names
    carry the run's name, which no other run has, so only this run's go."""
    if not NAME_RE.match(name):
        return
    for pattern in (f"ompi.{name}-*", f"longhaul-{name}-*"):
        for d in glob.glob(os.path.join(tempfile.gettempdir(), pattern)):
            shutil.rmtree(d, ignore_errors=True)


def clean() -> list[dict]:
    """Tear down every recorded run whose controller is gone; leave live runs alone."""
    records: list[dict] = []
    if not STATE_ROOT.is_dir():
        return records
    for d in sorted(STATE_ROOT.iterdir()):
        if not d.is_dir():
            continue
        st = RunState(d.name).load()
        if st.data and st.process_alive("controller"):
            records.append({"name": d.name, "namespaces_removed": 0, "processes_killed": 0, "status": "running (kept)"})
            continue
        record = teardown(st)
        if st.process_alive("reaper"):
            _kill(st.data["reaper_pid"], signal.SIGKILL)
        records.append({**record, "status": "removed"})
    return records
