"""The results store: every run (simulated, emulated or measured) with its full scenario.

Layout of a store directory (default ``./results``, or ``--store DIR``, or ``$LONGHAUL_STORE``)::

    results/
      manifest.json            small index: one entry per run (rebuilt from the files if lost)
      manifest.journal         entries of runs saved since manifest.json was last written, one
                               JSON line each (folded into manifest.json, then removed; see
                               ``Store.put``)
      runs/<scenario-hash>.parquet
                               one Apache Parquet file per run: the records (one row each,
                               led by the run's ``run_id``, ``kind`` and ``label`` columns) and,
                               in the file's key-value metadata under ``longhaul``, the run's
                               facts: scenario (JSON), scenario hash, seed, software version,
                               host facts, start/finish timestamps (UTC), source, label
      kinds/<kind>/<scenario-hash>.parquet
                               a symbolic link to each run file, by the run's kind, so that
                               ``pandas.read_parquet("results/kinds/verbs")`` reads one kind's runs
                               (``_kind_link``; a store that mixes kinds mixes schemas)

Why Parquet files and not DuckDB: the records are append-mostly, written by one process, read
whole by analysis; Parquet is a file format every data tool reads (pandas, pyarrow, DuckDB,
Spark, R arrow), needs no server or lock-holding database file, a run is one file that can be
copied, shared or deleted on its own, and each file is written atomically (temp file +
``os.replace``), so an interrupted sweep never leaves a half-written run. DuckDB can still query
the store directly (``SELECT * FROM 'results/runs/*.parquet'``). See docs/reference/store.md.

Every run file carries its own checksum (``seal``/``_unseal``): the SHA-256 of the whole file's bytes,
with the 64 hex digits of the checksum itself read as zeros, kept in the file's key-value metadata
under ``longhaul.sha256``. It covers every byte (data pages, statistics, the run's facts, the footer),
so any change of a run file, a single flipped bit included, is found on every read and by
``results verify``; a checksum over the decoded records would miss a flip in bytes the decoder
ignores, and one kept only in the manifest would be lost with it (the manifest is rebuilt from the
run files, so the files must prove themselves). A damaged run is named on stderr once and skipped
by every reader of many runs (``records``, ``manifest``, ``get_cached``: a sweep recomputes it),
never blocking the others.

Reading needs no write access: a store on a read-only mount, or another user's, is read with a
shared lock when its lock file can be opened, else without one, and its index is then synchronised
in memory only.

The cache key of a run is the SHA-256 of the canonical JSON of its scenario (sorted keys, no
whitespace, UTF-8); ``Store.get_cached(scenario)`` returns the stored records of an identical
scenario computed by the same model version (package version + fingerprint of the model code),
so a re-run or an interrupted sweep resumes.

Reading never creates a store: a ``Store`` on a missing directory reads as empty, and one opened
for a read-only command (``longhaul results ...``, ``longhaul analyse ...``; ``must_exist``)
refuses it with ``no store at 'PATH'``. Writing (``put``) creates the directory.
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
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import longhaul
from longhaul.errors import UserError
from longhaul.safeio import printable

# pyarrow is imported where a table is read or written: importing it is a third of the start-up
# time of every `longhaul` command, and most commands never touch the store.
if TYPE_CHECKING:
    import pyarrow as pa

SOURCES = ("sim", "emu", "measured")
MANIFEST = "manifest.json"
JOURNAL = "manifest.journal"
#: a journal line ``{"run_id": ID, "forget": true}`` drops the run's index entry (see ``Store.put``)
FORGET = "forget"
RUNS_DIR = "runs"
KINDS_DIR = "kinds"
#: Columns every run file starts with (one value per file), so that a directory read by pandas,
#: polars or DuckDB tells the runs apart; ``table_to_records`` drops them again.
RUN_COLUMNS = ("run_id", "kind", "label")
META_KEY = b"longhaul"
#: the key-value metadata key of a run file's checksum (see ``seal``)
CHECKSUM_KEY = b"longhaul.sha256"
_UNSEALED = b"0" * 64
FORMAT = "longhaul-results/1"  # manifest.json's format, and run files written before checksums
RUN_FORMAT = "longhaul-results/2"  # a run file with a checksum: one without it is damaged
#: the largest run file read (a run is its records: a few thousand rows of a sweep point or a trace)
RUN_FILE_BYTES = 1 << 30
ENV_STORE = "LONGHAUL_STORE"
DEFAULT_STORE = "results"
READ_ONLY_COMMANDS = ("results", "analyse")  # `longhaul COMMAND`s that only read a store: it must exist

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


def _by_value(obj: Any) -> Any:
    """Numbers as their value, not their spelling: a whole float as an int (1000.0 -> 1000, -0.0 ->
    0), so `sim` (which reads 1000 from --delay-us as 1000.0) and a sweep grid's 1000 are one
    scenario. A parameter the models take as a number reads 1000 and 1000.0 alike; one they take
    as a whole number refuses 2.0, which the CLI checks (validates) before it looks in the cache."""
    if isinstance(obj, dict):
        return {k: _by_value(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_by_value(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer() and abs(obj) < 2**53:
        return int(obj)
    return obj


def canonical_json(scenario: dict) -> str:
    """The one text form of a scenario: sorted keys, no whitespace, non-ASCII kept as UTF-8,
    numbers by value (see ``_by_value``)."""
    return json.dumps(_by_value(_jsonable(scenario)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def scenario_hash(scenario: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of the scenario: the cache key and the run id."""
    return hashlib.sha256(canonical_json(scenario).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- facts
def now_utc() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


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
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as err:  # a name too long, a loop of links
        raise UserError(f"cannot write '{printable(str(path))[:200]}' ({err.strerror or err})") from None
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


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable: until the directory itself is synced, a power loss
    can bring back the old name (fsync(2): syncing a file does not sync its directory entry).
    Best effort: the file is written by then, so a directory that cannot be opened (writable but
    not readable) or a file system that cannot sync one keeps its own guarantees; an I/O error
    still fails the write."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM):
            return
        raise
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.EROFS, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, make_parents: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    Missing directories are created unless ``make_parents`` is false (then they are an error).
    A path that cannot be written (a directory, no permission, ...) is a one-line UserError and
    leaves no temporary file behind. A symbolic link is written through (its target is replaced,
    the link stays); a FIFO, a device or ``/dev/stdout`` is a stream, not a file to replace: the
    data is written into it, as ``cp`` would (renaming over ``/dev/null`` as root would replace it).
    """
    path = check_output_path(path, make_parents)
    try:
        target = os.stat(path)  # follows links: /dev/stdout is the pipe or terminal behind it
    except OSError:
        target = None
    if target is not None and not stat.S_ISREG(target.st_mode):
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as err:
            raise UserError(f"cannot write '{path}' ({err.strerror or err})") from None
        return
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
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
        _fsync_dir(path.parent)
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
            # A column with no value in this run (lat_us of a bandwidth test) is written as float64, not
            # Arrow's null type: a directory of runs read as one table then has one type per column.
            data[c] = pa.array(values, type=pa.float64() if all(v is None for v in values) else None)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
            raise ValueError(f"column '{c}' mixes types that Parquet cannot hold in one column: {err}") from None
    table = pa.table(data) if cols else pa.table({})
    return table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode("utf-8")})


def table_to_records(table: pa.Table) -> list[dict]:
    return table.drop_columns([c for c in RUN_COLUMNS if c in table.column_names]).to_pylist()


#: Scenario keys ``scenario_params`` leaves out: the kind has its own column, the rest are bulky.
_NOT_PARAMS = ("kind", "text", "cwnd_trace")
_WORKLOADS = ("osu", "app", "trace", "cross")


def scenario_params(scenario: dict, limit: int = 160) -> str:
    """A run's scenario in one line, its values as ``key=value`` under the names a sweep grid takes
    (``fibre_km=40``; a workload table's with its name: ``osu.bench=bw``), for ``results ls``; cut at
    ``limit`` characters."""
    parts: list[str] = []

    def walk(prefix: str, table: dict) -> None:
        for k in sorted(table):
            if k in _NOT_PARAMS:
                continue
            v = table[k]
            if isinstance(v, dict):
                walk(f"{k}.", v) if k in _WORKLOADS else walk("", v)
            else:
                parts.append(f"{prefix}{k}={json.dumps(v) if isinstance(v, (list, bool)) or v is None else v}")

    walk("", scenario)
    text = " ".join(parts)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def with_run_columns(table: pa.Table, run_id: str, kind: str, label: str) -> pa.Table:
    """``table`` led by the run's ``RUN_COLUMNS`` (its own columns of those names are the run's)."""
    import pyarrow as pa
    rest = table.drop_columns([c for c in RUN_COLUMNS if c in table.column_names])
    n = table.num_rows
    lead = pa.table({"run_id": pa.array([run_id] * n, pa.string()), "kind": pa.array([kind] * n, pa.string()),
                     "label": pa.array([label] * n, pa.string())})
    for name in rest.column_names:
        lead = lead.append_column(rest.field(name), rest.column(name))
    return lead.replace_schema_metadata(table.schema.metadata)


class DamagedRun(UserError):
    """A run file that cannot be trusted: unreadable, foreign, or not the bytes written."""

    def __init__(self, path: Path, why: str):
        self.path = path
        self.why = why
        super().__init__(f"results store: '{path}' {why}; the file was left untouched "
                         f"(move it away, or `longhaul results rm {path.stem[:12]}` to delete it)")


def seal(table: pa.Table) -> bytes:
    """The Parquet bytes of ``table`` with their checksum inside: written with 64 zeros as the value
    of ``CHECKSUM_KEY``, which are then replaced by the SHA-256 (hex) of those bytes. The footer is
    Thrift, never compressed, so the zeros are there verbatim and keep their length."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), CHECKSUM_KEY: _UNSEALED})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    data = bytearray(sink.getvalue().to_pybytes())
    at = data.rfind(_UNSEALED)
    data[at:at + 64] = hashlib.sha256(data).hexdigest().encode()
    return bytes(data)


def _unseal(path: Path, data: bytes) -> tuple[dict, int]:
    """(run metadata, row count) of a run file's bytes, after checking them: readable Parquet, a
    longhaul run, the checksum matches (a file written before checksums, format 1, has none), and
    it holds the run its name says. Else a ``DamagedRun``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        md = pq.read_metadata(pa.BufferReader(data))
        kv = md.metadata or {}
    except Exception as err:  # noqa: BLE001 - damaged bytes fail the decoder in any way (UnicodeDecodeError, ...)
        raise DamagedRun(path, f"is not a readable Parquet file ({_first_line(err)})") from None
    if META_KEY not in kv:
        raise DamagedRun(path, "is a Parquet file without longhaul run metadata (a foreign file)")
    stored = kv.get(CHECKSUM_KEY)
    if stored is not None:
        at = data.rfind(stored)
        if len(stored) != 64 or at < 0 or \
                hashlib.sha256(data[:at] + _UNSEALED + data[at + 64:]).hexdigest().encode() != stored:
            raise DamagedRun(path, "does not match its checksum (its bytes changed after it was written)")
    try:
        meta = json.loads(kv[META_KEY])
        if not isinstance(meta["scenario_hash"], str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise DamagedRun(path, "has damaged longhaul run metadata") from None
    if stored is None and meta.get("format") != FORMAT:
        raise DamagedRun(path, "has no checksum")
    if meta["scenario_hash"] != path.stem:
        raise DamagedRun(path, f"holds run {printable(meta['scenario_hash'][:12])} under another run's name")
    return meta, md.num_rows


def _first_line(err: BaseException) -> str:
    lines = str(err).splitlines() or [type(err).__name__]
    return printable(lines[0][:120])


def _run_bytes(path: Path) -> bytes:
    """A run file's bytes (bounded; a directory or a FIFO named like a run is a damaged run)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise DamagedRun(path, f"cannot be read ({err.strerror or err})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DamagedRun(path, "is not a regular file")
        if st.st_size > RUN_FILE_BYTES:
            raise DamagedRun(path, f"is {st.st_size} bytes, over the {RUN_FILE_BYTES >> 20} MiB of a run file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(RUN_FILE_BYTES + 1)
    except OSError as err:
        raise DamagedRun(path, f"cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)


#: A run id's length: the SHA-256 of its scenario in hex (``scenario_hash``).
ID_CHARS = 64


def resolve_run(ref: str, run_ids: Sequence[str], where: str, see: str) -> str:
    """The one of ``run_ids`` that ``ref`` names: a unique prefix of at least 4 characters, or a full
    id whose first 12 characters are one of them (`results export` writes 12)."""
    ref = ref.strip().lower()
    if len(ref) < 4:
        raise UserError(f"run '{ref}': give at least 4 characters of a run id (see {see})")
    # A longer ref than an id is a typo, not that run: a 64-character id with anything after it
    # named the run (and `results rm` would have removed it).
    full = len(ref) <= ID_CHARS
    matches = [i for i in run_ids if i.lower().startswith(ref) or (full and len(i) >= 12 and ref.startswith(i.lower()))]
    if not matches:
        raise UserError(f"run '{ref}': no such run in {where} (see {see})")
    if len(matches) > 1:
        raise UserError(f"run '{ref}': ambiguous, matches {len(matches)} runs in {where}; give more characters")
    return matches[0]


class Store:
    """A directory of runs. Thread-safe in one process; manifest updates take a file lock too.

    ``must_exist``: the store is only read (``longhaul results``, ``longhaul analyse``), so a
    missing one is a mistyped path: every read raises ``no store at 'PATH'`` instead of reading
    as empty. Nothing is checked (or created) before the store is first used.
    """

    def __init__(self, root: str | os.PathLike | None = None, *, must_exist: bool = False):
        root = root if root is not None else os.environ.get(ENV_STORE) or DEFAULT_STORE
        if not str(root).strip():  # Path("") is ".": the runs would land in the current directory
            raise UserError("--store: empty path (give a results directory; it is created when missing)")
        self.root = Path(root)
        self.must_exist = must_exist
        try:
            os.stat(self.root)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as err:  # a name too long, a loop of links, no permission to look
            raise UserError(f"--store: cannot use '{printable(str(root))[:200]}' ({err.strerror or err})") from None
        #: damaged run files met so far (path -> why), each named once on stderr (``skip``)
        self.skipped: dict[Path, str] = {}
        self._strays_noted = False
        if self.root.exists() and not self.root.is_dir():
            raise UserError(f"--store: '{self.root}' is a file, not a results directory "
                            "(give a directory; it is created when missing)")

    def exists(self) -> bool:
        """Is there a store here: a directory holding manifest.json, its journal or runs/?"""
        return self.root.is_dir() and any((self.root / name).exists() for name in (MANIFEST, JOURNAL, RUNS_DIR))

    def check_exists(self) -> Store:
        """With ``must_exist``, a one-line UserError when there is no store to read."""
        if self.must_exist and not self.exists():
            why = ("no such directory" if not self.root.exists()
                   else f"the directory holds no {MANIFEST} and no {RUNS_DIR}/")
            raise UserError(f"no store at '{self.root}' ({why}; give --store DIR of a store that a sweep, study, emu, "
                            f"ingest or measure saved runs to, or set ${ENV_STORE})")
        return self

    def check_writable(self) -> Store:
        """Refuse a store that cannot be written before a long measurement, not after it. Creates
        nothing: the test file goes where the store would begin (its runs/, or the nearest existing
        directory above it), so a measurement that then fails leaves no empty store behind."""
        where = self.runs_dir
        while not where.exists() and where != where.parent:
            where = where.parent
        try:
            if not where.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(where))
            with tempfile.TemporaryFile(dir=where):
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

    def _open_lock_file(self, *, for_writing: bool) -> tuple[IO[bytes] | None, bool]:
        """(the store's lock file, whether the store can be written). Opening it for appending
        creates the store; when that fails, a writer gets one line, a reader the lock file opened
        for reading (a read-only mount or another user's store), or None when even that fails."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            return open(self.root / ".lock", "a+b"), True
        except OSError as err:  # the writers that never called check_writable() meet it here
            if for_writing:
                raise UserError(f"--store: cannot write results to '{self.root}' ({err.strerror or err})") from None
            if not self.root.is_dir():
                raise UserError(f"--store: cannot read '{self.root}' ({err.strerror or err})") from None
        try:
            return open(self.root / ".lock", "rb"), False
        except OSError:
            return None, False

    @contextlib.contextmanager
    def _locked(self):
        """Thread lock + exclusive advisory file lock around manifest read-modify-write."""
        with _thread_lock:
            lockf, _ = self._open_lock_file(for_writing=True)
            assert lockf is not None  # a writer's open either succeeds or raises
            with lockf:
                fcntl.flock(lockf.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lockf.fileno(), fcntl.LOCK_UN)

    @contextlib.contextmanager
    def _read_locked(self):
        """The write lock when the store can be written (yields True: the index may be saved), else
        a shared lock on its lock file when that can be opened for reading, else none (yields
        False, and nothing is written)."""
        with _thread_lock:
            lockf, writable = self._open_lock_file(for_writing=False)
            if lockf is None:
                yield False
                return
            with lockf:
                with contextlib.suppress(OSError):
                    fcntl.flock(lockf.fileno(), fcntl.LOCK_EX if writable else fcntl.LOCK_SH)
                try:
                    yield writable
                finally:
                    with contextlib.suppress(OSError):
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
        if not all(_well_formed(entry) and entry["run_id"] == run_id for run_id, entry in data["runs"].items()):
            return None  # one malformed entry: the index is damaged, so all of it is rebuilt
        return data

    def _write_manifest(self, manifest: dict) -> None:
        atomic_write_text(self.root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    def _read_journal(self) -> list[dict]:
        """Entries appended by ``put`` since the last fold, oldest first. A line that is not a
        whole entry (the tail of a write cut by a power loss) is skipped: the run file is the
        truth, and ``manifest()`` indexes a run file it has no entry for."""
        path = self.root / JOURNAL
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        except OSError as err:  # kept (not folded, not removed) until it can be read
            raise UserError(f"results store: cannot read '{path}' ({err.strerror or err})") from None
        entries = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and (_well_formed(entry) or (entry.get(FORGET) is True
                                                                    and isinstance(entry.get("run_id"), str))):
                entries.append(entry)
        return entries

    def _load(self) -> tuple[dict, bool]:
        """Under the lock: manifest.json with the journal's entries applied (later ones win), and
        whether that differs from manifest.json."""
        manifest = self._read_manifest_file()
        changed = manifest is None
        if manifest is None:
            manifest = {"format": FORMAT, "runs": {}}
        for entry in self._read_journal():
            if entry.get(FORGET):
                manifest["runs"].pop(entry["run_id"], None)  # manifest() re-indexes it from its file
            else:
                manifest["runs"][entry["run_id"]] = entry
            changed = True
        return manifest, changed

    def _save(self, manifest: dict, changed: bool) -> dict:
        """Under the lock: write manifest.json (atomically) when it changed, then remove the
        journal it now holds. Replaying a journal twice gives the same manifest, so a fold cut
        short between the two steps loses nothing."""
        if changed and (manifest["runs"] or (self.root / MANIFEST).exists()):
            self._write_manifest(manifest)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.root / JOURNAL)
        return manifest

    def _fold_journal(self) -> dict:
        """Under the lock: the journal folded into manifest.json (no look at the run files)."""
        return self._save(*self._load())

    def _append_journal(self, entry: dict) -> int:
        """Under the lock: append one entry as a JSON line (one ``write``, fsynced). Returns the
        journal's size in bytes. After a torn last line the entry starts on a line of its own, so
        only the torn one is lost."""
        path = self.root / JOURNAL
        data = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
                if not size:  # a journal just created: its name must survive a power loss too
                    _fsync_dir(self.root)
                return os.fstat(fd).st_size
            finally:
                os.close(fd)
        except OSError as err:
            raise UserError(f"cannot write '{path}' ({err.strerror or err})") from None

    def _entry(self, meta: dict, n_records: int) -> dict:
        scenario = meta.get("scenario")
        kind = scenario.get("kind", "") if isinstance(scenario, dict) else ""
        return {
            "run_id": meta["scenario_hash"],
            "file": f"{RUNS_DIR}/{meta['scenario_hash']}.parquet",
            **{key: str(value) for key, value in (
                ("kind", kind), ("source", meta.get("source", "")), ("label", meta.get("label", "")),
                ("software_version", meta.get("software_version", "")),
                ("started_utc", meta.get("started_utc", "")), ("finished_utc", meta.get("finished_utc", "")))},
            "params": scenario_params(scenario) if isinstance(scenario, dict) else "",
            "seed": meta.get("seed"),
            "n_records": n_records,
        }

    def manifest(self) -> dict:
        """The index, synchronised with the run files on disk (files are the truth): manifest.json
        with the journal folded in. A missing store reads as empty and is not created (with
        ``must_exist``, it is an error). A run file without an entry is indexed from its own facts
        once its checksum holds; a damaged one is named on stderr and left out. A store that cannot
        be written is synchronised in memory only."""
        self.check_exists()
        if not self.exists():
            return {"format": FORMAT, "runs": {}}
        with self._read_locked() as writable:
            manifest, changed = self._load()
            on_disk = {p.stem for p in self.runs_dir.glob("*.parquet")} if self.runs_dir.is_dir() else set()
            for run_id in list(manifest["runs"]):
                if run_id not in on_disk:
                    del manifest["runs"][run_id]
                    changed = True
            for run_id in sorted(on_disk - set(manifest["runs"])):
                try:
                    meta, n = self._read_meta(self.run_path(run_id))
                except DamagedRun as err:
                    self.skip(err)
                    continue
                except FileNotFoundError:  # removed while we looked
                    continue
                manifest["runs"][run_id] = self._entry(meta, n)
                changed = True
            if self.stray_temporaries():
                self._note_strays()
            return self._save(manifest, changed) if writable else manifest

    def runs(self, source: str | None = None, label: str | None = None, kind: str | None = None) -> list[dict]:
        """Manifest entries, oldest first, optionally filtered (None: no filter; a label of ""
        selects the runs saved without one)."""
        entries = list(self.manifest()["runs"].values())
        for key, want in (("source", source), ("label", label), ("kind", kind)):
            if want is not None:
                entries = [e for e in entries if e[key] == want]
        return sorted(entries, key=lambda e: (e["started_utc"], e["run_id"]))

    def resolve(self, ref: str) -> str:
        """A run id from a unique prefix (at least 4 hex digits)."""
        return resolve_run(ref, list(self.manifest()["runs"]), f"store '{self.root}'", "`longhaul results ls`")

    # ---------------------------------------------------------------- reading files
    def skip(self, err: DamagedRun) -> None:
        """Name a damaged run on stderr (once per store and file) and remember it: the reader of
        many runs carries on without it, and says at its end how many it skipped."""
        if err.path not in self.skipped:
            self.skipped[err.path] = err.why
            sys.stderr.write(f"longhaul: warning: skipped damaged run {err.path.stem[:12]}: '{err.path}' {err.why} "
                             f"(`longhaul results rm {err.path.stem[:12]}` deletes it)\n")

    def _note_strays(self) -> None:
        if not self._strays_noted:
            self._strays_noted = True
            n = len(self.stray_temporaries())
            sys.stderr.write(f"longhaul: note: {n} temporary file(s) in '{self.root}' left by an interrupted "
                             "write (`longhaul results gc` removes them)\n")

    def stray_temporaries(self) -> list[Path]:
        """Temporary files (``.NAME.XXXXXXXX.tmp``) of writes cut short by a kill: a write in
        progress holds the lock, so under the lock every one is stray."""
        found: list[Path] = []
        for where in (self.root, self.runs_dir):
            if where.is_dir():
                found += sorted(p for p in where.glob(".*.tmp") if p.is_file() or p.is_symlink())
        return found

    def _read_meta(self, path: Path) -> tuple[dict, int]:
        return _unseal(path, _run_bytes(path))

    def read_meta(self, run_id: str) -> dict:
        """One run's metadata (its scenario, source, label, times), its checksum checked."""
        return self._read_meta(self.run_path(run_id))[0]

    def read_run(self, run_id: str) -> tuple[dict, list[dict]]:
        """(run metadata, records) of one run, from bytes whose checksum holds (else ``DamagedRun``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        self.check_exists()
        path = self.run_path(run_id)
        try:
            data = _run_bytes(path)
        except FileNotFoundError:
            raise UserError(f"run '{run_id[:12]}': no such run in store '{self.root}'") from None
        meta, _ = _unseal(path, data)
        try:
            # One thread, no pre-buffering: a run is small, and Arrow's thread pools still running at exit
            # abort the process now and then ('terminate called without an active exception', apache/arrow#34314).
            records = table_to_records(pq.read_table(pa.BufferReader(data), use_threads=False, pre_buffer=False))
        except Exception as err:  # noqa: BLE001 - damaged bytes fail the decoder in any way
            raise DamagedRun(path, f"is not a readable Parquet file ({_first_line(err)})") from None
        return meta, records

    # ---------------------------------------------------------------- writing
    def put(self, scenario: dict, records: Sequence[dict], *, source: str, label: str = "",
            seed: int | None = None, started_utc: str | None = None, finished_utc: str | None = None,
            extra: dict | None = None) -> str:
        """Save one run atomically; replaces a run of the identical scenario. Returns the run id.

        Cost: O(1) amortised, whatever the store holds (a sweep of N points costs N times one
        point, not N squared). The run file is written first (temporary file, fsync,
        ``os.replace``): once it is there the run is saved, ``get_cached`` finds it and an
        interrupted sweep resumes from it. Its manifest entry is then appended, under the lock,
        as one fsynced JSON line to ``manifest.journal`` instead of re-reading and rewriting the
        whole manifest.json. The journal is folded into manifest.json (atomic rewrite, then the
        journal removed) when it grows larger than manifest.json (so the rewrites double in
        size: amortised O(1) a point), by every read of the index (``manifest()``,
        ``runs()``, ...), and at the end of a sweep. An interrupt between the two steps leaves a
        run file without an entry: ``manifest()`` indexes it from the file, as before (a
        replaced run's old entry is dropped by a ``forget`` line journalled before its file).
        The file carries its checksum (``seal``).
        """
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
            "format": RUN_FORMAT,
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
        kind = str(scenario.get("kind", ""))
        data = seal(with_run_columns(records_to_table(records, meta), run_id, kind, label))
        with self._locked():
            if self.run_path(run_id).exists():
                # Replacing a run: its index entry (label, times, record count) is stale from the
                # moment the new file lands, so say so first (under the lock with the write, so that
                # no reader re-indexes the old file in between); an interrupt before the new entry's
                # line then leaves the run re-indexed from its file, not described by the old entry.
                self._append_journal({"run_id": run_id, FORGET: True})
            atomic_write_bytes(self.run_path(run_id), data)
            self._kind_link(run_id, kind)
            journal_bytes = self._append_journal(self._entry(meta, len(records)))
            try:
                manifest_bytes = (self.root / MANIFEST).stat().st_size
            except FileNotFoundError:
                manifest_bytes = 0
            if journal_bytes > manifest_bytes:
                self._fold_journal()
        return run_id

    def _kind_link(self, run_id: str, kind: str) -> None:
        """kinds/<kind>/<run id>.parquet -> ../../runs/<run id>.parquet (made under a temporary
        name and renamed over, so a reader never meets half of it)."""
        folder = self.root / KINDS_DIR / (kind.replace(os.sep, "_").strip(".") or "none")
        tmp = folder / f".{run_id}.{secrets.token_hex(4)}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            os.symlink(Path("..", "..", RUNS_DIR, f"{run_id}.parquet"), tmp)
            os.replace(tmp, folder / f"{run_id}.parquet")
        except OSError:   # a file system without symbolic links: the run is saved, only its view is missing
            with contextlib.suppress(OSError):
                tmp.unlink()

    def fold_journal(self) -> None:
        """Bring manifest.json up to date with the runs saved since its last rewrite (the end of a
        sweep calls this; reading the index does it too). Creates nothing in a missing store."""
        if (self.root / JOURNAL).exists():
            with self._locked():
                self._fold_journal()

    def get_cached(self, scenario: dict, same_version: bool = True) -> list[dict] | None:
        """Records of a stored run of the identical scenario, or None.

        With ``same_version`` (the default) a run made by another model version (package version
        or model fingerprint: the built core, longhaul/sim, longhaul/validation) is a miss, so a
        changed simulator never serves stale numbers; commits that touch nothing else keep the cache.
        A damaged run is a miss too (named on stderr): it is computed again and replaced.
        """
        run_id = scenario_hash(scenario)
        path = self.run_path(run_id)
        if not path.exists():
            return None
        try:
            meta, records = self.read_run(run_id)
        except DamagedRun as err:
            self.skip(err)
            return None
        if same_version and meta.get("model_version") != model_version():
            return None
        return records

    def remove(self, run_ids: Iterable[str]) -> list[str]:
        """Delete runs (file and manifest entry) without reading them: works on damaged files.
        Removes only files: a directory named like a run is refused before anything is removed."""
        self.check_exists()
        removed: list[str] = []
        if not self.exists():
            return removed
        run_ids = list(run_ids)
        for run_id in run_ids:
            path = self.run_path(run_id)
            if path.is_dir() and not path.is_symlink():
                raise UserError(f"results rm: '{printable(str(path))}' is a directory, not a run file; nothing was "
                                "removed (results rm removes run files only: move the directory away by hand)")
        with self._locked():
            manifest = self._fold_journal()
            for run_id in run_ids:
                path = self.run_path(run_id)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                for link in self.root.glob(f"{KINDS_DIR}/*/{run_id}.parquet"):
                    link.unlink()
                manifest["runs"].pop(run_id, None)
                removed.append(run_id)
            self._write_manifest(manifest)
        return removed

    def gc(self) -> list[Path]:
        """Remove the temporary files left by writes cut short (``stray_temporaries``), under the
        lock, so no write in progress loses its file. Returns the files removed."""
        self.check_exists()
        if not self.exists():
            return []
        removed = []
        with self._locked():
            for path in self.stray_temporaries():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                removed.append(path)
        return removed

    def records(self, run_ids: Iterable[str] | None = None, source: str | None = None,
                label: str | None = None, kind: str | None = None) -> list[dict]:
        """All records of the selected runs, each with ``run_id``, ``kind``, ``source`` and ``label``
        added (a record's own key of the same name wins): what `results export` writes and
        `analyse --input` selects by. A damaged run is named on stderr and skipped (``skipped``)."""
        if run_ids is None:
            run_ids = [e["run_id"] for e in self.runs(source=source, label=label, kind=kind)]
        out = []
        for run_id in run_ids:
            try:
                meta, recs = self.read_run(run_id)
            except DamagedRun as err:
                self.skip(err)
                continue
            entry = self._entry(meta, len(recs))
            extra = {"run_id": run_id[:12], **{k: entry[k] for k in ("kind", "source", "label")}}
            for r in recs:
                out.append({**extra, **r})
        return out

    def verify(self) -> tuple[list[str], int]:
        """(one line per damaged or foreign run file and per stray temporary file, the number of
        run files written before checksums, which read back but cannot be checked)."""
        self.check_exists()
        problems = []
        unchecked = 0
        if self.runs_dir.is_dir():
            for path in sorted(self.runs_dir.glob("*.parquet")):
                try:
                    meta = self.read_run(path.stem)[0]
                except DamagedRun as err:
                    problems.append(f"damaged run {path.stem[:12]}: {err}")
                    continue
                except UserError:  # removed while we looked
                    continue
                unchecked += meta.get("format") == FORMAT
        for path in self.stray_temporaries():
            problems.append(f"stray temporary file '{path}' left by an interrupted write "
                            "(`longhaul results gc` removes it)")
        return problems, unchecked


def _well_formed(entry: Any) -> bool:
    """An index entry with every field of ``Store._entry`` of its type (a hand-edited or damaged
    manifest.json is rebuilt from the run files instead of failing ``ls``)."""
    if not isinstance(entry, dict):
        return False
    text = ("run_id", "file", "kind", "source", "label", "software_version", "started_utc", "finished_utc")
    return (all(isinstance(entry.get(k), str) for k in text)
            and isinstance(entry.get("n_records"), int) and not isinstance(entry.get("n_records"), bool)
            and not isinstance(entry.get("seed"), (dict, list)))


MAX_LABEL_CHARS = 200


def check_label(label: str) -> str:
    """A run's label is shown in tables and reports: one line, at most MAX_LABEL_CHARS."""
    breaks = "\n" in label or "\r" in label
    if breaks or len(label) > MAX_LABEL_CHARS:
        raise UserError(f"--label: give one line of at most {MAX_LABEL_CHARS} characters "
                        f"(got {len(label)} characters{', with line breaks' if breaks else ''})")
    return label


def store_from_args(args, must_exist: bool | None = None) -> Store:
    """The store named by ``--store``, else ``$LONGHAUL_STORE``, else ``./results``.

    ``must_exist`` (default: the command only reads the store, ``longhaul results`` or
    ``longhaul analyse``): a missing store is an error (``no store at 'PATH'``) when it is first
    read, and nothing is created; a command that never reads it (``analyse compare`` without
    runs) does not need one."""
    if must_exist is None:
        must_exist = getattr(args, "command", None) in READ_ONLY_COMMANDS
    return Store(getattr(args, "store", None), must_exist=must_exist)


def add_store_option(parser) -> None:
    parser.add_argument("--store", metavar="DIR", default=None,
                        help=f"results directory (default: ${ENV_STORE} or ./{DEFAULT_STORE})")
