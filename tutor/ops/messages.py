"""Translation catalogs compiled in pure Python (SPEC §8: staff pages in
Chinese). Django reads ``.mo`` files; ``compilemessages`` needs GNU gettext,
which a clean machine or CI may lack. The ``.mo`` files are committed, made
by ``manage.py compile_messages`` from the ``.po`` files with this module,
and a test compiles them again and compares, so a stale ``.mo`` fails CI.

Supports what the project's catalogs use: ``msgctxt``, ``msgid``,
``msgid_plural``, ``msgstr[n]``, continued lines, ``#, fuzzy`` (skipped, as
msgfmt does) and the C escapes of PO strings.
"""

from __future__ import annotations

import ast
import struct
from pathlib import Path

MO_MAGIC = 0x950412DE


def parse_po(text: str) -> dict[str, str]:
    """The translated entries of a PO file: {key: value} as an MO file
    stores them (a plural's forms joined by NUL, a context by EOT)."""
    entries: dict[str, str] = {}
    fields: dict[str, str] = {}
    current: str | None = None
    fuzzy = False

    def flush() -> None:
        nonlocal fields, fuzzy, current
        if "msgid" in fields:
            key = fields["msgid"]
            if "msgid_plural" in fields:
                key += "\0" + fields["msgid_plural"]
                forms = [fields[k] for k in sorted(f for f in fields if f.startswith("msgstr["))]
                value = "\0".join(forms)
            else:
                value = fields.get("msgstr", "")
            if "msgctxt" in fields:
                key = fields["msgctxt"] + "\x04" + key
            if value.replace("\0", "") and (not fuzzy or key == ""):
                entries[key] = value
        fields, current, fuzzy = {}, None, False

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        if line.startswith("#,") and "fuzzy" in line:
            fuzzy = True
            continue
        if line.startswith("#"):
            continue
        if line.startswith('"'):
            if current is None:
                raise ValueError(f"a continued string without a keyword: {raw!r}")
            fields[current] += _unquote(line)
            continue
        keyword, _, rest = line.partition(" ")
        if keyword in ("msgctxt", "msgid") and "msgid" in fields:
            flush()  # a new entry without a blank line before it
        current = keyword
        fields[keyword] = _unquote(rest.strip())
    flush()
    return entries


def _unquote(quoted: str) -> str:
    if not (quoted.startswith('"') and quoted.endswith('"')):
        raise ValueError(f"not a PO string: {quoted!r}")
    return ast.literal_eval(quoted)


def make_mo(entries: dict[str, str]) -> bytes:
    """The GNU MO file of ``entries`` (little-endian, keys sorted, no hash table)."""
    keys = sorted(entries)
    ids = [k.encode("utf-8") for k in keys]
    strs = [entries[k].encode("utf-8") for k in keys]
    count = len(keys)
    header = 7 * 4
    key_table = header
    value_table = key_table + count * 8
    data_start = value_table + count * 8
    offsets, data = [], b""
    for blob in ids + strs:
        offsets.append((len(blob), data_start + len(data)))
        data += blob + b"\0"
    out = struct.pack("<7I", MO_MAGIC, 0, count, key_table, value_table, 0, data_start)
    for length, offset in offsets:
        out += struct.pack("<2I", length, offset)
    return out + data


def compile_catalog(po_path: Path) -> bytes:
    return make_mo(parse_po(po_path.read_text(encoding="utf-8")))


def catalogs(root: Path) -> list[Path]:
    """Every ``.po`` under ``root``'s locale directories, outside virtualenvs."""
    return sorted(p for p in root.rglob("locale/*/LC_MESSAGES/*.po") if ".venv" not in p.parts)
