"""A response cache is proven before it is used: a file that is not a cache, or a cache inside the dataset, is
refused unchanged; conflicting duplicates, a record naming another row and a record without a response are
named and never served.
"""

from __future__ import annotations

import json

from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_DATA, EXIT_USAGE

from _fault_helpers import _error_lines, _first_run, _rewrite, _run_args, snapshot


def test_a_file_that_is_not_a_cache_is_refused_unchanged(dataset, tmp_path, capsys, chat_server) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"meeting": "Tuesday", "keep": True}))  # no final newline, as json.dump writes
    before = notes.read_bytes()
    with chat_server() as server:
        code = main(_run_args(dataset, tmp_path / "out", server.base_url, "--cache", str(notes)))
        assert server.requests == 0
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA
    assert len(lines) == 1 and "notes.json" in lines[0] and "not a response cache" in lines[0]
    assert notes.read_bytes() == before


def test_a_cache_inside_the_dataset_is_refused_and_the_build_still_reads(
    dataset, tmp_path, capsys, chat_server
) -> None:
    from mis_bench_dataset import BuiltDataset

    shard = next((dataset / "scoring").glob("test-*.parquet"))
    before = snapshot(dataset)
    with chat_server() as server:
        code = main(_run_args(dataset, tmp_path / "out", server.base_url, "--cache", str(shard)))
        assert server.requests == 0
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_USAGE
    assert len(lines) == 1 and "--cache" in lines[0] and "inside the dataset" in lines[0]
    assert snapshot(dataset) == before
    assert BuiltDataset.of(dataset).rows("test")


def test_conflicting_duplicates_are_named_with_both_answers(dataset, tmp_path, capsys, chat_server) -> None:
    cache, args = _first_run(dataset, tmp_path, chat_server)
    lines = cache.read_text().splitlines()
    index, record = next((i, json.loads(line)) for i, line in enumerate(lines) if '"status":"ok"' in line)
    other = {**record, "response": "Final answer: 1.2"}
    _rewrite(cache, [*lines, json.dumps(other)])  # as after two machines' caches were concatenated
    capsys.readouterr()
    with chat_server() as server:
        args[args.index("--base-url") + 1] = server.base_url
        code = main(args)
        assert server.requests == 0
    errors = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA
    assert record["response"] in errors[0] and "Final answer: 1.2" in errors[0]
    assert f"line {index + 1}" in errors[0] and f"line {len(lines) + 1}" in errors[0]
    assert "mis-bench cache" in errors[0]


def test_a_record_naming_another_row_is_never_served(dataset, tmp_path, caplog, chat_server) -> None:
    cache, args = _first_run(dataset, tmp_path, chat_server)
    lines = cache.read_text().splitlines()
    index, a = next((i, json.loads(line)) for i, line in enumerate(lines) if '"status":"ok"' in line)
    b = next(json.loads(line) for line in lines[index + 1 :] if '"status":"ok"' in line)
    lines[index] = json.dumps({**a, "video_id": b["video_id"], "dimension": b["dimension"], "response": "4.9"})
    _rewrite(cache, lines)
    with chat_server() as server:
        args[args.index("--base-url") + 1] = server.base_url
        with caplog.at_level("WARNING"):
            assert main(args) == 0
        assert server.requests == 1  # row A is asked again; the forged record is never its answer
        assert main(args) == 0
        assert server.requests == 1  # and the answer then cached is served from then on
    # The forged line's key is no longer the hash of the row it names: caught when the cache is read (the field named).
    warned = [r.getMessage() for r in caplog.records if f"line {index + 1}" in r.getMessage()]
    assert warned and "field key is not the hash" in warned[0], warned
    predictions = next((tmp_path / "out").rglob("predictions.jsonl")).read_text().splitlines()
    assert 4.9 not in [json.loads(p)["prediction"] for p in predictions]


def test_a_record_without_a_response_is_named_and_asked_again(dataset, tmp_path, caplog, chat_server) -> None:
    cache, args = _first_run(dataset, tmp_path, chat_server)
    lines = cache.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"status":"ok"' in line)
    record = json.loads(lines[index])
    del record["response"]
    lines[index] = json.dumps(record)
    _rewrite(cache, lines)
    with chat_server() as server:
        args[args.index("--base-url") + 1] = server.base_url
        with caplog.at_level("WARNING"):
            assert main(args) == 0
        assert server.requests == 1
    warned = [r.getMessage() for r in caplog.records if f"line {index + 1}" in r.getMessage()]
    assert warned and "without a response" in warned[0]
