r"""The ROFUL paper's Figures 2a and 2b through the library, with its authors' problems and noise.

Hutchinson, Turan and Alizadeh, "Directional Optimism for Safe Linear Bandits" (AISTATS 2024),
Section 6: 30 random problems in ``d = 2``, each a :class:`~sege_cvx.StarSet` of ``K = 10``
unit directions and radius 1, ``theta*`` and ``gamma*`` uniform in ``[-1, 1]^2``, the limit
``c`` uniform in ``[0.25, 1]`` (Figure 2a, 50,000 stages) or ``[0.05, 0.25]`` (Figure 2b,
100,000 stages), noise sd 0.1 on the reward and on the constraint, ``lam = 1``,
``delta = 0.01``, ``S = sqrt(2)``.  ROFUL and GNOP play each problem with the same noise.

:func:`authors_trials` is their generator (``slb_short.py``, ``slb_long.py`` of
``shutch1/Directional-Optimism-for-Safe-Linear-Bandits``) call for call: one
``numpy.random.default_rng(0)`` draws each trial's ``theta*``, ``gamma*``, ``c``, directions
(redrawn until one has a positive reward) and then its ``(T, 2)`` standard normal noise, which
the library's bandit replays (:class:`~sege_cvx.LinearBandit` ``draws=``).  So every trial here
is the authors' trial, and its runs can be compared with theirs stage by stage.

Their figure plots ``R_t / sqrt(t)``, the mean over the 30 trials with a band of one standard
deviation (``numpy.std``); :func:`run_roful_study` records it on a grid of stages, and
:func:`write_roful_study` writes the figure, a table of the trials and ``summary.json``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validation import as_positive_int
from ..arm_sets.star import StarSet
from ..problems.problem import BanditProblem
from ..safety import LinearConstraint
from ..simulation.engine import LinearBandit, simulate

#: The two figures: horizon and the range of the limit ``c``.
FIGURES = {"2a": (50_000, (0.25, 1.0)), "2b": (100_000, (0.05, 0.25))}
#: The paper's constants (``slb_short.py``).
N_TRIALS, DIM, N_DIRECTIONS, RADIUS, NOISE_SD, LAM, DELTA = 30, 2, 10, 1.0, 0.1, 1.0, 0.01
#: Stages at which ``R_t`` is recorded (a linear grid, as their plot's axis) besides the horizon.
GRID_POINTS = 500


@dataclass(frozen=True)
class AuthorsTrial:
    """One trial of the authors' experiment: its problem and its standard normal noise
    ``(T, 2)`` (reward's, constraint's).

    Examples
    --------
    >>> trial = authors_trials("2a", 1)[0]
    >>> trial.problem.arm_set, trial.draws.shape, round(trial.problem.constraint.limit, 4)
    (StarSet(10 directions in R^2, radius=1.0), (50000, 2), 0.86)
    """

    problem: BanditProblem
    draws: np.ndarray


def authors_trials(figure: str = "2a", n_trials: int = N_TRIALS) -> list[AuthorsTrial]:
    """The first ``n_trials`` trials of the authors' Figure ``figure`` ("2a" or "2b"), drawn as
    their scripts draw them (module docstring)."""
    if figure not in FIGURES:
        raise ValueError(f"figure must be one of {sorted(FIGURES)}, got {figure!r}")
    n_trials = as_positive_int("n_trials", n_trials)
    horizon, (low, high) = FIGURES[figure]
    rng = np.random.default_rng(seed=0)
    trials = []
    for trial in range(n_trials):
        theta = rng.uniform(-1, 1, (DIM, 1))
        gamma = rng.uniform(-1, 1, (DIM, 1))
        limit = rng.uniform(low, high)
        while True:
            temp = rng.normal(0, 1, size=(N_DIRECTIONS, DIM))
            directions = temp / np.linalg.norm(temp, axis=1)[:, np.newaxis]
            if np.any(directions @ theta > 0):
                break
        draws = rng.standard_normal((horizon, 2))
        problem = BanditProblem.from_truth(
            StarSet(directions, RADIUS), theta_star=theta.ravel(), safe_arm=np.zeros(DIM),
            S=math.sqrt(DIM), noise_sd=NOISE_SD,
            constraint=LinearConstraint(float(limit), gamma_star=gamma.ravel(),
                                        noise_sd=NOISE_SD),
            name=f"trial{trial}", description=f"ROFUL paper Figure {figure}, trial {trial}")
        trials.append(AuthorsTrial(problem, draws))
    return trials


@dataclass
class RofulStudy:
    """What :func:`run_roful_study` computed.

    Attributes
    ----------
    figure : str
    horizon : int
    algorithms : tuple of str
    stages : ndarray of int, shape (G,)
        The grid of stages ``R_t`` was recorded at (the horizon last).
    regret : dict of str to ndarray, shape (n_trials, G)
        Per algorithm: each trial's cumulative regret at the grid's stages.
    violations, fallbacks : dict of str to ndarray of int, shape (n_trials,)
        Per algorithm: each trial's stages that broke the constraint, and arms replaced by the
        safe arm for want of a certificate.
    limits, optima : ndarray, shape (n_trials,)
        Each trial's ``c`` and its best reward within the constraint.
    seconds : float
        Wall time of the simulations.

    Examples
    --------
    >>> study = run_roful_study("2a", n_trials=2, horizon=100)
    >>> study.regret["ROFUL"].shape, study.stages[-1], int(study.violations["GNOP"].sum())
    ((2, 100), np.int64(100), 0)
    """

    figure: str
    horizon: int
    algorithms: tuple[str, ...]
    stages: np.ndarray
    regret: dict[str, np.ndarray] = field(default_factory=dict)
    violations: dict[str, np.ndarray] = field(default_factory=dict)
    fallbacks: dict[str, np.ndarray] = field(default_factory=dict)
    limits: np.ndarray | None = None
    optima: np.ndarray | None = None
    seconds: float = 0.0

    def scaled(self, algorithm: str) -> np.ndarray:
        """``R_t / sqrt(t)`` per trial, shape ``(n_trials, G)``: what their figure plots."""
        return self.regret[algorithm] / np.sqrt(self.stages)

    def summary(self) -> dict:
        """JSON-ready: per algorithm the mean and sd (``numpy.std``, as their figure) of
        ``R_T / sqrt(T)`` over the trials, the mean ``R_T``, violations and fallbacks."""
        out = {"figure": self.figure, "horizon": self.horizon,
               "trials": int(len(self.limits)), "seconds": round(self.seconds, 3),
               "algorithms": {}}
        for name in self.algorithms:
            final = self.scaled(name)[:, -1]
            out["algorithms"][name] = {
                "R_T_over_sqrt_T_mean": float(final.mean()),
                "R_T_over_sqrt_T_sd": float(final.std()),
                "R_T_mean": float(self.regret[name][:, -1].mean()),
                "violating_stages": int(self.violations[name].sum()),
                "fallbacks": int(self.fallbacks[name].sum())}
        return out


def run_roful_study(figure: str = "2a", *, n_trials: int = N_TRIALS, horizon: int | None = None,
                    algorithms: str | Sequence[str] = ("ROFUL", "GNOP"),
                    workers: int | None = None) -> RofulStudy:
    """Play ``algorithms`` on the authors' trials of Figure ``figure`` (:func:`authors_trials`),
    each trial with its own noise replayed (and a policy that draws, SafeTS, seeded by the
    trial's index), ``workers`` simulations at a time (threads: the
    compiled stages release the GIL; default as many as numba's threads, every core unless
    ``NUMBA_NUM_THREADS`` says otherwise).

    Parameters
    ----------
    figure : {"2a", "2b"}
    n_trials : int
        The first trials (the paper: 30).
    horizon : int, optional
        Stages per trial, at most the figure's (default: the figure's).
    algorithms : sequence of str
        Registered policies of the linear-constraint model.
    workers : int, optional
        Simulations run at once (default: numba's thread count).

    Returns
    -------
    RofulStudy
    """
    if figure not in FIGURES:
        raise ValueError(f"figure must be one of {sorted(FIGURES)}, got {figure!r}")
    full = FIGURES[figure][0]
    n_trials = as_positive_int("n_trials", n_trials)
    horizon = full if horizon is None else as_positive_int("horizon", horizon)
    if horizon > full:
        raise ValueError(f"horizon must be in 1..{full} for Figure {figure}, got {horizon}")
    algorithms = (algorithms,) if isinstance(algorithms, str) else tuple(algorithms)
    if workers is not None:
        workers = as_positive_int("workers", workers)
    trials = authors_trials(figure, n_trials)
    stages = np.unique(np.r_[np.linspace(1, horizon, min(GRID_POINTS, horizon)).round(), horizon]
                       ).astype(np.int64)
    study = RofulStudy(figure, horizon, algorithms, stages,
                       limits=np.array([t.problem.constraint.limit for t in trials]),
                       optima=np.array([t.problem.optimal_reward for t in trials]))

    def play(job):
        k, name = job
        trial = trials[k]
        problem = trial.problem
        # Their constants, and trial k's draws (SafeTS) from seed k.
        policy = problem.policy(name, 1, seed=k, lam=LAM, delta=DELTA)
        bandit = LinearBandit(problem.theta_star, problem.setting.noise_sd,
                              draws=trial.draws[None, :horizon], constraint=problem.constraint)
        result = simulate(policy, bandit, horizon, checkpoints=stages.tolist())
        return (k, name, result.stats.regret[:, 0], int(result.stats.total_violations[0]),
                int(policy.solver_fallbacks[0]))

    for name in study.algorithms:
        study.regret[name] = np.empty((n_trials, len(stages)))
        study.violations[name] = np.empty(n_trials, dtype=np.int64)
        study.fallbacks[name] = np.empty(n_trials, dtype=np.int64)
    jobs = [(k, name) for k in range(n_trials) for name in study.algorithms]
    start = time.perf_counter()
    if workers is None:
        import numba

        workers = numba.get_num_threads()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for k, name, regret, violations, fallbacks in pool.map(play, jobs):
            study.regret[name][k] = regret
            study.violations[name][k] = violations
            study.fallbacks[name][k] = fallbacks
    study.seconds = time.perf_counter() - start
    return study


def write_roful_study(studies: list[RofulStudy], out_dir: Path) -> list[Path]:
    """Into the directory ``out_dir`` (existing, empty): per study ``fig<figure>_regret.png`` and
    ``.pdf`` (their figure's axes: ``R_t / sqrt(t)``, mean and one sd over the trials); then
    ``trials.parquet`` (a row per figure, trial and algorithm) and ``summary.json`` (per figure,
    :meth:`RofulStudy.summary`).  Returns the paths."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from ..policies.registry import policy_color
    from ._plotting import legend_below, save_figure, single_axes

    out_dir = Path(out_dir)
    paths, rows = [], []
    for study in studies:
        fig, ax = single_axes(legend_rows=1)
        for name in study.algorithms:
            scaled = study.scaled(name)
            mean, sd = scaled.mean(axis=0), scaled.std(axis=0)
            color = policy_color(name)
            ax.plot(study.stages, mean, color=color, label=name)
            ax.fill_between(study.stages, mean - sd, mean + sd, color=color, alpha=0.2, lw=0)
        ax.set_xlabel("stage t")
        ax.set_ylabel(r"$R_t / \sqrt{t}$")
        ax.set_title(f"ROFUL paper, Figure {study.figure}: {len(study.limits)} problems "
                     "(mean, one sd)", fontsize=9)
        ax.grid(alpha=0.3)
        legend_below(ax)
        paths += save_figure(fig, out_dir, f"fig{study.figure}_regret")
        for name in study.algorithms:
            for k in range(len(study.limits)):
                rows.append({"figure": study.figure, "algorithm": name, "trial": k,
                             "limit": study.limits[k], "optimal_reward": study.optima[k],
                             "regret": study.regret[name][k, -1],
                             "regret_over_sqrt_T": (study.regret[name][k, -1]
                                                    / math.sqrt(study.horizon)),
                             "violations": study.violations[name][k],
                             "fallbacks": study.fallbacks[name][k]})
    table = out_dir / "trials.parquet"
    pd.DataFrame(rows).to_parquet(table, index=False)
    summary = out_dir / "summary.json"
    summary.write_text(json.dumps({"figures": {study.figure: study.summary()
                                               for study in studies}}, indent=2) + "\n")
    return [*paths, table, summary]
