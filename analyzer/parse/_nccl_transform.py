"""The Transformer of grammars/nccl.lark: one method per rule; line rules return (EventKind, fields)."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Transformer, v_args

from analyzer.model import EventKind

# ncclResult_t: the number NCCL's INFO `file.cc:123 -> N` lines propagate, and the name PyTorch prints
ERROR_CODES = {
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
}
_ERROR_TEXTS = (
    ("unhandled cuda error", 1),
    ("unhandled system error", 2),
    ("internal error", 3),
    ("invalid argument", 4),
    ("invalid usage", 5),
    ("remote process exited", 6),
    ("network error", 6),
)


def normalize_bus_id(bus_id: str) -> str | None:
    """NCCL's busId (`3b000`, `0000:3b:00.0`) -> `0000:3b:00` (domain:bus:device)."""
    text = bus_id.strip().lower()
    if ":" in text:
        parts = text.split(".", 1)[0].split(":")
        if len(parts) == 2:
            parts.insert(0, "0000")
        return ":".join(parts[-3:])
    try:
        value = int(text, 16)
    except ValueError:
        return None
    return f"{value >> 20:04x}:{(value >> 12) & 0xFF:02x}:{(value >> 4) & 0xFF:02x}"


def _version(text: str) -> dict[str, Any]:
    nccl, _, cuda = str(text).partition("+cuda")
    return {"nccl_version": nccl, **({"cuda_version": cuda} if cuda else {})}


@v_args(inline=True)
class NcclTransformer(Transformer[Token, Any]):
    """One method per rule; every line rule returns (EventKind, fields)."""

    def nccl_line(self, *parts: Any) -> tuple[EventKind, dict[str, Any]]:
        fields: dict[str, Any] = {}
        kind = EventKind.NCCL
        for part in parts:
            if isinstance(part, tuple):
                kind, body = part
                fields.update(body)
            elif part.type == "NCCL_HEAD":
                fields.update(head_fields(part))
            elif part.type == "SRC_LOC":
                fields["src_file"], fields["src_line"] = part.rsplit(":", 1)[0], int(part.rsplit(":", 1)[1])
            elif part.type == "NCCL_LEVEL":
                fields["nccl_level"] = part.split()[1]
        return kind, fields

    def bare_version(self, *parts: Token) -> tuple[EventKind, dict[str, Any]]:
        fields = head_fields(parts[0]) if parts[0].type == "NCCL_HEAD" else {}
        return EventKind.VERSION, fields | _version(parts[-1])

    def version(self, _kw: Token, version: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.VERSION, _version(version)

    def driver_version(self, _kw: Token, number: Token) -> tuple[EventKind, dict[str, Any]]:
        value = int(number)  # 12020 -> CUDA 12.2, the newest CUDA the driver supports
        return EventKind.VERSION, {"driver_version": f"{value // 1000}.{value % 1000 // 10}", "cuda_driver_version": value}

    def comm(self, *parts: Any) -> tuple[EventKind, dict[str, Any]]:
        pairs: dict[str, str] = dict(p for p in parts if isinstance(p, tuple))
        fields: dict[str, Any] = {"comm": next(str(p) for p in parts if isinstance(p, Token) and p.type == "HEXNUM")}
        for key, name in (
            ("rank", "rank"),
            ("nranks", "nranks"),
            ("nRanks", "nranks"),
            ("cudaDev", "cuda_dev"),
            ("nvmlDev", "nvml_dev"),
            ("nNodes", "nnodes"),
            ("localRank", "local_rank"),
        ):
            if key in pairs and pairs[key].lstrip("-").isdecimal():
                fields[name] = int(pairs[key])
        if "busId" in pairs:
            fields["bus_id"] = normalize_bus_id(pairs["busId"])
        if "commId" in pairs:
            fields["comm_id"] = pairs["commId"]
        if "Init" in pairs:
            fields["init"] = pairs["Init"]
        return EventKind.NCCL, fields

    def comm_pair(self, key: Token, value: Token) -> tuple[str, str]:
        return str(key), str(value)

    def comm_dash(self, _dash: Token) -> None:
        return None

    def channel(self, chan: Token, src: Token, dst: Token, *rest: Token) -> tuple[EventKind, dict[str, Any]]:
        direction = next((r.strip("[]") for r in rest if r.type == "DIRECTION"), None)
        return EventKind.NCCL, {
            "channel": str(chan),
            "peer_from": int(src.split("[")[0]),
            "peer_to": int(dst.split("[")[0]),
            "transport": str(rest[-1]),
            **({"direction": direction} if direction else {}),
        }

    def ring(self, chan: Token, *ranks: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NCCL, {"channel": str(chan), "ring": [int(r) for r in ranks]}

    def net_using(self, net: Token, *items: Token) -> tuple[EventKind, dict[str, Any]]:
        devices = [str(i) for i in items if i.type == "NET_ITEM" and not i.startswith("[RO")]
        return EventKind.NCCL, {"transport": str(net), "net_devices": devices}

    def ib_completion(self, net: Token, *rest: Token) -> tuple[EventKind, dict[str, Any]]:
        fields: dict[str, Any] = {"transport": str(net), "error_code": "ncclRemoteError"}
        for tok in rest:
            if tok.type == "IB_PEER":
                fields["ib_peer"] = str(tok)
            elif tok.type == "IB_STATUS":
                fields["ib_status"] = int(re.sub(r"\D", "", tok))
            elif tok.type == "TEXT":
                m = re.search(r"vendor err (\d+)", tok)
                if m:
                    fields["ib_vendor_err"] = int(m.group(1))
        return EventKind.NCCL, fields

    def using_network(self, net: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NCCL, {"network": str(net)}

    def propagation(self, loc: Token, code: Token, *tag: Token) -> tuple[EventKind, dict[str, Any]]:
        file, line = loc.rsplit(":", 1)
        number = int(code)
        return EventKind.NCCL, {"src_file": file, "src_line": int(line), "result": number, "error_code": ERROR_CODES.get(number)}

    def cuda_failure(self, *parts: Token) -> tuple[EventKind, dict[str, Any]]:
        fields: dict[str, Any] = {"cuda_error": parts[-1].strip("'"), "error_code": "ncclUnhandledCudaError"}
        if len(parts) > 1:
            fields["cuda_error_number"] = int(parts[0])
        return EventKind.NCCL, fields

    def shm_error(self, verb: Token, path: Token, size: Token, *rest: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NCCL, {
            "shm_path": str(path),
            "shm_size": int(size),
            "shm_op": str(verb),
            "error_code": "ncclSystemError",
        }

    def shm_extend(self, path: Token, size: Token, *rest: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NCCL, {"shm_path": str(path), "shm_size": int(size), "shm_op": "extend", "error_code": "ncclSystemError"}

    def text(self, _text: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NCCL, {}

    # PyTorch side
    def nccl_error_line(self, *parts: Token) -> tuple[EventKind, dict[str, Any]]:
        fields: dict[str, Any] = {}
        for tok in parts:
            if tok.type == "SRC_PATH":
                fields["src_file"] = str(tok)
            elif tok.type == "INT" and "src_file" in fields and "src_line" not in fields:
                fields["src_line"] = int(tok)
            elif tok.type == "ERR_TEXT" and "nccl_error" not in fields:
                fields["nccl_error"] = tok.strip()
                code = next((c for text, c in _ERROR_TEXTS if text in tok), None)
                if code:
                    fields["error_code"] = ERROR_CODES[code]
            elif tok.type == "VERSION":
                fields.update(_version(tok))
        return EventKind.NCCL, fields

    def nccl_code_line(self, *parts: Token) -> tuple[EventKind, dict[str, Any]]:
        code = next(p for p in parts if p.type == "ERROR_CODE")
        return EventKind.NCCL, {"error_code": str(code)}

    def last_error_line(self, *parts: Token) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NCCL, {"last_error": parts[0].strip() if parts else ""}

    def watchdog_line(self, *parts: Any) -> tuple[EventKind, dict[str, Any]]:
        fields: dict[str, Any] = {}
        for part in parts:
            if isinstance(part, dict):
                fields.update(part)
            elif part.type == "PG_TAG":
                fields.update(_pg_tag(part))
            elif part.type == "C10_TAG":
                m = re.search(r"([\w.]+):(\d+)\]$", part)
                if m:
                    fields["src_file"], fields["src_line"] = m.group(1), int(m.group(2))
        return EventKind.WATCHDOG, fields

    def wd_timeout(self, work: dict[str, Any], ran: Token) -> dict[str, Any]:
        return {"watchdog": "timeout", **work, "ran_for_ms": int(ran)}

    def wd_failed(self, *_: Token) -> dict[str, Any]:
        return {"watchdog": "failed"}

    def wd_taking_down(self) -> dict[str, Any]:
        return {"watchdog": "taking_down"}

    def wd_heartbeat(self, *_: Token) -> dict[str, Any]:
        return {"watchdog": "heartbeat"}

    def wd_stuck(self, seconds: Token, *_: Token) -> dict[str, Any]:
        return {"watchdog": "stuck", "stuck_s": int(seconds)}

    def wd_last_work(self, _kw: Token, work: Token, enqueued: Token, completed: Token) -> dict[str, Any]:
        return {"watchdog": "last_work", "seq_num": int(work), "last_enqueued": int(enqueued), "last_completed": int(completed)}

    def wd_terminated(self, *parts: Any) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for part in parts:
            fields.update(part if isinstance(part, dict) else _pg_tag(part))
        return fields | {"watchdog_thread_terminated": True}

    def wd_async(self, work: dict[str, Any], *text: Token) -> dict[str, Any]:
        out: dict[str, Any] = {"watchdog": "async_error", **work}
        detail = str(text[0]) if text else ""
        code = next((c for t, c in _ERROR_TEXTS if t in detail), None)
        if code:
            out["error_code"] = ERROR_CODES[code]
        m = re.search(r"NCCL version (\d[\w.+-]*)", detail)
        return out | (_version(m.group(1)) if m else {})

    def wd_text(self, _text: Token) -> dict[str, Any]:
        return {"watchdog": "other"}

    def work(self, *items: tuple[str, str]) -> dict[str, Any]:
        names = {
            "SeqNum": "seq_num",
            "OpType": "op_type",
            "NumelIn": "numel_in",
            "NumelOut": "numel_out",
            "Timeout(ms)": "timeout_ms",
        }
        out: dict[str, Any] = {}
        for key, value in items:
            value = value.strip()
            out[names.get(key, key)] = int(value) if value.isdecimal() else value
        return out

    def work_item(self, key: Token, value: Token) -> tuple[str, str]:
        return str(key), str(value)


def head_fields(tok: str) -> dict[str, Any]:
    """The fields of NCCL's `host:pid:tid [dev]` head (`[dev]` alone on some lines)."""
    m = re.match(r"(?:([\w.-]+):(\d+):(\d+) )?\[(\d+)\]", tok)
    if not m:
        return {}
    out: dict[str, Any] = {"cuda_dev": int(m.group(4))}
    if m.group(1):
        out.update(nccl_host=m.group(1), nccl_pid=int(m.group(2)), nccl_tid=int(m.group(3)))
    return out


def _pg_tag(tok: str) -> dict[str, Any]:
    m = re.match(r"\[(?:PG (?:ID )?(\d+)(?: PG GUID ?\d*)? ?(?:\(([^)]*)\))? )?Rank (\d+)\]", tok)
    if not m:
        return {}
    out: dict[str, Any] = {"rank": int(m.group(3))}
    if m.group(1):
        out["pg_id"] = int(m.group(1))
    if m.group(2):
        out["pg_name"] = m.group(2)
    return out
