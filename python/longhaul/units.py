"""Parsing of the quantities users type: sizes, lists, ranges, delays, distances, rates.

The one place that turns text into numbers; every verb uses it. Errors are ``UserError``
naming the option and the valid form/range. Conventions (stated in ``--help`` too):
sizes take binary suffixes (K = 1024, M = 2^20, G = 2^30) because message sizes are powers
of two in every benchmark; bandwidths are reported in MB/s with MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from fractions import Fraction

from longhaul.errors import UserError
from longhaul.safeio import is_ascii_number

FIBRE_DELAY_US_PER_KM = 5.0  # light in glass: ~2e8 m/s -> 5 us per km (published-points [constants])
KM_PER_MILE = 1.609344

_SIZE_RE = re.compile(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([kmgtKMGT]?)(i?[bB])?\s*$", re.ASCII)  # 30 digits: no size is longer
_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str, option: str = "size") -> int:
    """'65536', '64K', '8M', '4MB', '1T' -> bytes (binary suffixes)."""
    m = _SIZE_RE.match(str(text))
    if not m:
        raise UserError(f"{option}: '{text}' is not a size (use bytes like 65536 or 64K, 8M, 1G, 1T)")
    value = Fraction(m.group(1)) * _SUFFIX[m.group(2).lower()]  # exact: 2^53 + 1 bytes stay what was typed
    if value.denominator != 1:
        raise UserError(f"{option}: '{text}' is not a whole number of bytes")
    return int(value)


def parse_optional_size(text: str | None, option: str) -> int | None:
    """An option's size, or None when it was not given ('' is given, and not a size)."""
    return None if text is None else parse_size(text, option)


def list_items(text: str, option: str, valid_item: str) -> list[str]:
    """A comma list's items, stripped; [] for a list with nothing in it (each caller says "empty list").
    An empty item ('1K,,2K', or a trailing comma '1K,') is refused, not dropped: it is a value lost in
    editing, and the run would go ahead without that point with nothing saying so. ``valid_item``
    says what an item is, for that message."""
    text = str(text)
    if not text.strip():
        return []
    items = [part.strip() for part in text.split(",")]
    if "" in items:
        raise UserError(f"{option}: empty item in '{text.strip()}' (each item is {valid_item})")
    return items


def parse_sizes(text: str, option: str = "--sizes", lo: int = 1, hi: int = 1 << 30) -> list[int]:
    """A comma list ('2048,65536') or a power-of-two range ('2:8M' = 2, 4, ..., 8M; doubling from LOW,
    as OSU's -m LOW:HIGH does, so '3:100' = 3, 6, ..., 96)."""
    text = str(text).strip()
    if ":" in text:
        a, _, b = text.partition(":")
        start, stop = parse_size(a, option), parse_size(b, option)
        if start < 1 or stop < start:
            raise UserError(f"{option}: range '{text}' must be LOW:HIGH with 1 <= LOW <= HIGH")
        sizes, s = [], start
        while s <= stop:
            sizes.append(s)
            s *= 2
    else:
        valid_item = f"a size in [{lo}, {hi}] bytes, like 65536 or 64K, 8M, 1G"
        sizes = [parse_size(part, option) for part in list_items(text, option, valid_item)]
    if not sizes:
        raise UserError(f"{option}: empty list")
    for s in sizes:
        if not lo <= s <= hi:
            raise UserError(f"{option}: {s} bytes is out of range [{lo}, {hi}]")
    return unique(sizes, option)


def unique(values: list, option: str, show=None) -> list:
    """The values in their order, each once: a point given twice (``--delay-us 0,0``) would run twice
    and print two rows. What was dropped is said on stderr (each value through ``show``), as a note, since
    it may be a typo."""
    def key(v):
        # Equal values are one point (0 and 0.0 hash alike), but true is not 1 (Python's True == 1),
        # so a boolean in a grid reaches the check that refuses it. Sweep values may be tables
        # (unhashable): those by their canonical JSON.
        try:
            hash(v)
            return (isinstance(v, bool), v)
        except TypeError:
            return (False, json.dumps(v, sort_keys=True, default=str))

    count: dict = {}
    kept: list = []
    for v in values:
        k = key(v)
        count[k] = count.get(k, 0) + 1
        if count[k] == 1:
            kept.append(v)
    if len(kept) < len(values):
        repeated = [v for v in kept if count[key(v)] > 1]
        sys.stderr.write(f"longhaul: note: {option}: {', '.join(map(show or _value_text, repeated))} given more than once; "
                         "each runs once\n")
    return kept


def _value_text(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _parse_list(text: str, option: str, convert, kind: str, lo, hi) -> list:
    values = []
    for part in list_items(text, option, f"{kind} in [{range_text(lo)}, {range_text(hi)}]"):
        try:
            if not is_ascii_number(part):   # int() and float() read '٣' as 3
                raise ValueError(part)
            v = convert(part)
        except ValueError:
            raise UserError(f"{option}: '{part}' is not {kind} (valid range [{range_text(lo)}, {range_text(hi)}])") from None
        if not (math.isfinite(v) and lo <= v <= hi):
            raise UserError(f"{option}: {part} is out of range [{range_text(lo)}, {range_text(hi)}]")
        values.append(v + 0 if v == 0 else v)  # -0 is 0: records would print -0.0 km
    if not values:
        raise UserError(f"{option}: empty list")
    return unique(values, option)


def parse_name_list(text: str, option: str, valid) -> list[str]:
    """'rdma,ipoib-ud' -> ['rdma', 'ipoib-ud'], each one of ``valid`` (as typed; lower-case names)."""
    names = [part.lower() for part in list_items(text, option, f"one of {', '.join(valid)}")]
    for name in names:
        if name not in valid:
            raise UserError(f"{option}: unknown '{name}' (valid: {', '.join(valid)})")
    if not names:
        raise UserError(f"{option}: empty list (valid: {', '.join(valid)})")
    return unique(names, option)


def parse_float_list(text: str, option: str, lo: float = 0.0, hi: float = math.inf) -> list[float]:
    """'0,10,100' -> [0.0, 10.0, 100.0], each checked against [lo, hi]."""
    return _parse_list(text, option, float, "a number", lo, hi)


def parse_int_list(text: str, option: str, lo: int = 1, hi: int = 1 << 31) -> list[int]:
    """'1,2,4' -> [1, 2, 4], each checked against [lo, hi]."""
    return _parse_list(text, option, int, "a whole number", lo, hi)


def _only(values: list, option: str):
    """The one value of an option that takes no list (a list is refused, not cut to its first item)."""
    if len(values) != 1:
        raise UserError(f"{option}: give one value here, not a list")
    return values[0]


def parse_one_float(text, option: str, lo: float = 0.0, hi: float = math.inf) -> float:
    """One number in [lo, hi] ('' is an empty list, '1,2' a list: both refused)."""
    return _only(parse_float_list(str(text), option, lo, hi), option)


def parse_one_int(text, option: str, lo: int = 1, hi: int = 1 << 31) -> int:
    """One whole number in [lo, hi] ('' is an empty list, '1,2' a list: both refused)."""
    return _only(parse_int_list(str(text), option, lo, hi), option)


SEED_MAX = (1 << 64) - 1  # the core's seeds are u64


def range_text(v: float) -> str:
    """A range bound as the help writes it: 0.001, 100000, 1e8, 2147483648 (not 1e+08 or 2.14748e+09):
    whole numbers in digits, except round powers of ten from a million up."""
    if math.isfinite(v) and v == int(v):
        n, k = abs(int(v)), len(str(abs(int(v)))) - 1
        return ("-" if v < 0 else "") + (f"1e{k}" if n >= 10**6 and n == 10**k else str(n))
    return f"{v:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def whole(lo: int, hi: int):
    """An argparse ``type``: a whole number in [lo, hi], typed as 100000 or 1e5. A value out of
    range is refused while parsing, with the range, instead of reaching the core as a negative u64."""
    span = f"[{range_text(lo)}, {range_text(hi)}]"

    def convert(text: str) -> int:
        try:
            if not is_ascii_number(text):   # int() reads '٣' as 3
                raise ValueError(text)
            value = int(text)
        except ValueError:
            try:
                if not is_ascii_number(text):
                    raise ValueError(text)
                f = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"'{text}' is not a whole number (valid range {span})") from None
            if not (math.isfinite(f) and f == int(f)):
                raise argparse.ArgumentTypeError(f"'{text}' is not a whole number (valid range {span})") from None
            value = int(f)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is out of range {span}")
        return value
    convert.__name__ = "whole number"
    return convert


def real(lo: float, hi: float, above_lo: bool = False):
    """An argparse ``type``: a finite number in [lo, hi], or (lo, hi] ``above_lo`` (refused while
    parsing, with the range)."""
    span = f"{'(' if above_lo else '['}{range_text(lo)}, {range_text(hi)}]"

    def convert(text: str) -> float:
        try:
            if not is_ascii_number(text):   # float() reads '٣' as 3
                raise ValueError(text)
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number (valid range {span})") from None
        if not (math.isfinite(value) and lo <= value <= hi) or (above_lo and value == lo):
            raise argparse.ArgumentTypeError(f"{text} is out of range {span}")
        return value + 0 if value == 0 else value  # -0 is 0: records would print -0.0 (--loss -0)
    convert.__name__ = "number"
    return convert


MAX_DELAY_US = 200_000.0  # 40,000 km of fibre: twice around the planet's longest paths


def delays_from_options(delay_us: str | None, distance_km: str | None, distance_miles: str | None) -> list[float]:
    """One-way delays in us from exactly one of --delay-us / --distance-km / --distance-miles."""
    given = [o for o in (delay_us, distance_km, distance_miles) if o is not None]
    if len(given) > 1:
        raise UserError("give only one of --delay-us, --distance-km, --distance-miles")
    if distance_km is not None:
        return [d * FIBRE_DELAY_US_PER_KM for d in parse_float_list(distance_km, "--distance-km", 0, MAX_DELAY_US / 5)]
    if distance_miles is not None:
        hi = MAX_DELAY_US / FIBRE_DELAY_US_PER_KM / KM_PER_MILE
        miles = parse_float_list(distance_miles, "--distance-miles", 0, hi)
        return [d * KM_PER_MILE * FIBRE_DELAY_US_PER_KM for d in miles]
    return parse_float_list(delay_us if delay_us is not None else "0", "--delay-us", 0, MAX_DELAY_US)


def km_from_delay_us(delay_us: float) -> float:
    return delay_us / FIBRE_DELAY_US_PER_KM
