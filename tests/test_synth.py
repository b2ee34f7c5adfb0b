"""The synthetic generator: real-form ids, release layout, and the documented planted signal
(rater ICC near paper Table 2, gold statistics near Table 6, features that track the skill)."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from scipy.stats import spearmanr

import mis_bench_dataset.synth.generator as synth
from mis_bench_dataset import (
    DIMENSION_KEYS,
    GOLD_STATS,
    HUMAN_CEILING,
    STIMULI,
    generate_synthetic_release,
    parse_video_id,
)
from mis_bench_dataset.release.labels import aggregate, icc3_1_with_ci
from mis_bench_dataset.release.tree import MODALITIES, scan_release

from _metric_helpers import pingouin_icc3_1


@pytest.fixture(scope="module")
def ratings_996():
    return synth.synthetic_ratings(996, seed=0)


def test_rater_icc_is_near_paper_table_2(ratings_996):
    _, _, ratings = ratings_996
    full = ~np.isnan(ratings).any(axis=(1, 2))
    assert abs(full.mean() - 625 / 996) < 0.05
    iccs = []
    for d, key in enumerate(DIMENSION_KEYS):
        icc, _, _ = icc3_1_with_ci(ratings[full, d, :])
        iccs.append(icc)
        assert abs(icc - HUMAN_CEILING[key].icc) < 0.08, (key, icc)
    assert abs(np.mean(iccs) - np.mean([HUMAN_CEILING[k].icc for k in DIMENSION_KEYS])) < 0.04


def test_gold_statistics_are_near_paper_table_6(ratings_996):
    _, _, ratings = ratings_996
    for d, key in enumerate(DIMENSION_KEYS):
        gold = np.array([aggregate(list(r[~np.isnan(r)])) for r in ratings[:, d, :]])
        assert abs(gold.mean() - GOLD_STATS[key].mean) < 0.06, key
        assert abs(gold.std() - GOLD_STATS[key].std) < 0.06, key
        assert gold.min() >= 1.0 and gold.max() <= 5.0
        assert np.all(np.round(gold * 10) == gold * 10)  # one decimal


def test_dimensions_are_correlated_and_clinicians_matter(ratings_996):
    ids, z, _ = ratings_996
    corr = np.corrcoef(z.T)
    off = corr[~np.eye(8, dtype=bool)]
    assert 0.45 < off.mean() < 0.75
    clinician = np.array([parse_video_id(v).clinician for v in ids])
    means = {c: z[clinician == c, 0].mean() for c in set(clinician)}
    between = np.var([means[c] for c in clinician])
    assert between > 0.2  # a clinician effect: a video split leaks it


def test_ids_have_the_real_form(ratings_996):
    ids, _, _ = ratings_996
    parts = [parse_video_id(v) for v in ids]
    assert len(set(ids)) == 996
    assert {p.stimulus for p in parts} <= set(STIMULI) and {p.time_point for p in parts} == {"T1", "T2", "T3"}
    per_clinician = np.bincount(np.unique([p.clinician for p in parts], return_inverse=True)[1])
    assert per_clinician.max() <= 24 and per_clinician.mean() > 10
    assert all(len(p.clinician) == 6 and p.clinician[:2].isalpha() and p.clinician[2:].isdigit() for p in parts)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return generate_synthetic_release(tmp_path_factory.mktemp("synth") / "release", n_videos=40, seed=0)


def test_release_layout_is_readable_without_problems(release):
    index = scan_release(release.release_dir)
    assert index.problems == [] and index.is_synthetic
    assert index.video_ids == list(release.video_ids)
    manifest = json.loads((release.release_dir / "subset_manifest.json").read_text())
    assert manifest["synthetic"] is True and "latent skill" in manifest["planted_signal"]


def _feature(release, modality, video_id):
    folder = {m.name: m.folder for m in MODALITIES}[modality]
    with np.load(release.release_dir / folder / f"{video_id}.npz", allow_pickle=False) as npz:
        return npz["features"], npz["timestamps"]


def test_expressed_skills_carry_the_documented_share_of_the_latent_skill():
    """e_m = sqrt(s_m) z + sqrt(1 - s_m) u_m with u_m like z and independent between modalities."""
    draw = synth.synthetic_draw(996, seed=0)
    z = draw.skill
    assert set(draw.expressed) == set(synth.SIGNAL_SHARE) == {"text", "audio", "video"}
    noise = {}
    for group, share in synth.SIGNAL_SHARE.items():
        e = draw.expressed[group]
        r = [np.corrcoef(e[:, d], z[:, d])[0, 1] for d in range(8)]
        assert abs(np.mean(r) - np.sqrt(share)) < 0.03 and max(abs(np.array(r) - np.sqrt(share))) < 0.08, group
        assert abs(e.std(axis=0).mean() - 1.0) < 0.05
        noise[group] = (e - np.sqrt(share) * z) / np.sqrt(1 - share)
        off = np.corrcoef(noise[group].T)[~np.eye(8, dtype=bool)]
        assert abs(off.mean() - synth.DIMENSION_CORRELATION) < 0.05  # the noise is distributed like z
    for a, b in (("text", "audio"), ("text", "video"), ("audio", "video")):
        cross = [np.corrcoef(noise[a][:, d], noise[b][:, d])[0, 1] for d in range(8)]
        assert abs(np.mean(cross)) < 0.05, (a, b)


def test_planted_signal_in_features_and_words(release):
    """Every feature channel is the documented function of its modality's expressed skill."""
    draw = synth.synthetic_draw(40, seed=0)  # the draws generate_synthetic_release(n_videos=40, seed=0) used
    assert draw.video_ids == list(release.video_ids)
    dims = {key: d for d, key in enumerate(DIMENSION_KEYS)}
    audio, video = draw.expressed["audio"], draw.expressed["video"]
    text_scores = draw.expressed_scores("text")
    ids = release.video_ids

    for i, v in enumerate(ids):
        librosa = _feature(release, "librosa", v)[0]
        expected = min(round(synth.pause_share(audio[i, dims["verbal_fluency"]]) * len(librosa)), len(librosa) - 1)
        assert (librosa[:, 0] == -80.0).sum() == expected  # exactly the documented pause share
        prosody = _feature(release, "prosody", v)[0][0]
        assert prosody[1] == pytest.approx(35 * np.exp(0.3 * audio[i, dims["emotional_expression"]]), rel=1e-6)
        assert prosody[3] == pytest.approx(3.5 * np.exp(0.15 * audio[i, dims["verbal_fluency"]]), rel=1e-6)
        assert prosody[4] == pytest.approx(expected / len(librosa), rel=1e-6)

    smile = np.array([_feature(release, "openface", v)[0][:, 2:4].mean() for v in ids])
    brows = np.array([_feature(release, "openface", v)[0][:, 0:2].mean() for v in ids])
    gaze = np.array([_feature(release, "openface", v)[0][:, 204:206].std() for v in ids])
    assert spearmanr(smile, video[:, dims["wau"]])[0] > 0.9
    assert spearmanr(brows, video[:, dims["emotional_expression"]])[0] > 0.9
    assert spearmanr(gaze, video[:, dims["empathy"]])[0] < -0.5
    projection = np.random.default_rng(1).standard_normal((768, 8)) * 0.5  # seed + 1, as the generator
    w2v_corr = [
        np.corrcoef(_feature(release, "wav2vec", v)[0].mean(axis=0), projection @ audio[i])[0, 1]
        for i, v in enumerate(ids)
    ]
    assert min(w2v_corr) > 0.8

    for i, v in enumerate(ids):
        text = str(np.load(release.release_dir / "text" / "words" / f"{v}.npz")["text"])
        words = re.sub(r"\b(um|uh|like|you know), ", "", text)  # fillers may sit inside a sentence
        assert words.startswith(f"{parse_video_id(v).stimulus},")  # addressed by name
        for key, d in dims.items():
            level = int(np.clip(np.rint(text_scores[i, d]), 1, 5))
            tier = 0 if level <= 2 else (1 if level == 3 else 2)
            assert synth._BANK[key][tier] in words, (v, key, level)
            assert all(synth._BANK[key][t] not in words for t in range(3) if t != tier), (v, key)


def test_default_sample_ratings_match_paper_tables_2_and_6(default_sample_cache):
    """On the sample `mis-bench run` uses: rater ICC(3,1) (pingouin, fully rated videos) near Table 2,
    and the gold scores of the built dataset near Table 6."""
    import pandas as pd
    from datasets import load_dataset

    root = next(default_sample_cache.glob("default-sample-v*"))
    ratings = pd.read_csv(root / "release" / "ratings.csv")
    assert ratings["video_id"].nunique() == 996
    assert abs((ratings.groupby("video_id").size() == 3 * 8).sum() - 625) < 50  # all raters on all dimensions
    iccs = {}
    for key in DIMENSION_KEYS:
        fully_rated = (
            ratings[ratings["dimension"] == key].pivot(index="video_id", columns="rater", values="score").dropna()
        )
        iccs[key], _ = pingouin_icc3_1(fully_rated.to_numpy())
        assert abs(iccs[key] - HUMAN_CEILING[key].icc) < 0.08, (key, iccs[key])
    assert abs(np.mean(list(iccs.values())) - np.mean([HUMAN_CEILING[k].icc for k in DIMENSION_KEYS])) < 0.04
    scoring = load_dataset(str(root / "mis-bench"), "scoring")
    gold = pd.concat([scoring[split].to_pandas() for split in scoring])
    assert len(gold) == 996 * 8
    for key in DIMENSION_KEYS:
        scores = gold.loc[gold["dimension"] == key, "score"].astype(np.float64)
        assert abs(scores.mean() - GOLD_STATS[key].mean) < 0.06 and abs(scores.std(ddof=0) - GOLD_STATS[key].std) < 0.06


def test_frame_rates_and_prosody_midpoint(release):
    video_id = release.video_ids[0]
    librosa, t_lib = _feature(release, "librosa", video_id)
    wav2vec, t_w2v = _feature(release, "wav2vec", video_id)
    prosody, t_pro = _feature(release, "prosody", video_id)
    openface, t_of = _feature(release, "openface", video_id)
    assert np.allclose(np.diff(t_lib), 0.02, atol=1e-5) and wav2vec.shape[0] == librosa.shape[0] - 2
    assert prosody.shape == (1, 15) and t_pro[0] == pytest.approx(librosa.shape[0] * 0.02 / 2, abs=0.02)
    fps = (len(t_of) - 1) / (t_of[-1] - t_of[0])  # timestamps are rounded to ms, as in the release
    assert fps == pytest.approx(30, abs=0.05) or fps == pytest.approx(24, abs=0.05)
    for array in (librosa, wav2vec, prosody, openface):
        assert array.dtype == np.float32 and np.isfinite(array).all()


def _digest(folder):
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    a = generate_synthetic_release(tmp_path / "a", n_videos=5, seed=11, compress=False)
    b = generate_synthetic_release(tmp_path / "b", n_videos=5, seed=11, compress=False)
    c = generate_synthetic_release(tmp_path / "c", n_videos=5, seed=12, compress=False)
    assert _digest(a.release_dir) == _digest(b.release_dir) != _digest(c.release_dir)


def test_full_size_has_real_durations(tmp_path):
    release = generate_synthetic_release(tmp_path / "full", n_videos=2, seed=0, full_size=True, compress=False)
    for video_id in release.video_ids:
        librosa, _ = _feature(release, "librosa", video_id)
        assert librosa.shape[0] * 0.02 >= 8.0


def test_full_size_mean_duration_is_the_papers():
    rng = np.random.default_rng(0)
    sigma = 0.5
    draws = np.clip(rng.lognormal(np.log(62.42) - sigma**2 / 2, sigma, 20000), 8, 240)
    assert abs(draws.mean() - 62.42) < 1.5  # the distribution generate_synthetic_release(full_size=True) uses


def test_refuses_nonempty_output(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    from mis_bench_dataset.toolkit.errors import DataError

    with pytest.raises(DataError, match="not empty"):
        generate_synthetic_release(tmp_path / "x", n_videos=2)
