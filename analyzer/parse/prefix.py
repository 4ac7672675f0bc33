"""Line prefixes that launchers, loggers and libraries put before a message.

`split_prefix` peels them off one after another and says what they told: rank, host, pid,
device, the time text. Handled: `[rank3]:` (PyTorch), `[default3]:` (torchrun --tee /
log_line_prefix_template), `[1,3]<stderr>:` (Open MPI --tag-output), `3: ` (srun --label),
`node7: ` (pdsh / DeepSpeed multi-node runner), Ray's worker prefix `(ActorName pid=N, ip=A)`
(ray/_private/worker.py print_worker_logs), NCCL's `host:pid:tid [dev]`, and the common
clock formats (ISO, Python logging, glog, vLLM's logger, syslog, dmesg uptime and `dmesg -T`); colour codes that a
syslog daemon escaped (`#033[33m`) are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RANK = re.compile(r"\[(?:rank|RANK|Rank)\s?(\d+)\]:?\s?")
_TEE = re.compile(r"\[([A-Za-z_][\w-]*?)(\d+)\]:\s?")
_MPI = re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>:\s?")
_SRUN = re.compile(r"\s{0,4}(\d{1,5}): ")
_HOST = re.compile(r"([A-Za-z][\w.-]*\d[\w.-]*|\d{1,3}(?:\.\d{1,3}){3}): ")
_RAY = re.compile(r"\((?:[\w.:<>-]+ )?pid=(\d+)(?:, ip=([\w.:-]+))?\)\s")
_NCCL = re.compile(r"([\w.-]+):(\d+):(\d+) \[(\d+)\] (?=NCCL )")
# docker compose's `service_1  | ` (v1) or `service-1  | ` (v2): the container's name, padded
_COMPOSE = re.compile(r"([A-Za-z0-9][\w.-]*?[-_]\d+)\s+\| ?")
# colour codes as a syslog daemon escapes them (rsyslog writes ESC as `#033`): `#033[2m(raylet)#033[0m`
_SYSLOG_CODES = re.compile(r"#033\[[0-9;?]*[ -/]*[@-~]")
_TIMES = (
    # 2024-05-01 12:34:56,789 / 2024-05-01T12:34:56.123Z / [2024-05-01 12:34:56]
    re.compile(
        r"\[?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?"
        r"(?:\s*[-|]\s*|\s+|:\s*)"
    ),
    # glog: I0501 12:34:56.789012 12345 file.cc:123]
    re.compile(r"([IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+)\s+(?P<pid>\d+)\s+[\w./-]+:\d+\]\s?"),
    # c10 logging: [E626 06:24:44.925443925 ProcessGroupNCCL.cpp:616] or [E ProcessGroupNCCL.cpp:563]
    re.compile(r"\[(?:([IWEF]\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?)|[IWEF])\s*(?:[\w.]+:\d+)?\]\s?"),
    # vLLM's logger (vllm/logger.py, 0.2 to today: `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d]`,
    # before 0.6 without the brackets' `[`; datefmt `%m-%d %H:%M:%S`), whose formatter repeats the
    # prefix on every line of a multi-line record (a logged traceback): INFO 05-29 16:44:33 [core.py:58]
    re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) \[?[\w./-]+:\d+\] ?"),
    # dmesg -T: [Wed May  1 12:34:56 2024]
    re.compile(r"\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]\s?"),
    # dmesg raw: [ 1234.567890]
    re.compile(r"\[\s*(\d+\.\d+)\]\s?"),
    # syslog: May  1 12:34:56 host
    re.compile(r"([A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})\s+(?P<host>[\w.-]+)\s+"),
)
# words before `: ` that name no host: an exception or status, a GPU architecture, a file (the
# shared object in the dynamic loader's `lib_2.so: undefined symbol: ...`, a source file)
_NOT_HOSTS = re.compile(
    r"(?:Error|Exception|Warning|Exit|Signal|Failure)\w*$|^(?:sm|cuda)_?\d+$"
    r"|\.(?:so(?:\.\d+)*|pyd|pyx?|c|cc|cpp|cu|cuh|hpp|h|dll|exe|sh|log|txt|json|ya?ml)$"
)


@dataclass(frozen=True, slots=True)
class Prefix:
    message: str
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    time_text: str | None = None

    def rank_or(self, fallback: int | None) -> int | None:
        """The rank the prefixes give (PyTorch's, else torchrun's local one), else `fallback`."""
        if self.rank is not None:
            return self.rank
        return self.local_rank if self.local_rank is not None else fallback


def split_prefix(line: str) -> Prefix:
    """Peel the known prefixes off `line` (at most a few, in any order)."""
    rank = local_rank = pid = device = None
    host = time_text = None
    rest = line.rstrip("\r\n")
    if "#033[" in rest:
        rest = _SYSLOG_CODES.sub("", rest)
    for _ in range(6):
        m = _RANK.match(rest)
        if m:
            rank = int(m.group(1))
            rest = rest[m.end() :]
            continue
        m = _MPI.match(rest)
        if m:
            rank = int(m.group(1))
            rest = rest[m.end() :]
            continue
        m = _TEE.match(rest)
        if m and m.group(1).lower() not in ("rank",):
            local_rank = int(m.group(2))
            rest = rest[m.end() :]
            continue
        m = _RAY.match(rest)
        if m:
            # nested actors (`(LLMRayActor pid=1) (EngineCore_DP0 pid=2) ...`): the innermost printed it
            pid = int(m.group(1))
            host = host or m.group(2)
            rest = rest[m.end() :]
            continue
        m = _COMPOSE.match(rest)
        if m and host is None:
            host = m.group(1)
            rest = rest[m.end() :]
            continue
        m = _NCCL.match(rest)
        if m:
            host, pid, device = m.group(1), int(m.group(2)), int(m.group(4))
            rest = rest[m.end() :]
            break
        if time_text is None:
            matched = False
            for pattern in _TIMES:
                m = pattern.match(rest)
                if m:
                    time_text = m.group(1)
                    groups = m.groupdict()
                    if groups.get("pid"):
                        pid = int(groups["pid"])
                    if groups.get("host"):
                        host = groups["host"]
                    rest = rest[m.end() :]
                    matched = True
                    break
            if matched:
                continue
        m = _SRUN.match(rest)
        if m and rank is None:
            rank = int(m.group(1))
            rest = rest[m.end() :]
            continue
        m = _HOST.match(rest)
        if m and host is None and not _NOT_HOSTS.search(m.group(1)):
            host = m.group(1)
            rest = rest[m.end() :]
            continue
        break
    return Prefix(rest, rank, local_rank, host, pid, device, time_text)
