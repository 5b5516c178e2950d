"""Verifying a launch's id_token: pylti1p3's launch, with the platform's key
from the per-registration cache (``tutor.lti.keyset``) and a clock leeway
(SPEC §12).

Rule: ``iat``, ``nbf`` and ``exp`` hold within ``LTI_CLOCK_LEEWAY`` seconds.
Beyond it the launch is refused as a clock difference, saying by how much:
PyJWT checks the signature before the times, and pylti1p3 checked the nonce
before both, so the token was signed by the platform moments ago in answer
to a login of this tool -- its times are the platform's clock.
"""

from __future__ import annotations

import json
import math
import time

import jwt
from django.conf import settings
from jwcrypto.jwk import JWK
from pylti1p3.contrib.django import DjangoMessageLaunch
from pylti1p3.exception import LtiException

from tutor.lti.keyset import platform_keys
from tutor.lti.services.launch import LaunchRefused


class ClockSkew(LaunchRefused):
    code = "lti_clock_skew"

    def __init__(self, message: str, *, seconds: int, claim: str):
        super().__init__(message)
        self.seconds = seconds  # positive: the LMS's clock is ahead of the tutor's
        self.claim = claim


def clock_skew(body: dict, *, now: float, leeway: int) -> ClockSkew | None:
    """The clock difference a token's times show, when it exceeds ``leeway``."""

    def number(name):
        value = body.get(name)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    iat, nbf, exp = number("iat"), number("nbf"), number("exp")
    for claim, value in (("iat", iat), ("nbf", nbf)):
        if value is not None and value - now > leeway:
            ahead = math.ceil(value - now)  # platforms floor iat to whole seconds
            return ClockSkew(
                f"The LMS's clock is {ahead} s ahead of the tutor's (more than the {leeway} s allowed), "
                "so this launch looks issued in the future. Ask the LMS and tutor administrators to "
                "synchronise their clocks (NTP), then open the link again.",
                seconds=ahead,
                claim=claim,
            )
    if exp is not None and now - exp > leeway:
        behind = round(now - (iat if iat is not None else exp))
        return ClockSkew(
            f"This launch had expired when it arrived: the LMS's clock is about {behind} s behind the "
            f"tutor's (more than the {leeway} s allowed). Ask the LMS and tutor administrators to "
            "synchronise their clocks (NTP), then open the link again.",
            seconds=-behind,
            claim="exp",
        )
    return None


class ToolMessageLaunch(DjangoMessageLaunch):
    """pylti1p3's launch with two steps of its own (see the module's rule)."""

    def get_public_key(self) -> tuple[str, str]:
        header = self._jwt.get("header", {})
        kid, alg = header.get("kid"), header.get("alg")
        if not kid:
            raise LtiException("JWT KID not found")
        if not alg:
            raise LtiException("JWT ALG not found")
        for key in platform_keys(self._tool_config.registration, kid=kid):
            if key.get("kid") == kid and key.get("alg", "RS256") == alg:
                try:
                    return JWK.from_json(json.dumps(key)).export_to_pem(), alg
                except (ValueError, TypeError) as exc:
                    raise LtiException("Can't convert JWT key to PEM format") from exc
        raise LtiException("the key that signed it is not one of the LMS's keys")

    def validate_jwt_signature(self) -> ToolMessageLaunch:
        public_key, key_alg = self.get_public_key()
        leeway = settings.LTI_CLOCK_LEEWAY
        try:
            jwt.decode(
                self._get_id_token(),
                public_key,
                algorithms=[key_alg],
                options=self._jwt_verify_options,
                leeway=leeway,
            )
        except (jwt.ImmatureSignatureError, jwt.ExpiredSignatureError) as exc:
            skew = clock_skew(self._jwt.get("body", {}), now=time.time(), leeway=leeway)
            if skew is None:
                raise LtiException(f"Can't decode id_token: {exc}") from exc
            raise skew from None
        except jwt.InvalidTokenError as exc:
            raise LtiException(f"Can't decode id_token: {exc}") from exc
        return self
