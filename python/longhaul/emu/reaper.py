"""Watcher started by each run: when the controller process dies (even by SIGKILL), tear
the run down. Runs in its own session so a Ctrl-C aimed at the controller leaves it alone;
the controller kills it after a normal tear-down.

Usage (internal): python -m longhaul.emu.reaper NAME CONTROLLER_PID
"""

from __future__ import annotations

import os
import select
import signal
import sys

from longhaul.emu import state


def main(name: str, controller_pid: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        fd = os.pidfd_open(controller_pid)
    except OSError:
        fd = None  # already gone
    if fd is not None:
        select.select([fd], [], [])  # readable when the controller has exited
    st = state.RunState(name).load()
    if st.data:
        state.teardown(st)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
