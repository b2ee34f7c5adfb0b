"""Synthetic MIS-Bench releases with planted, documented signal (`mis-bench synth`).

The tree has exactly the public release layout (see `mis_bench_dataset.release`)
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
  dimensions. Gold = mean of available ratings, one decimal.
* Transcript wording: per dimension one sentence from a bank graded by the rounded
  true score (low scores: dismissive, pessimistic, no collaboration; high:
  reflective, hopeful, "we"-language, naming the rupture), addressed to the
  stimulus patient by name; verbal fluency adds fillers ("um", "uh", repeats)
  when low.
* Pauses: the librosa log-Mel has silent frames (-80 dB) in pauses; the pause share
  falls with verbal fluency; speech loudness rises with emotional expression.
* Prosody (1 x 15, timestamp = segment midpoint): pitch sd and range rise with
  emotional expression, speech rate rises and pause ratio falls with verbal
  fluency; the remaining descriptors are noise.
* Facial action units (openface columns 0-7): AU06/AU12-like columns 2-3 (smile)
  rise with warmth (wau), columns 0-1 (brows) with emotional expression; landmarks
  move more with emotional expression; gaze varies less with empathy.
* wav2vec (T x 768): a fixed random projection of ``z`` plus unit noise.

Short arrays by default (2-6 s); ``full_size`` gives real durations (log-normal,
mean about 62 s, as paper Appendix C) for benchmarks.
"""

from __future__ import annotations

import csv
import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_KEYS, GOLD_STATS, HUMAN_CEILING, MEAN_DURATION_SECONDS, N_FULLY_RATED, N_VIDEOS
from mis_bench_dataset.errors import DataError, UsageError
from mis_bench_dataset.labels import write_ratings_long
from mis_bench_dataset.numbers import round_half_up_array
from mis_bench_dataset.outputs import check_folder_path
from mis_bench_dataset.release import MODALITIES, MODALITY_BY_NAME, TEXT_FOLDER
from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS, parse_video_id

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "1"
# The "Planted signal" list of this docstring, copied into the manifest and the dataset card.
PLANTED_SIGNAL = (__doc__ or "").split("Planted signal", 1)[-1].split(":", 1)[-1].split("Short arrays", 1)[0].strip()
RATERS: tuple[str, ...] = ("R1", "R2", "R3")
RATER_BIAS: tuple[float, ...] = (-0.1, 0.0, 0.1)
DIMENSION_CORRELATION = 0.6
CLINICIAN_SHARE = 0.4
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


# ---------------------------------------------------------------- rater model
def _simulate_raters(mu, v_true, v_err, z, eps):
    true = mu + np.sqrt(v_true) * z
    cont = true[:, None] + np.array(RATER_BIAS) + np.sqrt(v_err) * eps
    return np.clip(np.rint(cont), 1, 5)


@functools.lru_cache(maxsize=None)
def calibrated_rater_model() -> dict[str, tuple[float, float, float]]:
    """Per dimension (v_true, v_err, centre) so integer ratings of 3 raters hit Table 2 ICC
    and Table 6 mean and sd (rounding to integers shifts all three, hence the calibration).

    Fixed-point iteration on a fixed simulated sample (common random numbers),
    so the answer is deterministic.
    """
    from mis_bench_dataset.icc import icc3_1

    rng = np.random.default_rng(20260526)
    n = 20000
    z = rng.standard_normal(n)
    eps = rng.standard_normal((n, len(RATERS)))
    model = {}
    for key in DIMENSION_KEYS:
        rho, sd, mu = HUMAN_CEILING[key].icc, GOLD_STATS[key].std, GOLD_STATS[key].mean
        v_true = sd**2 / (1 + (1 - rho) / (3 * rho))
        v_err = max(v_true * (1 - rho) / rho - 1 / 12, 1e-3)
        centre = mu
        for _ in range(40):
            ratings = _simulate_raters(centre, v_true, v_err, z, eps)
            icc = float(icc3_1(ratings))
            gold = round_half_up_array(ratings.mean(axis=1))
            v_true *= (sd / float(gold.std())) ** 2
            v_err = max(v_err * ((1 - rho) / rho) / ((1 - icc) / icc), 1e-4)
            centre += mu - float(gold.mean())
        model[key] = (float(v_true), float(v_err), float(centre))
    return model


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
    for code, count in zip(_clinician_codes(n_clinicians, rng), counts):
        for i in rng.choice(len(combos), size=count, replace=False):
            t, s = combos[i]
            ids.append(f"{code}_{t}_{s}")
    return sorted(ids)


# ---------------------------------------------------------------- text
_BANK: dict[str, tuple[str, str, str]] = {
    # (low, ordinary, high) wording per dimension
    "verbal_fluency": ("I, I don't, I'm not sure what to, to say here.",
                       "I hear what you're saying.",
                       "I really hear what you are telling me, and I'm glad you said it out loud."),
    "hope_and_pe": ("Honestly, I don't think there is much that can change this.",
                    "Maybe things will get a little better.",
                    "I believe you can get there, and together we can find concrete steps that move you toward what you want."),
    "persuasiveness": ("I don't know, whatever you think.",
                       "It might be worth thinking about.",
                       "Here is how I see it: what you feel makes sense given what happened, and that gives us a clear way forward."),
    "emotional_expression": ("Okay.",
                             "That sounds hard.",
                             "Wow, that sounds really painful, and I can feel how much this matters to you!"),
    "wau": ("You should have handled that better.",
            "Thank you for telling me.",
            "I care about what you are going through, and there is nothing wrong with feeling this way."),
    "empathy": ("Let's talk about something else.",
                "It sounds like you are upset.",
                "It sounds like underneath the anger you feel alone and unsure whether anyone can really help you."),
    "abc": ("You need to fix this yourself.",
            "We can talk about it.",
            "Would it fit for you if we worked on this together and checked in on how it feels as we go?"),
    "arrr": ("You are overreacting about our sessions.",
             "I see you have some concerns.",
             "I want to pause on what is happening between us right now, because your frustration with me matters and I want to repair it."),
}
_FILLERS = ("um,", "uh,", "you know,", "like,")


def _transcript(stimulus: str, true_scores: dict[str, float], rng: np.random.Generator) -> str:
    sentences = [f"{stimulus},"]
    order = list(DIMENSION_KEYS)
    rng.shuffle(order)
    for key in order:
        level = int(np.clip(np.rint(true_scores[key] + rng.normal(0, 0.35)), 1, 5))
        tier = 0 if level <= 2 else (1 if level == 3 else 2)
        sentences.append(_BANK[key][tier])
    words = " ".join(sentences).split()
    filler_rate = float(np.clip(0.25 - 0.12 * (true_scores["verbal_fluency"] - 3.0), 0.0, 0.5))
    out: list[str] = []
    for word in words:
        if rng.random() < filler_rate / 4:
            out.append(str(rng.choice(_FILLERS)))
        out.append(word)
    return " ".join(out)


# ---------------------------------------------------------------- arrays
def _speech_mask(n_frames: int, fluency_z: float, rng: np.random.Generator) -> np.ndarray:
    """Alternating speech/pause runs at 50 Hz; fluent speakers pause less and shorter."""
    mask = np.zeros(n_frames, dtype=bool)
    speech_mean = 50 * np.exp(0.35 * fluency_z) * 1.2  # frames
    pause_mean = 20 * np.exp(-0.35 * fluency_z)
    pos, speaking = 0, True
    while pos < n_frames:
        length = max(1, int(rng.exponential(speech_mean if speaking else pause_mean)))
        mask[pos:pos + length] = speaking
        pos += length
        speaking = not speaking
    return mask


def _video_arrays(z: np.ndarray, duration: float, fps: int, projection: np.ndarray, rng: np.random.Generator) -> dict:
    s = dict(zip(DIMENSION_KEYS, z))
    n_audio = max(3, int(round(duration * 50)))
    t_audio = (np.arange(n_audio) * 0.02).astype(np.float32)
    mask = _speech_mask(n_audio, s["verbal_fluency"], rng)
    loud = 12.0 + 4.0 * s["emotional_expression"]
    mel = (-45.0 + loud * rng.random((n_audio, 80), dtype=np.float32)).astype(np.float32)
    mel[~mask] = -80.0
    mfcc = rng.standard_normal((n_audio, 13), dtype=np.float32) * 20
    mfcc[~mask] *= 0.1
    librosa = np.concatenate([mel, mfcc], axis=1)

    n_w2v = n_audio - 2
    w2v = rng.standard_normal((n_w2v, 768), dtype=np.float32)
    w2v += (projection @ z).astype(np.float32)[None, :]
    w2v[~mask[:n_w2v]] *= 0.5

    n_video = max(2, int(duration * fps))
    t_video = np.round(np.arange(n_video) / fps, 3).astype(np.float32)
    aus = np.abs(rng.normal(0.25, 0.15, (n_video, 8))).astype(np.float32)
    aus[:, 0:2] += 0.15 * max(s["emotional_expression"] + 1.5, 0)
    aus[:, 2:4] += 0.15 * max(s["wau"] + 1.5, 0)
    base = rng.uniform(0.2, 0.8, 196).astype(np.float32)
    movement = 0.01 * np.exp(0.3 * s["emotional_expression"])
    landmarks = base + np.cumsum(rng.normal(0, movement, (n_video, 196)), axis=0).astype(np.float32) / np.sqrt(n_video)
    gaze = rng.normal(0, 0.2 * np.exp(-0.3 * s["empathy"]), (n_video, 2)).astype(np.float32)
    confidence = np.clip(rng.normal(0.95, 0.03, (n_video, 2)), 0, 1).astype(np.float32)
    openface = np.concatenate([aus, landmarks, gaze, confidence], axis=1).astype(np.float32)

    pause_ratio = 1.0 - mask.mean()
    prosody = rng.normal(0, 1, 15).astype(np.float32)
    prosody[0] = 180 + 30 * rng.standard_normal()  # pitch mean (Hz)
    prosody[1] = 35 * np.exp(0.3 * s["emotional_expression"])  # pitch sd
    prosody[2] = 250 * np.exp(0.3 * s["emotional_expression"])  # pitch range
    prosody[3] = 3.5 * np.exp(0.15 * s["verbal_fluency"])  # speech rate (syll/s)
    prosody[4] = pause_ratio
    prosody[5] = float(-45 + loud / 2)  # energy
    return {
        "openface": (openface, t_video),
        "librosa": (librosa.astype(np.float32), t_audio),
        "wav2vec": (w2v, t_audio[:n_w2v].copy()),
        "prosody": (prosody[None, :], np.array([duration / 2], dtype=np.float32)),
    }


def _correlated_skills(n: int, clinician_index: np.ndarray, n_clinicians: int, rng: np.random.Generator) -> np.ndarray:
    k = len(DIMENSION_KEYS)
    corr = np.full((k, k), DIMENSION_CORRELATION) + (1 - DIMENSION_CORRELATION) * np.eye(k)
    chol = np.linalg.cholesky(corr)
    clinician_effect = rng.standard_normal((n_clinicians, k)) @ chol.T
    video_effect = rng.standard_normal((n, k)) @ chol.T
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
        out[:, d, :] = _simulate_raters(centre, v_true, v_err, z[:, d], rng.standard_normal((n, len(RATERS))))
    partial = rng.random(n) >= FULLY_RATED_SHARE
    for i in np.flatnonzero(partial):
        rater = rng.integers(len(RATERS))
        dims = rng.random(len(DIMENSION_KEYS)) < 0.5
        dims[rng.integers(len(DIMENSION_KEYS))] = True
        out[i, dims, rater] = np.nan
    return out


def _latent_and_ratings(n_videos: int, rng: np.random.Generator) -> tuple[list[str], np.ndarray, np.ndarray]:
    video_ids = synthetic_video_ids(n_videos, rng)
    clinicians, clinician_index = np.unique([parse_video_id(v).clinician for v in video_ids], return_inverse=True)
    z = _correlated_skills(len(video_ids), clinician_index, len(clinicians), rng)
    return video_ids, z, _ratings(z, rng)


def synthetic_ratings(n_videos: int = N_VIDEOS, seed: int = 0) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Ids, latent skills (n, 8) and ratings (n, 8, 3; NaN = not rated) exactly as
    `generate_synthetic_release` draws them for the same seed, without writing arrays."""
    return _latent_and_ratings(n_videos, np.random.default_rng(seed))


def _save(path: Path, compress: bool, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (np.savez_compressed if compress else np.savez)(path, **arrays)


def generate_synthetic_release(
    out_dir: str | Path,
    n_videos: int = 40,
    seed: int = 0,
    full_size: bool = False,
    compress: bool = True,
    progress: bool = False,
) -> SyntheticRelease:
    """Write a synthetic release tree plus `ratings.csv` (per-rater, long form) into `out_dir`."""
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    check_folder_path(out_dir, command="synth", arg="OUT")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DataError(f"{out_dir} exists and is not empty", where="OUT",
                        hint="give a new (or empty) folder for the synthetic release; nothing was changed")
    if n_videos < 1:
        raise UsageError(f"the number of videos must be at least 1, got {n_videos}", where="--videos")
    rng = np.random.default_rng(seed)
    video_ids, z, ratings = _latent_and_ratings(n_videos, rng)
    model = calibrated_rater_model()
    projection = np.random.default_rng(seed + 1).standard_normal((768, len(DIMENSION_KEYS))) * 0.5
    if full_size:
        sigma = 0.5
        durations = np.clip(rng.lognormal(np.log(MEAN_DURATION_SECONDS) - sigma**2 / 2, sigma, len(video_ids)), 8, 240)
    else:
        durations = rng.uniform(2.0, 6.0, len(video_ids))
    fps_choice = np.where(rng.random(len(video_ids)) < 0.85, 30, 24)

    rows: list[tuple[str, str, str, float]] = []
    manifest_rows = []
    for i, video_id in enumerate(tqdm(video_ids, desc="synthesizing", unit="video", disable=not progress or None)):
        video_rng = np.random.default_rng([seed, i])
        stimulus = parse_video_id(video_id).stimulus
        true_scores = {key: model[key][2] + np.sqrt(model[key][0]) * z[i, d] for d, key in enumerate(DIMENSION_KEYS)}
        arrays = _video_arrays(z[i], float(durations[i]), int(fps_choice[i]), projection, video_rng)
        entry = {"sample_id": video_id}
        for name, (features, timestamps) in arrays.items():
            rel = f"{MODALITY_BY_NAME[name].folder}/{video_id}.npz"
            _save(out_dir / rel, compress, features=features, timestamps=timestamps)
            entry[f"{MODALITY_BY_NAME[name].folder}_path"] = rel
        rel = f"{TEXT_FOLDER}/{video_id}.npz"
        _save(out_dir / rel, compress, text=np.array(_transcript(stimulus, true_scores, video_rng)))
        entry[f"{TEXT_FOLDER}_path"] = rel
        manifest_rows.append(entry)
        for d, key in enumerate(DIMENSION_KEYS):
            for r, rater in enumerate(RATERS):
                if not np.isnan(ratings[i, d, r]):
                    rows.append((video_id, rater, key, float(ratings[i, d, r])))

    ratings_csv = write_ratings_long(out_dir / "ratings.csv", rows)
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
    (out_dir / "subset_manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    with (out_dir / "subset_manifest.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(manifest_rows[0]))
        writer.writeheader()
        writer.writerows(manifest_rows)
    n_clinicians = len({parse_video_id(v).clinician for v in video_ids})
    logger.info("synthetic release: %d videos, %d clinicians, seed %d -> %s", len(video_ids), n_clinicians, seed, out_dir)
    return SyntheticRelease(out_dir, ratings_csv, tuple(video_ids), seed)


def gold_from_ratings(ratings_csv: str | Path) -> dict[str, dict[str, float | None]]:
    """Convenience for tests and docs: gold scores of a ratings CSV."""
    from mis_bench_dataset.labels import read_labels

    return read_labels(ratings_csv).gold


__all__ = ["SyntheticRelease", "generate_synthetic_release", "calibrated_rater_model", "synthetic_video_ids",
           "synthetic_ratings", "gold_from_ratings"]
