"""Reading what users hand longhaul, bounded: the one module every reader of user-supplied data
goes through (scenario, site and base files, sweep grids, traces, tool outputs for ingest and
measure, analysis inputs, the store's manifest).

Three bounds, each a one-line ``UserError`` (exit status 2) naming the file and the limit:

* **what a file is**: only a regular file is read. A FIFO would block ``open`` until a writer
  came (forever), a device such as ``/dev/zero`` would be read until memory ran out, a directory
  says "Is a directory" only after a detour; all are refused before a byte is read
  (``open`` with ``O_NONBLOCK``, then ``fstat``).
* **size**: at most ``limit`` bytes are read; a longer file is refused unread past the limit.
* **shape**: a TOML or JSON document nested deeper than ``MAX_DEPTH`` levels (Python's parsers
  recurse, and die with RecursionError near 1,000), a whole number of more than 4,300 digits
  (Python's ``int`` refuses to convert it: ValueError), a whole number beyond 64 bits (no
  parameter takes one; Parquet and the core cannot hold it) or a non-finite number is refused,
  with its key path.

Values echoed in messages go through ``printable``: a control character typed in an option
(``--sizes $'\\e[2J'``) is shown escaped, never sent to the terminal. ``is_ascii_number`` is the
rule for what counts as a number: ASCII digits only (Python's ``int`` reads ``'٣'`` as 3).
"""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
import unicodedata
from typing import Any

from longhaul.errors import UserError

#: Nesting levels (tables, arrays, objects) of any document longhaul reads: a scenario needs 3,
#: an iperf3 report 5; Python's recursive parsers fail near 1,000.
MAX_DEPTH = 32
#: The widest whole numbers any parameter or stored value takes (i64 and u64: seeds are u64).
WHOLE_RANGE = (-(2**63), 2**64 - 1)

MiB = 1 << 20
#: A scenario, site, base or grid file: a few hundred bytes in practice; the bound refuses a
#: wrong file at once.
DOCUMENT_BYTES = 16 * MiB
#: A benchmark's printed output (ingest, measure): iperf3 -J for a day of 1 s intervals is ~90 MB.
TOOL_OUTPUT_BYTES = 128 * MiB
#: A trace to replay (sim mpi replay): one line per message or compute phase.
TRACE_BYTES = 64 * MiB
#: An analysis input (`results export` csv/json/parquet).
TABLE_BYTES = 256 * MiB
#: The store's manifest.json and journal: ~400 bytes a run, so a million runs.
MANIFEST_BYTES = 512 * MiB

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= MiB and n % MiB == 0 else f"{n} bytes"


def read_file(path: str | os.PathLike, who: str, limit: int, what: str = "a file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` of them), or a one-line UserError
    starting with ``who`` (the option or command: ``--scenario``, ``ingest``). ``what`` says what
    the file should be, for the messages (``a TOML or JSON scenario file``)."""
    name = printable(os.fspath(path))
    if not name.strip():  # Path("") is the current directory: "Is a directory" would mislead
        raise UserError(f"{who}: empty file name (give the path of {what})")
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"{who}: cannot read '{name}': it does not exist (give {what})") from None
    except OSError as err:
        raise UserError(f"{who}: cannot read '{name}' ({err.strerror or err})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
            raise UserError(f"{who}: '{name}' is {kind}, not a file (give {what})")
        if st.st_size > limit:
            raise UserError(f"{who}: '{name}' is {st.st_size} bytes, over the {_size_text(limit)} limit "
                            f"(give {what})")
        chunks, got = [], 0
        while got <= limit:   # a file that grows while it is read is still bounded
            chunk = os.read(fd, min(limit + 1 - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise UserError(f"{who}: '{name}' is over the {_size_text(limit)} limit (give {what})")
        return b"".join(chunks)
    except OSError as err:
        raise UserError(f"{who}: cannot read '{name}' ({err.strerror or err})") from None
    finally:
        os.close(fd)


def decode_text(data: bytes, who: str, name: str, what: str) -> str:
    """UTF-8 text (a byte-order mark, which Windows editors write, is not part of it)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise UserError(f"{who}: '{printable(name)}' is not a text file (line {line} is not UTF-8; "
                        f"give {what})") from None


def read_text(path: str | os.PathLike, who: str, limit: int, what: str = "a text file") -> str:
    return decode_text(read_file(path, who, limit, what), who, os.fspath(path), what)


class DocumentError(UserError):
    """A document that cannot be read within the bounds: ``where: problem``; ``problem`` alone for
    a reader that words its own messages (ingest: ``iperf3: FILE line 1: ...``)."""

    def __init__(self, where: str, problem: str, line: int = 1, said: str | None = None):
        said = said or problem
        super().__init__(f"{where} {said}" if said.startswith("is ") else f"{where}: {said}")
        self.problem, self.line = problem, line


def parse_json(text: str | bytes, where: str, finite: bool = True) -> Any:
    """A JSON document, checked by ``check_document``; ``where`` starts each message
    (``--grid``, ``--scenario 's.json'``). ``finite=False`` leaves NaN and Infinity to a reader
    that names them itself (ingest's bounds)."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise DocumentError(where, f"nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as err:
        raise DocumentError(where, printable(err.msg), err.lineno,
                            f"not JSON ({printable(err.msg)}: line {err.lineno} column {err.colno})") from None
    except ValueError as err:  # a whole number of more than 4,300 digits (sys.get_int_max_str_digits)
        raise DocumentError(where, _digits_problem(err)) from None
    check_document(doc, where, finite=finite)
    return doc


def parse_toml(text: str, where: str) -> dict:
    """A TOML document, checked by ``check_document``."""
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise DocumentError(where, f"nested more than {MAX_DEPTH} levels deep") from None
    except tomllib.TOMLDecodeError as err:
        raise DocumentError(where, f"is not valid TOML ({printable(str(err))})") from None
    except ValueError as err:
        raise DocumentError(where, _digits_problem(err)) from None
    check_document(doc, where)
    return doc


def _digits_problem(err: ValueError) -> str:
    text = str(err)
    if "digits" in text:
        return "a number too long to read"  # over sys.get_int_max_str_digits(): 4300 digits
    return printable(text[:200])


def _number_text(value: int) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} digits)"


def check_document(doc: Any, where: str, depth: int = MAX_DEPTH, finite: bool = True) -> None:
    """Refuse a document nested deeper than ``depth``, or holding a whole number outside
    ``WHOLE_RANGE`` or (``finite``) a number that is not finite, naming the key path. Iterative: a
    document built without the parsers' recursion (TOML's dotted keys ``a.a.a...``) is walked
    safely; key paths are spelled only for the message."""
    # (value, level, link): link is (parent link, key) or None at the top, so a path is built only
    # for the value at fault, not for each of a million list items.
    stack: list[tuple[Any, int, tuple | None]] = [(doc, 1, None)]
    while stack:
        value, level, link = stack.pop()
        problem = None
        if isinstance(value, (dict, list)):
            if level > depth:
                problem = f"nested more than {depth} levels deep"
            else:
                items = value.items() if isinstance(value, dict) else enumerate(value)
                stack.extend((item, level + 1, (link, key)) for key, item in items)
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if not WHOLE_RANGE[0] <= value <= WHOLE_RANGE[1]:
                problem = (f"{_number_text(value)} is out of range (no parameter takes a whole number outside "
                           f"[{WHOLE_RANGE[0]}, {WHOLE_RANGE[1]}])")
        elif finite and isinstance(value, float) and not math.isfinite(value):
            problem = f"not a finite number ({value})"
        if problem is not None:
            keys = []
            while link is not None:
                link, key = link
                keys.append(str(key))
            raise DocumentError(where, f"{printable('.'.join(reversed(keys)))}: {problem}" if keys else problem)


def load_document(path: str | os.PathLike, who: str, what: str = "a TOML or JSON file",
                  limit: int = DOCUMENT_BYTES) -> Any:
    """A TOML file, or JSON by its ``.json`` name, read and parsed with every bound above."""
    name = os.fspath(path)
    text = read_text(path, who, limit, what)
    where = f"{who}: '{printable(name)}'"
    return parse_json(text, where) if name.endswith(".json") else parse_toml(text, where)


def is_ascii_number(text: str) -> bool:
    """Only ASCII characters spell a number: Python's int and float also read other scripts'
    digits (Arabic-Indic 3, U+0663, is 3; fullwidth 1, U+FF11, is 1), which a user never means as one."""
    return str(text).isascii()


def printable(text: str) -> str:
    """``text`` with every control, format and separator character escaped (``\\x1b``, ``\\u202e``),
    so that a value echoed in a message can neither drive the terminal nor break the line."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or unicodedata.category(ch) == "Zs":   # a space of any width is a space
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)
