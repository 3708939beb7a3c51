"""The Python layer's lists of names (argparse choices, sweep axes) against the Rust core's.

Each list repeats names that a Rust enum or table defines. The core names the valid ones when it
refuses an unknown name, so each list is compared with what the core itself says it accepts: a
name added on one side only fails here, not in a user's hands.
"""

from __future__ import annotations

import re

import pytest

from longhaul.errors import UserError
from longhaul.sim import mpi, mpi_tcp, nfs, tcp, verbs

V = dict(transport="rc", op="write", test="bw", size_bytes=8)
OSU = {"bench": "bw", "size_bytes": 8}

# (module, list name, a scenario that gives the core one unknown name where the list's names go)
CASES = [
    (mpi, "BENCHES", lambda: mpi.validate(mpi.scenario(osu={"bench": "zz", "size_bytes": 8}))),
    (mpi, "ALGOS", lambda: mpi.validate(mpi.scenario(osu=OSU, algo="zz"))),
    (mpi, "RNDV", lambda: mpi.validate(mpi.scenario(osu=OSU, rndv_protocol="zz"))),
    (mpi, "TRANSPORTS", lambda: mpi.validate(mpi.scenario(osu=OSU, transport="zz"))),
    (mpi, "APPS", lambda: mpi.validate(mpi.scenario(app={"name": "zz", "class": "B"}))),
    (mpi, "CLASSES", lambda: mpi.validate(mpi.scenario(app={"name": "cg", "class": "Z"}))),
    (mpi, "TESTBEDS", lambda: mpi.validate(mpi.scenario(osu=OSU, testbed="zz"))),
    (mpi, "NODES", lambda: mpi.validate(mpi.scenario(osu=OSU, node="zz"))),
    (mpi, "PLACEMENTS", lambda: mpi.validate(mpi.scenario(osu=OSU, placement="zz"))),
    (mpi, "FABRICS", lambda: mpi.validate(mpi.scenario(osu=OSU, fabric="zz"))),
    (verbs, "TRANSPORTS", lambda: verbs.validate(verbs.scenario(**{**V, "transport": "zz"}))),
    (verbs, "OPS", lambda: verbs.validate(verbs.scenario(**{**V, "op": "zz"}))),
    (verbs, "TESTS", lambda: verbs.validate(verbs.scenario(**{**V, "test": "zz"}))),
    (verbs, "TESTBEDS", lambda: verbs.validate(verbs.scenario(**V, testbed="zz"))),
    (verbs, "HCAS", lambda: verbs.validate(verbs.scenario(**V, hca="zz"))),
    (verbs, "EXTENDERS", lambda: verbs.validate(verbs.scenario(**V, extender="zz"))),
    (verbs, "WAN_FRAMINGS", lambda: verbs.validate(verbs.scenario(**V, wan_framing="zz"))),
    (verbs, "MTUS", lambda: verbs.validate(verbs.scenario(**V, mtu_bytes=3))),
    (tcp, "LINKS", lambda: tcp.validate(tcp.scenario(link="zz"))),
    (tcp, "CCS", lambda: tcp.validate(tcp.scenario(cc="zz"))),
    (tcp, "TESTBEDS", lambda: tcp.validate(tcp.scenario(testbed="zz"))),
    (tcp, "STACKS", lambda: tcp.validate(tcp.scenario(stack="zz"))),
    (tcp, "EXTENDERS", lambda: tcp.validate(tcp.scenario(extender="zz"))),
    (tcp, "RTO_FORMULAS", lambda: tcp.validate(tcp.scenario(rto_formula="zz"))),
    (tcp, "RTO_RESTARTS", lambda: tcp.validate(tcp.scenario(rto_restart="zz"))),
    (tcp, "RTO_SSTHRESHES", lambda: tcp.validate(tcp.scenario(rto_ssthresh="zz"))),
    (tcp, "CWND_GROWTHS", lambda: tcp.validate(tcp.scenario(cwnd_growth="zz"))),
    (nfs, "TRANSPORTS", lambda: nfs.validate(nfs.scenario(transport="zz"))),
    (nfs, "TESTBEDS", lambda: nfs.validate(nfs.scenario(testbed="zz"))),
    (mpi_tcp, "STACK_PROFILES", lambda: mpi_tcp.validate(mpi_tcp.scenario(osu=OSU, stack="zz"))),
]


def core_names(refuse) -> set[str]:
    """The names the core lists when it refuses an unknown one: serde's "expected one of `a`,
    `b`" / "expected `a` or `b`", or the core's own "(valid: a, b, or ...)"."""
    with pytest.raises(UserError) as e:
        refuse()
    msg = str(e.value)
    if "expected" in msg:
        return set(re.findall(r"`([^`]+)`", msg.split("expected", 1)[1]))
    valid = re.search(r"\(valid: ([^)]*)\)", msg)
    assert valid, f"the core's message names no valid values: {msg}"
    return {v.strip() for v in valid.group(1).split(", or ")[0].split(",")}


@pytest.mark.parametrize("module,name,refuse", CASES, ids=[f"{m.__name__.split('.')[-1]}.{n}" for m, n, _ in CASES])
def test_python_names_are_the_cores(module, name, refuse):
    assert {str(v) for v in getattr(module, name)} == core_names(refuse)


def test_mpi_over_tcp_benchmarks_are_a_subset_of_the_osu_names():
    # The OSU enum is shared; MPI over TCP runs only some of its benchmarks.
    osu = core_names(lambda: mpi_tcp.validate(mpi_tcp.scenario(osu={"bench": "zz", "size_bytes": 8})))
    assert set(mpi_tcp.BENCHES) < osu
