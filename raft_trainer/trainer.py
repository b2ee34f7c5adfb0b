"""`RAFTTrainer`: TRL's `SFTTrainer` with the MIS-RAFT loss (paper §5, eq. 9-12).

One forward pass per micro-batch computes logits only at the completion's positions (the
collator's `logits_keep`, passed as `logits_to_keep`), never the full (B, L, V) tensor; the RAFT
term reads the two score positions, the CE term the completion tokens. Normalisation: the trainer
counts scored rows and completion tokens over the whole gradient-accumulation window and over all
processes (`_get_num_items_in_batch`), each micro-batch divides its sums by those counts and, as
DDP averages gradients, multiplies by the number of processes, so one optimizer step sees exactly
eq. 12's batch mean whatever the accumulation and process layout. `raft_loss_scale="authors"` divides the RAFT
term once more by each micro-batch's row count, as the authors' code does. `early_stopping_patience` adds
transformers' `EarlyStoppingCallback`.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from trl import SFTTrainer

from mis_icc_metric import icc3_1
from raft_trainer.collator import MEDIA_BATCH_KEYS, RAFT_BATCH_KEYS, RAFTDataCollator
from raft_trainer.config import REGRESSION_HEAD, RAFTConfig
from raft_trainer.cot import COT_COMPLETION, CotScoringEncoder
from raft_trainer.data import ScoringEncoder, prepare_raft_dataset
from raft_trainer.digits import DigitTokens
from raft_trainer.loss import expected_decimal_score, number_token_loss_sum, squared_score_error_sum

logger = logging.getLogger(__name__)

_STATS_KEY = "_raft_stats"  # per-step [sum sq error, sum predicted, n scored rows], summed over processes
_ENCODED_COLUMNS = {"input_ids", "labels", "score_index", "score"}


def score_metrics(eval_pred) -> dict[str, float]:
    """Eval metrics from `prediction_step`'s (N, 2) [predicted score, dimension index] and gold scores:
    score MSE, mean predicted score, ICC(3,1) over all rows and the mean of per-dimension ICCs."""
    preds, gold = np.asarray(eval_pred.predictions, dtype=np.float64), np.asarray(eval_pred.label_ids, dtype=np.float64)
    predicted, dims = preds[:, 0], preds[:, 1].astype(int)
    metrics = {"score_mse": float(np.mean((predicted - gold) ** 2)), "mean_predicted_score": float(predicted.mean())}
    if len(gold) >= 2:
        metrics["icc"] = float(icc3_1(np.stack([gold, predicted], axis=1)))
        per_dim = [
            float(icc3_1(np.stack([gold[dims == d], predicted[dims == d]], axis=1)))
            for d in np.unique(dims)
            if (dims == d).sum() >= 2
        ]
        if per_dim:
            metrics["mean_dimension_icc"] = float(np.nanmean(per_dim))
    return metrics


class RAFTTrainer(SFTTrainer):
    """SFTTrainer whose loss is MIS-RAFT's expected-score squared error (or CE, or both).

    `train_dataset`, `eval_dataset` and the datasets given to `evaluate` and `predict` may be `scoring` rows
    (tokenized here with the chat template) or rows already encoded by `raft_trainer.data.prepare_raft_dataset`,
    as TRL's trainers prepare every dataset they are handed. `model` may be a model, or a Hub id or local folder
    loaded as TRL's trainers load one (`args.model_init_kwargs`; the tokenizer from the same place when
    `processing_class` is not given).
    """

    _tag_names = ["trl", "sft", "mis-raft"]
    _name = "MIS-RAFT"
    # compute_loss normalises by the counts of the whole accumulation window itself
    loss_is_scaled_for_ga = True

    def __init__(
        self,
        model,
        args: RAFTConfig | None = None,
        train_dataset=None,
        eval_dataset=None,
        processing_class=None,
        *,
        digit_tokens: DigitTokens | None = None,
        **kwargs: Any,
    ):
        """Every keyword beyond RAFT's own goes to transformers' `Trainer`, as TRL's trainers pass them on
        (`data_collator`, `compute_metrics`, `callbacks`, ...): RAFT fills in its collator and `score_metrics`
        where they are not given."""
        if args is None:
            args = RAFTConfig("mis-raft")
        if not isinstance(args, RAFTConfig):
            raise TypeError(f"RAFTTrainer needs a RAFTConfig, got {type(args).__name__}")
        if processing_class is None:
            processing_class = _processing_class_of(model, args)
        tokenizer = getattr(processing_class, "tokenizer", processing_class)
        _ensure_pad_token(tokenizer)
        self._pad_token_id = tokenizer.pad_token_id
        if args.head == REGRESSION_HEAD:
            model, kwargs = _regression_model_and_adapter(model, args, tokenizer, kwargs)
        self.digit_tokens = digit_tokens or DigitTokens.from_tokenizer(tokenizer)
        self.input_source = _resolve_input_source(args, train_dataset)  # "text", "features" or "raw"
        self._raw_media = self.input_source == "raw"
        self._encode_rows, raw_encoder = self._row_encoding(args, processing_class, tokenizer)
        train_dataset = self._encode_rows(train_dataset, "train")
        eval_dataset = self._encode_eval(eval_dataset)
        if kwargs.get("data_collator") is None:
            kwargs["data_collator"] = RAFTDataCollator(
                tokenizer.pad_token_id, args.padding_side, args.pad_to_multiple_of, encoder=raw_encoder
            )

        if args.early_stopping_patience is not None:
            from transformers import EarlyStoppingCallback

            stopping = EarlyStoppingCallback(args.early_stopping_patience, args.early_stopping_threshold)
            kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), stopping]
        super().__init__(
            model,
            args=args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            **{**kwargs, "compute_metrics": kwargs.get("compute_metrics") or score_metrics},
        )
        self.model.config.get_text_config().pad_token_id = tokenizer.pad_token_id
        self._digit_ids = self.digit_tokens.tensor()

    # -- data ---------------------------------------------------------------------------------
    def _row_encoding(self, args: RAFTConfig, processing_class, tokenizer):
        """(how a split's rows are prepared, the collator's raw-media encoder or None): raw-media rows stay
        unencoded for the collator; the others are tokenized here with the chat template."""
        if not self._raw_media:
            encoder_class = CotScoringEncoder if args.completion_style == COT_COMPLETION else ScoringEncoder
            encoder = encoder_class.for_setting(tokenizer, self.digit_tokens, args.setting, max_length=args.max_length)
            return (lambda dataset, split: _encode(dataset, encoder, split, args.dataset_num_proc)), None
        from raft_trainer.raw_media import RawMediaEncoder

        raw_encoder = RawMediaEncoder.for_setting(
            processing_class, self.digit_tokens, args.setting, max_length=args.max_length
        )
        return _raw_rows, raw_encoder

    def _encode_eval(self, eval_dataset, name: str = "eval"):
        """An evaluation dataset (or a dict of them, by name) encoded as the training rows are."""
        if isinstance(eval_dataset, dict):
            return {k: self._encode_rows(v, k) for k, v in eval_dataset.items()}
        return self._encode_rows(eval_dataset, name)

    def _prepare_dataset(self, dataset, processing_class, args, packing, formatting_func, dataset_name):
        """Every dataset TRL prepares (at `__init__`, and the ones handed to `evaluate`) is encoded first, so
        scoring rows are accepted everywhere; encoded rows pass through unchanged. Raw-media rows stay unencoded:
        the collator encodes them batch by batch (their pixels are too large to store per row)."""
        dataset = self._encode_rows(dataset, dataset_name)
        if self._raw_media:
            return dataset
        return super()._prepare_dataset(dataset, processing_class, args, packing, formatting_func, dataset_name)

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"):
        """TRL's `evaluate` on scoring rows or encoded rows (a dict of them: one evaluation each, by name); a
        name (`str`) selects one of the evaluation datasets given at `__init__`."""
        if eval_dataset is not None and not isinstance(eval_dataset, str):
            eval_dataset = self._encode_eval(eval_dataset, metric_key_prefix)
        return super().evaluate(eval_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)

    def predict(self, test_dataset, ignore_keys=None, metric_key_prefix: str = "test"):
        """transformers' `predict` on scoring rows or encoded rows (labelled rows: the RAFT forward reads the gold
        integer digit; unlabelled rows are dropped with a logged count, `raft_trainer.predict.predict_scores`
        scores them). `predictions` are (N, 2): [expected score, dimension index]; `label_ids` the gold scores."""
        test_dataset = self._encode_rows(test_dataset, metric_key_prefix)
        return super().predict(test_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)

    def predict_scores(self, rows, *, batch_size: int = 8, method: str = "greedy") -> list[dict]:
        """Score scoring rows, labelled or not, with the readout the trainer trains (`predict_scores` with this
        trainer's model, processing class and config: untied from teacher forcing, so no gold is needed): one
        record per row, `{"video_id", "dimension", "prediction"}`, ready for `write_predictions` and `score`."""
        from raft_trainer import predict

        rows = list(rows)
        readout = predict.ReadoutOptions(batch_size=batch_size, method=method, show_progress=False)
        scores = predict.predict_scores(self.model, self.processing_class, rows, self.args, readout=readout)
        return predict.prediction_records(rows, scores)

    def _set_signature_columns_if_needed(self):
        if self._signature_columns is None and self._raw_media:  # raw rows are encoded in the collator
            self._signature_columns = list(self.train_dataset.column_names)
        if self._signature_columns is None:
            self._signature_columns = [
                "input_ids",
                "labels",
                "score_index",
                "score",
                "dimension_index",
                *MEDIA_BATCH_KEYS,
            ]

    def _get_num_items_in_batch(self, batch_samples: list, device: torch.device) -> torch.Tensor | None:
        """[completion tokens, scored rows] over the accumulation window (and all processes)."""
        if not batch_samples or "keep_labels" not in batch_samples[0]:
            return super()._get_num_items_in_batch(batch_samples, device)
        counts = torch.stack(
            [torch.stack([(b["keep_labels"] != -100).sum(), torch.tensor(b["score"].numel())]) for b in batch_samples]
        ).sum(dim=0)
        counts = counts.to(device)
        if self.args.average_tokens_across_devices and self.args.world_size > 1:
            counts = self.accelerator.gather(counts).view(-1, 2).sum(dim=0)
        return counts

    # -- loss ---------------------------------------------------------------------------------
    def _raft_forward(self, model, inputs: dict[str, torch.Tensor]):
        """Predicted scores and the un-normalised loss sums of one micro-batch: (predicted, target, squared-error
        sum, cross-entropy sum, [completion tokens, scored rows], number-token-loss sum)."""
        raft = {k: inputs[k] for k in RAFT_BATCH_KEYS}
        model_inputs = {k: v for k, v in inputs.items() if k not in RAFT_BATCH_KEYS and k != "labels"}
        if self.args.head == REGRESSION_HEAD:
            return self._regression_forward(model, model_inputs, raft)
        outputs = model(**model_inputs, logits_to_keep=raft["logits_keep"], use_cache=False)
        logits = outputs.logits  # (B, len(logits_keep), V)
        rows = torch.arange(logits.size(0), device=logits.device)
        keep_index = raft["keep_index"].to(logits.device)
        predicted = expected_decimal_score(
            logits[rows, keep_index[:, 0]],
            logits[rows, keep_index[:, 1]],
            self._digit_ids.to(logits.device),
            self.args.renormalize_digits,
        )
        target = raft["score"].to(predicted.device)
        sq_error_sum = squared_score_error_sum(predicted, target)
        keep_labels = raft["keep_labels"].to(logits.device)
        if self.args.loss_weights[1] > 0:  # the cross-entropy term's weight
            ce_sum = F.cross_entropy(
                logits.flatten(0, 1).float(), keep_labels.flatten(), ignore_index=-100, reduction="sum"
            )
        else:
            ce_sum = sq_error_sum.new_zeros(())
        ntl_sum = sq_error_sum.new_zeros(())
        if self.args.number_token_weight > 0:
            digit_ids = self._digit_ids.to(logits.device)
            at_digits = logits[rows[:, None], keep_index]  # (B, 2, V): the integer and the fractional digit
            gold_ids = keep_labels[rows[:, None], keep_index]
            ntl_sum = number_token_loss_sum(at_digits, (gold_ids[..., None] == digit_ids).int().argmax(-1), digit_ids)
        local_counts = torch.stack([(keep_labels != -100).sum(), torch.tensor(target.numel(), device=target.device)])
        return predicted, target, sq_error_sum, ce_sum, local_counts, ntl_sum

    def _regression_forward(self, model, model_inputs: dict[str, torch.Tensor], raft: dict[str, torch.Tensor]):
        """`head="regression"`: the one output of the sequence-classification model read at the position that
        predicts the score's integer digit (the completion after it is replaced by padding, so the model pools
        there), and its squared error; the same tuple as the LM head's (no token terms)."""
        ids = model_inputs["input_ids"]
        last = raft["score_positions"][:, :1].to(ids.device)  # the position predicting the integer digit
        in_prompt = torch.arange(ids.size(1), device=ids.device)[None, :] <= last
        pad = self._pad_token_id
        inputs = {
            **model_inputs,
            "input_ids": torch.where(in_prompt, ids, torch.full_like(ids, pad)),
            "attention_mask": model_inputs["attention_mask"] * in_prompt,
        }
        predicted = model(**inputs, use_cache=False).logits[:, 0].float()
        target = raft["score"].to(predicted.device)
        sq_error_sum = squared_score_error_sum(predicted, target)
        zero = sq_error_sum.new_zeros(())
        local_counts = torch.stack([zero.long(), torch.tensor(target.numel(), device=target.device)])
        return predicted, target, sq_error_sum, zero, local_counts, zero

    def _combine(self, sq_error_sum, ce_sum, counts, scale, local_rows, ntl_sum) -> torch.Tensor:
        """The loss: each term's sum over its count (`counts`: [completion tokens, scored rows]; the number token
        loss over the scored rows' two digit positions) times `scale`; under `raft_loss_scale="authors"` the RAFT
        term also over this micro-batch's `local_rows`."""
        raft_weight, ce_weight = self.args.loss_weights
        counts = counts.to(sq_error_sum.device).float().clamp(min=1)
        loss = sq_error_sum.new_zeros(())
        if raft_weight > 0:
            raft_term = sq_error_sum / counts[1]
            if self.args.raft_loss_scale == "authors":
                raft_term = raft_term / local_rows.to(raft_term.device).float().clamp(min=1)
            loss = loss + raft_weight * raft_term
        if ce_weight > 0:
            loss = loss + ce_weight * ce_sum / counts[0]
        if self.args.number_token_weight > 0:
            loss = loss + self.args.number_token_weight * ntl_sum / (2 * counts[1])
        return loss * scale

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        predicted, target, sq_error_sum, ce_sum, local_counts, ntl_sum = self._raft_forward(model, inputs)
        if num_items_in_batch is None:
            scale = 1.0 / getattr(self, "current_gradient_accumulation_steps", 1) if self.model.training else 1.0
            loss = self._combine(sq_error_sum, ce_sum, local_counts, scale, local_counts[1], ntl_sum)
        else:
            scale = self.accelerator.num_processes if self.args.average_tokens_across_devices else 1
            loss = self._combine(sq_error_sum, ce_sum, num_items_in_batch, scale, local_counts[1], ntl_sum)
        if self.model.training:
            stats = torch.stack([sq_error_sum.detach(), predicted.detach().sum(), local_counts[1].to(predicted.dtype)])
            self._metrics["train"][_STATS_KEY].append(self.accelerator.gather_for_metrics(stats).view(-1, 3).sum(0))
        if return_outputs:
            return loss, {"predicted_score": predicted.detach(), "target": target}
        return loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad(), self.compute_loss_context_manager():
            predicted, target, sq_error_sum, ce_sum, local_counts, ntl_sum = self._raft_forward(model, inputs)
            loss = self._combine(sq_error_sum, ce_sum, local_counts, 1.0, local_counts[1], ntl_sum)
        if prediction_loss_only:
            return loss.detach(), None, None
        dims = inputs["dimension_index"].to(predicted.device, predicted.dtype)
        return loss.detach(), torch.stack([predicted.float(), dims.float()], dim=1), target.float()

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "train" if self.model.training else "eval"
        stats = self._metrics[mode].pop(_STATS_KEY, None)
        if stats:
            sq, pred_sum, n = torch.stack(stats).sum(0).tolist()  # one host sync per logging step
            if n > 0:
                prefix = "eval_" if mode == "eval" else ""
                logs[f"{prefix}score_mse"] = sq / n
                logs[f"{prefix}mean_predicted_score"] = pred_sum / n
        super().log(logs, start_time)


def _processing_class_of(model, args: RAFTConfig):
    """The tokenizer (or processor) of a model given by its Hub id or folder, loaded as TRL's trainers do."""
    if not isinstance(model, str):
        raise ValueError("RAFTTrainer needs `processing_class` (the model's tokenizer or processor)")
    from transformers import AutoProcessor

    init = args.model_init_kwargs or {}
    return AutoProcessor.from_pretrained(
        model, revision=init.get("revision"), trust_remote_code=init.get("trust_remote_code", args.trust_remote_code)
    )


def _regression_model_and_adapter(model, args: RAFTConfig, tokenizer, kwargs: dict):
    """`head="regression"`: the one-output sequence-classification model (loaded here from a Hub id or folder, with
    the trainer's `model_init_kwargs` and quantization) and the LoRA config turned to task type SEQ_CLS."""
    from raft_trainer.regression import load_regression_model, regression_peft_config

    kwargs = dict(kwargs)
    if isinstance(model, str):
        init = dict(args.model_init_kwargs or {})
        quantization = kwargs.pop("quantization_config", None)
        if quantization is not None:
            init["quantization_config"] = quantization
        model = load_regression_model(model, tokenizer, **init)
    elif getattr(model.config, "num_labels", None) != 1 or not hasattr(model, "score"):
        raise ValueError("RAFTConfig(head='regression') needs AutoModelForSequenceClassification(num_labels=1)")
    kwargs["peft_config"] = regression_peft_config(kwargs.get("peft_config"))
    return model, kwargs


def _ensure_pad_token(tokenizer) -> None:
    """Pad with eos when the tokenizer has no pad token (logged); refused when it has neither."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError("the tokenizer has neither a pad nor an eos token; set `tokenizer.pad_token`")
        logger.info("tokenizer has no pad token: padding with eos %r", tokenizer.eos_token)
        tokenizer.pad_token = tokenizer.eos_token


def _resolve_input_source(args: RAFTConfig, dataset) -> str:
    """`args.input_source`, with "auto" resolved from the training rows: "raw" when every row carries the
    modality's media paths, else "features" ("text" for the text setting); only the path columns are read."""
    if args.input_source != "auto":
        return args.input_source
    from mis_bench_dataset.setting_inputs import PATH_COLUMNS, resolve_input_source

    columns = list(dataset.column_names) if dataset is not None else []
    paths = [c for c in PATH_COLUMNS.values() if c in columns]
    rows = dataset.select_columns(paths) if paths else []
    return resolve_input_source(args.modality, rows, "auto")


def _raw_rows(dataset, split: str):
    """Labelled raw-media scoring rows, left unencoded (the collator encodes them batch by batch)."""
    if dataset is None:
        return None
    from raft_trainer.data import labelled_rows

    return labelled_rows(dataset, split)


def _encode(dataset, encoder: ScoringEncoder, split: str, num_proc: int | None):
    if dataset is None:
        return None
    columns = set(dataset.column_names)
    if "input_ids" in columns:
        missing = _ENCODED_COLUMNS - columns
        if missing:
            raise ValueError(
                f"{split} dataset is tokenized but lacks {sorted(missing)}; pass scoring rows or the output of "
                "raft_trainer.data.prepare_raft_dataset"
            )
        return dataset
    return prepare_raft_dataset(dataset, encoder, split=split, num_proc=num_proc)
