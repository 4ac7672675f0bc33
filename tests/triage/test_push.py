"""`ticket push` against a local stand-in of the trackers' REST APIs (loopback), which answers
the few endpoints used and records every request: created once, commented on after."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

pytest.importorskip("pandas", reason="triage needs the triage extra")

from click.testing import CliRunner  # noqa: E402

from analyzer.cli import main  # noqa: E402

from ..conftest import REPO  # noqa: E402


class Tracker(ThreadingHTTPServer):
    def __init__(self, kind: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.kind = kind
        self.requests: list[dict[str, Any]] = []
        self.issues: list[dict[str, Any]] = []


class Handler(BaseHTTPRequestHandler):
    server: Tracker

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, payload: Any) -> str:
        url = urlparse(self.path)
        self.server.requests.append(
            {
                "method": self.command,
                "path": url.path,
                "query": parse_qs(url.query),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "json": payload,
            }
        )
        return url.path

    def do_GET(self) -> None:
        self._record(None)
        page = int(parse_qs(urlparse(self.path).query).get("page", ["1"])[0])
        self._answer(200, self.server.issues if page == 1 else [])

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        path = self._record(payload)
        gh = self.server.kind == "github"
        if path.endswith("/comments") or path.endswith("/notes"):
            self._answer(201, {"id": len(self.server.requests)})
            return
        number = len(self.server.issues) + 1
        issue = {
            "number" if gh else "iid": number,
            "title": payload["title"],
            "body" if gh else "description": payload.get("body") or payload.get("description"),
        }
        issue["html_url" if gh else "web_url"] = f"http://tracker/{number}"
        self.server.issues.append(issue)
        self._answer(201, issue)


@pytest.fixture
def tracker(request: pytest.FixtureRequest) -> Iterator[Tracker]:
    server = Tracker(request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def tickets(tmp_path: Path) -> Path:
    runs = []
    for case in ("lab-shm-001", "lab-shm-002", "lab-oom-cascade-001"):
        dest = tmp_path / "runs" / case
        shutil.copytree(REPO / "corpora" / "lab" / case, dest, ignore=shutil.ignore_patterns("case.yaml"))
        runs.append(str(dest))
    out = tmp_path / "tickets"
    result = CliRunner().invoke(main, ["triage", *runs, "--no-db", "--jobs", "1", "--tickets", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    failures = [g for g in data["groups"] if g["category"] != "none"]
    assert sorted(p.stem for p in out.glob("*.md")) == sorted(g["fingerprint"] for g in failures)  # one ticket per group
    assert sorted(p.stem for p in out.glob("*.html")) == sorted(g["fingerprint"] for g in failures)
    for g in failures:
        md = (out / f"{g['fingerprint']}.md").read_text()
        assert g["title"] in md and f"`{g['fingerprint']}`" in md and "## Remediation" in md
    return out


@pytest.mark.parametrize("tracker", ["github", "gitlab"], indirect=True)
def test_push_creates_once_then_comments(tracker: Tracker, tickets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = len(list(tickets.glob("*.md")))
    api = f"http://127.0.0.1:{tracker.server_address[1]}"
    if tracker.kind == "github":
        monkeypatch.setenv("GITHUB_TOKEN", "tok-123")
        args = ["--github", "acme/train", "--api-url", api]
    else:
        monkeypatch.setenv("GITLAB_TOKEN", "tok-123")
        args = ["--gitlab", "ml/train", "--api-url", api + "/api/v4"]
    first = CliRunner().invoke(main, ["ticket", "push", str(tickets), *args])
    assert first.exit_code == 0, first.output
    assert first.output.count("created") == n and "commented" not in first.output
    second = CliRunner().invoke(main, ["ticket", "push", str(tickets), *args])
    assert second.exit_code == 0, second.output
    assert second.output.count("commented") == n and "created" not in second.output
    assert len(tracker.issues) == n  # no duplicates
    posts = [r for r in tracker.requests if r["method"] == "POST"]
    if tracker.kind == "github":
        assert all(r["headers"]["authorization"] == "Bearer tok-123" for r in tracker.requests)
        assert sum(r["path"] == "/repos/acme/train/issues" for r in posts) == n
        assert sum(r["path"].endswith("/comments") for r in posts) == n
        assert all(r["json"]["labels"] == ["postmortem"] for r in posts if r["path"] == "/repos/acme/train/issues")
    else:
        assert all(r["headers"]["private-token"] == "tok-123" for r in tracker.requests)
        assert sum(r["path"] == "/api/v4/projects/ml%2Ftrain/issues" for r in posts) == n
        assert sum(r["path"].endswith("/notes") for r in posts) == n


def test_push_without_token_is_a_clear_message(tickets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("GITHUB_TOKEN", "GH_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    result = CliRunner().invoke(main, ["ticket", "push", str(tickets), "--github", "acme/train"])
    assert result.exit_code == 2 and "GITHUB_TOKEN" in result.output
