"""The solver's failure, apart from :mod:`.compiled`: code on the closed-form path catches it
without importing cvxpy or Clarabel."""


class SolverFailure(RuntimeError):
    """Clarabel did not return ``Solved``, or its point failed verification."""

    def __init__(self, message: str, status: str = "unknown") -> None:
        super().__init__(message)
        self.status = status
