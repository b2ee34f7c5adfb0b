"""Which model answered: the `model` field of each Chat Completions response, checked against `--model`.

An OpenAI-compatible server names the model that produced each answer. A replica serving another model (a
stale deployment, a wrong port) answers like the right one; only that name tells them apart. The backend keeps
it with every answer (`Completion.served_model`: the response cache, raw_responses.jsonl, results.json), the
harness warns when it is not the model asked for or when the answers name several models, and
`--strict-model` refuses such answers (failed rows, never cached as answers).

A served name is the model asked for when it is the same, the same with a revision (`transformers serve`
answers `org/model@main` for `org/model`), or the provider's dated alias of it (`gpt-4o` ->
`gpt-4o-2024-08-06`, `gpt-4` -> `gpt-4-0613`, `claude-3-5-sonnet` -> `claude-3-5-sonnet-20240620`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# What a provider appends to a model name to name one dated snapshot of it.
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")
FAILURE_OTHER_MODEL = "another model"


def same_model(asked: str, served: str | None) -> bool:
    """True when `served` names the model `asked` for (see the module doc); a server that names none passes."""
    if served is None or served == asked:
        return True
    name, _, revision = served.partition("@")
    if revision and name == asked:
        return True
    return served.startswith(asked) and _DATED.fullmatch(served[len(asked) :]) is not None


def served_model_warnings(asked: str, served: Mapping[str, int]) -> list[str]:
    """What is wrong with the served names of a run's answers (name -> answers), one line each; [] when nothing."""
    warnings = []
    if len(served) > 1:
        each = ", ".join(f"{name!r} ({count:,})" for name, count in sorted(served.items()))
        warnings.append(f"the answers name {len(served)} different models: {each}")
    for name, count in sorted(served.items()):
        if not same_model(asked, name):
            warnings.append(
                f"{count:,} answer(s) came from {name!r}, not from --model {asked!r} (nor a dated alias of it)"
            )
    return warnings


def other_model_error(asked: str, served: str) -> str:
    """The error of an answer `--strict-model` refused."""
    return f"{FAILURE_OTHER_MODEL}: the server answered as {served!r}, not --model {asked!r} (--strict-model)"
