"""The loop: the history as blocks, the strategies and their levels, the summarizers (offline and a real endpoint), and the replay that plays a scenario call by call."""
