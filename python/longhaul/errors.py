"""The one error type the CLI turns into a single line and exit status 2, and the signal that
stops a run that must be torn down."""

import contextlib
from collections.abc import Iterator
from typing import NoReturn


class UserError(Exception):
    """Bad input from the user: a wrong parameter, unknown name, malformed file, missing privilege.

    The message names the problem and the valid range; the CLI prints it on one line.
    """


def in_scenario_file(err: UserError, path: str, names: dict[str, str] | None = None) -> UserError:
    """``err``, about a value the scenario file ``path`` gave, naming the file: ``scenario PATH:
    KEY: ...``. The core's own ``scenario:`` prefix gives way to the file's name, and an option the
    message starts with ('--streams: ...') to its key in ``names``."""
    text = str(err).removeprefix("scenario: ")
    option = text.split(":", 1)[0]
    if names and option in names:
        text = names[option] + text[len(option):]
    return UserError(f"scenario {path}: {text}")


class Terminated(Exception):
    """SIGTERM or SIGHUP arrived while something outside longhaul was running for it (an emulated
    run, a measured command): raised from the signal handler so that work unwinds through its
    teardown; the CLI then says ``what`` was done and exits 128 + the signal's number."""

    def __init__(self, signum: int, what: str):
        import signal

        self.signum = signum
        self.what = what
        super().__init__(signal.Signals(signum).name)


@contextlib.contextmanager
def terminated_on_signals(what: str) -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise ``Terminated(signum, what)`` (in the main thread,
    where Python runs signal handlers; elsewhere nothing changes). The old handlers come back after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: object) -> NoReturn:
        raise Terminated(signum, what)

    old = {sig: signal.signal(sig, raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
