"""NumPy arrays of Arrow number columns, Arrow arrays of NumPy numbers and of Python strings,
without pandas.

pyarrow imports pandas (slow, plus the collection passes its objects trigger) the first
time it converts between Arrow and NumPy (``to_numpy``, ``pa.array``); a cold query needs none
of it. A number column without nulls is its data buffer, read as is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_ARROW_TYPES = {np.dtype(name): getattr(pa, name)() for name in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
    "float64")}
_NUMPY_TYPES = {arrow: dtype for dtype, arrow in _ARROW_TYPES.items()}


def numpy_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a number column without nulls (a read-only view when it is one chunk);
    other columns as pyarrow converts them."""
    dtype = _NUMPY_TYPES.get(values.type)
    if dtype is None or values.null_count:
        return values.to_numpy(zero_copy_only=False)
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [np.frombuffer(c.buffers()[1], dtype, len(c), c.offset * dtype.itemsize)
             for c in chunks if len(c)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype)


def arrow_of(values: np.ndarray) -> pa.Array:
    """An Arrow array of a one-dimensional NumPy number array (sharing its memory when it is
    contiguous)."""
    values = np.ascontiguousarray(values)
    if values.dtype not in _ARROW_TYPES:
        raise TypeError(f"not a number array: {values.dtype}")
    return pa.Array.from_buffers(_ARROW_TYPES[values.dtype], len(values),
                                 [None, pa.py_buffer(values)])


def strings_of(values: Sequence[str | None]) -> pa.Array:
    """An Arrow string array of Python strings (None: null), built from its buffers: a cold
    query that turns a few names into an Arrow column needs no pandas either."""
    encoded = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    valid = None
    if any(v is None for v in values):
        valid = pa.py_buffer(np.packbits([v is not None for v in values], bitorder="little"))
    return pa.StringArray.from_buffers(len(encoded), pa.py_buffer(offsets),
                                       pa.py_buffer(b"".join(encoded)), valid)
