"""A named check of the conformance kit: :class:`Check`, and running a list of them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """One named check of a policy class or an arm set (scikit-learn's ``check_estimator`` is
    the model): calling it runs it, and it raises ``AssertionError`` with one sentence if what
    it checks does not hold.

    Attributes
    ----------
    name : str
        What it checks, as an identifier (``"arms_in_the_set"``): a pytest id, and what
        ``skip`` names.
    run : callable
        The check itself, without arguments.
    """

    name: str
    run: Callable[[], None]

    def __call__(self) -> None:
        self.run()

    def __repr__(self) -> str:
        return self.name


def run_checks(checks: Iterable[Check], skip: Iterable[str] = ()) -> None:
    """Run every check of ``checks`` but those named in ``skip`` (each a check's name; a
    ``ValueError`` for a name no check has), in order, stopping at the first that fails."""
    checks = list(checks)
    skip = {skip} if isinstance(skip, str) else set(skip)
    if unknown := skip - {check.name for check in checks}:
        raise ValueError(f"skip names no check: {sorted(unknown)} (the checks: "
                         f"{', '.join(check.name for check in checks)})")
    for check in checks:
        if check.name not in skip:
            check()
