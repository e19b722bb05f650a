"""Problems: a safe linear bandit's setting and truth (:class:`~.problem.BanditProblem`), the
paper's Section 6 instance (:func:`~.problem.paper_problem`) and the built-in examples
(:mod:`.examples`), which every layer above builds its runs from."""

from .examples import EXAMPLES
from .problem import BanditProblem, paper_problem

__all__ = ["EXAMPLES", "BanditProblem", "paper_problem"]
