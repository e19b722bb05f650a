"""The compiled stage loop and what it records, below the policies that plug into it.

* :mod:`.loop`: the loop written once for every policy whose stages are compiled (a policy
  registers its stage record's hooks, :func:`~.loop.register_stage_hooks`);
* :mod:`.statistics`: the per-run running statistics and checkpoint rows every stage folds
  into (:class:`~.statistics.RunStatistics`).
"""

from .loop import (
    Decisions,
    StageHooks,
    choose_loop,
    geometry_of,
    radius_of,
    register_stage_hooks,
    stage_loop,
)

__all__ = ["Decisions", "StageHooks", "choose_loop", "geometry_of", "radius_of",
           "register_stage_hooks", "stage_loop"]
