"""The one error type the CLI turns into a single line and exit status 2."""


class UserError(Exception):
    """Bad input from the user: a wrong parameter, unknown name, malformed file, missing privilege.

    The message names the problem and the valid range; the CLI prints it on one line.
    """
