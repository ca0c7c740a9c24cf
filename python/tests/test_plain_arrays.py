"""Plain numpy arrays crossing to and from a worker process without pickle
(python/src/plain_arrays.cc, docs/ISOLATION.md): an array of exactly numpy.ndarray, C-contiguous,
of a plain dtype arrives as one read-only array right over the bytes received, with its dtype,
shape and values; every other array (a subclass, another layout, an object, structured,
datetime or annotated dtype) is pickled and arrives as it was sent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rayorch_cpp as ro
from process_udfs import Echo, Layout, Tagged

PLAIN = [
    np.array([True, False, True]),
    np.arange(-5, 5, dtype=np.int8),
    np.arange(12, dtype=np.uint16).reshape(3, 4),
    np.arange(6, dtype=">i4"),  # not the machine's byte order: kept
    np.linspace(0, 1, 7, dtype=np.float16),
    np.arange(24, dtype=np.float64).reshape(2, 3, 4),
    np.array([1 + 2j, -3j], dtype=np.complex64),
    np.array([b"abc", b"", b"seven!!"]),  # |S7
    np.array(["x", "yz", "\u00e9t\u00e9"]),  # <U3
    np.array(3.5),  # no dimensions
    np.zeros((0, 3), dtype=np.int64),  # no elements
]


def through_a_worker(udf: type, values: list[Any]) -> list[Any]:
    module = ro.Module(udf).ray_options(isolation="process", batch_size=len(values))
    with ro.Executor(lambda v: module(v)) as ex:
        outputs: list[Any] = ex.run(values, input_batch_size=len(values), progress=False).outputs
    return outputs


def describe(a: np.ndarray) -> tuple[Any, ...]:
    # Empty metadata is none (pickle gives a datetime dtype an empty mapping).
    metadata = a.dtype.metadata
    return (a.dtype.str, a.dtype.descr, dict(metadata or {}) or None, a.shape)


def test_a_plain_array_arrives_in_the_worker_as_one_array_over_the_bytes_received() -> None:
    for sent, (kind, under, dtype, shape, fortran) in zip(PLAIN, through_a_worker(Layout, PLAIN)):
        # Right over the bytes object the decoder filled; pickle leaves a view between them.
        assert (kind, under, fortran) == ("ndarray", "bytes", False), sent
        assert (*dtype, shape) == describe(sent)


def test_a_plain_array_comes_back_equal_and_read_only_and_the_sent_one_is_untouched() -> None:
    for sent, back in zip(PLAIN, through_a_worker(Echo, PLAIN)):
        assert type(back) is np.ndarray and type(back.base) is bytes, sent
        assert describe(back) == describe(sent) and not back.flags.writeable
        assert np.array_equal(back, sent) and sent.flags.writeable


def others() -> list[np.ndarray]:
    grid = np.arange(12, dtype=np.float32).reshape(3, 4)
    return [
        grid.view(Tagged),  # a subclass
        np.asfortranarray(grid),  # Fortran order: kept
        grid[:, ::2],  # a strided view: arrives C-contiguous, equal
        np.array([{"a": 1}, None, "s"], dtype=object),
        np.array([(1, 2.5)], dtype=[("n", "<i4"), ("x", "<f8")]),  # structured
        np.array(["2026-12-07", "1970-01-01"], dtype="datetime64[D]"),
        np.arange(3, dtype=np.dtype(np.int32, metadata={"unit": "px"})),
    ]


def test_every_other_array_is_pickled_and_arrives_as_it_was_sent() -> None:
    sent = others()
    kinds = ["Tagged"] + ["ndarray"] * (len(sent) - 1)
    for a, kind, (got, _, dtype, shape, fortran) in zip(
        sent, kinds, through_a_worker(Layout, sent)
    ):
        assert got == kind and (*dtype, shape) == describe(a), a
        assert fortran == (a is sent[1])
    for a, kind, back in zip(sent, kinds, through_a_worker(Echo, sent)):
        assert type(back).__name__ == kind and describe(back) == describe(a), a
        assert back.tolist() == a.tolist()


@pytest.mark.parametrize("size", [(256 << 10) - 8, 256 << 10])
def test_a_plain_array_on_either_side_of_the_in_place_threshold_comes_back_whole(
    size: int,
) -> None:
    sent = np.random.default_rng(3).integers(0, 1 << 60, size // 8, dtype=np.int64)
    ((kind, under, _, shape, _),) = through_a_worker(Layout, [sent])
    # From 256 KiB on the worker reads the array in place (test_in_place_reads.py).
    assert (kind, shape) == ("ndarray", sent.shape)
    assert under == ("InPlaceBuffer" if size >= 256 << 10 else "bytes")
    (back,) = through_a_worker(Echo, [sent])
    assert np.array_equal(back, sent) and back.dtype == sent.dtype and not back.flags.writeable
