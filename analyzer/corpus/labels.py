"""What a labeled case's case.yaml says about how its verdict is scored, shared by `postmortem
eval`, the training's cross-validation, the corpus tests and the blind-set scorer
(corpora/heldout.py, which imports only this module of the analyzer)."""

from __future__ import annotations

from typing import Any


def has_failure_line(label: dict[str, Any]) -> bool:
    """A case's `failure_line`: false where no kept line says that anything failed (an excerpt of a
    failed job's informational output); such a case cannot be decidable either."""
    return label.get("failure_line", True) is not False


def is_decidable(label: dict[str, Any]) -> bool:
    """A case's `decidable`: false where its logs alone cannot name the cause."""
    return label.get("decidable", True) is not False and has_failure_line(label)


def accepted(expected: str, predicted: str | None, decidable: bool, failure_line: bool) -> bool:
    """Whether `predicted` is a right verdict for a case labeled `expected`: its category; where the
    logs cannot decide, also `unknown`; where no kept line says anything failed, also `none` ("No
    failure found", what the analysis must say without failure evidence)."""
    if predicted == expected:
        return True
    return (not decidable and predicted == "unknown") or (not failure_line and predicted == "none")
