"""Golden outputs of the three simulator models, as a user gets them from the CLI.

The engine, the network and the InfiniBand layers are optimised for speed without changing what
they compute: every record below (bandwidths, latencies, event and packet counts) must stay
bit-identical. A model change that is meant to change results regenerates the fixtures with
``LONGHAUL_REGEN_GOLDEN=1 pytest tests/test_sim_golden.py`` and says why in its commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "golden"

# Small runs that between them take every path of the engine: RC/UC/UD, send/write/read, loss
# (NAKs, go-back-N, timeouts), several queue pairs, both directions, latency ping-pong, parallel
# WAN links, a plain long IB link, SONET framing, cross traffic on the WAN switches (drop-tail,
# credits across them); TCP and MPI share the engine and the fabric.
CASES = {
    "verbs_rc_write": ["sim", "verbs", "--sizes", "2,4096,1M", "--delay-us", "0,1000", "--iterations", "100"],
    "verbs_ud_send": ["sim", "verbs", "--transport", "ud", "--sizes", "2,2048", "--delay-us", "0,1000", "--iterations", "200"],
    "verbs_uc_loss": ["sim", "verbs", "--transport", "uc", "--op", "send", "--sizes", "65536", "--delay-us", "100",
                      "--loss", "0.002", "--iterations", "100"],
    "verbs_rc_read": ["sim", "verbs", "--op", "read", "--sizes", "2,65536", "--delay-us", "100", "--iterations", "100"],
    "verbs_rc_loss_qps": ["sim", "verbs", "--sizes", "65536", "--qps", "4", "--delay-us", "100", "--loss", "0.01",
                          "--iterations", "50"],
    "verbs_rc_read_loss": ["sim", "verbs", "--op", "read", "--sizes", "65536", "--delay-us", "100", "--loss", "0.002",
                           "--iterations", "50"],
    "verbs_lat": ["sim", "verbs", "--test", "lat", "--op", "send", "--sizes", "2,65536", "--delay-us", "100",
                       "--iterations", "50"],
    "verbs_bibw": ["sim", "verbs", "--test", "bibw", "--sizes", "262144", "--qps", "2", "--delay-us", "100",
                   "--iterations", "50"],
    "verbs_s3_links": ["sim", "verbs", "--profile", "s3", "--wan-links", "2", "--qps", "4", "--sizes", "2048",
                       "--distance-km", "10", "--iterations", "200"],
    "verbs_no_extender": ["sim", "verbs", "--extender", "none", "--sizes", "1M", "--distance-km", "50",
                          "--iterations", "20"],
    "verbs_oc192": ["sim", "verbs", "--wan-framing", "oc192", "--sizes", "65536", "--delay-us", "100",
                    "--iterations", "100"],
    "verbs_cross": ["sim", "verbs", "--profile", "usn", "--sizes", "1M", "--distance-km", "100", "--iterations", "10",
                    "--cross-gbps", "5", "--cross-on-off-ms", "2,1", "--queue", "256K"],
    "tcp_10gige": ["sim", "tcp", "--link", "10gige-wan", "--delay-us", "1000", "--streams", "2", "--duration-s", "0.2",
                   "--loss", "0.0001"],
    "tcp_ipoib": ["sim", "tcp", "--delay-us", "100", "--duration-s", "0.2"],
    "mpi_bw": ["sim", "mpi", "osu", "--bench", "bw", "--sizes", "1,65536,1M", "--delay-us", "100"],
    "mpi_bcast": ["sim", "mpi", "osu", "--bench", "bcast", "--sizes", "1024,131072", "--nodes", "4", "--ppn", "2",
                  "--delay-us", "100"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_records_are_bit_identical_to_the_golden_run(cli, name):
    out = cli(*CASES[name], "--format", "json", "--workers", "1", check=True).stdout
    got = json.loads(out)
    path = FIXTURES / f"{name}.json"
    if os.environ.get("LONGHAUL_REGEN_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"regenerated {path.name}")
    want = json.loads(path.read_text())
    assert got == want, f"{name}: records differ from {path.name} (see the module docstring)"
