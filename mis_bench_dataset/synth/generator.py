"""Synthetic MIS-Bench releases with planted, documented signal (`mis-bench synth`).

The tree has exactly the public release layout (see `mis_bench_dataset.release.tree`)
plus `ratings.csv`, per-rater labels in the long form (three raters R1-R3), and a
`subset_manifest.json` whose `"synthetic": true` makes every card built from it
say so loudly.

Planted signal (what a model can learn, and what tests check):

* Ids look real: clinician codes of two letters and four digits (``AB1234``),
  each clinician with several videos across time points T1-T3 and the eight
  standardized-patient stimuli, so a split by video leaks clinician identity.
* A latent skill ``z`` per video and dimension, standard normal with correlation
  0.6 between dimensions; 40 % of its variance is a clinician effect shared by all
  of that clinician's videos, 60 % is per video; standardized within the release.
* True score per dimension ``t = mean_d + sqrt(v_t,d) * z_d``; each rater adds a
  small fixed bias and noise ``N(0, v_e,d)`` and gives an integer 1-5. ``v_t`` and
  ``v_e`` are calibrated (by simulation with a fixed seed, cached) so that the
  single-rater ICC(3,1) among the three raters is near paper Table 2 and the gold
  mean and sd near Table 6. About 63 % of videos (625 of 996 in the paper) have
  all three raters on all eight dimensions; the others miss one rater on some
  dimensions. Gold = mean of available ratings, one decimal (half up).
* The features never see ``z`` itself. Each modality group m (text, audio, video)
  shows an expressed skill ``e_m = sqrt(s_m) * z + sqrt(1 - s_m) * u_m``, with
  ``u_m`` per-video noise distributed like ``z`` (same 0.6 correlation) and
  independent between modalities; ``s_m`` (SIGNAL_SHARE: text 0.18, audio 0.16,
  video 0.18) is the share of the expressed skill's variance that is the latent
  skill, so no feature of modality m correlates with ``z_d`` above ``sqrt(s_m)``.
  The expressed score is ``mean_d + sqrt(v_t,d) * e_m,d``. The shares are set so
  that the CPU ``features`` baselines on the default sample (996 videos, test
  split about 100) reach a mean dimension ICC of 0.2-0.4, below the human ceiling
  as real systems do (paper Table 3: best 0.39).
* Transcript wording (text): per dimension one sentence from a bank graded by the
  rounded expressed score (<= 2 low: dismissive, pessimistic, no collaboration;
  3 ordinary; >= 4 high: reflective, hopeful, "we"-language, naming the rupture),
  addressed to the stimulus patient by name; fillers ("um", "uh", ...) are more
  frequent when the expressed verbal fluency is low.
* Pauses (audio): the librosa log-Mel has silent frames (-80 dB) in pauses; the
  pause share is ``1 / (1 + 3 exp(0.7 e_audio,VF))`` exactly (0.25 at average
  fluency, in a few runs); speech loudness rises with emotional expression.
* Prosody (audio, 1 x 15, timestamp = segment midpoint): pitch sd and range rise
  with emotional expression, speech rate rises and pause ratio falls with verbal
  fluency; the remaining descriptors are noise.
* wav2vec (audio, T x 768): a fixed random projection of ``e_audio`` (all eight
  dimensions) plus unit frame noise, halved in pauses.
* Facial action units (video, openface columns 0-7): AU06/AU12-like columns 2-3
  (smile) rise with warmth (wau), columns 0-1 (brows) with emotional expression;
  landmarks move more with emotional expression; gaze varies less with empathy.
  Video carries only these three dimensions.

Short arrays by default (0.5-1 s, so a 996-video release builds in seconds);
``full_size`` gives real durations (log-normal, mean about 62 s, as paper
Appendix C) for benchmarks.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mis_bench_dataset.dimensions import (
    DIMENSION_KEYS,
    GOLD_STATS,
    HUMAN_CEILING,
    MEAN_DURATION_SECONDS,
    N_FULLY_RATED,
    N_VIDEOS,
)
from mis_bench_dataset.release.labels import write_ratings_long
from mis_bench_dataset.release.tree import MODALITIES, MODALITY_BY_NAME, TEXT_FOLDER
from mis_bench_dataset.toolkit.atomic import AtomicFiles, atomic_open, write_atomic
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.numbers import round_half_up_array
from mis_bench_dataset.toolkit.ownership import check_folder_path
from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS, parse_video_id

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "2"
# The "Planted signal" list of this docstring, copied into the manifest and the dataset card.
PLANTED_SIGNAL = (__doc__ or "").split("Planted signal", 1)[-1].split(":", 1)[-1].split("Short arrays", 1)[0].strip()
RATERS: tuple[str, ...] = ("R1", "R2", "R3")
RATER_BIAS: tuple[float, ...] = (-0.1, 0.0, 0.1)
DIMENSION_CORRELATION = 0.6
CLINICIAN_SHARE = 0.4
# Per modality group: the share of its expressed skill's variance that is the latent skill z
# (the rest is per-video noise); sqrt(share) bounds any of its features' correlation with z.
SIGNAL_SHARE: dict[str, float] = {"text": 0.18, "audio": 0.16, "video": 0.18}
SHORT_DURATION_SECONDS: tuple[float, float] = (0.5, 1.0)
AUDIO_FRAME_RATE = 50  # librosa / wav2vec frames per second
PAUSE_RUN_FRAMES = 15  # typical length of one synthetic pause (0.3 s at 50 Hz)
FULLY_RATED_SHARE = N_FULLY_RATED / N_VIDEOS
MAX_VIDEOS_PER_CLINICIAN = len(TIME_POINTS) * len(STIMULI)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class SyntheticRelease:
    """Where the generated tree and its per-rater ratings are."""

    release_dir: Path
    ratings_csv: Path
    video_ids: tuple[str, ...] = ()
    seed: int = 0


@dataclass(frozen=True)
class SyntheticDraw:
    """The video-level draws of a release: ids, latent skill, expressed skills, ratings."""

    video_ids: list[str]
    skill: np.ndarray  # z, (n, 8)
    expressed: dict[str, np.ndarray]  # modality group -> e_m, (n, 8)
    ratings: np.ndarray  # (n, 8, 3) integers, NaN = not rated

    def expressed_scores(self, group: str) -> np.ndarray:
        """(n, 8) scores on the 1-5 scale that modality group's features show: mean_d + sqrt(v_t,d) * e_m,d."""
        model = calibrated_rater_model()
        v_true = np.array([model[k][0] for k in DIMENSION_KEYS])
        centre = np.array([model[k][2] for k in DIMENSION_KEYS])
        return centre + np.sqrt(v_true) * self.expressed[group]


# ---------------------------------------------------------------- rater model
def _simulate_raters(mu, v_true, v_err, z, eps):
    """Integer ratings, raters on the second-to-last axis: (..., 3, n) for z (n,) and eps (3, n).

    True score mu + sqrt(v_true) z plus each rater's bias and noise sqrt(v_err) eps, rounded to 1-5.
    """
    true = mu + np.sqrt(v_true) * z
    cont = true + np.array(RATER_BIAS)[:, None] + np.sqrt(v_err) * eps
    return np.clip(np.rint(cont), 1, 5)


@functools.cache
def calibrated_rater_model() -> dict[str, tuple[float, float, float]]:
    """Per dimension (v_true, v_err, centre) so integer ratings of 3 raters hit Table 2 ICC
    and Table 6 mean and sd (rounding to integers shifts all three, hence the calibration).

    Fixed-point iteration on a fixed simulated sample (common random numbers),
    so the answer is deterministic; the eight dimensions are iterated together.
    """
    from mis_bench_dataset.icc import icc3_1

    rng = np.random.default_rng(20260526)
    n = 20000
    z = rng.standard_normal(n)
    eps = rng.standard_normal((n, len(RATERS))).T

    def per_dimension(table) -> np.ndarray:
        return np.array([table[key] for key in DIMENSION_KEYS])[:, None, None]  # broadcasts over (8, 3, n)

    rho = per_dimension({key: c.icc for key, c in HUMAN_CEILING.items()})
    sd = per_dimension({key: g.std for key, g in GOLD_STATS.items()})
    mu = per_dimension({key: g.mean for key, g in GOLD_STATS.items()})
    # Gold of three integer ratings depends only on their sum (3..15): round those 13 means once.
    sums = np.arange(len(RATERS), 5 * len(RATERS) + 1)
    gold_of_sum = round_half_up_array(sums / len(RATERS))
    v_true = sd**2 / (1 + (1 - rho) / (3 * rho))
    v_err = np.maximum(v_true * (1 - rho) / rho - 1 / 12, 1e-3)
    centre = mu
    for _ in range(40):
        ratings = _simulate_raters(centre, v_true, v_err, z, eps)  # (8, 3, n): contiguous over videos
        icc = np.asarray(icc3_1(np.swapaxes(ratings, -1, -2)))[:, None, None]
        gold = gold_of_sum[ratings.sum(axis=1, keepdims=True).astype(int) - len(RATERS)]  # (8, 1, n)
        v_true = v_true * (sd / gold.std(axis=-1, keepdims=True)) ** 2
        v_err = np.maximum(v_err * ((1 - rho) / rho) / ((1 - icc) / icc), 1e-4)
        centre = centre + mu - gold.mean(axis=-1, keepdims=True)
    return {
        key: (float(v_true[d, 0, 0]), float(v_err[d, 0, 0]), float(centre[d, 0, 0]))
        for d, key in enumerate(DIMENSION_KEYS)
    }


# ---------------------------------------------------------------- ids
def _clinician_codes(n: int, rng: np.random.Generator) -> list[str]:
    codes: set[str] = set()
    while len(codes) < n:
        letters = "".join(rng.choice(list(_LETTERS), 2))
        codes.add(f"{letters}{rng.integers(1, 13):02d}{rng.integers(1, 29):02d}")
    return sorted(codes)


def synthetic_video_ids(n_videos: int, rng: np.random.Generator) -> list[str]:
    """Real-looking ids: about 12.8 videos per clinician on average at full size (996 / 78 in the real data)."""
    if n_videos < 1:
        raise ValueError(f"n_videos must be >= 1, got {n_videos}")
    # Small releases get smaller clinicians so that a clinician split still has several groups.
    per_clinician = min(12.8, max(4.0, n_videos / 10))
    n_clinicians = max(min(3, n_videos), int(np.ceil(n_videos / per_clinician)))
    n_clinicians = max(n_clinicians, int(np.ceil(n_videos / MAX_VIDEOS_PER_CLINICIAN)))
    weights = rng.dirichlet(np.full(n_clinicians, 2.0))
    counts = np.ones(n_clinicians, dtype=int)
    for _ in range(n_videos - n_clinicians):
        open_ = counts < MAX_VIDEOS_PER_CLINICIAN
        p = np.where(open_, weights, 0.0)
        counts[rng.choice(n_clinicians, p=p / p.sum())] += 1
    combos = [(t, s) for t in TIME_POINTS for s in STIMULI]
    ids: list[str] = []
    for code, count in zip(_clinician_codes(n_clinicians, rng), counts, strict=True):
        for i in rng.choice(len(combos), size=count, replace=False):
            t, s = combos[i]
            ids.append(f"{code}_{t}_{s}")
    return sorted(ids)


# ---------------------------------------------------------------- text
_BANK: dict[str, tuple[str, str, str]] = {
    # (low, ordinary, high) wording per dimension
    "verbal_fluency": (
        "I, I don't, I'm not sure what to, to say here.",
        "I hear what you're saying.",
        "I really hear what you are telling me, and I'm glad you said it out loud.",
    ),
    "hope_and_pe": (
        "Honestly, I don't think there is much that can change this.",
        "Maybe things will get a little better.",
        "I believe you can get there, and together we can find concrete steps that move you toward what you want.",
    ),
    "persuasiveness": (
        "I don't know, whatever you think.",
        "It might be worth thinking about.",
        "Here is how I see it: what you feel makes sense given what happened, and that gives us a clear way forward.",
    ),
    "emotional_expression": (
        "Okay.",
        "That sounds hard.",
        "Wow, that sounds really painful, and I can feel how much this matters to you!",
    ),
    "wau": (
        "You should have handled that better.",
        "Thank you for telling me.",
        "I care about what you are going through, and there is nothing wrong with feeling this way.",
    ),
    "empathy": (
        "Let's talk about something else.",
        "It sounds like you are upset.",
        "It sounds like underneath the anger you feel alone and unsure whether anyone can really help you.",
    ),
    "abc": (
        "You need to fix this yourself.",
        "We can talk about it.",
        "Would it fit for you if we worked on this together and checked in on how it feels as we go?",
    ),
    "arrr": (
        "You are overreacting about our sessions.",
        "I see you have some concerns.",
        "I want to pause on what is happening between us right now, because your frustration with me matters and "
        "I want to repair it.",
    ),
}
_FILLERS = ("um,", "uh,", "you know,", "like,")


def _transcript(stimulus: str, scores: dict[str, float], rng: np.random.Generator) -> str:
    """Graded sentences for the expressed scores (one per dimension, shuffled) with fillers when fluency is low."""
    sentences = [f"{stimulus},"]
    order = list(DIMENSION_KEYS)
    rng.shuffle(order)
    for key in order:
        level = int(np.clip(np.rint(scores[key]), 1, 5))
        tier = 0 if level <= 2 else (1 if level == 3 else 2)
        sentences.append(_BANK[key][tier])
    words = " ".join(sentences).split()
    filler_rate = float(np.clip(0.25 - 0.12 * (scores["verbal_fluency"] - 3.0), 0.0, 0.5))
    fillers = np.flatnonzero(rng.random(len(words)) < filler_rate / 4)
    picks = rng.integers(len(_FILLERS), size=len(fillers))
    for position, pick in zip(fillers[::-1], picks[::-1], strict=True):  # from the end, so positions stay valid
        words.insert(int(position), _FILLERS[pick])
    return " ".join(words)


# ---------------------------------------------------------------- arrays
def pause_share(fluency: np.ndarray | float) -> np.ndarray | float:
    """Share of silent audio frames for an expressed verbal fluency (standard units): 0.25 at 0, falling."""
    return 1.0 / (1.0 + 3.0 * np.exp(0.7 * np.asarray(fluency)))


def _speech_mask(n_frames: int, share: float, rng: np.random.Generator) -> np.ndarray:
    """Speech (True) / pause runs at 50 Hz with exactly round(share * n_frames) pause frames in a few runs."""
    n_pause = min(int(round(share * n_frames)), n_frames - 1)
    if n_pause <= 0:
        return np.ones(n_frames, dtype=bool)
    n_runs = max(1, min(n_pause, int(round(n_pause / PAUSE_RUN_FRAMES))))
    pauses = 1 + rng.multinomial(n_pause - n_runs, np.full(n_runs, 1.0 / n_runs))
    speech = rng.multinomial(n_frames - n_pause, np.full(n_runs + 1, 1.0 / (n_runs + 1)))
    lengths = np.empty(2 * n_runs + 1, dtype=np.int64)
    lengths[0::2], lengths[1::2] = speech, pauses
    return np.repeat(np.arange(2 * n_runs + 1) % 2 == 0, lengths)


def _audio_arrays(e: dict[str, float], duration: float, projection_row: np.ndarray, rng: np.random.Generator) -> dict:
    n_audio = max(3, int(round(duration * AUDIO_FRAME_RATE)))
    t_audio = (np.arange(n_audio, dtype=np.float32) / AUDIO_FRAME_RATE).astype(np.float32)
    mask = _speech_mask(n_audio, float(pause_share(e["verbal_fluency"])), rng)
    loud = 12.0 + 4.0 * e["emotional_expression"]
    librosa = np.empty((n_audio, 93), dtype=np.float32)
    librosa[:, :80] = rng.random((n_audio, 80), dtype=np.float32) * np.float32(loud) - np.float32(45.0)
    librosa[~mask, :80] = -80.0
    librosa[:, 80:] = rng.standard_normal((n_audio, 13), dtype=np.float32) * np.float32(20.0)
    librosa[~mask, 80:] *= np.float32(0.1)

    n_w2v = n_audio - 2
    w2v = rng.standard_normal((n_w2v, 768), dtype=np.float32)
    w2v += projection_row[None, :]
    w2v[~mask[:n_w2v]] *= np.float32(0.5)

    prosody = rng.standard_normal(15).astype(np.float32)
    prosody[0] = 180 + 30 * rng.standard_normal()  # pitch mean (Hz)
    prosody[1] = 35 * np.exp(0.3 * e["emotional_expression"])  # pitch sd
    prosody[2] = 250 * np.exp(0.3 * e["emotional_expression"])  # pitch range
    prosody[3] = 3.5 * np.exp(0.15 * e["verbal_fluency"])  # speech rate (syll/s)
    prosody[4] = 1.0 - mask.mean()  # pause ratio
    prosody[5] = -45 + loud / 2  # energy
    return {
        "librosa": (librosa, t_audio),
        "wav2vec": (w2v, t_audio[:n_w2v].copy()),
        "prosody": (prosody[None, :], np.array([duration / 2], dtype=np.float32)),
    }


def _video_arrays(e: dict[str, float], duration: float, fps: int, rng: np.random.Generator) -> dict:
    n_video = max(2, int(duration * fps))
    t_video = np.round(np.arange(n_video) / fps, 3).astype(np.float32)
    openface = np.empty((n_video, 208), dtype=np.float32)
    aus = openface[:, 0:8]
    aus[:] = np.abs(rng.normal(0.25, 0.15, (n_video, 8)))
    aus[:, 0:2] += 0.15 * max(e["emotional_expression"] + 1.5, 0)
    aus[:, 2:4] += 0.15 * max(e["wau"] + 1.5, 0)
    movement = 0.01 * np.exp(0.3 * e["emotional_expression"])
    steps = rng.standard_normal((n_video, 196), dtype=np.float32) * np.float32(movement / np.sqrt(n_video))
    openface[:, 8:204] = rng.uniform(0.2, 0.8, 196).astype(np.float32) + np.cumsum(steps, axis=0)
    openface[:, 204:206] = rng.normal(0, 0.2 * np.exp(-0.3 * e["empathy"]), (n_video, 2))
    openface[:, 206:208] = np.clip(rng.normal(0.95, 0.03, (n_video, 2)), 0, 1)
    return {"openface": (openface, t_video)}


def _correlated_normal(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 8) standard normal with DIMENSION_CORRELATION between dimensions."""
    k = len(DIMENSION_KEYS)
    corr = np.full((k, k), DIMENSION_CORRELATION) + (1 - DIMENSION_CORRELATION) * np.eye(k)
    return rng.standard_normal((n, k)) @ np.linalg.cholesky(corr).T


def _correlated_skills(n: int, clinician_index: np.ndarray, n_clinicians: int, rng: np.random.Generator) -> np.ndarray:
    clinician_effect = _correlated_normal(n_clinicians, rng)
    video_effect = _correlated_normal(n, rng)
    z = np.sqrt(CLINICIAN_SHARE) * clinician_effect[clinician_index] + np.sqrt(1 - CLINICIAN_SHARE) * video_effect
    if n >= 2:
        # Standardize within the release: with ~13 videos per clinician the sample mean and
        # variance of z wander (effective n is the number of clinicians), which would move
        # the gold statistics and rater ICC away from the paper's tables.
        z = (z - z.mean(axis=0)) / z.std(axis=0)
    return z


def _ratings(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n, 8, 3) integer ratings, NaN where a rater did not rate."""
    model = calibrated_rater_model()
    n = z.shape[0]
    out = np.empty((n, len(DIMENSION_KEYS), len(RATERS)))
    for d, key in enumerate(DIMENSION_KEYS):
        v_true, v_err, centre = model[key]
        out[:, d, :] = _simulate_raters(centre, v_true, v_err, z[:, d], rng.standard_normal((n, len(RATERS))).T).T
    partial = rng.random(n) >= FULLY_RATED_SHARE
    for i in np.flatnonzero(partial):
        rater = rng.integers(len(RATERS))
        dims = rng.random(len(DIMENSION_KEYS)) < 0.5
        dims[rng.integers(len(DIMENSION_KEYS))] = True
        out[i, dims, rater] = np.nan
    return out


def _draw(n_videos: int, rng: np.random.Generator) -> SyntheticDraw:
    video_ids = synthetic_video_ids(n_videos, rng)
    clinicians, clinician_index = np.unique([parse_video_id(v).clinician for v in video_ids], return_inverse=True)
    z = _correlated_skills(len(video_ids), clinician_index, len(clinicians), rng)
    ratings = _ratings(z, rng)
    expressed = {
        group: np.sqrt(share) * z + np.sqrt(1 - share) * _correlated_normal(len(video_ids), rng)
        for group, share in SIGNAL_SHARE.items()
    }
    return SyntheticDraw(video_ids, z, expressed, ratings)


def synthetic_draw(n_videos: int = N_VIDEOS, seed: int = 0) -> SyntheticDraw:
    """The video-level draws exactly as `generate_synthetic_release` makes them for the same seed, without arrays."""
    return _draw(n_videos, np.random.default_rng(seed))


def synthetic_ratings(n_videos: int = N_VIDEOS, seed: int = 0) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Ids, latent skills (n, 8) and ratings (n, 8, 3; NaN = not rated) as `synthetic_draw` gives them."""
    draw = synthetic_draw(n_videos, seed)
    return draw.video_ids, draw.skill, draw.ratings


def synthetic_videos(
    n_videos: int = 40, seed: int = 0, full_size: bool = False
) -> tuple[SyntheticDraw, Iterator[tuple[str, dict[str, tuple[np.ndarray, np.ndarray]], str]]]:
    """The draws and, lazily, each video's (id, {modality: (features, timestamps)}, transcript).

    What `generate_synthetic_release` writes, in memory (one video at a time).
    """
    rng = np.random.default_rng(seed)
    draw = _draw(n_videos, rng)
    n = len(draw.video_ids)
    projection = np.random.default_rng(seed + 1).standard_normal((768, len(DIMENSION_KEYS))) * 0.5
    if full_size:
        sigma = 0.5
        durations = np.clip(rng.lognormal(np.log(MEAN_DURATION_SECONDS) - sigma**2 / 2, sigma, n), 8, 240)
    else:
        durations = rng.uniform(*SHORT_DURATION_SECONDS, n)
    fps_choice = np.where(rng.random(n) < 0.85, 30, 24)
    text_scores = draw.expressed_scores("text")
    audio_projection = (draw.expressed["audio"] @ projection.T).astype(np.float32)  # (n, 768)

    def videos():
        for i, video_id in enumerate(draw.video_ids):
            video_rng = np.random.default_rng([seed, i])
            audio = dict(zip(DIMENSION_KEYS, draw.expressed["audio"][i].tolist(), strict=True))
            video = dict(zip(DIMENSION_KEYS, draw.expressed["video"][i].tolist(), strict=True))
            arrays = _video_arrays(video, float(durations[i]), int(fps_choice[i]), video_rng)
            arrays.update(_audio_arrays(audio, float(durations[i]), audio_projection[i], video_rng))
            text = _transcript(
                parse_video_id(video_id).stimulus,
                dict(zip(DIMENSION_KEYS, text_scores[i].tolist(), strict=True)),
                video_rng,
            )
            yield video_id, arrays, text

    return draw, videos()


def _save(files: AtomicFiles, path: Path, compress: bool, **arrays) -> None:
    buffer = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(buffer, **arrays)
    files.write(path, buffer.getvalue())


def _write_videos(out_dir: Path, videos, n_videos: int, compress: bool, progress: bool) -> list[dict]:
    """Each video's npz files (one per modality, and its text); its manifest row, in order."""
    from mis_bench_dataset.toolkit.progress import progress as steps

    manifest_rows = []
    for video_id, arrays, text in steps(videos, total=n_videos, desc="synthesizing", unit="video", show=progress):
        entry = {"sample_id": video_id}
        # Thousands of small files: each whole (renamed into place), not synced one by one.
        with AtomicFiles(durable=False) as files:
            for name, (features, timestamps) in arrays.items():
                rel = f"{MODALITY_BY_NAME[name].folder}/{video_id}.npz"
                _save(files, out_dir / rel, compress, features=features, timestamps=timestamps)
                entry[f"{MODALITY_BY_NAME[name].folder}_path"] = rel
            rel = f"{TEXT_FOLDER}/{video_id}.npz"
            _save(files, out_dir / rel, compress, text=np.array(text))
            entry[f"{TEXT_FOLDER}_path"] = rel
        manifest_rows.append(entry)
    return manifest_rows


def _write_manifests(out_dir: Path, manifest_rows: list[dict], video_ids, seed: int, full_size: bool) -> None:
    """subset_manifest.csv, then subset_manifest.json (written last: its presence says the release is complete)."""
    manifest = {
        "synthetic": True,
        "generator": f"mis_bench_dataset.synth v{GENERATOR_VERSION}",
        "random_seed": seed,
        "full_size": full_size,
        "sample_count": len(video_ids),
        "planted_signal": PLANTED_SIGNAL,
        "modalities": sorted([m.folder for m in MODALITIES] + [TEXT_FOLDER]),
        "sample_ids": video_ids,
    }
    with atomic_open(out_dir / "subset_manifest.csv", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(manifest_rows[0]))
        writer.writeheader()
        writer.writerows(manifest_rows)
    write_atomic(out_dir / "subset_manifest.json", json.dumps(manifest, indent=2) + "\n")  # last: complete


def generate_synthetic_release(
    out_dir: str | Path,
    n_videos: int = 40,
    seed: int = 0,
    full_size: bool = False,
    compress: bool = True,
    progress: bool = False,
) -> SyntheticRelease:
    """Write a synthetic release tree plus `ratings.csv` (per-rater, long form) into `out_dir`.

    The tree is written into a staging folder beside `out_dir` and renamed into place once complete: a failure
    (a full disk, Ctrl-C) leaves `out_dir` as it was."""
    from mis_bench_dataset.toolkit.atomic import staging_folder

    out_dir = Path(out_dir)
    check_folder_path(out_dir, command="synth", arg="OUT")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DataError(
            f"{out_dir} exists and is not empty",
            where="OUT",
            hint="give a new (or empty) folder for the synthetic release; nothing was changed",
        )
    if n_videos < 1:
        raise UsageError(f"the number of videos must be at least 1, got {n_videos}", where="--videos")
    draw, videos = synthetic_videos(n_videos, seed, full_size)
    video_ids = draw.video_ids
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with staging_folder(out_dir.parent, f".{out_dir.name}.synth-") as staging:
        _write_release(staging, draw, videos, seed=seed, full_size=full_size, compress=compress, progress=progress)
        if out_dir.is_dir():
            out_dir.rmdir()  # empty (checked above): replaced by the complete tree
        staging.rename(out_dir)
    n_clinicians = len({parse_video_id(v).clinician for v in video_ids})
    logger.debug("synthetic release: %d videos, %d clinicians, seed %d", len(video_ids), n_clinicians, seed)
    return SyntheticRelease(out_dir, out_dir / "ratings.csv", tuple(video_ids), seed)


def _write_release(folder: Path, draw, videos, *, seed: int, full_size: bool, compress: bool, progress: bool) -> None:
    """The release tree of `draw`'s videos and ratings, written into `folder`."""
    video_ids = draw.video_ids
    for sub in [MODALITY_BY_NAME[name].folder for name in MODALITY_BY_NAME] + [TEXT_FOLDER]:
        (folder / sub).mkdir(parents=True, exist_ok=True)
    manifest_rows = _write_videos(folder, videos, len(video_ids), compress, progress)
    rated = np.argwhere(~np.isnan(draw.ratings))  # (video, dimension, rater) in row-major order
    rows = [(video_ids[i], RATERS[r], DIMENSION_KEYS[d], float(draw.ratings[i, d, r])) for i, d, r in rated.tolist()]
    write_ratings_long(folder / "ratings.csv", rows)
    _write_manifests(folder, manifest_rows, video_ids, seed, full_size)


def gold_from_ratings(ratings_csv: str | Path) -> dict[str, dict[str, float | None]]:
    """Convenience for tests and docs: gold scores of a ratings CSV."""
    from mis_bench_dataset.release.labels import read_labels

    return read_labels(ratings_csv).gold


__all__ = [
    "SyntheticRelease",
    "SyntheticDraw",
    "generate_synthetic_release",
    "calibrated_rater_model",
    "synthetic_video_ids",
    "synthetic_draw",
    "synthetic_ratings",
    "synthetic_videos",
    "pause_share",
    "gold_from_ratings",
]
