"""The catalogue of secrets redacted from every report: token formats that are recognisable on
their own, credentials in URLs and command lines, and values that follow a secret-like name in
shell, Python-dict, JSON, YAML and connection-string forms.

Each rule says what to keep (a name, a scheme, a user) and what to hide; the hidden part becomes
`[REDACTED]`. Rules run in order over the whole text of a line before it is cut anywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

MASK = "[REDACTED]"


@dataclass(frozen=True)
class Rule:
    name: str
    regex: re.Pattern[str]
    # the named group "secret" is replaced; everything else in the match is kept
    accept: Callable[[str], bool] | None = None


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


# a value made of lowercase words (and small numbers) joined by separators is a name someone
# wrote, not something generated: `store_based_barrier_key:2`, `default_pg`, `model.layers.0`
_WORDS = re.compile(r"[a-z]{2,}(?:[_:./-](?:[a-z]{2,}|\d{1,3}))+")


def high_entropy(value: str) -> bool:
    """Looks like a generated secret: long, several character classes, little repetition, not a
    name made of words."""
    v = value.strip("'\"")
    if len(v) < 16 or v.startswith(MASK) or _WORDS.fullmatch(v):
        return False
    classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    return classes >= 2 and _entropy(v) >= 3.3


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# a name that says its value is a secret: the last word of the name decides
_SECRET_WORD = (
    r"(?:token|secret|password|passwd|passphrase|credentials?|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|account[_-]?key|AccountKey|SharedAccessKey|[_.-]key|auth|sig)"
)
_NAME = r"[A-Za-z0-9_.-]*?" + _SECRET_WORD + r"(?![A-Za-z0-9])"
# a looser name: any key-like word; its value is hidden only when it looks generated
_LOOSE_NAME = (
    r"[A-Za-z0-9_.-]*(?:key|token|secret|pass|auth|cred|sig|session|cookie)[A-Za-z0-9_.-]*(?<!Error)(?<!Exception)(?<!Warning)"
)
_VALUE_END = r"""[^\s'"`,;}\])&]"""

RULES: tuple[Rule, ...] = (
    Rule(
        "pem_block",
        _rx(r"(?P<keep>-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|KEY BLOCK)[A-Z0-9 ]*-----)(?P<secret>.*?)(?=-----END |$)", re.S),
    ),
    Rule("url_credentials", _rx(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@'\"]*:(?P<secret>[^\s/@'\"]+)@")),
    Rule("url_token_user", _rx(r"(?i)\b[a-z][a-z0-9+.-]*://(?P<secret>[A-Za-z0-9_\-.~%]{16,})@"), high_entropy),
    Rule(
        "url_query_secret",
        _rx(
            r"(?i)[?&;](?:sig|signature|token|access_token|api[_-]?key|key|secret|password|X-Amz-Signature|X-Amz-Credential|X-Goog-Signature)=(?P<secret>[^&\s'\"#]+)"
        ),
    ),
    Rule("slack_webhook", _rx(r"https://hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9/_-]+)")),
    Rule("private_key_header_b64", _rx(r"(?P<secret>\bMII[A-Za-z0-9+/]{60,}={0,2})")),
    Rule(
        "cli_option",
        _rx(
            r"(?i)(?<![\w-])--?[A-Za-z0-9_-]*(?:password|passwd|passphrase|token|secret|api[_-]?key|access[_-]?key|auth[_-]?key|credentials?)"
            r"(?:=|\s+)(?:(?P<q>['\"])(?P<secret>[^'\"]*)(?P=q)|(?P<secret2>[^\s'\"]+))"
        ),
    ),
    Rule("wandb_login", _rx(r"(?i)\bwandb\s+login\s+(?:--?\S+\s+)*(?P<secret>[A-Za-z0-9_-]{32,})")),
    Rule("authorization_header", _rx(r"(?i)\b(?:bearer|basic|token)\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})")),
    # NAME=value, NAME: value, 'NAME': 'value', "NAME": "value", export NAME="value", NAME=value; (connection strings)
    Rule(
        "secret_assignment",
        _rx(
            r"(?i)(?P<n>['\"]?)\b"
            + _NAME
            + r"(?P=n)\s*(?:=|:|=>|:=)\s*(?:(?P<q>['\"`])(?P<secret>[^'\"`\n]+)(?P=q)|(?P<secret2>"
            + _VALUE_END
            + r"+))"
        ),
        # a one- or two-digit number is a counter or an index (`store_based_barrier_key:2`), never a secret
        lambda v: not re.fullmatch(r"\d{1,2}", v),
    ),
    Rule(
        "high_entropy_assignment",
        _rx(
            r"(?i)(?P<n>['\"]?)\b"
            + _LOOSE_NAME
            + r"(?P=n)\s*(?:=|:)\s*(?:(?P<q>['\"])(?P<secret>[^'\"\n]+)(?P=q)|(?P<secret2>"
            + _VALUE_END
            + r"+))"
        ),
        high_entropy,
    ),
    # token formats recognisable on their own
    Rule("huggingface", _rx(r"\b(?P<secret>hf_[A-Za-z0-9]{20,})")),
    Rule("openai", _rx(r"\b(?P<secret>sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})")),
    Rule("stripe", _rx(r"\b(?P<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})")),
    Rule(
        "aws_access_key_id", _rx(r"\b(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[0-9A-Z]{16})\b")
    ),
    Rule("github_classic", _rx(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,})")),
    Rule("github_fine_grained", _rx(r"\b(?P<secret>github_pat_[A-Za-z0-9_]{20,})")),
    Rule("gitlab", _rx(r"\b(?P<secret>gl(?:pat|dt|ptt|rt|cbt|oas|soat|ffct|imt|agent|ft)-[A-Za-z0-9_-]{20,})")),
    Rule("slack", _rx(r"\b(?P<secret>xox[abposer]-[A-Za-z0-9-]{10,})")),
    Rule("google_api_key", _rx(r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})")),
    Rule("google_oauth", _rx(r"\b(?P<secret>ya29\.[0-9A-Za-z_-]{20,})")),
    Rule("npm", _rx(r"\b(?P<secret>npm_[A-Za-z0-9]{36})\b")),
    Rule("pypi", _rx(r"\b(?P<secret>pypi-AgE[A-Za-z0-9_-]{50,})")),
    Rule("jwt", _rx(r"\b(?P<secret>eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)")),
)
