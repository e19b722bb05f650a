"""The paper's figures 2(a)-(c) and 3 (and ROFUL's reward, when a study runs it) from a
:class:`~sege_cvx.experiments.paper.StudyResult`."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..arm_sets import Ball  # noqa: E402
from ..confidence import lcb  # noqa: E402
from ..policies.registry import policy_color, policy_stem  # noqa: E402
from ._plotting import LEGEND_COLUMNS, LineStyles  # noqa: E402
from ._plotting import legend_below as _legend_below  # noqa: E402
from ._plotting import save_figure as _save  # noqa: E402
from ._plotting import single_axes as _axes  # noqa: E402
from .bands import BAND_NAMES, band_limits, check_band  # noqa: E402


def reward_figure(result, threshold: float, optimal: float, color: str | None, label: str,
                  band: str = "quantile"):
    """Stagewise expected reward ``<X_t, theta*>`` with the safety threshold ``b``.

    The line is the mean over runs at the checkpoint stages; the band (:mod:`.bands`) spans the
    5 % to 95 % quantiles over runs (``band="quantile"``), or (``"minmax"``) the extremes over
    runs and over every stage since the previous checkpoint, so that a dip below ``b`` between
    checkpoints shows; ``"ci"`` and ``None`` as for a sweep's figures.
    """
    agg = result.stats.aggregates()
    limits = band_limits(agg, "reward", band, result.n_runs)
    fig, ax = _axes()
    stages = agg["checkpoints"]
    color = color or LineStyles.PALETTE[0]
    if limits is not None:
        ax.fill_between(stages, *limits, color=color, alpha=0.25, linewidth=0,
                        label=f"{label} {BAND_NAMES[band]}")
    ax.plot(stages, agg["reward_mean"], color=color, linewidth=1.2, label=f"{label} mean")
    ax.axhline(threshold, color="red", linestyle="--", linewidth=1, label="safety threshold b")
    ax.axhline(optimal, color="black", linestyle=":", linewidth=1,
               label=r"optimal $\langle X^*, \theta^*\rangle$")
    ax.set_xscale("log")
    ax.set_xlabel("stage t")
    ax.set_ylabel(r"expected reward $\langle X_t, \theta^*\rangle$")
    title = f"{label}: stagewise expected reward ({result.n_runs} runs)"
    if len(title) <= 48:
        ax.set_title(title)
    else:  # a long name (an import path): on its own line, smaller, not clipped
        ax.set_title(f"{label}:\nstagewise expected reward ({result.n_runs} runs)", fontsize=9)
    _legend_below(ax)
    return fig


def algorithm_colors(names) -> dict[str, str]:
    """Each algorithm's colour in the study's figures, as in a sweep's (:class:`LineStyles`): its
    registered colour, else one no algorithm of ``names`` is registered with."""
    registered = {name: color for name in names if (color := policy_color(name))}
    styles = LineStyles(registered, names)
    return {name: styles(name, name)[0] for name in names}


def regret_figure(results: dict, band: str = "quantile", colors: dict | None = None):
    """Cumulative regret of each algorithm of ``results`` (name -> ``SimulationResult``): mean
    over runs and a band (:mod:`.bands`): 5-95 % quantiles by default; ``colors`` by name
    (default :func:`algorithm_colors`)."""
    check_band(band)
    colors = algorithm_colors(list(results)) if colors is None else colors
    fig, ax = _axes(legend_rows=math.ceil(2 * len(results) / LEGEND_COLUMNS))
    for label, result in results.items():
        color = colors[label]
        agg = result.stats.aggregates()
        limits = band_limits(agg, "regret", band, result.n_runs)
        if limits is not None:
            ax.fill_between(agg["checkpoints"], *limits, color=color, alpha=0.25, linewidth=0,
                            label=f"{label} {BAND_NAMES[band]}")
        ax.plot(agg["checkpoints"], agg["regret_mean"], color=color, linewidth=1.2,
                label=f"{label} mean")
    ax.set_xlabel("stage t")
    ax.set_ylabel("cumulative regret")
    counts = sorted({result.n_runs for result in results.values()})
    runs = " and ".join(str(n) for n in counts) + " runs"
    ax.set_title(f"Cumulative regret ({runs})")
    _legend_below(ax)
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

    def titled(fig):
        if not paper and s.name:
            ax = fig.axes[0]
            ax.set_title(f"{s.name}: {ax.get_title()}", fontsize=10)
        return fig

    paths = []
    colors = algorithm_colors(list(study.results))
    for label, result in study.results.items():
        paths += _save(titled(reward_figure(result, s.setting.safety.threshold,
                                            result.optimal_reward,
                                            colors[label], label)),
                       out, name(f"{policy_stem(label)}_reward"))
    paths += _save(titled(regret_figure(study.results, colors=colors)), out, name("regret"))
    if isinstance(s.arm_set, Ball) and s.arm_set.dim == 2 and study.sege and study.sege.snapshots:
        paths += _save(titled(safe_set_figure(study)), out, name("safe_sets"))
    return paths

