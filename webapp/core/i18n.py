"""Texts of the core that people read in the interface (strategy descriptions, counter labels).

The core stays in English and free of Flask: it marks these texts with `N_`, which babel
extracts into the message catalogs, and the web layer translates them when it shows them.
"""


def N_(text: str) -> str:
    return text
