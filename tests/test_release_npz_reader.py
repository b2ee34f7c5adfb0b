"""The release reader opens each npz once: the size check reads the headers, then numpy's own reader reads the
arrays from the same open archive. What it returns is exactly what `np.load` returns (dtype, shape, order, values,
writable), and what `np.load` refuses it refuses, with numpy's message."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mis_bench_dataset.release.tree import _load_npz

DTYPES = st.sampled_from(["<f4", ">f8", "<i2", "u1", "?", "<U7", "<c8"])


def _read(path: Path):
    return _load_npz(path, "AB0101_T1_Sean", "openface", path.name, max_rows=10**6)


def _numpy(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


@settings(max_examples=60, deadline=None)
@given(
    arrays=st.lists(
        DTYPES.flatmap(lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0))),
        min_size=1,
        max_size=3,
    ),
    fortran=st.booleans(),
    compressed=st.booleans(),
)
def test_the_arrays_are_what_np_load_returns(tmp_path_factory, arrays, fortran, compressed):
    path = tmp_path_factory.mktemp("npz") / "x.npz"
    named = {f"a{i}": (np.asfortranarray(a) if fortran else a) for i, a in enumerate(arrays)}
    (np.savez_compressed if compressed else np.savez)(path, **named)
    got, problem = _read(path)
    assert problem is None
    expected = _numpy(path)
    assert list(got) == list(expected)
    for key, want in expected.items():
        have = got[key]
        assert have.dtype == want.dtype and have.shape == want.shape
        assert have.flags.c_contiguous == want.flags.c_contiguous
        assert have.flags.f_contiguous == want.flags.f_contiguous
        assert have.flags.writeable and want.flags.writeable
        np.testing.assert_array_equal(have, want)


def test_a_large_array_is_read_exactly(tmp_path):
    values = np.random.default_rng(0).standard_normal((700, 768)).astype(np.float32)  # 2.1 MB: many zip blocks
    path = tmp_path / "x.npz"
    np.savez_compressed(path, features=values, timestamps=np.arange(700, dtype=np.float32))
    got, problem = _read(path)
    assert problem is None
    np.testing.assert_array_equal(got["features"], values)


def test_object_arrays_are_refused_like_np_load(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, features=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle=False") as numpy_error:
        _numpy(path)
    got, problem = _read(path)
    assert got is None and problem.kind == "unreadable"
    assert problem.reason == f"ValueError: {numpy_error.value}"


def test_an_array_shorter_than_its_header_is_unreadable(tmp_path):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (4, 2)})
    path = tmp_path / "x.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("features.npy", header.getvalue() + np.zeros(5, np.float32).tobytes())  # 20 of 32 bytes
    with pytest.raises(ValueError) as numpy_error:
        _numpy(path)
    got, problem = _read(path)
    assert got is None and problem.kind == "unreadable"
    assert problem.reason == f"ValueError: {numpy_error.value}"
