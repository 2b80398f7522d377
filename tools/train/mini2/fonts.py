"""Font families for folio-mini-ocr 2: the faces real born-digital PDFs use, from Debian packages.

Each family maps style -> font file (regular, bold, italic, bolditalic; missing styles fall back to
regular). HELD_OUT families are never used in training: EB Garamond, Roboto, and the Century
Schoolbook clones (TeX Gyre Schola and URW C059, kept out together so the held-out face is truly
unseen). Evaluation renders with them to measure reading of fonts the model never saw.

Packages: fonts-urw-base35 fonts-liberation fonts-dejavu fonts-freefont-ttf fonts-lmodern
fonts-texgyre fonts-crosextra-carlito fonts-crosextra-caladea fonts-open-sans fonts-roboto
fonts-linuxlibertine fonts-ebgaramond fonts-noto-core.
"""
import os

URW = "/usr/share/fonts/opentype/urw-base35"
TT = "/usr/share/fonts/truetype"
LM = "/usr/share/texmf/fonts/opentype/public/lm"
GYRE = "/usr/share/texmf/fonts/opentype/public/tex-gyre"
LIB = "/usr/share/fonts/opentype/linux-libertine"
EBG = "/usr/share/fonts/opentype/ebgaramond"


def _urw(base, r="Regular", b="Bold", i="Italic", bi="BoldItalic"):
    return {s: f"{URW}/{base}-{n}.otf" for s, n in
            (("regular", r), ("bold", b), ("italic", i), ("bolditalic", bi)) if n}


def _files(d, regular, bold=None, italic=None, bolditalic=None):
    out = {"regular": f"{d}/{regular}"}
    for style, name in (("bold", bold), ("italic", italic), ("bolditalic", bolditalic)):
        if name:
            out[style] = f"{d}/{name}"
    return out


def _gyre(name):
    return _files(GYRE, f"texgyre{name}-regular.otf", f"texgyre{name}-bold.otf",
                  f"texgyre{name}-italic.otf", f"texgyre{name}-bolditalic.otf")


TRAIN = {
    "Nimbus Roman": _urw("NimbusRoman"),
    "Nimbus Sans": _urw("NimbusSans"),
    "Nimbus Sans Narrow": _urw("NimbusSansNarrow", i="Oblique", bi="BoldOblique"),
    "Nimbus Mono PS": _urw("NimbusMonoPS"),
    "P052": _urw("P052", r="Roman"),
    "URW Bookman": _urw("URWBookman", r="Light", b="Demi", i="LightItalic", bi="DemiItalic"),
    "URW Gothic": _urw("URWGothic", r="Book", b="Demi", i="BookOblique", bi="DemiOblique"),
    "Liberation Serif": _files(f"{TT}/liberation", "LiberationSerif-Regular.ttf", "LiberationSerif-Bold.ttf",
                               "LiberationSerif-Italic.ttf", "LiberationSerif-BoldItalic.ttf"),
    "Liberation Sans": _files(f"{TT}/liberation", "LiberationSans-Regular.ttf", "LiberationSans-Bold.ttf",
                              "LiberationSans-Italic.ttf", "LiberationSans-BoldItalic.ttf"),
    "Liberation Sans Narrow": _files(f"{TT}/liberation", "LiberationSansNarrow-Regular.ttf",
                                     "LiberationSansNarrow-Bold.ttf", "LiberationSansNarrow-Italic.ttf"),
    "Liberation Mono": _files(f"{TT}/liberation", "LiberationMono-Regular.ttf", "LiberationMono-Bold.ttf",
                              "LiberationMono-Italic.ttf"),
    "Carlito": _files(f"{TT}/crosextra", "Carlito-Regular.ttf", "Carlito-Bold.ttf", "Carlito-Italic.ttf",
                      "Carlito-BoldItalic.ttf"),
    "Caladea": _files(f"{TT}/crosextra", "Caladea-Regular.ttf", "Caladea-Bold.ttf", "Caladea-Italic.ttf",
                      "Caladea-BoldItalic.ttf"),
    "DejaVu Sans": _files(f"{TT}/dejavu", "DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf",
                          "DejaVuSans-BoldOblique.ttf"),
    "DejaVu Sans Condensed": _files(f"{TT}/dejavu", "DejaVuSansCondensed.ttf", "DejaVuSansCondensed-Bold.ttf",
                                    "DejaVuSansCondensed-Oblique.ttf"),
    "DejaVu Serif": _files(f"{TT}/dejavu", "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif-Italic.ttf",
                           "DejaVuSerif-BoldItalic.ttf"),
    "DejaVu Sans Mono": _files(f"{TT}/dejavu", "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf",
                               "DejaVuSansMono-Oblique.ttf"),
    "FreeSerif": _files(f"{TT}/freefont", "FreeSerif.ttf", "FreeSerifBold.ttf", "FreeSerifItalic.ttf",
                        "FreeSerifBoldItalic.ttf"),
    "FreeSans": _files(f"{TT}/freefont", "FreeSans.ttf", "FreeSansBold.ttf", "FreeSansOblique.ttf",
                       "FreeSansBoldOblique.ttf"),
    "FreeMono": _files(f"{TT}/freefont", "FreeMono.ttf", "FreeMonoBold.ttf", "FreeMonoOblique.ttf"),
    "Latin Modern Roman": _files(LM, "lmroman10-regular.otf", "lmroman10-bold.otf", "lmroman10-italic.otf",
                                 "lmroman10-bolditalic.otf"),
    "Latin Modern Sans": _files(LM, "lmsans10-regular.otf", "lmsans10-bold.otf", "lmsans10-oblique.otf"),
    "Latin Modern Mono": _files(LM, "lmmono10-regular.otf", "lmmonolt10-bold.otf", "lmmono10-italic.otf"),
    "TeX Gyre Termes": _gyre("termes"),
    "TeX Gyre Heros": _gyre("heros"),
    "TeX Gyre Pagella": _gyre("pagella"),
    "TeX Gyre Bonum": _gyre("bonum"),
    "TeX Gyre Adventor": _gyre("adventor"),
    "TeX Gyre Cursor": _gyre("cursor"),
    "Noto Sans": _files(f"{TT}/noto", "NotoSans-Regular.ttf", "NotoSans-Bold.ttf", "NotoSans-Italic.ttf",
                        "NotoSans-BoldItalic.ttf"),
    "Noto Serif": _files(f"{TT}/noto", "NotoSerif-Regular.ttf", "NotoSerif-Bold.ttf", "NotoSerif-Italic.ttf",
                         "NotoSerif-BoldItalic.ttf"),
    "Open Sans": _files(f"{TT}/open-sans", "OpenSans-Regular.ttf", "OpenSans-Bold.ttf", "OpenSans-Italic.ttf",
                        "OpenSans-BoldItalic.ttf"),
    "Linux Libertine": _files(LIB, "LinLibertine_R.otf", "LinLibertine_RB.otf", "LinLibertine_RI.otf",
                              "LinLibertine_RBI.otf"),
    "Linux Biolinum": _files(LIB, "LinBiolinum_R.otf", "LinBiolinum_RB.otf", "LinBiolinum_RI.otf"),
}

HELD_OUT = {
    "EB Garamond": _files(EBG, "EBGaramond12-Regular.otf", "EBGaramond12-Bold.otf", "EBGaramond12-Italic.otf"),
    "Roboto": _files(f"{TT}/roboto/unhinted/RobotoTTF", "Roboto-Regular.ttf", "Roboto-Bold.ttf",
                     "Roboto-Italic.ttf", "Roboto-BoldItalic.ttf"),
    "TeX Gyre Schola": _gyre("schola"),
    "C059": _urw("C059", r="Roman", bi="BdIta"),
}

MONO = {"Nimbus Mono PS", "Liberation Mono", "DejaVu Sans Mono", "FreeMono", "Latin Modern Mono",
        "TeX Gyre Cursor"}


def font_file(families, family, style):
    files = families[family]
    return files.get(style) or files["regular"]


def missing_files():
    """Font files named here that are not installed (empty when every package is present)."""
    return [p for fam in (TRAIN, HELD_OUT) for files in fam.values() for p in files.values()
            if not os.path.exists(p)]


if __name__ == "__main__":
    print(f"{len(TRAIN)} training families, {len(HELD_OUT)} held out")
    for p in missing_files():
        print("missing:", p)
