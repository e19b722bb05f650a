"""Sets given by second-order-cone rows: their compiled, certified arms (:mod:`.arms`).

A :class:`~sege_cvx.arm_sets.generic.ConvexArmSet` whose cvxpy form canonicalizes to the zero,
nonnegative and second-order cones gets :class:`~.arms.ConeArms` as its ``compiled_arms``:
SEGE's stages then solve its greedy and LCB programs inside the compiled loop
(:mod:`sege_cvx.conic.socp`), and play each arm only with a witness certified in exact
arithmetic.
"""
