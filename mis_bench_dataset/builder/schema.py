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


def _value(dtype: str) -> dict:
    return {"dtype": dtype, "_type": "Value"}


def features_dicts() -> dict[str, dict[str, dict]]:
    """config -> its columns as `datasets.Features.to_dict()` writes them (the form `datasets` stores in a
    Parquet schema's metadata). The build writes these without importing `datasets` (which takes 1-2 s);
    `Features.from_dict` of them is the config's `Features`, and tests check the round trip and the card's
    YAML against `datasets` itself."""
    scoring = {name: _value("string") for name in SCORING_COLUMNS}
    scoring["score"] = _value("float32")
    features = {name: _value("string") for name in (*IDENTITY_COLUMNS, "transcript")}
    for m in MODALITIES:
        features[m.name] = {"shape": [None, m.width], "dtype": "float32", "_type": "Array2D"}
        features[f"{m.name}_timestamps"] = {"feature": _value("float32"), "_type": "List"}
        features[f"has_{m.name}"] = _value("bool")
    features["duration_seconds"] = _value("float32")
    for key in DIMENSION_KEYS:
        features[key] = _value("float32")
    return {"scoring": scoring, "features": features}


def features_yaml(config: str) -> list[dict]:
    """The config's columns as a dataset card lists them (`Features._to_yaml_list()`, checked by the tests)."""
    yaml = []
    for name, spec in features_dicts()[config].items():
        if spec["_type"] == "Array2D":
            yaml.append({"name": name, "dtype": {"array2_d": {"shape": spec["shape"], "dtype": spec["dtype"]}}})
        elif spec["_type"] == "List":
            yaml.append({"name": name, "list": spec["feature"]["dtype"]})
        else:
            yaml.append({"name": name, "dtype": spec["dtype"]})
    return yaml


def scoring_features():
    """`datasets.Features` of the `scoring` config."""
    from datasets import Features

    return Features.from_dict(features_dicts()["scoring"])


def features_features():
    """`datasets.Features` of the `features` config."""
    from datasets import Features

    return Features.from_dict(features_dicts()["features"])


def _with_hf_metadata(schema: pa.Schema, features: dict) -> pa.Schema:
    """Parquet alone (without the card) still tells `datasets` the declared features."""
    metadata = {"huggingface": json.dumps({"info": {"features": features}})}
    return schema.with_metadata(metadata)


def scoring_arrow_schema(features=None) -> pa.Schema:
    fields = [pa.field(name, pa.string()) for name in SCORING_COLUMNS[:-1]]
    fields.append(pa.field("score", pa.float32()))
    return _with_hf_metadata(pa.schema(fields), features.to_dict() if features else features_dicts()["scoring"])


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
    return _with_hf_metadata(pa.schema(fields), features.to_dict() if features else features_dicts()["features"])


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
