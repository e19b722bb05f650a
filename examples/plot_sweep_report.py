"""
A sweep and its report
======================

A study spec names problems, algorithms with a grid of their parameters, and the runs; every
cell (problem x algorithm x grid point) plays the same seeded runs. :func:`sege_cvx.run_sweep`
writes ``runs.parquet`` (one row per run), ``curves.parquet`` (one row per cell and
checkpoint) and ``manifest.json``; rerunning resumes, and the numbers do not depend on the
workers or shards. :func:`sege_cvx.load_results` reads them back as pandas tables.

The same from the command line: ``sege-cvx sweep spec.toml --out DIR`` and ``sege-cvx report
DIR``.
"""

import tempfile
from pathlib import Path

import sege_cvx as sc

spec = {
    "seed": 0, "runs": 12, "horizon": 1500,
    "problems": [{"name": "paper"}, {"name": "ellipsoid"}],
    "algorithms": [{"name": "SEGE", "grid": {"c": [0.25, 1.0]}},
                   {"name": "CLUCB"}],
}
out = Path(tempfile.mkdtemp()) / "sweep"
sc.run_sweep(spec, out, workers=1, progress=False)
results = sc.load_results(out)

# %%
# The table: per cell, the mean final regret (with its standard error) and the safety counts.

table = results.table()
print(table[["runs", "regret_mean", "regret_se", "violating_runs"]].to_string())

# %%
# The figure: mean regret per cell with a band over the runs, one panel per problem.

fig = results.plot_regret(by="problem", band="quantile")
