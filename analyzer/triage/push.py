"""`postmortem ticket push`: one tracker issue per fingerprint through the tracker's REST API
(GitHub, GitLab). An issue that already carries the fingerprint's marker gets a comment instead
of a duplicate. Tokens come from the environment; nothing else is sent anywhere."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LABEL = "postmortem"
MARKER = re.compile(r"<!-- postmortem-fingerprint: ([0-9a-f]+) -->")
TIMEOUT_S = 30.0
MAX_PAGES = 50


class PushError(Exception):
    """The tracker refused a request or could not be reached."""


@dataclass(frozen=True)
class Ticket:
    fingerprint: str
    title: str
    body: str
    path: Path


@dataclass(frozen=True)
class Action:
    fingerprint: str
    action: str  # created | commented
    issue: int
    url: str


def read_tickets(directory: Path) -> list[Ticket]:
    out = []
    for path in sorted(directory.glob("*.md")):
        body = path.read_text(encoding="utf-8")
        m = MARKER.search(body)
        if not m:
            continue
        first = body.splitlines()[0] if body else ""
        title = first.removeprefix("# ").strip() or f"postmortem {m.group(1)}"
        out.append(Ticket(m.group(1), title[:250], body, path))
    return out


class _Api:
    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.base = base.rstrip("/")
        self.headers = {"User-Agent": "postmortem", "Accept": "application/json", **headers}

    def call(self, method: str, path: str, payload: dict[str, Any] | None = None, query: dict[str, Any] | None = None) -> Any:
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(payload).encode() if payload is not None else None
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise PushError(f"{method} {self.base}{path}: HTTP {exc.code} {detail}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise PushError(f"{method} {self.base}{path}: {exc}") from exc
        return json.loads(raw) if raw else None


def _existing(api: _Api, path: str, query: dict[str, Any], body_key: str, number_key: str) -> dict[str, tuple[int, str]]:
    """fingerprint -> (issue number, web url) of the tracker's issues that carry a marker."""
    found: dict[str, tuple[int, str]] = {}
    for page in range(1, MAX_PAGES + 1):
        items = api.call("GET", path, query={**query, "per_page": 100, "page": page})
        if not items:
            break
        for item in items:
            if "pull_request" in item:
                continue
            for fp in MARKER.findall(item.get(body_key) or ""):
                found.setdefault(fp, (int(item[number_key]), item.get("html_url") or item.get("web_url") or ""))
        if len(items) < 100:
            break
    return found


def _again(t: Ticket) -> str:
    return "postmortem saw this failure again.\n\n" + t.body


@dataclass(frozen=True, slots=True)
class _Tracker:
    """How one tracker's REST API names what `push` uses."""

    body: str  # the issue text
    number: str  # the issue's number within its project
    url: str  # the issue's web address
    comments: str  # the sub-path that comments on an issue
    labels: Any  # the labels of a new issue, as the API takes them
    listing: dict[str, Any]  # the query that lists the issues carrying the label


_GITHUB = _Tracker("body", "number", "html_url", "comments", [LABEL], {"state": "all", "labels": LABEL})
_GITLAB = _Tracker("description", "iid", "web_url", "notes", LABEL, {"labels": LABEL, "scope": "all"})


def _sync(api: _Api, base: str, tickets: list[Ticket], tr: _Tracker) -> list[Action]:
    """One issue per fingerprint: created the first time, commented on after."""
    known = _existing(api, base, tr.listing, tr.body, tr.number)
    actions = []
    for t in tickets:
        if t.fingerprint in known:
            number, url = known[t.fingerprint]
            api.call("POST", f"{base}/{number}/{tr.comments}", {"body": _again(t)})
            actions.append(Action(t.fingerprint, "commented", number, url))
        else:
            made = api.call("POST", base, {"title": t.title, tr.body: t.body, "labels": tr.labels})
            known[t.fingerprint] = (int(made[tr.number]), made.get(tr.url, ""))
            actions.append(Action(t.fingerprint, "created", int(made[tr.number]), made.get(tr.url, "")))
    return actions


def push_github(tickets: list[Ticket], repo: str, token: str, api_url: str = "https://api.github.com") -> list[Action]:
    if repo.count("/") != 1:
        raise PushError(f"--github {repo!r}: give OWNER/REPO")
    api = _Api(
        api_url,
        {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
    )
    return _sync(api, f"/repos/{repo}/issues", tickets, _GITHUB)


def push_gitlab(tickets: list[Ticket], project: str, token: str, api_url: str = "https://gitlab.com/api/v4") -> list[Action]:
    api = _Api(api_url, {"PRIVATE-TOKEN": token})
    return _sync(api, f"/projects/{urllib.parse.quote(project, safe='')}/issues", tickets, _GITLAB)
