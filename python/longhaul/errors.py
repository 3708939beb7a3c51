"""The one error type the CLI turns into a single line and exit status 2."""


class UserError(Exception):
    """Bad input from the user: a wrong parameter, unknown name, malformed file, missing privilege.

    The message names the problem and the valid range; the CLI prints it on one line.
    """


class Terminated(Exception):
    """SIGTERM or SIGHUP arrived while an emulated run was up: raised from the signal handler so
    the run unwinds through its teardown; the CLI then exits 128 + the signal's number."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        super().__init__(signal.Signals(signum).name)
