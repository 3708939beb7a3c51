"""The link and results-store options every ``longhaul emu`` verb shares, and the link they give
(a scenario file first, options over it)."""

from __future__ import annotations

import argparse

from longhaul.errors import UserError


def link_args(p: argparse.ArgumentParser, lists: bool = False, links: bool = False) -> None:
    g = p.add_argument_group("link (see 'longhaul emu --help')")
    if links:
        g.add_argument("--wan-links", "--links", dest="wan_links",
                       help="parallel links, 1..16 (default 1), each with the link options below; flows are spread "
                            "over them by the hosts' multipath routes (a hash of addresses and ports)")
        g.add_argument("--detect-ms", help="time from a link's cut to the hosts' routes leaving it, ms, 0..60000 "
                                           "(default 0: at once)")
    many = " (comma list for a grid)" if lists else ""
    g.add_argument("--delay-us", help=f"one-way delay, us, 0..200000 (default 0){many}")
    g.add_argument("--distance-km", help=f"fibre length in km instead of --delay-us (5 us/km){many}")
    g.add_argument("--distance-miles", help=f"fibre length in miles instead of --delay-us{many}")
    g.add_argument("--rate-gbps", help=f"link rate, Gb/s; 0 = unlimited (default){many}")
    g.add_argument("--loss", help="loss probability per wire packet, 0..0.5 (default 0)")
    g.add_argument("--jitter-us", help="jitter amplitude, us, 0..100000 (default 0)")
    g.add_argument("--queue", help="bottleneck queue: bytes (e.g. 4MB) or packets (e.g. 1000p); "
                                   "default one round trip at the rate, >= 256K")
    g.add_argument("--mtu", help="MTU in bytes, >= 576, at most what the kernel accepts (65535 here; default 1500)")
    g.add_argument("--window", help="TCP buffer maximum per namespace, e.g. 64M (default 4 x BDP, >= 4M)")
    g.add_argument("--scenario", help="the simulator's TCP scenario file (TOML/JSON, as `longhaul sim tcp "
                                      "--scenario`) giving the link; options here override it")
    g.add_argument("--seed", help="seed of loss and jitter (default 1)")
    g.add_argument("--name", help="run name (namespaces NAME-a0, NAME-b0, ...); default random lhXXXXXX")


def link_values(args) -> dict:
    return {"delay_us": args.delay_us, "distance_km": args.distance_km, "distance_miles": args.distance_miles,
            "rate_gbps": args.rate_gbps, "loss": args.loss, "jitter_us": args.jitter_us, "queue": args.queue,
            "mtu": args.mtu, "window": args.window, "seed": args.seed, "hosts": getattr(args, "hosts", None),
            "links": getattr(args, "wan_links", None), "detect_ms": getattr(args, "detect_ms", None)}


def scenario_file(args, events: bool = False) -> dict:
    """The scenario file's values (empty without one); ``events``: whether this verb applies timed
    failover events (a file with events given to one that does not is refused, not half obeyed)."""
    from longhaul.emu import scenario
    if args.scenario is None:
        return {"link": {}, "bench": {}, "events": None}
    file = scenario.load(args.scenario)
    if file["events"] is not None and not events:
        raise UserError(f"scenario {args.scenario}: events: timed link failures are applied by `longhaul emu run`, "
                        "`emu drill` and `compare failover`; here take links down with `longhaul emu link down K`")
    return file


def link_of(args):
    from longhaul.emu import scenario
    return scenario.build_link(scenario.merged(scenario_file(args)["link"], link_values(args)))


def bench_link(args) -> tuple:
    """The link (scenario file, then options), the grid's delays and rates, and the file's
    workload values."""
    from longhaul.emu import scenario
    from longhaul.emu.options import parse_rates
    from longhaul.units import delays_from_options
    file = scenario_file(args)
    values = scenario.merged(file["link"], link_values(args))
    dist = [values.get(k) for k in ("delay_us", "distance_km", "distance_miles")]
    delays = delays_from_options(*[None if v is None else str(v) for v in dist])
    rates = parse_rates(values.get("rate_gbps", 0))
    for k in ("delay_us", "distance_km", "distance_miles", "rate_gbps"):
        values.pop(k, None)
    base = scenario.build_link(values)
    return base, delays, rates, file["bench"]


def add_store_options(p) -> None:
    from longhaul.results import add_store_option
    add_store_option(p)
    p.add_argument("--label", default="", help="label stored with the run (e.g. site or test name)")
    p.add_argument("--no-store", action="store_true", help="print only; do not save the run in the results store")


def check_store(args) -> None:
    """Before measuring: the label is one line and the store can be written (--no-store wins
    over --store, so a script's usual --store can stay)."""
    from longhaul.results import check_label, store_from_args
    if not args.no_store:
        check_label(args.label)
        store_from_args(args).check_writable()


def save(args, kind: str, records: list[dict], started_utc: str) -> None:
    """One emulated run per invocation, keyed by its options and start time (repeats are kept)."""
    if args.no_store or not records:
        return
    from longhaul.results import now_utc, store_from_args
    options = {k: v for k, v in vars(args).items() if k not in ("func", "format", "store", "no_store")
               and isinstance(v, (str, int, float, bool, type(None)))}
    scenario = {"kind": kind, "options": options, "started_utc": started_utc}
    store_from_args(args).put(scenario, records, source="emu", label=args.label, started_utc=started_utc,
                              finished_utc=now_utc())
