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
CACHED_FOLDS = 6  # the 5 CV folds and the final fit of one fit: what the next modality setting asks for again
CACHED_ROWS = 2500  # above, a fold's n x n Gram matrix (50 MB at 2,500 rows) is not kept
CORPUS_ROWS = 50_000  # transcripts whose counts the process keeps (sparse: a few MB per 1,000 transcripts)
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


@dataclass(frozen=True)
class LexicalFold:
    """The TF-IDF of a fit's transcripts with the weights of one fold's training rows, and its Gram matrix."""

    terms: np.ndarray  # the kept terms (in at least MIN_DF training documents), sorted
    tfidf: Any  # TfidfTransformer fitted on the training rows' counts of those terms
    matrix: Any  # CSR (n_docs, n_kept): every transcript of the fit, weighted
    gram: np.ndarray  # matrix @ matrix.T, dense, read-only


@dataclass(frozen=True)
class _Corpus:
    """Term counts of the transcripts seen so far in the process (CountVectorizer's counting, sorted terms)."""

    row: dict[str, int]  # transcript -> its row of `counts`
    counts: Any  # CSR (n_transcripts, n_terms)
    terms: np.ndarray

    @classmethod
    def count(cls, transcripts: Sequence[str]) -> _Corpus:
        from sklearn.feature_extraction.text import CountVectorizer

        unique = list(dict.fromkeys(transcripts))
        vectorizer = CountVectorizer(analyzer=transcript_terms)
        counts = vectorizer.fit_transform(unique).tocsr()
        return cls({text: i for i, text in enumerate(unique)}, counts, vectorizer.get_feature_names_out())


_corpus: list[_Corpus] = []  # at most one: the union of the transcripts the fits of this process counted


def _counts(transcripts: tuple[str, ...]) -> tuple[Any, np.ndarray]:
    """(CSR counts (n_docs, n_terms), terms) of `transcripts`: rows of the process's corpus, recounted as the union
    when a transcript is new to it (the cross-validation's fits on overlapping rows count every video once or
    twice, not once per fit). Over more terms than the transcripts' own counting finds, but a term none of them
    has is in no document of any fold (document frequency 0): dropped with the rare terms, the same columns stay."""
    corpus = _corpus[0] if _corpus else None
    if corpus is None or any(text not in corpus.row for text in transcripts):
        seen = list(corpus.row) if corpus is not None and len(corpus.row) + len(transcripts) <= CORPUS_ROWS else []
        corpus = _Corpus.count(seen + list(transcripts))
        _corpus[:] = [corpus]
    return corpus.counts[[corpus.row[text] for text in transcripts]], corpus.terms


@functools.lru_cache(maxsize=CACHED_FOLDS)
def _cached_lexical_fold(transcripts: tuple[str, ...], train: bytes) -> LexicalFold:
    return _lexical_fold(transcripts, train)


def _lexical_fold(transcripts: tuple[str, ...], train: bytes) -> LexicalFold:
    from sklearn.feature_extraction.text import TfidfTransformer

    counts, terms = _counts(transcripts)
    fold_counts = counts[np.frombuffer(train, dtype=np.intp)]
    kept = _kept_terms(fold_counts)
    tfidf = TfidfTransformer(sublinear_tf=True).fit(fold_counts[:, kept])
    matrix = tfidf.transform(counts[:, kept]).tocsr()
    gram = _sparse_products(matrix, matrix)
    gram.flags.writeable = False
    return LexicalFold(terms[kept], tfidf, matrix, gram)


def lexical_fold(transcripts: Sequence[str], train: np.ndarray) -> LexicalFold:
    """The TF-IDF of `transcripts` fitted on the rows `train`, cached for the process: the modality settings of
    one job fit on the same rows with the same folds, so their text block is computed once (the fit's transcripts
    counted once, each fold weighted and multiplied once); not cached above CACHED_ROWS rows (memory)."""
    key = (tuple(transcripts), np.asarray(train, dtype=np.intp).tobytes())
    return _cached_lexical_fold(*key) if len(key[0]) <= CACHED_ROWS else _lexical_fold(*key)


@dataclass(frozen=True)
class Blocks:
    """Preprocessed rows: the standardised summaries (dense) and their TF-IDF (sparse CSR; None without text)."""

    dense: np.ndarray
    sparse: Any = None
    sparse_gram: np.ndarray | None = None  # sparse @ sparse.T when known

    def gram(self) -> np.ndarray:
        """self @ self.T over both blocks, dense (n, n): every kernel entry the dual ridge needs."""
        out = self.dense @ self.dense.T
        if self.sparse is not None:
            out += self.sparse_gram if self.sparse_gram is not None else _sparse_products(self.sparse, self.sparse)
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
    """The preprocessing fitted on some rows of a fit: StandardScaler, and the text block (`LexicalFold`)."""

    scaler: Any
    terms: np.ndarray | None = None  # the kept terms, sorted (None without text)
    tfidf: Any = None  # their TfidfTransformer
    rows: Blocks | None = None  # every row of the fit, transformed

    @classmethod
    def fit(cls, numeric: np.ndarray, transcripts: Sequence[str] | None, train: np.ndarray) -> FoldFeatures:
        """Fitted on the rows `train` of a fit's summaries `numeric` and `transcripts` (None without text)."""
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(numeric[train])
        lexical = None if transcripts is None else lexical_fold(transcripts, train)
        dense = scaler.transform(numeric)
        if lexical is None:
            return cls(scaler, rows=Blocks(dense))
        return cls(scaler, lexical.terms, lexical.tfidf, Blocks(dense, lexical.matrix, lexical.gram))

    def transform(self, numeric: np.ndarray, transcripts: Sequence[str] | None) -> Blocks:
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
