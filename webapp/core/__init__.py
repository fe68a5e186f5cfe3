"""The domain core: it imports nothing from Flask, and its wings import only downward.

- settings, triggers, model, i18n, lru, time_budget: the value types and small tools every wing
  shares (triggers: every strategy's name and its product's default line, which the settings read).
- counting/: tokens as each counter counts them (tiktoken's vocabularies, images, tool
  definitions), and the counters held against what providers reported.
- inputs/: where chats come from: the lessons' TOML, the transcript formats agents log, the
  store of pasted transcripts, the library of scenarios.
- engine/: the loop: the history, the strategies and their levels, the production harnesses
  (one module each), the summarizers, the replay.
- analysis/: what a replay means: the comparison, the prompt cache, the bill, the manual's
  layers and metrics, the story of a call.
- drawing/: all geometry: the well, the layers' strip, the comparison chart, in units a
  template only places.
- output/: a replay as data for others: JSON, and the settings as code.

inputs/ and engine/ stand on model and counting; analysis/ on engine/; drawing/ and output/
on analysis/. docs/design.md draws it.
"""
