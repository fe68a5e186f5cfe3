"""A replay as data for others: the JSON of the CLI and the pages' twins, and the settings written as code to paste into an agent."""
