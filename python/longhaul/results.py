"""The results store: every run (simulated, emulated or measured) with its full scenario.

Layout of a store directory (default ``./results``, or ``--store DIR``, or ``$LONGHAUL_STORE``)::

    results/
      manifest.json            small index: one entry per run (rebuilt from the files if lost)
      runs/<scenario-hash>.parquet
                               one Apache Parquet file per run: the records (one row each) and,
                               in the file's key-value metadata under ``longhaul``, the run's
                               facts: scenario (JSON), scenario hash, seed, software version,
                               host facts, start/finish timestamps (UTC), source, label

Why Parquet files and not DuckDB: the records are append-mostly, written by one process, read
whole by analysis; Parquet is a file format every data tool reads (pandas, pyarrow, DuckDB,
Spark, R arrow), needs no server or lock-holding database file, a run is one file that can be
copied, shared or deleted on its own, and each file is written atomically (temp file +
``os.replace``), so an interrupted sweep never leaves a half-written run. DuckDB can still query
the store directly (``SELECT * FROM 'results/runs/*.parquet'``). See README, "Results store, ingest, analysis and the study".

The cache key of a run is the SHA-256 of the canonical JSON of its scenario (sorted keys, no
whitespace, UTF-8); ``Store.get_cached(scenario)`` returns the stored records of an identical
scenario computed by the same model version (package version + fingerprint of the model code),
so a re-run or an interrupted sweep resumes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import math
import os
import platform
import secrets
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import longhaul
from longhaul.errors import UserError

# pyarrow is imported where a table is read or written: importing it is a third of the start-up
# time of every `longhaul` command, and most commands never touch the store.
if TYPE_CHECKING:
    import pyarrow as pa

SOURCES = ("sim", "emu", "measured")
MANIFEST = "manifest.json"
RUNS_DIR = "runs"
META_KEY = b"longhaul"
FORMAT = "longhaul-results/1"
ENV_STORE = "LONGHAUL_STORE"
DEFAULT_STORE = "results"
RESERVED = ("run_id", "source", "label")  # columns added by Store.records()

_thread_lock = threading.Lock()


# --------------------------------------------------------------------------- hashing
def _jsonable(obj: Any) -> Any:
    """Scenario values as canonical JSON values (tuples -> lists, numpy scalars -> Python)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalar
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ValueError(f"scenario value {obj!r} is not finite and cannot be hashed")
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"scenario value {obj!r} of type {type(obj).__name__} is not JSON")


def canonical_json(scenario: dict) -> str:
    """The one text form of a scenario: sorted keys, no whitespace, non-ASCII kept as UTF-8."""
    return json.dumps(_jsonable(scenario), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def scenario_hash(scenario: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of the scenario: the cache key and the run id."""
    return hashlib.sha256(canonical_json(scenario).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- facts
def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


_VERSION_CACHE: dict[str, str] = {}


def model_fingerprint() -> str:
    """SHA-256 (12 hex digits) of the code that computes results: the built Rust core and the
    Python model packages (sim, validation). A rebuilt or edited model changes it, so cached
    results of the old model are never served (see ``Store.get_cached``)."""
    pkg = Path(longhaul.__file__).resolve().parent
    files = sorted(pkg.glob("_core*.so")) + sorted(pkg.glob("_core*.pyd"))
    for sub in ("sim", "validation"):
        files += sorted(p for p in (pkg / sub).rglob("*") if p.is_file() and p.suffix in (".py", ".toml"))
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(pkg).as_posix().encode())
        try:
            h.update(f.read_bytes())
        except OSError:
            pass
    return h.hexdigest()[:12]


def model_version() -> str:
    """What decides whether a cached result is still valid: package version + model fingerprint
    (not the git commit, which changes with every unrelated commit)."""
    return f"longhaul {longhaul.__version__} model {model_fingerprint_cached()}"


def model_fingerprint_cached() -> str:
    if "fp" not in _VERSION_CACHE:
        _VERSION_CACHE["fp"] = model_fingerprint()
    return _VERSION_CACHE["fp"]


def software_version() -> str:
    """``longhaul <version> (<git commit>) model <fingerprint>``: what made a run."""
    if "v" not in _VERSION_CACHE:
        version = f"longhaul {longhaul.__version__}"
        try:
            root = Path(__file__).resolve().parents[2]
            out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                 capture_output=True, text=True, timeout=5)
            if out.returncode == 0 and out.stdout.strip():
                version += f" ({out.stdout.strip()})"
        except (OSError, subprocess.SubprocessError):
            pass
        version += f" model {model_fingerprint_cached()}"
        _VERSION_CACHE["v"] = version
    return _VERSION_CACHE["v"]


def host_facts() -> dict:
    return {
        "hostname": platform.node(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


# --------------------------------------------------------------------------- atomic files
def check_output_path(path: Path, make_parents: bool = True) -> Path:
    """``path`` as a file to write, or a one-line UserError: it is a directory, or (without
    ``make_parents``, as ``cp`` does) its directory is missing or is not a directory."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"cannot write '{path}': it is a directory (give a file name)")
    if not make_parents and not path.parent.is_dir():
        why = (f"'{path.parent}' is not a directory" if path.parent.exists()
               else f"directory '{path.parent}' does not exist")
        raise UserError(f"cannot write '{path}': {why}")
    return path


def _create_temp(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``, like ``tempfile.mkstemp`` but with the mode any new
    file gets (0666 less the umask, or the directory's default ACL) instead of mkstemp's 0600."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), str(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(path.parent))


def atomic_write_bytes(path: Path, data: bytes, make_parents: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    Missing directories are created unless ``make_parents`` is false (then they are an error).
    A path that cannot be written (a directory, no permission, ...) is a one-line UserError and
    leaves no temporary file behind.
    """
    path = check_output_path(path, make_parents)
    try:
        if make_parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_temp(path)
    except OSError as err:
        raise UserError(f"cannot write '{path}': cannot create a file in '{path.parent}' "
                        f"({err.strerror or err})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise UserError(f"cannot write '{path}' ({err.strerror or err})") from None
        raise


def atomic_write_text(path: Path, text: str, make_parents: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), make_parents)


# --------------------------------------------------------------------------- tables
def records_to_table(records: Sequence[dict], meta: dict) -> pa.Table:
    """Records (flat dicts of scalars) -> Arrow table carrying ``meta`` as JSON metadata."""
    import pyarrow as pa
    cols = list(dict.fromkeys(k for r in records for k in r))
    data = {}
    for c in cols:
        values = [r.get(c) for r in records]
        try:
            data[c] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
            raise ValueError(f"column '{c}' mixes types that Parquet cannot hold in one column: {err}") from None
    table = pa.table(data) if cols else pa.table({})
    return table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode("utf-8")})


def table_to_records(table: pa.Table) -> list[dict]:
    return table.to_pylist()


class Store:
    """A directory of runs. Thread-safe in one process; manifest updates take a file lock too."""

    def __init__(self, root: str | os.PathLike | None = None):
        root = root if root is not None else os.environ.get(ENV_STORE) or DEFAULT_STORE
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise UserError(f"--store: '{self.root}' is a file, not a results directory "
                            "(give a directory; it is created when missing)")
        self._manifest_cache: dict | None = None

    def check_writable(self) -> "Store":
        """Refuse a store that cannot be written before a long measurement, not after it."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.runs_dir):
                pass
        except OSError as err:
            raise UserError(f"--store: cannot write results to '{self.root}' ({err.strerror or err})") from None
        return self

    # ---------------------------------------------------------------- paths and locking
    @property
    def runs_dir(self) -> Path:
        return self.root / RUNS_DIR

    def run_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.parquet"

    @contextlib.contextmanager
    def _locked(self):
        """Thread lock + advisory file lock around manifest read-modify-write."""
        self.root.mkdir(parents=True, exist_ok=True)
        with _thread_lock:
            with open(self.root / ".lock", "a+") as lockf:
                fcntl.flock(lockf.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lockf.fileno(), fcntl.LOCK_UN)

    # ---------------------------------------------------------------- manifest
    def _read_manifest_file(self) -> dict | None:
        path = self.root / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # unreadable index: rebuilt from the run files, which are the truth
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("runs"), dict):
            return None
        return data

    def _write_manifest(self, manifest: dict) -> None:
        atomic_write_text(self.root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        self._manifest_cache = manifest

    def _entry(self, meta: dict, n_records: int) -> dict:
        return {
            "run_id": meta["scenario_hash"],
            "file": f"{RUNS_DIR}/{meta['scenario_hash']}.parquet",
            "kind": meta.get("scenario", {}).get("kind", ""),
            "source": meta.get("source", ""),
            "label": meta.get("label", ""),
            "seed": meta.get("seed"),
            "software_version": meta.get("software_version", ""),
            "started_utc": meta.get("started_utc", ""),
            "finished_utc": meta.get("finished_utc", ""),
            "n_records": n_records,
        }

    def manifest(self) -> dict:
        """The index, synchronised with the run files on disk (files are the truth)."""
        with self._locked():
            manifest = self._read_manifest_file()
            changed = manifest is None
            if manifest is None:
                manifest = {"format": FORMAT, "runs": {}}
            on_disk = {p.stem for p in self.runs_dir.glob("*.parquet")} if self.runs_dir.is_dir() else set()
            for run_id in list(manifest["runs"]):
                if run_id not in on_disk:
                    del manifest["runs"][run_id]
                    changed = True
            for run_id in sorted(on_disk - set(manifest["runs"])):
                meta, n = self._read_meta(self.run_path(run_id))
                manifest["runs"][run_id] = self._entry(meta, n)
                changed = True
            if changed and (manifest["runs"] or (self.root / MANIFEST).exists()):
                self._write_manifest(manifest)
            self._manifest_cache = manifest
            return manifest

    def runs(self, source: str | None = None, label: str | None = None, kind: str | None = None) -> list[dict]:
        """Manifest entries, oldest first, optionally filtered."""
        entries = list(self.manifest()["runs"].values())
        if source:
            entries = [e for e in entries if e["source"] == source]
        if label:
            entries = [e for e in entries if e["label"] == label]
        if kind:
            entries = [e for e in entries if e["kind"] == kind]
        return sorted(entries, key=lambda e: (e["started_utc"], e["run_id"]))

    def resolve(self, ref: str) -> str:
        """A run id from a unique prefix (at least 4 hex digits)."""
        ref = ref.strip().lower()
        if len(ref) < 4:
            raise UserError(f"run '{ref}': give at least 4 characters of a run id (see `longhaul results ls`)")
        matches = [r for r in self.manifest()["runs"] if r.startswith(ref)]
        if not matches:
            raise UserError(f"run '{ref}': no such run in store '{self.root}' (see `longhaul results ls`)")
        if len(matches) > 1:
            raise UserError(f"run '{ref}': ambiguous, matches {len(matches)} runs; give more characters")
        return matches[0]

    # ---------------------------------------------------------------- reading files
    def _bad_file(self, path: Path, why: str) -> UserError:
        return UserError(f"results store: '{path}' {why}; the file was left untouched "
                         f"(move it away, or `longhaul results rm {path.stem[:12]}` to delete it)")

    def _read_meta(self, path: Path) -> tuple[dict, int]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        try:
            md = pq.read_metadata(path)
        except (OSError, pa.ArrowException) as err:
            raise self._bad_file(path, f"is not a readable Parquet file ({str(err).splitlines()[0][:120]})") from None
        raw = (md.metadata or {}).get(META_KEY)
        if raw is None:
            raise self._bad_file(path, "is a Parquet file without longhaul run metadata (a foreign file)")
        try:
            meta = json.loads(raw)
            meta["scenario_hash"]
        except (ValueError, KeyError, TypeError):
            raise self._bad_file(path, "has damaged longhaul run metadata") from None
        if meta["scenario_hash"] != path.stem:
            raise self._bad_file(path, f"holds run {meta['scenario_hash'][:12]} under another run's name")
        return meta, md.num_rows

    def read_run(self, run_id: str) -> tuple[dict, list[dict]]:
        """(run metadata, records) of one run."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        path = self.run_path(run_id)
        if not path.exists():
            raise UserError(f"run '{run_id[:12]}': no such run in store '{self.root}'")
        meta, _ = self._read_meta(path)
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as err:
            raise self._bad_file(path, f"is not a readable Parquet file ({str(err).splitlines()[0][:120]})") from None
        return meta, table_to_records(table)

    # ---------------------------------------------------------------- writing
    def put(self, scenario: dict, records: Sequence[dict], *, source: str, label: str = "",
            seed: int | None = None, started_utc: str | None = None, finished_utc: str | None = None,
            extra: dict | None = None) -> str:
        """Save one run atomically; replaces a run of the identical scenario. Returns the run id."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        if source not in SOURCES:
            raise UserError(f"source '{source}' is not one of {', '.join(SOURCES)}")
        check_label(label)
        records = list(records)
        for r in records:
            if not isinstance(r, dict):
                raise ValueError(f"a record must be a dict, got {type(r).__name__}")
        if seed is None:
            # The scenario's, else the one every record ran with (a sweep grid that leaves the
            # seed to the model's default still ran with a seed).
            seeds = {r.get("seed") for r in records}
            seed = scenario.get("seed", seeds.pop() if len(seeds) == 1 else None)
        run_id = scenario_hash(scenario)
        meta = {
            "format": FORMAT,
            "scenario": _jsonable(scenario),
            "scenario_json": canonical_json(scenario),
            "scenario_hash": run_id,
            "seed": seed,
            "software_version": software_version(),
            "model_version": model_version(),
            "host": host_facts(),
            "started_utc": started_utc or now_utc(),
            "finished_utc": finished_utc or now_utc(),
            "source": source,
            "label": label,
        }
        if extra:
            meta["extra"] = _jsonable(extra)
        table = records_to_table(records, meta)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        atomic_write_bytes(self.run_path(run_id), sink.getvalue().to_pybytes())
        with self._locked():
            manifest = self._read_manifest_file() or {"format": FORMAT, "runs": {}}
            manifest["runs"][run_id] = self._entry(meta, len(records))
            self._write_manifest(manifest)
        return run_id

    def get_cached(self, scenario: dict, same_version: bool = True) -> list[dict] | None:
        """Records of a stored run of the identical scenario, or None.

        With ``same_version`` (the default) a run made by another model version (package version
        or model fingerprint: the built core, longhaul/sim, longhaul/validation) is a miss, so a
        changed simulator never serves stale numbers; commits that touch nothing else keep the cache.
        """
        run_id = scenario_hash(scenario)
        path = self.run_path(run_id)
        if not path.exists():
            return None
        meta, records = self.read_run(run_id)
        if same_version and meta.get("model_version") != model_version():
            return None
        return records

    def remove(self, run_ids: Iterable[str]) -> list[str]:
        """Delete runs (file and manifest entry) without reading them: works on damaged files."""
        removed = []
        with self._locked():
            manifest = self._read_manifest_file() or {"format": FORMAT, "runs": {}}
            for run_id in run_ids:
                path = self.run_path(run_id)
                if path.exists():
                    path.unlink()
                manifest["runs"].pop(run_id, None)
                removed.append(run_id)
            self._write_manifest(manifest)
        return removed

    def records(self, run_ids: Iterable[str] | None = None, source: str | None = None,
                label: str | None = None, kind: str | None = None) -> list[dict]:
        """All records of the selected runs, each with ``run_id``, ``source`` and ``label`` added
        (a record's own key of the same name wins)."""
        if run_ids is None:
            run_ids = [e["run_id"] for e in self.runs(source=source, label=label, kind=kind)]
        out = []
        for run_id in run_ids:
            meta, recs = self.read_run(run_id)
            extra = {"run_id": run_id[:12], "source": meta.get("source", ""), "label": meta.get("label", "")}
            for r in recs:
                out.append({**extra, **r})
        return out

    def verify(self) -> list[str]:
        """One line per damaged or foreign file in the store (empty: all good)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        problems = []
        if self.runs_dir.is_dir():
            for path in sorted(self.runs_dir.glob("*.parquet")):
                try:
                    self._read_meta(path)
                    pq.read_table(path)
                except UserError as err:
                    problems.append(str(err))
                except (OSError, pa.ArrowException) as err:
                    problems.append(f"'{path}': {str(err).splitlines()[0][:120]}")
        return problems


MAX_LABEL_CHARS = 200


def check_label(label: str) -> str:
    """A run's label is shown in tables and reports: one line, at most MAX_LABEL_CHARS."""
    breaks = "\n" in label or "\r" in label
    if breaks or len(label) > MAX_LABEL_CHARS:
        raise UserError(f"--label: give one line of at most {MAX_LABEL_CHARS} characters "
                        f"(got {len(label)} characters{', with line breaks' if breaks else ''})")
    return label


def store_from_args(args) -> Store:
    """The store named by ``--store``, else ``$LONGHAUL_STORE``, else ``./results``."""
    return Store(getattr(args, "store", None))


def add_store_option(parser) -> None:
    parser.add_argument("--store", metavar="DIR", default=None,
                        help=f"results directory (default: ${ENV_STORE} or ./{DEFAULT_STORE})")
