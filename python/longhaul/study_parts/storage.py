"""Storage across the link (issue 24 item 6), when the site asks for it (a ``pfs`` workload): the
site's parallel file system run through its failure drill by the ``sim pfs`` model (flow level: a
10-minute drill in about a second). The figure is the aggregate and per-link bandwidth over time
with the unplugs and replugs marked; the tables are the phases between events (steady rate, the
dip, recovery after a replug), the RPC latency percentiles and the ledger (every acknowledged
write on a server exactly once). The summary names what limits the steady rate (the WAN links,
the hosts' adapters or the LUNs, from the record's own capacities) and what the model predicts
for one more of it. A workload's ``migrate`` table adds the migration estimate of ``sim pfs
migrate`` (predicted time, bottleneck, what-ifs of links and servers added or lost). [S3]'s drill
and migration are published points too: the validation section checks them."""

from __future__ import annotations

import json
import shlex

from longhaul.errors import UserError
from longhaul.sim import pfs, pfs_migrate
from longhaul.site_scenarios import pfs_drill, pfs_migration
from longhaul.study import Figure, PartResult, SkipPart, StudyContext, StudyPart, SummaryRow, Table
from longhaul.study_parts._common import cached_json, gain_pct, helps

#: the published points the validation part checks the drill and the migration against
#: (validation/storage.py), when the site is S3's (the s3 profile, GPFS)
FAILOVER_ID = "S3-gpfs-failover"
MIGRATION_IDS = ("S3-gpfs-migration-shape", "S3-gpfs-migration-time")
#: a what-if's simulated time: long enough for a steady rate (the fluid model settles within seconds)
WHAT_IF_S = 60.0
_FLAT = ("variant", "op", "clients", "threads", "servers", "luns", "wan_links", "block_bytes", "one_way_delay_us",
         "duration_s", "link_MBps", "host_MBps", "lun_MBps", "bw_MBps", "acked_blocks", "stored_blocks",
         "rewritten_blocks", "ledger_ok", "qp_errors", "reconnects", "rc_recoveries", "expelled_clients")


def run(ctx: StudyContext) -> PartResult:
    from longhaul import plots

    site = ctx.site
    ws = site.of("pfs")
    if not ws:
        links = site.link.get("wan_links", 1)
        raise SkipPart("the site has no storage workload (layer = \"pfs\": a file system across the link and a "
                       "failure drill)" + (f"; its link has {links} WAN link, and a drill needs more than one"
                                           if not site.ip and links < 2 else ""))
    out = PartResult()
    for w in ws:
        sc = pfs_drill(site, w)
        rec = _run(ctx, out, pfs, sc)
        out.records.append({**{k: rec.get(k) for k in _FLAT}, **rec["rpc_latency"], "site_workload": w.name})
        events = sc.get("events", [])
        fig = plots.failover_series(rec["series"], events, title=f"{w.name}: bandwidth over time")
        cross = _cross(sc, (FAILOVER_ID,))
        out.figures.append(Figure(f"storage_{w.index}_failover",
                                  f"{w.name}: aggregate (clients) and per-link bandwidth over time, each unplug and "
                                  f"replug marked (model, sim pfs, flow level; {rec['clients']} clients x "
                                  f"{rec['threads']} threads, {rec['servers']} servers, {rec['luns']} LUNs, "
                                  f"{rec['wan_links']} WAN links){cross}.", fig))
        out.tables.append(Table(f"{w.name}: phases between events (steady bw_MBps, the dip min_MBps, recovery_s after "
                                "a replug; model)", rec["phases"],
                                ["from_s", "to_s", "event", "links_plugged", "bw_MBps", "min_MBps", "recovery_s"]))
        out.tables.append(Table(f"{w.name}: RPC latency (one block's write or read, us; model)", [rec["rpc_latency"]]))
        out.tables.append(Table(f"{w.name}: the ledger (every acknowledged write on a server exactly once)",
                                [{k: rec.get(k) for k in ("acked_blocks", "stored_blocks", "rewritten_blocks",
                                                          "outstanding_blocks", "ledger_ok", "ledger_violation",
                                                          "qp_errors", "reconnects", "expelled_clients")}]))
        name = f"scenarios/storage_{w.index}_drill.json"
        out.files[name] = json.dumps(sc, indent=2, sort_keys=True) + "\n"
        command = f"longhaul sim pfs --scenario {shlex.quote(str(ctx.out_dir / name))}"
        out.summary.append(_summary(ctx, out, w, sc, rec, command))
        out.commands.append(command)
        migration = pfs_migration(site, w)
        if migration is not None:
            _migration(ctx, out, w, migration)
    return out


def _run(ctx: StudyContext, out: PartResult, model, sc: dict) -> dict:
    """``model.run(sc)``'s record, cached in the store like the other parts' points (counted in
    ``out`` as computed or cached)."""
    key = {"kind": "study-storage", "fn": model.__name__ + ".run", "scenario": sc}
    rows, hit = cached_json(ctx, key, lambda: [model.run(sc)], "study-storage")
    out.cached += hit
    out.computed += not hit
    return rows[0]


def _migration(ctx: StudyContext, out: PartResult, w, sc: dict) -> None:
    """The workload's migration estimate (``sim pfs migrate``): predicted time, bottleneck, and
    the what-ifs of links and servers added or lost."""
    rec = _run(ctx, out, pfs_migrate, sc)
    m = sc["migrate"]
    what = (f"{rec['moved_bytes'] / 1e12:.3g} TB in {rec['files']:,} files, {rec['move_nsds']} of "
            f"{rec['source_nsds']} NSDs, by {rec['method']}")
    out.tables.append(Table(f"{w.name}: migration estimate ({what}; model, sim pfs migrate, flow level): the first row "
                            f"is the plan, each other changes one thing{_cross(sc, MIGRATION_IDS)}", rec["what_if"],
                            ["case", "wan_links", "source_servers", "target_servers", "time_s", "rate_MBps",
                             "bottleneck", "time_change_pct"]))
    others = [r for r in rec["what_if"][1:] if r.get("time_s") is not None]
    best = min(others, key=lambda r: r["time_s"], default=None)
    change, gain = (best["case"], gain_pct(rec["rate_MBps"], best["rate_MBps"])) if best else ("", None)
    opts = " ".join(f"--{'block-size' if k == 'block_bytes' else k.replace('_', '-')} {v}" for k, v in m.items())
    path = sc["path"]
    where = f"--distance-km {path['fibre_km']:g}" if "fibre_km" in path else f"--delay-us {path['delay_us']:g}"
    out.summary.append(SummaryRow(f"Storage: migrating {what}", f"{rec['time_min']:,.0f} min at "
                                  f"{rec['rate_MBps']:,.0f} MB/s", _bottleneck(rec),
                                  *helps(change, gain),
                                  f"longhaul sim pfs migrate {opts} --profile "
                                  f"{sc['testbed']} --extender {path['extender']} --wan-links {path['wan_links']} {where}"))


def _bottleneck(rec: dict) -> str:
    """The migration's bottleneck in words, with its count and capacity from the estimate's resources."""
    name = rec["bottleneck"]
    r = next((r for r in rec["resources"] if r["resource"] == name), None)
    return f"{name}: {r['count']} of {r['capacity_MBps']:,.0f} MB/s each, full" if r else name


def _cross(sc: dict, ids: tuple[str, ...]) -> str:
    """On S3's testbed, where the validation section checks the same run against [S3]."""
    if sc.get("testbed") != "s3" or sc.get("pfs", {}).get("variant", "gpfs") != "gpfs":
        return ""
    return f". [S3] ran it too: the validation section checks it ({', '.join(ids)}) and explains any gap"


def limits(rec: dict, links: int) -> tuple[str, float, str]:
    """What caps the aggregate with ``links`` WAN links plugged: (name, MB/s, words), the smallest
    of the links, the hosts' adapters and the LUNs, from the record's own capacities."""
    plural = "s" if links > 1 else ""
    caps = [("wan_links", links * rec["link_MBps"], f"{links} WAN link{plural} of {rec['link_MBps']:,.0f} MB/s"),
            ("hosts", min(rec["clients"], rec["servers"]) * rec["host_MBps"],
             f"{min(rec['clients'], rec['servers'])} host adapters of {rec['host_MBps']:,.0f} MB/s"),
            ("luns", rec["luns"] * rec["lun_MBps"], f"{rec['luns']} LUNs of {rec['lun_MBps']:,.0f} MB/s")]
    return min(caps, key=lambda c: c[1])


def _what_if(ctx: StudyContext, out: PartResult, sc: dict, rec: dict, limit: str) -> tuple[str, float | None]:
    """One more of what limits the steady rate, run by the model without the drill: the change and
    its gain over the same run unchanged."""
    base = {**sc, "events": [], "pfs": {**sc["pfs"], "duration_s": WHAT_IF_S}}
    if limit == "wan_links":
        change, more = f"a WAN link more ({rec['wan_links'] + 1})", {"path": {**sc["path"],
                                                                              "wan_links": rec["wan_links"] + 1}}
    elif limit == "hosts":
        key = "clients" if rec["clients"] <= rec["servers"] else "servers"
        change, more = f"one more of the {key} ({rec[key] + 1})", {"pfs": {**base["pfs"], key: rec[key] + 1}}
    else:
        per = rec["luns"] // rec["servers"] + 1
        change, more = f"a LUN more per server ({per})", {"pfs": {**base["pfs"], "luns_per_server": per}}
    try:
        after = _run(ctx, out, pfs, {**base, **more})["bw_MBps"]
    except UserError:   # beyond a range the model takes (e.g. 16 links already): no change to offer
        return "", None
    return change, gain_pct(_run(ctx, out, pfs, base)["bw_MBps"], after)


def _summary(ctx: StudyContext, out: PartResult, w, sc: dict, rec: dict, command: str) -> SummaryRow:
    phases = rec["phases"]
    steady = phases[0]["bw_MBps"]
    worst = min(phases, key=lambda p: p["bw_MBps"])
    recovered = [p["recovery_s"] for p in phases if p.get("recovery_s") is not None]
    gets = f"{steady:,.0f} MB/s on {phases[0]['links_plugged']} links"
    if len(phases) > 1:
        gets += (f"; {worst['bw_MBps']:,.0f} MB/s at worst ({worst['links_plugged']} plugged, "
                 f"{gain_pct(steady, worst['bw_MBps']):+.0f}%)")
    if recovered:
        gets += f"; recovery {max(recovered):g} s after a replug"
    gets += "; nothing lost" if rec["ledger_ok"] else f"; LEDGER VIOLATED: {rec['ledger_violation']}"
    name, _, words = limits(rec, phases[0]["links_plugged"])
    limited = f"{words} (steady); " + limits(rec, worst["links_plugged"])[2] + " at worst"
    change, gain = helps(*_what_if(ctx, out, sc, rec, name))
    return SummaryRow(f"Storage: {w.name}", gets, limited, change, gain, command)



PART = StudyPart("storage", "Storage across the link: a parallel file system's failure drill (simulator)", run,
                 order=45)
