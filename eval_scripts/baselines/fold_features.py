"""The `features` baseline's preprocessing (standardised summaries + transcript TF-IDF) fitted fold by fold from
one count of the transcripts, kept as a dense and a sparse block instead of one dense matrix.

The pipeline `FeatureRidgeBaseline._pipeline` defines (a ColumnTransformer of StandardScaler and
`TfidfVectorizer(min_df=2, sublinear_tf=True)`, densified) recounts every transcript in every fold and makes an
n x (summaries + vocabulary) dense matrix. Here the term counts of all the fit's rows are made once
(`CountVectorizer`, sorted vocabulary, the vectorizer's own counting); a fold keeps the terms in at least two of its
training documents and weights them with `TfidfTransformer` fitted on those documents, which is what the
vectorizer does on the fold's rows (a term absent from them has document frequency 0 and is dropped either way).
The ridge only needs products of rows (its dual form), which the two blocks give without densifying.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_DF = 2  # the pipeline's TfidfVectorizer(min_df=2): a term in a single training document is dropped
DENSE_STEPS_PER_SPARSE_STEP = 30  # measured on one core: ~15 G multiply-adds/s in BLAS, ~0.3 G in scipy's SpGEMM


@functools.lru_cache(maxsize=1)
def _word_1_2_grams():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2)).build_analyzer()


@functools.lru_cache(maxsize=1 << 14)
def transcript_terms(transcript: str) -> tuple[str, ...]:
    """Word 1- and 2-grams exactly as `TfidfVectorizer(ngram_range=(1, 2))` analyses a document, cached:
    the CV folds and the four modality settings analyse the same transcripts again and again."""
    return tuple(_word_1_2_grams()(transcript))


def count_terms(transcripts: Sequence[str]) -> tuple[Any, np.ndarray]:
    """(CSR counts (n_docs, n_terms), the terms in CountVectorizer's sorted order) of the word 1-2 grams."""
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(analyzer=transcript_terms)
    counts = vectorizer.fit_transform(list(transcripts))
    return counts.tocsr(), vectorizer.get_feature_names_out()


@dataclass(frozen=True)
class Blocks:
    """Preprocessed rows: the standardised summaries (dense) and their TF-IDF (sparse CSR; None without text)."""

    dense: np.ndarray
    sparse: Any = None

    def products(self, other: Blocks) -> np.ndarray:
        """self @ other.T over both blocks, dense (n_self, n_other): the ridge's kernel rows."""
        out = self.dense @ other.dense.T
        if self.sparse is not None:
            out += _sparse_products(self.sparse, other.sparse)
        return out

    def transposed_times(self, coefficients: np.ndarray) -> np.ndarray:
        """self.T @ coefficients (n_features, k), the features in the pipeline's column order (summaries, terms)."""
        parts = [self.dense.T @ coefficients]
        if self.sparse is not None:
            parts.append(np.asarray(self.sparse.T @ coefficients))
        return np.vstack(parts)

    def times(self, weights: np.ndarray) -> np.ndarray:
        """self @ weights (n, k) for weights laid out as `transposed_times` gives them."""
        width = self.dense.shape[1]
        out = self.dense @ weights[:width]
        if self.sparse is not None:
            out += np.asarray(self.sparse @ weights[width:])
        return out


@dataclass
class FoldFeatures:
    """The preprocessing fitted on some rows: StandardScaler, and the kept terms with their TfidfTransformer."""

    scaler: Any
    kept: np.ndarray | None = None  # column indices into the counts it was fitted on
    terms: np.ndarray | None = None  # the kept terms, sorted
    tfidf: Any = None

    @classmethod
    def fit(cls, numeric: np.ndarray, counts: Any, terms: np.ndarray | None) -> FoldFeatures:
        """Fitted on `numeric` (the summaries) and `counts` (the transcripts' term counts, None without text)."""
        from sklearn.feature_extraction.text import TfidfTransformer
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(numeric)
        if counts is None:
            return cls(scaler)
        kept = _kept_terms(counts)
        tfidf = TfidfTransformer(sublinear_tf=True).fit(counts[:, kept])
        return cls(scaler, kept, terms[kept], tfidf)

    def transform_counts(self, numeric: np.ndarray, counts: Any) -> Blocks:
        """Rows whose counts share the columns of the counts this was fitted on."""
        dense = self.scaler.transform(numeric)
        if self.tfidf is None:
            return Blocks(dense)
        return Blocks(dense, self.tfidf.transform(counts[:, self.kept]).tocsr())

    def transform(self, numeric: np.ndarray, transcripts: Sequence[str]) -> Blocks:
        """New rows: their transcripts counted over the kept terms (unseen terms dropped, as the vectorizer does)."""
        dense = self.scaler.transform(numeric)
        if self.tfidf is None:
            return Blocks(dense)
        from sklearn.feature_extraction.text import CountVectorizer

        counter = CountVectorizer(analyzer=transcript_terms, vocabulary=list(self.terms))
        return Blocks(dense, self.tfidf.transform(counter.transform(list(transcripts))).tocsr())


def _sparse_products(a: Any, b: Any) -> np.ndarray:
    """a @ b.T as a dense array, by the cheaper route: a sparse product costs about one step per pair of rows
    sharing a term (sum of the document frequencies' products), a dense one n_a x n_b x n_terms BLAS steps, some
    DENSE_STEPS_PER_SPARSE_STEP times faster each (many short transcripts of a small vocabulary: dense wins)."""
    sparse_steps = float(np.dot(_document_frequency(a), _document_frequency(b)))
    if a.shape[0] * b.shape[0] * a.shape[1] <= DENSE_STEPS_PER_SPARSE_STEP * sparse_steps:
        return a.toarray() @ b.toarray().T
    return (a @ b.T).toarray()


def _document_frequency(counts: Any) -> np.ndarray:
    """Documents (rows) each column is nonzero in, as sklearn's own `_document_frequency` counts them."""
    return np.bincount(counts.indices, minlength=counts.shape[1])


def _kept_terms(counts: Any) -> np.ndarray:
    """Columns in at least MIN_DF documents, refused as TfidfVectorizer refuses (same messages)."""
    if counts.shape[0] < MIN_DF:
        raise ValueError("max_df corresponds to < documents than min_df")
    kept = np.flatnonzero(_document_frequency(counts) >= MIN_DF)
    if len(kept) == 0:
        raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
    return kept
