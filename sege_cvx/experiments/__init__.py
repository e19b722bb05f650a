"""Experiments on problems (:mod:`sege_cvx.problems`): the paper's Section 6 study
(:mod:`.paper`), the ROFUL paper's (:mod:`.roful2024`), sweeps (their spec, :mod:`.spec`;
running them, their results and reports, :mod:`.sweeps`), their figures and outputs.

Names load their modules on first use (PEP 562): :mod:`.outputs` is light, :mod:`.paper` loads
the policies' kernels; cvxpy loads only for arm sets that need a solver, matplotlib for figures.
"""

from .._lazy import lazy_exports

_EXPORTS = {name: ".paper" for name in ("PAPER_HORIZON", "PAPER_RUNS", "StudyResult",
                                        "run_study", "write_outputs")}
_EXPORTS["OutputPathError"] = ".outputs"
_EXPORTS.update({"run_sweep": ".sweeps.run", "load_results": ".sweeps.store",
                 "SweepResults": ".sweeps.store", "ResultsError": ".sweeps.store",
                 "write_report": ".sweeps.report"})
_EXPORTS.update({name: ".spec" for name in ("AlgorithmSpec", "ProblemSpec", "SpecError",
                                            "StudySpec")})

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
