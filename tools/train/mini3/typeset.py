"""Typesetters for the real-document evaluation set: one source document, many toolchains.

Each function turns a pandoc-readable source (a man page's roff, or markdown) into a PDF with a
toolchain that folio-mini-ocr's training never used (training pages are WeasyPrint's and PIL's):
LaTeX (pandoc's template, code blocks shaded), texinfo (texi2pdf), DocBook through Apache FOP
(verbatim shaded), LibreOffice from .docx and .odt, groff -ms (one or two columns), groff -me and
-mm (written here from pandoc's JSON, as a person would write them), and Sphinx's LaTeX.
A style (font size, face, margins, shade of the code background) is drawn per document from its
seed. Every function raises CalledProcessError (with the tool's stderr) when its tool fails.
"""
import json
import os
import random
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Code blocks without a language get one, so pandoc's LaTeX writer puts them in its shaded box.
_CLASS_FILTER = """
function CodeBlock(el)
  if #el.classes == 0 then el.classes = {'c'} end
  return el
end
"""


def _run(cmd, cwd=None, stdin=None, timeout=300):
    r = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        # TeX reports on stdout: keep its last lines with the error
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr + r.stdout[-600:])
    return r.stdout


def pandoc(src, fmt_in, fmt_out, out=None, extra=()):
    cmd = ["pandoc", "-f", fmt_in, "-t", fmt_out, src] + list(extra)
    if out:
        cmd += ["-o", out]
    return _run(cmd)


def source_ast(src, fmt_in):
    return json.loads(pandoc(src, fmt_in, "json"))


def _shade(rng):
    """A code background: a grey or a tint, light to mid (as manuals print them)."""
    g = rng.randint(200, 245)
    if rng.random() < 0.5:
        return (g, g, g)
    tint = [g, g, g]
    tint[rng.randrange(3)] = min(255, g + rng.randint(8, 25))
    return tuple(tint)


def _hex(rgb):
    return "#%02x%02x%02x" % rgb


def latex(src, fmt_in, out_pdf, rng, two_columns=False):
    with tempfile.TemporaryDirectory(prefix="ts_latex_") as work:
        _latex(src, fmt_in, out_pdf, rng, two_columns, work)


def _latex(src, fmt_in, out_pdf, rng, two_columns, work):
    with open(os.path.join(work, "class.lua"), "w") as f:
        f.write(_CLASS_FILTER)
    theme = json.loads(_run(["pandoc", "--print-highlight-style", rng.choice(["tango", "pygments", "kate", "monochrome"])]))
    theme["background-color"] = _hex(_shade(rng))
    with open(os.path.join(work, "shade.theme"), "w") as f:
        json.dump(theme, f)
    font = rng.choice(["lmodern", "times", "palatino", "bookman", "charter", "tgheros"])
    opts = ["-s", "--lua-filter", os.path.join(work, "class.lua"), "--highlight-style", os.path.join(work, "shade.theme"),
            "-V", f"fontsize={rng.choice(['10pt', '11pt', '12pt'])}", "-V", f"geometry:margin={rng.choice(['2cm', '2.5cm', '1in'])}",
            "-V", f"fontfamily={font}", "-V", "pagestyle=headings"]
    if two_columns:
        opts += ["-V", "classoption=twocolumn"]
    pandoc(src, fmt_in, "latex", os.path.join(work, "doc.tex"), opts)
    for _ in range(2):
        _run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=work)
    shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def texinfo(src, fmt_in, out_pdf, rng):
    with tempfile.TemporaryDirectory(prefix="ts_texinfo_") as work:
        pandoc(src, fmt_in, "texinfo", os.path.join(work, "doc.texi"), ["-s"])
        _run(["texi2pdf", "--batch", "-q", "doc.texi"], cwd=work)
        shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def docbook_fop(src, fmt_in, out_pdf, rng):
    xsl = "/usr/share/xml/docbook/stylesheet/docbook-xsl/fo/docbook.xsl"
    params = ["--stringparam", "shade.verbatim", "1", "--stringparam", "paper.type", rng.choice(["A4", "USletter"]),
              "--stringparam", "body.font.master", str(rng.choice([9, 10, 11])),
              "--stringparam", "body.font.family", rng.choice(["serif", "sans-serif"])]
    with tempfile.TemporaryDirectory(prefix="ts_fop_") as work:
        pandoc(src, fmt_in, "docbook4", os.path.join(work, "doc.xml"), ["-s"])
        _run(["xsltproc", *params, "-o", os.path.join(work, "doc.fo"), xsl, os.path.join(work, "doc.xml")])
        _run(["fop", "-q", "-fo", os.path.join(work, "doc.fo"), "-pdf", out_pdf])


def libreoffice(src, fmt_in, out_pdf, rng, kind="docx"):
    with tempfile.TemporaryDirectory(prefix="ts_lo_") as work:
        doc = os.path.join(work, f"doc.{kind}")
        pandoc(src, fmt_in, kind, doc, ["-s"])
        profile = "file://" + os.path.join(work, "profile")
        _run(["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", "pdf", "--outdir", work, doc])
        shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def groff_ms(src, fmt_in, out_pdf, rng, two_columns=False):
    ms = pandoc(src, fmt_in, "ms", None, ["-s"]).decode("utf-8", "replace")
    if two_columns:
        # after pandoc's preamble: the first section heading starts two-column text
        i = ms.find("\n.SH")
        i = ms.find("\n.NH") if i < 0 else i
        ms = ms[:i + 1] + ".2C\n" + ms[i + 1:] if i >= 0 else ".2C\n" + ms
    pdf = _run(["groff", "-ms", "-k", "-Tpdf", "-P-p11i,8.5i"], stdin=ms.encode("utf-8"))
    with open(out_pdf, "wb") as f:
        f.write(pdf)


def _inline_text(inlines, code_font):
    out = []
    for el in inlines:
        t, c = el["t"], el.get("c")
        if t == "Str":
            out.append(_roff_escape(c))
        elif t in ("Space", "SoftBreak"):
            out.append(" ")
        elif t == "LineBreak":
            out.append("\n.br\n")
        elif t == "Code":
            out.append(f"\\f({code_font}" + _roff_escape(c[1]) + "\\fP")
        elif t in ("Emph", "Underline"):
            out.append("\\fI" + _inline_text(c, code_font) + "\\fP")
        elif t == "Strong":
            out.append("\\fB" + _inline_text(c, code_font) + "\\fP")
        elif t in ("Link", "Span", "Quoted", "Cite", "SmallCaps", "Strikeout", "Superscript", "Subscript"):
            inner = c[1] if t in ("Link", "Span", "Quoted", "Cite") else c
            out.append(_inline_text(inner, code_font))
    return "".join(out)


def _roff_escape(s):
    """A backslash is roff's escape character; lines starting with . or ' are _line_safe's."""
    return s.replace("\\", "\\e")


def _line_safe(text):
    """roff takes a line that starts with . or ' as a request: guard it."""
    return "\n".join(("\\&" + ln if ln[:1] in ".'" else ln) for ln in text.split("\n"))


def roff_from_ast(ast, macros):
    """A -me or -mm document from pandoc's AST: headings, paragraphs, lists, code displays."""
    out = []
    code_font = "CW"

    def block(b, depth=0):
        t, c = b["t"], b.get("c")
        if t == "Header":
            level, text = min(c[0], 3), _inline_text(c[2], code_font).replace('"', "'")
            out.append(f'.sh {level} "{text}"' if macros == "me" else f'.H {level} "{text}"')
        elif t in ("Para", "Plain"):
            out.append(".pp" if macros == "me" else ".P")
            out.append(_line_safe(_inline_text(c, code_font)))
        elif t == "CodeBlock":
            out.extend([".(b L", ".ft CW", ".nf"] if macros == "me" else [".DS L", ".ft CW", ".nf"])
            out.append(_line_safe(_roff_escape(c[1])))
            out.extend([".fi", ".ft R", ".)b"] if macros == "me" else [".fi", ".ft R", ".DE"])
        elif t in ("BulletList", "OrderedList"):
            items = c if t == "BulletList" else c[1]
            if macros == "mm":
                out.append(".BL" if t == "BulletList" else ".AL")
            for n, item in enumerate(items, 1):
                if macros == "me":
                    mark = "\\(bu" if t == "BulletList" else f"{n}."
                    out.append(f'.ip "{mark}" 3n')
                else:
                    out.append(".LI")
                for sub in item:
                    if sub["t"] in ("Para", "Plain"):
                        out.append(_line_safe(_inline_text(sub["c"], code_font)))
                    else:
                        block(sub, depth + 1)
            if macros == "mm":
                out.append(".LE")
        elif t == "DefinitionList":
            for term, defs in c:
                out.append(f'.ip "{_inline_text(term, code_font)}" 5n' if macros == "me" else ".P")
                if macros == "mm":
                    out.append("\\fB" + _line_safe(_inline_text(term, code_font)) + "\\fP")
                    out.append(".br")
                for d in defs:
                    for sub in d:
                        if sub["t"] in ("Para", "Plain"):
                            out.append(_line_safe(_inline_text(sub["c"], code_font)))
                        else:
                            block(sub, depth + 1)
        elif t in ("BlockQuote", "Div"):
            for sub in (c if t == "BlockQuote" else c[1]):
                block(sub, depth)

    for b in ast["blocks"]:
        block(b)
    return "\n".join(out) + "\n"


def groff_macros(src, fmt_in, out_pdf, rng, macros):
    text = roff_from_ast(source_ast(src, fmt_in), macros)
    pdf = _run(["groff", f"-m{macros}", "-k", "-Tpdf"], stdin=text.encode("utf-8"))
    with open(out_pdf, "wb") as f:
        f.write(pdf)


def sphinx_latex(src, fmt_in, out_pdf, rng):
    with tempfile.TemporaryDirectory(prefix="ts_sphinx_") as work:
        os.makedirs(os.path.join(work, "src"))
        pandoc(src, fmt_in, "rst", os.path.join(work, "src", "index.rst"), ["-s"])
        with open(os.path.join(work, "src", "conf.py"), "w") as f:
            f.write("project = 'Manual'\nmaster_doc = 'index'\nlatex_documents = [('index', 'doc.tex', 'Manual', 'folio', 'manual')]\n")
        out = os.path.join(work, "out")
        _run(["sphinx-build", "-q", "-b", "latex", os.path.join(work, "src"), out])
        for _ in range(2):
            _run(["pdflatex", "-interaction=nonstopmode", "doc.tex"], cwd=out)
        shutil.copy(os.path.join(out, "doc.pdf"), out_pdf)


# name -> (function, keyword arguments, whether code blocks are shaded, whether two columns)
TOOLS = {
    "latex": (latex, {}, True, False),
    "latex-2col": (latex, {"two_columns": True}, True, True),
    "texinfo": (texinfo, {}, False, False),
    "docbook-fop": (docbook_fop, {}, True, False),
    "libreoffice-docx": (libreoffice, {"kind": "docx"}, False, False),
    "libreoffice-odt": (libreoffice, {"kind": "odt"}, False, False),
    "groff-ms": (groff_ms, {}, False, False),
    "groff-ms-2col": (groff_ms, {"two_columns": True}, False, True),
    "groff-me": (groff_macros, {"macros": "me"}, False, False),
    "groff-mm": (groff_macros, {"macros": "mm"}, False, False),
    "sphinx-latex": (sphinx_latex, {}, True, False),
}


def typeset(tool, src, fmt_in, out_pdf, seed):
    fn, kwargs, _, _ = TOOLS[tool]
    fn(src, fmt_in, out_pdf, random.Random(seed), **kwargs)
