"""A store as users load it: pandas reads the runs of one kind from the store's kinds/<kind>/
folder, with run id, kind and label as columns, in a store that mixes kinds (polars'
``scan_parquet`` reads the same files; polars is not a dependency: docs/reference/store.md)."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq

from longhaul.results import Store


def test_one_kind_reads_directly_from_a_mixed_store(cli, tmp_path):
    store = tmp_path / "st"
    verbs = '{"distance_km": [0, 40], "size_bytes": 65536, "test": ["bw", "lat"]}'
    cli("sweep", "verbs", "--grid", verbs, "--store", str(store), "--label", "wan", check=True)
    cli("sweep", "tcp", "--grid", '{"delay_us": [0], "duration_s": 0.1}', "--store", str(store), check=True)
    df = pd.read_parquet(store / "kinds" / "verbs")
    assert len(df) == 4 and list(df.columns[:3]) == ["run_id", "kind", "label"]
    assert set(df["kind"]) == {"verbs"} and set(df["label"]) == {"wan"} and df["run_id"].nunique() == 4
    # a latency run leaves bw_MBps empty and a bandwidth run lat_us: one type per column all the same
    assert df["bw_MBps"].notna().sum() == 2 and df["lat_us"].notna().sum() == 2
    assert set(pd.read_parquet(store / "kinds" / "tcp")["kind"]) == {"tcp"}
    # the same rows as the store's own reader gives
    recs = Store(store).records(kind="verbs")
    assert sorted(i[:12] for i in df["run_id"]) == sorted(r["run_id"][:12] for r in recs)
    # a run's records come back without the run columns: cached and computed records are alike
    again = json.loads(cli("sweep", "verbs", "--grid", verbs, "--store", str(store), "--label", "wan", "--format",
                           "json", check=True).stdout)
    assert "run_id" not in again[0] and "kind" not in again[0]
    # removing a run removes it from its kind's folder too
    gone = df["run_id"].iloc[0]
    cli("results", "rm", gone[:12], "--store", str(store), check=True)
    assert gone not in set(pd.read_parquet(store / "kinds" / "verbs")["run_id"])
    assert pq.read_schema(store / "runs" / f"{df['run_id'].iloc[1]}.parquet").names[:3] == ["run_id", "kind", "label"]


def test_ls_shows_each_runs_parameters(cli, tmp_path):
    store = str(tmp_path / "st")
    cli("sweep", "verbs", "--grid", '{"distance_km": [0, 40], "size_bytes": 4096}', "--store", store, check=True)
    cli("sweep", "mpi", "--grid", '{"osu": {"bench": "bw", "size_bytes": 8192}, "delay_us": 100}', "--store", store,
        check=True)
    rows = json.loads(cli("results", "ls", "--store", store, "--format", "json", check=True).stdout)
    assert {r["params"] for r in rows} == {"osu.bench=bw osu.size_bytes=8192 delay_us=100",
                                           "fibre_km=0 op=write size_bytes=4096 test=bw transport=rc",
                                           "fibre_km=40 op=write size_bytes=4096 test=bw transport=rc"}
    table = cli("results", "ls", "--store", store, check=True).stdout
    assert "fibre_km=40 op=write" in table and "software_version" not in table   # that one is in csv and json
