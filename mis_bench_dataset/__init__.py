"""MIS-Bench dataset: domain constants, release reader, Hub-ready builder, synthetic generator."""

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
    DIMENSIONS,
    GOLD_STATS,
    HUMAN_CEILING,
    RUBRIC,
    SCORE_MAX,
    SCORE_MIN,
    resolve_dimension,
)
from mis_bench_dataset.video_ids import VideoId, normalize_video_id, parse_video_id

__all__ = [
    "DIMENSIONS",
    "DIMENSION_KEYS",
    "DIMENSION_BY_KEY",
    "RUBRIC",
    "HUMAN_CEILING",
    "GOLD_STATS",
    "SCORE_MIN",
    "SCORE_MAX",
    "resolve_dimension",
    "VideoId",
    "parse_video_id",
    "normalize_video_id",
]
