"""Input validation shared by every public entry point.

Each function converts its input to a float64 array of a known shape and raises a
``ValueError`` (or ``TypeError``) that names the offending argument and value.
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

#: Largest horizon a study accepts: 2**53, beyond which float64 (the log-spaced checkpoint
#: grid, ``sqrt(t)`` and the risk schedules) no longer holds every stage exactly; a larger one
#: is a typo (at a billion stages a second, 2**53 stages take over three months per run).
MAX_HORIZON = 2**53
# Relative tolerance for symmetry checks of matrices given by users.
SYMMETRY_RTOL = 1e-9
_TINY = float(np.finfo(np.float64).tiny)


def format_value(value: object) -> str:
    """``value`` for a one-line message: at most 80 characters, arrays on one line."""
    text = np.array2string(np.asarray(value), threshold=8, precision=4) if isinstance(
        value, np.ndarray
    ) else repr(value)
    text = " ".join(text.split())  # an array's rows on one line
    return text if len(text) <= 80 else text[:77] + "..."


def import_failure(exc: ImportError | AttributeError, module: str | None = None) -> str:
    """An import's failure in one line, saying what to do about it.

    Parameters
    ----------
    exc : ImportError or AttributeError
        What importing ``module`` (or getting a name from it) raised.
    module : str, optional
        The module the user named (``"mypol"`` of ``"mypol:MyPolicy"``).

    Returns
    -------
    str
        Where ``module`` itself (or a package holding it) is not on the import path: what to
        put there (a spec's or script's folder is not on it when Python runs from elsewhere).
        Where ``module`` was found but imports a module that is missing: which module imported
        what, and that it is not installed in this Python (to install it), or not in a package
        that is.  Otherwise ``exc``'s message.
    """
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    if not missing:
        return str(exc)
    top = missing.split(".")[0]
    if module is None or module == missing or module.startswith(missing + "."):
        return (f"no module named {missing!r} on the import path: run from the folder that "
                f"holds {top}.py (or the package {top}/), or add that folder to PYTHONPATH "
                "(sys.path in Python)")
    # The user's module was found and ran: advice on where to run from would be wrong.
    importer = _importer(exc)
    chain = f"its module {module!r} imports " + (
        f"{importer!r}, which imports " if importer not in (None, module) else "")
    if top != missing and _findable(top):  # a package that is there lacks the submodule
        return f"{chain}{missing!r}, which {top!r} (found in this Python) does not have"
    return (f"{chain}{missing!r}, which is not installed in this Python ({sys.executable}): "
            f"install it (pip install {top}, if that is its package's name)")


def _importer(exc: BaseException) -> str | None:
    """The module whose code raised ``exc`` (an import statement's module): the innermost
    frame of its traceback outside importlib's own."""
    name = None
    tb = exc.__traceback__
    while tb is not None:
        frame_module = tb.tb_frame.f_globals.get("__name__")
        if isinstance(frame_module, str) and not frame_module.startswith(
                ("importlib", "_frozen_importlib")):
            name = frame_module
        tb = tb.tb_next
    return name


def _findable(name: str) -> bool:
    """Whether the top-level module ``name`` is on the import path (not importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _first_not_finite(name: str, arr: np.ndarray) -> str:
    """``"<name> must be finite (no NaN or inf): <name>[i, j] is nan"``, the first such entry."""
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
    where = f"[{', '.join(map(str, index))}]" if index else ""
    return f"{name} must be finite (no NaN or inf): {name}{where} is {float(arr[index])!r}"


def as_finite_array(name: str, value: object) -> np.ndarray:
    """Return ``value`` as a float64 array, rejecting NaN and infinity.

    Only real numbers are accepted: strings (which numpy would parse, ``"1.5"`` -> 1.5), bytes
    and byte buffers (read as character codes), booleans, complex numbers (whose imaginary
    part numpy would drop) and ``None`` raise ``TypeError`` instead of being converted silently.
    """
    if type(value) is np.ndarray and value.dtype == np.float64:  # the common case, kept cheap
        if not np.isfinite(value).all():
            raise ValueError(_first_not_finite(name, value))
        return value
    # Text and bytes (numpy would parse "1.5" -> 1.5, or read b"7" as the byte 55).
    if isinstance(value, str | bytes | bytearray) or (
            isinstance(value, memoryview) and value.format in ("B", "b", "c")):
        raise TypeError(f"{name} must be numeric, got {format_value(value)}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # e.g. ragged nested lists
        raise TypeError(f"{name} must be numeric (a rectangular array), got {format_value(value)}") from exc
    if raw.dtype.kind == "O":
        # Mixed Python objects: accept real numbers only (bool is a Real, so exclude it).
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)
                   for v in raw.flat):
            raise TypeError(f"{name} must be numeric, got {format_value(value)}")
    elif raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numeric (real numbers), got {format_value(value)} "
                        f"(dtype {raw.dtype})")
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except OverflowError:  # Python ints beyond the float range
        raise ValueError(f"{name} must be finite, got {format_value(value)} (beyond the float "
                         "range)") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {format_value(value)}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(_first_not_finite(name, arr))
    return arr


def scaled_norm(value: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Euclidean norm without spurious overflow or underflow.

    ``np.linalg.norm`` squares the entries, so it returns ``inf`` for ``[1e200, 1e200]`` and 0 for
    ``[1e-200, 1e-200]``.  Scaling by the power of two nearest the largest magnitude first (and
    back after) returns the norm whenever it is representable, and ``inf`` only when it exceeds
    the largest float.

    Parameters
    ----------
    value : ndarray
        Finite entries.
    axis : int, optional
        Axis along which to take norms; default the whole array (as a vector).

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> f"{scaled_norm(np.array([3e200, 4e200])):.6g}"
    '5e+200'
    """
    value = np.asarray(value, dtype=np.float64)
    largest = np.max(np.abs(value), axis=axis, keepdims=True, initial=0.0)
    # Scale by a power of two (exact) so that the result equals np.linalg.norm's when that is
    # free of overflow and underflow.
    _, exponent = np.frexp(largest)
    with np.errstate(over="ignore"):  # an unrepresentable norm is reported as inf
        norms = np.ldexp(np.linalg.norm(np.ldexp(value, -exponent), axis=axis, keepdims=True),
                         exponent)
    return float(norms.reshape(())) if axis is None else np.squeeze(norms, axis=axis)


def as_vector(name: str, value: object, dim: int | None = None) -> np.ndarray:
    """A finite 1-D float64 vector, of length ``dim`` when given."""
    arr = as_finite_array(name, value)
    if arr.ndim != 1 or (dim is not None and arr.shape[0] != dim):
        want = f"({dim},)" if dim is not None else "(d,)"
        raise ValueError(f"{name} must have shape {want}, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    return arr


def as_batch_of_vectors(name: str, value: object, dim: int) -> tuple[np.ndarray, bool]:
    """Shape ``(d,)`` or ``(n, d)`` to ``(n, d)``; the flag tells whether it was a single vector."""
    arr = as_finite_array(name, value)
    if arr.ndim == 1 and arr.shape[0] == dim:
        return arr[None, :], True
    if arr.ndim == 2 and arr.shape[1] == dim:
        return arr, False
    raise ValueError(f"{name} must have shape ({dim},) or (n, {dim}), got shape {arr.shape}")


def as_scalar(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real scalar in the interval given by ``low``/``high`` (closed unless open)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{name} must be a real number, got {format_value(value)}")
    if isinstance(value, np.ndarray):
        arr = as_finite_array(name, value)
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except OverflowError:  # a Python int or Fraction beyond the float range
            raise ValueError(f"{name} must be finite, got {format_value(value)}") from None
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    x = float(arr)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {x}")
    return x


def as_radius_batch(name: str, value: object, n: int) -> np.ndarray:
    """Nonnegative confidence radii broadcast to shape ``(n,)``."""
    if type(value) in (float, np.float64) and (value == 0.0 or _TINY <= value < math.inf):
        return np.full(n, float(value))  # the common case, kept cheap
    arr = as_finite_array(name, value)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got shape {arr.shape}")
    if (arr < _TINY).any():  # one test for the common case; the two below name the fault
        if np.any(arr < 0):
            raise ValueError(f"{name} must be nonnegative, got {format_value(arr[arr < 0])}")
        # A subnormal radius has lost its precision (and underflows the computations it enters).
        tiny = (arr > 0) & (arr < _TINY)
        if np.any(tiny):
            raise ValueError(f"{name} must be 0 or at least {_TINY:.3g}, got {format_value(arr[tiny])}")
    return arr


def as_positive_int(name: str, value: object) -> int:
    """An integer >= 1."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {format_value(value)}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def as_nonnegative_int(name: str, value: object) -> int:
    """An integer >= 0 (e.g. a random seed)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a nonnegative integer, got {format_value(value)}")
    if value < 0:
        raise ValueError(f"{name} must be a nonnegative integer, got {value}")
    return int(value)
