"""The one error type the CLI turns into a single line and exit status 2."""


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
    """SIGTERM or SIGHUP arrived while an emulated run was up: raised from the signal handler so
    the run unwinds through its teardown; the CLI then exits 128 + the signal's number."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        super().__init__(signal.Signals(signum).name)
