"""The paper's figures 2(a)-(c) and 3 from a :class:`~sege_cvx.experiments.paper.StudyResult`."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..arm_sets import Ball  # noqa: E402
from ..confidence import lcb  # noqa: E402

SEGE_COLOR, CLUCB_COLOR = "tab:blue", "tab:green"


def _save(fig, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    # Fixed margins that fit these figures' labels: a computed layout (bbox_inches="tight",
    # tight or constrained layout) draws every figure once more, doubling the time to write it.
    fig.subplots_adjust(left=0.15, right=0.97, bottom=0.14, top=0.91)
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def _band(ax, stages: np.ndarray, mean: np.ndarray, low: np.ndarray, high: np.ndarray,
          color: str, label: str) -> None:
    """Mean over runs as a line, min-max over runs as a shaded band, at the checkpoint stages."""
    ax.fill_between(stages, low, high, color=color, alpha=0.25, linewidth=0,
                    label=f"{label} range over runs")
    ax.plot(stages, mean, color=color, linewidth=1.2, label=f"{label} mean")


def reward_figure(result, threshold: float, optimal: float, color: str, label: str):
    """Stagewise expected reward ``<X_t, theta*>`` with the safety threshold ``b``.

    The band's edges are the extremes over runs and over every stage since the previous
    checkpoint, so a dip below ``b`` between checkpoints shows.
    """
    st = result.stats
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    _band(ax, st.checkpoints, st.reward.mean(axis=1), st.reward_min.min(axis=1),
          st.reward_max.max(axis=1), color, label)
    ax.axhline(threshold, color="red", linestyle="--", linewidth=1, label="safety threshold b")
    ax.axhline(optimal, color="black", linestyle=":", linewidth=1,
               label=r"optimal $\langle X^*, \theta^*\rangle$")
    ax.set_xscale("log")
    ax.set_xlabel("stage t")
    ax.set_ylabel(r"expected reward $\langle X_t, \theta^*\rangle$")
    ax.set_title(f"{label}: stagewise expected reward ({result.n_runs} runs)")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def regret_figure(sege, clucb):
    """Cumulative regret of both algorithms (mean and min-max band)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for result, color, label in ((sege, SEGE_COLOR, "SEGE"), (clucb, CLUCB_COLOR, "CLUCB")):
        st = result.stats
        _band(ax, st.checkpoints, st.regret.mean(axis=1), st.regret.min(axis=1),
              st.regret.max(axis=1), color, label)
    ax.set_xlabel("stage t")
    ax.set_ylabel("cumulative regret")
    ax.set_title("Cumulative regret")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def safe_set_figure(study):
    """Paper Figure 3: ``{x in X : LCB_t(x) >= b}`` of run 0 at several stages."""
    setup = study.setup
    center, radius = setup.arm_set.center, setup.arm_set.radius
    theta_star = np.asarray(setup.theta_star)
    fig, ax = plt.subplots(figsize=(4.6, 4.6))
    grid = np.linspace(-1.0, 1.0, 401) * radius
    gx, gy = np.meshgrid(center[0] + grid, center[1] + grid)
    pts = np.column_stack([gx.ravel(), gy.ravel()])
    inside = (np.linalg.norm(pts - center, axis=1) <= radius).reshape(gx.shape)
    unsafe = ((pts @ theta_star) < setup.threshold).reshape(gx.shape) & inside
    ax.contourf(gx, gy, unsafe.astype(float), levels=[0.5, 1.5], colors=["red"], alpha=0.25)
    angles = np.linspace(0, 2 * np.pi, 400)
    ax.plot(center[0] + radius * np.cos(angles), center[1] + radius * np.sin(angles), "k-", lw=1)
    stages = sorted(study.sege.snapshots)
    cmap = plt.get_cmap("Blues")
    for k, t in enumerate(stages):
        theta_hat, V, r = study.sege.snapshots[t]
        margin = np.where(inside, lcb(pts, theta_hat, V, r).reshape(gx.shape) - setup.threshold,
                          np.nan)
        shade = cmap(0.35 + 0.65 * (k + 1) / len(stages))
        if np.nanmax(margin) >= 0:
            ax.contour(gx, gy, margin, levels=[0.0], colors=[shade], linewidths=1.2)
        ax.plot([], [], color=shade, label=f"t = {t}")
    x_opt = study.sege.optimal_reward  # value; the arm itself from the disk's greedy formula
    arm_opt = center + radius * theta_star / np.linalg.norm(theta_star)
    ax.plot(*setup.baseline_arm, "o", color="tab:blue", label="baseline arm $X_0$")
    ax.plot(*arm_opt, "*", color="black", markersize=12,
            label=rf"$X^*$ (reward {x_opt:.2f})")
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title(r"Safe sets $\{x : \mathrm{LCB}_t(x) \geq b\}$, run 0 (red: unsafe)")
    ax.legend(fontsize=7, loc="lower left")
    return fig


def write_figures(study, out: Path) -> list[Path]:
    """Write fig2a, fig2b, fig2c and (for a disk in the plane) fig3, as PNG and PDF, into ``out``."""
    s = study.setup
    paths = []
    paths += _save(reward_figure(study.sege, s.threshold, study.sege.optimal_reward, SEGE_COLOR,
                                 "SEGE"), out, "fig2a_sege_reward")
    paths += _save(reward_figure(study.clucb, s.threshold, study.clucb.optimal_reward, CLUCB_COLOR,
                                 "CLUCB"), out, "fig2b_clucb_reward")
    paths += _save(regret_figure(study.sege, study.clucb), out, "fig2c_regret")
    if isinstance(s.arm_set, Ball) and s.arm_set.dim == 2 and study.sege.snapshots:
        paths += _save(safe_set_figure(study), out, "fig3_safe_sets")
    return paths
