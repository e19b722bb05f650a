"""Experiments: the paper's Section 6 study, example problems, their figures and outputs.

Names load their modules on first use (PEP 562): :mod:`.outputs` is light, :mod:`.paper` loads
the policies' kernels; cvxpy loads only for arm sets that need a solver, matplotlib for figures.
"""

from importlib import import_module

_EXPORTS = {name: ".paper" for name in ("PAPER_HORIZON", "PAPER_RUNS", "BanditProblem",
                                        "StudyResult", "paper_problem", "run_study",
                                        "write_outputs")}
_EXPORTS["OutputPathError"] = ".outputs"
_EXPORTS.update({name: ".spec" for name in ("AlgorithmSpec", "ProblemSpec", "SpecError",
                                            "StudySpec")})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
