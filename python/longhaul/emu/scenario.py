"""Scenario files (TOML or JSON) that drive the emulator, and turning option values (from a
file or the command line) into ``LinkOptions``.

Format (TOML shown; JSON is the same tree)::

    [link]                  # both directions unless [link.ab]/[link.ba] say otherwise
    delay_us = 5000         # or distance_km / distance_miles (5 us per km of fibre)
    rate_gbps = 1           # 0 = unlimited
    loss = 0.0              # probability per packet
    jitter_us = 0
    queue = "4MB"           # or "1000p" (packets); default one round trip at the rate
    mtu = 9000
    hosts = 1               # hosts per cluster
    window = "64M"          # TCP buffer maximum in every namespace
    [link.ba]
    rate_gbps = 0.1         # e.g. an asymmetric return path

    [[bench]]               # run by `longhaul emu scenario FILE`, records printed
    kind = "tcp"            # or "ping"
    streams = [1, 4]
    cc = ["cubic"]
    duration_s = 3
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from longhaul.emu.options import Direction, LinkOptions, Queue
from longhaul.errors import UserError
from longhaul.units import delays_from_options, parse_float_list, parse_size

DIRECTION_KEYS = {"delay_us", "distance_km", "distance_miles", "rate_gbps", "loss", "jitter_us", "queue"}
LINK_KEYS = DIRECTION_KEYS | {"mtu", "hosts", "window", "seed", "ab", "ba"}
BENCH_KEYS = {"kind", "streams", "cc", "duration_s", "omit_s", "tool", "cross_gbps", "count", "interval_us",
              "size_bytes"}


def load(path: str) -> dict:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UserError(f"scenario {path}: cannot read ({e.strerror})") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"scenario {path}: not valid {'JSON' if p.suffix == '.json' else 'TOML'} ({e})") from None
    if not isinstance(data, dict):
        raise UserError(f"scenario {path}: the top level must be a table")
    link = data.get("link", data.get("emu", {}).get("link", {}))
    if not isinstance(link, dict):
        raise UserError(f"scenario {path}: [link] must be a table")
    unknown = set(link) - LINK_KEYS
    if unknown:
        raise UserError(f"scenario {path}: unknown [link] key '{sorted(unknown)[0]}' (known: {', '.join(sorted(LINK_KEYS))})")
    benches = data.get("bench", [])
    for b in benches:
        if not isinstance(b, dict) or b.get("kind") not in ("tcp", "ping"):
            raise UserError(f"scenario {path}: each [[bench]] needs kind = \"tcp\" or \"ping\"")
        bad = set(b) - BENCH_KEYS
        if bad:
            raise UserError(f"scenario {path}: unknown [[bench]] key '{sorted(bad)[0]}' (known: {', '.join(sorted(BENCH_KEYS))})")
    return {"link": link, "bench": benches}


def _one_float(value, option: str, lo: float = 0.0, hi: float = float("inf")) -> float:
    values = parse_float_list(str(value), option, lo, hi)
    if len(values) != 1:
        raise UserError(f"{option}: give one value here, not a list")
    return values[0]


def _int(value, option: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise UserError(f"{option}: '{value}' is not a whole number") from None


def _direction(values: dict, base: Direction | None = None) -> Direction:
    d = base or Direction()
    kw = {k: getattr(d, k) for k in ("delay_us", "rate_gbps", "loss", "jitter_us", "queue")}
    dist = [values.get(k) for k in ("delay_us", "distance_km", "distance_miles")]
    if any(v is not None for v in dist):
        delays = delays_from_options(*[None if v is None else str(v) for v in dist])
        if len(delays) != 1:
            raise UserError("--delay-us: give one value here, not a list")
        kw["delay_us"] = delays[0]
    if values.get("rate_gbps") is not None:
        kw["rate_gbps"] = _one_float(values["rate_gbps"], "--rate-gbps")
    if values.get("loss") is not None:
        kw["loss"] = _one_float(values["loss"], "--loss")
    if values.get("jitter_us") is not None:
        kw["jitter_us"] = _one_float(values["jitter_us"], "--jitter-us")
    if values.get("queue") is not None:
        kw["queue"] = Queue.parse(values["queue"])
    return Direction(**kw).validated()


def build_link(values: dict) -> LinkOptions:
    """LinkOptions from a mapping of option names to values (numbers or text, None = unset)."""
    both = _direction(values)
    ab = _direction(values.get("ab") or {}, both)
    ba = _direction(values.get("ba") or {}, both)
    window = values.get("window")
    return LinkOptions(
        ab=ab, ba=ba,
        mtu=_int(values["mtu"], "--mtu") if values.get("mtu") is not None else 1500,
        hosts=_int(values["hosts"], "--hosts") if values.get("hosts") is not None else 1,
        window=parse_size(str(window), "--window") if window is not None else None,
        seed=_int(values["seed"], "--seed") if values.get("seed") is not None else 1,
    ).validated()


def merged(file_link: dict, cli_values: dict) -> dict:
    """Command-line values (those given) override the file's [link] values."""
    out = dict(file_link)
    given = {k: v for k, v in cli_values.items() if v is not None}
    if given.keys() & {"delay_us", "distance_km", "distance_miles"}:
        for k in ("delay_us", "distance_km", "distance_miles"):
            out.pop(k, None)
    out.update(given)
    return out
