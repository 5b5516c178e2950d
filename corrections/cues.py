"""The cues of a correction, as patterns on a message's clean text
(``corrections.reading``), by kind (SPEC §5; seed 002 §3.1 and what its
lists miss, issue 36).

Patterns are written on lower-case text with single spaces; ``_words``
lets the space between two words go missing ("i\u200bprefer" reads
"iprefer") and an apostrophe be dropped ("thats", "dont"). The words
students misspell most ("acutally", "worng", "incorect", "shoud", "perfer")
match with one letter dropped or two letters swapped (``_typos``).

Chinese cues are matched on the text, glued to the words around them
("答案错了吧", "不对北京…"), never on segmenter tokens; each excludes the
words that merely contain it (不对劲, 特别, 是不是).
"""

from __future__ import annotations

import re

from corrections.vocabulary import DIRECTIVE_PHRASES

_EXCLUDED_TYPOS = frozenset({"refer", "rater", "mistake", "ight"})


def _typos(word: str) -> str:
    """``word`` and its one-slip misspellings: a letter dropped, two
    neighbours swapped (real words that would read so are left out)."""
    variants = {word}
    for i in range(len(word)):
        variants.add(word[:i] + word[i + 1 :])
        if i + 1 < len(word):
            variants.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    variants -= _EXCLUDED_TYPOS
    variants = {v for v in variants if len(v) >= 4}
    return "(?:" + "|".join(sorted(map(re.escape, variants), key=len, reverse=True)) + ")"


ACTUALLY = _typos("actually")
WRONG = _typos("wrong")
INCORRECT = _typos("incorrect")
CORRECT = _typos("correct")
RIGHT = _typos("right")
SHOULD = _typos("should")
PREFER = _typos("prefer")
RATHER = _typos("rather")


def _words(pattern: str) -> str:
    """A pattern of words: a space may be missing, an apostrophe dropped."""
    return re.sub(r"'(?!\?)", "'?", pattern).replace(" ", " ?")


def _latin(*alternatives: str) -> re.Pattern[str]:
    body = "|".join(_words(a) for a in alternatives)
    return re.compile(rf"(?<![a-z0-9_'])(?:{body})(?![a-z0-9_'])")


def _cjk(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives))


def _either(latin: str, cjk: str) -> re.Pattern[str]:
    """One pattern of Latin and Chinese cues. Each part is tried only where
    its script starts (a Latin cue never at a Chinese character): without
    the guards, thousands of alternatives were tried at every position of a
    long message."""
    return re.compile(rf"(?=[a-z0-9.=(<>!$_-])(?:{latin})|(?=[^\x00-\x7f])(?:{cjk})")


# --- whose words: the tutor's, the student's own, someone else's ---------------------------

TUTOR = "tutor"
SELF = "self"
OTHER = "other"
# The nearest person named before a cue says whom it is about
# (``corrections.addressing``). A hedge ("i think") names no one.
_HEDGES = re.compile(
    _words(
        r"(?<![a-z])(?:i (?:think|believe|guess|feel|reckon|suppose)|i'm (?:pretty |fairly |quite )?sure"
        r"|imo|imho)(?![a-z])"
    )
    + r"|我(?:觉得|认为|感觉|想|猜|估计|记得)"
)
PERSONS = re.compile(
    r"(?<![a-z0-9_'])(?P<tutor>you|your|you'?re|youre|ur|u|yours|yourself)(?![a-z0-9_'])"
    r"|(?<![a-z0-9_'])(?P<self>i|me|my|mine|myself|we|us|our|ours|i'?m|im|i'?ve|ive|i'?d)(?![a-z0-9_'])"
    r"|(?<![a-z0-9_'])(?P<other>he|she|him|her|his|hers|he'?s|she'?s|friends?|classmates?|teammates?"
    r"|partners?|roommates?|guy|girl|ta|tas|teacher|prof|professor|lecturer|instructor|someone|somebody"
    # "sara's answer", not "beijing's rainfall".
    r"|[a-z]+'s(?= (?:answer|code|test|tests|solution|version|pr|commit|report|approach|idea|formula"
    r"|function|work|homework|assignment|notes|program|script|output|result)))(?![a-z0-9_'])"
    r"|(?P<tutor_zh>你|您)|(?P<self_zh>我|咱|俺)"
    r"|(?P<other_zh>他|她|同学|室友|队友|组员|搭档|朋友|同桌|助教|别人|人家|那个人|这个人|那人|学长|学姐|师兄|师姐)"
)


def person_marks(text: str) -> list[tuple[int, str]]:
    """Where ``text`` names a person, and whom (TUTOR, SELF, OTHER), in order;
    a hedge ("i think", 我觉得) names no one."""
    hedges = [m.span() for m in _HEDGES.finditer(text)]
    marks, h = [], 0
    for match in PERSONS.finditer(text):
        while h < len(hedges) and hedges[h][1] <= match.start():
            h += 1
        if h < len(hedges) and hedges[h][0] <= match.start():
            continue
        kind = match.lastgroup.removesuffix("_zh")
        marks.append((match.start(), {"tutor": TUTOR, "self": SELF, "other": OTHER}[kind]))
    return marks


# --- the message as a whole ------------------------------------------------------------

# The student corrects their own earlier message, not the tutor.
SELF_REPAIR = re.compile(
    _words(
        r"(?<![a-z])(?:my bad|my mistake|my fault|my typo|typo on my (?:side|end|part)|sorry,? i meant"
        r"|i mistyped|i misread|i misspoke|i mixed (?:it|them|that|those) up|mixed (?:it|them) up"
        r"|scratch that|ignore my (?:last|previous|earlier) (?:message|msg|one|post)"
        r"|i (?:pasted|sent|uploaded|attached|copied|submitted) the wrong"
        r"|oops|whoops|i was wrong|i typed (?:that|it|this) wrong|i wrote (?:that|it|this) wrong"
        r"|ignore what i (?:said|wrote)|i said (?:that|it) wrong|i got (?:that|it) wrong)(?![a-z])"
    )
    + r"|(?:^|(?<=[,.;:!] ))i meant\b"
    + r"|我(?:刚才|刚刚|之前|上面)?(?:打|看|记|说|写|听|读|弄|搞)(?:错|混|反)"
    r"|是我(?:搞|弄)?(?:错|混|反)|口误|打错字|(?:发|贴|传|交|粘|复制)错"
    + r"|^(?:edit|eta|ps) ?[:-]|我的错|我(?:刚才|刚刚|之前|上面)(?:说|写)的"
    + r"|^(?:打|看|记|说|写)错了"
)
# Agreement opens the message: "yes exactly, 201 not 200", "对对对 是201".
AGREEMENT = re.compile(
    _words(
        r"^(?:yes|yeah|yep|yup|ya|right|exactly|correct|true|agreed|i agree|makes sense|that makes sense"
        r"|got it|gotcha|ok so|okay so|ok got it|ah+ ok|ah+ right|oh+ ok|oh+ right|oh+ i see|i see|indeed"
        r"|good point|fair enough|sure|that's right|thats true|right right)(?![a-z])"
    )
    + r"|^(?:对(?![不了劲])|对的|没错|是的|好的|明白|懂了|原来如此|原来|有道理|确实|同意|哦哦|哦|行|ok|嗯嗯)"
)
# Words that turn an agreement into a correction: "right, but it's 630".
CONTRAST = _latin("but", "however", "though", "although", "except", ACTUALLY, "instead", "in fact")
CONTRAST_ZH = _cjk("但是", "但", "不过", "可是", "然而", "其实", "实际上", "事实上")
# A sentence of confusion or hope is no correction ("i dont get why it's wrong").
CONFUSION = re.compile(
    _words(
        r"(?<![a-z])(?:i don't (?:understand|get|know|see)|don't (?:understand|get it|know)|idk|i'm (?:so "
        r"|very )?confused"
        r"|confusing|no idea|not sure|i hope|hope (?:it|this|i)|i wish|i thought|i wonder)(?![a-z])"
    )
    + r"|不明白|不懂|不知道|不清楚|不确定|搞不懂|好晕|晕了|希望|要是.{0,12}就好了|我以为"
)


# --- factual and negative cues -----------------------------------------------------------

# Each cue says the tutor's statement is wrong. ``subject`` covers the words a
# cut takes with it ("that's wrong", "you're wrong about the midterm").
_SUBJECT = (
    r"(?:(?:i think |i believe |i'm pretty sure |imo )?(?:that'?s|that is|this is|it'?s|its|it is|that was"
    r"|you'?re|youre|you are|ur|u r|u are|your|ur answer is|your answer is|the answer is|this answer is"
    r"|that answer is|this one is|you got (?:it|that|this)|you were) )?"
    r"(?:(?:totally|completely|just|simply|so|definitely|kinda|a bit|still|all|also|again) )?"
)
# "nope, still failing", not "my CI still fails on …" (the student's news).
STILL_FAILING = (
    r"|(?=[itn]|still)(?:(?<=^)|(?<=[,.;:!—-])|(?<=[,.;:!—-] ))(?:(?:it|that|this|nope|no|nah) )?"
    r"still (?:failing|fails|broken|not working|the same error)"
)
_NEGATION_ZH = (
    r"(?<!对)(?:(?:这个?|你说的|你讲的|这样)?(?:是)?(?:完全|好像|又|还是|也|根本|有点|并)?不(?:太)?[对队]"
    r"(?!的[\u4e00-\u9fff])(?!时|就|劲|称|应|齐|付|外|头|路|比|照|象|话|手|方|面|待)(?:[吧啊哦呀啦了的]|不[对队])*)"
    r"|(?:你|您)(?:又|也|完全|根本)?(?:搞|弄|说|写|算|记|看|想|讲|理解|答|猜)错(?:了|啦)?(?:吧|啊|哦)?"
    r"|(?P<self_verb>(?:打|看|记|说|写|听|读|拼|填|选|认)错了?)"
    r"|(?:搞|弄|算|答|讲|猜)错了?(?:吧|啊|哦)?"
    r"|(?:你说的|你讲的|这个?|这里|答案)?(?:又|也|完全)?(?<![做写算记打看说搞弄猜填选认听读拼讲想答])错(?:了|啦|咯|喽|的(?![\u4e00-\u9fff])"
    r"|得离谱)(?:[吧啊哦呀]|错了)*"
    r"|(?:你说的)?有误|不准确|不正确|不是这样的?|不是这个(?:意思|原因|问题|情况|地方)?|不是这里的?问题|并不是|这不行|这样不行|不好(?!意思|看|用|说|学|写|做|弄|懂|找|记|好|受)"
    r"|(?:^|(?<=[ ，,。！!]))错+(?=$|[ ，,。！!])"
    r"|(?:你|您)?(?:又|也|完全)?(?:说|搞|弄|写|讲|记)反了?|(?:搞|弄)混了|混淆了|没道理|说不通|讲不通|不合理"
    r"|(?:说法|答案|回答|解释|你说的)有问题|(?:完全|根本|一点都|一点也|还是)没用"
    r"|我不(?:这么|这样)(?:认为|觉得|看)|我不同意|我觉得不是"
    r"|(?:这个?|你的?|你这个?)?(?:说法|信息|答案)?(?:已经)?(?:过时|过期)了?|早就改了|已经改了"
)
NEGATION = _either(
    "(?<![a-z0-9_'])(?:"
    + _words(
        rf"(?P<attr_det>(?:the|a|an|some|any|for|with|of|on|in|to|no|got the|had the|has the"
        rf"|gave me the) {WRONG} [a-z])"
        rf"|{_SUBJECT}(?:{WRONG}|{INCORRECT}|mistaken|false|(?:not|isn't|isnt) (?:{RIGHT}|{CORRECT}|true"
        rf"|accurate|quite right))"
        r"(?: about [^,.;:!?\x02—]*)?"
        rf"|(?:that'?s|this is|it'?s|its) (?:way |a bit |kinda |totally )?off"
        r"|(?:that'?s |this is |it'?s )?not quite(?: it| right)?"
        r"|(?:that'?s |this is |it'?s )?not (?:it|how (?:it|that|this) works"
        r"|what i (?:asked|meant|wanted|need|needed"
        r"|was looking for"
        r"|said))"
        r"|(?:that |this |it )?(?:doesn't|does not|didn't|did not) (?:work|help|fix (?:it|anything|the error"
        r"|the issue)"
        r"|change anything)"
        rf"|(?:that |this |it )?(?:doesn't|does not) (?:seem|look|sound) (?:{RIGHT}|{CORRECT})(?: to me)?"
        # It reverses or mixes up what is so; it makes no sense; the student disagrees.
        r"|(?:mixing|mixed|mixing up|got) (?:it|them|these|those|things|the two) up|(?:mixing|mixed) up"
        r"|(?:that'?s|it'?s|this is|you have it|you got it|you've got it|you have them) backwards"
        r"|(?:this|that|your|ur|this answer|that answer|your answer|ur answer|that explanation"
        r"|this explanation"
        r"|what you said) (?:makes no sense|doesn't make (?:any )?sense)|makes no sense|nonsense"
        r"|(?:i )?don't think so|i doubt (?:it|that)|i disagree|not so sure about that"
        # What the tutor said is no longer so.
        r"|(?:that'?s |this is |it'?s |its |that info is |your info is )?(?:outdated|out of date|old info"
        r"|no longer (?:true|the case)|not (?:true |the case )?any ?more)"
    )
    + STILL_FAILING
    + r")(?![a-z0-9_'])",
    _NEGATION_ZH,
)
# Seed 002 calls these correction words too: they open a corrected statement.
CORRECTION_WORDS = _either(r"(?<![a-z0-9_'])correction(?![a-z0-9_'])", r"(?:更正|纠正)(?:一下)?")
# A curt no at the start of a clause: negation when the tutor stated something.
CURT_NO = re.compile(
    _words(r"^(?:no+|nope|nah+|nop|naw|no no|not really|hmm+ no|nope nope)")
    + r"(?![a-z0-9_'])(?! ?(?:problem|worries|worry|idea|need|thanks|thank|rush|way|more|longer|clue|doubt"
    r"|matter))"
    r"|^(?:不是(?:[啊的吧呀哦呢]|不是)?(?= |$)|没有吧|不行(?:的|啊|呀|哦)?|没用|不不不?)"
)
# Assertion words: a statement follows that replaces the tutor's (seed 002:
# actually, should be, 实际上, 应该是). Words of the same topic must follow.
ASSERTION = _either(
    r"(?<![a-z0-9_'])(?:"
    + _words(
        rf"(?P<cut>{ACTUALLY}|in fact|as a matter of fact)|{SHOULD} be|the (?:correct|right) (?:answer|value"
        rf"|one|way|version|number|name|command|term) is"
    )
    + r")(?![a-z0-9_'])",
    r"(?P<cut_zh>实际上|其实|事实上)|[应因]该是|才是",
)
# "X, not Y": the tutor said Y, the student says X.
_NOT_BEFORE = (
    r"is|are|was|were|am|be|do|does|did|can|could|should|would|will|shall|may|might|must|have|has|had|need"
    r"|i'?m|im|it'?s|that'?s|thats|why|if|or|and|but|still|just|really|probably|definitely|maybe|so|because"
    r"|i|you|we|they|he|she|it|there|please|pls|plz|do|don'?t|dont|doesn'?t|didn'?t|hope|whether|yet"
)
_NOT_AFTER = (
    r"sure|quite|really|very|too|so|that|this|what|how|working|work|right|correct|true|good|bad|fine|ok|okay"
    r"|yet|only|just|even|always|all|enough|much|many|a big deal|necessarily|exactly|necessary|possible|able"
    r"|allowed|supposed|going|gonna|in|on|at|to|for|with|from|by|be|been|being|it|me|you|him|her|them"
    r"|us|anymore"
)
X_NOT_Y = _either(
    rf"(?<![a-z0-9_'])(?P<x>(?!(?:{_NOT_BEFORE})\b)[\w.()=/$<>!-]+)(?:,| —| -|--)? not (?:a |an |the )?"
    rf"(?P<y>(?!(?:{_NOT_BEFORE}|{_NOT_AFTER})\b)[\w.()=/$<>!-]+)",
    r"(?P<zh>(?:而)?不(?:是|叫)) ?(?P<y_zh>[\w.()=/$-]+)",
)
# A cited source (seed 002: 根据, 据 raise the confidence to 0.85).
_SOURCE_NOUNS = (
    r"docs?|documentation|syllabus|rubric|spec|specification|manual|readme|mdn|book|textbook|lecture|slides"
    r"|handout|assignment|task|guide|reference|standard|rfc|man page|page|website|site|wiki|wikipedia|faq"
)
SOURCE = _either(
    r"(?<![a-z0-9_'])(?:"
    + _words(
        rf"per (?:the )?(?:[\w.+-]+ ){{0,3}}(?:{_SOURCE_NOUNS})|according to"
        rf"|based on (?:the )?(?:[\w.+-]+ ){{0,3}}(?:{_SOURCE_NOUNS})"
        rf"|as (?:stated|said|written|explained|documented) in"
        rf"|(?:the )?(?:[\w.+-]+ )?(?:{_SOURCE_NOUNS})"
        r" (?:says|say|said|states|state|mentions|lists|shows|explains)"
        rf"|(?:from|in) the (?:official )?(?:{_SOURCE_NOUNS})"
    )
    + r")(?![a-z0-9_'])"
    + r"|(?<![a-z0-9_'])(?:mdn|readme|docs?)(?:里|上|中)?(?:写着|写了|写的是|说|写|提到|规定)",
    r"根据|依据|(?<![\u4e00-\u9fff])据(?!说)|按照?[^ ，,。]{0,12}(?:文档|说法|规定|大纲|标准)"
    r"|(?:文档|官方文档|官网|大纲|评分标准|教材|课本|讲义|课件|手册|规范|作业要求)(?:里|上|中)?(?:写着|写了|写的是|说|写|提到|规定)",
)
# An instruction to the tutor inside a factual correction makes it a process
# one (``vocabulary.DIRECTIVE_PHRASES``).
DIRECTIVE = _either(
    _latin(*(p for p in DIRECTIVE_PHRASES if p.isascii())).pattern,
    "|".join(re.escape(p) for p in DIRECTIVE_PHRASES if not p.isascii()),
)


# --- preference and process cues -------------------------------------------------------

# What a preference is about: how the tutor answers.
_STYLE = (
    r"answers?|repl(?:y|ies)|responses?|explanations?|examples?|hints?|code|solutions?|bullet(?: points)?"
    r"|lists?|steps?|step by step|emojis?|jargon|short|shorter|concise|brief|simple|simpler|details?"
    r"|detailed|long|longer|theory|commands?|text|lines?|words|language|english|chinese|mandarin|format"
    r"|markdown|tables?|semicolons|comments|style|whole (?:code|file|solution)|full (?:code|solution|answer)"
    r"|it short|it brief|it simple"
)
_STANDING = (
    r"from now on|going forward|next time|in (?:the )?future|from here on|always|never|no more|any ?more"
)
_DO = (
    r"give|use|write|paste|show|send|explain|add|include|make|do|tell|put|answer|reply|respond|talk|speak"
    r"|keep|start"
)
PREFERENCE = _either(
    r"(?<![a-z0-9_'])(?:"
    + _words(
        rf"(?P<standing>{_STANDING})"
        rf"|(?:i |i'd |id |i would |i'll |i do )?{PREFER}(?:s|red)?(?! to (?:{_DO}|be|have|get|learn"
        rf"|understand))"
        rf"|(?:i'd|id|i would) {RATHER}|{RATHER} than|please remember|remember that i"
        rf"|keep (?:it|them|answers|replies|responses|your answers|the answers|things) (?:short|brief|concise"
        rf"|simple|under|shorter)"
        r"|too (?:long|short|verbose|wordy|detailed|much text|much code|much|many words|complicated)"
        rf"|(?:less|fewer|more) (?:{_STYLE}|jargon|theory|talk|text)"
        r"|(?:answer|reply|respond|explain|write|talk|speak) (?:to me )?in (?:english|chinese|mandarin"
        r"|bullet points|bullets|a list|short)"
        r"|in (?:english|chinese|mandarin) (?:pls|please|plz)|examples? in (?:python|java|js|javascript|c|go"
        r"|rust)"
        rf"|i want (?:you to|shorter|longer|more|less|short|simple|simpler|only|just|{_STYLE})"
        rf"|i like (?:it )?when (?:you|u)|i (?:like|love) (?:short|concise|simple|brief|step by step"
        rf"|(?:small |short )?examples)"
        rf"|(?:can|could|would|will) (?:you|u) (?:please |pls )?(?:stop|use|keep|always|never|answer|reply"
        rf"|respond|write|explain in|not|avoid|be more|be less|give me less)"
        r"|just (?:give|tell|show) me|just the (?:answer|code|command)|make sure (?:to|you|u) (?:explain"
        r"|answer|reply|show|use|keep|give|include|write)"
        # A way of answering named by itself: "shorter answers please", "hints only".
        r"|(?:short|shorter|brief|briefer|concise|simple|simpler|fewer|smaller|clearer|plain|plainer|easier)"
        r" (?:\w+ )?(?:words|language|terms|english|answers"
        r"|replies|responses|explanations|examples|hints|code|sentences)"
        r"|(?:only|just) hints|hints? only|no (?:full |complete |whole )(?:solutions?|answers?|code)"
        r"|no solutions"
        r"|use (?:a |more )?(?:tables?|bullet points|bullets|lists?|markdown|headings|code blocks|diagrams)"
    )
    + r")(?![a-z0-9_'])"
    # An imperative opens its clause: "dont give me the code", not "arrow functions dont have".
    + r"|(?<![a-z] )(?<![a-z])(?:(?:please|pls|plz|and|just|but|so) ?)?(?:don'?t|do not|stop) ?"
    + rf"(?:{_DO}|giving|using|writing|pasting|showing|sending|explaining|adding|with)(?![a-z])"
    + r"|answer ?用",
    # 以后 is "from now on" where it opens a clause; "分组以后" is "after grouping".
    r"(?P<standing_zh>(?:^|(?<=[ ，,。！!；;：:请你就都也那所以]))(?:以后|之后)"
    r"|下次|从现在开始|从现在起|今后|往后)"
    r"|我?希望(?:你|您|回答|答案|解释|以后|下次)"
    # 喜欢 a way of answering, not "这个解释" (praise of this answer).
    r"|我?(?:更|比较|最|还是)?喜欢(?![^ ，,。]{0,2}[这那])"
    r"(?=[^ ，,。]{0,8}(?:回答|解释|例子|讲|简洁|简短|详细|步骤))"
    r"|我?习惯(?=[^ ，,。]{0,8}(?:回答|解释|例子|讲|看))"
    r"|(?:^|(?<=[ ，,。！!；;：:请就也都再千万可]))(?:不要|别)(?=[给用贴写说发直老再总把讲解回举叫加放问])"
    r"|(?:用|说|讲|写|回答用?)(?:简体|繁体)?(?:中文|英文|英语|汉语)|(?:中文|英文)回答"
    r"|太(?:长|啰嗦|啰唆|多了|复杂|详细)|啰嗦|简短点|短一点|短点|简单点|简洁点|少点|多点|多举(?:个)?例|举例子|请记住|记住我|叫我"
    r"|(?:说|讲)重点|直接(?:说|给|讲)|用表格|列表的形式",
)
# Ordering steps of the work (seed 002: 先写, 应该先, 流程应该是 …).
_VERB = (
    r"write|check|run|read|ask|explain|look|test|reproduce|show|start|open|review|go|lint|commit|push"
    r"|verify|try|tell|give|suggest|confirm|compile|build|install|print|debug|do|fix|add|make|create|update|plan|outline"
    r"|describe|summarize|list|think|refactor"
)
PROCESS = _either(
    r"(?<![a-z0-9_'])(?:"
    + _words(
        rf"first (?:{_VERB}|the|a|you|u)|(?:{_VERB})\b[^.;!?\x02]{{0,40}}\bfirst(?!\()|then (?:do|show|write"
        rf"|the|suggest|give|explain|fix|run)"
        r"|before (?:you|u|giving|suggesting|showing|saying|telling|anything|answering|writing|changing"
        r"|pushing|committing)|(?P<order>(?:before|after) [a-z]+ing)"
        r"|step (?:1|one)|first step|in (?:this|that|the right|the same) order|in order|file by file"
        r"|one (?:file|step) at a time"
        rf"|the (?:process|workflow|order) (?:{SHOULD}|must|is)|start with|begin with|start by"
        r"|make sure (?:to |you |u )?(?:run|test|check|lint|verify|try|compile|build|read|ask)"
        r"|(?:always |never )?(?:show|write|explain|run|check|read) [^.;!?\x02]{0,40} before"
    )
    + r")(?![a-z0-9_'])",
    r"先(?=(?:帮我|给我|把[^ ，,。]{1,6})?"
    r"(?:写|看|读|跑|问|解释|检查|运行|测|说|给|确认|复现|想|列|编译|贴|查"
    r"|review|分析|备份|讨论|说明|试|做|定位|理解|画|了解|搞清楚|弄清楚|思考|列出|告诉|讲))"
    r"|(?:之|以)?前先|应该先|第一步|步骤应该|流程应该|按(?:这个)?顺序|一个文件一个文件|一步一步来",
)


# --- shared with the first look (``corrections.gate``) -----------------------------------


def typo_words(*words: str) -> set[str]:
    """``words`` with their one-slip misspellings, as a set (``_typos``)."""
    return {v for w in words for v in _typos(w)[3:-1].split("|")}


# An instruction opens its clause with a verb of the work ("next time ask me … before guessing").
IMPERATIVE = re.compile(
    r"^(?:(?:next time|always|never|please|pls|plz|just|also|then|and|so|you should|u should|you need to"
    rf"|make sure to|make sure you|make sure u) ?)*(?:{_VERB})(?![a-z])"
)
NOT_BEFORE = frozenset(re.sub(r"'\?", "", _NOT_BEFORE).split("|"))
NOT_AFTER = frozenset(_NOT_AFTER.split("|"))
SOURCE_NOUNS = frozenset(w for w in _SOURCE_NOUNS.replace("?", "").split("|") if " " not in w) | {
    "doc",
    "docs",
}
DO_VERBS = frozenset(_DO.split("|"))
PROCESS_VERBS = frozenset(_VERB.replace("\n", "").split("|"))
