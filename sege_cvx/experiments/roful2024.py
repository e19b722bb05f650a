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
the problem's bandit replays (:class:`~sege_cvx.BanditProblem` ``replayed_noise``).  So every
trial here is the authors' trial, and its runs can be compared with theirs stage by stage.

The study is a sweep (:func:`~sege_cvx.experiments.sweeps.run.run_sweep`): a problem per
trial, made by the factory :func:`authors_problem` with the figure and the trial as its
parameters, one run each.  Their figure plots ``R_t / sqrt(t)``, the mean over the 30 trials
with a band of one standard deviation (``numpy.std``); :func:`run_roful_study` records ``R_t``
on a grid of stages, and :func:`write_roful_study` writes the figure (from the sweep's curves,
:func:`~sege_cvx.experiments.figures.across_problems_figure`), a table of the trials and
``summary.json``.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._validation import as_positive_int
from ..arm_sets.star import StarSet
from ..problems.problem import BanditProblem
from ..safety import LinearConstraint
from .spec import StudySpec

if TYPE_CHECKING:
    import pandas as pd

#: The two figures: horizon and the range of the limit ``c``.
FIGURES = {"2a": (50_000, (0.25, 1.0)), "2b": (100_000, (0.05, 0.25))}
#: The paper's constants (``slb_short.py``).
N_TRIALS, DIM, N_DIRECTIONS, RADIUS, NOISE_SD, LAM, DELTA = 30, 2, 10, 1.0, 0.1, 1.0, 0.01
#: Stages at which ``R_t`` is recorded (a linear grid, as their plot's axis) besides the horizon.
GRID_POINTS = 500


def authors_trials(figure: str = "2a", n_trials: int = N_TRIALS) -> list[BanditProblem]:
    """The first ``n_trials`` trials of the authors' Figure ``figure`` ("2a" or "2b"), drawn as
    their scripts draw them (module docstring): each a problem whose bandit replays the trial's
    noise (``replayed_noise``, shape ``(T, 2)``: the reward's, the constraint's).

    Examples
    --------
    >>> problem = authors_trials("2a", 1)[0]
    >>> problem.arm_set, problem.replayed_noise.shape, round(problem.constraint.limit, 4)
    (StarSet(10 directions in R^2, radius=1.0), (50000, 2), 0.86)
    """
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
        trials.append(BanditProblem.from_truth(
            StarSet(directions, RADIUS), theta_star=theta.ravel(), safe_arm=np.zeros(DIM),
            S=math.sqrt(DIM), noise_sd=NOISE_SD,
            constraint=LinearConstraint(float(limit), gamma_star=gamma.ravel(),
                                        noise_sd=NOISE_SD),
            name=f"trial{trial}", description=f"ROFUL paper Figure {figure}, trial {trial}",
            replayed_noise=draws))
    return trials


@lru_cache(maxsize=2)
def _all_trials(figure: str) -> tuple[BanditProblem, ...]:
    """The figure's :data:`N_TRIALS` trials, drawn once per process."""
    return tuple(authors_trials(figure, N_TRIALS))


def authors_problem(figure: str = "2a", trial: int = 0) -> BanditProblem:
    """Trial ``trial`` (0 to :data:`N_TRIALS` - 1) of the authors' Figure ``figure``, its noise
    replayed: the problem factory of the study's sweep (its spec names
    ``sege_cvx.experiments.roful2024:authors_problem`` with these two parameters)."""
    if figure not in FIGURES:
        raise ValueError(f"figure must be one of {sorted(FIGURES)}, got {figure!r}")
    if isinstance(trial, bool) or not isinstance(trial, int) or not 0 <= trial < N_TRIALS:
        raise ValueError(f"trial must be an int in 0..{N_TRIALS - 1}, got {trial!r}")
    return _all_trials(figure)[trial]


#: The import path of :func:`authors_problem`, as a spec names it.
FACTORY = f"{__name__}:authors_problem"


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
        Wall time of the study's sweep.
    simulation_seconds : float
        The simulations' own time, summed over the trials and algorithms (the sweep's
        ``wall_seconds``).
    curves : pandas.DataFrame or None
        The sweep's curves table (``curves.parquet``: a row per trial, algorithm and stage of
        the grid), which the figure is drawn from.

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
    simulation_seconds: float = 0.0
    curves: pd.DataFrame | None = None

    def scaled(self, algorithm: str) -> np.ndarray:
        """``R_t / sqrt(t)`` per trial, shape ``(n_trials, G)``: what their figure plots."""
        return self.regret[algorithm] / np.sqrt(self.stages)

    def summary(self) -> dict:
        """JSON-ready: per algorithm the mean and sd (``numpy.std``, as their figure) of
        ``R_T / sqrt(T)`` over the trials, the mean ``R_T``, violations and fallbacks."""
        out = {"figure": self.figure, "horizon": self.horizon,
               "trials": int(len(self.limits)), "seconds": round(self.seconds, 3),
               "simulation_seconds": round(self.simulation_seconds, 3),
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


def study_spec(figure: str, n_trials: int, horizon: int, algorithms: Sequence[str],
               stages: np.ndarray) -> StudySpec:
    """The sweep of :func:`run_roful_study`: the first ``n_trials`` trials of Figure ``figure``
    (each a problem of :func:`authors_problem`), ``algorithms`` with the authors' ``lam`` and
    ``delta``, one run of ``horizon`` stages each, ``R_t`` kept at ``stages``."""
    return StudySpec.from_dict({
        "seed": 0, "runs": 1, "horizon": horizon, "checkpoints": stages.tolist(),
        "problems": [{"factory": FACTORY, "parameters": {"figure": figure, "trial": k}}
                     for k in range(n_trials)],
        "algorithms": [{"name": name, "grid": {"lam": [LAM], "delta": [DELTA]}}
                       for name in algorithms]})


def run_roful_study(figure: str = "2a", *, n_trials: int = N_TRIALS, horizon: int | None = None,
                    algorithms: str | Sequence[str] = ("ROFUL", "GNOP"),
                    workers: int = 1) -> RofulStudy:
    """Play ``algorithms`` on the authors' trials of Figure ``figure`` (:func:`authors_trials`),
    each trial with its own noise replayed, as a sweep (:func:`study_spec`, run by
    :func:`~sege_cvx.experiments.sweeps.run.run_sweep` in a temporary directory; a policy that
    draws, SafeTS, from the sweep's seed of the trial's one run).

    Parameters
    ----------
    figure : {"2a", "2b"}
    n_trials : int
        The first trials (the paper: 30).
    horizon : int, optional
        Stages per trial, at most the figure's (default: the figure's).
    algorithms : sequence of str
        Registered policies of the linear-constraint model.
    workers : int, default 1
        The sweep's worker processes; 1 runs the trials in this process, one after another
        (each trial is one run: a second worker's start-up, a second or two, is more than these
        trials' simulation saves).

    Returns
    -------
    RofulStudy
    """
    from .sweeps.errors import SweepError
    from .sweeps.run import run_sweep

    if figure not in FIGURES:
        raise ValueError(f"figure must be one of {sorted(FIGURES)}, got {figure!r}")
    full = FIGURES[figure][0]
    n_trials = as_positive_int("n_trials", n_trials)
    if n_trials > N_TRIALS:
        raise ValueError(f"n_trials must be in 1..{N_TRIALS}, got {n_trials}")
    horizon = full if horizon is None else as_positive_int("horizon", horizon)
    if horizon > full:
        raise ValueError(f"horizon must be in 1..{full} for Figure {figure}, got {horizon}")
    algorithms = (algorithms,) if isinstance(algorithms, str) else tuple(algorithms)
    workers = as_positive_int("workers", workers)
    stages = np.unique(np.r_[np.linspace(1, horizon, min(GRID_POINTS, horizon)).round(), horizon]
                       ).astype(np.int64)
    spec = study_spec(figure, n_trials, horizon, algorithms, stages)
    labels = [problem.label for problem in spec.problems]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sege-cvx-roful-") as tmp:
        try:
            results = run_sweep(spec, Path(tmp) / "sweep", workers=workers, progress=False)
        except SweepError as exc:  # its shards go with the temporary directory: no resume
            raise SweepError(f"the study stopped: {exc.reason}") from exc
    seconds = time.perf_counter() - start
    problems = results.manifest["problems"]
    study = RofulStudy(figure, horizon, algorithms, stages,
                       limits=np.array([problems[label]["constraint_limit"]
                                        for label in labels]),
                       optima=np.array([problems[label]["optimal_reward"] for label in labels]),
                       seconds=seconds, curves=results.curves)
    runs, curves = results.runs, results.curves
    study.simulation_seconds = float(runs["wall_seconds"].sum())
    for name in algorithms:
        mine = runs[runs["algorithm"] == name].set_index("problem").loc[labels]
        study.violations[name] = mine["violations"].to_numpy(dtype=np.int64)
        study.fallbacks[name] = mine["fallbacks"].to_numpy(dtype=np.int64)
        rows = curves[curves["algorithm"] == name]
        study.regret[name] = np.stack([  # one run: its regret is the cell's mean
            rows[rows["problem"] == label].sort_values("t")["regret_mean"].to_numpy()
            for label in labels])
    return study


def write_roful_study(studies: list[RofulStudy], out_dir: Path) -> list[Path]:
    """Into the directory ``out_dir`` (existing, empty): per study ``fig<figure>_regret.png`` and
    ``.pdf`` (their figure's axes: ``R_t / sqrt(t)``, mean and one sd over the trials, drawn
    from the sweep's curves by :func:`~sege_cvx.experiments.figures.across_problems_figure`;
    the band cut at 0, which ``R_t`` cannot go below); then ``trials.parquet`` (a row per
    figure, trial and algorithm) and ``summary.json`` (per figure,
    :meth:`RofulStudy.summary`).  Returns the paths."""
    import json

    import pandas as pd

    from ._plotting import save_figure
    from .figures import across_problems_figure

    out_dir = Path(out_dir)
    paths, rows = [], []
    for study in studies:
        fig = across_problems_figure(
            study.curves, study.algorithms, floor=0.0,
            value=lambda cell: (cell["regret_mean"] / np.sqrt(cell["t"])).to_numpy(),
            ylabel=r"$R_t / \sqrt{t}$",
            title=f"ROFUL paper, Figure {study.figure}: {len(study.limits)} problems "
                  "(mean, one sd)")
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
