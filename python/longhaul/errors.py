"""The one error type the CLI turns into a single line and exit status 2."""


class UserError(Exception):
    """Bad input from the user: a wrong parameter, unknown name, malformed file, missing privilege.

    The message names the problem and the valid range; the CLI prints it on one line.
    """


def renamed(err: UserError, names: dict[str, str], prefix: str = "") -> UserError:
    """``err`` with the option it starts with ('--streams: ...') replaced by its name in
    ``names`` (e.g. a scenario file's key, when the file gave the value), after ``prefix``."""
    text = str(err)
    option = text.split(":", 1)[0]
    if option in names:
        text = names[option] + text[len(option):]
    return UserError(prefix + text)


class Terminated(Exception):
    """SIGTERM or SIGHUP arrived while an emulated run was up: raised from the signal handler so
    the run unwinds through its teardown; the CLI then exits 128 + the signal's number."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        super().__init__(signal.Signals(signum).name)
