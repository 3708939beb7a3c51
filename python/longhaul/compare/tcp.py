"""TCP through the emulator vs the simulator's TCP model on the same link.

The emulator runs first (its records carry what it actually used: socket-buffer maximum,
bottleneck queue, warm-up); the simulator then runs the same scenario — an Ethernet path at the
emulated rate and delay, MTU, streams, congestion control, buffer maxima and queue — and is
measured over the same window (after the same warm-up). Records: one per point and source
(``source`` = sim | emu), plus a side-by-side table with the relative difference.
"""

from __future__ import annotations

import argparse

from longhaul import units
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit

SERIES_INTERVAL_S = 0.1


def sim_twin(emu_record: dict, duration_s: float, seed: int = 1) -> dict:
    """The simulator's record for the scenario an emulated record measured."""
    from longhaul.sim import tcp

    omit = float(emu_record.get("omit_s") or 0.0)
    sc = tcp.scenario(
        link="10gige-lan", stack="modern", seed=seed, delay_us=emu_record["delay_us"],
        rate_gbps=emu_record["rate_gbps"], mtu_bytes=emu_record.get("mtu_bytes") or 1500,
        streams=emu_record["streams"], cc=emu_record["cc"], rmem_max_bytes=emu_record.get("window_bytes"),
        wmem_max_bytes=emu_record.get("window_bytes"), queue_bytes=emu_record.get("queue_bytes"),
        duration_s=omit + duration_s, interval_s=SERIES_INTERVAL_S)
    rec = tcp.run(sc)
    after = [bw for t, bw in zip(rec["series_t_s"], rec["series_bw_MBps"]) if t > omit + 1e-9]
    bw = sum(after) / len(after) if after else rec["bw_MBps"]
    return {"source": "sim", "delay_us": rec["delay_us"], "rate_gbps": emu_record["rate_gbps"], "cc": rec["cc"],
            "streams": rec["streams"], "window_bytes": emu_record.get("window_bytes"), "bw_MBps": round(bw, 3),
            "retransmits": rec["retransmits"]}


def compare_tcp(delays_us, rate_gbps: float, ccs, streams, duration_s: float = 5.0, mtu: int = 1500) -> list[dict]:
    """Emulated then simulated records, one per (delay, cc, streams) and source."""
    from longhaul.emu import bench

    emu = bench.tcp(delay_us=list(delays_us), rate_gbps=rate_gbps, cc=list(ccs), streams=list(streams),
                    duration_s=duration_s, mtu=mtu)
    out = []
    for e in emu:
        out.append({"source": "emu", "delay_us": e["delay_us"], "rate_gbps": e["rate_gbps"], "cc": e["cc"],
                    "streams": e["streams"], "window_bytes": e.get("window_bytes"), "bw_MBps": e["bw_MBps"],
                    "retransmits": e.get("retransmits")})
        out.append(sim_twin(e, duration_s))
    return out


def side_by_side(records: list[dict]) -> list[dict]:
    """One row per point: sim and emu bandwidth and (sim - emu) / emu."""
    rows: dict[tuple, dict] = {}
    for r in records:
        key = (r["delay_us"], r["rate_gbps"], r["cc"], r["streams"])
        row = rows.setdefault(key, dict(zip(("delay_us", "rate_gbps", "cc", "streams"), key)))
        row[f"{r['source']}_bw_MBps"] = r["bw_MBps"]
    for row in rows.values():
        s, e = row.get("sim_bw_MBps"), row.get("emu_bw_MBps")
        row["rel_diff"] = round((s - e) / e, 4) if s is not None and e else None
    return list(rows.values())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tcp", help="TCP: the simulator's model vs real TCP through the emulator",
                       description="Run the same TCP scenario through the emulator (real Linux TCP, needs root) and "
                                   "in the simulator, and print both with the relative difference (sim - emu) / emu. "
                                   "Bandwidth in MB/s, MB = 10^6 bytes.",
                       formatter_class=DefaultsHelpFormatter)
    p.add_argument("--delay-us", default="1000,10000,50000", metavar="LIST", help="one-way delays (us, 0..200000)")
    p.add_argument("--rate-gbps", type=units.real(0.001, 10), default=1.0, help="link rate (Gb/s, 0.001..10)")
    p.add_argument("--cc", default="reno,cubic", metavar="LIST", help="congestion control per socket (reno, cubic, bbr ...)")
    p.add_argument("--streams", default="1,4", metavar="LIST", help="parallel TCP streams (1..128)")
    p.add_argument("--duration-s", type=units.real(0.1, 3600), default=5.0, help="measured seconds per point, after a warm-up of 10 RTTs (0.1..3600)")
    p.add_argument("--mtu", type=units.whole(576, 9000), default=1500,
                   help="MTU of the emulated hosts and the simulated 10gige-lan link (bytes, 576..9000: jumbo frames)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=_run)


def _run(args) -> int:
    delays = units.parse_float_list(args.delay_us, "--delay-us", 0, units.MAX_DELAY_US)
    streams = units.parse_int_list(args.streams, "--streams", 1, 128)
    # An empty list would start the emulator and measure nothing; an empty item is a name lost in editing.
    ccs = units.unique(units.list_items(args.cc, "--cc", "a congestion control name"), "--cc")
    if not ccs:
        raise UserError("--cc: empty list (give names like reno,cubic)")
    records = compare_tcp(delays, args.rate_gbps, ccs, streams, args.duration_s, args.mtu)
    if args.format == "json":
        emit(records, "json")
    else:
        emit(side_by_side(records), args.format, ["delay_us", "rate_gbps", "cc", "streams", "sim_bw_MBps", "emu_bw_MBps", "rel_diff"],
             title="longhaul compare tcp (rel_diff = (sim - emu) / emu)")
    return 0
