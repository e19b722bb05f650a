"""Deprecated: moved to :mod:`sege_cvx.experiments.sweeps.store` (:func:`load_results`,
:class:`SweepResults`, :class:`ResultsError`) and :mod:`sege_cvx.experiments.sweeps.report`
(:func:`write_report`, :func:`report_table`, :func:`report_markdown` and their helpers).  Kept
for one release: each public name still resolves here, with a ``DeprecationWarning`` naming its
new module."""

from .._deprecation import deprecated_names, moved

_HOMES = {
    "CELL_COLUMNS": "store", "MAX_MANIFEST_BYTES": "store", "MAX_TABLE_BYTES": "store",
    "RESULT_FILES": "store", "ResultsError": "store", "SweepResults": "store",
    "load_results": "store",
    "REPORT_FILES": "report", "check_report_dir": "report", "check_stages": "report",
    "markdown_table": "report", "mean_pm_se": "report", "report_markdown": "report",
    "report_table": "report", "write_report": "report",
}

__all__ = sorted(_HOMES)

# BANDS was deprecated before the move (experiments.bands replaced it).
__getattr__ = deprecated_names(__name__, moved({
    **{name: f"sege_cvx.experiments.sweeps.{home}" for name, home in _HOMES.items()},
    "BANDS": "sege_cvx.experiments.bands",
}))
