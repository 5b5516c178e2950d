"""Reading a course or lesson file's text into data (SPEC §1 ``import_course``,
``import_lessons``): JSON, or YAML through PyYAML's safe loader.

Whatever the text, the outcome is the data or one ``DataFileError`` with a
message fit for the operator -- never a traceback. The safe loader builds
dates and numbers itself, and Python may refuse them while the file is being
read (2027-13-01, ``0x_``, an integer of more than 4,300 digits); such a
value is a YAML error at its line and column, as a syntax error is. Nesting
deeper than Python can follow is refused too.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

_READS_AS = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "true or false",
}


class DataFileError(ValueError):
    """The text is no JSON or YAML that can be read; the message says why."""


class _FileLoader(yaml.SafeLoader):
    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError, KeyError, AttributeError, TypeError) as exc:
            # e.g. "!!bool maybe" (a KeyError inside the loader), "!!timestamp soon"
            if node.tag == "tag:yaml.org,2002:timestamp":
                problem = f"{_shown(node)} is not a date: {exc}"
            else:
                problem = f"{_shown(node)} cannot be read as {_READS_AS.get(node.tag, node.tag)} ({exc!r})"
            raise yaml.constructor.ConstructorError(
                None, None, f"{problem} (quote it if it is text)", node.start_mark
            ) from None


def _shown(node) -> str:
    value = node.value if isinstance(node.value, str) else ""
    return repr(value) if len(value) <= 40 else f"{value[:20]!r}… ({len(value)} characters)"


def data_file_load(text: str, *, json_file: bool) -> Any:
    """The data of ``text``, read as JSON when ``json_file``, else as YAML."""
    try:
        if json_file:
            return json.loads(text)
        return yaml.load(text, Loader=_FileLoader)  # noqa: S506 -- a SafeLoader subclass
    except RecursionError:
        raise DataFileError("it is nested deeper than can be read") from None
    except (yaml.YAMLError, ValueError) as exc:  # JSONDecodeError, and int() refusing 5,000 digits
        raise DataFileError(str(exc)) from None
