"""Secret formats known by their shape (SPEC §6): vendor tokens with a prefix
or a structure, checked against the secret scanners' rule sets (gitleaks'
``config/gitleaks.toml``, trufflehog's detectors, detect-secrets' plugins).
Written here from the formats, not copied.

Each entry is one alternative of ``KNOWN_TOKEN``. A token is matched inside a
run of token characters (``TOKEN_RUN``), never across a space, so the
alternation runs on a few short runs, not on the whole text.
"""

from __future__ import annotations

import re

# Characters a token is written with; a run of them is where a token can be.
TOKEN_CHARS = r"A-Za-z0-9_\-+/=.~:%@"
TOKEN_RUN = re.compile(f"[{TOKEN_CHARS}]{{12,}}")

_B = r"(?<![A-Za-z0-9])"  # no letter or digit right before
_E = r"(?![A-Za-z0-9])"  # nor right after

_FORMATS = (
    # AI providers: OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-api03-…), Groq, xAI,
    # Replicate, Perplexity, Hugging Face (user and organisation tokens)
    r"sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin|sid)\d\d-)?[A-Za-z0-9_\-]{16,}",
    r"gsk_[A-Za-z0-9]{40,}", r"xai-[A-Za-z0-9]{40,}", r"r8_[A-Za-z0-9]{30,}", r"pplx-[A-Za-z0-9]{40,}",
    r"hf_[A-Za-z0-9]{30,}", r"api_org_[A-Za-z0-9]{30,}",
    # cloud: AWS key ids and Bedrock keys, Google API and OAuth, Alibaba, Azure AD client secrets
    r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",
    r"ABSK[A-Za-z0-9+/]{100,}={0,2}", r"bedrock-api-key-[A-Za-z0-9+/=]{20,}",
    r"AIza[0-9A-Za-z_\-]{35}", r"ya29\.[0-9A-Za-z_\-]{20,}", r"GOCSPX-[0-9A-Za-z_\-]{20,}",
    r"LTAI[A-Za-z0-9]{16,24}", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}",
    # code hosting: GitHub, GitLab (every prefix), Bitbucket and Atlassian, Sourcegraph
    r"gh[pousr]_[A-Za-z0-9]{30,}", r"github_pat_[A-Za-z0-9_]{40,}",
    r"gl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|ffct|agent|wt|isd)-[A-Za-z0-9_\-.]{15,}", r"GR1348941[\w\-]{20}",
    r"AT(?:ATT|CTT)[A-Za-z0-9_\-=]{24,}", r"ATBB[A-Za-z0-9_\-=]{12,}", r"sgp_[A-Za-z0-9_]{40,}",
    # chat and mail: Slack tokens and webhooks, Discord bot tokens and webhooks, Telegram bot
    # tokens, SendGrid, Sendinblue, Mailgun, Mailchimp
    r"xox[abeoprs]-[A-Za-z0-9\-]{10,}", r"xoxe\.xox[bp]-[A-Za-z0-9\-]{20,}", r"xapp-\d-[A-Za-z0-9\-]{10,}",
    r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}",
    r"(?:https?://)?[\w\-]{1,63}\.webhook\.office\.com/webhookb2/[\w@\-]{20,}(?:/[\w@\-/]+)?",
    r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}",
    r"(?:https?://)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}",
    r"\d{5,16}:A[A-Za-z0-9_\-]{32,36}",
    r"SG\.[A-Za-z0-9_\-=.]{40,}", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}",
    r"(?:pub)?key-[a-f0-9]{32}", r"[a-f0-9]{32}-us\d{1,2}",
    # payments: Stripe (secret, restricted, webhook), Square, Shippo, Flutterwave, Duffel, EasyPost
    r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}", r"whsec_[A-Za-z0-9]{20,}",
    r"(?:sandbox-)?(?:EAAA|sq0atp-|sq0csp-|sq0idp-|sq0idb-)[\w\-]{16,60}", r"shippo_(?:live|test)_[a-fA-F0-9]{40}",
    r"FLW(?:SECK|PUBK)_TEST-[a-hA-H0-9]{12,32}(?:-X)?", r"duffel_(?:test|live)_[\w\-=]{40,}",
    r"EZ[AT]K[A-Za-z0-9]{54}",
    # databases and platforms: PlanetScale, Databricks, DigitalOcean, Doppler, Dynatrace, Heroku,
    # Fly.io, Vault, Terraform Cloud, Pulumi, Supabase, Vercel-like, Render, Netlify, Tailscale
    r"pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64}", r"dapi[a-f0-9]{32}(?:-\d)?", r"do[opr]_v1_[a-f0-9]{64}",
    r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}",
    r"HRKU-AA[0-9A-Za-z_\-]{58}", r"fo1_[\w\-]{43}", r"fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}",
    r"hv[sb]\.[\w\-]{90,}", r"[A-Za-z0-9]{14}\.atlasv1\.[\w\-=]{60,70}", r"pul-[a-f0-9]{40}",
    r"sbp_[a-f0-9]{40}", r"rnd_[A-Za-z0-9]{30,}", r"nfp_[A-Za-z0-9]{36,}", r"tskey-[a-z]{1,20}-[A-Za-z0-9_\-]{16,}",
    # package registries: npm, PyPI, RubyGems, Clojars, JFrog Artifactory, ReadMe, Prefect
    r"npm_[A-Za-z0-9]{36}", r"pypi-AgEIcHlwaS5vcmc[\w\-]{50,}", r"rubygems_[a-f0-9]{48}",
    r"CLOJARS_[A-Za-z0-9]{60}", r"AKCp[A-Za-z0-9]{60,}", r"cmVmd[A-Za-z0-9]{50,}", r"rdme_[a-z0-9]{70}",
    r"pnu_[A-Za-z0-9]{36}",
    # observability and tooling: Grafana, Sentry, New Relic, Datadog-style, Postman, Linear, Notion,
    # Figma, Octopus, Infracost, Scalingo, Settlemint, Shopify, Twilio, Age, 1Password, MaxMind,
    # OpenShift, Airtable, Adobe, ClickHouse, Cloudflare origin CA, Frame.io, Typeform, Contentful,
    # Harness, Intra42, Yandex, Facebook, Twitter bearer, Dropbox, Mapbox, Authress
    r"glc_[A-Za-z0-9+/]{32,}={0,3}", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", r"eyJrIjoi[A-Za-z0-9]{60,}={0,3}",
    r"sntry[us]_[A-Za-z0-9+/=_]{40,}", r"NR(?:AK|II|JS|RA)-[\w\-]{19,}", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
    r"lin_(?:api|oauth)_[A-Za-z0-9]{40}", r"(?:ntn|secret)_[A-Za-z0-9]{40,}", r"figd_[\w\-]{40}",
    r"API-[A-Z0-9]{26}", r"ico-[A-Za-z0-9]{32}", r"tk-us-[\w\-]{48}", r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}",
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", r"SK[0-9a-fA-F]{32}", r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", r"sha256~[\w\-]{43}",
    r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", r"p8e-[A-Za-z0-9]{32}", r"4b1d[A-Za-z0-9]{38}",
    r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", r"fio-u-[\w\-=]{64}", r"tfp_[\w\-.=]{59}", r"CFPAT-[\w\-]{43}",
    r"(?:pat|sat)\.[\w\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", r"s-s4t2(?:ud|af)-[a-f0-9]{64}",
    r"AQVN[\w\-]{35,38}", r"YC[\w\-]{38}", r"t1\.[\w\-]{1,200}=*\.[\w\-]{86}=*", r"EAA[MC][A-Za-z0-9]{100,}",
    r"A{22}[A-Za-z0-9%]{60,}", r"sl\.[A-Za-z0-9_\-=]{120,}", r"[ps]k\.eyJ[A-Za-z0-9._\-]{50,}",
    r"\d{15,25}-[A-Za-z0-9]{20,40}", r"dnkey-[\w=\-]{26}-[\w=\-]{52}", r"\d{1,4}/\d{10,}(?::[A-Za-z0-9]{20,})?",
    r"rzp_(?:live|test)_[A-Za-z0-9]{14,}", r"pgar_[A-Za-z0-9]{20,}", r"sk_[A-Za-z0-9]{20,}",
    r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_\-][a-z0-9\-]{10,32}\.[\w+/=\-]{30,120}",
)  # fmt: skip

KNOWN_TOKEN = re.compile(_B + "(?:" + "|".join(_FORMATS) + ")" + _E)

# JSON Web Tokens (and JWE/JWS with an empty or missing signature): the
# header goes with the rest -- it names the algorithm and often the key id.
JWT = re.compile(
    r"(?<![A-Za-z0-9_\-])ey[A-Za-z0-9_\-]{10,}\.ey[A-Za-z0-9_\-/\\]{10,}\.[A-Za-z0-9_\-/\\]*={0,2}"
)
