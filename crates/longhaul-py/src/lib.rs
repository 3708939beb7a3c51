//! Thin PyO3 binding: a scenario as JSON in, a record as JSON out. No logic lives here; bad
//! input comes back as `ValueError` with the one-line message the CLI prints.

use longhaul_sim::engine::{cancel_runs, runs_cancelled, runs_progress};
use longhaul_sim::ScenarioError;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// A run's JSON, or the user's interrupt (the run was cancelled part way: its record means
/// nothing), or bad input as `ValueError`.
fn finish(result: Result<String, ScenarioError>) -> PyResult<String> {
    if runs_cancelled() {
        return Err(PyKeyboardInterrupt::new_err("simulation cancelled"));
    }
    result.map_err(|e| PyValueError::new_err(e.0))
}

/// Cancel (`on = True`) every simulation running in this process, and any started until it is
/// called again with `False`: the CLI's Ctrl-C handler calls it, since a point that runs with
/// the GIL released cannot be interrupted otherwise.
#[pyfunction]
#[pyo3(name = "cancel_runs")]
fn cancel_runs_py(on: bool) {
    cancel_runs(on);
}

/// The shares done (0 to 1 each) of the simulations running in this process that can tell (MPI
/// jobs), summed: read by the CLI's progress bar every quarter second while points run.
#[pyfunction]
#[pyo3(name = "runs_progress")]
fn runs_progress_py() -> f64 {
    runs_progress()
}

/// Validate and run one verbs scenario (JSON text); returns the record as JSON text.
/// `duration_s` stops the run after that much simulated time (a fixed-duration stream).
/// The GIL is released while the simulation runs, so Python threads run points in parallel.
#[pyfunction]
#[pyo3(signature = (scenario_json, duration_s=None))]
fn run_verbs(py: Python<'_>, scenario_json: &str, duration_s: Option<f64>) -> PyResult<String> {
    let text = scenario_json.to_owned();
    detached(py, move || longhaul_sim::run_verbs_json(&text, duration_s))
}

/// Validate a verbs scenario without running it; returns the resolved parameters as JSON.
#[pyfunction]
fn resolve_verbs(scenario_json: &str) -> PyResult<String> {
    let s = longhaul_sim::Scenario::from_json(scenario_json).map_err(|e| PyValueError::new_err(e.0))?;
    let r = s.resolve().map_err(|e| PyValueError::new_err(e.0))?;
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The JSON of what `work` returns, worked out with the GIL released (Python threads run points
/// in parallel), or the user's interrupt, or bad input as `ValueError` ([`finish`]).
fn detached<T: Serialize>(py: Python<'_>, work: impl FnOnce() -> Result<T, ScenarioError> + Send) -> PyResult<String> {
    let to_json = |v: T| serde_json::to_string(&v).map_err(|e| ScenarioError(e.to_string()));
    finish(py.detach(move || work().and_then(to_json)))
}

/// One model's scenario (JSON text) validated, returning its resolved parameters
/// (`validate_only`), or validated and run, returning its record; both as JSON text.
fn run_model<V: Serialize, R: Serialize>(
    py: Python<'_>,
    scenario_json: &str,
    validate_only: bool,
    validate: fn(&str) -> Result<V, ScenarioError>,
    run: fn(&str) -> Result<R, ScenarioError>,
) -> PyResult<String> {
    let text = scenario_json.to_owned();
    if validate_only {
        detached(py, move || validate(&text))
    } else {
        detached(py, move || run(&text))
    }
}

/// Validate and run one TCP (iperf-like) scenario: [`run_model`].
#[pyfunction]
#[pyo3(signature = (scenario_json, validate_only=false))]
fn run_tcp(py: Python<'_>, scenario_json: &str, validate_only: bool) -> PyResult<String> {
    run_model(py, scenario_json, validate_only, longhaul_sim::validate_tcp_json, longhaul_sim::run_tcp_json)
}

/// Validate and run one MPI scenario: [`run_model`]; validated, it returns the library's
/// resolved parameters.
#[pyfunction]
#[pyo3(signature = (scenario_json, validate_only=false))]
fn run_mpi(py: Python<'_>, scenario_json: &str, validate_only: bool) -> PyResult<String> {
    use longhaul_sim::mpi::{run_mpi_json, validate_mpi_json};
    run_model(py, scenario_json, validate_only, validate_mpi_json, run_mpi_json)
}

/// Validate and run one NFS scenario: [`run_model`].
#[pyfunction]
#[pyo3(signature = (scenario_json, validate_only=false))]
fn run_nfs(py: Python<'_>, scenario_json: &str, validate_only: bool) -> PyResult<String> {
    use longhaul_sim::nfs::{run_nfs_json, validate_nfs_json};
    run_model(py, scenario_json, validate_only, validate_nfs_json, run_nfs_json)
}

/// Validate and run one iSER scenario: [`run_model`].
#[pyfunction]
#[pyo3(signature = (scenario_json, validate_only=false))]
fn run_iser(py: Python<'_>, scenario_json: &str, validate_only: bool) -> PyResult<String> {
    use longhaul_sim::iser::{run_iser_json, validate_iser_json};
    run_model(py, scenario_json, validate_only, validate_iser_json, run_iser_json)
}

/// Validate and run one parallel file system scenario: [`run_model`].
#[pyfunction]
#[pyo3(signature = (scenario_json, validate_only=false))]
fn run_pfs(py: Python<'_>, scenario_json: &str, validate_only: bool) -> PyResult<String> {
    use longhaul_sim::pfs::{run_pfs_json, validate_pfs_json};
    run_model(py, scenario_json, validate_only, validate_pfs_json, run_pfs_json)
}

/// Validate and estimate one migration scenario: the time, the bottleneck and the what-if table
/// of `longhaul sim pfs migrate` ([`run_model`]).
#[pyfunction]
#[pyo3(signature = (scenario_json, validate_only=false))]
fn run_pfs_migrate(py: Python<'_>, scenario_json: &str, validate_only: bool) -> PyResult<String> {
    use longhaul_sim::pfs::migrate::{run_migrate_json, validate_migrate_json};
    run_model(py, scenario_json, validate_only, validate_migrate_json, run_migrate_json)
}

/// The names each name-valued scenario key accepts (`verbs.transport`, `tcp.cc`, `mpi.osu.bench`,
/// ...), from the core's own enums and profile tables: the CLI's choices come from here.
#[pyfunction]
fn names() -> BTreeMap<&'static str, Vec<String>> {
    longhaul_sim::names::all()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_verbs, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_verbs, m)?)?;
    m.add_function(wrap_pyfunction!(run_tcp, m)?)?;
    m.add_function(wrap_pyfunction!(run_mpi, m)?)?;
    m.add_function(wrap_pyfunction!(run_nfs, m)?)?;
    m.add_function(wrap_pyfunction!(run_iser, m)?)?;
    m.add_function(wrap_pyfunction!(run_pfs, m)?)?;
    m.add_function(wrap_pyfunction!(run_pfs_migrate, m)?)?;
    m.add_function(wrap_pyfunction!(cancel_runs_py, m)?)?;
    m.add_function(wrap_pyfunction!(runs_progress_py, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
