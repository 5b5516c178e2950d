"""Staff pages in Chinese (SPEC §8, turn 3): Django's i18n for the desk and
the queues, chosen by the browser or the desk's switch; catalogs compiled in
pure Python and committed, checked here against their sources."""

from __future__ import annotations

import gettext
import io

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.desk_data import seed_queues
from tests.factories import enroll, make_course, make_task
from tutor.models import Enrollment
from tutor.ops.messages import catalogs, compile_catalog, make_mo, parse_po

PO = r"""
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=1; plural=0;\n"

msgid "Open queue"
msgstr "打开队列"

#, fuzzy
msgid "Not reviewed yet"
msgstr "草稿"

msgid ""
"Two "
"lines with a \"quote\"\n"
msgstr "两行\n"

msgctxt "lesson"
msgid "Use"
msgstr "启用"

msgid "%(n)s item"
msgid_plural "%(n)s items"
msgstr[0] "%(n)s 项"

msgid "Untranslated"
msgstr ""
"""


def test_a_catalog_compiles_in_pure_python_to_what_gettext_reads():
    catalog = gettext.GNUTranslations(io.BytesIO(make_mo(parse_po(PO))))

    assert catalog.gettext("Open queue") == "打开队列"
    assert catalog.gettext('Two lines with a "quote"\n') == "两行\n"
    assert catalog.pgettext("lesson", "Use") == "启用"
    assert catalog.ngettext("%(n)s item", "%(n)s items", 5) == "%(n)s 项"
    assert catalog.gettext("Not reviewed yet") == "Not reviewed yet"  # fuzzy: not used
    assert catalog.gettext("Untranslated") == "Untranslated"


def test_the_committed_catalogs_are_compiled_from_their_sources():
    found = catalogs(settings.BASE_DIR)

    assert found, "no translation catalog"
    for po in found:
        compiled = compile_catalog(po)
        assert po.with_suffix(".mo").read_bytes() == compiled, f"{po}: run manage.py compile_messages"
    call_command("compile_messages", "--check", stdout=io.StringIO())


@pytest.fixture
def teacher_client(db):
    course = make_course("se-101")
    seed_queues(course, make_task(course))
    teacher = enroll(course, "teacher", role=Enrollment.Role.STAFF)
    teacher.is_staff = True
    teacher.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(teacher)
    return client


def test_the_desk_speaks_chinese_to_a_chinese_browser(teacher_client):
    page = teacher_client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()

    assert '<html lang="zh-hans"' in page
    for words in ("助教工作台", "待决定的评审", "复评申请", "经验草稿", "回传失败的 LTI 成绩", "打开队列"):
        assert words in page
    assert "Reviews needing a decision" not in page


def test_the_desk_language_switch_outlasts_the_browser_language(teacher_client):
    switched = teacher_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/admin/"})
    assert switched.status_code == 302

    page = teacher_client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="en-US").content.decode()

    assert "待决定的评审" in page
    queue = teacher_client.get(reverse("admin:lessons_lesson_changelist") + "?queue=pending").content.decode()
    assert "批准并启用" in queue  # the row's button


def test_the_api_keeps_one_language_whatever_the_browser_says(client):
    login = client.get("/admin/login/", HTTP_ACCEPT_LANGUAGE="zh-hans")  # the thread now speaks Chinese
    assert '<html lang="zh-hans"' in login.content.decode()

    response = client.get("/api/courses/", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert response.status_code == 401
    assert "Content-Language" not in response
    assert "credentials" in response.json()["errors"][0]["detail"]
