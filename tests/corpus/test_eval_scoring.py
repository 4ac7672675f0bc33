"""`postmortem eval` scores a case the way the blind-set scorer does: where the logs cannot name the
cause (`decidable: false`), `unknown` is the right answer; where no kept line says anything failed
(`failure_line: false`), `none` is too; anywhere else they are misses."""

from __future__ import annotations

from analyzer.corpus.evaluate import CaseResult, EvalResult
from analyzer.corpus.labels import has_failure_line, is_decidable


def _result(case: str, expected: str, predicted: str, decidable: bool = True, failure_line: bool = True) -> CaseResult:
    return CaseResult(case, expected, predicted, 0.0, None, None, [], [], "heldout", decidable, failure_line)


def test_unknown_counts_only_where_the_logs_cannot_decide() -> None:
    result = EvalResult(
        [
            _result("a", "p2p", "unknown", decidable=False),
            _result("b", "p2p", "unknown"),
            _result("c", "p2p", "none", decidable=False),
            _result("d", "p2p", "p2p"),
        ]
    )
    assert [r.right for r in result.results] == [True, False, False, True]
    assert result.accuracy() == 0.5
    d = result.to_dict()
    assert (d["undecidable"], d["undecidable_unknown"]) == (2, 1)
    assert [m["case"] for m in d["misses"]] == ["b", "c"]
    # the miss shows what the tool said, not the scored stand-in
    assert d["misses"][1]["predicted"] == "none"
    # the undecidable `unknown` is counted as the expected category, so p2p's recall is 2/4
    assert d["per_category"]["p2p"]["recall"] == 0.5
    assert "unknown" in d["per_category"] and d["per_category"]["unknown"]["support"] == 0
    assert d["confusion"]["p2p"] == {"p2p": 2, "unknown": 1, "none": 1}


def test_decidable_figures_leave_out_the_cases_the_logs_cannot_decide() -> None:
    result = EvalResult(
        [
            _result("a", "p2p", "none", decidable=False),
            _result("b", "shm", "none", decidable=False),
            _result("c", "p2p", "p2p"),
            _result("d", "shm", "p2p"),
            _result("e", "none", "none"),
        ]
    )
    d = result.to_dict()
    assert d["accuracy"] == 0.4
    # without a and b: c and e right, d wrong; p2p f1 2/3, shm 0, none 1
    assert d["decidable_accuracy"] == round(2 / 3, 4)
    assert d["decidable_macro_f1"] == round((round(2 / 3, 3) + 0.0 + 1.0) / 3, 4)
    assert d["macro_f1"] < d["decidable_macro_f1"]


def test_none_counts_only_where_no_kept_line_says_anything_failed() -> None:
    result = EvalResult(
        [
            _result("a", "p2p", "none", decidable=False, failure_line=False),
            _result("b", "p2p", "unknown", decidable=False, failure_line=False),
            _result("c", "p2p", "hang", decidable=False, failure_line=False),
            _result("d", "p2p", "none", decidable=False),
            _result("e", "none", "none"),
        ]
    )
    assert [r.right for r in result.results] == [True, True, False, False, True]
    d = result.to_dict()
    assert (d["no_failure_line"], d["no_failure_line_none"]) == (3, 1)
    # the case with no failure line answered `none` counts for p2p, not for none
    assert d["per_category"]["none"]["precision"] == 0.5
    assert d["per_category"]["p2p"]["recall"] == 0.5


def test_a_case_without_a_failure_line_is_never_decidable() -> None:
    label = {"category": "p2p", "failure_line": False}
    assert not has_failure_line(label) and not is_decidable(label)
    assert is_decidable({"category": "p2p"}) and has_failure_line({"category": "p2p"})
