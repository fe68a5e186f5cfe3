"""A harness is one module (docs/design.md, "Where to add a thing"): each module of
webapp/core/engine/harnesses/ holds one harness whole (its levels, KEEP rule, summary prompt and
settings as code) and cites every figure it uses; the registry lists every such module, and the
settings know every strategy the engine runs."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from types import ModuleType

from webapp.core.engine import harnesses
from webapp.core.engine.compaction import Strategy
from webapp.core.engine.harnesses import HARNESSES, codex_cli
from webapp.core.engine.strategy_catalog import STRATEGIES
from webapp.core.engine.summarizer import TEXTBOOK
from webapp.core.triggers import TRIGGERS

# The modules of the package that are no harness: the registry and what the levels share.
SHARED = {"common"}
STATUSES = {"verified", "secondary", "unverified"}


def harness_modules() -> dict[str, ModuleType]:
    """Every module of engine/harnesses/ but the shared ones, by name."""
    found = pkgutil.iter_modules(harnesses.__path__)
    return {info.name: importlib.import_module(f"{harnesses.__name__}.{info.name}") for info in found if info.name not in SHARED}


def module_of(harness: Strategy) -> ModuleType:
    return importlib.import_module(f"{harnesses.__name__}.{harness.name.replace('-', '_')}")


def test_each_harness_is_one_module_and_each_module_is_registered():
    """Adding a harness is one new module named after it, ending with its HARNESS record, and its
    line in HARNESSES: a module left out of the list, or a harness defined elsewhere, fails here."""
    modules = harness_modules()
    assert sorted(modules) == sorted(harness.name.replace("-", "_") for harness in HARNESSES)
    for name, module in modules.items():
        assert module.HARNESS in HARNESSES, f"{name}.HARNESS is not in HARNESSES"
        assert module.HARNESS.name.replace("-", "_") == name


def test_a_harness_module_holds_the_whole_harness():
    """Its levels, KEEP rule and settings as code are its module's (or the helpers every harness
    shares), and so is its summary prompt."""
    for harness in HARNESSES:
        module = module_of(harness)
        own = {module.__name__, f"{harnesses.__name__}.common"}
        functions = [step.run for step in harness.levels] + [harness.keep_rule, harness.config.write]
        assert all(function.__module__ in own for function in functions), harness.name
        assert harness.product and harness.description
        assert harness.prompt is TEXTBOOK and not harness.summarizes or harness.prompt in vars(module).values(), harness.name


def test_the_settings_know_every_strategy_the_engine_runs_in_the_same_order():
    """The ground floor's names and triggers (triggers.py) and the engine's records agree, so a
    strategy added to one and not the other fails here rather than at a page."""
    assert tuple(STRATEGIES) == tuple(TRIGGERS)
    assert all(TRIGGERS[name] is None for name, strategy in STRATEGIES.items() if not strategy.harness)


def uncited(harness: Strategy) -> list[str]:
    """What `harness` uses and does not cite: its trigger, each number its module declares (its
    product's figures), its summary prompt and its configuration as code; and each citation
    that names nothing of its module or lacks its source, version or place."""
    module = module_of(harness)
    problems = []
    for citation in harness.citations:
        if not (citation.source and citation.version and citation.where) or citation.status not in STATUSES:
            problems.append(f"{citation.figure}: a citation says its source, version, file or document, and status")
        if citation.figure != "trigger" and not hasattr(module, citation.figure):
            problems.append(f"{citation.figure}: names nothing of {module.__name__}")
    cited = {citation.figure for citation in harness.citations}
    used = ["trigger"] if harness.trigger is not None else []
    used += [name for name, value in vars(module).items() if name.isupper() and type(value) in (int, float)]
    if harness.summarizes:
        used += [name for name, value in vars(module).items() if value is harness.prompt]
    used.append(harness.config.write.__name__)
    return problems + [f"{figure}: not cited" for figure in used if figure not in cited]


def test_every_registered_harness_cites_each_figure_it_uses():
    problems = {harness.name: uncited(harness) for harness in HARNESSES}
    assert problems == {harness.name: [] for harness in HARNESSES}


def test_a_harness_without_its_citations_is_found_out():
    bare = dataclasses.replace(codex_cli.HARNESS, citations=())
    assert uncited(bare) == [f"{figure}: not cited" for figure in ("trigger", "USER_TOKENS", "BYTES_PER_TOKEN", "PROMPT", "config_toml")]
    vague = dataclasses.replace(codex_cli.HARNESS, citations=(*codex_cli.HARNESS.citations, dataclasses.replace(codex_cli.HARNESS.citations[0], version="", figure="LINE")))
    assert uncited(vague) == ["LINE: a citation says its source, version, file or document, and status", "LINE: names nothing of " + codex_cli.__name__]
