"""The core's names (``_core.names()``): every name it lists for a scenario key is one the core
accepts there, and a name it does not list is refused. The CLI's choices and the sweep axes are
these lists (longhaul.sim.*: TRANSPORTS, CCS, ...), so they cannot drift from the core."""

from __future__ import annotations

import pytest

from longhaul import _core
from longhaul.errors import UserError
from longhaul.sim import core, iser, mpi, nfs, pfs, pfs_migrate, tcp, verbs

V = dict(transport="rc", op="write", test="bw", size_bytes=8)
OSU = {"bench": "bw", "size_bytes": 8}

# key -> validate a scenario that has `name` at that key
CASES = {
    "verbs.transport": lambda n: verbs.validate(verbs.scenario(**{**V, "transport": n, "op": "send"})),
    "verbs.op": lambda n: verbs.validate(verbs.scenario(**{**V, "op": n})),
    "verbs.test": lambda n: verbs.validate(verbs.scenario(**{**V, "test": n})),
    "verbs.testbed": lambda n: verbs.validate(verbs.scenario(**V, testbed=n)),
    "verbs.hca": lambda n: verbs.validate(verbs.scenario(**V, hca=n)),
    "verbs.extender": lambda n: verbs.validate(verbs.scenario(**V, extender=n)),
    "verbs.wan_framing": lambda n: verbs.validate(verbs.scenario(**V, wan_framing=n)),
    "verbs.mtu_bytes": lambda n: verbs.validate(verbs.scenario(**V, hca="connectx", mtu_bytes=int(n))),
    "tcp.link": lambda n: tcp.validate(tcp.scenario(link=n)),
    "tcp.cc": lambda n: tcp.validate(tcp.scenario(cc=n)),
    "tcp.testbed": lambda n: tcp.validate(tcp.scenario(testbed=n)),
    "tcp.stack": lambda n: tcp.validate(tcp.scenario(stack=n)),
    "tcp.extender": lambda n: tcp.validate(tcp.scenario(extender=n)),
    "tcp.rto_formula": lambda n: tcp.validate(tcp.scenario(rto_formula=n)),
    "tcp.rto_restart": lambda n: tcp.validate(tcp.scenario(rto_restart=n)),
    "tcp.rto_ssthresh": lambda n: tcp.validate(tcp.scenario(rto_ssthresh=n)),
    "tcp.cwnd_growth": lambda n: tcp.validate(tcp.scenario(cwnd_growth=n)),
    "nfs.transport": lambda n: nfs.validate(nfs.scenario(transport=n)),
    "nfs.testbed": lambda n: nfs.validate(nfs.scenario(testbed=n)),
    "iser.op": lambda n: iser.validate(iser.scenario(op=n)),
    "iser.testbed": lambda n: iser.validate(iser.scenario(testbed=n)),
    "pfs.variant": lambda n: pfs.validate(pfs.scenario(variant=n)),
    "pfs.testbed": lambda n: pfs.validate(pfs.scenario(testbed=n)),
    "pfs.migrate.method": lambda n: pfs_migrate.validate(pfs_migrate.scenario(method=n)),
    "pfs.migrate.nodes_at": lambda n: pfs_migrate.validate(pfs_migrate.scenario(nodes_at=n)),
    "pfs.network": lambda n: pfs.validate(pfs.scenario(network=n)),
    "pfs.transport": lambda n: pfs.validate(pfs.scenario(network="packet", transport=n)),
    "mpi.osu.bench": lambda n: mpi.validate(mpi.scenario(osu={"bench": n, "size_bytes": 8})),
    "mpi.algo": lambda n: mpi.validate(mpi.scenario(osu=OSU, algo=n)),
    "mpi.rndv_protocol": lambda n: mpi.validate(mpi.scenario(osu=OSU, rndv_protocol=n)),
    "mpi.library": lambda n: mpi.validate(mpi.scenario(osu=OSU, library=n)),
    "mpi.transport": lambda n: mpi.validate(mpi.scenario(osu=OSU, transport=n)),
    "mpi.network": lambda n: mpi.validate(mpi.scenario(osu=OSU, network=n)),
    "mpi.app.name": lambda n: mpi.validate(mpi.scenario(app={"name": n, "class": "B"})),
    "mpi.app.class": lambda n: mpi.validate(mpi.scenario(app={"name": "cg", "class": n})),
    "mpi.testbed": lambda n: mpi.validate(mpi.scenario(osu=OSU, testbed=n)),
    "mpi.node": lambda n: mpi.validate(mpi.scenario(osu=OSU, node=n)),
    "mpi.placement": lambda n: mpi.validate(mpi.scenario(osu=OSU, placement=n)),
    "mpi.fabric": lambda n: mpi.validate(mpi.scenario(osu=OSU, fabric=n)),
    "mpi.stack": lambda n: mpi.validate(mpi.scenario(osu=OSU, transport="tcp", stack=n)),
}


def _refusal(validate, name: str) -> str | None:
    try:
        validate(name)
    except UserError as err:
        return str(err)
    return None


def _unknown(message: str | None, name: str) -> bool:
    """Whether the core refused `name` as not one of the key's names (its words, or serde's)."""
    return message is not None and any(
        said in message for said in (f"unknown '{name}'", f"unknown variant `{name}`", f"{name} is not"))


def test_every_key_of_the_core_is_checked_here():
    assert set(_core.names()) == set(CASES)


@pytest.mark.parametrize("key", sorted(CASES))
def test_the_core_accepts_each_name_it_lists_and_refuses_others(key):
    validate = CASES[key]
    names = core.names(key)
    assert names and len(set(names)) == len(names), names
    # A listed name may still meet another check (an algorithm for another benchmark), never "unknown".
    for name in names:
        said = _refusal(validate, name)
        assert not _unknown(said, name), said
    unlisted = "9" if key.endswith("_bytes") else "zz"
    said = _refusal(validate, unlisted)
    assert _unknown(said, unlisted), f"{key}: the unlisted '{unlisted}' was not refused as unknown ({said})"


def test_mpi_over_tcp_is_one_of_the_mpi_transports():
    assert "tcp" in mpi.TRANSPORTS and {"rc", "uc", "ud"} < set(mpi.TRANSPORTS)
