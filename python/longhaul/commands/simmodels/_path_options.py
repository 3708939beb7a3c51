"""The options every ``longhaul sim`` model names its path and its run with: the one-way delay or
the fibre length (``[path]``'s ``delay_us`` / ``fibre_km``), the hardware profile and range
extender pair, and the seed. One definition, so the same key has the same option, range and help
in every model."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from longhaul import units
from longhaul.sim import verbs

DELAY_LIST_HELP = "added one-way delay on the long-haul link in us (comma list; 0..200000; default 0)"
SEED_HELP = "random seed (default: the scenario file's, else 1; same seed, same result)"


def add_distance_lists(p: argparse.ArgumentParser, delay_help: str = DELAY_LIST_HELP) -> None:
    """--delay-us, --distance-km or --distance-miles: a comma list each, one point per value."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--delay-us", default=None, metavar="LIST", help=delay_help)
    where.add_argument("--distance-km", default=None, metavar="LIST", help="fibre length in km instead (5 us/km; 0..40000)")
    where.add_argument("--distance-miles", default=None, metavar="LIST", help="fibre length in miles instead")


def distance_points(args: argparse.Namespace) -> list[dict]:
    """The ``[path]`` of each point of :func:`add_distance_lists`' options; none given, one point
    with the scenario file's path (or no added delay)."""
    if args.distance_km is None and args.distance_miles is None:
        if args.delay_us is None:
            return [{}]
        return [{"delay_us": d} for d in units.parse_float_list(args.delay_us, "--delay-us", 0, units.MAX_DELAY_US)]
    km = [d / units.FIBRE_DELAY_US_PER_KM for d in units.delays_from_options(None, args.distance_km, args.distance_miles)]
    return [{"fibre_km": k} for k in km]


def add_distance(p: argparse.ArgumentParser) -> None:
    """--delay-us or --distance-km: one value (the flow-level models run one point)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--delay-us", type=units.real(0, units.MAX_DELAY_US), default=None, metavar="US",
                       help="added one-way delay on the WAN in us (0..200000; default 0)")
    where.add_argument("--distance-km", type=units.real(0, 40000), default=None, metavar="KM",
                       help="fibre length in km (5 us/km; 0..40000)")


def add_profile_and_extender(p: argparse.ArgumentParser, testbeds: Sequence[str], profile_help: str,
                             extender_help: str = "range extender pair (none = a plain IB link between the switches)") -> None:
    """--profile (one of the model's testbeds) and --extender (a verbs extender pair)."""
    p.add_argument("--profile", choices=testbeds, default=None, help=profile_help)
    p.add_argument("--extender", choices=verbs.EXTENDERS, default=None, help=extender_help)


def add_seed(p: argparse.ArgumentParser, help: str = SEED_HELP) -> None:
    p.add_argument("--seed", type=units.whole(0, units.SEED_MAX), default=None, help=help)
