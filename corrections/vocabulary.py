"""The words correction detection looks for (seed 002 §3.1) and the words a
topic leaves out (SPEC §5: "without trigger words, numbers, units and stop
words").

The trigger lists are the seed's, in its four kinds; the seed's precedence
(process, then preference, then factual) lives in ``corrections.detection``.
"""

from __future__ import annotations

# Seed 002 §3.1, correctionPatterns: an explicit correction of a fact.
CORRECTION_TRIGGERS = (
    "不对",
    "搞错了",
    "应该是",
    "实际上",
    "你说的有误",
    "错了",
    "纠正",
    "更正",
    "不是",
    "不准确",
    "wrong",
    "incorrect",
    "actually",
    "should be",
    "that's not right",
    "the correct",
)
# Seed 002 §3.1, preferencePatterns: how the user wants to be answered.
PREFERENCE_TRIGGERS = (
    "我希望",
    "我更喜欢",
    "我习惯",
    "我喜欢",
    "不要",
    "别",
    "以后",
    "下次",
    "i prefer",
    "i like",
    "i want",
    "don't",
)
# Seed 002 §3.1, processPatterns: how the work should be done.
PROCESS_TRIGGERS = (
    "先写",
    "再写",
    "应该先",
    "流程应该是",
    "步骤应该是",
    "按这个顺序",
    "first write",
    "then do",
    "the process should",
)
# Not the seed's: words that address the tutor with an instruction. A
# "factual" correction holding one ("Actually, … and the tutor must always
# paste the file") is how the work should be done, not a fact of the subject:
# it is a process correction, which reaches other students only once staff
# accept it (``corrections.detection.detect``; SPEC §5's process row).
DIRECTIVE_PHRASES = (
    "you must",
    "you should",
    "you have to",
    "you need to",
    "you always",
    "you never",
    "the tutor must",
    "the tutor should",
    "the tutor has to",
    "the tutor needs to",
    "the tutor will",
    "tutors must",
    "tutors should",
    "ignore all",
    "ignore the",
    "ignore previous",
    "ignore your",
    "from now on",
    "你必须",
    "你应该",
    "你需要",
    "导师必须",
    "导师应该",
    "助教必须",
    "忽略之前",
    "忽略以上",
    "忽略所有",
    "从现在开始",
)
# Seed 002 §3.1, negativePatterns: "that answer is wrong" with nothing in its place.
NEGATIVE_TRIGGERS = ("不对", "错了", "这不行", "不好", "wrong")
# Seed 002 §3.1, calculateConfidence: a cited source ("根据", "据") raises a
# correction to 0.85. Chinese markers match a word that is or starts with them
# ("据统计"), never one that merely contains them ("数据").
SOURCE_MARKERS_CJK = ("根据", "依据", "据")
SOURCE_MARKERS_LATIN = ("according to", "based on", "source", "sources", "cited in", "as stated in")

# Single-word triggers never name a topic. The words of a Latin phrase
# ("first write") are left out only where the phrase itself matched: "first"
# alone may well be what a task is about.
TRIGGER_WORDS = frozenset(
    phrase
    for group in (CORRECTION_TRIGGERS, PREFERENCE_TRIGGERS, PROCESS_TRIGGERS, NEGATIVE_TRIGGERS)
    for phrase in group
    if " " not in phrase
)

# Units never name a topic; the canonical spelling of each is in corrections.text.
UNITS = frozenset(
    {
        "mm",
        "cm",
        "m",
        "km",
        "kg",
        "g",
        "mg",
        "ml",
        "l",
        "%",
        "°c",
        "℃",
        "percent",
        "ms",
        "s",
        "min",
        "h",
        "kb",
        "mb",
        "gb",
        "tb",
        "px",
        "毫米",
        "厘米",
        "公里",
        "千米",
        "米",
        "千克",
        "公斤",
        "克",
        "毫升",
        "升",
        "摄氏度",
        "度",
        "元",
        "美元",
        "万",
        "亿",
        "岁",
        "小时",
        "分钟",
        "秒",
    }
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CJK_STOP_WORDS = _words(
    """
    的 了 是 在 有 和 与 及 或 而 但 也 都 就 还 又 很 太 更 最 非常 比较 一些
    一点 一个 一下 这个 那个 这些 那些 这样 那样 这里 那里 这么 那么 什么 怎么 怎样
    为什么 多少 几个 哪个 哪些 哪里 是否 是不是 有没有 吗 呢 吧 啊 呀 我 你 您 他
    她 它 我们 你们 他们 她们 它们 自己 大家 约 约为 为 大约 大概 左右 差不多 大致
    其实 确实 真的 应该 可以 可能 能够 需要 必须 已经 正在 将 会 要 想 请 给 把 被
    让 对 对于 关于 因为 所以 如果 那 这 并且 而且 以及 还是 或者 然后 之后 之前
    现在 一直 总是 通常 觉得 认为 知道 告诉 说 问 回答 答案 问题 一样 同样 时候 地方
    东西 谢谢 好的 明白 没有 不会 不能 那就 就是 只是 只有 还有 等等 以上 以下 其中
    每个 各个 所有 部分 其他 就行 就好 即可
    """
)

LATIN_STOP_WORDS = _words(
    """
    a an the and or but if then so of to in on at by for with from into onto about as is are was were be
    been being am do does did doing done have has had having it its it's this that that's these those
    there here what which who whom whose when where why how i me my mine we us our you your yours he him
    his she her they them their not no yes can could would should will shall may might must also just
    only very really quite too more most some any all each every other than such own same again still
    even much many few lot lots please thanks thank ok okay sure think know tell say said says answer
    answers question questions around approximately roughly about like is isn't aren't wasn't weren't
    don't doesn't didn't i'm you're we're they're it'll i've you've per via up down out over under
    between after before because while though although whether get got
    """
)

# Words that say the answer failed but state nothing in its place: a
# correction left with only these ("nope, still failing with the same
# error", "没用 还是报错") is negative feedback (seed 002: 只有否定没有替代).
FILLER_WORDS = _words(
    """
    work works working worked fix fixed fixes help helps helped fail fails failed failing error errors still
    again asked ask meant mean wanted sense answer true right correct quite seem seems look looks sound sounds
    way idea lol lmao haha hmm hmmm ugh bro dude man sir teacher yet totally completely definitely kinda bit
    nope nah yeah ok okay sorry thanks thx ty tbh imo anything change changed issue problem broken same think
    honestly really literally bruh mistaken wrong incorrect off anymore though
    报错 没用 意思 答案 回答 说法 结果 完全 好像 根本 还是 这样 那样 不行 哈哈 哈哈哈 老师
    大佬 真的 明显 有点 感觉 一样 问题 这里 那里 东西 地方 依然 仍然 还会
    """
)

# A number right after one of these names a version, not a quantity
# ("python 3.11", "node 20", "java 17"): no reason for the seed's 0.9.
VERSIONED_NAMES = _words(
    """
    python python3 node nodejs node.js django java jdk jre php ruby go golang rust gcc clang ubuntu debian
    fedora centos windows win macos osx ios android react vue angular npm pip yarn postgres postgresql mysql
    redis chrome firefox safari es ecmascript typescript kotlin swift scala perl dotnet .net c# vscode excel
    office iphone gpt bootstrap tailwind jquery spring rails laravel flask fastapi numpy pandas torch pytorch
    tensorflow cuda opencv unity html css tls ssl lts jest pytest mocha webpack vite babel eslint
    """
)
