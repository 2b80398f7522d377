"""Whether a text line reads as running prose rather than code, or is an option term: the rules
folio-mini-ocr's engine applies so that its structure decoder does not put such lines in a code
block (man pages and manuals indent their body and their options as listings are indented). The Python twin of src/runtime/prose_line.{h,cpp};
tests/runtime/prose_line_test.cpp checks the C++ side against the answers this file gives on
tests/fixtures/mini3/prose_lines.json (made by tools/fixtures/make_prose_lines_fixture.py).

A line reads as prose when it has at least MIN_WORDS words, at least 70% of them words of letters,
at least two distinct English function words, and no sign of code (a comment or prompt start, a
call other than a manual section such as read(2), an operator, a brace or semicolon at its end, a
whole-line string, a keyword of code opening a line that ends with ':', quotes or holds other words).

A line is an option term (a man page's `-f FILE`, `-b | -bits`, `--empty=(stop|drop|keep)`) when it
has at most OPTION_TERM_MAX_WORDS words, the first an option (one or two dashes, a letter, letters,
digits, - or _, then `=` and anything, or `[=...]`; a comma after), the others options,
metavariables (a letter, then letters, digits, - _ . = |, inside [ ] < > { } ( ) if any; a comma
after) or a lone | or ,.
"""

MIN_WORDS = 5
OPTION_TERM_MAX_WORDS = 6
FUNCTION_WORDS = {
    "the", "a", "an", "of", "to", "in", "is", "are", "was", "be", "and", "or", "for", "with",
    "that", "this", "it", "its", "by", "on", "as", "if", "not", "from", "at", "which", "when", "than",
    "then", "there", "these", "can", "may", "will", "must", "should", "has", "have"}
CODE_STARTS = ("#", "//", "/*", "*", "--", ";", "%", "$", ">")
OPERATORS = ("==", "!=", "->", "::", "&&", "||", "+=", "-=", "*/", "/*", "__", "=>", "<-", ">/", "[]", "{}", "):")
KEYWORDS = {"if", "for", "while", "else", "elif", "def", "return", "import", "case", "do", "done", "fi",
            "then", "esac", "let", "var", "const", "function", "class", "try", "except", "switch"}


def _letter(c):
    return c.isascii() and c.isalpha()


def _ident(c):
    return c.isascii() and (c.isalnum() or c == "_")


def _letter_word(w):
    a, b = 0, len(w)
    while a < b and w[a] in "([\"'`":
        a += 1
    while b > a and w[b - 1] in ".,;:!?)]\"'":
        b -= 1
    if a == b or not _letter(w[a]) or not _letter(w[b - 1]):
        return ""
    out = []
    for c in w[a:b]:
        if _letter(c):
            out.append(c.lower())
        elif c not in "'-":
            return ""
    return "".join(out)


def _has_call(line):
    for i in range(1, len(line)):
        if line[i] != "(" or not _ident(line[i - 1]):
            continue
        j = i + 1
        while j < len(line) and line[j].isascii() and line[j].isdigit():
            j += 1
        section = False
        if j > i + 1:
            while j < len(line) and line[j].isascii() and line[j].islower():
                j += 1
            section = j < len(line) and line[j] == ")"
        if not section:
            return True
    return False


def reads_as_prose(line):
    line = line.strip(" ")
    if not line or line.startswith(CODE_STARTS) or _has_call(line) or any(op in line for op in OPERATORS):
        return False
    if line[-1] in "{};":
        return False
    if len(line) > 1 and line[0] == '"' and line[-1] == '"':
        return False
    words = [w for w in line.split(" ") if w]
    if len(words) < MIN_WORDS:
        return False
    lettered = [_letter_word(w) for w in words]
    n_letter = sum(1 for w in lettered if w)
    if words[0] in KEYWORDS and (line[-1] == ":" or '"' in line or n_letter < len(words)):
        return False
    function_words = {w for w in lettered if w in FUNCTION_WORDS}
    return n_letter * 10 >= len(words) * 7 and len(function_words) >= 2


def _option(word):
    word = word[:-1] if word.endswith(",") else word
    name = word.partition("=")[0]
    dashes = 2 if name.startswith("--") else 1 if name.startswith("-") else 0
    body = name[dashes:].partition("[")[0]
    return dashes > 0 and _letter(body[:1] or " ") and all(_ident(c) or c == "-" for c in body)


def _metavariable(word):
    word = word[:-1] if word.endswith(",") else word
    core = word.strip("[]<>{}()")
    return _letter(core[:1] or " ") and all(_ident(c) or c in "-.=|" for c in core)


def is_option_term(line):
    words = [w for w in line.strip(" ").split(" ") if w]
    if not words or len(words) > OPTION_TERM_MAX_WORDS or not _option(words[0]):
        return False
    return all(_option(w) or _metavariable(w) or w in ("|", ",") for w in words[1:])
