"""The site file: a user's two clusters, the link between them, the workloads that matter to the
site and the range of distances to explore, read and validated once, here, into a ``Site`` that
builds the simulator's scenarios (the same parameters as the CLI and scenario files: ``testbed``
for ``--profile``, ``fibre_km`` for ``--distance-km``, ``delay_us``, ``hca``, ``extender`` ...).

The schema is data (``SCHEMA``): every key with its unit, range, default and meaning; the
reference page ``docs/reference/site-file.md`` is generated from it (``schema_markdown``).
Every error is one ``UserError`` line naming the file, the key and the valid range.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from longhaul.errors import UserError
from longhaul.units import FIBRE_DELAY_US_PER_KM, KM_PER_MILE, MAX_DELAY_US

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "sites"
DEFAULT_SITE = EXAMPLES_DIR / "s1-2008.toml"
#: A site file is a few dozen lines; anything larger is the wrong file (or a device).
MAX_SITE_BYTES = 1 << 20
MAX_DISTANCE_KM = MAX_DELAY_US / FIBRE_DELAY_US_PER_KM


# ----------------------------------------------------------------------------- the schema
@dataclass(frozen=True)
class Key:
    """One key of a site-file table: its kind of value, unit, range, default and meaning.
    ``kind``: int, float, str, bool, name (one of ``names``), ints/floats/names (a list of those),
    sizes (a list of byte counts, or a range string as --sizes takes: "2:8M"), events (an array of
    ``EVENT`` tables), migrate (a ``MIGRATE`` table)."""

    kind: str
    doc: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    default: object = None
    names: str | None = None      # which list of names (see ``names``)


_DIST = "one of distance_km, distance_miles, delay_us"
TOP = {
    "name": Key("str", "the site's name, the report's title"),
    "description": Key("str", "a sentence on what the site wants to know"),
    "profile": Key("name", "the hardware profile the models start from (as --profile); the clusters' "
                   "hca, node and fabric override its parts", names="profile", default="s1"),
    "seed": Key("int", "random seed of every simulated point (same seed, same results)", lo=0, hi=2**63 - 1,
                default=1),
}
CLUSTER = {
    "name": Key("str", "the cluster's name in the report"),
    "nodes": Key("int", "compute nodes in the cluster", "nodes", 1, 1_000_000),
    "cores_per_node": Key("int", "cores per node: the most MPI processes per node (ppn)", "cores", 1, 4096),
    "node": Key("name", "node profile (memory and copy rates of the MPI model, as sim mpi --node); "
                "default: the profile's", names="node"),
    "hca": Key("name", "host channel adapter (as --hca); default: the profile's", names="hca"),
    "pcie_gen": Key("int", "PCIe generation of the adapter's slot; must match the adapter's (checked)",
                    "", 1, 6),
    "pcie_lanes": Key("int", "PCIe lanes of the adapter's slot; must match the adapter's (checked)",
                      "lanes", 1, 32),
    "fabric": Key("name", "the cluster's IB fabric generation (4x links, as sim mpi --fabric); at most the "
                  "adapter's port generation; default: the profile's", names="fabric"),
    "switch": Key("str", "switch model, for the report (the profile's switch model is simulated)"),
}
LINK = {
    "distance_km": Key("float", f"planned fibre distance between the sites ({_DIST})", "km", 0, MAX_DISTANCE_KM),
    "distance_miles": Key("float", f"planned fibre distance ({_DIST})", "miles", 0, MAX_DISTANCE_KM / KM_PER_MILE),
    "delay_us": Key("float", f"planned one-way delay set on the extenders or emulator ({_DIST})", "us", 0,
                    MAX_DELAY_US),
    "extender": Key("name", "IB range extender pair (as --extender; none = a plain IB link); one of "
                    "extender, routers", names="extender"),
    "routers": Key("name", "IP routers joined by this WAN link (as sim tcp --link); one of extender, routers",
                   names="tcp_link"),
    "wan_links": Key("int", "parallel WAN links between the extenders", "links", 1, 16, 1),
    "wan_framing": Key("name", "how the extenders carry IB over the WAN (as --wan-framing)",
                       names="wan_framing"),
    "wan_generation": Key("name", "the extenders' WAN port generation (scenario path.wan_generation); default: "
                          "the extender's; the verbs model's only (MPI, TCP and NFS take the extender's)", names="fabric"),
    "wan_width": Key("int", "the extenders' WAN port width in lanes, 1, 4 or 12 (scenario path.wan_width)", "lanes",
                     1, 12),  # the core refuses widths other than 1, 4, 12 with the valid ones
    "rate_gbps": Key("float", "IP routers: the WAN rate (as --rate-gbps); default: the link's", "Gb/s", 0.001,
                     10_000),
    "loss": Key("float", "probability that a packet is corrupted on the WAN", "", 0, 0.5, 0.0),
}
EXPLORE = {
    "distances_km": Key("floats", "fibre distances to explore (one of distances_km, distances_miles, "
                        "delays_us, up_to)", "km", 0, MAX_DISTANCE_KM),
    "distances_miles": Key("floats", "fibre distances to explore", "miles", 0, MAX_DISTANCE_KM / KM_PER_MILE),
    "delays_us": Key("floats", "one-way delays to explore", "us", 0, MAX_DELAY_US),
    "up_to": Key("float", "explore 0 to this multiple of the planned distance (default when none of the "
                 "lists is given)", "x planned", 0, 100, 2.0),
    "points": Key("int", "distances from 0 to up_to x planned, evenly spaced (with the planned one)", "points",
                  2, 50, 5),
}
_WHERE = {
    "distances_km": Key("floats", "run this workload at these fibre distances instead of the explored ones",
                        "km", 0, MAX_DISTANCE_KM),
    "delays_us": Key("floats", "run this workload at these one-way delays instead of the explored ones", "us",
                     0, MAX_DELAY_US),
    "at": Key("name", "'explore': every explored distance; 'planned': the planned one only", names="at",
              default="explore"),
}
WORKLOADS = {
    "verbs": {
        "transport": Key("name", "queue pair transport (as --transport)", names="verbs_transport", default="rc"),
        "op": Key("name", "operation (as --op)", names="verbs_op", default="write"),
        "test": Key("name", "perftest test (as --test)", names="verbs_test", default="bw"),
        "sizes": Key("sizes", "message sizes (a list, or a range as --sizes: \"2:8M\")", "bytes", 1, 1 << 30),
        "qps": Key("int", "queue pairs (as --qps)", "QPs", 1, 1024, 1),
        "tx_depth": Key("int", "work requests in flight per QP (as --tx-depth); default: the profile's",
                        "WRs", 1, 16384),
    },
    "tcp": {
        "link": Key("name", "IB sites: IPoIB mode (ipoib-ud, ipoib-cm); IP sites: the routers' link", names="tcp_link"),
        "streams": Key("ints", "parallel TCP streams (as --streams)", "streams", 1, 256, [1]),
        "window_bytes": Key("sizes", "socket buffer per stream (as --window); default: Linux auto-tuning",
                            "bytes", 1, 1 << 32),
        "duration_s": Key("float", "transfer time per point (as --duration-s)", "s", 0.01, 600, 2.0),
        "cc": Key("name", "congestion control (as --cc); default: cubic", names="tcp_cc"),
        "mtu_bytes": Key("int", "IP MTU (as --mtu)", "bytes", 576, 65520),
    },
    "mpi": {
        "bench": Key("name", "OSU benchmark (as sim mpi osu --bench)", names="mpi_bench", default="bw"),
        "sizes": Key("sizes", "message sizes", "bytes", 1, 1 << 30),
        "nodes": Key("int", "nodes per cluster", "nodes", 1, 4096, 1),
        "ppn": Key("int", "processes per node", "ranks", 1, 256, 1),
        "pairs": Key("int", "process pairs across the WAN (mbw_mr)", "pairs", 1, 4096),
        "algo": Key("names", "collective algorithms to compare (as --algo)", names="mpi_algo"),
        "eager_threshold_bytes": Key("sizes", "eager/rendezvous thresholds to compare (as --eager-threshold)",
                                     "bytes", 0, 1 << 30),
    },
    "nas": {
        "apps": Key("names", "NAS-like skeletons (as sim mpi app --app)", names="mpi_app", default=["cg"]),
        "class": Key("name", "problem class", names="mpi_class", default="B"),
        "nodes": Key("int", "nodes per cluster", "nodes", 1, 4096, 1),
        "ppn": Key("int", "processes per node", "ranks", 1, 256, 1),
    },
    "trace": {
        "file": Key("str", "an MPI trace file (sim mpi replay's format), relative to the site file"),
        "ppn": Key("int", "processes per node", "ranks", 1, 256, 1),
    },
    "nfs": {
        "transports": Key("names", "NFS transports to compare (as sim nfs --transport)", names="nfs_transport",
                          default=["rdma", "ipoib-rc", "ipoib-ud"]),
        "threads": Key("int", "client threads (IOzone -t)", "threads", 1, 256),
        "rsize_bytes": Key("int", "NFS read size", "bytes", 4096, 1 << 20),
        "readahead_bytes": Key("int", "the mount's readahead (read_ahead_kb in bytes; as sim nfs --readahead)", "bytes",
                               4096, 1 << 30),
    },
    # the study's storage part: a `sim pfs` failure drill at the planned distance (the scenario's
    # [pfs] names, its [[events]] as `events`, docs/models/pfs.md)
    "pfs": {
        "variant": Key("name", "file system (as sim pfs --variant)", names="pfs_variant", default="gpfs"),
        "op": Key("name", "what the clients do (as sim pfs --op)", names="pfs_op", default="write"),
        "clients": Key("int", "client nodes writing or reading (as --clients)", "nodes", 1, 1024),
        "threads": Key("int", "threads per client, one file each (as --threads)", "threads", 1, 256),
        "servers": Key("int", "NSD servers / OSSs (as --servers)", "servers", 1, 1024),
        "luns_per_server": Key("int", "LUNs (NSDs, OSTs) per server (as --luns-per-server)", "LUNs", 1, 64),
        "data_disks": Key("int", "data disks per LUN's RAID group (as --data-disks)", "disks", 1, 64),
        "block_bytes": Key("int", "file system block size, one RPC (as --block-size)", "bytes", 4096, 1 << 26),
        "stripe_count": Key("int", "lustre: OSTs per file (as --stripe-count)", "OSTs", 1, 65536),
        "wan_links": Key("int", "WAN links the file system's traffic spreads over (as --wan-links); default: "
                         "link.wan_links", "links", 1, 16),
        "lmc": Key("int", "LIDs per port as 2^lmc: paths over other links the subnet manager can give (scenario "
                   "[pfs] lmc); default: the profile's", "", 0, 7),
        "apm": Key("bool", "automatic path migration: a QP moves to its alternate path when its retries run out "
                   "(scenario [pfs] apm; needs lmc >= 1)", default=None),
        "duration_s": Key("float", "simulated time of the drill (as --duration-s)", "s", 0.001, 86400, 600.0),
        "events": Key("events", "the failure drill: [[workloads.events]] tables of at_s (s), link (0 to "
                      "wan_links - 1) and action (down, up), as a scenario's [[events]]"),
        "migrate": Key("migrate", "a migration to estimate: a [workloads.migrate] table, as sim pfs migrate's "
                       "[migrate]"),
    },
    # the study's long-haul part: the UltraScience Net's loops and 20,000 km on the usn profile,
    # whatever the site's own link (docs/models/long-haul.md)
    "long-haul": {
        "repeats": Key("int", "runs per point of the stability profile, each with a seed of its own", "runs", 2, 10,
                       3),
    },
}
#: an event's actions, as the scenario's [[events]] (longhaul.failover)
EVENT_ACTIONS = ("down", "up")
#: one event of a storage workload's drill: the scenario's [[events]] keys
EVENT = {
    "at_s": Key("float", "when, from the start of the drill", "s", 0, 86400),
    "link": Key("int", "which WAN link, counted from 0", "", 0, 15),
    "action": Key("name", "unplug (down) or plug back (up)", names="event_action"),
}
#: a storage workload's migration to estimate: ``sim pfs migrate``'s names (its scenario's [migrate])
MIGRATE = {
    "method": Key("name", "restripe (GPFS: new NSDs added, the old emptied) or copy (parallel streams)",
                  names="migrate_method", default="restripe"),
    "data_bytes": Key("int", "data to move (2e12 = 2 TB)", "bytes", 1, 10**18),
    "files": Key("int", "files holding it", "files", 1, 10**12),
    "source_nsds": Key("int", "NSDs the data is on now (default: the drill's servers x LUNs)", "NSDs", 1, 65536),
    "move_nsds": Key("int", "of those, the NSDs emptied (default: all)", "NSDs", 1, 65536),
    "target_nsds": Key("int", "new NSDs on the other site (default: as many as move)", "NSDs", 1, 65536),
    "source_servers": Key("int", "NSD servers of the old NSDs (default: the drill's servers)", "servers", 1, 1024),
    "target_servers": Key("int", "NSD servers of the new NSDs (default: as many)", "servers", 1, 1024),
    "nodes": Key("int", "restripe: the -N nodes doing the work", "nodes", 1, 1024),
    "streams": Key("int", "copy: parallel copy streams", "streams", 1, 4096),
}
WORKLOAD_COMMON = {"layer": Key("name", "what the workload runs: " + ", ".join(WORKLOADS), names="layer"),
                   "name": Key("str", "the workload's name in the report"), **_WHERE}
SCHEMA = {"": TOP, "clusters.a": CLUSTER, "clusters.b": CLUSTER, "link": LINK, "explore": EXPLORE,
          "workloads[]": WORKLOAD_COMMON, **{f"workloads[] layer = \"{k}\"": v for k, v in WORKLOADS.items()},
          "workloads[].events[]": EVENT, "workloads[].migrate": MIGRATE}


def names(kind: str) -> list[str]:
    """The names the simulator accepts for ``kind``, from the core's own lists (``_core.names()``
    where the core has it, else the Python layer's lists, which tests keep equal to the core's)."""
    fixed = {"at": ["explore", "planned"], "layer": list(WORKLOADS), "event_action": list(EVENT_ACTIONS)}
    if kind in fixed:
        return fixed[kind]
    from longhaul.sim import mpi, nfs, pfs, pfs_migrate, tcp, verbs

    try:
        from longhaul import _core
        core_names = getattr(_core, "names", None)
        got = core_names() if core_names else None
    except ImportError:
        got = None
    key = {"profile": "testbed", "node": "node", "hca": "hca", "extender": "extender", "fabric": "fabric",
           "tcp_link": "tcp_link", "wan_framing": "wan_framing"}.get(kind)
    if isinstance(got, dict) and key in got:
        return list(got[key])
    local = {"profile": sorted(set(verbs.TESTBEDS) | set(tcp.TESTBEDS) | set(mpi.TESTBEDS)),
             "node": mpi.NODES, "hca": verbs.HCAS, "extender": verbs.EXTENDERS, "fabric": mpi.FABRICS,
             "tcp_link": tcp.LINKS, "wan_framing": verbs.WAN_FRAMINGS, "verbs_transport": verbs.TRANSPORTS,
             "verbs_op": verbs.OPS, "verbs_test": verbs.TESTS, "tcp_cc": tcp.CCS, "mpi_bench": mpi.BENCHES,
             "mpi_algo": mpi.ALGOS, "mpi_app": mpi.APPS, "mpi_class": mpi.CLASSES,
             "nfs_transport": nfs.TRANSPORTS, "pfs_variant": pfs.VARIANTS, "pfs_op": pfs.OPS,
             "migrate_method": pfs_migrate.METHODS}
    return list(local[kind])


# ----------------------------------------------------------------------------- reading
def read_text(path: Path, what: str = "--site") -> str:
    """The file's text, read up to ``MAX_SITE_BYTES`` (``--site /dev/zero`` must not read forever).
    One function, so that the bounded reader of ``longhaul.safeio`` can replace it when it lands."""
    if not str(path).strip():
        raise UserError(f"{what}: empty file name (give the path of a TOML or JSON site file)")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SITE_BYTES + 1)
    except OSError as err:
        raise UserError(f"{what}: cannot read '{path}': {err.strerror}") from None
    if len(data) > MAX_SITE_BYTES:
        raise UserError(f"{what}: '{path}' is over {MAX_SITE_BYTES >> 20} MiB: not a site file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{what}: '{path}' is not a text file (UTF-8 TOML or JSON)") from None


def load(path: str | Path | None = None) -> Site:
    """Read and validate a site file (TOML, or JSON by its .json name); the default is S1's."""
    path = Path(path) if path is not None else DEFAULT_SITE
    text = read_text(path)
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise UserError(f"site {path}: not valid {kind}: {err}") from None
    if not isinstance(data, dict):
        raise UserError(f"site {path}: must hold a table/object, not a {type(data).__name__}")
    return Site.from_dict(data, str(path))


# ----------------------------------------------------------------------------- checking values
class _Checker:
    def __init__(self, path: str):
        self.path = path

    def error(self, key: str, msg: str) -> UserError:
        return UserError(f"site {self.path}: {key}: {msg}")

    def table(self, data: dict, where: str, schema: dict[str, Key]) -> dict:
        """``data`` checked against ``schema``: unknown keys refused, values in range, defaults filled."""
        if not isinstance(data, dict):
            raise self.error(where or "site", f"must be a table, not {json.dumps(data)[:40]}")
        for k in data:
            if k not in schema:
                import difflib

                close = difflib.get_close_matches(k, list(schema), n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
                raise self.error(_join(where, k), f"unknown key ({hint}valid: {', '.join(schema)})")
        out = {}
        for k, spec in schema.items():
            if k in data:
                out[k] = self.value(_join(where, k), data[k], spec)
            elif spec.default is not None:
                out[k] = spec.default
        return out

    def value(self, key: str, v, spec: Key):
        kind = spec.kind
        if kind in ("ints", "floats", "names"):
            if not isinstance(v, list) or not v:
                raise self.error(key, f"give a non-empty list ({_range(spec)})")
            return [self.value(f"{key}[{i}]", x, Key(kind[:-1], spec.doc, spec.unit, spec.lo, spec.hi,
                                                          names=spec.names)) for i, x in enumerate(v)]
        if kind == "sizes":
            return self.sizes(key, v, spec)
        if kind == "migrate":
            t = self.table(v, key, MIGRATE)
            for k in ("data_bytes", "files"):
                if k not in t:
                    raise self.error(f"{key}.{k}", f"missing ({_range(MIGRATE[k])})")
            return t
        if kind == "events":
            if not isinstance(v, list):
                raise self.error(key, "give an array of tables ([[workloads.events]] with at_s, link, action)")
            out = [self.table(e, f"{key}[{i}]", EVENT) for i, e in enumerate(v)]
            for i, e in enumerate(out):
                for k in EVENT:
                    if k not in e:
                        raise self.error(f"{key}[{i}].{k}", f"missing ({EVENT[k].doc})")
            return out
        if kind == "bool":
            if not isinstance(v, bool):
                raise self.error(key, f"give true or false, not {json.dumps(v)}")
            return v
        if kind == "str":
            if not isinstance(v, str):
                raise self.error(key, f"give text in quotes, not {json.dumps(v)}")
            return v
        if kind == "name":
            valid = names(spec.names or "")
            if not isinstance(v, str) or v not in valid:
                return self._unknown_name(key, v, valid)
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind == "int" and not float(v).is_integer()):
            what = "a whole number" if kind == "int" else "a number"
            raise self.error(key, f"give {what} ({_range(spec)}), not {json.dumps(v)}")
        if not math.isfinite(v) or (spec.lo is not None and v < spec.lo) or (spec.hi is not None and v > spec.hi):
            raise self.error(key, f"{v} is out of range ({_range(spec)})")
        return int(v) if kind == "int" else float(v) + 0.0

    def _unknown_name(self, key: str, v, valid: list[str]):
        import difflib

        close = difflib.get_close_matches(str(v), valid, n=1) if isinstance(v, str) else []
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise self.error(key, f"unknown {json.dumps(v)} ({hint}valid: {', '.join(valid)})")

    def sizes(self, key: str, v, spec: Key) -> list[int]:
        from longhaul import units

        if isinstance(v, str):
            try:
                return units.parse_sizes(v, key, int(spec.lo or 1), int(spec.hi or 1 << 30))
            except UserError as err:
                raise self.error(key, str(err).removeprefix(f"{key}: ")) from None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = [v]
        if not isinstance(v, list) or not v:
            raise self.error(key, f"give a list of sizes or a range such as \"2:8M\" ({_range(spec)})")
        return [self.value(f"{key}[{i}]", x, Key("int", spec.doc, spec.unit, spec.lo, spec.hi))
                for i, x in enumerate(v)]


def _join(where: str, k: str) -> str:
    return f"{where}.{k}" if where else k


def _num(v: float) -> str:
    """A bound as people write it: 40000, 0.001, 1048576."""
    return f"{v:.10g}" if v != int(v) else str(int(v))


def _range(spec: Key) -> str:
    unit = f" {spec.unit}" if spec.unit and spec.kind not in ("sizes",) else ""
    if spec.lo is None:
        return spec.doc
    hi = _num(spec.hi) if spec.hi is not None else "inf"
    return f"valid: {_num(spec.lo)} to {hi}{unit}"


# ----------------------------------------------------------------------------- the site
@dataclass
class Cluster:
    name: str
    nodes: int
    cores_per_node: int
    node: str | None = None
    hca: str | None = None
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    fabric: str | None = None
    switch: str | None = None


@dataclass
class Workload:
    index: int
    layer: str
    name: str
    params: dict
    where: list[dict] | None = None     # None: the explored distances


@dataclass
class Site:
    path: str
    name: str
    description: str
    profile: str
    seed: int
    clusters: tuple[Cluster, Cluster]
    link: dict
    planned: dict                 # {"fibre_km": D} or {"delay_us": D}
    explore: list[dict]           # path dicts, the planned one among them
    workloads: list[Workload] = field(default_factory=list)
    hardware: dict = field(default_factory=dict)   # the profile as the core resolves it for this site

    # ------------------------------------------------------------------ building
    @classmethod
    def from_dict(cls, data: dict, path: str) -> Site:
        c = _Checker(path)
        allowed = {**TOP, "clusters": None, "link": None, "explore": None, "workloads": None}
        top = c.table({k: v for k, v in data.items() if k in TOP or k not in allowed}, "", TOP)
        clusters_raw = data.get("clusters")
        if not isinstance(clusters_raw, dict):
            raise c.error("clusters", "missing: give [clusters.a] and [clusters.b] (nodes, cores_per_node, ...)")
        for k in clusters_raw:
            if k not in ("a", "b"):
                raise c.error(f"clusters.{k}", "unknown cluster (valid: a, b: the two sites)")
        clusters = []
        for k in ("a", "b"):
            if k not in clusters_raw:
                raise c.error(f"clusters.{k}", "missing cluster (a site has two: [clusters.a] and [clusters.b])")
            t = c.table(clusters_raw[k], f"clusters.{k}", CLUSTER)
            for need in ("nodes", "cores_per_node"):
                if need not in t:
                    raise c.error(f"clusters.{k}.{need}", f"missing ({_range(CLUSTER[need])})")
            clusters.append(Cluster(name=t.pop("name", k), **t))
        if "link" not in data:
            raise c.error("link", f"missing: give [link] with the planned distance ({_DIST})")
        link = c.table(data["link"], "link", LINK)
        planned = _planned(c, link)
        if ("extender" in link) == ("routers" in link):
            raise c.error("link", "give one of extender (InfiniBand range extenders) or routers (IP routers)")
        ip_only, ib_only = {"rate_gbps"}, {"wan_links", "wan_framing", "wan_generation", "wan_width"}
        wrong = sorted((ip_only if "extender" in link else ib_only) & set(data["link"]))
        if wrong:
            kind = "range extenders" if "extender" in link else "IP routers"
            raise c.error(f"link.{wrong[0]}", f"does not apply to {kind} (set by the other kind of link)")
        explore = _explore(c, data.get("explore", {}), planned)
        site = cls(path=path, name=top.get("name", Path(path).stem), description=top.get("description", ""),
                   profile=top["profile"], seed=top["seed"], clusters=(clusters[0], clusters[1]), link=link,
                   planned=planned, explore=explore)
        raw = data.get("workloads", [])
        if not isinstance(raw, list):
            raise c.error("workloads", "give an array of tables ([[workloads]] with layer = ...)")
        site.workloads = [_workload(c, i, w, site) for i, w in enumerate(raw)]
        _unique_names(c, site.workloads, raw)
        site.hardware = _check_hardware(c, site)
        for w in site.workloads:
            _check_ranks(c, site, w)
        _check_with_core(c, site)
        return site

    @property
    def ip(self) -> bool:
        """IP routers between the clusters (else InfiniBand range extenders)."""
        return "routers" in self.link

    @property
    def planned_delay_us(self) -> float:
        return one_way_delay_us(self.planned)

    @property
    def planned_km(self) -> float:
        return self.planned_delay_us / FIBRE_DELAY_US_PER_KM

    def of(self, layer: str) -> list[Workload]:
        return [w for w in self.workloads if w.layer == layer]

    def places(self, w: Workload) -> list[dict]:
        if w.where is not None:
            return w.where
        return [self.planned] if w.params.get("at") == "planned" else self.explore

    # ------------------------------------------------------------------ the models' parameters
    def path_params(self) -> dict:
        """The path parameters every model shares (beside the distance)."""
        keep = (("extender", "wan_links", "wan_framing", "wan_generation", "wan_width", "loss") if not self.ip
                else ("rate_gbps", "loss"))
        out = {k: self.link[k] for k in keep if k in self.link}
        if not out.get("loss"):
            out.pop("loss", None)   # lossless: the models' own default, so scenarios stay as the CLI makes them
        return out

    def verbs(self, where: dict, **params) -> dict:
        from longhaul.sim import verbs

        return verbs.scenario(testbed=self.profile, hca=self.clusters[0].hca, seed=self.seed,
                              **{**self.path_params(), **where, **params})

    def tcp(self, where: dict, **params) -> dict:
        from longhaul.sim import tcp

        link = params.pop("link", None) or (self.link["routers"] if self.ip else "ipoib-cm")
        testbed = None if self.ip else self.profile
        path = {k: v for k, v in self.path_params().items() if k in ("rate_gbps", "extender", "loss")}
        return tcp.scenario(link=link, testbed=testbed, seed=self.seed, **{**path, **where, **params})

    def mpi(self, where: dict, **params) -> dict:
        from longhaul.sim import mpi

        a = self.clusters[0]
        path = {k: v for k, v in self.path_params().items() if not k.startswith("wan_") or k == "wan_links"}
        return mpi.scenario(testbed=self.profile, hca=a.hca, node=a.node, fabric=a.fabric, seed=self.seed,
                            **{**path, **where, **params})

    def mpi_tcp(self, where: dict, **params) -> dict:
        """An MPI scenario over TCP (Open MPI's ob1) on the site's routed path."""
        from longhaul.sim import mpi

        path = {k: v for k, v in self.path_params().items() if k in ("rate_gbps", "loss")}
        return mpi.scenario(seed=self.seed, transport="tcp",
                            **{"rate_gbps": self.routers_gbps(), **path, **where, **params})

    def routers_gbps(self) -> float:
        """The routers' WAN rate as the TCP model resolves it (the link's line rate unless the site
        sets ``rate_gbps``): MPI over TCP takes a rate, not a link."""
        from longhaul.sim import tcp

        if "rate_gbps" in self.link:
            return float(self.link["rate_gbps"])
        return float(tcp.validate(tcp.scenario(link=self.link["routers"]))["wan_gbps"])

    def nfs(self, where: dict, **params) -> dict:
        from longhaul.sim import nfs

        path = {k: v for k, v in self.path_params().items() if k == "extender"}
        return nfs.scenario(testbed=self.profile, seed=self.seed, **{**path, **where, **params})

    def pfs(self, where: dict, events: list[dict] | None = None, **params) -> dict:
        """A parallel file system drill: the site's extenders and links (``wan_links`` of the
        workload's own when it sets one), its profile and seed."""
        from longhaul.sim import pfs

        path = {k: v for k, v in self.path_params().items() if k in ("extender", "wan_links")}
        return pfs.scenario(testbed=self.profile, seed=self.seed, events=events, **{**path, **where, **params})

    def options(self, model: str, where: dict | None = None) -> str:
        """The ``longhaul sim MODEL`` options that name this site's path at ``where`` (default: the
        planned distance), for the report's commands that reproduce a number."""
        where = self.planned if where is None else where
        out = [f"--distance-km {where['fibre_km']:g}" if "fibre_km" in where else f"--delay-us {where['delay_us']:g}"]
        a = self.clusters[0]
        if self.ip:
            out += ["--transport tcp"] if model == "mpi" else []
            if model == "mpi":   # MPI over TCP takes the routers' rate, not their link
                out.append(f"--rate-gbps {self.routers_gbps():g}")
            elif "rate_gbps" in self.link:
                out.append(f"--rate-gbps {self.link['rate_gbps']:g}")
            return " ".join(out)
        out.append(f"--profile {self.profile}")
        if model == "verbs":
            out += [f"--hca {a.hca}"] if a.hca else []
            out += [f"--wan-links {self.link['wan_links']}"] if self.link.get("wan_links", 1) != 1 else []
        if model in ("verbs", "tcp", "nfs"):
            out.append(f"--extender {self.link['extender']}")
        if model == "mpi":
            out += [f"--node {a.node}"] if a.node else []
            out += [f"--fabric {a.fabric}"] if a.fabric else []
        return " ".join(out)


def one_way_delay_us(where: dict) -> float:
    """All the one-way delay of a path dict: the fibre's 5 us per km plus the extenders' setting."""
    return where.get("fibre_km", 0.0) * FIBRE_DELAY_US_PER_KM + where.get("delay_us", 0.0)


def where_label(where: dict) -> str:
    if "fibre_km" in where:
        return f"{where['fibre_km']:g} km"
    return f"{where['delay_us']:g} us"


def _planned(c: _Checker, link: dict) -> dict:
    given = [k for k in ("distance_km", "distance_miles", "delay_us") if k in link]
    if len(given) != 1:
        raise c.error("link", "give exactly one of distance_km, distance_miles, delay_us (the planned distance)"
                      + (f"; got {', '.join(given)}" if given else ""))
    k = given[0]
    if k == "delay_us":
        return {"delay_us": link[k]}
    km = link[k] * (KM_PER_MILE if k == "distance_miles" else 1.0)
    return {"fibre_km": round(km, 6)}


def _explore(c: _Checker, raw, planned: dict) -> list[dict]:
    t = c.table(raw, "explore", EXPLORE)
    lists = [k for k in ("distances_km", "distances_miles", "delays_us") if k in t]
    if len(lists) > 1:
        raise c.error("explore", f"give one of distances_km, distances_miles, delays_us, not {' and '.join(lists)}")
    if lists:
        k = lists[0]
        pts = ([{"delay_us": d} for d in t[k]] if k == "delays_us" else
               [{"fibre_km": round(d * (KM_PER_MILE if k == "distances_miles" else 1.0), 6)} for d in t[k]])
    else:
        key, value = next(iter(planned.items()))
        top = value * t["up_to"]
        n = t["points"]
        pts = [{key: round(top * i / (n - 1), 6)} for i in range(n)] if top > 0 else [{key: 0.0}]
    for p in pts:
        for k, v in p.items():
            hi = MAX_DELAY_US if k == "delay_us" else MAX_DISTANCE_KM
            if v > hi:
                raise c.error(f"explore.{lists[0] if lists else 'up_to'}",
                              f"{v:g} {'us' if k == 'delay_us' else 'km'} is beyond the simulator's range "
                              f"(valid: 0 to {hi:g})")
    if planned not in pts:
        pts.append(planned)
    out: list[dict] = []
    for p in sorted(pts, key=one_way_delay_us):
        if p not in out:
            out.append(p)
    return out


def _workload(c: _Checker, i: int, raw, site: Site) -> Workload:
    where = f"workloads[{i}]"
    if not isinstance(raw, dict):
        raise c.error(where, "must be a table (layer = ..., and its keys)")
    if "layer" not in raw:
        raise c.error(f"{where}.layer", f"missing (valid: {', '.join(WORKLOADS)})")
    layer = c.value(f"{where}.layer", raw["layer"], WORKLOAD_COMMON["layer"])
    t = c.table(raw, where, {**WORKLOAD_COMMON, **WORKLOADS[layer]})
    if site.ip and layer in ("verbs", "nas", "trace", "nfs", "pfs"):
        raise c.error(f"{where}.layer", f"'{layer}' needs InfiniBand between the sites (link.extender); over IP "
                      "routers the site can run: tcp, mpi")
    if layer == "mpi" and site.ip and t["bench"] not in ("latency", "bw", "bibw", "bcast"):
        raise c.error(f"{where}.bench", f"'{t['bench']}' over IP routers (valid: latency, bw, bibw, bcast)")
    if layer == "tcp" and "link" in t:
        ok = ("ipoib-ud", "ipoib-cm") if not site.ip else tuple(x for x in names("tcp_link")
                                                                  if not x.startswith("ipoib"))
        if t["link"] not in ok:
            raise c.error(f"{where}.link", f"'{t['link']}' is not a link of this site (valid: {', '.join(ok)})")
    if layer == "long-haul":
        fixed = [k for k in ("distances_km", "delays_us", "at") if k in raw]
        if fixed:
            raise c.error(f"{where}.{fixed[0]}", "the long-haul part runs at the UltraScience Net's loops and 20,000 "
                          "km on the usn profile (valid keys: name, repeats)")
    if layer == "pfs":
        fixed = [k for k in ("distances_km", "delays_us", "at") if k in raw]
        if fixed:
            raise c.error(f"{where}.{fixed[0]}", "the storage drill runs at the planned distance (valid keys: "
                          f"name, {', '.join(WORKLOADS['pfs'])})")
    if layer == "trace":
        if "file" not in t:
            raise c.error(f"{where}.file", "missing (the trace to replay)")
        tf = Path(c.path).parent / t["file"]
        t["text"] = read_text(tf, f"site {c.path}: {where}.file")
    lists = [k for k in ("distances_km", "delays_us") if k in t]
    if len(lists) > 1:
        raise c.error(where, "give one of distances_km, delays_us")
    pts = None
    if lists:
        k = lists[0]
        pts = [{"fibre_km": d} if k == "distances_km" else {"delay_us": d} for d in t.pop(k)]
    name = t.pop("name", None) or _default_name(layer, t)
    t.pop("layer")
    return Workload(i, layer, name, t, pts)


def _default_name(layer: str, t: dict) -> str:
    if layer == "verbs":
        return f"verbs {t['transport'].upper()} {t['op']} {t['test']}"
    if layer == "mpi":
        return f"MPI {t['bench']}"
    if layer == "pfs":
        return f"{t['variant'].upper()} {t['op']}s across the link"
    if layer == "nas":
        return f"NAS {', '.join(a.upper() for a in t['apps'])} class {t['class']}"
    return {"tcp": f"TCP over {t.get('link', 'the link')}", "trace": f"trace {t.get('file', '')}",
            "nfs": "NFS reads", "long-haul": "the long-haul range (usn profile)"}[layer]


def _unique_names(c: _Checker, ws: list[Workload], raw: list) -> None:
    """Each workload's name is its records' tag: a name given twice is refused, a default name
    that repeats gets the workload's number."""
    seen: dict[str, int] = {}
    for w in ws:
        if w.name in seen:
            if "name" in raw[w.index]:
                raise c.error(f"workloads[{w.index}].name", f"'{w.name}' already names workloads[{seen[w.name]}] "
                              "(valid: a name of its own)")
            w.name = f"{w.name} ({w.index})"
        seen[w.name] = w.index


def _check_hardware(c: _Checker, site: Site) -> dict:
    """The clusters' hardware against the core's profiles: one adapter model at both ends, the
    slot's PCIe the adapter's own, a fabric the adapter's port can run. Returns the verbs path
    as the core resolves it (the report's line rates, PCIe and window come from it)."""
    from longhaul.sim import verbs

    a, b = site.clusters
    for k in ("hca", "node", "fabric"):
        for one, other in ((a, b), (b, a)):   # a cluster that leaves it out has the other's
            if getattr(one, k) is None:
                setattr(one, k, getattr(other, k))
        if getattr(a, k) != getattr(b, k):
            raise c.error(f"clusters.b.{k}", f"{getattr(b, k)!r} differs from clusters.a's {getattr(a, k)!r}: the "
                          f"models run one {k} model at both ends (valid: the same {k} in both clusters)")
    if site.ip:
        return {}
    try:
        res = verbs.validate(site.verbs(site.planned, transport="rc", op="write", test="bw", size_bytes=65536))
    except UserError as err:
        raise _core_error(c, err) from None
    gens = names("fabric")
    for key, cl in (("a", a), ("b", b)):
        hca = res["hca"]
        for k, mine in (("pcie_gen", cl.pcie_gen), ("pcie_lanes", cl.pcie_lanes)):
            if mine is not None and mine != hca[k]:
                raise c.error(f"clusters.{key}.{k}", f"{mine} is not the {hca['name']} adapter's ({hca[k]}; a slot "
                              "that trains the adapter narrower is not modelled: valid: {})".format(hca[k]))
        port = str(hca["port"]["generation"]).lower()
        if cl.fabric is not None and port in gens and gens.index(cl.fabric) > gens.index(port):
            raise c.error(f"clusters.{key}.fabric", f"a {cl.fabric} fabric cannot carry the {hca['name']} adapter "
                          f"at its rate: the adapter's port is {port} (valid for {hca['name']}: "
                          f"{', '.join(gens[:gens.index(port) + 1])})")
    return res


def _check_ranks(c: _Checker, site: Site, w: Workload) -> None:
    """A workload needs ``nodes`` x ``ppn`` processes in each cluster (a trace: its ranks, half in each)."""
    where = f"workloads[{w.index}]"
    nodes = min(cl.nodes for cl in site.clusters)
    cores = min(cl.cores_per_node for cl in site.clusters)
    p = w.params
    if w.layer in ("mpi", "nas", "trace"):
        ppn = p.get("ppn", 1)
        if ppn > cores:
            raise c.error(f"{where}.ppn", f"{ppn} processes per node, but a node has {cores} cores "
                          f"(valid: 1 to {cores})")
        need_nodes = p.get("nodes", 1)
        if w.layer == "mpi" and p.get("pairs"):
            need_nodes = max(need_nodes, -(-p["pairs"] // ppn))
        if w.layer == "trace":
            from longhaul.site_scenarios import trace_ranks

            per_cluster = -(-trace_ranks(p["text"]) // 2)   # ceiling: half the ranks in each cluster
            need_nodes = -(-per_cluster // ppn)
        if need_nodes > nodes:
            raise c.error(f"{where}.{'nodes' if w.layer != 'trace' else 'file'}",
                          f"needs {need_nodes} nodes x {ppn} processes in each cluster, but the smaller cluster has "
                          f"{nodes} nodes of {cores} cores (valid: at most {nodes * cores} ranks per cluster)")


def _check_with_core(c: _Checker, site: Site) -> None:
    """One scenario of every workload through the core's validation (all the core's ranges), the
    core's message naming the site file and the workload."""
    from longhaul.sim import pfs_migrate
    from longhaul.site_scenarios import pfs_migration, scenarios, validators

    for w in site.workloads:
        try:
            for model, sc in scenarios(site, w)[:1]:
                validators()[model](sc)
        except UserError as err:
            raise _core_error(c, err, f"workloads[{w.index}] ({w.layer})") from None
        try:
            migration = pfs_migration(site, w) if w.layer == "pfs" else None
            if migration is not None:
                pfs_migrate.validate(migration)
        except UserError as err:
            raise _core_error(c, err, f"workloads[{w.index}].migrate") from None


def _core_error(c: _Checker, err: UserError, where: str = "") -> UserError:
    text = str(err).removeprefix("scenario: ")
    key = text.split(":", 1)[0]
    site_key = {"testbed": "profile", "hca": "clusters.a.hca", "extender": "link.extender",
                "wan_links": "link.wan_links", "wan_framing": "link.wan_framing", "fibre_km": "link.distance_km",
                "delay_us": "link.delay_us", "node": "clusters.a.node", "fabric": "clusters.a.fabric",
                "rate_gbps": "link.rate_gbps"}.get(key)
    if site_key and not where:
        return c.error(site_key, text[len(key) + 1:].strip())
    return c.error(where or "site", text)


# ----------------------------------------------------------------------------- the reference page
def schema_markdown() -> str:
    """The reference table of every key (docs/reference/site-file.md includes it)."""
    out = []
    for table, keys in SCHEMA.items():
        out.append(f"\n### `{table or '(top level)'}`\n")
        out.append("| key | unit | valid | default | meaning |\n|---|---|---|---|---|")
        for k, s in keys.items():
            valid = (f"{_num(s.lo)} to {_num(s.hi or 0)}" if s.lo is not None else
                     ", ".join(names(s.names)) if s.names else "text" if s.kind == "str" else "")
            default = "" if s.default is None else json.dumps(s.default)
            out.append(f"| `{k}` | {s.unit} | {valid} | {default} | {s.doc} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":   # python -m longhaul.site --reference: the key table of docs/reference/site-file.md
    import sys

    if sys.argv[1:] != ["--reference"]:
        sys.exit("usage: python -m longhaul.site --reference")
    sys.stdout.write(schema_markdown())
