"""The interface in every language: each catalog translates every message of the code and
templates, the committed .mo files match their .po, and no template shows text that bypasses
the catalogs."""

from __future__ import annotations

import gettext
import json
import re
import unicodedata
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from webapp.core.model import LANGUAGES

ROOT = Path(__file__).resolve().parents[1]
TRANSLATIONS = ROOT / "translations"
TEMPLATES = ROOT / "templates"
TRANSLATED = [lang for lang in LANGUAGES if lang != "en"]
FIX = "run scripts/i18n, translate the entries it lists, then run scripts/i18n compile"

# The same keywords as scripts/i18n (pybabel's defaults plus lazy_gettext).
KEYWORDS = {**DEFAULT_KEYWORDS, "lazy_gettext": None}

# Text that is the same in every language, each for a reason:
ALLOWED_TEXT = {
    "SENT",  # the bill's name in the lesson, left in English by both the French and Chinese pages
    "KEEP",  # the protected zone's name in the lesson, likewise left in English
    "Gulp",  # the overflow's name in the lesson, the same in the French and Chinese narration
    "JSON",  # a format's name
    "N",  # the letter of a keyboard shortcut, the same key whatever the language
}

# Attributes a person reads or hears; for button-like inputs, `value` too.
HUMAN_ATTRIBUTES = {
    "aria-label", "aria-description", "aria-roledescription", "aria-placeholder",
    "aria-valuetext", "title", "alt", "placeholder", "label",
}
BUTTON_INPUT_TYPES = {"submit", "button", "reset"}


# French puts a no-break space before : ; ? ! (a plain one lets the sign start a new line);
# scripts/i18n does not add it, the translator types it (U+00A0 before ":", U+202F before the others).
FRENCH_PLAIN_SPACE = re.compile(r" [:;?!](\s|$)")


def po_path(lang: str) -> Path:
    return TRANSLATIONS / lang / "LC_MESSAGES" / "messages.po"


def read_catalog(lang: str) -> Catalog:
    with po_path(lang).open("rb") as source:
        return read_po(source, locale=lang)


def extracted_messages() -> dict[tuple[str | None, str | tuple[str, ...]], list[str]]:
    """Every message of the code and templates, as babel.cfg maps them: (context, id) ->
    the places it is used."""
    with (ROOT / "babel.cfg").open() as config:
        method_map, options_map = parse_mapping_cfg(config)
    messages: dict = {}
    for filename, lineno, message, _comments, context in extract_from_dir(
        ROOT, method_map, options_map, keywords=KEYWORDS
    ):
        if isinstance(message, tuple):  # ngettext's (singular, plural), maybe with blanks
            message = tuple(part for part in message if part)
            message = message[0] if len(message) == 1 else message
        messages.setdefault((context, message), []).append(f"{filename}:{lineno}")
    return messages


def catalog_problems(catalog: Catalog, messages: dict) -> list[str]:
    """What keeps `catalog` from translating every one of `messages`."""
    problems = []
    for (context, message), places in sorted(messages.items(), key=lambda item: str(item[0])):
        msgid = message[0] if isinstance(message, tuple) else message
        entry = catalog.get(msgid, context=context)
        where = f"{msgid!r} ({places[0]})"
        if entry is None:
            problems.append(f"missing: {where}")
        elif entry.fuzzy:
            problems.append(f"fuzzy: {where}")
        elif not all(entry.string if isinstance(entry.string, tuple) else [entry.string]):
            problems.append(f"not translated: {where}")
    for entry, errors in catalog.check():
        problems += [f"{entry.id!r}: {error}" for error in errors]
    return problems


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_catalog_translates_every_message(lang):
    messages = extracted_messages()
    problems = catalog_problems(read_catalog(lang), messages)
    assert not problems, f"{po_path(lang).relative_to(ROOT)} ({FIX}):\n" + "\n".join(problems)


def test_french_puts_a_no_break_space_before_high_punctuation():
    plain = [message.string for message in read_catalog("fr") if message.id and FRENCH_PLAIN_SPACE.search(str(message.string))]
    assert not plain, plain


@pytest.mark.parametrize("lang", TRANSLATED)
def test_compiled_catalog_matches_its_source(lang):
    """The .mo the app loads is committed: it must say what its .po says."""
    expected = {}
    for entry in read_catalog(lang):
        if not entry.id or entry.fuzzy or not entry.string:
            continue
        prefix = f"{entry.context}\x04" if entry.context else ""
        if isinstance(entry.id, tuple):
            for index, text in enumerate(entry.string):
                expected[(prefix + entry.id[0], index)] = text
        else:
            expected[prefix + entry.id] = entry.string
    mo = po_path(lang).with_suffix(".mo")
    assert mo.exists(), f"{mo.relative_to(ROOT)} is missing: run scripts/i18n compile"
    with mo.open("rb") as compiled:
        found = {key: value for key, value in gettext.GNUTranslations(compiled)._catalog.items() if key != ""}
    assert found == expected, f"{mo.relative_to(ROOT)} is stale: run scripts/i18n compile"


# --- Text outside the catalogs -------------------------------------------------------------

# Stands for any Jinja tag or expression; spaces keep a tag inside "<tr{% if %}…>" apart
# from the element's name.
MARK = "\ufffc"
PLACEHOLDER = f" {MARK} "
LEXER = jinja2.Environment(extensions=["jinja2.ext.i18n"])


def template_markup(source: str, name: str = "<string>") -> str:
    """The template's HTML with every Jinja expression, tag and comment, and the text of
    {% trans %} blocks (which is in the catalogs), replaced by a placeholder."""
    parts = []
    in_trans = False
    previous = None
    for _line, kind, value in LEXER.lex(source, name):
        if kind == "name" and previous == "block_begin":
            in_trans = {"trans": True, "endtrans": False}.get(value, in_trans)
        if kind != "whitespace":
            previous = kind
        if kind == "data" and not in_trans:
            parts.append(value)
        elif not parts or parts[-1] != PLACEHOLDER:
            parts.append(PLACEHOLDER)
    return "".join(parts)


def is_json(text: str) -> bool:
    """A JSON sample (a transcript's shape) is code: the same in every language."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def has_letters(text: str) -> bool:
    return any(unicodedata.category(char).startswith("L") for char in text)


class VisibleText(HTMLParser):
    """Collects text nodes and human-facing attribute values that contain letters."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, value in attrs:
            readable = name in HUMAN_ATTRIBUTES
            readable |= name == "value" and (
                tag == "button" or (tag == "input" and (values.get("type") or "").lower() in BUTTON_INPUT_TYPES)
            )
            readable |= name == "content" and tag == "meta" and values.get("name") == "description"
            if readable and value:
                self.check(value, f"<{tag} {name}>")

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.check(data, "text")

    def check(self, text: str, where: str) -> None:
        bare = " ".join(text.replace(MARK, " ").split())
        if has_letters(bare) and bare not in ALLOWED_TEXT and not is_json(bare):
            self.found.append(f"{where}: {' '.join(text.replace(MARK, '…').split())!r}")


def untranslated_text(source: str, name: str = "<string>") -> list[str]:
    parser = VisibleText()
    parser.feed(template_markup(source, name))
    parser.close()
    return parser.found


def templates() -> Iterable[Path]:
    return sorted(TEMPLATES.rglob("*.html"))


def test_templates_show_no_text_outside_the_catalogs():
    problems = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in templates()
        for found in untranslated_text(path.read_text(encoding="utf-8"), path.name)
    ]
    assert not problems, "wrap these in _() or {% trans %}:\n" + "\n".join(problems)


# --- The checks themselves catch what they are meant to ------------------------------------


def test_the_text_check_finds_literal_text_and_labels():
    source = """
    <title>{{ _("Fine") }}</title><meta name="description" content="A playground">
    <p class="a{% if x %} b{% endif %}">Hello {{ name }}</p>
    <button type="button" aria-label="Close" title="{{ _('fine') }}">×</button>
    <input type="submit" value="Send"><input type="hidden" name="lang" value="fr">
    <img alt="{{ _('fine') }}" src="x.png"><span class="sub">SENT</span>
    <textarea placeholder='[{"role": "user", "content": "…"}]'></textarea><p>{"role": user}</p>
    {% trans %}Translated text{% endtrans %}{# a comment #}<kbd>←</kbd> 8 000 %
    """
    assert untranslated_text(source) == [
        "<meta content>: 'A playground'",
        "text: 'Hello …'",
        "<button aria-label>: 'Close'",
        "<input value>: 'Send'",
        "text: '{\"role\": user}'",
    ]


def test_the_catalog_check_reports_missing_fuzzy_untranslated_and_bad_placeholders():
    catalog = Catalog(locale="fr")
    catalog.add("Next", "Suivant")
    catalog.add("Previous", "Précédent", flags=["fuzzy"])
    catalog.add("Last", "")
    catalog.add(("%(num)d call", "%(num)d calls"), ("%(num)d appel", ""))
    catalog.add("%(tokens)s tokens", "%(jetons)s tokens", flags=["python-format"])
    messages = {
        (None, "Next"): ["a.html:1"],
        (None, "Previous"): ["a.html:2"],
        (None, "Last"): ["a.html:3"],
        (None, ("%(num)d call", "%(num)d calls")): ["a.html:4"],
        (None, "%(tokens)s tokens"): ["a.py:5"],
        (None, "First"): ["a.html:6"],
    }
    problems = catalog_problems(catalog, messages)
    assert "missing: 'First' (a.html:6)" in problems
    assert "fuzzy: 'Previous' (a.html:2)" in problems
    assert "not translated: 'Last' (a.html:3)" in problems
    assert "not translated: '%(num)d call' (a.html:4)" in problems
    assert any(problem.startswith("'%(tokens)s tokens'") for problem in problems)
    assert not any("'Next'" in problem for problem in problems)


def test_the_extraction_sees_the_templates_and_the_code():
    """An empty extraction (a babel.cfg pattern that matches nothing) would pass every check:
    every file that translates a message written in it must be seen. (A file that only
    translates messages marked elsewhere, `_(description)`, has nothing to extract.)"""
    places = {place.split(":")[0] for where in extracted_messages().values() for place in where}
    sources = [*templates(), *(ROOT / "webapp").rglob("*.py")]
    call = re.compile(r"""(?:(?<![\w.])_|gettext)\(\s*["']""")
    used = {path.relative_to(ROOT).as_posix() for path in sources if call.search(path.read_text(encoding="utf-8"))}
    assert used <= places
