"""Content fingerprints: a SHA-256 of nested plain data, exact to the last bit of every float.

A sweep records the fingerprint of each problem it builds, so that a resumed sweep, or a shard
computed on another worker, is accepted only if it was computed on the same problem
(:meth:`sege_cvx.problems.problem.BanditProblem.fingerprint`).

>>> fingerprint({"theta": (0.6, 0.8), "S": 1.0}) == fingerprint({"S": 1.0, "theta": [0.6, 0.8]})
True
>>> fingerprint({"theta": (0.6, 0.8)}) == fingerprint({"theta": (0.6, 0.8 + 2**-52)})
False
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np


def fingerprint(value: object) -> str:
    """The SHA-256 (hex) of ``value``: dicts (keys in sorted order), lists and tuples (alike),
    strings, bools, ints, floats (their exact bits), ``None`` and numpy arrays (dtype, shape and
    bytes in C order)."""
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.hexdigest()


def _feed(digest, value: object) -> None:
    if isinstance(value, dict):
        digest.update(b"d%d:" % len(value))
        for key in sorted(value):
            if not isinstance(key, str):
                raise TypeError(f"fingerprint keys must be strings, got {key!r}")
            _feed(digest, key)
            _feed(digest, value[key])
    elif isinstance(value, list | tuple):
        digest.update(b"l%d:" % len(value))
        for item in value:
            _feed(digest, item)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        digest.update(b"s%d:" % len(data) + data)
    elif value is None:
        digest.update(b"n")
    elif isinstance(value, bool | np.bool_):
        digest.update(b"b1" if value else b"b0")
    elif isinstance(value, int | np.integer):
        digest.update(b"i%d:" % int(value))
    elif isinstance(value, float | np.floating):
        digest.update(b"f" + struct.pack("<d", float(value)))
    elif isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"fingerprint arrays must be numeric, got dtype {array.dtype}")
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        digest.update(b"a%s:%s:" % (array.dtype.str.encode(), repr(array.shape).encode()))
        digest.update(array.tobytes())
    else:
        raise TypeError(f"cannot fingerprint {type(value).__name__}: {value!r}")
