"""Experiments: the paper's Section 6 study, example problems, and their figures."""

from .paper import (
    PAPER_HORIZON,
    PAPER_RUNS,
    BanditProblem,
    StudyResult,
    paper_problem,
    run_study,
    write_outputs,
)

__all__ = ["PAPER_HORIZON", "PAPER_RUNS", "BanditProblem", "StudyResult", "paper_problem",
           "run_study", "write_outputs"]
