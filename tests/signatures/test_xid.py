"""The Xid table (signatures/xid.yaml) and the Xid 154 recovery-action decoder."""

from __future__ import annotations

import pytest
import yaml

from analyzer.model import Category
from analyzer.paths import signatures_dir
from analyzer.signatures.xid import all_xids, classify_xid, recovery_action, xid_info

REQUIRED = [
    8,
    13,
    31,
    32,
    38,
    43,
    45,
    48,
    56,
    57,
    58,
    61,
    62,
    63,
    64,
    65,
    68,
    69,
    73,
    74,
    79,
    80,
    81,
    92,
    94,
    95,
    109,
    110,
    119,
    120,
    121,
    122,
    123,
    140,
    143,
    *range(144, 151),
    151,
    154,
    155,
]


def test_79_is_hardware_fallen_off_the_bus() -> None:
    info = xid_info(79)
    assert info is not None
    assert info.cause_class == "hardware" and info.category == Category.HARDWARE_XID
    assert info.subcategory == "hardware_xid.fallen_off_bus" and info.confidence >= 0.9
    assert "reboot" in info.action


def test_13_is_application() -> None:
    info = xid_info(13)
    assert info is not None and info.cause_class == "application" and info.category == Category.USER_CODE


def test_45_is_sympathetic() -> None:
    info = xid_info(45)
    assert info is not None and info.cause_class == "sympathetic" and info.category == Category.UNKNOWN
    assert info.subcategory is None and info.confidence < 0.5


@pytest.mark.parametrize(
    "number,sub",
    [
        (48, "hardware_xid.ecc_uncorrectable"),
        (94, "hardware_xid.ecc_uncorrectable"),
        (95, "hardware_xid.ecc_uncorrectable"),
        (63, "hardware_xid.ecc_uncorrectable"),
        (64, "hardware_xid.ecc_uncorrectable"),
        (74, "hardware_xid.nvlink"),
        (147, "hardware_xid.nvlink"),
        (119, "hardware_xid.gsp"),
        (120, "hardware_xid.gsp"),
        (32, "hardware_xid.xid"),
    ],
)
def test_subcategories(number: int, sub: str) -> None:
    info = xid_info(number)
    assert info is not None and info.subcategory == sub


def test_every_documented_xid_is_listed_with_valid_vocabulary() -> None:
    taxonomy = yaml.safe_load((signatures_dir() / "taxonomy.yaml").read_text(encoding="utf-8"))["categories"]
    listed = {info.number for info in all_xids()}
    assert set(REQUIRED) <= listed
    for info in all_xids():
        assert info.cause_class in ("hardware", "driver_firmware", "application", "sympathetic")
        assert 0 < info.confidence <= 1 and info.action and info.meaning
        subs = taxonomy[str(info.category)]["subcategories"] or {}
        assert info.subcategory is None or info.subcategory in subs, info.number


def test_unknown_numbers() -> None:
    assert xid_info(9999) is None
    fallback = classify_xid(9999)
    assert fallback.category == Category.UNKNOWN and fallback.confidence < 0.5


def test_xid_154_recovery_action() -> None:
    # the message of a real Xid 154 (https://github.com/amoghmunikote/cmpunlocker/pull/31)
    action = recovery_action("GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)")
    assert action is not None
    assert (action.code, action.name, action.text, action.previous_code) == (2, "node_reboot", "OS Reboot", 0)
    reset = recovery_action("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
    assert reset is not None and reset.name == "gpu_reset"
    assert recovery_action("GPU has fallen off the bus.") is None
    assert recovery_action("GPU recovery action changed from 0x0 (None) to 0x9 (Something New)").name == "unknown"


def test_corrected_or_harmless_alone_xids_are_context_never_the_root_cause() -> None:
    from analyzer.events.ingest import build_scanner, events_from_text
    from analyzer.model import Role
    from analyzer.signatures.xid import xid_findings

    assert xid_info(92) is not None and xid_info(92).context_only  # type: ignore[union-attr]
    scanner = build_scanner([])
    for number in (92, 38):
        (finding,) = xid_findings(events_from_text(f"[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): {number}", scanner))
        assert finding.role is Role.CONTEXT, number
    (dbe,) = xid_findings(events_from_text("[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python", scanner))
    assert dbe.role is Role.ROOT_CAUSE
