"""The two configs' columns, as `datasets.Features` (for the card) and as the plain
Arrow storage schema the Parquet files hold (Array2D is stored as list<list<float32>>,
exactly what `datasets` casts back to `Array2D((None, W), "float32")`).

Absent modalities are empty (0, W) arrays with `has_M = False`: nulls in an
Array2D column are broken in datasets 5.2, empty arrays round-trip cleanly.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.release.tree import MODALITIES

IDENTITY_COLUMNS: tuple[str, ...] = ("video_id", "clinician", "time_point", "stimulus")
SCORING_COLUMNS: tuple[str, ...] = (
    *IDENTITY_COLUMNS,
    "dimension",
    "dimension_name",
    "transcript",
    "criterion",
    "rubric_1",
    "rubric_2",
    "rubric_3",
    "rubric_4",
    "rubric_5",
    "score",
)


def features_columns() -> tuple[str, ...]:
    cols: list[str] = [*IDENTITY_COLUMNS, "transcript"]
    for m in MODALITIES:
        cols += [m.name, f"{m.name}_timestamps", f"has_{m.name}"]
    cols += ["duration_seconds", *DIMENSION_KEYS]
    return tuple(cols)


FEATURES_COLUMNS: tuple[str, ...] = features_columns()


def scoring_features():
    """`datasets.Features` of the `scoring` config."""
    from datasets import Features, Value

    spec = {name: Value("string") for name in SCORING_COLUMNS}
    spec["score"] = Value("float32")
    return Features(spec)


def features_features():
    """`datasets.Features` of the `features` config."""
    from datasets import Array2D, Features, List, Value

    spec: dict = {name: Value("string") for name in (*IDENTITY_COLUMNS, "transcript")}
    for m in MODALITIES:
        spec[m.name] = Array2D((None, m.width), "float32")
        spec[f"{m.name}_timestamps"] = List(Value("float32"))
        spec[f"has_{m.name}"] = Value("bool")
    spec["duration_seconds"] = Value("float32")
    for key in DIMENSION_KEYS:
        spec[key] = Value("float32")
    return Features(spec)


def _with_hf_metadata(schema: pa.Schema, features) -> pa.Schema:
    """Parquet alone (without the card) still tells `datasets` the declared features."""
    metadata = {"huggingface": json.dumps({"info": {"features": features.to_dict()}})}
    return schema.with_metadata(metadata)


def scoring_arrow_schema(features=None) -> pa.Schema:
    fields = [pa.field(name, pa.string()) for name in SCORING_COLUMNS[:-1]]
    fields.append(pa.field("score", pa.float32()))
    return _with_hf_metadata(pa.schema(fields), features or scoring_features())


def features_arrow_schema(features=None) -> pa.Schema:
    fields = [pa.field(name, pa.string()) for name in (*IDENTITY_COLUMNS, "transcript")]
    for m in MODALITIES:
        fields += [
            pa.field(m.name, pa.list_(pa.list_(pa.float32()))),
            pa.field(f"{m.name}_timestamps", pa.list_(pa.float32())),
            pa.field(f"has_{m.name}", pa.bool_()),
        ]
    fields.append(pa.field("duration_seconds", pa.float32()))
    fields += [pa.field(key, pa.float32()) for key in DIMENSION_KEYS]
    return _with_hf_metadata(pa.schema(fields), features or features_features())


def arrays_2d(arrays: list[np.ndarray], width: int) -> pa.Array:
    """list<list<float32>> from (T_i, W) float32 arrays without Python-level loops over values."""
    flat = [np.ascontiguousarray(a, dtype=np.float32).reshape(-1) for a in arrays]
    # One array (the build's case) is wrapped without a copy; several are concatenated once.
    joined = flat[0] if len(flat) == 1 else (np.concatenate(flat) if flat else np.zeros(0, np.float32))
    values = pa.array(joined, type=pa.float32())
    total_rows = sum(a.shape[0] for a in arrays)
    inner_offsets = pa.array(np.arange(0, total_rows * width + 1, width, dtype=np.int32))
    inner = pa.ListArray.from_arrays(inner_offsets, values)
    outer_offsets = pa.array(np.concatenate([[0], np.cumsum([a.shape[0] for a in arrays])]).astype(np.int32))
    return pa.ListArray.from_arrays(outer_offsets, inner)


def arrays_1d(arrays: list[np.ndarray]) -> pa.Array:
    joined = arrays[0] if len(arrays) == 1 else (np.concatenate(arrays) if arrays else np.zeros(0, np.float32))
    values = pa.array(np.ascontiguousarray(joined, dtype=np.float32), type=pa.float32())
    offsets = pa.array(np.concatenate([[0], np.cumsum([a.shape[0] for a in arrays])]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, values)
