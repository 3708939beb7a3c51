"""Run a benchmark (perftest, OSU, iperf3) on a real link and ingest what it prints.

``run(argv, timeout_s)`` starts the command without a shell, in its own session (so its own
process group: Ctrl-C in the terminal reaches longhaul only, which stops the whole group), echoes
its stdout and stderr to longhaul's stderr as they arrive (longhaul's stdout carries the records),
and returns what it printed on stdout once it has exited 0. Everything else (not found, not
executable, a non-zero status, killed by a signal, over the timeout) is a one-line ``UserError``;
an interrupt stops the group and propagates. ``measure`` then parses the captured output with
``longhaul.ingest.ingest_output``, exactly as ``longhaul ingest`` parses a file of that tool.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from longhaul.errors import UserError, terminated_on_signals
from longhaul.ingest import ingest_output
from longhaul.results import now_utc
from longhaul.safeio import TOOL_OUTPUT_BYTES

#: seconds a stopped command gets to exit after SIGTERM before the group gets SIGKILL
STOP_GRACE_S = 2.0
#: seconds to wait for the pipes to close after the command exited (a process it left behind may hold them)
DRAIN_S = 2.0
#: bytes of the command's stderr kept for the error message (its last line)
STDERR_TAIL = 64 * 1024


@dataclass
class Captured:
    stdout: bytes
    started_utc: str
    finished_utc: str


def command_text(argv: list[str]) -> str:
    """The command line as a shell would take it back (``shlex.join``)."""
    return shlex.join(argv)


def named(argv: list[str]) -> str:
    """The command as messages name it, in backquotes: shlex.join quotes its arguments with ' already."""
    return f"`{command_text(argv)}`"


def _echo(chunk: bytes) -> None:
    out = getattr(sys.stderr, "buffer", None)
    if out is not None:
        sys.stderr.flush()
        out.write(chunk)
        out.flush()
    else:  # a text-only stderr (an embedding application)
        sys.stderr.write(chunk.decode("utf-8", "replace"))
        sys.stderr.flush()


class _Shown:
    """What the command prints, copied to longhaul's stderr as it comes (both pipes), remembering
    whether it ended a line: longhaul's own last line must start one, not follow 'connecting...'."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at_line_start = True

    def write(self, chunk: bytes) -> None:
        with self._lock:
            _echo(chunk)
            self._at_line_start = chunk.endswith(b"\n")

    def end_line(self) -> None:
        with self._lock:
            if not self._at_line_start:
                with contextlib.suppress(OSError, ValueError):
                    _echo(b"\n")
                self._at_line_start = True


def _pump(fd: int, keep: bytearray, tail: int | None, shown: _Shown, over: Callable[[], None] = lambda: None) -> None:
    """Copy the pipe ``fd`` to longhaul's stderr as it comes, keeping everything (or the last ``tail`` bytes).
    Without ``tail``, more than TOOL_OUTPUT_BYTES (what ``ingest`` reads of a file) calls ``over()`` and
    stops: `measure -- yes` held 6 GB after 30 s."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        if tail is None and len(keep) + len(chunk) > TOOL_OUTPUT_BYTES:
            over()
            break
        keep += chunk
        if tail is not None and len(keep) > 2 * tail:
            del keep[:-tail]
        try:
            shown.write(chunk)
        except (OSError, ValueError):  # stderr closed: keep capturing
            pass


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen) -> None:
    """Stop the command's whole process group: SIGTERM, then SIGKILL after STOP_GRACE_S, or at once
    when a second Ctrl-C or SIGTERM cuts the grace short (the group never outlives longhaul)."""
    try:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    finally:
        _signal_group(proc.pid, signal.SIGKILL)  # also what the command left running in its group
        proc.wait()


def _drain(proc: subprocess.Popen, readers: list[threading.Thread]) -> None:
    """Wait (DRAIN_S) for the readers to see the pipes close; a process the command left behind that still
    holds them is killed with the rest of its group. The pipes are then closed."""
    started = [t for t in readers if t.ident is not None]
    for t in started:
        t.join(DRAIN_S)
    if any(t.is_alive() for t in started):
        _signal_group(proc.pid, signal.SIGKILL)
        for t in started:
            t.join(DRAIN_S)
    if not any(t.is_alive() for t in started):
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _start(readers: list[threading.Thread]) -> None:
    """Start the readers with SIGINT, SIGTERM and SIGHUP held: a handler raising inside
    ``Thread.start()`` leaves its lock released twice (RuntimeError, and a traceback at exit). The
    readers inherit the mask, so the main thread takes each signal, as soon as the readers run."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        for t in readers:
            t.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _last_line(data: bytes) -> str | None:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[-1]
    return line if len(line) <= 200 else line[:197] + "..."


def run(argv: list[str], timeout_s: float | None = None) -> Captured:
    """Run ``argv`` (no shell) to completion; its stdout when it exited 0, else a one-line UserError."""
    shown = named(argv)
    started = now_utc()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except FileNotFoundError:
        where = "no such file" if os.sep in argv[0] else "not on PATH"
        raise UserError(f"measure: command '{argv[0]}' not found ({where}); nothing run, nothing stored") from None
    except PermissionError:
        raise UserError(f"measure: '{argv[0]}' is not executable (permission denied); nothing run, "
                        "nothing stored") from None
    except OSError as err:
        raise UserError(f"measure: cannot run '{argv[0]}' ({err.strerror or err}); nothing stored") from None
    assert proc.stdout is not None and proc.stderr is not None  # PIPE
    out, said, echoed = bytearray(), bytearray(), _Shown()
    too_much = threading.Event()

    def over() -> None:
        too_much.set()
        _signal_group(proc.pid, signal.SIGKILL)

    readers = [threading.Thread(target=_pump, args=(proc.stdout.fileno(), out, None, echoed, over), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr.fileno(), said, STDERR_TAIL, echoed), daemon=True)]
    timed_out = False
    # SIGTERM/SIGHUP (a batch system's kill, a closed terminal) stop the command as Ctrl-C does: in its
    # own session it would not get them, and a left-over ib_write_bw would keep the adapter busy.
    with terminated_on_signals(f"the measured command {shown} was stopped; nothing stored"):
        try:
            _start(readers)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _stop(proc)
            # What it printed last, even from a process it left behind, before deciding; then the rest of its
            # group goes.
            _drain(proc, readers)
        except BaseException:  # Ctrl-C or SIGTERM/SIGHUP from the start on: the measurement stops with longhaul
            _stop(proc)
            _drain(proc, readers)
            raise
        finally:
            echoed.end_line()
    finished = now_utc()
    status = proc.returncode
    if too_much.is_set():
        raise UserError(f"measure: {shown} printed more than {TOOL_OUTPUT_BYTES >> 20} MiB on stdout, more than any "
                        "benchmark's output (ingest reads at most that of a file); it was stopped (its process "
                        "group killed); nothing stored")
    if timed_out:
        raise UserError(f"measure: {shown} was still running after --timeout-s {timeout_s:g} and was stopped "
                        "(its process group killed); nothing stored")
    if status < 0:
        raise UserError(f"measure: {shown} was killed by {_signal_name(-status)}; nothing stored")
    if status != 0:
        last = _last_line(bytes(said))
        why = f"its last line on stderr: {last}" if last else "it printed nothing on stderr"
        raise UserError(f"measure: {shown} exited with status {status} ({why}); nothing stored")
    return Captured(bytes(out), started, finished)


def _signal_name(signum: int) -> str:
    """SIGKILL, or SIGRTMIN+6 as ``kill -l`` names it: ``signal.Signals`` has no member for the
    real-time signals between SIGRTMIN and SIGRTMAX, which a command can still die of."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}" if signal.SIGRTMIN < signum < signal.SIGRTMAX else f"signal {signum}"


def measure(argv: list[str], tool: str, delay_us: float | None = None, label: str = "",
            timeout_s: float | None = None) -> tuple[dict, list[dict], Captured]:
    """Run the command, then parse its stdout as ``longhaul ingest`` parses a file of ``tool``:
    (scenario, records, captured). The records and the scenario carry the command line."""
    if not argv:
        raise UserError("measure: no command to run (give it after --, e.g. -- iperf3 -c HOST -J)")
    captured = run(argv, timeout_s)
    scenario, records = ingest_output(captured.stdout, tool, named(argv), delay_us=delay_us, label=label,
                                      command=command_text(argv))
    return scenario, records, captured
