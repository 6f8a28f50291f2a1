"""An Inspect sample's run-level fields: the log's header, the field mapping, the outcome from the scores.

The rules are in :mod:`agentab.formats.inspect_ai` (run-level fields,
outcomes); :func:`record_fields` puts a sample's record together around its
steps (:mod:`._inspect_sample`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap
from agentab.formats._base import Reject as _Reject
from agentab.formats._base import lookup as _path

#: Default run-level field mapping (see the module docstring).
DEFAULTS: dict[str, str] = {
    "run_id": "eval.eval_id:id:epoch",
    "task_id": "id",
    "seed": "epoch",
    "model": "eval.model",
    "harness": "eval.solver",
    "outcome": "scores[0]",
    "cost_usd": "model_usage.*.total_cost",
    "latency_s": "total_time",
}

#: Score values as Inspect's value_to_float reads them (CORRECT, INCORRECT, NOANSWER, PARTIAL).
_SCORE_TEXT: dict[str, bool | float] = {"C": True, "I": False, "N": False, "P": 0.5}
_SCORE_WORDS: dict[str, bool] = {"yes": True, "true": True, "no": False, "false": False}
_NTH_SCORE = re.compile(r"scores\[(\d+)\]")


class Header:
    """What every sample of one log shares: the log document and the defaults derived from it."""

    __slots__ = ("doc", "eval", "first_scorer", "harness", "key")

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc
        spec = doc.get("eval") or {}
        self.eval = spec
        self.key = next((spec[k] for k in ("eval_id", "task_id", "run_id")
                         if isinstance(spec.get(k), (str, int)) and spec.get(k) != ""), _MISSING)
        harness = spec.get("solver")
        if not isinstance(harness, str) or not harness:
            plan = doc.get("plan")
            steps = plan.get("steps") if isinstance(plan, dict) else None
            names = [s.get("solver") for s in steps or () if isinstance(s, dict)]
            harness = " > ".join(n for n in names if isinstance(n, str) and n) or None
        self.harness = harness
        results = doc.get("results")
        scores = results.get("scores") if isinstance(results, dict) else None
        first = scores[0] if isinstance(scores, list) and scores and isinstance(scores[0], dict) else {}
        self.first_scorer = first.get("name") if isinstance(first.get("name"), str) else None


class Absent(_Reject):
    """Raised by a field's lookup: the sample and the log do not hold this required run-level field."""


def record_fields(sample: Mapping[str, Any], header: Header, fields: FieldMap, steps: list[dict[str, Any]],
                  missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The record of a sample whose steps are ``steps``: its run-level fields and metadata; the required
    fields it lacks are left out and put in ``missing`` (:attr:`~agentab.formats._base.Item.missing`)."""
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    record: dict[str, Any] = {}
    scorer = raw = None
    for name, get in (("run_id", lambda: _ident(sample, header, fields, "run_id")),
                      ("task_id", lambda: _ident(sample, header, fields, "task_id")),
                      ("seed", lambda: _seed(sample, header, fields)),
                      ("outcome", lambda: _outcome(sample, header, fields))):
        try:
            record[name] = get()
        except Absent as lack:
            missing.setdefault(name, (lack.field, lack.reason))
    if "outcome" in record:
        scorer, raw, record["outcome"] = record["outcome"]
    record["steps"] = steps
    arm = _text_field(sample, header, fields, "arm")
    if arm is not None:
        record["arm"] = arm
    for name in ("cost_usd", "latency_s"):
        value = _number_field(sample, header, fields, name)
        if value is not None:
            record[name] = value

    metadata: dict[str, Any] = {}
    for name in ("model", "harness"):
        value = _text_field(sample, header, fields, name)
        if value is not None:
            metadata[name] = value
    spec = header.eval
    for key, value in (("task", spec.get("task")), ("eval_id", spec.get("eval_id")),
                       ("sample_id", sample_id), ("epoch", epoch), ("sample_uuid", sample.get("uuid"))):
        if value not in (None, ""):
            metadata[key] = value
    if scorer is not None:
        metadata["scorer"] = scorer
        metadata["score"] = _plain(raw)
    scores = _scores(sample, header)
    if scores:
        metadata["scores"] = {name: _plain(score.get("value") if isinstance(score, dict) else score)
                              for name, score in scores.items()}
    usage = sample.get("model_usage")
    if isinstance(usage, dict) and usage:
        metadata["model_usage"] = _plain(usage)
    error = sample.get("error")
    if isinstance(error, dict) and error.get("message"):
        metadata["error"] = error["message"]
    elif isinstance(error, str) and error:
        metadata["error"] = error
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        metadata["limit"] = limit["type"]
    record["metadata"] = metadata
    return record


def _plain(value: Any) -> Any:
    """``value`` with non-finite floats as None (the record stores metadata as JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _lookup(sample: Mapping[str, Any], header: Header, path: str) -> Any:
    """A dotted path in the sample, or (if the sample has no such first key) in the log; the defaults' fallbacks."""
    if "." not in path:
        return sample[path] if path in sample else header.doc.get(path)
    if path == "eval.eval_id":
        return None if header.key is _MISSING else header.key
    if path == "eval.solver":
        return header.harness
    first = path.split(".", 1)[0]
    value = _path(sample if first in sample else header.doc, path)
    return None if value is _MISSING else value


def _given(fields: FieldMap, name: str) -> tuple[str | None, bool]:
    """The path for ``name`` and whether it is the default (a default that is missing is not an error)."""
    path = fields.get(name)
    return path, path == DEFAULTS.get(name)


def _ident(sample: Mapping[str, Any], header: Header, fields: FieldMap, name: str) -> str | int:
    path, _ = _given(fields, name)
    parts = []
    for part in (path or DEFAULTS[name]).split(":"):
        value = _lookup(sample, header, part)
        if value is None or value == "":
            raise (Absent if value is None else _Reject)(part, f"{name}: no `{part}` in the sample or the log")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _Reject(part, f"{name}: `{part}` must be text or an integer, got {value!r}")
        parts.append(value)
    return parts[0] if len(parts) == 1 else ":".join(str(p) for p in parts)


def _seed(sample: Mapping[str, Any], header: Header, fields: FieldMap) -> int:
    path = fields.get("seed") or DEFAULTS["seed"]
    value = _lookup(sample, header, path)
    if value is None:
        raise Absent(path, f"seed: no `{path}` in the sample or the log")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Reject(path, f"seed: `{path}` must be an integer, got {value!r}")
    return value


def _text_field(sample: Mapping[str, Any], header: Header, fields: FieldMap, name: str) -> str | None:
    path, default = _given(fields, name)
    if path is None:
        return None
    value = _lookup(sample, header, path)
    if value is None or value == "":
        if default:
            return None
        raise _Reject(path, f"{name}: no `{path}` in the sample or the log")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise _Reject(path, f"{name}: `{path}` must be text, got {type(value).__name__}")


def _number_field(sample: Mapping[str, Any], header: Header, fields: FieldMap, name: str) -> float | None:
    path, default = _given(fields, name)
    if path is None:
        return None
    value = _lookup(sample, header, path)
    if isinstance(value, list):  # a `*` path: the sum, when every entry has the number
        if not value or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
            value = None
        else:
            value = sum(value)
        if value is None and not default:
            raise _Reject(path, f"{name}: `{path}` is not a number in every entry")
    if value is None:
        if default:
            return None
        raise _Reject(path, f"{name}: no `{path}` in the sample or the log")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Reject(path, f"{name}: `{path}` must be a number, got {value!r}")
    return float(value)


def _scores(sample: Mapping[str, Any], header: Header) -> dict[str, Any]:
    scores = sample.get("scores")
    if scores is None and sample.get("score") is not None:  # logs before multiple scorers
        scores = {header.first_scorer or "score": sample["score"]}
    if scores is None:
        return {}
    if not isinstance(scores, dict):
        raise _Reject("scores", f"expected an object {{scorer: score}}, got {type(scores).__name__}")
    return dict(scores)


def _outcome(sample: Mapping[str, Any], header: Header, fields: FieldMap) -> tuple[str, Any, bool | float]:
    """(scorer, its raw value, the outcome) of the chosen score."""
    spec = fields.get("outcome") or DEFAULTS["outcome"]
    scores = _scores(sample, header)
    nth = _NTH_SCORE.fullmatch(spec)
    if nth is not None or spec in scores or (spec.startswith("scores.") and spec[7:] in scores):
        if not scores:
            raise Absent("scores", f"no scores{_why_unscored(sample)}: a run needs an external verdict")
        if nth is not None:
            if int(nth.group(1)) >= len(scores):
                raise _Reject("scores", f"outcome {spec!r}: the sample has {len(scores)} scorer(s): {', '.join(scores)}")
            name = list(scores)[int(nth.group(1))]
        else:
            name = spec if spec in scores else spec[7:]
        score = scores[name]
        if not isinstance(score, dict) or "value" not in score:
            raise _Reject(f"scores.{name}.value", f"scorer {name!r}: the score has no `value`")
        return name, score["value"], _to_outcome(score["value"], name, f"scores.{name}.value")
    for cut in (i for i, ch in enumerate(spec) if ch == "."):  # "scorer.key" of a dict-valued score
        name, key = spec[:cut], spec[cut + 1:]
        score = scores.get(name)
        if isinstance(score, dict) and isinstance(score.get("value"), dict) and key in score["value"]:
            return spec, score["value"][key], _to_outcome(score["value"][key], spec, f"scores.{name}.value.{key}")
    value = _lookup(sample, header, spec)
    if value is not None:
        return spec, value, _to_outcome(value, spec, spec)
    if not scores:  # nothing to choose from: absent
        raise Absent("scores", f"outcome {spec!r}: no such scorer (nor a path in the sample or log); it has no "
                               f"scores{_why_unscored(sample)}")
    raise _Reject("scores", f"outcome {spec!r}: no such scorer (nor a path in the sample or log); its scorers: "
                            f"{', '.join(scores)}")


def _why_unscored(sample: Mapping[str, Any]) -> str:
    error = sample.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str) and message:
        first = message.strip().splitlines()[0] if message.strip() else message
        return f" (the sample ended with an error: {first[:200]})"
    return ""


def _to_outcome(value: Any, scorer: str, field: str) -> bool | float:
    """A score value as the record's outcome (the rules are in the module docstring)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            what = "NaN (unscored)" if math.isnan(value) else str(value)
            raise (Absent if math.isnan(value) else _Reject)(field, f"scorer {scorer!r}: the score is {what}, "
                                                                    "not a verdict")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in _SCORE_TEXT:
            return _SCORE_TEXT[text]
        if text.lower() in _SCORE_WORDS:
            return _SCORE_WORDS[text.lower()]
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
        raise _Reject(field, f"scorer {scorer!r}: score value {value!r} is not C/I/P/N, yes/no, true/false "
                             "or a number")
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:6]))
        raise _Reject(field, f"scorer {scorer!r}: the score is an object ({keys}); pick one entry with "
                             f"fields={{'outcome': '{scorer}.<key>'}}")
    raise _Reject(field, f"scorer {scorer!r}: score value {value!r} cannot be read as an outcome")
