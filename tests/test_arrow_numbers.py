"""Arrow <-> NumPy number conversions that never import pandas (``arrow_numbers``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from clinsearch.arrow_numbers import arrow_of, numpy_of, strings_of

from .fresh_process import modules_loaded


def test_number_columns_read_as_pyarrow_reads_them() -> None:
    values = pa.array(np.arange(10, dtype=np.int32))
    chunked = pa.chunked_array([values.slice(2, 3), values.slice(0, 0), values.slice(7)])
    assert numpy_of(chunked).tolist() == chunked.to_numpy().tolist() == [2, 3, 4, 7, 8, 9]
    assert numpy_of(values.slice(4, 2)).dtype == np.int32
    assert numpy_of(pa.chunked_array([], pa.float64())).dtype == np.float64
    with_nulls = pa.array([1, None, 3])
    assert numpy_of(with_nulls).tolist()[::2] == [1.0, 3.0]  # pyarrow's own conversion


def test_numpy_numbers_become_arrow_arrays() -> None:
    strided = np.arange(10, dtype=np.int64)[::3]
    assert arrow_of(strided).to_pylist() == [0, 3, 6, 9]
    assert arrow_of(np.zeros(0, np.uint16)).type == pa.uint16()
    with pytest.raises(TypeError):
        arrow_of(np.array(["a"]))


def test_python_strings_become_arrow_strings() -> None:
    values = ["right", None, "", "épanchement"]
    assert strings_of(values).to_pylist() == values and strings_of(values).null_count == 1
    assert strings_of([]).type == pa.string() and len(strings_of([])) == 0


def test_neither_way_imports_pandas() -> None:
    code = ("import numpy as np, pyarrow as pa\n"
            "from clinsearch.arrow_numbers import arrow_of, numpy_of, strings_of\n"
            "numpy_of(pa.chunked_array([arrow_of(np.arange(3))]))\n"
            "strings_of(['a', None])\n")
    assert modules_loaded(code, ["pandas"]) == [False]
