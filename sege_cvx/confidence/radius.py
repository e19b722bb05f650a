r"""The confidence radius every policy uses: the paper's ``r_t`` or the self-normalized bound.

Two choices (``radius=`` of every policy):

* ``"theorem1"``: the paper's eq. (r_t),
  ``r_t(delta) = sigma sqrt(d log((1 + t L^2 / lam) / delta)) + sqrt(lam) S``, a function of the
  stage (or observation count) and ``delta`` only (:class:`~.ellipsoid.RadiusFormula`).
* ``"self_normalized"``: the bound Theorem 1 is derived from (Abbasi-Yadkori, Pal and
  Szepesvari, NeurIPS 2011, Theorem 2),
  ``sigma sqrt(2 log(det(V)^{1/2} det(lam I)^{-1/2} / delta)) + sqrt(lam) S``, which depends on
  the run's own ``V``.  Since ``det V <= (lam + t L^2 / d)^d``, it is never larger than
  ``sigma sqrt(d log(1 + t L^2 / (d lam)) + 2 log(1 / delta)) + sqrt(lam) S``, and it needs no
  bound ``L`` on the arms.

The self-normalized bound holds simultaneously for all ``t`` with probability ``1 - delta``,
and for ``d >= 2`` so does eq. (r_t), which is then at least as large (``d log(1/delta) >=
2 log(1/delta)`` and ``log det V - d log lam <= d log(1 + t L^2 / lam)``).  In ``d = 1`` eq.
(r_t) carries ``log(1/delta)`` where Theorem 2 has ``2 log(1/delta)``: it is then smaller than
the bound it is derived from, and not implied by it; ``"theorem1"`` implements the paper as
written.  ``log det V`` is
``2 sum_k log L_kk`` from the Cholesky factor ``L`` the confidence set maintains
(:mod:`.cholesky`): no determinant is formed, so it neither overflows nor loses accuracy as
``V`` grows.

Kernels receive a radius as a *rule* and a *stage value*: the rule is a record
(a ``NamedTuple`` of the radius's constants: :class:`Theorem1Rule`, :class:`SelfNormalizedRule`)
and the stage value what the policy computes once per stage (or per observation count) and
shares among its runs: for ``"theorem1"``, ``r_t`` itself; for ``"self_normalized"``,
``2 log(1/delta)``, to which each run adds its own ``log det`` term.  A run's radius is thus
computed from its own data only, whatever its batch.

The radii are a registry, as the geometries are (:mod:`sege_cvx.arm_sets.kernels.registry`):
each is a :class:`ConfidenceRadius` subclass, registered by name (:func:`register_radius`),
with its rule's record class (``Rule``) and its compiled radius (``kernel``, an
``njit(inline="always")`` function ``kernel(rule, stage_value, chol) -> float``).  Compiled
stages call the placeholder :func:`radius_one`; the stage loop binds it to the kernel of the
stage record's ``radius`` class when it compiles (:func:`radius_bindings`), and numba inlines it.
A user's radius is registered the same way, and every policy's ``radius=`` takes its name.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import numpy as np

from .._numba import bind_globals, njit
from .._validation import as_scalar
from .ellipsoid import RadiusFormula
from .validation import as_spd_batch

_UNBOUND = ("a placeholder, bound to a radius rule's kernel when a stage loop compiles "
            "(sege_cvx.stages.loop)")


def radius_one(rule, stage_value, chol) -> float:
    """One run's radius from its rule (a record), the stage's value and its Cholesky factor
    ``chol`` of ``V``."""
    raise NotImplementedError(_UNBOUND)


class Theorem1Rule(NamedTuple):
    """The paper's eq. (r_t): its stage value is ``r_t`` itself, which the kernel returns;
    ``offset = sqrt(lam) S``, the radius at ``V = lam I`` less its noise term, for reference.
    (A record of one field: numba passes a stage record by its fields, and four unused ones
    here cost SEGE's polyhedral stages a tenth, measured.)"""

    offset: float


@njit(inline="always")
def theorem1_radius(rule, stage_value, chol) -> float:
    """``r_t``: the stage value (eq. (r_t) depends on the stage and ``delta`` only)."""
    return stage_value


class SelfNormalizedRule(NamedTuple):
    """The constants of Abbasi-Yadkori et al.'s Theorem 2: ``noise_sd``,
    ``half_d_log_lam = (d/2) log lam`` and ``offset = sqrt(lam) S``; its stage value is
    ``2 log(1/delta)``."""

    noise_sd: float
    half_d_log_lam: float
    offset: float


@njit(inline="always")
def self_normalized_radius_one(rule, stage_value, chol) -> float:
    """``noise_sd sqrt(log det V - d log lam + 2 log(1/delta)) + sqrt(lam) S``, with
    ``log det V - d log lam = 2 (sum_k log L_kk - (d/2) log lam)`` (at least 0: ``V >= lam I``;
    clipped at 0 against rounding)."""
    s = 0.0
    for k in range(chol.shape[0]):
        s += math.log(chol[k, k])
    return (rule.noise_sd * math.sqrt(max(2.0 * (s - rule.half_d_log_lam), 0.0) + stage_value)
            + rule.offset)


def _radii_all(rule, stage_values, chol) -> np.ndarray:
    """:func:`radius_one` for every run (``stage_values`` of shape ``(n,)``, ``chol`` of shape
    ``(n, d, d)``); compiled per rule class (:meth:`ConfidenceRadius.radii`)."""
    n = chol.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = radius_one(rule, stage_values[i], chol[i])
    return out


class ConfidenceRadius:
    """A confidence radius, with its constants fixed: the base of every registered radius.

    A subclass sets ``name`` (what ``radius=`` takes), ``Rule`` (its rule's ``NamedTuple``
    class) and ``kernel`` (``njit(inline="always")``, ``kernel(rule, stage_value, chol) ->
    float``); its constructor takes the policy's constants and sets :attr:`rule`; it defines
    :meth:`stage_value`.  Register it with :func:`register_radius`.

    Parameters
    ----------
    dim : int
    noise_sd, lam, S : float
        ``sigma_eta``, ``lambda`` and the bound ``||theta*|| <= S`` (validated by the policy).
    L : float
        Bound on the norm of the regressors (``"theorem1"`` uses it).

    Attributes
    ----------
    rule : NamedTuple
        The ``Rule`` record the kernel takes.

    Examples
    --------
    >>> import numpy as np
    >>> r = make_radius("self_normalized", dim=2, noise_sd=1.0, lam=0.1, S=1.0, L=2.0)
    >>> chol = np.sqrt(0.1) * np.eye(2)[None]          # V = lam I: no observation yet
    >>> round(float(r.radii(chol, np.full(1, r.stage_value(0, 0.1)))[0]), 6)
    2.462194
    """

    name: ClassVar[str]
    Rule: ClassVar[type]
    kernel: ClassVar[Callable]

    def __init__(self, dim: int, noise_sd: float, lam: float, S: float, L: float) -> None:
        raise NotImplementedError(f"{type(self).__name__} must set its rule")

    def stage_value(self, n: float, delta: float) -> float:
        """What the kernel takes per stage, at ``n`` (the stage index or the observation count,
        as the policy defines it) and ``delta``."""
        raise NotImplementedError

    def stage_values(self, start: int, stop: int, delta: float) -> np.ndarray:
        """:meth:`stage_value` at ``n = start, ..., stop - 1``."""
        return np.array([self.stage_value(n, delta) for n in range(start, stop)], dtype=float)

    def radii(self, chol: np.ndarray, stage_values: np.ndarray) -> np.ndarray:
        """The radius of every run from its Cholesky factor of ``V`` and its stage value."""
        return _radii_kernel(type(self.rule))(self.rule, np.ascontiguousarray(stage_values,
                                                                               dtype=float), chol)


class Theorem1Radius(ConfidenceRadius):
    """The paper's eq. (r_t) (``radius="theorem1"``)."""

    name, Rule, kernel = "theorem1", Theorem1Rule, theorem1_radius

    def __init__(self, dim: int, noise_sd: float, lam: float, S: float, L: float) -> None:
        self._formula = RadiusFormula(dim, noise_sd, lam, S, L)
        self.rule = Theorem1Rule(offset=math.sqrt(lam) * S)

    def stage_value(self, n: float, delta: float) -> float:
        """``r_n(delta)``."""
        return self._formula.scalar(n, delta)

    def stage_values(self, start: int, stop: int, delta: float) -> np.ndarray:
        """``r_n(delta)`` at ``n = start, ..., stop - 1`` (the same numbers)."""
        return self._formula.counts(start, stop, delta)


class SelfNormalizedRadius(ConfidenceRadius):
    """Abbasi-Yadkori, Pal and Szepesvari's Theorem 2 at the run's own ``V``
    (``radius="self_normalized"``)."""

    name, Rule, kernel = "self_normalized", SelfNormalizedRule, self_normalized_radius_one

    def __init__(self, dim: int, noise_sd: float, lam: float, S: float, L: float) -> None:
        self.rule = SelfNormalizedRule(noise_sd=float(noise_sd),
                                       half_d_log_lam=0.5 * dim * math.log(lam),
                                       offset=math.sqrt(lam) * S)

    def stage_value(self, n: float, delta: float) -> float:
        """``2 log(1/delta)``."""
        return -2.0 * math.log(delta)

    def stage_values(self, start: int, stop: int, delta: float) -> np.ndarray:
        """``2 log(1/delta)``, ``stop - start`` times."""
        return np.full(stop - start, -2.0 * math.log(delta))


_RADII: dict[str, type[ConfidenceRadius]] = {}
_KERNELS: dict[type, Callable] = {}
_RADII_KERNELS: dict[type, Callable] = {}


def register_radius(radius: type[ConfidenceRadius]) -> type[ConfidenceRadius]:
    """Register the :class:`ConfidenceRadius` subclass ``radius`` under ``radius.name``, its
    kernel for its ``Rule`` class; returns it (usable as a class decorator).

    Raises
    ------
    TypeError
        If ``radius`` is not such a subclass, its ``Rule`` not a ``NamedTuple`` class, its
        ``kernel`` not a numba function of ``(rule, stage_value, chol)``, or its name or rule
        class is another radius's.
    """
    if not (isinstance(radius, type) and issubclass(radius, ConfidenceRadius)):
        raise TypeError(f"a radius must be a ConfidenceRadius subclass, got {radius!r}")
    name, rule, kernel = (getattr(radius, key, None) for key in ("name", "Rule", "kernel"))
    if not isinstance(name, str) or not name:
        raise TypeError(f"{radius.__name__}.name must be a nonempty str, got {name!r}")
    if not (isinstance(rule, type) and issubclass(rule, tuple) and hasattr(rule, "_fields")):
        raise TypeError(f"{radius.__name__}.Rule must be a NamedTuple class, got {rule!r}")
    py_func = getattr(kernel, "py_func", None)
    if py_func is None:
        raise TypeError(f"{radius.__name__}.kernel must be an njit(inline='always') function, "
                        f"got {kernel!r}")
    try:
        inspect.signature(py_func).bind("rule", "stage_value", "chol")
    except TypeError:
        raise TypeError(f"{radius.__name__}.kernel must take (rule, stage_value, chol)") from None
    for taken, key, what in ((_RADII, name, "name"), (_KERNELS, rule, "rule class")):
        if key in taken and (taken[key] is not (radius if taken is _RADII else kernel)):
            raise TypeError(f"the radius {what} {getattr(key, '__name__', key)!r} is already "
                            "registered")
    _RADII[name], _KERNELS[rule] = radius, kernel
    return radius


def registered_radii() -> tuple[str, ...]:
    """The names ``radius=`` takes, in registration order."""
    return tuple(_RADII)


def check_radius(radius: object) -> str:
    """Validate a policy's ``radius`` argument: a registered radius's name."""
    if not isinstance(radius, str) or radius not in _RADII:
        raise ValueError(f"radius must be one of {registered_radii()}, got {radius!r}")
    return radius


def make_radius(radius: str, dim: int, noise_sd: float, lam: float, S: float,
                L: float) -> ConfidenceRadius:
    """The registered radius named ``radius`` with a policy's constants."""
    return _RADII[check_radius(radius)](dim, noise_sd, lam, S, L)


def radius_bindings(rule: type) -> dict[Callable, Callable]:
    """What the placeholder :func:`radius_one` is bound to for rule class ``rule`` (empty if
    it is not a registered rule class)."""
    kernel = _KERNELS.get(rule)
    return {} if kernel is None else {radius_one: kernel}


def is_radius_rule(rule: type) -> bool:
    """Whether ``rule`` is a registered radius's rule class."""
    return rule in _KERNELS


def _radii_kernel(rule: type) -> Callable:
    """:func:`_radii_all` compiled for rule class ``rule`` (once; cached on disk for this
    package's radii)."""
    if rule not in _RADII_KERNELS:
        if rule not in _KERNELS:
            raise TypeError(f"{rule.__name__} is not the rule of a registered radius")
        ours = _KERNELS[rule].__module__.startswith("sege_cvx.")
        _RADII_KERNELS[rule] = bind_globals(_radii_all, radius_bindings(rule),
                                            name=f"radii_all_{rule.__name__}", cache=ours)
    return _RADII_KERNELS[rule]


register_radius(Theorem1Radius)
register_radius(SelfNormalizedRadius)
#: The built-in radii's names (:func:`registered_radii` lists every registered one).
RADII = registered_radii()


class CountTable:
    """A radius's stage values by observation count ``n = 0, 1, ...`` at a fixed ``delta``
    (:meth:`ConfidenceRadius.stage_value`), for policies whose radius is indexed by count (CLUCB,
    ROFUL).  Kernels look the values up, so that a run's radius is the same number alone and in
    any batch; the table grows by doubling as counts grow.

    Examples
    --------
    >>> import numpy as np
    >>> table = CountTable(make_radius("theorem1", 2, 1.0, 0.1, 1.0, 2.0), 0.1)
    >>> table[np.array([0, 3])].round(4)
    array([2.4622, 4.0841])
    """

    def __init__(self, radius: ConfidenceRadius, delta: float) -> None:
        self._radius, self._delta = radius, delta
        self._values = np.empty(0)

    def covering(self, top: int) -> np.ndarray:
        """The table, covering counts ``0..top`` (at least)."""
        if top >= self._values.size:
            size = max(2 * top + 1, 1024)
            extra = self._radius.stage_values(self._values.size, size, self._delta)
            self._values = np.concatenate([self._values, extra])
        return self._values

    def __getitem__(self, counts: np.ndarray) -> np.ndarray:
        """The stage values at ``counts`` (one per run)."""
        return self.covering(int(np.max(counts)))[counts]


def self_normalized_radius(V: np.ndarray, delta: float, *, noise_sd: float, lam: float,
                           S: float) -> float:
    """Abbasi-Yadkori, Pal and Szepesvari (2011), Theorem 2, for one information matrix.

    ``sigma sqrt(2 log(det(V)^{1/2} det(lam I)^{-1/2} / delta)) + sqrt(lam) S``, from the
    Cholesky factor of ``V`` (no determinant is formed).

    Parameters
    ----------
    V : ndarray, shape (d, d)
        ``lam I + sum_k X_k X_k^T``, symmetric positive definite.
    delta : float
        Risk in (0, 1).
    noise_sd, lam, S : float
        ``sigma_eta >= 0``, ``lambda > 0`` (the ``lam`` ``V`` was started from) and ``S > 0``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(self_normalized_radius(np.diag([0.1, 10.1]), 0.1, noise_sd=1.0, lam=0.1, S=1.0), 6)
    3.352721
    """
    noise_sd = as_scalar("noise_sd", noise_sd, low=0.0)
    lam = as_scalar("lam", lam, low=0.0, low_open=True)
    S = as_scalar("S", S, low=0.0, low_open=True)
    delta = as_scalar("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    shape = np.shape(V)
    if len(shape) != 2 or shape[0] == 0:
        raise ValueError(f"V must be a (d, d) matrix, got shape {shape}")
    dim = shape[0]
    _, chol = as_spd_batch("V", V, dim)
    radius = SelfNormalizedRadius(dim, noise_sd, lam, S, 0.0)
    r = radius.radii(chol, np.full(1, radius.stage_value(0, delta)))
    if not np.isfinite(r[0]):
        raise ValueError("the radius overflows the float range: rescale the problem")
    return float(r[0])
