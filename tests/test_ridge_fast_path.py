"""The `features` baseline's fast path (transcripts counted once, sparse TF-IDF per fold, dual ridge from Gram
matrices) against its definition, the scikit-learn pipeline `FeatureRidgeBaseline._pipeline`: the fold TF-IDF
equals `TfidfVectorizer`'s, the CV errors equal `GridSearchCV`'s and the predictions equal the pipeline refitted
with the chosen alpha, to 1e-12, with and without unlabelled rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts.baselines import FeatureRidgeBaseline
from eval_scripts.baselines.fold_features import FoldFeatures, transcript_terms
from mis_bench_dataset import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN

ALPHAS = (0.1, 10.0, 1000.0)


def _docs(rows) -> list[str]:
    return [str(row.get("transcript") or "") for row in rows]


def _tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer=transcript_terms, min_df=2, sublinear_tf=True)


def test_fold_tfidf_is_the_vectorizers_fitted_on_the_fold(train_rows, test_rows):
    from sklearn.preprocessing import StandardScaler

    docs, new_docs = _docs(train_rows), _docs(test_rows)
    numeric = np.random.default_rng(0).normal(size=(len(docs), 3))
    fold = np.arange(len(docs))[np.arange(len(docs)) % 3 != 0]  # a fold's training rows
    features = FoldFeatures.fit(numeric, docs, fold)  # every row counted once, weighted by the fold's rows
    reference = _tfidf().fit(np.array(docs)[fold])
    assert list(features.terms) == list(reference.get_feature_names_out())
    blocks = features.rows
    products = blocks.dense @ blocks.dense.T + (blocks.sparse @ blocks.sparse.T).toarray()
    np.testing.assert_allclose(blocks.gram(), products, rtol=0, atol=1e-13)
    np.testing.assert_allclose(blocks.sparse.toarray(), reference.transform(docs).toarray(), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(blocks.dense, StandardScaler().fit(numeric[fold]).transform(numeric))
    unseen = features.transform(numeric[: len(new_docs)], new_docs)  # new rows: counted over the kept terms
    np.testing.assert_allclose(unseen.sparse.toarray(), reference.transform(new_docs).toarray(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("docs", [["one document only"], ["no shared words", "between these two"]])
def test_fold_tfidf_refuses_what_the_vectorizer_refuses(docs):
    with pytest.raises(ValueError) as expected:
        _tfidf().fit(docs)
    with pytest.raises(ValueError, match="^" + str(expected.value).replace(".", r"\.") + "$"):
        FoldFeatures.fit(np.zeros((len(docs), 1)), docs, np.arange(len(docs)))


@pytest.mark.parametrize("steps", [0, 1e18])  # always sparse, always dense
def test_both_product_routes_give_the_dense_product(train_rows, monkeypatch, steps):
    from eval_scripts.baselines import fold_features

    tfidf = _tfidf().fit_transform(_docs(train_rows))
    dense = tfidf.toarray()
    monkeypatch.setattr(fold_features, "DENSE_STEPS_PER_SPARSE_STEP", steps)
    blocks = fold_features.Blocks(np.ones((len(dense), 2)), tfidf)
    np.testing.assert_allclose(blocks.gram(), 2.0 + dense @ dense.T, rtol=0, atol=1e-14)


def test_what_the_process_keeps_changes_no_bit(train_rows, test_rows):
    """A fit whose transcripts were counted with others (the corpus of the process) or whose folds' text blocks were
    computed by an earlier setting gives bit for bit what a fit in a fresh process gives."""
    from eval_scripts.baselines import fold_features

    def fresh(modality, rows):
        fold_features._corpus.clear(), fold_features._cached_lexical_fold.cache_clear()
        return FeatureRidgeBaseline(modality, alphas=ALPHAS).fit(rows).predict(test_rows)

    half = train_rows[: len(train_rows) // 2] + train_rows[-5:]
    alone = {modality: fresh(modality, half) for modality in ("text", "video+text")}
    FeatureRidgeBaseline("text", alphas=ALPHAS).fit(train_rows)  # the corpus now holds every train transcript
    assert len(fold_features._corpus[0].row) > len({str(r["transcript"]) for r in half})
    for modality in ("text", "video+text"):  # the second reuses the first's text blocks
        kept = FeatureRidgeBaseline(modality, alphas=ALPHAS).fit(half).predict(test_rows)
        for key in DIMENSION_KEYS:
            np.testing.assert_array_equal(kept[key], alone[modality][key])


def _pipeline_predictions(model, frame, labels, test_frame, alpha, labelled=None):
    """The pipeline refitted with `alpha`: preprocessing on every row, ridge on the labelled ones."""
    from sklearn.base import clone
    from sklearn.linear_model import Ridge

    features = clone(model._pipeline(frame.shape[1] - 1).named_steps["features"]).fit(frame)
    labelled = np.ones(len(labels), bool) if labelled is None else labelled
    ridge = Ridge(alpha=alpha).fit(features.transform(frame)[labelled], labels[labelled])
    return np.clip(ridge.predict(features.transform(test_frame)), SCORE_MIN, SCORE_MAX)


@pytest.mark.parametrize("modality", ["text", "video+text"])
def test_fit_equals_gridsearchcv_and_the_refitted_pipeline_to_1e12(train_rows, test_rows, modality):
    from sklearn.model_selection import GridSearchCV, GroupKFold

    model = FeatureRidgeBaseline(modality, alphas=ALPHAS).fit(train_rows)
    predicted = model.predict(test_rows)
    frame, test_frame = model._frame(train_rows), model._frame(test_rows)
    clinicians = [str(r["clinician"]) for r in train_rows]
    for key in DIMENSION_KEYS:
        labels = np.array([float(str(r[key])) for r in train_rows])
        search = GridSearchCV(
            model._pipeline(frame.shape[1] - 1),
            {"ridge__alpha": list(ALPHAS)},
            cv=GroupKFold(n_splits=min(5, len(set(clinicians)))),
            scoring="neg_mean_squared_error",
        ).fit(frame, labels, groups=clinicians)
        assert model.chosen_alpha[key] == search.best_params_["ridge__alpha"], key
        assert abs(model.cv_mse[key] + search.best_score_) < 1e-12, key
        expected = _pipeline_predictions(model, frame, labels, test_frame, model.chosen_alpha[key])
        np.testing.assert_allclose(predicted[key], expected, rtol=0, atol=1e-12)


def _reference_cv(model, frame, labels, clinicians):
    """Grouped CV of one dimension with unlabelled rows, by hand from the pipeline's parts: the preprocessing fitted
    on every training row of the fold, the ridge on its labelled ones, the error on the labelled held-out rows."""
    from sklearn.base import clone
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GroupKFold

    labelled = ~np.isnan(labels)
    errors = []  # per fold: one MSE per alpha
    for train, held in GroupKFold(n_splits=min(5, len(set(clinicians)))).split(frame, groups=clinicians):
        if not labelled[held].any():
            continue
        features = clone(model._pipeline(frame.shape[1] - 1).named_steps["features"]).fit(frame.iloc[train])
        x, x_held = features.transform(frame.iloc[train]), features.transform(frame.iloc[held])
        fit_rows, held_rows = labelled[train], labelled[held]
        errors.append(
            [
                np.mean(
                    (
                        Ridge(alpha=a).fit(x[fit_rows], labels[train][fit_rows]).predict(x_held[held_rows])
                        - labels[held][held_rows]
                    )
                    ** 2
                )
                for a in model.alphas
            ]
        )
    return np.mean(errors, axis=0)


def test_unlabelled_rows_match_the_pipeline_fitted_per_dimension(train_rows, test_rows):
    rng = np.random.default_rng(5)
    rows = [{**row} for row in train_rows]
    for row in rows:  # each dimension unlabelled on its own random third of the videos, some sharing a pattern
        for j, key in enumerate(DIMENSION_KEYS):
            if rng.random() < 1 / 3 and j % 4:
                row[key] = None
    model = FeatureRidgeBaseline("text", alphas=ALPHAS).fit(rows)
    predicted = model.predict(test_rows)
    frame, test_frame = model._frame(rows), model._frame(test_rows)
    clinicians = np.array([str(r["clinician"]) for r in rows])
    for key in DIMENSION_KEYS:
        labels = np.array([np.nan if r[key] is None else float(str(r[key])) for r in rows])
        cv_mse = _reference_cv(model, frame, labels, clinicians)
        assert model.chosen_alpha[key] == ALPHAS[int(np.argmin(cv_mse))], key
        assert abs(model.cv_mse[key] - cv_mse.min()) < 1e-12, key
        expected = _pipeline_predictions(model, frame, labels, test_frame, model.chosen_alpha[key], ~np.isnan(labels))
        np.testing.assert_allclose(predicted[key], expected, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(6, 24),
    p=st.integers(1, 40),
    patterns=st.lists(st.integers(0, 2), min_size=1, max_size=5),
)
def test_ridge_path_with_missing_labels_equals_sklearn_ridge(seed, n, p, patterns):
    """Targets sharing a pattern of unlabelled rows are solved together: each still equals its own sklearn Ridge."""
    from sklearn.linear_model import Ridge

    from eval_scripts.baselines.models import ridge_path_predictions

    rng = np.random.default_rng(seed)
    x, x_test = rng.normal(1.0, 2.0, (n, p)), rng.normal(1.0, 2.0, (3, p))
    y = rng.normal(3.5, 0.5, (n, len(patterns)))
    holes = [np.zeros(n, bool), np.arange(n) % 3 == 0, np.arange(n) < n // 3]
    for j, pattern in enumerate(patterns):
        y[holes[pattern], j] = np.nan
    alphas = [0.05, 3.0, 300.0]
    path = ridge_path_predictions(x, y, x_test, alphas)
    for j, pattern in enumerate(patterns):
        keep = ~holes[pattern]
        for a, alpha in enumerate(alphas):
            expected = Ridge(alpha=alpha).fit(x[keep], y[keep, j]).predict(x_test)
            np.testing.assert_allclose(path[a, :, j], expected, rtol=1e-8, atol=1e-9)
