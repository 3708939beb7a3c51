"""The embedded simulator, from Python: build scenarios, run points and sweeps (the hot loops
run in the Rust core, ``longhaul._core``, with the GIL released)."""
