"""The Compaction Playground.

`webapp.core` is the domain (tokens, scenarios, strategies, replay) and imports no Flask; the
web layer is imported only when an app is created.
"""


def create_app(test_config=None):
    from .web import create_app as build

    return build(test_config)
