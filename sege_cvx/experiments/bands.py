"""The bands every figure draws around a mean over runs: one vocabulary for the study's figures
(:mod:`.figures`) and a sweep's (:meth:`~.sweeps.store.SweepResults.plot_regret`, the report).

* ``"quantile"``: the 5 % to 95 % quantiles over runs at each checkpoint;
* ``"minmax"``: the range over runs (for the expected reward, over every stage since the
  previous checkpoint too, so that no dip between checkpoints is lost);
* ``"ci"``: the mean's 95 % confidence interval, ``mean +- 1.96 sd / sqrt(runs)``, cut to the
  range over runs (the mean lies in it: a cumulative regret's interval never goes below the
  runs' least regret, a reward's never above their largest reward);
* ``None``: no band;
* ``"auto"`` (a sweep's figures' default): ``"quantile"`` where a panel draws at most
  :data:`AUTO_QUANTILE_CELLS` cells, else ``"ci"``: the spread of runs of many cells overlaps
  until no band can be read, while their means' intervals mostly stay apart.

Both figure pipelines read the same per-checkpoint aggregates
(:meth:`~sege_cvx.stages.statistics.RunStatistics.aggregates`; the rows of
``curves.parquet`` hold the same columns), through :func:`band_limits`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

#: Every band a figure may draw.
BANDS = ("auto", "quantile", "minmax", "ci", None)
#: ``"auto"`` draws quantile bands up to this many cells in a panel, confidence intervals above.
AUTO_QUANTILE_CELLS = 2
#: How legends name each band.
BAND_NAMES = {"quantile": "5-95 % of runs", "minmax": "range over runs",
              "ci": "95 % confidence interval of the mean", None: "no band"}


def resolve_band(band, cells: int) -> str | None:
    """The band a figure of at most ``cells`` cells a panel draws for ``band`` (``"auto"``
    resolved; any other checked and returned)."""
    check_band(band)
    if band == "auto":
        return "quantile" if cells <= AUTO_QUANTILE_CELLS else "ci"
    return band


def check_band(band) -> str | None:
    """``band`` if it is one of :data:`BANDS`; a one-line ValueError otherwise."""
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(map(repr, BANDS))}; got {band!r}")
    return band


def band_limits(columns: Mapping, kind: str, band: str | None, runs: int):
    """The band's lower and upper edges at each checkpoint, for ``kind`` ``"regret"`` or
    ``"reward"``, from aggregates ``columns`` (a dict of arrays or a table's columns) over
    ``runs`` runs; None for ``band=None``."""
    check_band(band)
    if band == "auto":
        raise ValueError("band_limits needs a band resolved for its figure (resolve_band)")
    if band is None:
        return None
    if band == "quantile":
        return columns[f"{kind}_q05"], columns[f"{kind}_q95"]
    if band == "minmax":
        return ((columns["regret_min"], columns["regret_max"]) if kind == "regret"
                else (columns["reward_window_min"], columns["reward_window_max"]))
    mean = np.asarray(columns[f"{kind}_mean"], dtype=float)
    half = 1.96 * (np.asarray(columns[f"{kind}_sd"], dtype=float) / math.sqrt(runs))
    low, high = band_limits(columns, kind, "minmax", runs)
    return np.maximum(mean - half, low), np.minimum(mean + half, high)
