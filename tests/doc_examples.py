"""The runnable examples of the README and the documentation pages: find them, run them, and check
that what they print still matches what the page shows *in substance*.

A console block is runnable when the line before its fence is ``<!-- runnable -->`` (or
``<!-- runnable: emu -->`` for one that needs root and the emulator). Its ``$ `` lines are commands
(a trailing backslash continues one); the lines after a command, up to the next, are what it prints.

What "in substance" means, line by line, after box-drawing characters and runs of blanks are made
one space: the words, column names and punctuation are the same, and so is the number of numbers;
each number is within a factor of two of the one shown (or within 1 of it), with the same sign. A
model change of tens of percent passes; a command that fails, a column added, removed or moved, a
value that became empty, or a result an order of magnitude off does not. A line ``...`` stands for
any number of lines, and ``...`` inside a line for any text (timestamps, counters that vary).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^<!--\s*runnable(?::\s*(?P<opts>[^>]*?))?\s*-->\s*$")
FENCE = re.compile(r"^(```+)\s*console\s*$")
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
#: A number, also with thousands separators as the study prints them (1,266 MB/s).
NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: Drawn borders of rich tables: their width follows the widest cell, so they are not substance.
BOX = re.compile(r"[\u2500-\u257f]")


@dataclass
class Command:
    text: str  # the command as typed, continuation lines joined
    shown: list[str] = field(default_factory=list)  # what the page shows it printing
    first_output_line: int = 0  # index in the file's lines of the first shown output line


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    options: set[str]
    commands: list[Command]


def blocks(path: Path) -> list[Block]:
    """The runnable console blocks of a Markdown file, in order."""
    lines = path.read_text().splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if m and i + 1 < len(lines) and FENCE.match(lines[i + 1]):
            fence = FENCE.match(lines[i + 1]).group(1)
            start = i + 1
            j = start + 1
            commands: list[Command] = []
            while j < len(lines) and lines[j].strip() != fence:
                if lines[j].startswith("$ "):
                    text = lines[j][2:]
                    while text.endswith("\\") and j + 1 < len(lines):
                        j += 1
                        text += "\n" + lines[j]  # bash joins the lines at the backslash
                    heredoc = HEREDOC.search(text)
                    while heredoc and j + 1 < len(lines):  # a here-document's lines are the command's
                        j += 1
                        text += "\n" + lines[j]
                        if lines[j] == heredoc.group(1):
                            break
                    commands.append(Command(text, first_output_line=j + 1))
                elif commands:
                    commands[-1].shown.append(lines[j])
                j += 1
            opts = set((m.group("opts") or "").split())
            found.append(Block(path, start + 1, opts, commands))
            i = j
        i += 1
    return found


def normalise(line: str) -> str:
    return " ".join(BOX.sub(" ", line).split())


def _line_pattern(shown: str) -> tuple[re.Pattern, list[float]]:
    """A regex for an actual line that matches the shown one's words exactly, with a group per number."""
    parts, numbers = [], []
    for piece in re.split(rf"(\.\.\.|{NUMBER})", normalise(shown)):
        if piece == "...":
            parts.append(".*?")
        elif piece and re.fullmatch(NUMBER, piece):
            parts.append(f"({NUMBER})")
            numbers.append(float(piece.replace(",", "")))
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts)), numbers


def close(shown: float, actual: float) -> bool:
    if shown == actual or abs(shown - actual) <= 1:
        return True
    if shown == 0 or actual == 0 or (shown > 0) != (actual > 0):
        return False
    return abs(math.log(abs(actual) / abs(shown))) <= math.log(2)


def line_differs(shown: str, actual: str) -> str | None:
    """None when the actual line matches the shown one in substance, else why not."""
    pattern, numbers = _line_pattern(shown)
    m = pattern.fullmatch(normalise(actual))
    if m is None:
        return "the words or the columns differ"
    for want, got in zip(numbers, m.groups()):
        if not close(want, float(got.replace(",", ""))):
            return f"{got} is not within a factor of two of {want:g}"
    return None


def output_differs(shown: list[str], actual: list[str]) -> str | None:
    """None when the actual output matches the shown one (``...`` lines stand for any lines), else why."""
    shown = [s for s in shown if normalise(s)]
    actual = [a for a in actual if normalise(a)]
    # memo[(i, j)]: shown[i:] matches actual[j:]
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(shown):
                memo[i, j] = j == len(actual)
            elif normalise(shown[i]) == "...":
                memo[i, j] = any(match(i + 1, k) for k in range(j, len(actual) + 1))
            else:
                memo[i, j] = j < len(actual) and line_differs(shown[i], actual[j]) is None and match(i + 1, j + 1)
        return memo[i, j]

    if match(0, 0):
        return None
    # Name the first line that does not match when the two are read side by side.
    for i, (s, a) in enumerate(zip(shown, actual)):
        if normalise(s) == "...":
            break
        why = line_differs(s, a)
        if why:
            return f"output line {i + 1}: {why}\n  shown:  {normalise(s)}\n  actual: {normalise(a)}"
    return f"the output has {len(actual)} lines, the page shows {len(shown)}"


def regenerated(shown: list[str], actual: list[str]) -> list[str]:
    """What the page should show after a legitimate change: the actual output, cut after as many
    lines as the page showed when the page ended its output with a ``...`` line."""
    actual = [a.rstrip() for a in actual]
    while actual and not actual[-1]:
        actual.pop()
    if shown and normalise(shown[-1]) == "...":
        keep = len(shown) - 1
        return actual[:keep] + ["..."] if len(actual) > keep else actual
    return actual
