"""Every figure the package draws of curves over the stages, from the curves table.

A *curve* is one cell's per-checkpoint aggregates over its runs: the columns of a sweep's
``curves.parquet`` (:meth:`RunStatistics.curves <sege_cvx.stages.statistics.RunStatistics.curves>`
gives them for one simulation, :func:`curve_rows`).  :func:`draw_curve` draws one, its mean and
its band (:mod:`.bands`), and every figure draws its curves with it:

* the paper's figures 2(a)-(c) (and each algorithm's reward) of a study,
  :func:`reward_figure`, :func:`regret_figure`, :func:`write_figures`, with Figure 3
  (:func:`safe_set_figure`, the safe sets of run 0, not a curve);
* a sweep's panels (:meth:`SweepResults.plot_regret
  <sege_cvx.experiments.sweeps.store.SweepResults.plot_regret>`, ``plot_reward``, the report);
* the ROFUL paper's Figure 2, a statistic of the curves across problems
  (:func:`across_problems_figure`).

It sets no backend: a file writer that wants no display chooses Agg (the command line does).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ..arm_sets import Ball
from ..confidence import lcb
from ..policies.registry import display_names, policy_color, policy_stem
from ._plotting import LineStyles, legend_columns, legend_labels, legend_rows, title_lines
from ._plotting import legend_below as _legend_below
from ._plotting import save_figure as _save
from ._plotting import single_axes as _axes
from .bands import BAND_NAMES, band_limits, resolve_band

#: The widest legend :func:`~._plotting.single_axes`'s figures hold (inches): centred under the
#: axes, 0.44 of the 5.2-inch figure on its right.
_LEGEND_WIDTH = 4.5
#: The width of :func:`~._plotting.single_axes`'s axes (inches): the widest a title's line is.
_TITLE_WIDTH = 5.2 * (0.97 - 0.15)


def _legend(entries) -> tuple[int, list[str], float]:
    """A legend of ``entries`` in :data:`_LEGEND_WIDTH`: entries a row, the labels (a long one
    wrapped) and its height in rows (:mod:`._plotting`)."""
    ncol = legend_columns(entries, _LEGEND_WIDTH)
    labels = legend_labels(entries, _LEGEND_WIDTH, ncol)
    return ncol, labels, legend_rows(labels, ncol)


def curve_rows(source):
    """The curve columns of ``source``: a simulation's (a
    :class:`~sege_cvx.simulation.SimulationResult`, its statistics'
    :meth:`~sege_cvx.stages.statistics.RunStatistics.curves`), or ``source`` itself, a cell's
    rows of a curves table (a ``pandas.DataFrame`` or a dict of columns, by ``t``)."""
    stats = getattr(source, "stats", None)
    return stats.curves() if stats is not None else source


def draw_curve(ax, t, mean, limits, color, *, linestyle: str = "-", label: str = "",
               band_label: str | None = None, marker: str = ""):
    """One curve on ``ax``: the ``mean`` against the stages ``t`` and, unless ``limits`` is None,
    the band ``limits = (low, high)`` as a light fill with a solid edge (where bands overlap,
    each one's edges still show where it runs; blended fills alone make colours no legend has).
    ``marker`` (``""``: none) marks the line every tenth of the axes' width or so, for a panel
    of more lines than colours and line styles tell apart (:class:`~._plotting.LineStyles`).
    Returns the legend handle: the line, or ``(band, line)``."""
    (line,) = ax.plot(t, mean, color=color, linestyle=linestyle, linewidth=1.2, label=label,
                      marker=marker or None, markevery=0.1, markersize=3.5)
    if limits is None:
        return line
    from matplotlib.colors import to_rgba

    band = ax.fill_between(t, *limits, facecolor=to_rgba(color, 0.12),
                           edgecolor=to_rgba(color, 0.7), linewidth=0.6,
                           label=band_label or f"{label} band")
    return band, line


def draw_cell(ax, rows, kind: str, band: str | None, color, *, linestyle: str = "-",
              label: str = "", band_label: str | None = None, marker: str = ""):
    """:func:`draw_curve` of one cell's curve rows (:func:`curve_rows`): the mean of ``kind``
    (``"regret"`` or ``"reward"``) over its runs and the ``band`` (:mod:`.bands`; labelled
    ``band_label``, default ``"<label> band: <the band's name>"``)."""
    runs = int(np.asarray(rows["runs"])[0])
    return draw_curve(ax, np.asarray(rows["t"]), np.asarray(rows[f"{kind}_mean"]),
                      band_limits(rows, kind, band, runs), color, linestyle=linestyle,
                      label=label, band_label=band_label or f"{label} band: {BAND_NAMES[band]}",
                      marker=marker)


def reward_figure(result, threshold: float, optimal: float, color: str | None, label: str,
                  band: str = "quantile", problem: str | None = None):
    """Stagewise expected reward ``<X_t, theta*>`` with the safety threshold ``b``.

    ``result``: a simulation or a cell's curve rows (:func:`curve_rows`).  The line is the mean
    over runs at the checkpoint stages; the band (:mod:`.bands`) spans the 5 % to 95 %
    quantiles over runs (``band="quantile"``), or (``"minmax"``) the extremes over runs and over
    every stage since the previous checkpoint, so that a dip below ``b`` between checkpoints
    shows; ``"ci"`` and ``None`` as for a sweep's figures.  ``problem``: a name the title
    starts with (at 10 points).  A long ``label`` (an import path) is wrapped in the legend,
    and in the title, over lines of its own (:func:`~._plotting.title_lines`).
    """
    band = resolve_band(band, 1)
    rows = curve_rows(result)
    n_runs = int(np.asarray(rows["runs"])[0])
    ncol, entries, legend_height = _legend(
        [f"{label} mean", *([f"{label} {BAND_NAMES[band]}"] if band else []),
         "safety threshold b", r"optimal $\langle X^*, \theta^*\rangle$"])
    title, size = title_lines(f"{problem + ': ' if problem else ''}{label}:",
                              f"stagewise expected reward ({n_runs} runs)", _TITLE_WIDTH,
                              10 if problem else None)
    fig, ax = _axes(legend_rows=legend_height, title_lines=title.count("\n") + 1)
    color = color or LineStyles.PALETTE[0]
    draw_cell(ax, rows, "reward", band, color, label=entries[0],
              band_label=entries[1] if band else None)
    ax.axhline(threshold, color="red", linestyle="--", linewidth=1, label=entries[-2])
    ax.axhline(optimal, color="black", linestyle=":", linewidth=1, label=entries[-1])
    ax.set_xscale("log")
    ax.set_xlabel("stage t")
    ax.set_ylabel(r"expected reward $\langle X_t, \theta^*\rangle$")
    ax.set_title(title, fontsize=size)
    _legend_below(ax, ncol=ncol)
    return fig


def algorithm_colors(names) -> dict[str, str]:
    """Each algorithm's colour in the study's figures, as in a sweep's (:class:`LineStyles`): its
    registered colour, else one no algorithm of ``names`` is registered with."""
    registered = {name: color for name in names if (color := policy_color(name))}
    styles = LineStyles(registered, names)
    return {name: styles(name, name)[0] for name in names}


def regret_figure(results: dict, band: str = "quantile", colors: dict | None = None,
                  problem: str | None = None):
    """Cumulative regret of each algorithm of ``results`` (name -> a simulation or its curve
    rows, :func:`curve_rows`): mean over runs and a band (:mod:`.bands`): 5-95 % quantiles by
    default; ``colors`` by name (default :func:`algorithm_colors`); ``problem``, a name the
    title starts with (at 10 points).  Long names are wrapped in the legend."""
    band = resolve_band(band, len(results))
    colors = algorithm_colors(list(results)) if colors is None else colors
    per = 2 if band else 1  # legend entries per algorithm: its mean, and its band
    ncol, entries, legend_height = _legend(
        [text for label in results
         for text in (f"{label} mean", *([f"{label} {BAND_NAMES[band]}"] if band else []))])
    counts = sorted({int(np.asarray(curve_rows(result)["runs"])[0])
                     for result in results.values()})
    runs = " and ".join(str(n) for n in counts) + " runs"
    title, size = title_lines(f"{problem}:" if problem else "", f"Cumulative regret ({runs})",
                              _TITLE_WIDTH, 10 if problem else None)
    fig, ax = _axes(legend_rows=legend_height, title_lines=title.count("\n") + 1)
    for k, (label, result) in enumerate(results.items()):
        draw_cell(ax, curve_rows(result), "regret", band, colors[label], label=entries[per * k],
                  band_label=entries[per * k + 1] if band else None)
    ax.set_xlabel("stage t")
    ax.set_ylabel("cumulative regret")
    ax.set_title(title, fontsize=size)
    _legend_below(ax, ncol=ncol)
    return fig


def safe_set_figure(study):
    """Paper Figure 3: ``{x in X : LCB_t(x) >= b}`` of run 0 at several stages.

    The unsafe part of the disk, ``<x, theta*> < b``, is drawn exactly (a circular segment); each
    stage's safe set is shaded, later stages darker, with its boundary drawn.
    """
    setup = study.setup
    center, radius = setup.arm_set.center, setup.arm_set.radius
    theta_star = np.asarray(setup.theta_star)
    fig, ax = _axes(figsize=(4.8, 5.6), bottom=0.24, top=0.91)
    fig.subplots_adjust(left=0.14, right=0.96)
    angles = np.linspace(0, 2 * np.pi, 721)
    circle = center + radius * np.column_stack([np.cos(angles), np.sin(angles)])
    threshold = setup.setting.safety.threshold
    unsafe = circle[circle @ theta_star < threshold]
    if len(unsafe):  # the circle's unsafe arc, closed by the chord on <x, theta*> = b
        ax.fill(unsafe[:, 0], unsafe[:, 1], color="red", alpha=0.2, linewidth=0,
                label=r"unsafe: $\langle x, \theta^*\rangle < b$")
    ax.plot(circle[:, 0], circle[:, 1], "k-", lw=1)
    grid = np.linspace(-1.0, 1.0, 301) * radius  # the contours interpolate between points
    gx, gy = np.meshgrid(center[0] + grid, center[1] + grid)
    pts = np.column_stack([gx.ravel(), gy.ravel()])
    inside = (np.linalg.norm(pts - center, axis=1) <= radius).reshape(gx.shape)
    stages = sorted(study.sege.snapshots)
    cmap = plt.get_cmap("Blues")
    for k, t in enumerate(stages):
        theta_hat, V, r = study.sege.snapshots[t]
        margin = np.where(inside, lcb(pts, theta_hat, V, r).reshape(gx.shape) - threshold,
                          np.nan)
        shade = cmap(0.35 + 0.65 * (k + 1) / len(stages))
        if np.nanmax(margin) >= 0:
            ax.contourf(gx, gy, margin, levels=[0.0, np.inf], colors=[shade], alpha=0.12)
            ax.contour(gx, gy, margin, levels=[0.0], colors=[shade], linewidths=1.2)
        ax.plot([], [], color=shade, label=f"safe set at t = {t}")
    x_opt = study.sege.optimal_reward  # value; the arm itself from the disk's greedy formula
    arm_opt = center + radius * theta_star / np.linalg.norm(theta_star)
    ax.plot(*setup.setting.safe_arm, "o", color="tab:blue", label="baseline arm $X_0$")
    ax.plot(*arm_opt, "*", color="black", markersize=12, label=rf"$X^*$ (reward {x_opt:.2f})")
    pad = 0.06 * radius  # the whole disk, its top and bottom included
    ax.set_xlim(center[0] - radius - pad, center[0] + radius + pad)
    ax.set_ylim(center[1] - radius - pad, center[1] + radius + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title(r"Safe sets $\{x : \mathrm{LCB}_t(x) \geq b\}$, run 0")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=2,
              frameon=False)
    return fig


#: The paper's figure numbers, used for the paper's problem (a figure not in the paper keeps its
#: kind as its name: ``roful_reward``); other problems' files are named after the problem
#: (``<name>_sege_reward``, ...) and their titles name it.
PAPER_FIGURES = {"sege_reward": "fig2a_sege_reward", "clucb_reward": "fig2b_clucb_reward",
                 "regret": "fig2c_regret", "safe_sets": "fig3_safe_sets"}


def _study_curves(study, label: str):
    """Algorithm ``label``'s rows of the study's curves table (its sweep's), or, for a study
    without one, its simulation's (:func:`curve_rows`)."""
    if study.sweep is None:
        return curve_rows(study.results[label])
    curves = study.sweep.curves
    return curves[curves["algorithm"] == label].sort_values("t")


def across_problems_figure(curves, algorithms, *, value=None, ylabel: str = "cumulative regret",
                           title: str = "", floor: float | None = None):
    """Each algorithm's curve across problems: at each stage ``t``, the mean and one standard
    deviation (``numpy.std``) over the problems of ``value(rows)`` (default the cell's
    ``regret_mean``) of its cells in ``curves`` (a curves table, a row per cell and stage), as
    the ROFUL paper's Figure 2 draws ``R_t / sqrt(t)`` over its 30 problems.  ``floor``: the
    least value the statistic can take (the band is cut there: ``R_t >= 0``)."""
    value = value or (lambda rows: rows["regret_mean"].to_numpy())
    colors = algorithm_colors(list(algorithms))
    ncol, entries, legend_height = _legend(
        [text for name in algorithms for text in (f"{name} mean", f"{name} \u00b1 1 sd")])
    fig, ax = _axes(legend_rows=legend_height)
    for k, name in enumerate(algorithms):
        mine = curves[curves["algorithm"] == name]
        per_problem = [rows.sort_values("t") for _, rows in mine.groupby("problem", sort=False)]
        t = per_problem[0]["t"].to_numpy()
        values = np.stack([value(rows) for rows in per_problem])
        mean, sd = values.mean(axis=0), values.std(axis=0)
        low = mean - sd if floor is None else np.maximum(mean - sd, floor)
        draw_curve(ax, t, mean, (low, mean + sd), colors[name], label=entries[2 * k],
                   band_label=entries[2 * k + 1])
    ax.set_xlabel("stage t")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    _legend_below(ax, ncol=ncol)
    return fig


def write_figures(study, out: Path) -> list[Path]:
    """Write each algorithm's reward figure, the regret figure and (for SEGE on a disk in the
    plane) the safe sets, as PNG and PDF, into ``out``.

    The paper's problem gets the paper's names (``fig2a_sege_reward``, ``fig2b_clucb_reward``,
    ``fig2c_regret``, ``fig3_safe_sets``; ROFUL, not in the paper: ``roful_reward``); another
    problem ``<name>_sege_reward``, ``<name>_clucb_reward``, ``<name>_roful_reward``,
    ``<name>_regret``, ``<name>_safe_sets``, with its name in the titles.
    """
    s = study.setup
    paper = s.name == "paper"

    def name(kind: str) -> str:
        return PAPER_FIGURES.get(kind, kind) if paper else f"{s.name or 'problem'}_{kind}"

    problem = None if paper else s.name or None  # the start of each figure's title

    def titled(fig):
        if problem:
            ax = fig.axes[0]
            ax.set_title(f"{problem}: {ax.get_title()}", fontsize=10)
        return fig

    paths = []
    colors = algorithm_colors(list(study.results))
    curves = {label: _study_curves(study, label) for label in study.results}
    shown = display_names(study.results)  # import paths by their registered names
    for label, result in study.results.items():
        paths += _save(reward_figure(curves[label], s.setting.safety.threshold,
                                     result.optimal_reward, colors[label], shown[label],
                                     problem=problem),
                       out, name(f"{policy_stem(label)}_reward"))
    paths += _save(regret_figure({shown[k]: v for k, v in curves.items()},
                                 colors={shown[k]: v for k, v in colors.items()},
                                 problem=problem),
                   out, name("regret"))
    if isinstance(s.arm_set, Ball) and s.arm_set.dim == 2 and study.sege and study.sege.snapshots:
        paths += _save(titled(safe_set_figure(study)), out, name("safe_sets"))
    return paths

