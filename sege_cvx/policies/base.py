"""The policy protocol every policy follows, built-in or a user's: :class:`Policy`."""

from __future__ import annotations

import functools
import re
from fractions import Fraction

import numpy as np

from .._random import MAX_RUNS, SeedLike, seed_sequences
from .._validation import as_finite_array, as_positive_int, as_scalar, as_vector, format_value
from ..arm_sets.base import ArmSet
from ..safety import KnownConstraint

#: Names of the results tables' own columns (``runs.parquet``, ``curves.parquet``), and their
#: prefixes: a decision name or grid parameter named so would overwrite one
#: (:func:`reserved_name`).
RESERVED_NAMES = frozenset({
    "problem", "algorithm", "run", "runs", "seed", "t", "violations", "first_violation",
    "min_expected_reward", "fallbacks", "conservative_met", "wall_seconds", "violating_pairs",
    "violating_runs"})
RESERVED_PREFIXES = ("regret", "reward", "curve_", "decisions_")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def reserved_name(name: str) -> bool:
    """Whether ``name`` is, or begins like, a column of the results tables (:data:`RESERVED_NAMES`,
    :data:`RESERVED_PREFIXES`): no decision or grid parameter may be named so."""
    return name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES)


def decision_names_problem(cls: type) -> str | None:
    """What is wrong with ``cls.decision_names``, in one sentence (None if nothing): it must be
    a nonempty tuple of distinct identifiers (``None`` for a code never recorded), none of them a
    results column (:func:`reserved_name`)."""
    names = getattr(cls, "decision_names", None)
    label = f"{getattr(cls, '__name__', cls)}.decision_names"
    if (not isinstance(names, tuple) or not names
            or not all(n is None or isinstance(n, str) for n in names)):
        return (f"{label} must be a nonempty tuple of str (None for a code never recorded), "
                f"got {names!r}")
    given = [n for n in names if n is not None]
    if not given:
        return f"{label} names no decision: {names!r}"
    if bad := [n for n in given if not _NAME.fullmatch(n)]:
        return (f"{label}: {bad[0]!r} is not an identifier (letters, digits and _, not first "
                "a digit): it names a column of the results tables")
    if len(set(given)) != len(given):
        repeated = next(n for n in given if given.count(n) > 1)
        return f"{label} names {repeated!r} twice; each decision code needs its own name"
    if clash := [n for n in given if reserved_name(n)]:
        return (f"{label}: {clash[0]!r} would overwrite a column of the results tables "
                f"(reserved: {', '.join(sorted(RESERVED_NAMES))}, and names beginning with "
                f"{', '.join(RESERVED_PREFIXES)}); choose another name")
    return None


class Policy:
    """The base of every safe-bandit policy: SEGE, CLUCB, ROFUL and a user's own.

    A policy acts on ``n_runs`` independent runs at once.  A subclass sets
    :attr:`decision_names` and implements two methods:

    - ``select()``: the stage's arms, shape ``(n_runs, d)`` (``(d,)`` is accepted for one run),
      and sets :attr:`last_decision`, one code per run indexing :attr:`decision_names`;
    - ``observe(arms, rewards)``: the arms ``select`` returned, shape ``(n_runs, d)``, and their
      noisy rewards, shape ``(n_runs,)``; under a linear constraint with its own feedback
      (:mod:`sege_cvx.safety`), ``observe(arms, rewards, constraint_values)``, the
      constraint's noisy values, shape ``(n_runs,)``.

    The base wraps both (the methods the class resolves to, its own or a mixin's, once per
    class): it refuses ``select`` twice without ``observe`` and
    ``observe`` of other arms, checks shapes, finiteness and decision codes, counts each run's
    decisions (:attr:`decision_counts`) and advances :attr:`t`; ``select`` returns a copy, shape
    ``(d,)`` for a single run.  It never checks that the arms lie in the set (that is the
    policy's duty: :meth:`~sege_cvx.ArmSet.pull_inside` and ``contains(x, tol=0)`` decide it
    exactly).  A policy never sees ``theta*``.

    Parameters
    ----------
    arm_set : ArmSet
        The arms.
    baseline_arm : array_like, shape (d,)
        The baseline arm ``x0`` (Assumption 3); moved exactly into the set if rounding leaves it
        just outside, its reward bound then lowered by ``S`` times the move.
    baseline_reward : float
        ``b0``, a lower bound on ``<x0, theta*>`` (None under a linear constraint).
    threshold : float
        ``b < b0``, the floor every stage's expected reward must keep (None under a linear
        constraint).
    S : float
        Bound on ``||theta*||`` (Assumption 1).
    noise_sd : float
        Sub-Gaussian noise level (Assumption 2).
    lam : float, default 0.1
        Ridge regularization of ``V = lam I + sum x x^T``.
    n_runs : int, default 1
    seed : int, SeedSequence, sequence of SeedSequence, or None
        One ``SeedSequence`` per run (:func:`sege_cvx.run_seeds`): run ``i`` draws from
        :attr:`rngs` ``[i]``, the same numbers alone (``seed=[seq_i]``) or in any batch.
    constraint : KnownConstraint, optional
        What the policy knows of the problem's unknown linear constraint
        (:meth:`sege_cvx.LinearConstraint.known`): the other safety model, in which
        ``baseline_arm`` is the safe arm (in the set exactly) and ``baseline_reward`` and
        ``threshold`` are None.  A policy of the stagewise model alone takes no such parameter
        (:meth:`BanditProblem.policy <sege_cvx.BanditProblem.policy>` then refuses it).

    Attributes
    ----------
    arm_set, baseline_arm, baseline_reward, threshold, S, noise_sd, lam, n_runs, seed
        As given (validated; ``baseline_arm`` and ``baseline_reward`` as certified; under a
        linear constraint ``baseline_reward`` is NaN and ``threshold`` ``-inf``).
    constraint : KnownConstraint or None
        As given.
    d : int
        The dimension.
    rngs : list of numpy.random.Generator
        One generator per run, from that run's seed alone.
    t : int
        Stages observed so far.
    last_decision : ndarray of int8, shape (n_runs,)
        The codes of the last ``select`` (-1 before the first).
    decision_counts : ndarray of int64, shape (n_runs, len(decision_names))

    Examples
    --------
    A policy that plays its LCB arm where that arm's LCB is at least the threshold, else the
    baseline arm, with Theorem 1's radius at risk ``delta_t = 6 delta / (pi^2 t^2)``:

    >>> import numpy as np
    >>> import sege_cvx as sc
    >>> class SafeLCB(sc.Policy):
    ...     decision_names = ("lcb", "baseline")
    ...     def __init__(self, arm_set, baseline_arm, baseline_reward, threshold, *, S,
    ...                  noise_sd, lam=0.1, n_runs=1, seed=None, delta=0.1):
    ...         super().__init__(arm_set, baseline_arm, baseline_reward, threshold, S=S,
    ...                          noise_sd=noise_sd, lam=lam, n_runs=n_runs, seed=seed)
    ...         self.delta = delta
    ...         self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)
    ...     def select(self):
    ...         t, conf = self.t + 1, self.confidence
    ...         r = np.full(self.n_runs, sc.confidence_radius(
    ...             t - 1, 6 * self.delta / (np.pi * t) ** 2, dim=self.d, noise_sd=self.noise_sd,
    ...             lam=self.lam, S=self.S, L=self.arm_set.norm_bound()))
    ...         arms = self.arm_set.lcb_arm(conf.theta_hat, conf.V, r)
    ...         safe = conf.lcb(arms, r) >= self.threshold
    ...         self.last_decision = np.where(safe, 0, 1)
    ...         return np.where(safe[:, None], arms, self.baseline_arm)
    ...     def observe(self, arms, rewards):
    ...         self.confidence.update(arms, rewards)
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> policy = SafeLCB(disk, [1.2, 1.9], 2.24, 0.8 * 2.24, S=1.0, noise_sd=0.1, n_runs=4)
    >>> result = sc.simulate(policy, sc.LinearBandit([0.6, 0.8], 0.1, sc.run_seeds(0, 4)[1]), 200)
    >>> policy.t, int(policy.decision_counts.sum()), int(result.stats.total_violations.sum())
    (200, 800, 0)
    """

    #: The name of each decision code of :attr:`last_decision` (``None``: a code the policy
    #: never records).
    decision_names: tuple[str | None, ...] = ()
    n_runs: int
    t: int
    _pending: np.ndarray | None = None
    _inside_call: bool = False
    constraint: KnownConstraint | None = None
    #: The safety models the policy runs on (:data:`SAFETY_MODELS`): ``"stagewise"`` (a reward
    #: floor below a known baseline arm), ``"linear_constraint"`` (an unknown ``gamma*`` with its
    #: own feedback) and ``"linear_constraint_on_theta"`` (``<B x, theta*> <= c``, ``B`` known);
    #: under a constraint the constructor takes ``constraint``.  :meth:`BanditProblem.policy
    #: <sege_cvx.BanditProblem.policy>`, sweeps and :func:`~sege_cvx.testing.check_policy`
    #: refuse the others (:func:`safety_model_problem`).
    safety_models: tuple[str, ...] = ("stagewise",)
    #: Whether :meth:`stage_record` gives a stage record for the compiled stage loop
    #: (:mod:`sege_cvx.stages.loop`): :func:`~sege_cvx.simulate` then plays many
    #: stages per compiled call instead of ``select``/``observe`` stage by stage.
    compiled_stages: bool = False

    @property
    def compiled_kernels(self) -> tuple:
        """The numba kernels whose compilation is most of this policy's cold start (its compiled
        stage loop on its set, if any): a warm-up may compile them in a helper process when
        numba's disk cache does not hold them (:func:`sege_cvx.experiments.paper.warm_up`)."""
        return ()

    def __init__(self, arm_set: ArmSet, baseline_arm: np.ndarray,
                 baseline_reward: float | None = None, threshold: float | None = None, *,
                 S: float, noise_sd: float, lam: float = 0.1, n_runs: int = 1,
                 seed: SeedLike = None, constraint: KnownConstraint | None = None) -> None:
        if constraint is None:
            self._set_problem(arm_set, baseline_arm, baseline_reward, threshold, S, noise_sd,
                              lam, n_runs)
        else:
            self._set_constraint(arm_set, baseline_arm, baseline_reward, threshold, constraint, S,
                                 noise_sd, lam, n_runs)
        #: What the policy knows of the problem's linear constraint (None: the stagewise model).
        self.constraint = constraint
        self.seed = seed
        self._seed_sequences = seed_sequences(seed, self.n_runs)
        self.d = arm_set.dim
        self.t = 0
        names = self.decision_names
        problem = decision_names_problem(type(self))
        if problem is not None:
            raise TypeError(problem)
        self.last_decision = np.full(self.n_runs, -1, dtype=np.int8)
        self.decision_counts = np.zeros((self.n_runs, len(names)), dtype=np.int64)

    @property
    def awaiting_observe(self) -> bool:
        """Whether the last :meth:`select`'s arms still wait for :meth:`observe`."""
        return self._pending is not None

    @functools.cached_property
    def rngs(self) -> list[np.random.Generator]:
        """One ``numpy.random.Generator`` per run, from that run's seed alone (made on first
        use)."""
        return [np.random.default_rng(s) for s in self._seed_sequences]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # The methods the class resolves to, its own or a mixin's, each wrapped once.
        for name, wrap in (("select", _protocol_select), ("observe", _protocol_observe)):
            method = getattr(cls, name)
            if not getattr(method, "_protocol", False):
                setattr(cls, name, wrap(method))

    def select(self) -> np.ndarray:
        """The stage's arms: shape ``(d,)`` for one run, else ``(n_runs, d)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement select()")

    def observe(self, arms: np.ndarray, rewards: np.ndarray | float) -> None:
        """Record the rewards of the arms the last :meth:`select` returned."""
        raise NotImplementedError(f"{type(self).__name__} must implement observe(arms, rewards)")

    def summary(self, stats, stages: list[int]) -> dict:
        """What a study's summary (``summary.json``) says of this policy beyond the figures
        every policy gets: its constants, and figures of its own decisions from the runs'
        ``stats`` (:class:`~sege_cvx.stages.statistics.RunStatistics`) at the reported
        ``stages`` (checkpoints).  JSON-ready; ``{}`` by default."""
        return {}

    def _checked_selection(self, arms) -> np.ndarray:
        """``select``'s arms as ``(n_runs, d)`` float64, and its decisions counted."""
        name = type(self).__name__
        try:
            raw = np.asarray(arms)
        except (TypeError, ValueError) as exc:  # ragged
            raise ValueError(f"{name}.select() must return shape ({self.n_runs}, {self.d})") from exc
        if raw.dtype.kind not in "iuf":  # not bool, complex, str or objects
            raise TypeError(f"{name}.select() must return real numbers, got an array of "
                            f"{raw.dtype}")
        X = raw.astype(np.float64)
        if X.shape == (self.d,) and self.n_runs == 1:
            X = X[None]
        if X.shape != (self.n_runs, self.d):
            raise ValueError(f"{name}.select() must return shape ({self.n_runs}, {self.d}), got "
                             f"{X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError(f"{name}.select() returned a non-finite arm for run "
                             f"{int(np.argmin(np.all(np.isfinite(X), axis=1)))}")
        codes = np.asarray(self.last_decision)
        known = [k for k, n in enumerate(self.decision_names) if n is not None]
        if (codes.shape != (self.n_runs,) or not np.issubdtype(codes.dtype, np.integer)
                or not np.isin(codes, known).all()):
            raise ValueError(f"{name}.select() must set last_decision to {self.n_runs} integer "
                             f"code(s) among {known} (decision_names "
                             f"{self.decision_names}), got {format_value(codes)}")
        self.last_decision = codes.astype(np.int8, copy=False)
        self.decision_counts[np.arange(self.n_runs), self.last_decision] += 1
        return np.ascontiguousarray(X)

    def _checked_observation(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """Validate ``(x, y)`` against the pending arms; returns ``(n_runs, d)`` and ``(n_runs,)``."""
        if self._pending is None:
            raise RuntimeError("observe() called before select()")
        xs = as_finite_array("x", x)
        if xs.size != self._pending.size:
            raise ValueError(f"x must hold {self.n_runs} arm(s) of dimension "
                             f"{self._pending.shape[1]}, got shape {xs.shape}")
        xs = xs.reshape(self._pending.shape)
        if not np.array_equal(xs, self._pending):
            raise ValueError("observe() must receive the arms returned by the last select()")
        # Real numbers only: a string such as "1e3" is refused, not parsed (as_finite_array).
        ys = as_finite_array("observed rewards y", y)
        if ys.size != self.n_runs:
            raise ValueError(f"y must hold {self.n_runs} reward(s), got shape {ys.shape}")
        return xs, ys.reshape(self.n_runs)

    def stage_record(self, t0: int, n_stages: int) -> tuple:
        """The policy's stage record for the ``n_stages`` stages from ``t0`` on, of the compiled stage
        loop (:mod:`sege_cvx.stages.loop`): a ``NamedTuple`` of its state (views of
        its arrays, which the loop updates in place) and those stages' constants, whose class
        has hooks registered (:func:`~sege_cvx.stages.loop.register_stage_hooks`).
        Only where :attr:`compiled_stages`."""
        raise NotImplementedError(f"{type(self).__name__} has no compiled stages")

    def _require_convex(self, arm_set: object) -> None:
        """Refuse a non-convex arm set (a :class:`~sege_cvx.arm_sets.FiniteArmSet`), for policies
        that play convex combinations of arms (SEGE's ``(1 - rho) X^S + rho U``).

        Call it before :meth:`_set_problem`, so that the error is about the set, not the
        baseline arm.  Anything not an :class:`ArmSet` is left to :meth:`_set_problem`.
        """
        if isinstance(arm_set, ArmSet) and not arm_set.is_convex:
            name = type(self).__name__
            raise TypeError(f"{name} needs a convex arm set (it plays convex combinations of "
                            f"arms), but {arm_set!r} is not convex; use sc.ConvexHull(points) "
                            f"for the convex hull of the arms, or CLUCB, which plays the arms "
                            "themselves")

    def _set_common(self, arm_set: ArmSet, S, noise_sd, lam, n_runs) -> None:
        """Validate and store what every policy is given, whatever its safety model."""
        if not isinstance(arm_set, ArmSet):
            raise TypeError(f"arm_set must be an ArmSet, got {type(arm_set).__name__}")
        self.arm_set = arm_set
        self.S = as_scalar("S", S, low=0.0, low_open=True)
        self.noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
        self.lam = as_scalar("lam", lam, low=0.0, low_open=True)
        self.n_runs = as_positive_int("n_runs", n_runs)
        if self.n_runs > MAX_RUNS:
            raise ValueError(f"n_runs must be at most {MAX_RUNS} (split larger studies into "
                             f"batches), got {self.n_runs}")

    def _set_problem(self, arm_set: ArmSet, baseline_arm, baseline_reward, threshold, S, noise_sd,
                     lam, n_runs) -> None:
        """Validate and store what every safe-bandit policy is given (Assumptions 1-3, b < b0).

        A baseline arm on the boundary may miss exact membership by rounding (up to 1e-9); it is
        then moved exactly into the set (:meth:`ArmSet.pull_inside`) and its reward bound is
        certified for the arm actually played: ``<x0', theta*> >= b0 - S ||x0' - x0||`` by
        Cauchy-Schwarz and Assumption 1.  That certified bound is ``baseline_reward`` from then
        on (rho-bar, the safe-arm test, CLUCB's budget), and it must still exceed ``threshold``.
        On a set that is not convex (a finite list of arms) nothing lies between arms to move
        it to: the baseline arm must then be one of the arms exactly.

        On a lifted arm set the baseline arm is certified with a witness found by a solve;
        ``baseline_witness`` (shape ``(witness_dim,)``, empty for other sets) holds it, for
        convex combinations with the baseline.
        """
        self._set_common(arm_set, S, noise_sd, lam, n_runs)
        x0 = as_vector("baseline_arm", baseline_arm, arm_set.dim)
        b0 = as_scalar("baseline_reward", baseline_reward)
        if not arm_set.is_convex and not arm_set.contains(x0, tol=0.0):
            raise ValueError(f"baseline_arm {format_value(x0)} must be one of the arms of {arm_set!r} "
                             f"exactly{_nearest_arm(arm_set, x0)}")
        if not arm_set.contains(x0, tol=1e-9):
            raise ValueError(f"baseline_arm {x0} lies outside the arm set")
        inside, witness, ok = arm_set.pull_inside(x0[None], return_witnesses=True)
        if not ok[0]:
            raise ValueError(f"baseline_arm {x0} could not be moved exactly into the arm set")
        self.baseline_arm = inside[0]
        #: The baseline arm's witness on a lifted arm set (shape ``(witness_dim,)``).
        self.baseline_witness = witness[0]
        #: ``||x0' - x0||``: how far the given baseline arm was moved into the set (0 if inside).
        self.baseline_shift = float(np.linalg.norm(self.baseline_arm - x0))
        if self.baseline_shift > 0.0:
            # A few ulps more than S * shift, so that rounding cannot overstate the bound.
            loss = self.S * self.baseline_shift
            b0 = b0 - loss - 4.0 * np.finfo(float).eps * (abs(b0) + loss)
        self.baseline_reward = b0
        b = as_scalar("threshold", threshold)
        if not b < b0:
            moved = (f" (the baseline arm was moved {self.baseline_shift:.3g} into the set, so "
                     f"its certified reward is b0 - S * {self.baseline_shift:.3g} = {float(b0)!r})"
                     if self.baseline_shift > 0.0 else "")
            raise ValueError(f"threshold must be < baseline_reward {float(b0)!r}{moved}, got {b!r}")
        floor = margin_floor(arm_set, self.S, b0)
        if not _margin_at_least(b0, b, floor):
            largest = b0 - floor
            while not _margin_at_least(b0, largest, floor):  # the suggestion must itself pass
                largest = np.nextafter(largest, -np.inf)
            raise ValueError(f"threshold {b!r} is {b0 - b:.3g} below baseline_reward {float(b0)!r}, "
                             f"a margin lost to rounding: b0 - b must be at least {floor:.3g} "
                             f"(64 d eps max(S L, |b0|), L = {arm_set.norm_bound():.6g} bounding "
                             f"the arms' norm); use threshold <= {float(largest)!r}")
        self.threshold = b

    def _set_constraint(self, arm_set: ArmSet, safe_arm, baseline_reward, threshold,
                        constraint: KnownConstraint, S, noise_sd, lam, n_runs) -> None:
        """Validate and store the linear-constraint model's problem: the safe arm (exactly in the
        set: the model knows its constraint value, not a bound) and what is known of the
        constraint.  ``baseline_reward`` and ``threshold`` belong to the stagewise model: None.
        ``threshold`` is then ``-inf`` and ``baseline_reward`` NaN (no reward floor)."""
        if not isinstance(arm_set, ArmSet):
            raise TypeError(f"arm_set must be an ArmSet, got {type(arm_set).__name__}")
        if not isinstance(constraint, KnownConstraint):
            raise TypeError(f"constraint must be a sc.KnownConstraint (what "
                            f"LinearConstraint.known(...) tells a policy), got "
                            f"{type(constraint).__name__}")
        if baseline_reward is not None or threshold is not None:
            raise TypeError("under a linear constraint a policy takes no baseline_reward or "
                            "threshold (they are the stagewise model's): pass None")
        self._set_common(arm_set, S, noise_sd, lam, n_runs)
        x0 = as_vector("baseline_arm", safe_arm, arm_set.dim)
        if not arm_set.contains(x0, tol=0.0):
            raise ValueError(f"the safe arm {format_value(x0)} must lie in {arm_set!r} exactly "
                             "(contains(x, tol=0)): its constraint value is known for that arm "
                             "only")
        if constraint.B is not None and constraint.B.shape != (arm_set.dim, arm_set.dim):
            raise ValueError(f"the constraint's B has shape {constraint.B.shape}, not "
                             f"({arm_set.dim}, {arm_set.dim})")
        inner = getattr(type(self).observe, "__wrapped__", type(self).observe)
        if constraint.separate_feedback and inner is not Policy.observe:  # its own observe
            code = getattr(inner, "__code__", None)
            if code is not None and code.co_argcount < 4:
                raise TypeError(f"{type(self).__name__}.observe must take (arms, rewards, "
                                "constraint_values): this problem's constraint returns its own "
                                "feedback each stage")
        self.baseline_arm = np.array(x0)
        self.baseline_witness = np.empty(0)
        self.baseline_shift = 0.0
        self.baseline_reward = float("nan")
        self.threshold = -np.inf

    def _check_lam(self, L: float) -> None:
        """Reject a ``lam`` lost to rounding in ``V = lam I + x x^T`` for arms of norm up to ``L``.

        The Cholesky factor of ``V`` is accurate while ``lambda_min(V) >= lam`` exceeds the
        rounding of its entries, about ``d eps L^2`` after one observation; below that the
        regularization vanishes in floating point and ``V`` can be singular.  This checks the
        first observations only; should ``V`` later lose definiteness (many repeats of one arm
        with ``lam`` near this floor), :meth:`ConfidenceEllipsoid.update` raises a
        ``ValueError`` and leaves that run's state as it was.
        """
        L = min(L, self.arm_set.norm_bound())  # a loose user L must not reject a good lam
        floor = 16.0 * self.arm_set.dim * np.finfo(float).eps * L * L
        if self.lam < floor:
            raise ValueError(f"lam = {self.lam!r} is below the precision of V = lam I + x x^T for "
                             f"arms of norm up to L = {L:.6g}: use lam >= {floor:.3g}")


#: The smallest safety margin ``b0 - b`` accepted, in units of ``d eps max(S L, |b0|)``: the
#: rounding of an arm's coordinates, of its reward ``<x, theta*>`` and of a pull-in toward the
#: interior (a relative contraction of 1e-15 to 1e-14, :mod:`sege_cvx.arm_sets.kernels.pull_in`) each moves a
#: reward by a few ``eps S L``; a margin below their sum is not one the arithmetic can keep
#: (with ``b = b0 - 4 ulp`` on the paper's disk, SEGE and ROFUL played arms below ``b``).
MARGIN_ROUNDING = 64.0


def _protocol_select(select):
    """``select`` wrapped in the protocol's checks (:class:`Policy`); an override calling its
    parent's ``select`` is checked once, by the outermost call."""
    @functools.wraps(select)
    def checked(self):
        if self._inside_call:
            return select(self)
        _require_init(self)
        if self._pending is not None:
            raise RuntimeError("select() called twice without observe()")
        # -1 until select sets this stage's codes: a stale last_decision is not counted again.
        self.last_decision = np.full(self.n_runs, -1, dtype=np.int8)
        self._inside_call = True
        try:
            arms = select(self)
        finally:
            self._inside_call = False
        self._pending = self._checked_selection(arms)
        return self._pending[0].copy() if self.n_runs == 1 else self._pending.copy()
    checked._protocol = True
    return checked


def _require_init(policy: Policy) -> None:
    if "d" not in policy.__dict__:
        raise TypeError(f"{type(policy).__name__}.__init__ must call super().__init__(arm_set, "
                        "baseline_arm, baseline_reward, threshold, S=..., noise_sd=..., lam=..., "
                        "n_runs=..., seed=...)")


def _protocol_observe(observe):
    """``observe`` wrapped in the protocol's checks (:class:`Policy`): it receives the validated
    arms ``(n_runs, d)`` and rewards ``(n_runs,)``; the stage counts (:attr:`Policy.t`) once it
    returns; should it raise, the arms stay pending."""
    @functools.wraps(observe)
    def checked(self, arms, rewards, constraint_values=None):
        feedback = () if constraint_values is None else (constraint_values,)
        if self._inside_call:
            return observe(self, arms, rewards, *feedback)
        _require_init(self)
        xs, ys = self._checked_observation(arms, rewards)
        known = self.constraint
        if known is not None and known.separate_feedback:
            if constraint_values is None:
                raise TypeError(f"{type(self).__name__}.observe needs constraint_values: this "
                                "problem's constraint returns its own feedback each stage")
            zs = as_finite_array("constraint_values", constraint_values)
            if zs.size != self.n_runs:
                raise ValueError(f"constraint_values must hold {self.n_runs} value(s), got shape "
                                 f"{zs.shape}")
            feedback = (zs.reshape(self.n_runs),)
        elif constraint_values is not None:
            raise TypeError("constraint_values given, but this problem's constraint returns no "
                            "feedback of its own")
        self._inside_call = True
        try:
            observe(self, xs, ys, *feedback)
        finally:
            self._inside_call = False
        self._pending = None
        self.t += 1
    checked._protocol = True
    return checked


def margin_floor(arm_set: ArmSet, S: float, baseline_reward: float) -> float:
    """The smallest ``b0 - b`` a policy accepts on ``arm_set`` (:data:`MARGIN_ROUNDING`)."""
    scale = max(S * arm_set.norm_bound(), abs(float(baseline_reward)))
    return MARGIN_ROUNDING * arm_set.dim * float(np.finfo(float).eps) * scale


def _margin_at_least(b0: float, b: float, floor: float) -> bool:
    """``b0 - b >= floor`` in exact arithmetic (the float difference can round up)."""
    return Fraction(float(b0)) - Fraction(float(b)) >= Fraction(float(floor))


def _nearest_arm(arm_set: ArmSet, x: np.ndarray) -> str:
    """``"; the nearest is row k [...], max-abs distance ..."`` for sets that can tell (finite)."""
    nearest = getattr(arm_set, "nearest", None)
    if nearest is None:
        return ""
    k, distance = nearest(x)
    return (f"; the nearest is row {k} {format_value(arm_set.arms[k])}, at max-abs distance "
            f"{distance:.3g}")
