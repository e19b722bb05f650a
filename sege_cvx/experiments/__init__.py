"""Experiments: the paper's Section 6 study and its figures."""

from .paper import PAPER_HORIZON, PAPER_RUNS, PaperSetup, StudyResult, run_study, write_outputs

__all__ = ["PAPER_HORIZON", "PAPER_RUNS", "PaperSetup", "StudyResult", "run_study", "write_outputs"]
