"""
A sweep on a Dask cluster
=========================

The same sweep runs on any Dask cluster: pass a ``distributed.Client`` (or ``sege-cvx sweep
spec.toml --out DIR --scheduler tcp://HOST:8786``). The cells are split into shards of runs,
each a pure function of its seeds, so the results are bitwise those of one local process. Here
a two-worker ``LocalCluster`` in this process (``processes=False``, so that the example also
runs as a plain script) stands in for a real cluster, and the two results are compared.

A Dask cluster runs whatever code is sent to it: connect only to clusters you control.
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from distributed import Client, LocalCluster

import sege_cvx as sc

spec = {"seed": 3, "runs": 8, "horizon": 1000, "problems": [{"name": "paper"}],
        "algorithms": [{"name": "SEGE"}, {"name": "CLUCB"}, {"name": "ROFUL"}]}
tmp = Path(tempfile.mkdtemp())

with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, Client(cluster) as client:
    sc.run_sweep(spec, tmp / "dask", client=client, shard_runs=4,
                 progress=False)
sc.run_sweep(spec, tmp / "local", workers=1, progress=False)

on_dask, local = sc.load_results(tmp / "dask"), sc.load_results(tmp / "local")
pd.testing.assert_frame_equal(on_dask.runs.drop(columns="wall_seconds"),
                              local.runs.drop(columns="wall_seconds"),
                              check_exact=True)
print("per-run results identical on the cluster and locally:",
      len(local.runs), "runs")

# %%
# Per-run final regret, by algorithm (one point per run).

fig, ax = plt.subplots(figsize=(5, 3.5))
names = []
by_algorithm = on_dask.runs.groupby("algorithm", sort=False)["regret"]
for k, (name, regret) in enumerate(by_algorithm):
    ax.plot([k] * len(regret), regret, "o", alpha=0.6)
    names.append(name)
ax.set_xticks(range(len(names)), names)
ax.set_ylabel("regret at t = 1000")
fig.tight_layout()
