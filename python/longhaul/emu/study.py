"""The emulator's part of ``longhaul study``: real TCP and UDP through the software long-haul
link at a few delays, beside the simulator's numbers. Skipped, with the reason, where the
emulator cannot run (not root, no TUN device, no data-plane binary)."""

from __future__ import annotations

from longhaul.errors import UserError

RATE_GBPS = 1.0
#: Linux's default tcp_wmem maximum (Documentation/networking/ip-sysctl.rst): caps one stream's window.
STOCK_WMEM_MAX_BYTES = 4 * 1024 * 1024


def study_part(ctx):
    from longhaul.emu import bench, system
    from longhaul.results import now_utc
    from longhaul.study import PartResult, SkipPart, Table

    try:
        system.require_privileges()
        system.dataplane_binary()
    except UserError as err:
        raise SkipPart(str(err)) from None
    # --quick keeps the one distance the advice is about (the farthest): real time is the cost here.
    delays = [10000.0] if ctx.quick else [100.0, 1000.0, 10000.0]
    duration = 1.0 if ctx.quick else 2.0
    # Cached like every study point: a warm re-run reuses the last measurement (--no-cache re-measures).
    scenario = {"kind": "study-emulated", "delays_us": delays, "rate_gbps": RATE_GBPS, "duration_s": duration}
    cached = ctx.store.get_cached(scenario, same_version=False) if (ctx.store is not None and ctx.use_cache) else None
    if cached is not None:
        # The store keeps one table per run: every record has every column, unset ones None.
        ping = [r for r in cached if r.get("rtt_p50_us") is not None]
        tcp = [r for r in cached if r.get("streams") is not None]
    else:
        started = now_utc()
        ping = bench.ping(delay_us=delays, rate_gbps=RATE_GBPS, count=100 if ctx.quick else 300, interval_us=1000.0)
        tcp = bench.tcp(delay_us=delays, rate_gbps=RATE_GBPS, streams=[1, 4], cc="cubic", duration_s=duration)
        if ctx.store is not None:
            ctx.store.put(scenario, ping + tcp, source="emu", label="study", started_utc=started, finished_utc=now_utc())
    by = {(r["delay_us"], r["streams"]): r["bw_MBps"] for r in tcp}
    advice = []
    far = max(delays)
    if by.get((far, 4)) and by.get((far, 1)):
        gain = by[(far, 4)] / by[(far, 1)] - 1
        stock_cap = STOCK_WMEM_MAX_BYTES / (2 * far * 1e-6) / 1e6
        link_MBps = RATE_GBPS * 1e9 / 8 / 1e6
        stock = (f"With Linux's stock 4 MiB tcp_wmem maximum one stream is capped near {stock_cap:.0f} MB/s at this "
                 f"delay: raise net.ipv4.tcp_wmem/tcp_rmem or use parallel streams." if stock_cap < link_MBps else
                 f"Linux's stock 4 MiB tcp_wmem maximum would allow {stock_cap:.0f} MB/s at this delay, more than this "
                 f"link's {link_MBps:.0f}: at this rate the stock buffers are enough (a faster link needs larger ones).")
        advice.append(f"Emulated {RATE_GBPS:g} Gb/s link at {far:g} us one way: one TCP stream with buffers of 4 x the "
                      f"bandwidth-delay product moves {by[(far, 1)]:.0f} MB/s, four move {by[(far, 4)]:.0f} MB/s "
                      f"({gain:+.0%}). {stock}")
    return PartResult(
        records=ping + tcp,
        tables=[
            Table("Emulated round trips (UDP ping-pong; configured = twice the one-way delay)", ping,
                  ["delay_us", "rtt_configured_us", "rtt_p50_us", "rtt_p99_us", "lateness_p99_us"]),
            Table(f"Emulated TCP throughput at {RATE_GBPS:g} Gb/s (CUBIC, buffers 4 x BDP)", tcp,
                  ["delay_us", "streams", "bw_MBps", "utilization", "retransmits"]),
        ],
        advice=advice,
        commands=[f"longhaul emu bench ping --delay-us {','.join(f'{d:g}' for d in delays)} --rate-gbps {RATE_GBPS:g}",
                  (f"longhaul emu bench tcp --delay-us {','.join(f'{d:g}' for d in delays)} --rate-gbps {RATE_GBPS:g} "
                  f"--streams 1,4 --cc cubic --duration-s {duration:g}")],
        computed=0 if cached is not None else len(ping) + len(tcp),
        cached=len(ping) + len(tcp) if cached is not None else 0,
    )
