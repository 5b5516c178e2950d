"""The one redaction module (SPEC §6): findings next to CJK text."""

import pytest

from tutor.redaction import redact


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("请联系li.wei@example.edu.cn获取权限", "email"),
        ("邮箱:ops@example.com。", "email"),
        ("密钥sk-abcdefghijklmnopqrstuvwx已泄露", "api_key"),
        ("服务器192.168.1.20连接超时", "ip_address"),
    ],
)
def test_a_finding_right_after_a_chinese_character_is_redacted(text, kind):
    result = redact(text)

    assert result.kinds == {kind: 1}
    assert f"[REDACTED:{kind}]" in result.text
    assert "@" not in result.text and "sk-" not in result.text and "192.168" not in result.text


def test_an_email_inside_a_longer_ascii_token_is_still_one_finding():
    assert redact("contact: first.last+tag@mail.example.org.").kinds == {"email": 1}
