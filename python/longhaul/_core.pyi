"""Types of the Rust core (`crates/longhaul-py/src/lib.rs`): a scenario as JSON text in, a record
(or resolved parameters) as JSON text out. Bad input raises `ValueError` with the one-line message
the CLI prints; a run cancelled by `cancel_runs(True)` raises `KeyboardInterrupt`. Every run
releases the GIL. Keep in step with lib.rs: tests/test_core_binding.py compares the two."""

__version__: str

def run_verbs(scenario_json: str, duration_s: float | None = None) -> str:
    """Validate and run one verbs scenario; `duration_s` stops it after that much simulated time."""

def resolve_verbs(scenario_json: str) -> str:
    """Validate a verbs scenario without running it; its resolved parameters."""

def run_tcp(scenario_json: str, validate_only: bool = False) -> str:
    """Validate and run one TCP (iperf-like) scenario, or only validate it (its resolved parameters)."""

def run_mpi(scenario_json: str, validate_only: bool = False) -> str:
    """Validate and run one MPI scenario (any transport: rc, uc, ud, tcp), or only validate it (the library's
    resolved parameters)."""

def run_nfs(scenario_json: str, validate_only: bool = False) -> str:
    """Validate and run one NFS scenario, or only validate it (its resolved parameters)."""

def run_iser(scenario_json: str, validate_only: bool = False) -> str:
    """Validate and run one iSER scenario, or only validate it (its resolved parameters)."""

def run_pfs(scenario_json: str, validate_only: bool = False) -> str:
    """Validate and run one parallel file system scenario, or only validate it (its resolved parameters)."""

def run_pfs_migrate(scenario_json: str, validate_only: bool = False) -> str:
    """Estimate one migration (time, bottleneck, what-if table), or only validate it (its resolved parameters)."""

def cancel_runs(on: bool) -> None:
    """Cancel every simulation running in this process, and any started until called with False."""

def runs_progress() -> float:
    """The shares done (0 to 1 each) of the simulations running in this process that can tell (MPI jobs), summed."""

def names() -> dict[str, list[str]]:
    """The names each name-valued scenario key accepts ("verbs.transport", "mpi.osu.bench", ...)."""
