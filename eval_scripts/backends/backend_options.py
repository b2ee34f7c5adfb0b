"""A backend's own options, declared by the backend: a dataclass on its class (`Backend.Options`).

Each field has a type, a default and its help (`backend_option` metadata), so `mis-bench run -M KEY=VALUE`
types and checks a value against the backend asked for, `mis-bench backends B` lists them, and an installed
backend (`backends.plugins`) declares its options the same way a built-in one does. A field marked
`changes_answers` (a model's dtype, a server's extra request fields) is part of every cache key and of the
results when it is set away from its default; one that only changes how answers are fetched (a timeout, the
requests in flight) is not, so a cache stays valid whatever it is set to.

Values are read from text by their annotation: bool, int, float, str, `X | None` (`none` for None), `Literal`
choices, `tuple[str, ...]` (a comma list) and `dict` (a JSON object); a field's `parse` (one of the toolkit's
argument types, `mis_bench_dataset.toolkit.options`) checks a value further (a range, a URL).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mis_bench_dataset.toolkit.errors import UsageError

# Where a wrong key or value is reported: the flag that gives them.
WHERE = "-M/--backend-option"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_NONE = ("none", "null")


def backend_option(
    help: str,  # noqa: A002 - the word the listing uses
    *,
    changes_answers: bool = False,
    flag: str | None = None,
    parse: Callable[[str], Any] | None = None,
    repeatable: bool = False,
) -> dict[str, Any]:
    """A backend option's field metadata: `field(default=8, metadata=backend_option("requests in flight"))`.

    `changes_answers`: the option can change what the model answers (then it keys the response cache and is
    recorded in results.json when set away from its default); `flag`: the `mis-bench run` flag generated for it
    (`run_flags`; its help, default and validator are the option's); `parse`: a stricter reader of its text than
    its type's (an argparse type); `repeatable`: the flag may be given several times, its texts joined as one
    comma list (`--base-url A --base-url B,C`)."""
    return {
        "backend_help": help,
        "changes_answers": changes_answers,
        "flag": flag,
        "parse": parse,
        "repeatable": repeatable,
    }


@dataclass(frozen=True)
class NoOptions:
    """The options of a backend that declares none."""


@dataclass(frozen=True)
class OptionSpec:
    """One declared option, as `mis-bench backends B` lists it."""

    name: str
    type_text: str
    default: Any
    help: str
    changes_answers: bool
    flag: str | None
    hint: Any = dataclasses.field(repr=False, compare=False)
    parse: Callable[[str], Any] | None = dataclasses.field(default=None, repr=False, compare=False)
    repeatable: bool = dataclasses.field(default=False, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type_text,
            "default": self.default,
            "help": self.help,
            "changes_answers": self.changes_answers,
            "flag": self.flag,
        }


def option_specs(options_class: type) -> list[OptionSpec]:
    """The options a dataclass declares, in field order (a field without `backend_option` metadata is listed
    with empty help: a plugin may declare plain fields)."""
    if not dataclasses.is_dataclass(options_class):
        raise TypeError(f"{options_class!r} is not a dataclass: a backend's Options must be one")
    hints = typing.get_type_hints(options_class)
    specs = []
    for item in dataclasses.fields(options_class):
        if item.default is not dataclasses.MISSING:
            default = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        else:
            raise TypeError(f"{options_class.__name__}.{item.name} has no default: every backend option needs one")
        meta = item.metadata
        specs.append(
            OptionSpec(
                name=item.name,
                type_text=_type_text(hints[item.name]),
                default=default,
                help=meta.get("backend_help", ""),
                changes_answers=bool(meta.get("changes_answers", False)),
                flag=meta.get("flag"),
                hint=hints[item.name],
                parse=meta.get("parse"),
                repeatable=bool(meta.get("repeatable", False)),
            )
        )
    return specs


@dataclass(frozen=True)
class RunFlag:
    """One `mis-bench run` flag, generated from the backend options that name it (`backend_option(flag=...)`):
    `specs` is backend -> the option it fills (`--dtype` fills the transformers and the vllm backends' `dtype`).
    Its value on the command line is the option's text, read by the backend asked for (`options_given`)."""

    flag: str
    specs: Mapping[str, OptionSpec]

    @property
    def dest(self) -> str:
        """The parsed attribute: the flag's name (`--backend-modalities` -> `backend_modalities`)."""
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def switch(self) -> bool:
        """A flag without a value (`--strict-model`): every option it fills is a bool that defaults to False."""
        return all(spec.hint is bool and spec.default is False for spec in self.specs.values())

    @property
    def repeatable(self) -> bool:
        return any(spec.repeatable for spec in self.specs.values())

    def check(self, text: str) -> Any:
        """argparse's type (a value refused while parsing, naming the flag): the option's value when one backend has
        the option; with several (`--dtype`), `text` as given once one of them reads it, read again by the backend
        asked for (`options_given`)."""
        if len(self.specs) == 1:
            (spec,) = self.specs.values()
            return read_value(spec, text)
        errors = []
        for spec in self.specs.values():
            try:
                read_value(spec, text)
                return text
            except argparse.ArgumentTypeError as err:
                errors.append(str(err))
        raise argparse.ArgumentTypeError(errors[0])


def run_flags(options_classes: Mapping[str, type]) -> list[RunFlag]:
    """The flags the options of backends `options_classes` (name -> `Options`) name, in declaration order."""
    by_flag: dict[str, dict[str, OptionSpec]] = {}
    for backend, options_class in options_classes.items():
        for spec in option_specs(options_class):
            if spec.flag:
                by_flag.setdefault(spec.flag, {})[backend] = spec
    return [RunFlag(flag, specs) for flag, specs in by_flag.items()]


def options_given(backend: str, options_class: type, flags: Mapping[str, Any], pairs: Sequence[str]) -> dict[str, Any]:
    """The one path from a command line to a backend's options: the generated flags the user gave (`flags`: flag ->
    its value as `RunFlag.check` read it, a list when repeated, True for a switch) and `-M KEY=VALUE` (`pairs`),
    each read by the option's reader, merged by name. A flag the backend has no option for, a value it does not
    take, or one option given two values (a flag and `-M`) is one usage line."""
    declared = option_specs(options_class)
    specs = {spec.flag: spec for spec in declared if spec.flag}
    values: dict[str, Any] = {}
    for flag, given in flags.items():
        spec = specs.get(flag)
        if spec is None:
            raise UsageError(
                f"{flag} is not an option of the {backend} backend",
                where=flag,
                hint=f"drop it; `mis-bench backends {backend}` lists the options it takes (-M KEY=VALUE)",
            )
        texts = given if isinstance(given, list) else [given]
        if not all(isinstance(text, str) for text in texts):  # read by this option's reader while parsing
            values[spec.name] = texts[-1]
            continue
        text = ",".join(texts) if spec.repeatable else texts[-1]  # a repeated flag: the last, as argparse's
        try:
            values[spec.name] = read_value(spec, text)
        except argparse.ArgumentTypeError as err:
            raise UsageError(
                f"bad value for the {backend} backend's option {spec.name} ({spec.type_text}): {err}",
                where=f"{flag} {text}",
                hint=keys_hint(backend, declared),
            ) from None
    for name, value in typed_options(options_class, pairs, backend=backend).items():
        if values.get(name, value) != value:
            flag = next(spec.flag for spec in specs.values() if spec.name == name)
            raise UsageError(
                f"the {backend} backend's option {name} is given twice, {values[name]!r} and {value!r}",
                where=f"{flag} and -M {name}=...",
                hint="give it once",
            )
        values[name] = value
    return values


def _type_text(hint: Any) -> str:
    """How a type reads in a listing: `int`, `auto|float32`, `int or none`, `comma list of str`."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Literal:
        return "|".join(str(a) for a in args)
    if _is_optional(hint):
        (inner,) = [a for a in args if a is not type(None)]
        return f"{_type_text(inner)} or none"
    if typing.get_origin(hint) is tuple:
        return f"comma list of {_type_text(args[0])}"
    if hint is dict or typing.get_origin(hint) is dict:
        return "JSON object"
    return getattr(hint, "__name__", str(hint))


def _is_optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def read_value(spec: OptionSpec, text: str) -> Any:
    """The value of `text` for the option (argparse.ArgumentTypeError, saying why, when it is not one)."""
    if spec.parse is not None:
        if _is_optional(spec.hint) and text.strip().lower() in _NONE:
            return None
        return spec.parse(text)
    return _read(spec.hint, text)


def _read(hint: Any, text: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_optional(hint):
        if text.strip().lower() in _NONE:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _read(inner, text)
    if origin is typing.Literal:
        for choice in args:
            if str(choice) == text:
                return choice
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(str(a) for a in args)}")
    if hint is bool:
        if text.strip().lower() in _TRUE + _FALSE:
            return text.strip().lower() in _TRUE
        raise argparse.ArgumentTypeError(f"{text!r} is not true or false")
    if hint in (int, float):
        try:
            return hint(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if hint is int else 'a number'}") from None
    if origin is tuple:
        items = [item.strip() for item in text.split(",") if item.strip()]
        return tuple(_read(args[0], item) for item in items)
    if hint is dict or origin is dict:
        return json_object(text)
    if hint is str:
        return text
    raise argparse.ArgumentTypeError(f"options of type {hint!r} cannot be given on the command line")


def _not_finite(token: str) -> float:
    raise ValueError(f"{token} is not a JSON number")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"{token} overflows to {value}")
    return value


def json_object(text: str) -> dict:
    """A JSON object option's value, read strictly: NaN, Infinity and numbers that overflow are refused (a request
    body carrying them is not JSON, and would fail only after the requests were paid for)."""
    try:
        value = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
    except ValueError as err:
        reason = str(err) if "JSON number" in str(err) or "overflows" in str(err) else "not valid JSON"
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object ({reason})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object")
    return value


def passthrough_fields(controlled: frozenset[str]) -> Callable[[str], dict]:
    """The reader of a passthrough option (fields added to every request): a strict JSON object that sets none of
    the `controlled` fields (those the toolkit sets and records: the messages, the model, the decoding)."""

    def read(text: str) -> dict:
        value = json_object(text)
        check_passthrough(value, controlled)
        return value

    return read


def check_passthrough(body: Mapping[str, Any], controlled: frozenset[str]) -> None:
    """Refuse passthrough fields that would change what the run records it sent (argparse.ArgumentTypeError naming
    the key), and values that are not strict JSON (NaN, Infinity)."""
    taken = sorted(str(key) for key in body if str(key) in controlled)
    if taken:
        raise argparse.ArgumentTypeError(
            f"it sets {', '.join(taken)}, which mis-bench sets and records itself (use the run's own flags: --model, "
            "--temperature, --top-p, --max-new-tokens, --seed, --samples, --readout)"
        )
    try:
        json.dumps(body, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"it is not a strict JSON object ({err})") from None


def keys_hint(backend: str, specs: Sequence[OptionSpec]) -> str:
    keys = ", ".join(spec.name for spec in specs) or "none"
    return f"valid keys of the {backend} backend: {keys} (`mis-bench backends {backend}` lists them)"


def _key(text: str) -> str:
    return text.strip().replace("-", "_")


def typed_options(options_class: type, pairs: Sequence[str], *, backend: str) -> dict[str, Any]:
    """`KEY=VALUE` texts (`mis-bench run -M`) as name -> typed value, checked against the backend's dataclass;
    a text without `=`, a key it does not declare, or a value that is not of its type is one usage line listing
    the valid keys. A key given twice keeps the last value (as a repeated flag does)."""
    specs = {spec.name: spec for spec in option_specs(options_class)}
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"expected KEY=VALUE, got {pair!r}", where=WHERE, hint=keys_hint(backend, list(specs.values()))
            )
        spec = specs.get(_key(key))
        if spec is None:
            raise UsageError(
                f"the {backend} backend has no option {key.strip()!r}",
                where=f"-M {pair}",
                hint=keys_hint(backend, list(specs.values())),
            )
        try:
            values[spec.name] = read_value(spec, text)
        except argparse.ArgumentTypeError as err:
            raise UsageError(
                f"bad value for the {backend} backend's option {spec.name} ({spec.type_text}): {err}",
                where=f"-M {pair}",
                hint=keys_hint(backend, list(specs.values())),
            ) from None
    return values


def make_options(options_class: type, values: Mapping[str, Any], *, backend: str):
    """The backend's options: its defaults, then `values` (a text for a non-text option is read as `-M` reads
    it, so the Python API may pass `{"dtype": "float16", "concurrency": "4"}`); an unknown name is one usage line."""
    specs = {spec.name: spec for spec in option_specs(options_class)}
    given = {}
    for name, value in values.items():
        spec = specs.get(_key(name))
        if spec is None:
            raise UsageError(
                f"the {backend} backend has no option {name!r}",
                where=WHERE,
                hint=keys_hint(backend, list(specs.values())),
            )
        if isinstance(value, str) and spec.hint is not str:
            (value,) = typed_options(options_class, [f"{spec.name}={value}"], backend=backend).values()
        given[spec.name] = value
    return options_class(**given)


def answer_options(options: Any) -> dict[str, Any]:
    """The options that change answers and are set away from their defaults, by name (empty: the run's cache keys
    and results are those of a run that sets none, so caches written before backends had options stay valid)."""
    if options is None or not dataclasses.is_dataclass(options):
        return {}
    return {
        spec.name: _plain(getattr(options, spec.name))
        for spec in option_specs(type(options))
        if spec.changes_answers and not _is_default(getattr(options, spec.name), spec.default)
    }


def _is_default(value: Any, default: Any) -> bool:
    """The default, or an empty value (`{}`, `[]`) where the default is none: `-M extra_body={}` sends nothing more."""
    return value == default or (default is None and value in ({}, [], (), ""))


def _plain(value: Any) -> Any:
    """A value as JSON holds it (a tuple as a list), so a key computed now equals one read back from a file."""
    return list(value) if isinstance(value, tuple) else value
