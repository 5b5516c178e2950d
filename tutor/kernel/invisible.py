"""Characters that show nothing, shared by fencing and redaction.

Unicode's Default_Ignorable_Code_Point set (DerivedCoreProperties): soft
hyphen, combining grapheme joiner, zero-width and joiner characters,
bidirectional controls, Hangul fillers, variation selectors, the BOM, tags.
A reader -- a model, a person -- does not see them, so text that hides one
inside a fence marker or a secret still reads as the marker or the secret.
"""

from __future__ import annotations

IGNORABLE_RANGES = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
DEFAULT_IGNORABLE = f"[{IGNORABLE_RANGES}]"

# What else a reader passes over between two characters without seeing it:
# C0 and C1 controls (also line breaks) and the format characters outside
# the set above (interlinear annotation, Egyptian hieroglyph joiners).
CONTROL_RANGES = "\x00-\x1f\x7f-\x9f\ufff9-\ufffb\U00013430-\U0001343f"
