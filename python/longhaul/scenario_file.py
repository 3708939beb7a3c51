"""A scenario file (TOML, or JSON by its .json name) read at the edge, for every model and the
emulator alike, with one-line errors that name the option it came from."""

from __future__ import annotations

from longhaul import safeio
from longhaul.errors import UserError


def load_scenario_file(path: str, option: str = "--scenario") -> dict:
    """A scenario file (TOML, or JSON by its .json name) as a dict; errors name ``option``. Read
    through ``safeio``: a regular file of at most 16 MiB, nested at most 32 levels, numbers in range
    (--scenario /dev/zero read forever, a FIFO blocked, a deep file was a RecursionError)."""
    sc = safeio.load_document(path, option, "a TOML or JSON scenario file")
    if not isinstance(sc, dict):
        raise UserError(f"{option}: '{safeio.printable(path)}' must hold a table/object of parameters, "
                        f"not a {type(sc).__name__}")
    return sc
