"""Text from run dirs made safe for each output format.

Log lines and file names are untrusted: a log may hold terminal escape sequences (a clear-screen,
an OSC window title, an OSC 8 hyperlink), a file name may hold a newline or bytes that are not
UTF-8, and either may hold Markdown or rich markup. Each renderer passes every such string
through the function for its format:

- `term_line` / `term_name`: no C0/C1 control and no escape sequence (CSI, OSC, DCS, SOS, PM,
  APC, two-byte ESC) reaches the terminal; a line's sequences are removed, a name's control
  characters are shown escaped (`\\n`, `\\x1b`) so the name stays recognisable.
- `md_code` / `md_cell` / `md_text`: Markdown with log text in code spans only, table cells with
  `|` escaped, prose with every markup character escaped and URLs inside code spans.
- `shown_name`: bytes that were not UTF-8 (kept by Python as lone surrogates) shown as `\\xNN`,
  so that every format, JSON included, is valid UTF-8.
"""

from __future__ import annotations

import re

# Escape sequences: ECMA-48 CSI (7- and 8-bit), the string commands (OSC, DCS, SOS, PM, APC) up
# to their terminator (BEL, ST) or the end of the text, and the two-byte ESC sequences.
_SEQUENCES = re.compile(
    r"""
      (?:\x1b\[|\x9b) [0-?]* [ -/]* [@-~]?
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]) .*? (?:\x07|\x1b\\|\x9c|\Z)
    | \x1b [ -/]* [0-~]?
    """,
    re.X | re.S,
)
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATES = re.compile(r"[\udc80-\udcff]")
_OTHER_SURROGATES = re.compile(r"[\ud800-\udfff]")


def shown_name(text: str) -> str:
    """Undecodable bytes (lone surrogates from the file system's decoding) as `\\xNN`."""
    text = _SURROGATES.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return _OTHER_SURROGATES.sub("\ufffd", text)


def strip_sequences(text: str) -> str:
    """Every escape sequence removed, then every remaining C0/C1 control (a tab becomes a space)."""
    text = _SEQUENCES.sub("", shown_name(text))
    return _CONTROLS.sub(lambda m: " " if m.group() == "\t" else "", text)


def _escape_control(ch: str) -> str:
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\x{ord(ch):02x}")


def escape_controls(text: str) -> str:
    """Every C0/C1 control shown as an escape (`\\n`, `\\x1b`): for names, where every character counts."""
    return _CONTROLS.sub(lambda m: _escape_control(m.group()), shown_name(text))


def term_line(text: str) -> str:
    """A log line for the terminal: no escape sequence, no control character."""
    return strip_sequences(text)


def term_name(text: str) -> str:
    """A file name (or a path) for the terminal: control characters shown escaped."""
    return escape_controls(text)


def md_code(text: str) -> str:
    """A code span that holds `text` whatever backticks it contains (one line)."""
    text = escape_controls(strip_sequences_keep_newlines(text).replace("\n", " "))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def strip_sequences_keep_newlines(text: str) -> str:
    text = _SEQUENCES.sub("", shown_name(text))
    return _CONTROLS.sub(lambda m: m.group() if m.group() == "\n" else (" " if m.group() == "\t" else ""), text)


def md_name(text: str) -> str:
    """A file name as a code span: a newline in the name shown as `\\n`."""
    return md_code(escape_controls(text))


def md_cell(code: str) -> str:
    """A code span put into a table cell: `|` escaped (GFM splits cells before reading spans)."""
    return code.replace("|", "\\|")


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>!|~#&{}])")
_URL = re.compile(r"(?i)\b(?:[a-z][a-z0-9+.-]*://|www\.)\S+")


def md_text(text: str) -> str:
    """Prose that may quote logs: markup characters escaped, URLs in code spans, one line."""
    text = strip_sequences(text.replace("\n", " "))
    out: list[str] = []
    pos = 0
    for m in _URL.finditer(text):
        out.append(_MD_SPECIAL.sub(r"\\\1", text[pos : m.start()]))
        out.append(md_code(m.group()))
        pos = m.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:]))
    return "".join(out)


_SPAN = re.compile(r"`[^`\n]+`")


def md_prose(text: str) -> str:
    """The project's own prose (remediation from the signature database): its code spans kept,
    everything else escaped as `md_text` does."""
    out: list[str] = []
    pos = 0
    for m in _SPAN.finditer(text):
        out.append(md_text(text[pos : m.start()]))
        out.append(md_code(m.group()[1:-1]))
        pos = m.end()
    out.append(md_text(text[pos:]))
    return "".join(out)


def middle_ellipsis(text: str, width: int) -> str:
    """`text` shortened to `width` characters by cutting its middle (paths keep both ends)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    keep = width - 1
    head = keep // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]
