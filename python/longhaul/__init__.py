"""longhaul: a lab for HPC communication between clusters joined by long-haul links.

The Rust core (``longhaul._core``) runs scenarios; this package is the user's API:
scenarios, sweeps, results, analysis, plots, reports and the ``longhaul`` command.
"""

__version__ = "0.1.0"
