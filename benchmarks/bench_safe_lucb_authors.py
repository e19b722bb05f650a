"""Safe-LUCB: the library's compiled stages against Clarabel and against its authors' MATLAB code.

The experiment is their ``Codes/CLBwithD_0.m`` (``sanaeamani/SafeLinearBandits``: Amani,
Alizadeh and Thrampoulidis, NeurIPS 2019; ``sege_cvx.experiments.safe_lucb2019``): the box
``[-1, 1]^2``, ``B = [[3, 9], [9, 2]] / 5``, ``C = 0.9``.  Their code carries no license, so it
is not copied here: pass ``--authors DIR``, a clone of that repository, and this script runs
it under GNU Octave (``--octave``) from a temporary folder with three shims that Octave needs,
listed in :data:`OCTAVE_SHIMS`: ``linprog`` by Octave's ``glpk``, ``normrnd`` by ``randn``
(both from MATLAB toolboxes Octave lacks), and ``con2vert``'s ``fminsearch`` given its extra
argument through a closure (Octave 7's ``fminsearch`` drops it in its final evaluation).
Their horizon and exploration phase are set to this script's, and the script stops where their
figure's plotting starts.

Measured, one run on one thread, medians of ``--repeats``: microseconds per run-stage of the
optimistic stages (``2d = 4`` linear programs a stage; the exploration stages are timed apart
and subtracted) for

* the library's compiled stages (``method="auto"``: the simplex method over the box cut by the
  estimated safe set, certified by its duality gap),
* the library on Clarabel (``method="solver"``: one compiled conic program per vertex, called
  from Python), and
* the authors' code under Octave (vertex enumeration of the estimated safe set by ``con2vert``
  each stage),

with the ratios (the issue's target: the compiled stages at least 50x faster than theirs), and
the largest difference between the compiled and the Clarabel arms on the same observations.
Their stage's time grows with ``t`` (their ``A(:, :, t)`` and ``l(t)`` grow by one element a
stage, copied each time), so their number depends on ``--exploration`` and ``--slow-stages``;
the library's does not.

    python benchmarks/bench_safe_lucb_authors.py --authors ~/src/SafeLinearBandits
    python benchmarks/bench_safe_lucb_authors.py --quick      # CI: the library's side only
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from _machine import machine

import sege_cvx as sc
from sege_cvx.experiments import safe_lucb2019

#: Files Octave is given beside their code: MATLAB toolbox functions Octave lacks.
OCTAVE_SHIMS = {
    "linprog.m": (
        "function x = linprog(f, A, b)\n"
        "  % MATLAB's linprog(f, A, b): min f'x s.t. A x <= b, x free; by Octave's glpk.\n"
        "  n = numel(f);\n"
        "  x = glpk(f(:), A, b(:), -Inf(n, 1), Inf(n, 1), repmat('U', 1, numel(b)),\n"
        "           repmat('C', 1, n), 1);\n"
        "end\n"),
    "normrnd.m": (
        "function r = normrnd(mu, sigma)\n"
        "  r = mu + sigma * randn();\n"
        "end\n"),
}
#: Their ``con2vert.m``'s ``fminsearch`` call, and what Octave runs instead.
FMINSEARCH = ("fminsearch(@obj,c,options,{A,b})", "fminsearch(@(c) obj(c, {A,b}),c,options)")


def authors_script(directory: Path, horizon: int, exploration: int) -> str:
    """Their ``CLBwithD_0.m`` with the horizon and exploration phase set, each loop timed, and
    the plotting after the loops cut."""
    source = (directory / "Codes" / "CLBwithD_0.m").read_text()
    source = re.sub(r"^T = 100000;", f"T = {horizon};", source, count=1, flags=re.M)
    source = re.sub(r"^tp = 10000;", f"tp = {exploration};", source, count=1, flags=re.M)
    source = source.replace("for (t = 1:tp)", "tic;\nfor (t = 1:tp)", 1)
    source = source.replace("for (t=tp+1:T)",
                            "printf('EXPLORATION_SECONDS %.6f\\n', toc);\ntic;\nfor (t=tp+1:T)",
                            1)
    head, _, _ = source.partition("%[r] = mybound")
    return head + "printf('OPTIMISTIC_SECONDS %.6f\\n', toc);\n"


def run_authors(directory: Path, octave: str, horizon: int, exploration: int) -> float:
    """Seconds per optimistic stage of their code under Octave."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        con2vert = (directory / "Codes" / "con2vert.m").read_text()
        if FMINSEARCH[0] not in con2vert:
            raise SystemExit(f"{directory}/Codes/con2vert.m has no {FMINSEARCH[0]!r}: another "
                             "version of their code?")
        (work / "con2vert.m").write_text(con2vert.replace(*FMINSEARCH))
        for name, text in OCTAVE_SHIMS.items():
            (work / name).write_text(text)
        (work / "run_authors.m").write_text(authors_script(directory, horizon, exploration))
        out = subprocess.run([octave, "--no-gui", "--quiet", "--no-window-system",
                              "run_authors.m"], cwd=work, capture_output=True, text=True,
                             check=False)
        match = re.search(r"OPTIMISTIC_SECONDS ([0-9.]+)", out.stdout)
        if out.returncode != 0 or match is None:
            raise SystemExit(f"their code failed under {octave}:\n{out.stdout[-2000:]}\n"
                             f"{out.stderr[-2000:]}")
        return float(match.group(1)) / (horizon - exploration)


#: Their exploration draws, replaced in the replay by the library's exploration arms.
_EXPLORATION_DRAWS = re.compile(r"^X = randn\(Npoints,d\);.*?^X = \(\(C/S\)\*X\)\*inv\(B'\);",
                                re.M | re.S)
#: In the replay, ``normrnd`` returns the library's noise, one value a call, in order.
REPLAYED_NORMRND = (
    "function r = normrnd(mu, sigma)\n"
    "  % The replay's noise: the library's, read once, one value a call.\n"
    "  persistent e k\n"
    "  if isempty(e)\n"
    "    e = dlmread('noise.txt'); k = 0;\n"
    "  end\n"
    "  k = k + 1; r = e(k);\n"
    "end\n")


def replay(directory: Path, octave: str, horizon: int, exploration: int,
           seed: int = 0) -> dict:
    """Their code and the library's compiled stages on the same draws: one run of the library
    (its own exploration arms; noise ``0.01 N(0, 1)`` from ``seed``) recorded, then their
    ``CLBwithD_0.m`` with its exploration arms replaced by the library's and its ``normrnd``
    returning the library's noise (their loss ``<x, mu*>`` is minus this package's reward, so
    their noise is minus the library's).  Returns both runs' arms and cumulative regrets (their
    loss above the optimum's is the library's regret) and the largest coordinate difference
    between the arms after the exploration."""
    problem = safe_lucb2019.problem()
    theta = np.asarray(problem.theta_star)
    # R = 1 in beta_t, as their code has it (the library's default is the noise's sd, 0.01).
    policy = problem.policy("Safe-LUCB", 1, seed=seed, exploration_stages=exploration, R=1.0)
    noise = 0.01 * np.random.default_rng(seed + 1).standard_normal(horizon)
    ours = np.empty((horizon, 2))
    for t in range(horizon):
        ours[t] = policy.select()
        policy.observe(ours[t], ours[t] @ theta + noise[t])
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        con2vert = (directory / "Codes" / "con2vert.m").read_text()
        (work / "con2vert.m").write_text(con2vert.replace(*FMINSEARCH))
        (work / "linprog.m").write_text(OCTAVE_SHIMS["linprog.m"])
        (work / "normrnd.m").write_text(REPLAYED_NORMRND)
        np.savetxt(work / "explore.txt", ours[:exploration], fmt="%.17g")
        np.savetxt(work / "noise.txt", -noise, fmt="%.17g")
        script = authors_script(directory, horizon, exploration)
        script, found = _EXPLORATION_DRAWS.subn("X = dlmread('explore.txt');", script, count=1)
        if found != 1:
            raise SystemExit(f"{directory}/Codes/CLBwithD_0.m draws its exploration otherwise "
                             "than this replay expects: another version of their code?")
        script += "dlmwrite('arms.txt', reshape(x, d, T)', 'precision', '%.17g');\n"
        (work / "replay.m").write_text(script)
        out = subprocess.run([octave, "--no-gui", "--quiet", "--no-window-system", "replay.m"],
                             cwd=work, capture_output=True, text=True, check=False)
        if out.returncode != 0 or not (work / "arms.txt").exists():
            raise SystemExit(f"their code failed under {octave}:\n{out.stdout[-2000:]}\n"
                             f"{out.stderr[-2000:]}")
        theirs = np.loadtxt(work / "arms.txt", delimiter=",")
    best = problem.optimal_reward
    regret = {name: np.cumsum(best - arms @ theta) for name, arms in
              (("sege_cvx", ours), ("authors", theirs))}
    return {"ours": ours, "theirs": theirs, "regret": regret,
            "largest": float(np.abs(ours[exploration:] - theirs[exploration:]).max())}


def draw_replay(replayed: dict, exploration: int, path: Path) -> None:
    """Both runs' cumulative regret, and the largest coordinate difference of their arms so far
    over the optimistic stages (during the exploration their code plays the library's arms)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sege_cvx.experiments._plotting import layout_problems

    t = np.arange(1, replayed["ours"].shape[0] + 1)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.0, 5.6), sharex=True,
                                      layout="constrained")
    top.plot(t, replayed["regret"]["sege_cvx"], color="tab:blue", linewidth=2.5,
             label="sege_cvx, compiled")
    top.plot(t, replayed["regret"]["authors"], color="tab:orange", linestyle="--",
             label="their MATLAB code under GNU Octave")
    top.axvline(exploration, color="gray", linewidth=0.8, linestyle=":")
    top.set_ylabel("cumulative regret")
    top.set_title("Safe-LUCB on its authors' experiment, the same draws")
    top.legend(fontsize=8, loc="lower right")
    gap = np.abs(replayed["ours"] - replayed["theirs"]).max(axis=1)[exploration:]
    equal = float(np.mean(gap == 0.0))
    bottom.semilogy(t[exploration:], np.maximum.accumulate(np.maximum(gap, 1e-17)),
                    color="tab:green", label="largest so far")
    bottom.axhline(1e-6, color="red", linestyle="--", linewidth=0.8, label="1e-6")
    bottom.set_ylim(1e-17, 1e-3)
    bottom.set_xlabel("stage t")
    bottom.set_ylabel("arm difference")
    bottom.set_title(f"the arms' largest difference ({100 * equal:.0f} % of the optimistic "
                     "stages equal)", fontsize=9)
    bottom.legend(fontsize=8, loc="upper right")
    if problems := layout_problems(fig):
        raise RuntimeError("; ".join(problems))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_ours(method: str, horizon: int, exploration: int) -> float:
    """Seconds per optimistic stage of one run of the library (the simulation of ``horizon``
    stages less that of the exploration alone)."""
    problem = safe_lucb2019.problem()
    seconds = []
    for stages in (exploration, horizon):
        policy = problem.policy("Safe-LUCB", 1, seed=0, exploration_stages=exploration,
                                method=method)
        start = time.perf_counter()
        sc.simulate(policy, problem.bandit(sc.run_seeds(1, 1)[1]), stages)
        seconds.append(time.perf_counter() - start)
    return (seconds[1] - seconds[0]) / (horizon - exploration)


def largest_difference(stages: int, exploration: int) -> float:
    """The largest coordinate difference between the compiled and the Clarabel arms, three
    runs on the same observations (each policy told its own arm's reward with the same
    noise)."""
    problem = safe_lucb2019.problem()
    ours = problem.policy("Safe-LUCB", 3, seed=0, exploration_stages=exploration)
    solver = problem.policy("Safe-LUCB", 3, seed=0, exploration_stages=exploration,
                            method="solver")
    rng, theta, worst = np.random.default_rng(5), problem.theta_star, 0.0
    for _ in range(stages):
        x, y = ours.select(), solver.select()
        worst = max(worst, float(np.abs(x - y).max()))
        noise = 0.01 * rng.standard_normal(3)
        ours.observe(x, x @ theta + noise)
        solver.observe(y, y @ theta + noise)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", type=Path, default=None,
                        help="a clone of sanaeamani/SafeLinearBandits")
    parser.add_argument("--octave", default="octave", help="GNU Octave's executable")
    parser.add_argument("--exploration", type=int, default=1000, help="exploration stages")
    parser.add_argument("--stages", type=int, default=20_000,
                        help="optimistic stages timed of the compiled stages (Clarabel's and "
                             "the authors': --slow-stages)")
    parser.add_argument("--slow-stages", type=int, default=1000,
                        help="optimistic stages timed on Clarabel and of the authors' code")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replay-stages", type=int, default=5000,
                        help="optimistic stages of the replay (their code on the library's draws)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="with --authors: write the replay's regret figure here (PNG)")
    parser.add_argument("--quick", action="store_true", help="a smoke test (CI)")
    args = parser.parse_args()
    if args.quick:
        args.exploration, args.stages, args.slow_stages, args.repeats = 100, 5000, 100, 1
    if args.authors is not None and shutil.which(args.octave) is None:
        raise SystemExit(f"--authors needs GNU Octave: {args.octave!r} not found "
                         "(apt-get install octave)")
    print("\n".join(machine()))
    numba.set_num_threads(1)
    run_ours("auto", args.exploration + 20, args.exploration)  # kernels loaded (or compiled)
    rows = {}
    for method, stages in (("auto", args.stages), ("solver", args.slow_stages)):
        rows[method] = statistics.median(
            run_ours(method, args.exploration + stages, args.exploration)
            for _ in range(args.repeats)) * 1e6
    if args.authors is not None:
        rows["authors"] = statistics.median(
            run_authors(args.authors, args.octave, args.exploration + args.slow_stages,
                        args.exploration) for _ in range(args.repeats)) * 1e6
    print(f"\nSafe-LUCB on its authors' experiment, one run, one thread: the optimistic stages "
          f"after {args.exploration} exploring ({args.stages} compiled, {args.slow_stages} "
          f"the others); medians of {args.repeats}:")
    print("| code | us per run-stage | compiled is faster by |")
    print("|---|---:|---:|")
    names = {"auto": "sege_cvx compiled (simplex, certified)",
             "solver": "sege_cvx on Clarabel (method='solver')",
             "authors": "authors' MATLAB under GNU Octave"}
    for key, us in rows.items():
        ratio = "" if key == "auto" else f"{us / rows['auto']:.0f}x"
        print(f"| {names[key]} | {us:.2f} | {ratio} |")
    if args.authors is None:
        print("(the authors' code not given: --authors DIR, a clone of "
              "sanaeamani/SafeLinearBandits, run under GNU Octave)")
    if args.authors is not None:
        horizon = args.exploration + args.replay_stages
        replayed = replay(args.authors, args.octave, horizon, args.exploration)
        print(f"\nTheir code on the library's draws (one run, seed 0: {args.exploration} "
              f"exploring stages, then {args.replay_stages} optimistic): largest coordinate "
              f"difference between the arms {replayed['largest']:.1e}; regret at t = {horizon}: "
              f"{replayed['regret']['sege_cvx'][-1]:.6f} (sege_cvx), "
              f"{replayed['regret']['authors'][-1]:.6f} (theirs)")
        if args.figure is not None:
            draw_replay(replayed, args.exploration, args.figure)
            print(f"wrote {args.figure}")
    worst = largest_difference(60 if args.quick else 300, 30)
    print(f"\ncompiled vs Clarabel arms, 3 runs on the same observations: largest coordinate "
          f"difference {worst:.1e}")


if __name__ == "__main__":
    main()
