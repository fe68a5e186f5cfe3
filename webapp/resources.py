"""Where the playground's data folders are: templates, static files, scenarios, translations.

The repository keeps them at its top level, beside `webapp/`; a wheel or sdist install carries
them inside the package (pyproject.toml, `force-include`). A checkout and an editable install
use the top-level folders, so an edit shows without reinstalling.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def data_folder(name: str) -> Path:
    """The folder `name` (templates, static, scenarios, translations) of this installation."""
    bundled = PACKAGE / name
    return bundled if bundled.is_dir() else PACKAGE.parent / name
