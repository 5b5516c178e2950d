"""Text that shows nothing (SPEC §7: bad input is a 400 on the field).

One rule for every text a person writes -- tutor messages, corrections,
lesson tags and symptoms, regrade reasons and their answers: a text made only
of white space, controls, invisible and blank-looking characters, and marks
with no letter to sit on, is blank, however long it is.
"""

from __future__ import annotations

import re
import unicodedata

from tutor.kernel.invisible import CONTROL_RANGES, IGNORABLE_RANGES

# Blank-looking signs: the braille pattern blank, the object replacement character.
_BLANK_SIGNS = "\u2800\ufffc"
_NOTHING_TO_READ = re.compile(rf"[\s{IGNORABLE_RANGES}{CONTROL_RANGES}{_BLANK_SIGNS}]*")


def nothing_to_read(text: str) -> bool:
    """Whether ``text`` shows nothing. One pass, a run at a time."""
    position, end = 0, len(text)
    while True:
        position = _NOTHING_TO_READ.match(text, position).end()
        if position == end:
            return True
        if unicodedata.category(text[position]) not in ("Mn", "Me"):
            return False
        position += 1
