# Generates pretokenize_cases.json: expected pre-tokenizer pieces computed with the Python `regex`
# module (a backtracking engine with \p{..} classes, like the Oniguruma engine Hugging Face
# tokenizers uses) and tokenizers' Split(behavior="Isolated") semantics. The C++ splitters in
# src/text/pretokenizer.cpp are hand-written; this file is their independent reference.
# Usage: python3 gen_pretokenize_cases.py > pretokenize_cases.json
import json, random, regex

DEEPSEEK = [
    r"\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]
GPT2 = [r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"]
LLAMA3 = [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]

def split(text, patterns):
    pieces = [text] if text else []
    for pat in patterns:
        out = []
        for p in pieces:
            last = 0
            for m in regex.finditer(pat, p):
                if m.start() > last: out.append(p[last:m.start()])
                out.append(m.group())
                last = m.end()
            if last < len(p): out.append(p[last:])
        pieces = out
    return pieces

FIXED = [
    "Hello world", "Hello, world! It's a test. We'll see; they've gone.", "I'M HERE, YOU'RE THERE",
    "12345 apples cost $3.14 (approx.)", "x² + y² = z²  ½ Ⅻ ①", ".Net (abc) {x} [y] \"quoted\" 'single'",
    "中文字符和English混合", "ひらがなとカタカナ、漢字。", "한국어 텍스트", "café naïve e\u0301cole",
    "Привет, мир! Γειά σου κόσμε", "مرحبا بالعالم", "emoji 😀👍🏽 done", "full-width，。！？：",
    "  leading spaces", "trailing spaces   ", "a  \n\n b", "\t\tfoo\tbar", "line1\r\nline2\n\n\nline3",
    "| a | b |\n|---|---|\n| 1 | 2 |", "\\frac{a}{b} + \\sqrt{x}", "<td>1</td><td>22</td>", "a\u00a0b\u3000c\u2003d",
    "...!!!???", " - item\n - item2", "#include <stdio.h>\nint main() { return 0; }", "'s 't 're 'S 'T 'RE",
    "$$E=mc^2$$", "2024-01-15T10:30:00Z", "3,141,592.65", "user@example.com http://x.y/z?q=1&r=2",
]

POOL = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") * 3 + list("0123456789") * 2 +
        list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + [" "] * 12 + ["\n"] * 3 + ["\r", "\t"] +
        list("中文字符漢字ひらがなカタカナ한국어") + list("éèüñçàø") + ["\u0301", "\u0308"] + list("абвгдΑΒΓαβγ") +
        list("مرحب") + ["😀", "👍"] + list("，。！？：；「」") + list("²½Ⅻ①") + ["\u00a0", "\u3000", "\u2003"] +
        ["'s", "'ll", "'T", "'re"])

def main():
    rnd = random.Random(1234)
    cases = list(FIXED)
    for _ in range(300):
        n = rnd.randint(1, 40)
        cases.append("".join(rnd.choice(POOL) for _ in range(n)))
    out = []
    for t in cases:
        out.append({"text": t, "deepseek_v3": split(t, DEEPSEEK), "gpt2": split(t, GPT2), "llama3": split(t, LLAMA3)})
    print(json.dumps(out, ensure_ascii=False, indent=0))

main()
