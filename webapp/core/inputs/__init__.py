"""Where chats come from: the lessons' TOML files, the transcript formats agents log, the store of pasted transcripts, and the library that finds a scenario by id or path."""
