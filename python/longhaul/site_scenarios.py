"""A site's workloads as the simulator's scenarios: one ``(model, scenario)`` per point, built with
each model's own ``scenario()`` so the site file and the CLI mean the same by every name."""

from __future__ import annotations

import json

from longhaul.site import Site, Workload


def trace_ranks(text: str) -> int:
    """The ranks a trace declares (its first statement, ``ranks N``); 2 when it declares none (the
    core then refuses the trace with its line number)."""
    for line in text.splitlines():
        f = line.split("#", 1)[0].split()
        if f:
            return int(f[1]) if f[0] == "ranks" and len(f) > 1 and f[1].isdigit() else 2
    return 2


def scenarios(site: Site, w: Workload, quick: bool = False) -> list[tuple[str, dict]]:
    """Every point of workload ``w`` at its distances, as (model, scenario); ``quick``: every other
    distance (and the planned one)."""
    p = w.params
    if w.layer == "pfs":   # a failure drill, at the planned distance only
        return [("pfs", pfs_drill(site, w))]
    out: list[tuple[str, dict]] = []
    places = site.places(w)
    if quick:
        places = [x for x in places if x in _thin(places) or x == site.planned]
    for where in places:
        if w.layer == "verbs":
            sizes = p.get("sizes") or _default_sizes(p["transport"], p["test"])
            out += [("verbs", site.verbs(where, transport=p["transport"], op=p["op"], test=p["test"], size_bytes=s,
                                         qps=p["qps"], tx_depth=p.get("tx_depth"))) for s in sizes]
        elif w.layer == "tcp":
            extra = {k: p[k] for k in ("cc", "mtu_bytes", "link") if k in p}
            for n in p["streams"]:
                for win in p.get("window_bytes") or [None]:
                    out.append(("tcp", site.tcp(where, streams=n, window_bytes=win, duration_s=p["duration_s"],
                                                **extra)))
        elif w.layer == "mpi":
            out += _mpi(site, w, where)
        elif w.layer == "nas":
            out += [("mpi", site.mpi(where, app={"name": a, "class": p["class"]}, nodes=p["nodes"], ppn=p["ppn"]))
                    for a in p["apps"]]
        elif w.layer == "trace":
            out.append(("mpi", site.mpi(where, trace={"name": p["file"], "text": p["text"]}, ppn=p["ppn"])))
        elif w.layer == "nfs":
            extra = {k: p[k] for k in ("threads", "rsize_bytes", "readahead_bytes") if k in p}
            out += [("nfs", site.nfs(where, transport=t, **extra)) for t in p["transports"]]
    return out


def pfs_drill(site: Site, w: Workload) -> dict:
    """A storage workload's ``sim pfs`` scenario: its file system and drill on the site's link."""
    keys = [k for k in w.params if k not in ("at", "events", "migrate")]
    return site.pfs(site.planned, events=w.params.get("events", []), **{k: w.params[k] for k in keys})


def pfs_migration(site: Site, w: Workload) -> dict | None:
    """A storage workload's ``sim pfs migrate`` scenario (None when it asks for none): its data on
    the drill's servers and LUNs unless it says otherwise, over the drill's links."""
    from longhaul.sim import pfs, pfs_migrate

    m = w.params.get("migrate")
    if m is None:
        return None
    sc = pfs_drill(site, w)
    drill = pfs.validate(sc)
    mine = {k: w.params[k] for k in ("data_disks", "block_bytes") if k in w.params}
    source = {"source_servers": drill["servers"], "source_nsds": drill["servers"] * drill["luns_per_server"]}
    return pfs_migrate.scenario(testbed=site.profile, seed=site.seed, **sc["path"], **mine, **{**source, **m})


def _mpi(site: Site, w: Workload, where: dict) -> list[tuple[str, dict]]:
    p = w.params
    sizes = p.get("sizes") or [8, 8192, 65536, 1 << 20]
    bench = p["bench"]
    out = []
    for s in sizes:
        osu = {"bench": bench, "size_bytes": s, **({"pairs": p["pairs"]} if "pairs" in p else {})}
        for algo in p.get("algo") or [None]:
            if site.ip:
                coll = {"nodes": p["nodes"] * p["ppn"], "algo": algo} if bench == "bcast" else {}
                out.append(("mpi-tcp", site.mpi_tcp(where, osu=osu, **coll)))
                continue
            for t in p.get("eager_threshold_bytes") or [None]:
                out.append(("mpi", site.mpi(where, osu=osu, nodes=p["nodes"], ppn=p["ppn"], algo=algo,
                                            eager_threshold_bytes=t)))
    return out


def _default_sizes(transport: str, test: str) -> list[int]:
    if test == "lat":
        return [2, 64, 4096]
    if transport == "ud":
        return [2**k for k in range(1, 12)]
    return [2**k for k in range(1, 24, 2)]


def validators() -> dict:
    from longhaul.sim import mpi, nfs, pfs, tcp, verbs

    return {"verbs": verbs.validate, "tcp": tcp.validate, "mpi": mpi.validate, "mpi-tcp": mpi.validate,
            "nfs": nfs.validate, "pfs": pfs.validate}


def points(site: Site, w: Workload, quick: bool = False) -> list[dict]:
    """The sweep points of workload ``w`` (the sweep runs points in parallel): a verbs workload's
    message sizes at one distance make one point, run one after another by ``run_point`` (each takes
    milliseconds to seconds); every other scenario is a point of its own. ``quick``: every other
    distance, and every other scenario at each (the last always kept)."""
    groups: dict[tuple, list[dict]] = {}
    for model, sc in scenarios(site, w, quick):
        where = json.dumps(sc.get("path", {}), sort_keys=True)
        groups.setdefault((model, where), []).append(sc)
    out = []
    for (model, _), group in groups.items():
        scs = _thin(group) if quick else group
        out += ([{"model": model, "workload": w.name, "scenarios": scs}] if model == "verbs" else
                [{"model": model, "workload": w.name, "scenarios": [sc]} for sc in scs])
    return out


def _thin(items: list) -> list:
    out = items[::2]
    return out if items[-1] in out else [*out, items[-1]]


def run_point(point: dict) -> list[dict]:
    """A sweep point's records, each tagged with its workload's name (module level: MPI workers
    import it by name)."""
    from longhaul.sim.points import MODELS

    fn = MODELS[point["model"]]
    return [{**r, "site_workload": point["workload"]} for sc in point["scenarios"] for r in fn(sc)]
