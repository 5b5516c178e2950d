"""Detection by kind (issue 36; SPEC §5), from the outside: the tutor says
something, the student replies through the chat API, the detection task runs
as it runs in the embedded default, and the rows written say what was read.

Each case is a kind the rules once got wrong: a real correction they missed,
or a non-correction they stored. The sentences are not the corpus's
(``corrections/eval/corpus.jsonl``): a rule written for one sentence would
not pass them."""

from __future__ import annotations

import pytest

from corrections.models import Correction, CorrectionCase, Fact, MemoryItem

# (tutor, student, type, confidence, stored statement)
CORRECTIONS = {
    # A Chinese trigger glued to the word before it or to 了/吧 after it.
    "glued trigger": ("迟交每天扣 5 分。", "你搞错了吧 迟交是每天扣10分", "factual", 0.9, "迟交是每天扣10分"),
    "trigger with 了": (
        "实验课每周二上。",
        "这个不对了 实验课改到每周四了",
        "factual",
        0.7,
        "实验课改到每周四了",
    ),
    # Misspelt and apostrophe-less triggers.
    "misspelt trigger": (
        "The CI free tier gives 500 minutes.",
        "acutally the free tier gives 2000 minutes",
        "factual",
        0.9,
        "The free tier gives 2000 minutes",
    ),
    "dropped apostrophe": (
        "Tuples can be changed after creation.",
        "thats wrong tuples cant be changed",
        "factual",
        0.7,
        "Tuples cant be changed",
    ),
    # A digit inside a name or version is no number: 0.7, not 0.9.
    "version": (
        "This course uses Python 3.8.",
        "actually the course is on python 3.12",
        "factual",
        0.7,
        None,
    ),
    "name with digits": (
        "Save the report as UTF-16.",
        "不对 报告要存成UTF-8",
        "factual",
        0.7,
        "报告要存成UTF-8",
    ),
    # "X, not Y" without a trigger, and the issue's own example.
    "x not y": ("The entry file is server.js.", "its index.js not server.js", "factual", 0.7, None),
    "x not y with a number": (
        "For a created resource, return HTTP 200.",
        "no — HTTP 201 means created, 200 is plain OK",
        "factual",
        0.9,
        "HTTP 201 means created, 200 is plain OK",
    ),
    # A cited source without a trigger: the seed's 0.85.
    "cited source": (
        "Array.prototype.sort() returns a sorted copy.",
        "per the MDN docs sort() sorts the array in place",
        "factual",
        0.85,
        "Per the MDN docs sort() sorts the array in place",
    ),
    "cited source zh": ("同伴互评不计入成绩。", "根据课程大纲 互评计入平时成绩", "factual", 0.85, None),
    # A curt no with a statement.
    "curt no": ("Binary search works on any array.", "nope, only on sorted arrays", "factual", 0.7, None),
    # Contentless negations are negative feedback, not facts.
    "contentless negation": ("The event loop runs promises last.", "nah that's off", "negative", 0.3, ""),
    "contentless negation zh": ("事件循环最后才跑 Promise。", "错了错了", "negative", 0.3, ""),
    "mix-up with content": (
        "forEach returns a new array and map returns undefined.",
        "you're mixing them up, map returns a new array",
        "factual",
        0.7,
        "Map returns a new array",
    ),
    # Preferences without the seed's trigger words.
    "from now on": ("Voici la réponse.", "please reply in English from now on", "preference", 1.0, None),
    "prefer X over Y": ("Here is the full code.", "prefer hints over complete code", "preference", 1.0, None),
    "next time": (
        "Here is a long walkthrough of every step.",
        "next time just give me the command",
        "preference",
        1.0,
        None,
    ),
    "asked as a request": ("下面是很长的分析。", "回答能不能简短一点", "preference", 1.0, None),
    "imperative 别": ("这是完整的代码。", "别直接贴完整答案", "preference", 1.0, None),
    # Process corrections without the seed's words.
    "make sure before": (
        "Here is the fix, it works.",
        "make sure to run the tests before saying its fixed",
        "process",
        0.8,
        None,
    ),
    "process zh": ("直接改这一行就行。", "先看报错日志 然后再改代码", "process", 0.8, None),
    # The student's own words before a claim of its own do not make it theirs.
    "claim after the student's check": (
        "The project deadline is December 10.",
        "i looked at the course page and actually the deadline is december 14",
        "factual",
        0.9,
        "I looked at the course page and the deadline is december 14",  # the sentence, its cue cut
    ),
    # A process step asked as a question is still an instruction.
    "asked process": (
        "Here is the corrected code.",
        "next time could you first tell me what was wrong before giving the fixed code?",
        "process",
        0.8,
        None,
    ),
    # A negation whose rest tells of the student states no fact.
    "negation and the student's news": (
        "The issue is a missing await.",
        "nope that's not it, i already have await there",
        "negative",
        0.3,
        "",
    ),
    "negation and the student's news zh": (
        "问题是少了 await。",
        "不是这个原因 我已经加了await",
        "negative",
        0.3,
        "",
    ),
    # The cue is cut cleanly, with a form of address before it.
    "address before the cue": (
        "期末考试在第15周。",
        "老师你说错了期末在第17周",
        "factual",
        0.9,
        "期末在第17周",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(CORRECTIONS))
def test_a_correction_of_each_kind_is_recorded_as_read(case, student, chat_for):
    tutor, message, kind, confidence, statement = CORRECTIONS[case]
    chat = chat_for(student)
    chat.send("?", reply=tutor)
    chat.send(message)

    correction = Correction.objects.get(user=student)
    assert (correction.type, correction.confidence) == (kind, confidence)
    if statement is not None:
        assert correction.corrected_statement == statement
    if kind == "factual" and confidence >= 0.85:
        assert "system" in correction.tiers  # a course fact's tier: staff decide on it (SPEC §5)
        assert Fact.objects.exists() or CorrectionCase.objects.exists()
    elif kind in ("preference", "process") or (kind == "factual" and confidence >= 0.7):
        assert "user" in correction.tiers
        assert not Fact.objects.exists()
    else:
        assert correction.tiers == ["session"]
        assert not Fact.objects.exists()


# (tutor, student): nothing may be stored.
NON_CORRECTIONS = {
    "own earlier message": (
        "Running app.py fails on the import.",
        "my bad, the script i ran was app2.py, not app.py",
    ),
    "own earlier message zh": ("你说错误在第 12 行。", "我刚才看错了 是第22行"),
    "sent the wrong thing zh": ("收到你的截图了。", "不好意思发错了 是这张"),
    "own log line": ("What does the test say?", "AssertionError: total should be 10 but was 9"),
    "own code comment": ("Show me the loop.", "for x in xs:\n    # wrong, fix later\n    total += x"),
    "reported output zh": ("报什么错？", "报错信息是 参数类型不对"),
    "quoted assignment": ("What does the task ask?", 'it says "the result should be sorted, not reversed"'),
    "quoted assignment zh": ("题目要求什么？", "题目写着“输入不对时应该返回-1”"),
    "classmate": (
        "Any other questions?",
        "my lab partner says the quiz is on monday but she's wrong i think",
    ),
    "classmate zh": ("你们组怎么样？", "组员说截止是周五 但他搞错了"),
    "question without a mark": ("The deadline is the 10th.", "wait is it the 10th or the 12th"),
    "question without a mark zh": ("默认端口是8000。", "那怎么改成3000"),
    "agreement": ("Return 201, not 200, for a created resource.", "yes exactly, 201 not 200"),
    "agreement zh": ("你应该先写测试，再写代码。", "有道理 先写测试再写代码"),
    "confusion": ("The answer uses reduce().", "i dont get why my loop version is wrong"),
    "hope": ("Good progress on the report.", "i hope i can finish it tonight"),
    "hope zh": ("报告写得不错。", "我希望今晚能写完"),
    "praise zh": ("这是改好的循环。", "我喜欢这个解释 谢谢"),
    "the student's own news": ("Tell me when you've pushed.", "actually i havent pushed yet, 10 more min"),
    "an answer to a choice": ("Do you want a hint or the full solution?", "no, just a hint"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(NON_CORRECTIONS))
def test_a_non_correction_of_each_kind_stores_nothing(case, student, chat_for):
    tutor, message = NON_CORRECTIONS[case]
    chat = chat_for(student)
    chat.send("?", reply=tutor)
    chat.send(message)

    assert not Correction.objects.exists()
    assert (
        not MemoryItem.objects.exists() and not Fact.objects.exists() and not CorrectionCase.objects.exists()
    )


@pytest.mark.django_db
def test_the_explicit_endpoint_reads_a_correction_as_the_chat_does(student, student_client, chat_for):
    chat = chat_for(student)
    chat.send("?", reply="The entry file is server.js.")

    response = student_client.post(
        "/api/corrections/",
        {"content": "its index.js not server.js", "session": chat.session_id},
        format="json",
    )

    assert response.status_code == 201, response.content
    correction = response.json()["correction"]
    assert (correction["type"], correction["confidence"], correction["tiers"]) == ("factual", 0.7, ["user"])
    assert correction["original_statement"] == "The entry file is server.js"
    assert correction["corrected_statement"] == "Its index.js not server.js"
