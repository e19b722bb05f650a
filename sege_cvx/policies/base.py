"""The policy protocol every policy follows, built-in or a user's: :class:`Policy`."""

from __future__ import annotations

import functools
import inspect
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from .._random import MAX_RUNS, SeedLike, seed_sequences
from .._validation import as_finite_array, as_positive_int, as_scalar, format_value
from ..arm_sets.base import ArmSet
from ..safety import SAFETY_MODELS, KnownConstraint
from ..setting import SafeSetting
from ..stages.loop import Decisions

if TYPE_CHECKING:
    from ..confidence.ellipsoid import ConfidenceEllipsoid
    from ..problems.problem import BanditProblem

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


#: The most decision codes a policy may name (:attr:`Policy.last_decision` is int8).
MAX_DECISIONS = 127


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
    if len(names) > MAX_DECISIONS:
        return (f"{label} has {len(names)} decision codes; at most {MAX_DECISIONS} (a code is "
                "an int8)")
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


def model_problem(cls: type, model: str) -> str | None:
    """Why policy class ``cls`` does not run on safety model ``model``, in one sentence naming
    the models it runs on (None if it runs on it)."""
    models = cls.safety_models
    if model in models:
        return None
    runs_on = " and on ".join(SAFETY_MODELS.get(m, repr(m)) for m in models)
    return (f"{cls.__name__} runs on {runs_on}, not on {SAFETY_MODELS.get(model, repr(model))} "
            f"(sc.registered_policies({model!r}) names the policies that do)")


class Policy:
    """The base of every safe-bandit policy: SEGE, CLUCB, ROFUL, GNOP, SafeTS, Safe-LUCB and a
    user's own.

    A policy is told one :class:`~sege_cvx.SafeSetting` (the arm set, the safe arm, ``S``, the
    noise level and the safety model) and acts on ``n_runs`` independent runs at once.  A
    subclass declares :attr:`decision_names` (and :attr:`safety_models` if not the stagewise
    floor alone) and implements two methods:

    - ``select()``: the stage's arms, shape ``(n_runs, d)`` (``(d,)`` is accepted for one run),
      and sets :attr:`last_decision`, one code per run indexing :attr:`decision_names`;
    - ``observe(arms, rewards, constraint_values)``: the arms ``select`` returned, shape
      ``(n_runs, d)``, their noisy rewards, shape ``(n_runs,)``, and, where the setting's
      constraint returns feedback of its own (:attr:`KnownConstraint.separate_feedback
      <sege_cvx.KnownConstraint.separate_feedback>`), its noisy values, shape ``(n_runs,)``;
      ``constraint_values`` is None otherwise.  One signature for both safety models.

    The base wraps both (the methods the class resolves to, its own or a mixin's, once per
    class): it refuses ``select`` twice without ``observe`` and ``observe`` of other arms,
    checks shapes, finiteness and decision codes, counts each run's decisions
    (:attr:`decision_counts`) and advances :attr:`t`; ``select`` returns a copy, shape ``(d,)``
    for a single run.  It never checks that the arms lie in the set (that is the policy's duty:
    :meth:`~sege_cvx.ArmSet.pull_inside` and ``contains(x, tol=0)`` decide it exactly).  A
    policy never sees ``theta*``.

    Parameters
    ----------
    setting : SafeSetting
        What the policy is told of the problem; its safety model must be one of
        :attr:`safety_models` (a ``TypeError`` otherwise).
    lam : float, default 0.1
        Ridge regularization of ``V = lam I + sum x x^T``.
    n_runs : int, default 1
    seed : int, SeedSequence, sequence of SeedSequence, or None
        One ``SeedSequence`` per run (:func:`sege_cvx.run_seeds`): run ``i`` draws from
        :attr:`rngs` ``[i]``, the same numbers alone (``seed=[seq_i]``) or in any batch.

    Attributes
    ----------
    setting, lam, n_runs, seed
        As given (validated).
    d : int
        The dimension.
    rngs : list of numpy.random.Generator
        One generator per run, from that run's seed alone.
    t : int
        Stages observed so far.
    last_decision : ndarray of int8, shape (n_runs,)
        The codes of the last ``select`` (-1 before the first).
    decision_counts : ndarray of int64, shape (n_runs, len(decision_names))
    confidence : ConfidenceEllipsoid or None
        The policy's confidence set (``V`` and ``theta_hat`` per run), if it has one.

    Examples
    --------
    A policy that plays its LCB arm where that arm's LCB is at least the threshold, else the
    safe arm, with Theorem 1's radius at risk ``delta_t = 6 delta / (pi^2 t^2)``:

    >>> import numpy as np
    >>> import sege_cvx as sc
    >>> class SafeLCB(sc.Policy):
    ...     decision_names = ("lcb", "baseline")
    ...     def __init__(self, setting, *, lam=0.1, n_runs=1, seed=None, delta=0.1):
    ...         super().__init__(setting, lam=lam, n_runs=n_runs, seed=seed)
    ...         self.delta = delta
    ...         self.confidence = sc.ConfidenceEllipsoid(self.d, self.lam, self.n_runs)
    ...     def select(self):
    ...         s, t, conf = self.setting, self.t + 1, self.confidence
    ...         r = np.full(self.n_runs, sc.confidence_radius(
    ...             t - 1, 6 * self.delta / (np.pi * t) ** 2, dim=self.d, noise_sd=s.noise_sd,
    ...             lam=self.lam, S=s.S, L=s.arm_set.norm_bound()))
    ...         arms = s.arm_set.lcb_arm(conf.theta_hat, conf.V, r)
    ...         safe = conf.lcb(arms, r) >= s.safety.threshold
    ...         self.last_decision = np.where(safe, 0, 1)
    ...         return np.where(safe[:, None], arms, s.safe_arm)
    ...     def observe(self, arms, rewards, constraint_values):
    ...         self.confidence.update(arms, rewards)
    >>> disk = sc.Ball(center=[1.0, 1.0], radius=1.0)
    >>> floor = sc.RewardFloor(baseline_reward=2.24, threshold=0.8 * 2.24)
    >>> setting = sc.SafeSetting(disk, [1.2, 1.9], S=1.0, noise_sd=0.1, safety=floor)
    >>> policy = SafeLCB(setting, n_runs=4)
    >>> bandit = sc.LinearBandit([0.6, 0.8], 0.1, sc.run_seeds(0, 4)[1],
    ...                          threshold=floor.threshold)
    >>> result = sc.simulate(policy, bandit, 200)
    >>> policy.t, int(policy.decision_counts.sum()), int(result.stats.total_violations.sum())
    (200, 800, 0)
    """

    #: The name of each decision code of :attr:`last_decision` (``None``: a code the policy
    #: never records).
    decision_names: tuple[str | None, ...] = ()
    #: The safety models the policy runs on (keys of :data:`sege_cvx.safety.SAFETY_MODELS`):
    #: ``"stagewise"`` (a :class:`~sege_cvx.RewardFloor`), ``"linear_constraint"`` (a
    #: :class:`~sege_cvx.KnownConstraint` with its own feedback) and
    #: ``"linear_constraint_on_theta"`` (one with ``B``).  The constructor refuses a setting of
    #: another model.
    safety_models: tuple[str, ...] = ("stagewise",)
    #: Whether the policy keeps every stage's safety criterion (the floor, or the constraint)
    #: with high probability; :func:`~sege_cvx.testing.check_policy` checks that it does.
    #: CLUCB keeps only the conservative (cumulative) constraint: False.
    stagewise_safe: bool = True
    #: Whether :meth:`stage_record` gives a stage record for the compiled stage loop
    #: (:mod:`sege_cvx.stages.loop`): :func:`~sege_cvx.simulate` then plays many
    #: stages per compiled call instead of ``select``/``observe`` stage by stage.
    compiled_stages: bool = False
    #: The policy's confidence set, if it has one (:func:`~sege_cvx.simulate`'s snapshots read
    #: it).
    confidence: ConfidenceEllipsoid | None = None
    n_runs: int
    t: int
    _pending: np.ndarray | None = None
    _inside_call: bool = False

    def __init__(self, setting: SafeSetting, *, lam: float = 0.1, n_runs: int = 1,
                 seed: SeedLike = None) -> None:
        if not isinstance(setting, SafeSetting):
            raise TypeError(f"{type(self).__name__} is told a sc.SafeSetting, got "
                            f"{type(setting).__name__}")
        if (wrong := model_problem(type(self), setting.safety_model)) is not None:
            raise TypeError(wrong)
        if (bad := decision_names_problem(type(self))) is not None:
            raise TypeError(bad)
        self.setting = setting
        self.lam = as_scalar("lam", lam, low=0.0, low_open=True)
        self.n_runs = as_positive_int("n_runs", n_runs)
        if self.n_runs > MAX_RUNS:
            raise ValueError(f"n_runs must be at most {MAX_RUNS} (split larger studies into "
                             f"batches), got {self.n_runs}")
        self.seed = seed
        self._seed_sequences = seed_sequences(seed, self.n_runs)
        self.d = setting.dim
        self.t = 0
        self.last_decision = np.full(self.n_runs, -1, dtype=np.int8)
        self.decision_counts = np.zeros((self.n_runs, len(self.decision_names)), dtype=np.int64)

    @classmethod
    def defaults(cls, problem: BanditProblem) -> dict[str, Any]:
        """The keyword values this policy takes on ``problem`` where its caller gives none
        (:meth:`BanditProblem.policy <sege_cvx.BanditProblem.policy>`, sweeps and
        :func:`~sege_cvx.testing.check_policy` ask it), as BoTorch's input constructors: values
        a policy derives from the problem rather than from its own constructor's defaults.
        ``{}`` by default; a subclass may read ``problem.setting``, never ``problem``'s truth."""
        return {}

    @property
    def compiled_kernels(self) -> tuple:
        """The numba kernels whose compilation is most of this policy's cold start (its compiled
        stage loop on its set, if any): a warm-up may compile them in a helper process when
        numba's disk cache does not hold them (:func:`sege_cvx.experiments.paper.warm_up`)."""
        return ()

    @property
    def solver_fallbacks(self) -> np.ndarray:
        """Per run: the stages whose computed arm could not be verified (a solver failure, an
        arm not in the set exactly, a failed certificate), so that a provably safe arm was
        played instead.  Zeros for a policy that never falls back."""
        return np.zeros(self.n_runs, dtype=np.int64)

    @property
    def fallback_reasons(self) -> Counter[str]:
        """How often each reason (a status such as ``"NotMember"``) forced a fallback, over all
        runs; empty for a policy that never falls back."""
        return Counter()

    def radii(self) -> np.ndarray:
        """Every run's confidence radius for its next stage (``t + 1``), shape ``(n_runs,)``;
        NaN for a policy without a confidence set."""
        return np.full(self.n_runs, np.nan)

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
        if "observe" in cls.__dict__:
            _check_observe_signature(cls, cls.__dict__["observe"])
        # The methods the class resolves to, its own or a mixin's, each wrapped once.
        for name, wrap in (("__init__", _protocol_init), ("select", _protocol_select),
                           ("observe", _protocol_observe)):
            method = getattr(cls, name)
            if not getattr(method, "_protocol", False):
                setattr(cls, name, wrap(method))

    def parameters(self) -> dict[str, Any]:
        """The constructor's keyword parameters as they are in effect, given or chosen by
        default (SEGE's ``c``, ROFUL's ``n_directions``): each one the policy keeps as an
        attribute of the same name holding a plain number, string, bool or None (the setting,
        the runs and the seed aside).  A sweep records them per cell in its manifest.

        Examples
        --------
        >>> import sege_cvx as sc
        >>> sc.paper_problem().policy("CLUCB", 2).parameters()
        {'lam': 0.1, 'delta': 0.1, 'n_arms': 41, 'radius': 'theorem1'}
        """
        found = {}
        for name in inspect.signature(type(self)).parameters:
            if name in ("setting", "n_runs", "seed") or name not in vars(self):
                continue
            value = vars(self)[name]
            value = value.item() if isinstance(value, np.generic) else value
            if value is None or isinstance(value, bool | int | float | str):
                found[name] = value
        return found

    def select(self) -> np.ndarray:
        """The stage's arms: shape ``(d,)`` for one run, else ``(n_runs, d)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement select()")

    def observe(self, arms: np.ndarray, rewards: np.ndarray,
                constraint_values: np.ndarray | None) -> None:
        """Record the rewards (and the constraint's values, where it has feedback of its own)
        of the arms the last :meth:`select` returned."""
        raise NotImplementedError(f"{type(self).__name__} must implement observe(arms, rewards, "
                                  "constraint_values)")

    def summary(self, stats, stages: list[int]) -> dict:
        """What a study's summary (``summary.json``) says of this policy beyond the figures
        every policy gets: its constants, and figures of its own decisions from the runs'
        ``stats`` (:class:`~sege_cvx.stages.statistics.RunStatistics`) at the reported
        ``stages`` (checkpoints).  JSON-ready; ``{}`` by default."""
        return {}

    def stage_record(self, t0: int, n_stages: int) -> tuple:
        """The policy's stage record for the ``n_stages`` stages from ``t0`` on, of the compiled
        stage loop (:mod:`sege_cvx.stages.loop`): a ``NamedTuple`` of its state (views of its
        arrays, which the loop updates in place) and those stages' constants, whose class has
        hooks registered (:func:`~sege_cvx.stages.loop.register_stage_hooks`).  Only where
        :attr:`compiled_stages`."""
        raise NotImplementedError(f"{type(self).__name__} has no compiled stages")

    def decision_record(self) -> Decisions:
        """:attr:`decision_counts` and :attr:`last_decision` as a stage record's ``decisions``
        field (:class:`~sege_cvx.stages.loop.Decisions`: views, which the loop updates)."""
        return Decisions(counts=self.decision_counts, last=self.last_decision)

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

    def _checked_observation(self, x, y, z) -> tuple:
        """Validate ``(x, y, z)`` against the pending arms and the setting's feedback: returns
        ``(n_runs, d)``, ``(n_runs,)`` and ``(n_runs,)`` or None."""
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
        safety = self.setting.safety
        if isinstance(safety, KnownConstraint) and safety.separate_feedback:
            if z is None:
                raise TypeError(f"{type(self).__name__}.observe needs constraint_values: this "
                                "setting's constraint returns its own feedback each stage")
            zs = as_finite_array("constraint_values", z)
            if zs.size != self.n_runs:
                raise ValueError(f"constraint_values must hold {self.n_runs} value(s), got "
                                 f"shape {zs.shape}")
            z = zs.reshape(self.n_runs)
        elif z is not None:
            raise TypeError("constraint_values given, but this setting's safety model returns "
                            "no constraint feedback of its own")
        return xs, ys.reshape(self.n_runs), z

    def _require_convex(self) -> None:
        """Refuse a non-convex arm set (a :class:`~sege_cvx.FiniteArmSet`), for policies that
        play convex combinations of arms (SEGE's ``(1 - rho) X^S + rho U``)."""
        arm_set = self.setting.arm_set
        if not arm_set.is_convex:
            name = type(self).__name__
            raise TypeError(f"{name} needs a convex arm set (it plays convex combinations of "
                            f"arms), but {arm_set!r} is not convex; use sc.ConvexHull(points) "
                            f"for the convex hull of the arms, or CLUCB, which plays the arms "
                            "themselves")

    def _check_lam(self, L: float) -> None:
        """Reject a ``lam`` lost to rounding in ``V = lam I + x x^T`` for arms of norm up to ``L``.

        The Cholesky factor of ``V`` is accurate while ``lambda_min(V) >= lam`` exceeds the
        rounding of its entries, about ``d eps L^2`` after one observation; below that the
        regularization vanishes in floating point and ``V`` can be singular.  This checks the
        first observations only; should ``V`` later lose definiteness (many repeats of one arm
        with ``lam`` near this floor), :meth:`ConfidenceEllipsoid.update` raises a
        ``ValueError`` and leaves that run's state as it was.
        """
        arm_set: ArmSet = self.setting.arm_set
        L = min(L, arm_set.norm_bound())  # a loose user L must not reject a good lam
        floor = 16.0 * arm_set.dim * np.finfo(float).eps * L * L
        if self.lam < floor:
            raise ValueError(f"lam = {self.lam!r} is below the precision of V = lam I + x x^T for "
                             f"arms of norm up to L = {L:.6g}: use lam >= {floor:.3g}")


def _check_observe_signature(cls: type, observe) -> None:
    """Refuse, when the class is defined, an ``observe`` that cannot take
    ``(arms, rewards, constraint_values)``."""
    try:
        inspect.signature(observe).bind(None, None, None, None)
    except TypeError:
        raise TypeError(f"{cls.__name__}.observe must take (self, arms, rewards, "
                        "constraint_values): one signature for both safety models "
                        "(constraint_values is None unless the setting's constraint returns "
                        "feedback of its own)") from None
    except ValueError:  # no signature to read (a builtin): left to the call
        pass


#: Keywords a user may pass a policy that belong to its setting, not to its constructor.
_SETTING_KEYWORDS = ("constraint", "safety", "threshold", "theta_star", "safe_arm", "arm_set",
                     "noise_sd", "S", "b0", "baseline_reward")


def _protocol_init(init):
    """``__init__`` wrapped so that a call its signature refuses is one line naming the class,
    the argument and the parameters it has (Python's own message names neither the class's
    parameters nor where a setting's value goes)."""
    try:
        signature = inspect.signature(init)
    except (TypeError, ValueError):  # no signature to read: left to the call
        return init

    @functools.wraps(init)
    def checked(self, *args, **kwargs):
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            name = type(self).__name__
            # The class's own parameters first: a subclass that forwards **kwargs to this
            # (its parent's) constructor has its own keywords too.
            keywords = []
            for fn in dict.fromkeys((type(self).__init__, init)):
                try:
                    params = inspect.signature(fn).parameters
                except (TypeError, ValueError):
                    continue
                keywords += [p for p in list(params)[1:] if p not in keywords and params[p].kind
                             not in (inspect.Parameter.VAR_POSITIONAL,
                                     inspect.Parameter.VAR_KEYWORD)]
            given = [k for k in kwargs if k not in signature.parameters]
            hint = ""
            if any(k in _SETTING_KEYWORDS for k in given):
                hint = ("; the problem's arms, truth and safety model (a constraint included) "
                        "reach a policy through its setting, sc.SafeSetting(..., safety=...), "
                        "as problem.policy(...) builds it")
            raise TypeError(f"{name}: {str(exc).split('() ', 1)[-1]} (its parameters: "
                            f"{', '.join(keywords)}){hint}") from None
        return init(self, *args, **kwargs)
    checked._protocol = True
    return checked


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
        raise TypeError(f"{type(policy).__name__}.__init__ must call super().__init__(setting, "
                        "lam=..., n_runs=..., seed=...)")


def _protocol_observe(observe):
    """``observe`` wrapped in the protocol's checks (:class:`Policy`): it receives the validated
    arms ``(n_runs, d)``, rewards ``(n_runs,)`` and constraint values (``(n_runs,)`` or None);
    the stage counts (:attr:`Policy.t`) once it returns; should it raise, the arms stay
    pending."""
    @functools.wraps(observe)
    def checked(self, arms, rewards, constraint_values=None):
        if self._inside_call:
            return observe(self, arms, rewards, constraint_values)
        _require_init(self)
        xs, ys, zs = self._checked_observation(arms, rewards, constraint_values)
        self._inside_call = True
        try:
            observe(self, xs, ys, zs)
        finally:
            self._inside_call = False
        self._pending = None
        self.t += 1
    checked._protocol = True
    return checked
