"""No secret seen in a log reaches any report format, wherever it sits in the line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.pipeline import Options, analyze
from analyzer.redact import redact_text
from analyzer.report import render

from ..conftest import REPO

# (kind, the text as a log would hold it, the secret part that must not survive)
SECRETS = [
    ("huggingface", "HF token hf_Qx7bN2mK9pL4rT8vW1yZ3aC5dE6fG0hJkQ", "hf_Qx7bN2mK9pL4rT8vW1yZ3aC5dE6fG0hJkQ"),
    ("wandb", "{'WANDB_API_KEY': '8f3c2a9e7b1d4f6a0c5e9b2d7f1a3c8e6b4d0f2a'}", "8f3c2a9e7b1d4f6a0c5e9b2d7f1a3c8e6b4d0f2a"),
    ("openai", "key sk-proj-Zk4Lm9Qp2Rs7Tu1Vw5Xy8Za3Bc6De0Fg", "sk-proj-Zk4Lm9Qp2Rs7Tu1Vw5Xy8Za3Bc6De0Fg"),
    ("aws_key_id", "id AKIAQ7ZX4W2NVM8KLP3R", "AKIAQ7ZX4W2NVM8KLP3R"),
    ("aws_secret", "aws_secret_access_key: Jx8vQ2mN5pR9tW3yB6cF0hK4lZ7sD1gA+eU/oXiM", "Jx8vQ2mN5pR9tW3yB6cF0hK4lZ7sD1gA+eU/oXiM"),
    ("github_classic", "push ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy", "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy"),
    (
        "github_fine_grained",
        "clone github_pat_11AXQ7ZB40kQm3Wn8Rt2_Yp5Lc9Hs1Dv6Fg0Jk4Mz7Nb2Qw8Er5Ty1Ui3Op6As9Df2Gh4Jk7Lz0",
        "github_pat_11AXQ7ZB40kQm3Wn8Rt2_Yp5Lc9Hs1Dv6Fg0Jk4Mz7Nb2Qw8Er5Ty1Ui3Op6As9Df2Gh4Jk7Lz0",
    ),
    ("gitlab", "glpat-Wq3Er7Ty2Ui9Op4As8Df", "glpat-Wq3Er7Ty2Ui9Op4As8Df"),
    ("slack", "xoxb-2847561093-9182736450-Ab3Cd7Ef1Gh5Ij9Kl2Mn6Op", "xoxb-2847561093-9182736450-Ab3Cd7Ef1Gh5Ij9Kl2Mn6Op"),
    ("google", "AIzaSyD8x3Kq9Lm2Np7Rs4Tv1Wx6Yz0Ab5Cd3Ef", "AIzaSyD8x3Kq9Lm2Np7Rs4Tv1Wx6Yz0Ab5Cd3Ef"),
    (
        "azure",
        "DefaultEndpointsProtocol=https;AccountName=ckpt;AccountKey=Zm9vYmFyYmF6cXV4UXdFclR5VWlPcA3kL9mN2pQ==;EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4UXdFclR5VWlPcA3kL9mN2pQ==",
    ),
    (
        "jwt",
        "Authorization eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI4Mjc0NjEiLCJuYW1lIjoianEifQ.Qm7xK2pL9vN4rT8wY1zA3cE6fH0jS5uD",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI4Mjc0NjEiLCJuYW1lIjoianEifQ.Qm7xK2pL9vN4rT8wY1zA3cE6fH0jS5uD",
    ),
    (
        "pem",
        "'-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDk3Xq9Lm2Np7Rs4Tv1Wx6Yz0\\n-----END PRIVATE KEY-----'",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDk3Xq9Lm2Np7Rs4Tv1Wx6Yz0",
    ),
    ("url_https", "fetch https://ci-bot:Pq8Zr3Wx7Lm2Kv5N@git.example.com/repo.git", "Pq8Zr3Wx7Lm2Kv5N"),
    ("url_postgres", "db postgres://trainer:Hn4Jq8Vb2Xc6Zm1K@db.example.com:5432/runs", "Hn4Jq8Vb2Xc6Zm1K"),
    ("password_option", "argv launch.py --password Tr4in1ngS3cr3tPw --epochs 3", "Tr4in1ngS3cr3tPw"),
    ("shell_token", "export MY_SERVICE_TOKEN=Vb7Nm3Qw9Er1Ty5Ui2", "Vb7Nm3Qw9Er1Ty5Ui2"),
    ("json_password", '{"DB_PASSWORD": "Lk5Jh9Gf3Ds7Aq2Wz"}', "Lk5Jh9Gf3Ds7Aq2Wz"),
    ("high_entropy", "session_cookie=Xq7Wn2Mz8Kp4Lr6Tj1Vb", "Xq7Wn2Mz8Kp4Lr6Tj1Vb"),
]

OOM = (
    "[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 141.25 MiB is free."
)


def _windows(secret: str, n: int = 8) -> set[str]:
    return {secret[i : i + n] for i in range(max(1, len(secret) - n + 1))}


@pytest.mark.parametrize(("kind", "text", "secret"), SECRETS, ids=[k for k, _, _ in SECRETS])
def test_catalogue_hides_each_kind(kind: str, text: str, secret: str) -> None:
    out = redact_text(f"RuntimeError: failed with {text} at step 3")
    assert not any(w in out for w in _windows(secret)), out
    assert "[REDACTED]" in out and out.startswith("RuntimeError: failed with ") and out.endswith(" at step 3")


@pytest.mark.parametrize(
    "text",
    [
        "KeyError: 'model.layers.0.weight'",
        "Timed out waiting for key default_pg/0//cuda//0 after 1800000 ms",
        "max_tokens: 512 sequence_length=4096",
        "PWD=/home/user/train commit 3f9a2c4e8b1d7f6a0c5e9b2d7f1a3c8e6b4d0f2a",
        "WorkNCCL(SeqNum=15734, OpType=ALLREDUCE, NumelIn=220084533, Timeout(ms)=600000)",
        "node0:15325:16199 [2] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "https://github.com/pytorch/pytorch/issues/1234",
        "tokenizer: loaded 32000 tokens",
        "Waiting in store based barrier to initialize process group for rank: 2, key: store_based_barrier_key:2 (world_size=8, worker_count=7, timeout=0:30:00)",
    ],
)
def test_ordinary_log_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_no_secret_reaches_any_format(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(REPO / "examples" / "oom-cascade", run)
    log = run / "train.log"
    lines = log.read_text().splitlines()
    all_secrets = " ; ".join(t for _, t, _ in SECRETS)
    # one failure line holding every kind, padded so that secrets straddle the cuts (300 in the
    # timeline, 500 in the evidence)
    for pad in (300 - len(OOM) - 10, 500 - len(OOM) - 10):
        straddle = OOM + " " + "x" * pad + " " + SECRETS[5][1] + " " + all_secrets
        lines.insert(0, straddle)
    log.write_text("\n".join(lines) + "\n")
    (run / "notes-hf_Qx7bN2mK9pL4rT8vW1yZ3aC5dE6fG0hJkQ.log").write_text(OOM + " " + all_secrets + "\n")
    report = analyze(run, Options())
    assert report.verdict.category.value == "oom_cascade"
    assert any(e.line in (1, 2) and e.text.startswith("[rank2]: torch.cuda.OutOfMemoryError") for e in report.evidence)
    for fmt in ("text", "json", "markdown", "html"):
        out = render(report, fmt)
        assert "[REDACTED]" in out, fmt
        for kind, _, secret in SECRETS:
            leaked = sorted(w for w in _windows(secret) if w in out)
            assert not leaked, f"{kind} leaks in {fmt}: {leaked[:3]}"


def test_no_redact_keeps_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(REPO / "examples" / "oom-cascade", run)
    log = run / "train.log"
    log.write_text(OOM + " " + SECRETS[0][1] + "\n" + log.read_text())
    report = analyze(run, Options(redact=False))
    assert SECRETS[0][2] in render(report, "json")
