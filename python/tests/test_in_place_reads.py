"""Large values read in place by a worker process (python/src/in_place_buffer.cc,
docs/ISOLATION.md): a worker's UDF gets its large input arrays over the memory it shares with
the executor, without a copy; an array the UDF keeps past its call keeps its bytes while later
calls write that memory again; echoes of several large arrays in one call come back whole."""

from __future__ import annotations

import numpy as np

import rayorch_cpp as ro
from process_udfs import ArrayFacts, KeepInputs

SIZE = 1 << 18  # 256 KiB of uint8 per array: read in place (from 256 KiB on)


def test_an_array_the_udf_keeps_keeps_its_bytes_while_later_calls_overwrite_the_memory() -> None:
    keep = ro.Module(KeepInputs).ray_options(isolation="process", batch_size=1)
    arrays = [np.full(SIZE, i + 1, dtype=np.uint8) for i in range(6)]
    with ro.Executor(lambda a: keep(a)) as ex:
        outputs = ex.run(arrays, input_batch_size=1, progress=False).outputs
    for i, (sums, places) in enumerate(outputs):
        # Every array kept so far still reads what it was sent, though each later request
        # was written over the memory the earlier ones were read from.
        assert sums == [SIZE * (k + 1) for k in range(i + 1)]
        # The array of this call is read in place; those kept from earlier calls were moved
        # out of the shared memory when their call ended (to private pages, same address).
        assert places == ["private"] * i + ["rayorch-worker-arena"]


def test_several_large_arrays_in_one_call_come_back_whole() -> None:
    facts = ro.Module(ArrayFacts).ray_options(isolation="process", batch_size=4)
    rng = np.random.default_rng(7)
    arrays = [rng.integers(0, 255, SIZE + 1000 * i, dtype=np.uint8) for i in range(8)]
    arrays[3] = arrays[3][::2]  # not contiguous: pickled in band, copied
    with ro.Executor(lambda a: facts(a)) as ex:
        for _ in range(3):
            outputs = ex.run(arrays, input_batch_size=8, progress=False).outputs
            for sent, (writable, _, _, mean, _, echo) in zip(arrays, outputs):
                assert np.array_equal(echo, sent) and not writable
                assert mean == sent.mean()
            # The echoes (answers written after the requests they came in) are the arrays.
            assert [o[4] for o in outputs] == [
                "private" if i == 3 else "rayorch-worker-arena" for i in range(8)
            ]


def test_arrays_below_the_threshold_are_copied() -> None:
    facts = ro.Module(ArrayFacts).ray_options(isolation="process")
    with ro.Executor(lambda a: facts(a)) as ex:
        small, large = ex.run(
            [np.ones((256 << 10) - 1, dtype=np.uint8), np.ones(256 << 10, dtype=np.uint8)],
            progress=False,
        ).outputs
    assert small[1:3] == ("bytes", (256 << 10) - 1) and small[4] == "private"
    assert large[1:3] == ("InPlaceBuffer", 256 << 10) and large[4] == "rayorch-worker-arena"
