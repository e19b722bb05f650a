"""The bands every figure draws around a mean over runs: one vocabulary for the study's figures
(:mod:`.figures`) and a sweep's (:meth:`~.sweeps.store.SweepResults.plot_regret`, the report).

* ``"quantile"``: the 5 % to 95 % quantiles over runs at each checkpoint;
* ``"minmax"``: the range over runs (for the expected reward, over every stage since the
  previous checkpoint too, so that no dip between checkpoints is lost);
* ``"ci"``: the mean's 95 % confidence interval, ``mean +- 1.96 sd / sqrt(runs)``;
* ``None``: no band.

Both figure pipelines read the same per-checkpoint aggregates
(:meth:`~sege_cvx.stages.statistics.RunStatistics.aggregates`; the rows of
``curves.parquet`` hold the same columns), through :func:`band_limits`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: Every band a figure may draw.
BANDS = ("quantile", "minmax", "ci", None)
#: How legends name each band.
BAND_NAMES = {"quantile": "5-95 % of runs", "minmax": "range over runs",
              "ci": "95 % confidence interval of the mean", None: "no band"}


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
    if band is None:
        return None
    if band == "quantile":
        return columns[f"{kind}_q05"], columns[f"{kind}_q95"]
    if band == "minmax":
        return ((columns["regret_min"], columns["regret_max"]) if kind == "regret"
                else (columns["reward_window_min"], columns["reward_window_max"]))
    mean = columns[f"{kind}_mean"]
    half = 1.96 * (columns[f"{kind}_sd"] / math.sqrt(runs))
    return mean - half, mean + half
