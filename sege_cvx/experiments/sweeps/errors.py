"""What a sweep says when it stops or warns: :class:`SweepError` (one line: the reason, then what
is saved and how to resume), :class:`SweepWarning`, and the count of saved shards those messages
give (``"3 of 12 shards are saved in OUT"``)."""

from __future__ import annotations

from pathlib import Path


class SweepError(RuntimeError):
    """A sweep stopped after it started: a worker died, a shard failed, a file could not be
    written.  The message is one line: ``reason``, then what is saved and how to resume (the
    finished shards are kept; rerunning the same sweep resumes it)."""

    def __init__(self, reason: str, resume: str = ""):
        super().__init__(f"{reason}; {resume}" if resume else reason)
        self.reason = reason


class SweepWarning(UserWarning):
    """Something a sweep did that its user should know (a damaged shard computed again)."""


class SavedShards:
    """How many of a sweep's shards are saved, for messages (``"3 of 12 shards are saved in
    OUT"``)."""

    def __init__(self, out: Path):
        self.out, self.total, self.done = out, None, 0

    def __str__(self) -> str:
        if self.total is None:
            return f"no shard was computed in {self.out}"
        return f"{self.done} of {self.total} shards are saved in {self.out}"
