"""What the site parts share: picking records by workload and distance, the figures' distance
axis, and the bounds each mechanism puts on a bandwidth (from the records' own quantities)."""

from __future__ import annotations

import json
from collections.abc import Callable

from longhaul.site import Site, Workload, one_way_delay_us
from longhaul.site_scenarios import points
from longhaul.study import PartResult, SkipPart, StudyContext, SummaryRow, sweep


def start(ctx: StudyContext, kind: str, layers: tuple[str, ...]) -> tuple[list[Workload], PartResult]:
    """A site part's workloads of ``layers`` and the result holding their records; SkipPart when
    the site has none."""
    ws = [w for layer in layers for w in ctx.site.of(layer)]
    if not ws:
        raise SkipPart(f"the site has no {' or '.join(layers)} workload" + (
            " (IP routers: no InfiniBand between the clusters)" if ctx.site.ip and kind in ("verbs", "nfs") else ""))
    recs, computed, cached = run_workloads(ctx, ws, kind)
    return ws, PartResult(records=recs, computed=computed, cached=cached)


class NotAtPlanned(Exception):
    """A workload has no record at the planned distance (it runs at distances of its own)."""


def at_planned(ctx: StudyContext, recs: list[dict], value: str | None = None) -> tuple[Site, float, list[dict]]:
    """The site, its planned one-way delay and the records there (those with ``value`` set)."""
    d = planned(ctx.site)
    here = [r for r in at(recs, d) if value is None or r.get(value) is not None]
    if not here:
        raise NotAtPlanned
    return ctx.site, d, here


def summarise(layer: str, summary, *args) -> SummaryRow:
    """``summary(*args)``, or a row saying the layer was not simulated at the planned distance."""
    try:
        return summary(*args)
    except NotAtPlanned:
        return SummaryRow(layer, "not simulated at the planned distance", "—")


def run_workloads(ctx: StudyContext, ws: list[Workload], kind: str) -> tuple[list[dict], int, int]:
    """The records of every point of ``ws`` (cached, resumable), and how many were computed and cached."""
    pts = [p for w in ws for p in points(ctx.site, w, ctx.quick)]
    res = sweep(ctx, pts, kind, f"study-{kind}")
    return res.records, res.computed, res.cached


def cached_json(ctx: StudyContext, key: dict, compute: Callable[[], list[dict]], label: str) -> tuple[list[dict], bool]:
    """``compute()``'s rows, cached in the store like any run (a changed model is a miss: the store
    checks the model fingerprint), and whether they came from the store. Each row is kept as one
    JSON column, since its values nest or mix numbers and text."""
    if ctx.store is not None and ctx.use_cache:
        hit = ctx.store.get_cached(key)
        if hit is not None:
            return [json.loads(r["row_json"]) for r in hit], True
    rows = [dict(r) for r in compute()]
    if ctx.store is not None:
        ctx.store.put(key, [{"id": str(r.get("id", i)), "row_json": json.dumps(r, default=str)}
                            for i, r in enumerate(rows)], source="sim", label=label)
    return rows, False


def of(recs: list[dict], w: Workload) -> list[dict]:
    return [r for r in recs if r.get("site_workload") == w.name]


def at(recs: list[dict], delay_us: float) -> list[dict]:
    """The records whose whole one-way delay is ``delay_us``."""
    return [r for r in recs if abs(float(r.get("one_way_delay_us", -1)) - delay_us) < 1e-6]


def x_key(site: Site) -> str:
    """The figures' distance axis: km when the site plans a fibre distance, else the one-way delay."""
    return "distance_km" if "fibre_km" in site.planned else "one_way_delay_us"


def rtt_us(delay_us: float) -> float:
    return 2.0 * delay_us


def size_text(n: float) -> str:
    n = int(n)
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n:,} B"


def per_rtt_MBps(bytes_in_flight: float, delay_us: float) -> float:
    """The most a window of ``bytes_in_flight`` can carry over a round trip of 2 x ``delay_us`` (MB/s = B/us)."""
    return bytes_in_flight / rtt_us(delay_us) if delay_us > 0 else float("inf")


def gain_pct(before: float | None, after: float | None) -> float | None:
    return 100.0 * (after / before - 1.0) if before and after is not None else None


#: A change whose simulated gain is below this is reported as tried, not as one that helps.
HELPS_PCT = 5.0


def helps(change: str, gain: float | None) -> tuple[str, float | None]:
    """``(change, gain)`` as the summary shows them: a simulated change that gains less than
    ``HELPS_PCT`` is said to have been tried and not to help."""
    if change and gain is not None and gain < HELPS_PCT:
        return f"none found: tried {change} ({gain:+.0f}%)", None
    return change, gain


def planned(site: Site) -> float:
    return one_way_delay_us(site.planned)


def simulate(ctx: StudyContext, model: str, scs: list[dict], label: str) -> list[dict]:
    """A few extra points (a change to try), cached like the rest."""
    res = sweep(ctx, [{"model": model, "workload": label, "scenarios": scs}], model, f"study-{model}-change")
    return res.records


#: IB data rate per lane after encoding (Gb/s), as the simulator's `net::rate` sets them: the IBA
#: signalling rates (SDR 2.5, DDR 5, QDR 10 Gbaud with 8b/10b; FDR 14.0625, EDR 25.78125 with
#: 64b/66b; HDR 53.125, NDR 106.25 and XDR 212.5 Gb/s PAM4 with RS-FEC, 50, 100 and 200 of data). Used
#: only to say which ceiling a bandwidth meets; tests/test_site_file.py checks them against the model.
IB_LANE_DATA_GBPS = {"sdr": 2.0, "ddr": 4.0, "qdr": 8.0, "fdr": 14.0625 * 64 / 66, "edr": 25.78125 * 64 / 66,
                     "hdr": 50.0, "ndr": 100.0, "xdr": 200.0}
#: PCIe data rate per lane after encoding (Gb/s: gen 1-2 8b/10b, gen 3+ 128b/130b) and the ~0.8
#: share that TLP headers leave of it (the simulator's `HcaProfile::pcie_data_gbps`).
PCIE_LANE_GBPS = {1: 2.0, 2: 4.0, 3: 8.0 * 128 / 130, 4: 16.0 * 128 / 130, 5: 32.0 * 128 / 130, 6: 64.0 * 242 / 256}
PCIE_TLP_SHARE = 0.8
#: What the extenders' WAN framing leaves for IB packets (Gb/s): OC-192c, 10GBASE-R, 10GBASE-W.
FRAMING_GBPS = {"oc192": 9.58464, "10gige-lan": 10.0, "10gige-wan": 9.58464 * 64 / 66}


def ceilings_MBps(hw: dict) -> dict[str, tuple[float, str]]:
    """The rates that cap a verbs bandwidth whatever the distance, from the resolved hardware:
    {mechanism: (MB/s, words)}."""
    hca = hw["hca"]
    port = hca["port"]
    out = {"line rate": (port["width"] * IB_LANE_DATA_GBPS[port["generation"]] * 125.0,
                         f"the adapter's {port['width']}x {port['generation'].upper()} port")}
    wan, ext = hw["wan"], hw.get("extender")
    if ext:
        framing = ext["framing"]
        rate = (FRAMING_GBPS[framing] if framing in FRAMING_GBPS else
                ext["wan"]["width"] * IB_LANE_DATA_GBPS[ext["wan"]["generation"]])
        rate *= 125.0 * hw["wan_links"]
        link = framing if framing != "ib" else f"{ext['wan']['width']}x {ext['wan']['generation'].upper()}"
        what = (f"{hw['wan_links']} x " if hw["wan_links"] > 1 else "") + f"{link} WAN link"
    else:
        rate = wan["width"] * IB_LANE_DATA_GBPS[wan["generation"]] * 125.0
        what = f"{wan['width']}x {wan['generation'].upper()} link between the switches"
    if rate < out["line rate"][0]:
        out["line rate"] = (rate, f"the {what}")
    gen, lanes = hca["pcie_gen"], hca["pcie_lanes"]
    out["PCIe"] = (PCIE_LANE_GBPS.get(gen, PCIE_LANE_GBPS[5]) * lanes * PCIE_TLP_SHARE * 125.0,
                   f"the {hca['name']} adapter's PCIe gen{gen} x{lanes}")
    return out
