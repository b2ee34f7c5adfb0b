"""`mis-bench submit --references BUILD` with results made on another build says so in one line, naming the build
the results were made on and this one's fingerprints, instead of listing every video of the split as missing."""

from __future__ import annotations

import json

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS, BuiltDataset

from _leaderboard_helpers import make_results


def test_submit_with_another_build_names_its_fingerprint(synthetic_build, tmp_path, capsys):
    other_videos = [f"ZZ{n:04d}_T1_Other" for n in range(4)]  # none of them is in this build
    predictions = {(video, dim): 3.0 for video in other_videos for dim in DIMENSION_KEYS}
    results = make_results(predictions, model="org/elsewhere")
    results["dataset"].update(name="another-build", fingerprint="sha256:" + "ab" * 32)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))

    code = main(["submit", str(path), "--references", str(synthetic_build), "--out", str(tmp_path / "subs")])
    err = capsys.readouterr().err
    problems = [line for line in err.splitlines() if line.startswith("  - ")]  # the listing, then the error line
    errors = [line for line in err.splitlines() if line.startswith("mis-bench submit: error:")]
    assert code == 1 and len(problems) == 1 and len(errors) == 1, err
    assert "sha256:abab" in problems[0] and "(dataset 'another-build')" in problems[0]
    assert all(fp in problems[0] for fp in BuiltDataset.open(synthetic_build).fingerprints("test"))
    assert "ZZ0000" not in err and "coverage" not in err  # no video listed as missing
    assert not (tmp_path / "subs").exists()
