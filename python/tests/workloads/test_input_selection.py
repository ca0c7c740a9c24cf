"""Which inputs a workload command reads (python/rayorch_cpp/workloads/_input_selection.py),
as the C++ commands choose theirs (tests/workloads/common/input_selection_test.cc): files,
folders, glob patterns and manifests in one list, each file once, then this job's share."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rayorch_cpp.workloads._input_selection import (
    InputRules,
    InputSelection,
    SelectionError,
    parse_row_range,
    parse_shard,
    select_inputs,
)

RULES = InputRules(extensions=(".pdf",), none_given="nothing given", none_found="no PDF found")


def touch(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"%PDF-1.7")
    return str(path)


def test_files_folders_patterns_then_manifests_each_file_once(tmp_path: Path) -> None:
    a = touch(tmp_path / "in" / "b" / "a.PDF")  # any case in a folder
    c = touch(tmp_path / "in" / "c.pdf")
    touch(tmp_path / "in" / "notes.txt")  # not a PDF: a folder does not list it
    scan = touch(tmp_path / "scans" / "s1.bin")  # a pattern lists what it matches
    listed = touch(tmp_path / "listed" / "z.pdf")
    manifest = tmp_path / "listed" / "docs.jsonl"
    rows = [{"path": "z.pdf"}, {"path": str(Path(c).resolve()), "lang": "deu"}]
    manifest.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    selection = InputSelection(
        paths=[str(tmp_path / "in"), str(tmp_path / "scans" / "*.bin"), c],
        manifests=[str(manifest)],
    )
    # Named paths sorted, then the manifest in its order; c once (its first place), and a
    # relative manifest path taken from the manifest's folder.
    assert select_inputs(selection, RULES) == sorted([a, c, scan]) + [listed]


def test_a_split_gives_every_input_to_exactly_one_job(tmp_path: Path) -> None:
    files = [touch(tmp_path / f"d{i}.pdf") for i in range(7)]
    shares = [
        select_inputs(InputSelection(paths=[str(tmp_path)], shard=(i, 3)), RULES) for i in range(3)
    ]
    assert shares == [files[0::3], files[1::3], files[2::3]]
    ranged = InputSelection(paths=[str(tmp_path)], row_range=(2, 6), shard=(1, 2))
    assert select_inputs(ranged, RULES) == files[2:6][1::2]  # the range first, then the shard
    empty = InputSelection(paths=[str(tmp_path)], row_range=(7, None))
    assert select_inputs(empty, RULES) == []  # a share may be empty


def test_each_bad_selection_names_its_culprit(tmp_path: Path) -> None:
    touch(tmp_path / "a" / "same.pdf")
    touch(tmp_path / "b" / "same.pdf")
    (tmp_path / "empty").mkdir()
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"path": "x.pdf"}\nnot json\n')
    no_field = tmp_path / "nofield.jsonl"
    no_field.write_text('{"file": "x.pdf"}\n')
    missing_row = tmp_path / "missing.jsonl"
    missing_row.write_text('{"path": "gone.pdf"}\n')
    cases = [
        (InputSelection(), "nothing given"),
        (InputSelection(paths=[str(tmp_path / "nope.pdf")]), "input not found: "),
        (InputSelection(paths=[str(tmp_path / "*.tiff")]), "no file matches the pattern "),
        (InputSelection(paths=[str(tmp_path / "empty")]), "no PDF found"),
        (
            InputSelection(paths=[str(tmp_path / "a"), str(tmp_path / "b")], shard=(0, 2)),
            "duplicate document name 'same'",  # anywhere in the list, whatever the share
        ),
        (InputSelection(manifests=[str(bad_json)]), f"{bad_json}, line 2: not JSON"),
        (
            InputSelection(manifests=[str(no_field)]),
            f"{no_field}, line 1: expected an object with the string field 'path'",
        ),
        (InputSelection(manifests=[str(missing_row)]), f"{missing_row}, line 1: input not found"),
        (InputSelection(manifests=[str(tmp_path / "none.jsonl")]), "manifest not found"),
        (InputSelection(manifests=[str(tmp_path / "empty")]), "has no _manifest.json"),
    ]
    for selection, message in cases:
        with pytest.raises(SelectionError) as error:
            select_inputs(selection, RULES)
        assert message in str(error.value), (selection, str(error.value))


def test_a_sink_folder_is_a_manifest_once_its_run_completed(tmp_path: Path) -> None:
    doc = touch(tmp_path / "sink" / "d.pdf")
    (tmp_path / "sink" / "part-00000.jsonl").write_text(json.dumps({"path": "d.pdf"}) + "\n")
    manifest = {
        "format": "rayorch-sink",
        "parts": [{"name": "part-00000.jsonl", "rows": 1}],
        "complete": False,
    }
    (tmp_path / "sink" / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SelectionError, match="did not complete"):
        select_inputs(InputSelection(manifests=[str(tmp_path / "sink")]), RULES)
    manifest["complete"] = True
    (tmp_path / "sink" / "_manifest.json").write_text(json.dumps(manifest))
    assert select_inputs(InputSelection(manifests=[str(tmp_path / "sink")]), RULES) == [
        os.path.join(str(tmp_path / "sink"), "d.pdf")
    ]
    assert doc.endswith("d.pdf")


def test_shards_and_row_ranges_are_parsed_or_refused_with_what_is_expected() -> None:
    assert parse_shard("1/3") == (1, 3)
    assert parse_row_range("2:5") == (2, 5) and parse_row_range("4:") == (4, None)
    for bad in ("3/3", "1", "-1/2", "a/b", "1/0"):
        with pytest.raises(SelectionError, match="must be I/N with 0 <= I < N"):
            parse_shard(bad)
    for bad in ("5:2", "3", ":4", "x:y"):
        with pytest.raises(SelectionError, match="must be START:STOP with START <= STOP"):
            parse_row_range(bad)
