"""Signature conditions (grammars/condition.lark) turned into a small expression tree."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from lark import Token, Transformer
from lark.exceptions import LarkError

from analyzer.parse._lark import load_parser


class Op(StrEnum):
    SEL = "sel"  # a named selection
    NOT = "not"
    AND = "and"
    OR = "or"
    ONE = "one"  # `1 of pattern*`
    ALL = "all"  # `all of pattern*`


@dataclass(frozen=True, slots=True)
class Cond:
    op: Op
    name: str = ""
    args: tuple[Cond, ...] = ()

    def evaluate(self, test: Callable[[str], bool], names: list[str]) -> bool:
        if self.op is Op.SEL:
            return test(self.name)
        if self.op is Op.NOT:
            return not self.args[0].evaluate(test, names)
        if self.op is Op.AND:
            return all(a.evaluate(test, names) for a in self.args)
        if self.op is Op.OR:
            return any(a.evaluate(test, names) for a in self.args)
        chosen = [n for n in names if self.name == "them" or fnmatch.fnmatchcase(n, self.name)]
        if self.op is Op.ONE:
            return any(test(n) for n in chosen)
        return bool(chosen) and all(test(n) for n in chosen)

    def positive_names(self, names: list[str], negated: bool = False) -> set[str]:
        """Selections that must match for the condition to hold (not under a `not`)."""
        if self.op is Op.SEL:
            return set() if negated else {self.name}
        if self.op is Op.NOT:
            return self.args[0].positive_names(names, not negated)
        if self.op in (Op.ONE, Op.ALL):
            if negated:
                return set()
            return {n for n in names if self.name == "them" or fnmatch.fnmatchcase(n, self.name)}
        out: set[str] = set()
        for a in self.args:
            out |= a.positive_names(names, negated)
        return out

    def referenced(self) -> set[str]:
        if self.op is Op.SEL:
            return {self.name}
        out: set[str] = set()
        for a in self.args:
            out |= a.referenced()
        return out


class _ToCond(Transformer[Token, Cond]):
    def selection(self, items: list[Token]) -> Cond:
        return Cond(Op.SEL, str(items[0]))

    def negation(self, items: list[object]) -> Cond:
        arg = items[-1]
        assert isinstance(arg, Cond)
        return Cond(Op.NOT, args=(arg,))

    def or_expr(self, items: list[object]) -> Cond:
        return Cond(Op.OR, args=tuple(i for i in items if isinstance(i, Cond)))

    def and_expr(self, items: list[object]) -> Cond:
        return Cond(Op.AND, args=tuple(i for i in items if isinstance(i, Cond)))

    def one_of(self, items: list[Token]) -> Cond:
        return Cond(Op.ONE, str(items[1]))

    def all_of(self, items: list[Token]) -> Cond:
        return Cond(Op.ALL, str(items[1]))


_NAME = re.compile(r"(?!(?:and|or|not|them)$)[A-Za-z_][A-Za-z0-9_]*")


class ConditionError(ValueError):
    pass


@cache
def parse_condition(text: str) -> Cond:
    if _NAME.fullmatch(text.strip()):
        return Cond(Op.SEL, text.strip())
    try:
        tree = load_parser("condition").parse(text)
    except LarkError as exc:
        raise ConditionError(f"condition {text!r} does not parse: {str(exc).splitlines()[0]}") from exc
    result = _ToCond().transform(tree)
    if isinstance(result, Token):  # a bare name
        return Cond(Op.SEL, str(result))
    return result
